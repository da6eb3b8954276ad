// libFuzzer target for the IMDB reader's file handling (load_imdb): the
// input describes a folder tree of review files, written here, then read.
//   byte 0: seq_len (1..256); byte 1: val_size (0..3) and max_train (0..7)
//   then entries: [where][name length][name][content length][content]
//     where: bits 0-1 pick train/pos, train/neg, test/pos, test/neg;
//            bit 2 makes a folder instead of a file; bit 3 prefixes "aclImdb/"
// File names are used as given except for '/' and NUL (replaced by '_').
// Every input must load or throw hkt::Error; anything else is a bug.
#include <string>

#include "fuzz_util.hpp"
#include "hkt/core/error.hpp"
#include "hkt/tasks/imdb.hpp"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  namespace fs = std::filesystem;
  hkt_fuzz::Input in(data, size);
  const int64_t seq_len = 1 + in.byte();
  const uint8_t opt = in.byte();
  const auto dir = hkt_fuzz::fresh_dir();
  static const char* kFolders[] = {"train/pos", "train/neg", "test/pos", "test/neg"};
  for (int e = 0; e < 64 && in.left() > 0; ++e) {
    const uint8_t where = in.byte();
    std::string name(in.take(in.byte() % 24));
    for (char& c : name)
      if (c == '/' || c == '\0') c = '_';
    const std::string_view content = in.take(in.byte());
    const fs::path folder = dir / ((where & 8) ? "aclImdb" : "") / kFolders[where & 3];
    fs::create_directories(folder);
    if (name.empty() || name == "." || name == "..") continue;
    std::error_code ec;
    if (where & 4) fs::create_directories(folder / name, ec);
    else if (!fs::exists(folder / name, ec)) hkt_fuzz::write_file(folder / name, content);
  }
  try {
    const hkt::tasks::Splits s = hkt::tasks::load_imdb(dir.string(), seq_len, opt & 3, 1, (opt >> 2) & 7);
    s.train.validate();
    if (s.train.size() > 0) s.train.batch({0});
  } catch (const hkt::Error&) {
  }
  return 0;
}
