// hkt/tasks/files.hpp: atomic writes (all or nothing, errors name the file)
// and whole-file reads.
#include <doctest/doctest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <string>

#include "helpers/check.hpp"
#include "helpers/temp_dir.hpp"
#include "hkt/core/json_read.hpp"
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

TEST_CASE("read_text_file refuses a folder and a file over its limit") {
  TempDir dir("files");
  check_error([&] { (void)read_text_file(dir.path); }, "it is a folder");
  write_file_atomic(dir / "big.txt", std::string(100, 'x'));
  check_error([&] { (void)read_text_file(dir / "big.txt", 99); }, "more than the limit of 99");
  CHECK(read_text_file(dir / "big.txt", 100).size() == 100);
}

TEST_CASE("append_file appends whole lines and names the file when it cannot") {
  TempDir dir("files");
  append_file(dir / "m.jsonl", "a\n");
  append_file(dir / "m.jsonl", "b\n");
  CHECK(read_text_file(dir / "m.jsonl") == "a\nb\n");
  check_error([&] { append_file(dir / "no" / "m.jsonl", "c\n"); }, "cannot append to '");
}

TEST_CASE("FolderLock: one holder at a time, the second refused with the holder's pid") {
  TempDir dir("files");
  {
    const FolderLock first(dir.path);
    check_error([&] { const FolderLock second(dir.path); },
                "is in use by another process (pid " + std::to_string(::getpid()) + ",");
  }
  const FolderLock again(dir.path);  // released with its holder
  check_error([&] { const FolderLock none(dir / "missing"); }, "cannot open the lock file");
}

TEST_CASE("read_json: nesting and size limits, short excerpts") {
  check_error([] { hkt::check_json_text(std::string(65, '['), "x.json"); },
              "x.json: the JSON is nested more than 64 levels deep (at byte 64)");
  hkt::check_json_text(std::string(64, '[') + std::string(64, ']'), "ok");
  hkt::check_json_text("\"[[[[[[\\\"[[[[\"", "brackets in a string", {1024, 1});  // not nesting
  check_error([] { hkt::check_json_text("{}", "y", {1, 64}); }, "y: the JSON text is 2 bytes, more than the limit of 1");
  const std::string cut = hkt::excerpt(std::string(1000, 'a') + "\n", 10);
  CHECK(cut == "aaaaaaaaaa... (1001 bytes)");
  CHECK(hkt::excerpt("a\nb") == "a?b");
}
