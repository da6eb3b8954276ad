#include "hkt/tasks/dataset.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <numeric>

#include "hkt/core/random.hpp"
#include "hkt/ops/factory.hpp"

namespace hkt::tasks {

void Dataset::add_tokens(const std::vector<int64_t>& ids, int64_t label) {
  HKT_CHECK(vocab > 0 && seq_len > 0, name, ": add_tokens on a data set without vocab/seq_len");
  const int64_t n = static_cast<int64_t>(ids.size());
  HKT_CHECK(n >= 1 && n <= seq_len, name, ": example ", size(), " has ", n, " tokens, expected 1..", seq_len);
  tokens.insert(tokens.end(), ids.begin(), ids.end());
  tokens.insert(tokens.end(), static_cast<size_t>(seq_len - n), pad_id);
  lengths.push_back(n);
  labels.push_back(label);
}

void Dataset::add_values(const std::vector<float>& vals, int64_t length, int64_t label) {
  HKT_CHECK(features > 0 && seq_len > 0, name, ": add_values on a data set without features/seq_len");
  HKT_CHECK(length >= 1 && length <= seq_len && static_cast<int64_t>(vals.size()) == length * features, name,
            ": example ", size(), " has ", vals.size(), " values for length ", length, " x ", features,
            " features (T = ", seq_len, ")");
  values.insert(values.end(), vals.begin(), vals.end());
  values.insert(values.end(), static_cast<size_t>((seq_len - length) * features), 0.0f);
  lengths.push_back(length);
  labels.push_back(label);
}

void Dataset::validate() const {
  HKT_CHECK(size() > 0, name, ": the data set is empty (no examples); refusing to train or evaluate on it");
  HKT_CHECK(seq_len > 0 && classes > 0 && (vocab > 0) != (features > 0), name,
            ": needs seq_len > 0, classes > 0 and exactly one of vocab / features");
  HKT_CHECK(static_cast<int64_t>(lengths.size()) == size(), name, ": ", lengths.size(), " lengths for ", size(),
            " labels");
  if (vocab > 0) {
    HKT_CHECK(static_cast<int64_t>(tokens.size()) == size() * seq_len, name, ": token buffer has ", tokens.size(),
              " ids, expected ", size() * seq_len);
    for (size_t i = 0; i < tokens.size(); ++i)
      HKT_CHECK(tokens[i] >= 0 && tokens[i] < vocab, name, ": example ", i / static_cast<size_t>(seq_len),
                " has token id ", tokens[i], " outside [0, ", vocab, ")");
  } else {
    HKT_CHECK(static_cast<int64_t>(values.size()) == size() * seq_len * features, name, ": value buffer has ",
              values.size(), " values, expected ", size() * seq_len * features);
  }
  for (int64_t i = 0; i < size(); ++i) {
    HKT_CHECK(labels[i] >= 0 && labels[i] < classes, name, ": example ", i, " has label ", labels[i],
              " outside [0, ", classes, ")");
    HKT_CHECK(lengths[i] >= 1 && lengths[i] <= seq_len, name, ": example ", i, " has length ", lengths[i],
              " outside [1, ", seq_len, "]");
  }
}

Batch Dataset::batch(const std::vector<int64_t>& idx) const {
  const int64_t B = static_cast<int64_t>(idx.size()), T = seq_len;
  HKT_CHECK(B > 0, name, ": empty batch");
  std::vector<int64_t> valid(static_cast<size_t>(B * T)), y(static_cast<size_t>(B));
  Batch b;
  for (int64_t r = 0; r < B; ++r) {
    const int64_t i = idx[r];
    HKT_CHECK(i >= 0 && i < size(), name, ": example index ", i, " out of range [0, ", size(), ")");
    for (int64_t t = 0; t < T; ++t) valid[r * T + t] = t < lengths[i];
    y[r] = labels[i];
  }
  if (vocab > 0) {
    std::vector<int64_t> ids(static_cast<size_t>(B * T));
    for (int64_t r = 0; r < B; ++r)
      std::copy_n(tokens.begin() + idx[r] * T, T, ids.begin() + r * T);
    b.inputs = from_vector(ids, {B, T});
  } else {
    std::vector<float> v(static_cast<size_t>(B * T * features));
    for (int64_t r = 0; r < B; ++r)
      std::copy_n(values.begin() + idx[r] * T * features, T * features, v.begin() + r * T * features);
    b.inputs = from_vector(v, {B, T, features});
  }
  b.valid = to_dtype(from_vector(valid, {B, T}), DType::Bool);
  b.labels = from_vector(y, {B});
  return b;
}

Dataset Dataset::subset(const std::vector<int64_t>& idx, const std::string& new_name) const {
  Dataset d;
  d.name = new_name;
  d.seq_len = seq_len;
  d.vocab = vocab;
  d.features = features;
  d.classes = classes;
  d.pad_id = pad_id;
  const int64_t T = seq_len;
  for (int64_t i : idx) {
    HKT_CHECK(i >= 0 && i < size(), name, ": example index ", i, " out of range [0, ", size(), ")");
    if (vocab > 0) d.tokens.insert(d.tokens.end(), tokens.begin() + i * T, tokens.begin() + (i + 1) * T);
    else
      d.values.insert(d.values.end(), values.begin() + i * T * features, values.begin() + (i + 1) * T * features);
    d.lengths.push_back(lengths[i]);
    d.labels.push_back(labels[i]);
  }
  return d;
}

std::vector<int64_t> seeded_permutation(int64_t n, uint64_t seed) {
  // Fisher-Yates with Philox draws: a pure function of (n, seed).
  std::vector<int64_t> perm(static_cast<size_t>(n));
  std::iota(perm.begin(), perm.end(), 0);
  for (int64_t i = n - 1; i > 0; --i) {
    const auto r = philox4x32(static_cast<uint64_t>(i), 0x5eedull, seed);
    const uint64_t u = (static_cast<uint64_t>(r[0]) << 32) | r[1];
    std::swap(perm[i], perm[static_cast<int64_t>(u % static_cast<uint64_t>(i + 1))]);
  }
  return perm;
}

void carve_validation(Splits& s, int64_t val_size, uint64_t seed) {
  const int64_t n = s.train.size();
  HKT_CHECK(val_size > 0 && val_size < n, s.train.name, ": cannot carve ", val_size,
            " validation examples out of ", n, " training examples");
  const std::vector<int64_t> perm = seeded_permutation(n, seed);
  std::vector<int64_t> val(perm.begin(), perm.begin() + val_size), tr(perm.begin() + val_size, perm.end());
  std::sort(val.begin(), val.end());
  std::sort(tr.begin(), tr.end());
  const std::string base = s.train.name.substr(0, s.train.name.rfind('/'));
  Dataset train = s.train.subset(tr, s.train.name);
  s.val = s.train.subset(val, base + "/val");
  s.train = std::move(train);
}

Dataset sample(const Dataset& d, int64_t n, uint64_t seed) {
  HKT_CHECK(n > 0, d.name, ": cannot sample ", n, " examples");
  if (n >= d.size()) return d;
  const std::vector<int64_t> perm = seeded_permutation(d.size(), seed);
  std::vector<int64_t> keep(perm.begin(), perm.begin() + n);
  std::sort(keep.begin(), keep.end());
  return d.subset(keep, d.name);
}

LengthStats length_stats(const Dataset& d, int64_t bins) {
  HKT_CHECK(bins >= 1, "length_stats: bins must be >= 1, got ", bins);
  LengthStats st;
  std::vector<int64_t> v = d.lengths;
  st.n = static_cast<int64_t>(v.size());
  if (v.empty()) return st;
  std::sort(v.begin(), v.end());
  const auto rank = [&](double q) {  // nearest rank: the smallest value with at least q of the data at or below it
    const auto k = static_cast<int64_t>(std::ceil(q * static_cast<double>(st.n)));
    return v[static_cast<size_t>(std::clamp<int64_t>(k, 1, st.n) - 1)];
  };
  st.min = v.front();
  st.max = v.back();
  st.p5 = rank(0.05);
  st.p25 = rank(0.25);
  st.median = rank(0.5);
  st.p75 = rank(0.75);
  st.p95 = rank(0.95);
  double sum = 0;
  for (int64_t x : v) sum += static_cast<double>(x);
  st.mean = sum / static_cast<double>(st.n);
  const int64_t T = std::max<int64_t>(d.seq_len, st.max);
  st.bin_width = std::max<int64_t>(1, (T + bins - 1) / bins);
  const int64_t nb = (T + st.bin_width) / st.bin_width;  // lengths 0..T
  std::vector<int64_t> count(static_cast<size_t>(nb), 0);
  for (int64_t x : v) ++count[static_cast<size_t>(x / st.bin_width)];
  for (int64_t b = 0; b < nb; ++b)
    if (count[static_cast<size_t>(b)] > 0) st.histogram.emplace_back(b * st.bin_width, count[static_cast<size_t>(b)]);
  return st;
}

std::string LengthStats::str() const {
  char buf[256];
  std::snprintf(buf, sizeof buf, "n %lld, min %lld, p5 %lld, p25 %lld, median %lld, p75 %lld, p95 %lld, max %lld, mean %.1f",
                static_cast<long long>(n), static_cast<long long>(min), static_cast<long long>(p5),
                static_cast<long long>(p25), static_cast<long long>(median), static_cast<long long>(p75),
                static_cast<long long>(p95), static_cast<long long>(max), mean);
  return buf;
}

}  // namespace hkt::tasks
