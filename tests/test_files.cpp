// hkt/tasks/files.hpp: atomic writes (all or nothing, errors name the file)
// and whole-file reads.
#include <doctest/doctest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <map>
#include <string>

#include "helpers/check.hpp"
#include "helpers/temp_dir.hpp"
#include "hkt/core/json_read.hpp"
#include "hkt/core/safetensors.hpp"
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
  check_error([&] { write_file_atomic(p, "t"); }, "cannot create '" + p.string() + ".tmp'");
  CHECK(!fs::exists(dir / "x"));
  write_file_atomic(p, "t", true);
  CHECK(read_text_file(p) == "t");
}

TEST_CASE("write_file_atomic: a target that is a folder is refused and kept, no temporary left") {
  TempDir dir("files");
  // The target is a non-empty folder: refused before anything is written (it would fail the rename).
  const fs::path p = dir / "target";
  fs::create_directories(p / "inside");
  check_error([&] { write_file_atomic(p, "new"); }, "'" + p.string() + "' is a folder, not a regular file");
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
  check_error([&] { append_file(dir / "no" / "m.jsonl", "c\n"); },
              "cannot open '" + (dir / "no" / "m.jsonl").string() + "'");
}

TEST_CASE("FolderLock: one holder at a time, the second refused with the holder's pid") {
  TempDir dir("files");
  {
    const FolderLock first(dir.path);
    check_error([&] { const FolderLock second(dir.path); },
                "is in use by another process (pid " + std::to_string(::getpid()) + ",");
  }
  const FolderLock again(dir.path);  // released with its holder
  check_error([&] { const FolderLock none(dir / "missing"); },
              "the lock file: cannot open '" + (dir / "missing" / "lock").string() + "'");
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

// Issue 70: no link followed. Every writer (write_file_atomic: the file and its temporary;
// append_file; FolderLock; save_safetensors: the file and its temporary) refuses a symbolic
// link inside or outside the folder, a FIFO and a folder under its name, naming it, and the
// file a link points to keeps its bytes.
TEST_CASE("writers follow no link and write nothing but regular files") {
  TempDir dir("files");
  const fs::path outside = dir / "outside.txt", inside = dir / "run" / "best.safetensors";
  fs::create_directories(dir / "run");
  const auto reset = [&] {
    write_file_atomic(outside, "a user's notes");
    write_file_atomic(inside, "weights");
  };
  const auto plant = [&](const std::string& kind, const fs::path& p) {
    fs::remove_all(p);
    if (kind == "inside") fs::create_symlink("best.safetensors", p);
    if (kind == "outside") fs::create_symlink(outside, p);
    if (kind == "fifo") REQUIRE(::mkfifo(p.c_str(), 0644) == 0);
    if (kind == "folder") fs::create_directories(p / "x");
  };
  const std::map<std::string, std::string> said = {
      {"inside", "is a symbolic link (to 'best.safetensors')"}, {"outside", "is a symbolic link (to '"},
      {"fifo", "is a FIFO"}, {"folder", "is a folder"}};
  const fs::path f = dir / "run" / "summary.json";
  for (const auto& [kind, what] : said) {
    CAPTURE(kind);
    reset();
    for (const fs::path& p : {f, fs::path(f.string() + ".tmp")}) {
      plant(kind, p);
      check_error([&] { write_file_atomic(f, "x"); }, "'" + p.string() + "' " + what);
      fs::remove_all(p);
    }
    plant(kind, f);
    check_error([&] { append_file(f, "line\n"); }, "'" + f.string() + "' " + what);
    const fs::path lock = dir / "run" / "lock";
    plant(kind, lock);
    check_error([&] { const FolderLock l(dir / "run"); }, "'" + lock.string() + "' " + what);
    const fs::path st = dir / "run" / "model.safetensors";
    const std::vector<std::pair<std::string, Tensor>> tensors = {{"w", full({2}, 1.0)}};
    for (const fs::path& p : {st, fs::path(st.string() + ".tmp." + std::to_string(::getpid()))}) {
      plant(kind, p);
      check_error([&] { save_safetensors(st.string(), tensors, {}); }, "'" + p.string() + "' " + what);
      fs::remove_all(p);
    }
    CHECK(read_text_file(outside) == "a user's notes");
    CHECK(read_text_file(inside) == "weights");
    fs::remove_all(f);
    fs::remove_all(lock);
  }
  // A regular temporary a kill left is replaced, as before.
  write_file_atomic(f.string() + ".tmp", "left over");
  write_file_atomic(f, "new");
  CHECK(read_text_file(f) == "new");
  CHECK(!fs::exists(f.string() + ".tmp"));
}
