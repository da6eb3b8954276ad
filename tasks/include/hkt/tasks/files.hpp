// Small file helpers shared by the trainer, the data writers and the
// executables (hkt-experiment, hkt-eval), so that every result file is
// written the same way.
//
//   write_file_atomic("runs/x/summary.json", text);  // all of text, or nothing
//   std::string s = read_text_file("runs/x/config.json");
#pragma once
#include <sys/types.h>

#include <filesystem>
#include <string>
#include <string_view>

namespace hkt::tasks {

// Writes text to path + ".tmp", flushes it to the disk (fsync), then renames it
// over path and syncs the folder, so that a reader, a kill or a power loss
// leaves either the old file or the whole new one. On failure the
// temporary is removed, path is left as it was, and an hkt::Error names the
// file and the cause. The parent folder must exist unless make_parent is set.
void write_file_atomic(const std::filesystem::path& path, std::string_view text, bool make_parent = false);

// The whole file; hkt::Error naming the file when it cannot be read (a
// folder, a dangling link, a file over max_bytes included).
std::string read_text_file(const std::filesystem::path& path, size_t max_bytes = size_t{1} << 30);

// Appends text to path (created if missing) and checks that all of it was
// written and flushed; hkt::Error naming the file and the cause (a full disk,
// a file size limit: SIGXFSZ is ignored while it writes, so the limit comes
// back as an error) otherwise.
void append_file(const std::filesystem::path& path, std::string_view text);

// An exclusive lock on a folder's file `name` (flock), held while the object
// lives: the one writer of a run folder. The file keeps the holder's pid. A
// second holder is refused at once: hkt::Error naming the folder and the pid
// of the process that holds it. The folder must exist.
class FolderLock {
 public:
  explicit FolderLock(const std::filesystem::path& dir, const char* name = "lock");
  ~FolderLock();
  FolderLock(const FolderLock&) = delete;
  FolderLock& operator=(const FolderLock&) = delete;

 private:
  int fd_ = -1;
};

}  // namespace hkt::tasks
