// libFuzzer target for the .npy reader (hkt/tasks/arrays.hpp, parse_npy) and the tokens / series
// tasks' checks of what it reads (fuzz_arrays.hpp).
//   byte 0: options (fuzz_arrays.hpp); byte 1: seq_len (0: the inputs' T); bytes 2-3: the length of
//   the inputs .npy (little-endian); then the inputs .npy, and the rest is the labels .npy.
// Every input must load or throw hkt::Error; anything else is a bug.
#include <string>

#include "fuzz_arrays.hpp"
#include "fuzz_util.hpp"
#include "hkt/core/error.hpp"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  hkt_fuzz::Input in(data, size);
  const uint8_t opt = in.byte();
  const int64_t seq_len = in.byte();
  const size_t n = in.u16();
  const std::string inputs(in.take(n)), labels(in.rest());
  try {
    hkt::tasks::ArraySource s;
    s.path = "fuzz.npy";
    s.inputs = hkt::tasks::parse_npy(inputs, "fuzz.npy");
    s.labels = hkt::tasks::parse_npy(labels, "fuzz-labels.npy");
    hkt_fuzz::drive_arrays(s, opt, seq_len);
  } catch (const hkt::Error&) {
  }
  return 0;
}
