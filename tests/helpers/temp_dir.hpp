// TempDir: a fresh, empty folder under the system temp dir, removed with
// everything in it at scope exit. Shared by the test suites.
#pragma once
#include <unistd.h>

#include <filesystem>
#include <random>
#include <string>
#include <system_error>

namespace hkt::test {

struct TempDir {
  std::filesystem::path path;

  // <temp>/hkt_test_<tag>_<pid>_<random>, created empty.
  explicit TempDir(const std::string& tag = "tmp") {
    std::random_device rd;
    path = std::filesystem::temp_directory_path() /
           ("hkt_test_" + tag + "_" + std::to_string(::getpid()) + "_" + std::to_string(rd()));
    std::filesystem::remove_all(path);
    std::filesystem::create_directories(path);
  }
  ~TempDir() {
    std::error_code ec;
    std::filesystem::remove_all(path, ec);
  }
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;

  // The folder, or `name` inside it, as a string.
  std::string str(const std::string& name = "") const { return name.empty() ? path.string() : (path / name).string(); }
  std::filesystem::path operator/(const std::string& name) const { return path / name; }
};

}  // namespace hkt::test
