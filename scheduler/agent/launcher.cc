#include "agent/launcher.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstring>

#include "agent/child_program.h"
#include "agent/job_env.h"
#include "agent/output_pattern.h"
#include "agent/proc_util.h"

namespace phalanx::agent {
namespace {

std::string Errno(std::string_view what, int err) { return std::string(what) + ": " + std::strerror(err); }

Status WriteNewFile(const std::string& path, std::string_view text, mode_t mode, const JobIdentity& id) {
  const int fd = open(path.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
  if (fd < 0) return Fail("launch", Errno("create " + path, errno));
  bool ok = write(fd, text.data(), text.size()) == static_cast<ssize_t>(text.size()) && fchmod(fd, mode) == 0;
  if (ok && id.switch_user) ok = fchown(fd, id.uid, id.gid) == 0;
  const int err = errno;
  close(fd);
  if (!ok) return Fail("launch", Errno("write " + path, err));
  return {};
}

// The job dir: made by root, filled, then handed to the user, so the user never sees it half
// made. Returns the script's path ("" without a script).
Result<std::string> PrepareJobDir(const LaunchFiles& files, const std::string& script, const JobIdentity& id) {
  (void)RemoveJobDir(files.job_dir);  // a stale one from a crash between fork and record
  if (mkdir(files.job_dir.c_str(), 0700) < 0) return Fail("launch", Errno("mkdir " + files.job_dir, errno));
  PHX_RETURN_IF_ERROR(WriteNewFile(files.job_dir + "/checkpoint", "", 0600, id));
  std::string script_path;
  if (!script.empty()) {
    script_path = files.job_dir + "/script";
    PHX_RETURN_IF_ERROR(WriteNewFile(script_path, script, 0500, id));
  }
  if (id.switch_user && chown(files.job_dir.c_str(), id.uid, id.gid) < 0) {
    return Fail("launch", Errno("chown " + files.job_dir, errno));
  }
  return script_path;
}

// Like execvp, but with the job's PATH (an empty entry is the working dir).
std::vector<std::string> ExecCandidates(const std::string& name, const std::string& path_var) {
  if (name.find('/') != std::string::npos) return {name};
  std::vector<std::string> out;
  size_t start = 0;
  for (;;) {
    const size_t colon = path_var.find(':', start);
    std::string dir = path_var.substr(start, colon == std::string::npos ? std::string::npos : colon - start);
    out.push_back((dir.empty() ? "." : dir) + "/" + name);
    if (colon == std::string::npos) break;
    start = colon + 1;
  }
  return out;
}

std::string ReadToEof(int fd) {
  std::string out;
  char buf[256];
  for (;;) {
    const ssize_t n = read(fd, buf, sizeof buf);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;
    out.append(buf, static_cast<size_t>(n));
  }
  return out;
}

int64_t NowMs() {
  using namespace std::chrono;
  return duration_cast<milliseconds>(system_clock::now().time_since_epoch()).count();
}

}  // namespace

Result<LaunchedPart> Launcher::Launch(const LaunchSpec& spec, const LaunchFiles& files) const {
  if (spec.argv.empty() && spec.script.empty()) return Fail("launch", "nothing to run: give a command or a script");
  if (spec.script.empty() && spec.argv[0].empty()) return Fail("launch", "command: the program name is empty");
  for (const std::string& arg : spec.argv) {
    if (arg.find('\0') != std::string::npos) return Fail("launch", "command: an argument contains a NUL byte");
  }
  PHX_ASSIGN_OR_RETURN(auto id, ResolveJobIdentity(spec.uid, spec.gid, spec.user, options_.identity, geteuid()));
  const std::string cwd = spec.working_dir.empty() ? id.home : spec.working_dir;
  if (cwd.empty() || cwd[0] != '/') return Fail("launch", "working_dir '" + cwd + "' is not an absolute path");
  PHX_ASSIGN_OR_RETURN(auto script_path, PrepareJobDir(files, spec.script, id));

  const JobEnvContext ctx{options_.node, id.name, id.home, id.shell, files.job_dir + "/checkpoint"};
  const auto env = BuildJobEnvironment(spec, ctx);
  ChildProgram p;
  if (!spec.script.empty()) {
    const bool shebang = spec.script.starts_with("#!");
    p.argv = shebang ? std::vector<std::string>{script_path} : std::vector<std::string>{"/bin/sh", script_path};
    p.exec_candidates = {p.argv[0]};
    p.argv.insert(p.argv.end(), spec.argv.begin(), spec.argv.end());  // the script's $1 $2 ...
  } else {
    p.argv = spec.argv;
    p.exec_candidates = ExecCandidates(spec.argv[0], env.at("PATH"));
  }
  p.exec_name = p.argv[0];
  p.envp = EnvironmentStrings(env);
  const PatternFields fields{spec.job_id,    spec.job_name,     id.name,           options_.node,
                             spec.node_rank, spec.array_job_id, spec.array_task_id};
  p.stdout_path =
      ExpandOutputPattern(spec.stdout_pattern.empty() ? kDefaultOutputPattern : spec.stdout_pattern, fields);
  if (!spec.stderr_pattern.empty()) p.stderr_path = ExpandOutputPattern(spec.stderr_pattern, fields);
  if (p.stderr_path == p.stdout_path) p.stderr_path.clear();
  p.truncate_output = spec.truncate_output;
  p.working_dir = cwd;
  p.switch_user = id.switch_user;
  p.uid = id.uid;
  p.gid = id.gid;
  p.groups = id.groups;
  p.umask = spec.umask.value_or(options_.umask);
  p.exit_file = files.exit_file;
  p.exit_tmp = files.exit_tmp;
  p.agent_lock = options_.agent_lock;
  p.orphan_grace_ms = options_.orphan_grace.count();
  p.orphan_kill_ms = options_.orphan_kill_grace.count();
  p.Finalize();
  unlink(files.exit_file.c_str());

  int fds[2];
  if (pipe2(fds, O_CLOEXEC) < 0) {
    const int err = errno;
    (void)RemoveJobDir(files.job_dir);
    return Fail("launch", Errno("pipe", err));
  }
  const pid_t keeper = fork();
  if (keeper < 0) {
    const int err = errno;
    close(fds[0]), close(fds[1]);
    (void)RemoveJobDir(files.job_dir);
    return Fail("launch", Errno("fork", err));
  }
  if (keeper == 0) {
    close(fds[0]);
    RunKeeper(p, fds[1]);
  }
  close(fds[1]);
  LaunchedPart part;
  part.keeper_pid = keeper;
  part.keeper_start = ProcStartTicks(keeper);  // our unreaped child: always readable
  part.start_time_ms = NowMs();
  part.uid = id.uid;
  part.checkpoint_file = ctx.checkpoint_file;
  part.stdout_path = p.stdout_path;
  part.stderr_path = p.stderr_path;
  const std::string report = ReadToEof(fds[0]);
  close(fds[0]);

  std::string failure;
  for (size_t i = 0; i < report.size();) {
    if (report[i] == 'P' && i + 5 <= report.size()) {
      std::memcpy(&part.pid, report.data() + i + 1, 4);
      i += 5;
    } else if (report[i] == 'E' && i + 6 <= report.size()) {
      int err = 0;
      std::memcpy(&err, report.data() + i + 2, 4);
      if (failure.empty()) failure = Errno(p.Describe(static_cast<ChildStep>(report[i + 1])), err);
      i += 6;
    } else {
      failure = "garbled report from the child";
      break;
    }
  }
  if (failure.empty() && part.pid <= 0) failure = "the keeper exited before starting the job";
  if (failure.empty()) {
    part.pid_start = ProcStartTicks(part.pid);
    return part;
  }

  int status = 0;
  while (waitpid(keeper, &status, 0) < 0 && errno == EINTR) {
  }
  unlink(files.exit_file.c_str());
  unlink(files.exit_tmp.c_str());
  (void)RemoveJobDir(files.job_dir);
  return Fail("launch", failure);
}

}  // namespace phalanx::agent
