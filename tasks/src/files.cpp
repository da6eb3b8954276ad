#include "hkt/tasks/files.hpp"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <fstream>
#include <sstream>
#include <system_error>

#include "hkt/core/error.hpp"

namespace hkt::tasks {

namespace fs = std::filesystem;

void write_file_atomic(const fs::path& path, std::string_view text, bool make_parent) {
  HKT_CHECK(!path.empty(), "write_file_atomic: the path is empty");
  std::error_code ec;
  if (make_parent && path.has_parent_path()) {
    fs::create_directories(path.parent_path(), ec);
    HKT_CHECK(!ec, "cannot create the folder '", path.parent_path().string(), "': ", ec.message());
  }
  const fs::path tmp = path.string() + ".tmp";
  // The bytes reach the disk (fsync) before the rename, so that after a power
  // loss the path holds the old file or the whole new one, never an empty one.
  std::string why;
  const int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0) {
    why = std::strerror(errno);
  } else {
    const char* p = text.data();
    size_t n = text.size();
    while (n > 0 && why.empty()) {
      const ssize_t w = ::write(fd, p, n);
      if (w < 0 && errno == EINTR) continue;
      if (w <= 0) {
        why = w < 0 ? std::strerror(errno) : "nothing written";
      } else {
        p += w;
        n -= static_cast<size_t>(w);
      }
    }
    if (why.empty() && ::fsync(fd) != 0) why = std::string("fsync failed: ") + std::strerror(errno);
    if (::close(fd) != 0 && why.empty()) why = std::string("close failed: ") + std::strerror(errno);
  }
  if (!why.empty()) {
    fs::remove(tmp, ec);
    throw Error(str_cat("cannot write '", tmp.string(), "': ", why));
  }
  fs::rename(tmp, path, ec);
  if (ec) {
    std::error_code ec2;
    fs::remove(tmp, ec2);
    throw Error(str_cat("cannot rename '", tmp.string(), "' to '", path.string(), "': ", ec.message()));
  }
  // Make the rename itself durable (best effort: some filesystems refuse to fsync a folder).
  const std::string dir = path.has_parent_path() ? path.parent_path().string() : std::string(".");
  const int dfd = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (dfd >= 0) {
    (void)::fsync(dfd);
    ::close(dfd);
  }
}

std::string read_text_file(const fs::path& path) {
  std::ifstream f(path, std::ios::binary);
  HKT_CHECK(f, "cannot read '", path.string(), "': ", std::strerror(errno));
  std::ostringstream ss;
  ss << f.rdbuf();
  HKT_CHECK(!f.bad(), "error while reading '", path.string(), "'");
  return ss.str();
}

}  // namespace hkt::tasks
