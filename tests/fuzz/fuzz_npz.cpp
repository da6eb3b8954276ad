// libFuzzer target for the container readers of the tokens / series tasks (hkt/tasks/arrays.hpp,
// parse_array_file): .npz through libzip (stored or deflated .npy members), or safetensors, then the
// tasks' checks of the arrays "inputs", "labels" and "lengths" (fuzz_arrays.hpp).
//   byte 0: options (fuzz_arrays.hpp; bit 3: safetensors, else npz); byte 1: seq_len (0: the
//   inputs' T); the rest: the file.
// Every input must load or throw hkt::Error; anything else is a bug.
#include <string>

#include "fuzz_arrays.hpp"
#include "fuzz_util.hpp"
#include "hkt/core/error.hpp"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  hkt_fuzz::Input in(data, size);
  const uint8_t opt = in.byte();
  const int64_t seq_len = in.byte();
  const std::string file(in.rest());
  const std::string format = (opt & 8) ? "safetensors" : "npz";
  try {
    hkt::tasks::ArrayFile f =
        hkt::tasks::parse_array_file(file, "fuzz." + format, format, {"inputs", "labels", "lengths"});
    if (!f.find("inputs") || !f.find("labels")) return 0;
    hkt::tasks::ArraySource s;
    s.path = f.path;
    s.inputs = f.arrays.at("inputs");
    s.labels = f.arrays.at("labels");
    if (f.find("lengths")) s.lengths = f.arrays.at("lengths");
    hkt_fuzz::drive_arrays(s, opt, seq_len);
  } catch (const hkt::Error&) {
  }
  return 0;
}
