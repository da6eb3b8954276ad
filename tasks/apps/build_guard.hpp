// The files a grid's parent process starts its children from: its executable
// and libhkt's shared library (when the library is one), as they were when it
// started. A child started from a rebuilt executable, or loading a rebuilt
// library into an executable of another build, may not fit with it (it can
// crash on the first call) and would in any case train the rest of the grid
// with other code than the runs before it. The parent asks changed() before
// each child and stops starting children when a file changed.
//
//   BuildGuard guard;
//   ...
//   if (const std::string why = guard.changed(); !why.empty()) { stop; say why; }
#pragma once
#include <dlfcn.h>
#include <sys/stat.h>

#include <filesystem>
#include <string>
#include <system_error>
#include <vector>

#include "hkt/tasks/experiment.hpp"

namespace hkt::apps {

class BuildGuard {
 public:
  BuildGuard() {
    std::error_code ec;
    const std::filesystem::path exe = std::filesystem::canonical("/proc/self/exe", ec);
    if (!ec) add(exe.string());
    // The shared object that holds libhkt's code: the executable itself when linked statically.
    Dl_info info{};
    if (dladdr(reinterpret_cast<void*>(&hkt::tasks::run_state), &info) != 0 && info.dli_fname) {
      const std::filesystem::path lib = std::filesystem::canonical(info.dli_fname, ec);
      if (!ec && lib != exe) add(lib.string());
    }
  }

  // "" while every file is as it was; else which one changed, e.g. "/x/build/libhkt.so.0 was
  // rebuilt or replaced since this process started".
  std::string changed() const {
    for (const Stamp& s : files_) {
      struct stat st {};
      if (stat(s.path.c_str(), &st) != 0) return s.path + " was removed since this process started";
      if (st.st_dev != s.dev || st.st_ino != s.ino || st.st_size != s.size ||
          st.st_mtim.tv_sec != s.mtime.tv_sec || st.st_mtim.tv_nsec != s.mtime.tv_nsec)
        return s.path + " was rebuilt or replaced since this process started";
    }
    return "";
  }

  // The files watched (for messages and tests).
  std::vector<std::string> files() const {
    std::vector<std::string> out;
    for (const Stamp& s : files_) out.push_back(s.path);
    return out;
  }

 private:
  struct Stamp {
    std::string path;
    dev_t dev;
    ino_t ino;
    off_t size;
    timespec mtime;
  };
  void add(const std::string& path) {
    struct stat st {};
    if (stat(path.c_str(), &st) == 0) files_.push_back({path, st.st_dev, st.st_ino, st.st_size, st.st_mtim});
  }
  std::vector<Stamp> files_;
};

}  // namespace hkt::apps
