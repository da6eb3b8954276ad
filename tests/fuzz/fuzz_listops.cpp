// libFuzzer target for ListOps: the expression tokenizer and evaluator, and
// the LRA TSV reader (read_listops_tsv, load_listops_tsv). The first byte
// picks seq_len; the rest is the expression and also the TSV file of every
// split. Every input must load or throw hkt::Error; anything else is a bug.
#include <string>

#include "fuzz_util.hpp"
#include "hkt/core/error.hpp"
#include "hkt/tasks/listops.hpp"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  hkt_fuzz::Input in(data, size);
  const int64_t seq_len = in.byte();  // 0 is refused with an hkt::Error
  const std::string text(in.rest());
  try {
    const std::vector<int64_t> ids = hkt::tasks::tokenize_listops(text);
    for (int64_t id : ids) hkt::tasks::listops_token_name(id);
  } catch (const hkt::Error&) {
  }
  try {
    const int64_t v = hkt::tasks::evaluate_listops(text);
    if (v < 0 || v > 9) __builtin_trap();  // a value is a digit
    // A well-formed expression survives the round trip through token ids.
    std::vector<int64_t> ids = hkt::tasks::tokenize_listops(text);
    std::vector<int64_t> no_parens;
    for (int64_t id : ids)
      if (hkt::tasks::listops_token_name(id) != "(" && hkt::tasks::listops_token_name(id) != ")")
        no_parens.push_back(id);
    if (hkt::tasks::evaluate_listops_ids(no_parens) != v) __builtin_trap();
    if (hkt::tasks::evaluate_listops(hkt::tasks::listops_to_expression(no_parens)) != v) __builtin_trap();
  } catch (const hkt::Error&) {
  }
  const auto dir = hkt_fuzz::fresh_dir();
  for (const char* name : {"basic_train.tsv", "basic_val.tsv", "basic_test.tsv"})
    hkt_fuzz::write_file(dir / name, text);
  try {
    hkt::tasks::read_listops_tsv((dir / "basic_train.tsv").string());
  } catch (const hkt::Error&) {
  }
  try {
    const hkt::tasks::Splits s = hkt::tasks::load_listops_tsv(dir.string(), seq_len);
    if (s.train.size() > 0) s.train.batch({0});
  } catch (const hkt::Error&) {
  }
  return 0;
}
