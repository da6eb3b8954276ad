// In-memory classification data sets shared by every task.
//
// A Dataset holds N examples of one fixed length T, either as token ids
// (Int64, vocab > 0) or as real-valued features (float, features > 0), plus a
// label in [0, classes) and a length per example: positions >= length are
// padding (token id `pad_id`, features 0) and are masked by the models.
#pragma once
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "hkt/core/tensor.hpp"

namespace hkt::tasks {

struct Batch {
  Tensor inputs;  // Int64 [B, T] tokens or Float32 [B, T, F] features
  Tensor valid;   // Bool [B, T], true at real positions
  Tensor labels;  // Int64 [B]
};

struct Dataset {
  std::string name;          // e.g. "listops/train"
  int64_t seq_len = 0;       // T
  int64_t vocab = 0;         // > 0 for token data (ids in [0, vocab))
  int64_t features = 0;      // > 0 for real-valued data
  int64_t classes = 0;
  int64_t pad_id = 0;        // token id at padded positions
  std::vector<int64_t> tokens;   // N * T (token data)
  std::vector<float> values;     // N * T * features (real-valued data)
  std::vector<int64_t> lengths;  // N, each in [1, T]
  std::vector<int64_t> labels;   // N, each in [0, classes)

  int64_t size() const { return static_cast<int64_t>(labels.size()); }
  // Appends one example; tokens/values shorter than T are padded, longer ones
  // are an error (truncate before, where the task says so).
  void add_tokens(const std::vector<int64_t>& ids, int64_t label);
  void add_values(const std::vector<float>& vals, int64_t length, int64_t label);  // vals: length * features
  // Checks sizes, id and label ranges, lengths; throws hkt::Error naming the
  // data set, the example and the problem. An empty data set is an error.
  void validate() const;
  // The examples at `indices`, as tensors.
  Batch batch(const std::vector<int64_t>& indices) const;
  Dataset subset(const std::vector<int64_t>& indices, const std::string& new_name) const;
};

struct Splits {
  Dataset train, val, test;
  // What reading new inputs the same way needs, as JSON (the text task's TextEncoding: tokeniser,
  // vocabulary, class names); empty for the other tasks. The trainer writes it to the run folder.
  std::string encoding;
};

// Moves a seeded random `val_size` examples out of `train` into a validation
// set (for tasks that have none). Deterministic for a given seed.
void carve_validation(Splits& s, int64_t val_size, uint64_t seed);

// A seeded random subset of n examples, kept in their original order (all of
// them when n >= size()).
Dataset sample(const Dataset& d, int64_t n, uint64_t seed);

// The distribution of the example lengths (token counts) of a data set:
// order statistics (nearest rank) and a histogram of `bins` equal bins over [0, T].
struct LengthStats {
  int64_t n = 0, min = 0, p5 = 0, p25 = 0, median = 0, p75 = 0, p95 = 0, max = 0;
  double mean = 0;
  int64_t bin_width = 0;
  std::vector<std::pair<int64_t, int64_t>> histogram;  // (first length of the bin, examples)
  std::string str() const;  // "n 96000, min 256, p5 .., median .., p95 .., max 512, mean .."
};
LengthStats length_stats(const Dataset& d, int64_t bins = 16);

// A random permutation of 0..n-1 that depends only on (n, seed).
std::vector<int64_t> seeded_permutation(int64_t n, uint64_t seed);

}  // namespace hkt::tasks
