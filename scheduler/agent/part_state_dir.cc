#include "agent/part_state_dir.h"

#include <dirent.h>
#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <fstream>
#include <sstream>

#include "util/numbers.h"

namespace phalanx::agent {
namespace {

Status MakeDir(const std::string& path, mode_t mode) {
  if (mkdir(path.c_str(), mode) < 0 && errno != EEXIST)
    return Fail(path, std::string("mkdir: ") + std::strerror(errno));
  struct stat st {};
  if (stat(path.c_str(), &st) < 0 || !S_ISDIR(st.st_mode)) return Fail(path, "not a directory");
  if ((st.st_mode & 07777) != mode && chmod(path.c_str(), mode) < 0) {
    return Fail(path, std::string("chmod: ") + std::strerror(errno));
  }
  return {};
}

Status MakeParents(const std::string& path) {
  for (size_t slash = path.find('/', 1); slash != std::string::npos; slash = path.find('/', slash + 1)) {
    const std::string parent = path.substr(0, slash);
    if (mkdir(parent.c_str(), 0755) < 0 && errno != EEXIST)
      return Fail(parent, std::string("mkdir: ") + std::strerror(errno));
  }
  return {};
}

std::string ReadSmallFile(const std::string& path, bool* ok) {
  std::ifstream in(path);
  *ok = in.is_open();
  if (!*ok) return {};
  std::stringstream buf;
  buf << in.rdbuf();
  return buf.str();
}

}  // namespace

Result<PartStateDir> PartStateDir::Open(std::string root) {
  while (root.size() > 1 && root.back() == '/') root.pop_back();
  if (root.empty() || root[0] != '/') return Fail("--state-dir", "'" + root + "' is not an absolute path");
  PHX_RETURN_IF_ERROR(MakeParents(root));
  for (auto [path, mode] : {std::pair{root, 0711}, {root + "/parts", 0700}, {root + "/jobs", 0711}}) {
    PHX_RETURN_IF_ERROR(MakeDir(path, mode));
  }
  return PartStateDir(std::move(root));
}

LaunchFiles PartStateDir::FilesFor(LaunchId launch) const {
  const std::string id = std::to_string(launch);
  return {root_ + "/jobs/" + id, root_ + "/parts/" + id + ".exit", root_ + "/parts/." + id + ".exit.tmp"};
}

std::string PartStateDir::RecordPath(LaunchId launch) const {
  return root_ + "/parts/" + std::to_string(launch) + ".part";
}

std::string PartStateDir::PendingPath(LaunchId launch) const {
  return root_ + "/parts/" + std::to_string(launch) + ".launch";
}

Status PartStateDir::Save(const PartRecord& record) const {
  return WriteAtomically(RecordPath(record.launch_id),
                         root_ + "/parts/." + std::to_string(record.launch_id) + ".part.tmp", FormatPartRecord(record));
}

Status PartStateDir::SavePending(LaunchId launch, std::string_view blob) const {
  return WriteAtomically(PendingPath(launch), root_ + "/parts/." + std::to_string(launch) + ".launch.tmp", blob);
}

void PartStateDir::RemovePending(LaunchId launch) const { unlink(PendingPath(launch).c_str()); }

std::vector<std::pair<LaunchId, std::string>> PartStateDir::LoadPending() const {
  std::vector<std::pair<LaunchId, std::string>> out;
  const std::string dir = root_ + "/parts";
  DIR* d = opendir(dir.c_str());
  if (d == nullptr) return out;
  while (dirent* e = readdir(d)) {
    const std::string_view name = e->d_name;
    constexpr std::string_view kSuffix = ".launch";
    if (name.size() <= kSuffix.size() || !name.ends_with(kSuffix)) continue;
    const auto launch = ParseNumber<LaunchId>(name.substr(0, name.size() - kSuffix.size()));
    if (!launch || *launch == 0) continue;
    bool ok = false;
    std::string blob = ReadSmallFile(dir + "/" + std::string(name), &ok);
    if (ok) out.emplace_back(*launch, std::move(blob));
  }
  closedir(d);
  std::sort(out.begin(), out.end(), [](const auto& a, const auto& b) { return a.first < b.first; });
  return out;
}

Status PartStateDir::WriteAtomically(const std::string& path, const std::string& tmp, std::string_view text) const {
  const int fd = open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
  if (fd < 0) return Fail(tmp, std::string("open: ") + std::strerror(errno));
  const bool written = write(fd, text.data(), text.size()) == static_cast<ssize_t>(text.size()) && fsync(fd) == 0;
  const int err = errno;
  close(fd);
  if (!written) return Fail(tmp, std::string("write: ") + std::strerror(err));
  if (rename(tmp.c_str(), path.c_str()) < 0) return Fail(path, std::string("rename: ") + std::strerror(errno));
  return {};
}

std::vector<PartRecord> PartStateDir::LoadAll(std::vector<Error>* errors) const {
  std::vector<PartRecord> out;
  const std::string dir = root_ + "/parts";
  DIR* d = opendir(dir.c_str());
  if (d == nullptr) {
    errors->push_back(Error{dir, std::string("opendir: ") + std::strerror(errno)});
    return out;
  }
  while (dirent* e = readdir(d)) {
    const std::string name = e->d_name;
    if (name.size() < 6 || name[0] == '.' || name.substr(name.size() - 5) != ".part") continue;
    bool ok = false;
    const std::string path = dir + "/" + name;
    const std::string text = ReadSmallFile(path, &ok);
    auto record = ParsePartRecord(text, path);
    if (record) {
      out.push_back(*std::move(record));
    } else {
      errors->push_back(record.error());
    }
  }
  closedir(d);
  return out;
}

std::optional<int> PartStateDir::ReadExitStatus(LaunchId launch, int64_t* orphan_grace_ms) const {
  bool ok = false;
  const std::string text = ReadSmallFile(FilesFor(launch).exit_file, &ok);
  if (orphan_grace_ms != nullptr) *orphan_grace_ms = -1;
  if (text.empty()) return std::nullopt;
  constexpr std::string_view kGone = " agent-gone ";
  if (const size_t at = text.find(kGone); orphan_grace_ms != nullptr && at != std::string::npos) {
    std::string_view rest = std::string_view(text).substr(at + kGone.size());
    rest = rest.substr(0, rest.find('\n'));
    if (auto ms = ParseNumber<int64_t>(rest)) *orphan_grace_ms = *ms;
  }
  return std::atoi(text.c_str());
}

Result<int> PartStateDir::LockAgent(std::chrono::milliseconds wait) const {
  const std::string path = AgentLockPath();
  const int fd = open(path.c_str(), O_RDWR | O_CREAT | O_NOFOLLOW | O_CLOEXEC, 0600);
  if (fd < 0) return Fail(path, std::string("open: ") + std::strerror(errno));
  const auto until = std::chrono::steady_clock::now() + wait;
  for (;;) {
    if (flock(fd, LOCK_EX | LOCK_NB) == 0) return fd;
    const int err = errno;
    if (err != EWOULDBLOCK && err != EINTR) {
      close(fd);
      return Fail(path, std::string("flock: ") + std::strerror(err));
    }
    if (std::chrono::steady_clock::now() >= until) {
      close(fd);
      return Fail(path,
                  "another phalanx-agent holds this state dir's lock (is one running with --state-dir " + root_ + "?)");
    }
    usleep(10'000);
  }
}

Status PartStateDir::Remove(LaunchId launch) const {
  // The record first: a crash half way must not leave a record without its exit file (a
  // restarted agent would report that part as lost).
  const LaunchFiles files = FilesFor(launch);
  unlink(RecordPath(launch).c_str());
  RemovePending(launch);
  unlink(files.exit_tmp.c_str());
  unlink(files.exit_file.c_str());
  return RemoveJobDir(files.job_dir);
}

namespace {

// Empties the directory open at `fd` (and closes it): entries are unlinked relative to it and
// subdirectories opened with O_NOFOLLOW, so a symlink (or one swapped in for a directory while we
// work) is removed itself, never followed. Names that could not be removed go into `left`.
void EmptyDir(int fd, const std::string& where, int depth, std::string* left) {
  DIR* d = fdopendir(fd);
  if (d == nullptr) {
    close(fd);
    *left += (left->empty() ? "" : ", ") + where + " (fdopendir: " + std::strerror(errno) + ")";
    return;
  }
  std::vector<std::string> names;
  while (dirent* e = readdir(d)) {
    const std::string_view name = e->d_name;
    if (name != "." && name != "..") names.emplace_back(name);
  }
  for (const std::string& name : names) {
    const std::string path = where.empty() ? name : where + "/" + name;
    if (unlinkat(fd, name.c_str(), 0) == 0 || errno == ENOENT) continue;
    if (errno != EISDIR && errno != EPERM) {  // EPERM: what Linux answers for unlink of a directory
      *left += (left->empty() ? "" : ", ") + path;
      continue;
    }
    if (depth >= kMaxJobDirDepth) {
      *left += (left->empty() ? "" : ", ") + path + " (nested deeper than " + std::to_string(kMaxJobDirDepth) + ")";
      continue;
    }
    const int sub = openat(fd, name.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    if (sub < 0) {
      *left += (left->empty() ? "" : ", ") + path;
      continue;
    }
    EmptyDir(sub, path, depth + 1, left);
    if (unlinkat(fd, name.c_str(), AT_REMOVEDIR) < 0 && errno != ENOENT) *left += (left->empty() ? "" : ", ") + path;
  }
  closedir(d);
}

}  // namespace

Status RemoveJobDir(const std::string& dir) {
  const int fd = open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
  if (fd < 0) return errno == ENOENT ? Status{} : Fail(dir, std::string("open: ") + std::strerror(errno));
  std::string left;
  EmptyDir(fd, "", 0, &left);
  if (rmdir(dir.c_str()) < 0) {
    return Fail(dir, "not removed" + (left.empty() ? std::string() : " (left: " + left + ")"));
  }
  return {};
}

}  // namespace phalanx::agent
