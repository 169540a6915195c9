#include "util/file_read.h"

#include <gtest/gtest.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <fstream>
#include <string>

namespace phalanx {
namespace {

std::string WriteTemp(const std::string& name, const std::string& text) {
  const std::string path = testing::TempDir() + name;
  std::ofstream(path, std::ios::binary) << text;
  return path;
}

TEST(FileRead, FormatsLimitsInBinaryUnits) {
  EXPECT_EQ(FormatByteLimit(64u << 20), "64 MiB");
  EXPECT_EQ(FormatByteLimit(1u << 30), "1 GiB");
  EXPECT_EQ(FormatByteLimit(64u << 10), "64 KiB");
  EXPECT_EQ(FormatByteLimit(1000), "1000 bytes");
  EXPECT_EQ(FormatByteLimit((1u << 20) + 1), "1048577 bytes");
}

TEST(FileRead, ReadsAFileUpToTheLimitExactly) {
  // Around the 64 KiB chunk: one byte under, at and over a chunk boundary.
  for (size_t size : {size_t{0}, size_t{1}, size_t{65535}, size_t{65536}, size_t{65537}, size_t{200000}}) {
    std::string text(size, 'x');
    for (size_t i = 0; i < size; i += 7) text[i] = static_cast<char>('a' + i % 26);
    const std::string path = WriteTemp("file_read_exact", text);
    auto read = ReadFileBounded(path, size);
    ASSERT_TRUE(read) << size << ": " << read.error().ToString();
    EXPECT_EQ(*read, text) << size;
    if (size > 0) {
      auto over = ReadFileBounded(path, size - 1);
      ASSERT_FALSE(over) << size;
      EXPECT_EQ(over.error().ToString(), path + ": larger than " + FormatByteLimit(size - 1) + " limit");
    }
    std::remove(path.c_str());
  }
}

TEST(FileRead, DevZeroFailsFastAtTheLimit) {
  const auto start = std::chrono::steady_clock::now();
  auto read = ReadFileBounded("/dev/zero", size_t{64} << 20);
  const auto seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  ASSERT_FALSE(read);
  EXPECT_EQ(read.error().ToString(), "/dev/zero: larger than 64 MiB limit");
  // Reading 64 MiB takes tens of milliseconds; unbounded it never ends. Generous bound (100x).
  EXPECT_LT(seconds, 10.0);
}

TEST(FileRead, ClearErrorsForMissingFilesAndDirectories) {
  auto missing = ReadFileBounded("/nonexistent/topology.conf", 1024);
  ASSERT_FALSE(missing);
  EXPECT_EQ(missing.error().ToString(), "/nonexistent/topology.conf: cannot open: No such file or directory");
  auto dir = ReadFileBounded(testing::TempDir(), 1024);
  ASSERT_FALSE(dir);
  EXPECT_EQ(dir.error().message, "is a directory");
  EXPECT_EQ(dir.error().where, testing::TempDir());
}

TEST(FileRead, AFifoIsReadUntilItsWriterCloses) {
  const std::string path = testing::TempDir() + "file_read_fifo";
  std::remove(path.c_str());
  ASSERT_EQ(mkfifo(path.c_str(), 0600), 0);
  const pid_t child = fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    std::ofstream(path, std::ios::binary) << std::string(100000, 'y');
    _exit(0);
  }
  auto read = ReadFileBounded(path, 50000);
  ASSERT_FALSE(read);
  EXPECT_EQ(read.error().message, "larger than 50000 bytes limit");
  int status = 0;
  waitpid(child, &status, 0);
  std::remove(path.c_str());
}

}  // namespace
}  // namespace phalanx
