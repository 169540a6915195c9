// Reading a whole file into memory with a stated size bound, so that a path like /dev/zero, a
// FIFO or a huge file fails fast with a clear error instead of growing without limit.
// Thread-safety: reads the file system; otherwise pure.
#pragma once

#include <cstddef>
#include <string>

#include "core/common/result.h"

namespace phalanx {

// Binary units for messages: 67108864 -> "64 MiB", 1536 -> "1536 bytes".
std::string FormatByteLimit(size_t bytes);

// The contents of `path`, at most `max_bytes` of them. Reads in bounded chunks and never holds
// more than max_bytes + one chunk, whatever the file is (regular file, character device, FIFO).
// Fails with where = `path` on: a path that cannot be opened ("cannot open: <OS error>"), a
// directory ("is a directory"), a read error ("cannot read: <OS error>"), and more than
// `max_bytes` bytes ("larger than 64 MiB limit").
Result<std::string> ReadFileBounded(const std::string& path, size_t max_bytes);

}  // namespace phalanx
