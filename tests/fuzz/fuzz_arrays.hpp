// What the array fuzz targets (fuzz_npy, fuzz_npz) do with the arrays they read: the tokens or series
// task's checks, the fitted encoding and its JSON round trip, the data set, the standardisation and a
// batch. Every input must get through or throw hkt::Error.
#pragma once
#include <cstdint>

#include "hkt/tasks/array_data.hpp"

namespace hkt_fuzz {

// opt: bit 0 series (else tokens), bit 1 pad id 0 (tokens), bit 2 --vocab-size 16 (tokens).
inline void drive_arrays(const hkt::tasks::ArraySource& s, uint8_t opt, int64_t seq_len) {
  using namespace hkt::tasks;
  const std::string task = (opt & 1) ? "series" : "tokens";
  check_array_source(task, s, true);
  ArrayTaskOptions o;
  if (task == "tokens") {
    o.pad_id = (opt & 2) ? 0 : -1;
    o.vocab_size = (opt & 4) ? 16 : 0;
  }
  ArrayEncoding enc = fit_array_encoding(task, s, o, seq_len);
  enc = ArrayEncoding::from_json(enc.to_json(), "fuzz encoding");
  Dataset d = encode_arrays(s, enc, "fuzz/train", true);
  fit_scale(enc, d);
  apply_scale(d, enc);
  d.validate();
  d.batch({0});
}

}  // namespace hkt_fuzz
