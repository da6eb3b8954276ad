#include "hkt/tasks/files.hpp"

#include <fcntl.h>
#include <signal.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <fstream>
#include <sstream>
#include <system_error>

#include "hkt/core/error.hpp"
#include "hkt/core/safe_open.hpp"

namespace hkt::tasks {

namespace fs = std::filesystem;

namespace {

// Writes all of text to fd (retrying on EINTR and short writes); returns "" or why it
// failed, and leaves in `left` the bytes not written.
std::string write_all(int fd, std::string_view text, size_t& left) {
  const char* p = text.data();
  left = text.size();
  while (left > 0) {
    const ssize_t w = ::write(fd, p, left);
    if (w < 0 && errno == EINTR) continue;
    if (w <= 0) return w < 0 ? std::strerror(errno) : "nothing written";
    p += w;
    left -= static_cast<size_t>(w);
  }
  return "";
}

}  // namespace

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
  // No link is followed: neither path nor its temporary may be one (UnsafeFileError, naming it).
  refuse_non_regular(path.string(), "write_file_atomic");
  std::string why;
  const int fd = open_new_file(tmp.string(), "write_file_atomic");
  {
    size_t n = text.size();  // bytes not written
    why = write_all(fd, text, n);
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

std::string read_text_file(const fs::path& path, size_t max_bytes) {
  std::error_code ec;
  const auto st = fs::status(path, ec);
  HKT_CHECK(!ec, "cannot read '", path.string(), "': ", ec.message());
  HKT_CHECK(!fs::is_directory(st), "cannot read '", path.string(), "': it is a folder, not a file");
  if (fs::is_regular_file(st)) {
    const auto size = fs::file_size(path, ec);
    HKT_CHECK(!ec, "cannot read '", path.string(), "': ", ec.message());
    HKT_CHECK(size <= max_bytes, "cannot read '", path.string(), "': it is ", size, " bytes, more than the limit of ",
              max_bytes);
  }
  std::ifstream f(path, std::ios::binary);
  HKT_CHECK(f, "cannot read '", path.string(), "': ", std::strerror(errno));
  std::string out;
  char buf[65536];
  try {  // libstdc++ throws std::ios_base::failure for a read error (EIO, EISDIR)
    while (f.read(buf, sizeof buf) || f.gcount() > 0) {
      out.append(buf, static_cast<size_t>(f.gcount()));
      HKT_CHECK(out.size() <= max_bytes, "cannot read '", path.string(), "': more than the limit of ", max_bytes,
                " bytes");
    }
  } catch (const std::ios_base::failure& e) {
    throw Error(str_cat("error while reading '", path.string(), "': ", e.what()));
  }
  HKT_CHECK(!f.bad(), "error while reading '", path.string(), "'");
  return out;
}

void append_file(const fs::path& path, std::string_view text) {
  // SIGXFSZ (over a file size limit) would kill the process; ignored, the write fails with EFBIG.
  struct sigaction ign {}, old {};
  ign.sa_handler = SIG_IGN;
  sigemptyset(&ign.sa_mask);
  sigaction(SIGXFSZ, &ign, &old);
  std::string why;
  int fd = -1;
  try {  // no link followed, nothing but a regular file written (UnsafeFileError, naming it)
    fd = open_file_nofollow(path.string(), O_WRONLY | O_CREAT | O_APPEND, "append");
  } catch (...) {
    sigaction(SIGXFSZ, &old, nullptr);
    throw;
  }
  {
    size_t n = text.size();  // bytes not written
    why = write_all(fd, text, n);
    if (!why.empty() && n < text.size()) {
      // A line cut short is dropped, so that the file ends at a whole line.
      struct stat sb {};
      if (::fstat(fd, &sb) == 0 && sb.st_size >= static_cast<off_t>(text.size() - n))
        (void)::ftruncate(fd, sb.st_size - static_cast<off_t>(text.size() - n));
    }
    if (::close(fd) != 0 && why.empty()) why = std::string("close failed: ") + std::strerror(errno);
  }
  sigaction(SIGXFSZ, &old, nullptr);
  HKT_CHECK(why.empty(), "cannot append to '", path.string(), "': ", why);
}

FolderLock::FolderLock(const fs::path& dir, const char* name) {
  const fs::path file = dir / name;
  // A link, FIFO or folder under the lock's name is refused, never written through.
  fd_ = open_file_nofollow(file.string(), O_RDWR | O_CREAT, "the lock file");
  if (::flock(fd_, LOCK_EX | LOCK_NB) != 0) {
    const int err = errno;
    char buf[32] = {};
    const ssize_t n = ::pread(fd_, buf, sizeof buf - 1, 0);
    ::close(fd_);
    fd_ = -1;
    std::string pid = n > 0 ? std::string(buf, static_cast<size_t>(n)) : std::string();
    while (!pid.empty() && (pid.back() == '\n' || pid.back() == ' ')) pid.pop_back();
    if (err == EWOULDBLOCK)
      throw Error(str_cat("'", dir.string(), "' is in use by another process (pid ", pid.empty() ? "unknown" : pid,
                          ", holding '", file.string(), "'); wait for it to end or stop it"));
    throw Error(str_cat("cannot lock '", file.string(), "': ", std::strerror(err)));
  }
  const std::string me = std::to_string(::getpid()) + "\n";
  if (::ftruncate(fd_, 0) != 0 || ::pwrite(fd_, me.data(), me.size(), 0) != static_cast<ssize_t>(me.size())) {
    const int err = errno;
    ::close(fd_);
    fd_ = -1;
    throw Error(str_cat("cannot write the lock file '", file.string(), "': ", std::strerror(err)));
  }
}

FolderLock::~FolderLock() {
  if (fd_ >= 0) ::close(fd_);  // releases the lock
}

}  // namespace hkt::tasks
