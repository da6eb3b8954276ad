// The tokens and series tasks: a user's arrays as train / validation / test splits (see
// hkt/tasks/array_data.hpp, load_arrays).
#include <algorithm>
#include <nlohmann/json.hpp>

#include "hkt/core/error.hpp"
#include "hkt/tasks/array_data.hpp"

namespace hkt::tasks {
namespace {

// Moves a seeded `n` examples of `from` into a data set of their own (both kept in file order).
Dataset carve(Dataset& from, int64_t n, uint64_t seed, const char* what, const std::string& path,
              const std::string& name) {
  HKT_CHECK(n >= 1 && n < from.size(), path, ": cannot carve ", n, " ", what, " rows out of ", from.size(),
            " training rows (give a ", what, " file, or a smaller size)");
  const std::vector<int64_t> perm = seeded_permutation(from.size(), seed);
  std::vector<int64_t> a(perm.begin(), perm.begin() + n), b(perm.begin() + n, perm.end());
  std::sort(a.begin(), a.end());
  std::sort(b.begin(), b.end());
  Dataset carved = from.subset(a, name);
  from = from.subset(b, from.name);
  return carved;
}

}  // namespace

Splits load_arrays(const std::string& task, const ArrayTaskOptions& opt, int64_t seq_len, int64_t train_size,
                   int64_t val_size, int64_t test_size, uint64_t seed) {
  HKT_CHECK(task == "tokens" || task == "series", "arrays: unknown task '", task, "' (tokens, series)");
  HKT_CHECK(opt.set(), task, ": no training file (--train-file, data.arrays.train)");
  HKT_CHECK(task == "tokens" || (opt.vocab_size == 0 && opt.pad_id == -1), task,
            ": a vocabulary size and a pad id apply to the tokens task only");
  Splits s;
  ArrayEncoding enc;
  {
    const ArraySource src = read_array_source(task, opt.train, opt.train_labels, true);
    enc = fit_array_encoding(task, src, opt, seq_len);
    s.train = encode_arrays(src, enc, task + "/train", true);
  }
  const int64_t tenth = std::max<int64_t>(1, s.train.size() / 10);
  const auto split = [&](const std::string& file, const std::string& labels, int64_t size, uint64_t sd,
                         const char* what, const std::string& name) {
    if (file.empty()) return carve(s.train, size > 0 ? size : tenth, sd, what, opt.train, name);
    return encode_arrays(read_array_source(task, file, labels, true), enc, name, true);
  };
  HKT_CHECK(!opt.val.empty() || opt.val_labels.empty(), task, ": a validation labels file without its inputs file");
  HKT_CHECK(!opt.test.empty() || opt.test_labels.empty(), task, ": a test labels file without its inputs file");
  s.val = split(opt.val, opt.val_labels, val_size, seed, "validation", task + "/val");
  s.test = split(opt.test, opt.test_labels, test_size, seed + 1, "test", task + "/test");
  if (train_size > 0 && train_size < s.train.size()) {
    std::vector<int64_t> keep = seeded_permutation(s.train.size(), seed + 2);
    keep.resize(static_cast<size_t>(train_size));
    std::sort(keep.begin(), keep.end());
    s.train = s.train.subset(keep, s.train.name);
  }
  // Series: each feature standardised with the training split's mean and deviation.
  fit_scale(enc, s.train);
  for (Dataset* d : {&s.train, &s.val, &s.test}) apply_scale(*d, enc);
  nlohmann::json j = nlohmann::json::parse(enc.to_json());
  const auto rows = [](const std::string& file, const std::string& carved_from, const Dataset& d) {
    return nlohmann::json{{"file", file.empty() ? carved_from : file}, {"carved", file.empty()}, {"rows", d.size()}};
  };
  j["splits"] = {{"train", rows(opt.train, "", s.train)},
                 {"val", rows(opt.val, opt.train, s.val)},
                 {"test", rows(opt.test, opt.train, s.test)}};
  try {
    s.encoding = j.dump(2) + "\n";
  } catch (const nlohmann::json::exception& e) {  // a file name given on the command line
    throw Error(str_cat(task, ": a file name is not valid UTF-8 (", e.what(), ")"));
  }
  return s;
}

}  // namespace hkt::tasks
