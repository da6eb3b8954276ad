// The text task: a user's labelled TSV / CSV files as train / validation / test splits (see
// hkt/tasks/text_data.hpp, load_text).
#include <algorithm>
#include <iostream>
#include <nlohmann/json.hpp>

#include "hkt/core/error.hpp"
#include "hkt/tasks/text_data.hpp"

namespace hkt::tasks {
namespace {

constexpr int64_t kMaxDefaultLen = 4096;

TextTable read_split(const TextTaskOptions& t, const std::string& path, bool labelled) {
  TextFormat f = text_format_for(path);
  f.header = t.header;
  f.text_column = t.text_column;
  f.label_column = t.label_column;
  return read_text_table(path, f, labelled);
}

TextTable rows(const TextTable& t, const std::vector<int64_t>& idx) {
  TextTable out;
  out.path = t.path;
  for (int64_t i : idx) {
    out.texts.push_back(t.texts[i]);
    out.labels.push_back(t.labels[i]);
    out.lines.push_back(t.lines[i]);
  }
  return out;
}

// Moves a seeded `n` rows of `from` into a table of their own (both kept in file order).
TextTable carve(TextTable& from, int64_t n, uint64_t seed, const char* what) {
  HKT_CHECK(n >= 1 && n < from.size(), from.path, ": cannot carve ", n, " ", what, " rows out of ", from.size(),
            " training rows (give a ", what, " file, or a smaller size)");
  const std::vector<int64_t> perm = seeded_permutation(from.size(), seed);
  std::vector<int64_t> a(perm.begin(), perm.begin() + n), b(perm.begin() + n, perm.end());
  std::sort(a.begin(), a.end());
  std::sort(b.begin(), b.end());
  TextTable carved = rows(from, a);
  from = rows(from, b);
  return carved;
}

}  // namespace

Splits load_text(const TextTaskOptions& t, int64_t seq_len, int64_t train_size, int64_t val_size, int64_t test_size,
                 uint64_t seed) {
  HKT_CHECK(t.set(), "text: no training file (--train-file, data.text.train)");
  TextTable train = read_split(t, t.train, true);
  const int64_t tenth = std::max<int64_t>(1, train.size() / 10);
  TextTable val = t.val.empty() ? carve(train, val_size > 0 ? val_size : tenth, seed, "validation")
                                : read_split(t, t.val, true);
  TextTable test = t.test.empty() ? carve(train, test_size > 0 ? test_size : tenth, seed + 1, "test")
                                  : read_split(t, t.test, true);
  if (train_size > 0 && train_size < train.size()) {
    std::vector<int64_t> keep = seeded_permutation(train.size(), seed + 2);
    keep.resize(static_cast<size_t>(train_size));
    std::sort(keep.begin(), keep.end());
    train = rows(train, keep);
  }
  EncodingOptions eo;
  eo.tokenizer = t.tokenizer;
  eo.vocab_file = t.vocab_file;
  eo.classes = t.classes;
  eo.truncate = t.truncate;
  const TextEncoding enc = fit_encoding(train, eo);
  if (seq_len <= 0) {
    int64_t longest = 1;
    for (int64_t r = 0; r < train.size(); ++r)
      longest = std::max<int64_t>(
          longest, static_cast<int64_t>(encode_text(train.texts[r], enc, str_cat(train.path, ":", train.lines[r])).size()));
    seq_len = std::min(longest, kMaxDefaultLen);
  }
  Splits s;
  nlohmann::json counts;
  const auto encode = [&](const TextTable& tab, const char* split) {
    EncodeStats st;
    Dataset d = encode_table(tab, enc, seq_len, str_cat("text/", split), &st);
    counts[split] = {{"file", tab.path}, {"rows", tab.size()}, {"truncated", st.truncated}, {"empty", st.empty},
                     {"unknown_tokens", st.unknown}};
    if (st.truncated > 0)
      std::cerr << "text: " << st.truncated << " of " << tab.size() << " " << split << " rows longer than " << seq_len
                << " tokens, cut (truncate: " << enc.truncate << ")\n";
    return d;
  };
  s.train = encode(train, "train");
  s.val = encode(val, "val");
  s.test = encode(test, "test");
  nlohmann::json j = nlohmann::json::parse(enc.to_json());
  j["seq_len"] = seq_len;
  j["splits"] = counts;
  j["format"] = {{"text_column", t.text_column}, {"label_column", t.label_column}, {"header", t.header}};
  try {
    s.encoding = j.dump(2) + "\n";
  } catch (const nlohmann::json::exception& e) {  // a column name given on the command line
    throw Error(str_cat("text: a column or file name is not valid UTF-8 (", e.what(), ")"));
  }
  return s;
}

}  // namespace hkt::tasks
