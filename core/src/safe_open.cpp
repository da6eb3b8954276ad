#include "hkt/core/safe_open.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

namespace hkt {

namespace {

std::string describe(const struct stat& st, const std::string& path) {
  if (S_ISLNK(st.st_mode)) {
    char buf[512];
    const ssize_t n = ::readlink(path.c_str(), buf, sizeof buf - 1);
    return n > 0 ? str_cat("a symbolic link (to '", std::string(buf, static_cast<size_t>(n)), "')")
                 : std::string("a symbolic link");
  }
  if (S_ISFIFO(st.st_mode)) return "a FIFO";
  if (S_ISDIR(st.st_mode)) return "a folder";
  if (S_ISSOCK(st.st_mode)) return "a socket";
  if (S_ISCHR(st.st_mode) || S_ISBLK(st.st_mode)) return "a device";
  return S_ISREG(st.st_mode) ? "" : "not a regular file";
}

[[noreturn]] void refuse(const std::string& path, const std::string& what, const std::string& who) {
  throw UnsafeFileError(str_cat(who, ": '", path, "' is ", what,
                                ", not a regular file; hkt does not write through it: remove it or choose "
                                "another folder"));
}

}  // namespace

std::string non_regular_entry(const std::string& path) {
  struct stat st {};
  if (::lstat(path.c_str(), &st) != 0) return "";
  return describe(st, path);
}

void refuse_non_regular(const std::string& path, const std::string& who) {
  const std::string what = non_regular_entry(path);
  if (!what.empty()) refuse(path, what, who);
}

int open_new_file(const std::string& path, const std::string& who) {
  struct stat st {};
  if (::lstat(path.c_str(), &st) == 0) {
    const std::string what = describe(st, path);
    if (!what.empty()) refuse(path, what, who);
    if (::unlink(path.c_str()) != 0 && errno != ENOENT)
      throw Error(str_cat(who, ": cannot remove the old '", path, "': ", std::strerror(errno)));
  }
  const int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0644);
  if (fd >= 0) return fd;
  const int err = errno;
  // Something appeared under the name after the check: say what it is.
  const std::string what = non_regular_entry(path);
  if (!what.empty()) refuse(path, what, who);
  throw Error(str_cat(who, ": cannot create '", path, "': ", std::strerror(err)));
}

int open_file_nofollow(const std::string& path, int flags, const std::string& who) {
  const int fd = ::open(path.c_str(), flags | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC, 0644);
  if (fd < 0) {
    const int err = errno;
    const std::string what = non_regular_entry(path);
    if (!what.empty()) refuse(path, what, who);
    throw Error(str_cat(who, ": cannot open '", path, "': ", std::strerror(err)));
  }
  struct stat st {};
  if (::fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
    const int err = errno;
    ::close(fd);
    if (!S_ISREG(st.st_mode) && st.st_mode != 0) refuse(path, describe(st, path), who);
    throw Error(str_cat(who, ": cannot stat '", path, "': ", std::strerror(err)));
  }
  const int fl = ::fcntl(fd, F_GETFL);
  if (fl >= 0) (void)::fcntl(fd, F_SETFL, fl & ~O_NONBLOCK);
  return fd;
}

}  // namespace hkt
