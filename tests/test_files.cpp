// hkt/tasks/files.hpp: atomic writes (all or nothing, errors name the file)
// and whole-file reads.
#include <doctest/doctest.h>

#include <filesystem>
#include <fstream>
#include <string>

#include "helpers/check.hpp"
#include "helpers/temp_dir.hpp"
#include "hkt/tasks/files.hpp"

using namespace hkt;
using namespace hkt::tasks;
using hkt::test::check_error;
using hkt::test::TempDir;
namespace fs = std::filesystem;

TEST_CASE("write_file_atomic writes, replaces and leaves no temporary") {
  TempDir dir("files");
  const fs::path p = dir / "a.json";
  write_file_atomic(p, "first\n");
  CHECK(read_text_file(p) == "first\n");
  const std::string big(1 << 20, 'x');
  write_file_atomic(p, big);
  CHECK(read_text_file(p) == big);
  write_file_atomic(p, "");
  CHECK(read_text_file(p).empty());
  CHECK(fs::exists(p));
  CHECK(!fs::exists(p.string() + ".tmp"));
  // Bytes are written as they are (no newline translation, embedded NULs kept).
  const std::string bin("a\0b\r\n", 5);
  write_file_atomic(p, bin);
  CHECK(read_text_file(p) == bin);
}

TEST_CASE("write_file_atomic creates the parent folder only when asked") {
  TempDir dir("files");
  const fs::path p = dir / "x" / "y" / "z.md";
  check_error([&] { write_file_atomic(p, "t"); }, "cannot write '" + p.string() + ".tmp'");
  CHECK(!fs::exists(dir / "x"));
  write_file_atomic(p, "t", true);
  CHECK(read_text_file(p) == "t");
}

TEST_CASE("write_file_atomic: a failed rename keeps the old target and removes the temporary") {
  TempDir dir("files");
  // The target is a non-empty folder: the rename fails after the temporary was written.
  const fs::path p = dir / "target";
  fs::create_directories(p / "inside");
  check_error([&] { write_file_atomic(p, "new"); }, "cannot rename '" + p.string() + ".tmp' to '" + p.string() + "'");
  CHECK(fs::is_directory(p / "inside"));
  CHECK(!fs::exists(p.string() + ".tmp"));
  check_error([&] { write_file_atomic("", "t"); }, "the path is empty");
}

TEST_CASE("read_text_file names a missing file") {
  TempDir dir("files");
  check_error([&] { (void)read_text_file(dir / "missing.txt"); }, "cannot read '" + (dir / "missing.txt").string() + "'");
}
