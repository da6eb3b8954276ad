// Opening files for writing without following links (docs/reliability.md,
// "No link followed"). Every file hkt writes in a run folder, a checkpoint or a
// cache goes through these, so that a symbolic link, a FIFO or a folder planted
// under a name hkt writes is refused, naming it, instead of being written through.
//
//   const int fd = open_new_file("runs/x/summary.json.tmp", "write_file_atomic");
//   const int fd = open_file_nofollow("runs/x/metrics.jsonl", O_WRONLY | O_APPEND, "append");
#pragma once
#include <string>

#include "hkt/core/error.hpp"

namespace hkt {

// A name hkt writes is taken by something that is not a regular file (a link, a
// FIFO, a folder, ...): the message names the path and what is there.
class UnsafeFileError : public Error {
 public:
  explicit UnsafeFileError(const std::string& what) : Error(what) {}
};

// "" when `path` is missing or a regular file (links not followed); otherwise what
// is there: "a symbolic link (to 'x')", "a FIFO", "a folder", "a socket", "a device".
std::string non_regular_entry(const std::string& path);

// Throws UnsafeFileError("<who>: 'path' is a symbolic link ...; hkt does not write
// through it ...") when non_regular_entry(path) is not "".
void refuse_non_regular(const std::string& path, const std::string& who);

// A new, empty regular file at `path` (mode 0644), opened write-only: a regular
// file already there (a temporary a kill left) is removed first, anything else is
// refused (UnsafeFileError); then O_CREAT | O_EXCL | O_NOFOLLOW, so that nothing
// planted between the check and the open is followed. hkt::Error naming the
// file and the system's reason when it cannot be created. Returns the descriptor.
int open_new_file(const std::string& path, const std::string& who);

// `path` opened with `flags` (O_WRONLY or O_RDWR, and O_APPEND, O_CREAT as
// wanted) plus O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC, then checked to be a regular
// file (fstat): a link, FIFO or folder is refused (UnsafeFileError) without a
// byte written. O_NONBLOCK is cleared again before returning.
int open_file_nofollow(const std::string& path, int flags, const std::string& who);

}  // namespace hkt
