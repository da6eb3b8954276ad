// Small file helpers shared by the trainer, the data writers and the
// executables (hkt-experiment, hkt-eval), so that every result file is
// written the same way.
//
//   write_file_atomic("runs/x/summary.json", text);  // all of text, or nothing
//   std::string s = read_text_file("runs/x/config.json");
#pragma once
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

// The whole file; hkt::Error naming the file when it cannot be read.
std::string read_text_file(const std::filesystem::path& path);

}  // namespace hkt::tasks
