// Internal: the attention scores of every block of a classifier on a data set,
// reduced to what the report needs (analysis/src/scores.cpp).
#pragma once
#include <cstdint>
#include <vector>

#include "hkt/analysis/stats.hpp"
#include "hkt/models/classifier.hpp"
#include "hkt/tasks/dataset.hpp"

namespace hkt::analysis {

// One (layer, head, level) of the scores S_l.
struct LevelScores {
  int64_t p = 0;               // the key window of the score vectors
  int64_t examples = 0;        // examples with len_l >= p, which give score vectors
  std::vector<double> rows;    // n x p: S_l[i, 0:p] for every valid query i of those examples
  Moments entries;             // every S_l[i, j] with i, j valid
};

// One (layer, head) of the symmetrised combined score matrix (S_hier + S_hier^T) / 2 over the valid
// positions of one example.
struct CombinedSpectrum {
  int64_t sample = 0;
  std::vector<double> values;
};

struct ScoreStats {
  int64_t layers = 0, heads = 0, levels = 0;
  std::vector<LevelScores> level;          // [layer][head][level], flattened
  std::vector<CombinedSpectrum> combined;  // [layer][head] x eig_samples, in that order
  LevelScores& at(int64_t layer, int64_t head, int64_t lev) {
    return level[static_cast<size_t>((layer * heads + head) * levels + lev)];
  }
};

// Runs the model (eval mode, no gradient) over `data` in batches and collects the scores of every
// block: HKT blocks through HKTAttention::inspect, MHA blocks as one level S_0 = Q K^T / sqrt(dh).
ScoreStats collect_scores(nn::SequenceClassifier& model, const tasks::Dataset& data, int64_t window,
                          int64_t eig_samples, int64_t batch_size);

}  // namespace hkt::analysis
