#include "util/file_read.h"

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <system_error>

namespace phalanx {

std::string FormatByteLimit(size_t bytes) {
  if (bytes >= (size_t{1} << 30) && bytes % (size_t{1} << 30) == 0) return std::to_string(bytes >> 30) + " GiB";
  if (bytes >= (size_t{1} << 20) && bytes % (size_t{1} << 20) == 0) return std::to_string(bytes >> 20) + " MiB";
  if (bytes >= (size_t{1} << 10) && bytes % (size_t{1} << 10) == 0) return std::to_string(bytes >> 10) + " KiB";
  return std::to_string(bytes) + " bytes";
}

Result<std::string> ReadFileBounded(const std::string& path, size_t max_bytes) {
  std::error_code ec;
  if (std::filesystem::is_directory(path, ec)) return Fail(path, "is a directory");
  std::ifstream in(path, std::ios::binary);
  if (!in) return Fail(path, std::string("cannot open: ") + std::strerror(errno));
  std::string text;
  constexpr size_t kChunk = 64 * 1024;
  while (true) {
    const size_t old = text.size();
    // One byte past the limit is enough to know the file is too large.
    const size_t want = std::min(kChunk, max_bytes + 1 - old);
    text.resize(old + want);
    in.read(text.data() + old, static_cast<std::streamsize>(want));
    const size_t got = static_cast<size_t>(in.gcount());
    text.resize(old + got);
    if (in.bad()) return Fail(path, std::string("cannot read: ") + std::strerror(errno));
    if (text.size() > max_bytes) return Fail(path, "larger than " + FormatByteLimit(max_bytes) + " limit");
    if (got < want) break;  // end of file
  }
  return text;
}

}  // namespace phalanx
