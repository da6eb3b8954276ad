// libFuzzer target for the text task's reader (hkt/tasks/text_data.hpp): the input is a TSV / CSV
// file, parsed, fitted and encoded.
//   byte 0: bit 0 comma (else tab), bit 1 no header (columns "0" and "1"), bits 2-3 tokenizer
//           (bytes, chars, chars, bytes), bits 4-5 truncation (refuse, head, tail, head),
//           bit 6 unlabelled; byte 1: seq_len (1..256); the rest: the file.
// Every input must load or throw hkt::Error; anything else is a bug.
#include <string>

#include "fuzz_util.hpp"
#include "hkt/core/error.hpp"
#include "hkt/tasks/text_data.hpp"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  hkt_fuzz::Input in(data, size);
  const uint8_t opt = in.byte();
  const int64_t seq_len = 1 + in.byte();
  const std::string file(in.take(in.left()));
  hkt::tasks::TextFormat f;
  f.delimiter = (opt & 1) ? ',' : '\t';
  f.header = !(opt & 2);
  if (!f.header) f.text_column = "0", f.label_column = "1";
  static const char* kTok[] = {"bytes", "chars", "chars", "bytes"};
  static const char* kTrunc[] = {"refuse", "head", "tail", "head"};
  const bool labelled = !(opt & 64);
  try {
    const hkt::tasks::TextTable t = hkt::tasks::parse_text_table(file, "fuzz.tsv", f, labelled, 1000);
    hkt::tasks::EncodingOptions eo;
    eo.tokenizer = kTok[(opt >> 2) & 3];
    eo.truncate = kTrunc[(opt >> 4) & 3];
    if (!labelled) eo.classes = {"a", "b"};
    const hkt::tasks::TextEncoding enc = hkt::tasks::fit_encoding(t, eo);
    const hkt::tasks::TextEncoding back = hkt::tasks::TextEncoding::from_json(enc.to_json(), "fuzz encoding");
    const hkt::tasks::Dataset d = hkt::tasks::encode_table(t, back, seq_len, "fuzz/train");
    d.validate();
    d.batch({0});
  } catch (const hkt::Error&) {
  }
  return 0;
}
