#include "agent/checkpoint_file.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "util/numbers.h"
#include "util/strings.h"

namespace phalanx::agent {

Result<CheckpointMark> ParseCheckpointContent(std::string_view text) {
  const std::string_view line = Trim(text.substr(0, text.find('\n')));
  CheckpointMark mark;
  if (line.empty()) return mark;
  const size_t sp = line.find_first_of(" \t");
  const std::string_view epoch = line.substr(0, sp);
  if (!ParseNumber(epoch, &mark.epoch))
    return Fail("checkpoint file", "epoch '" + std::string(epoch) + "' is not a whole number");
  if (sp != std::string_view::npos) mark.path = std::string(Trim(line.substr(sp)));
  return mark;
}

std::string FormatCheckpointContent(const CheckpointMark& mark) {
  std::string out = std::to_string(mark.epoch);
  if (!mark.path.empty()) out += " " + mark.path;
  return out + "\n";
}

std::optional<CheckpointProbe> ProbeCheckpointFile(const std::string& path, uid_t owner) {
  const int fd = open(path.c_str(), O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
  if (fd < 0) return std::nullopt;
  struct stat st {};
  if (fstat(fd, &st) < 0 || !S_ISREG(st.st_mode) || st.st_uid != owner) {
    close(fd);
    return std::nullopt;
  }
  CheckpointProbe probe;
  probe.signature = std::to_string(st.st_ino) + ":" + std::to_string(st.st_size) + ":" +
                    std::to_string(st.st_mtim.tv_sec * 1'000'000'000LL + st.st_mtim.tv_nsec);
  char buf[4096];
  const ssize_t n = pread(fd, buf, sizeof buf, 0);
  close(fd);
  if (n > 0) probe.content.assign(buf, static_cast<size_t>(n));
  return probe;
}

Status WriteCheckpointFile(const std::string& path, const CheckpointMark& mark) {
  const size_t slash = path.rfind('/');
  const std::string dir = slash == std::string::npos ? "." : path.substr(0, slash);
  const std::string tmp = dir + "/.checkpoint." + std::to_string(getpid()) + ".tmp";
  const std::string text = FormatCheckpointContent(mark);
  const int fd = open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC | O_NOFOLLOW, 0600);
  if (fd < 0) return Fail(tmp, std::strerror(errno));
  const bool ok = write(fd, text.data(), text.size()) == static_cast<ssize_t>(text.size());
  const int err = errno;
  close(fd);
  if (!ok) {
    unlink(tmp.c_str());
    return Fail(tmp, std::strerror(err));
  }
  if (rename(tmp.c_str(), path.c_str()) < 0) {
    const int rename_err = errno;
    unlink(tmp.c_str());
    return Fail(path, std::strerror(rename_err));
  }
  return {};
}

}  // namespace phalanx::agent
