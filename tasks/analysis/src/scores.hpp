// Internal: the attention scores of every block of a classifier on a data set,
// reduced to what the report needs (analysis/src/scores.cpp).
#pragma once
#include <cstdint>
#include <map>
#include <vector>

#include "hkt/analysis/stats.hpp"
#include "hkt/models/classifier.hpp"
#include "hkt/models/efficient_attention.hpp"
#include "hkt/models/htransformer.hpp"
#include "hkt/tasks/dataset.hpp"

namespace hkt::analysis {

// The query and key maps of a block whose attention has one of each (MHA,
// local, Performer, H-Transformer-1D): the analysis treats their logits
// Q K^T / sqrt(dh), before any mask, as the scores (local attention sees only
// |i - j| <= w of them; Performer's features approximate their exponential;
// H-Transformer-1D sees them exactly within its level-0 blocks (at least
// |i - j| < Nr), through means of Q and K over groups of 2^l tokens at level l
// further out, plus its learned relative-position bias, which is left out). A kind without one such pair is
// refused with an error naming it (docs/analysis.md).
struct QKMaps {
  std::shared_ptr<nn::Linear> wq, wk;
  int64_t heads;
};
inline QKMaps qk_maps(const nn::Block& blk, const std::string& kind) {
  if (blk.mha) return {blk.mha->wq, blk.mha->wk, blk.mha->config().heads};
  if (auto l = std::dynamic_pointer_cast<nn::LocalAttention>(blk.attn)) return {l->wq, l->wk, l->config().heads};
  if (auto p = std::dynamic_pointer_cast<nn::PerformerAttention>(blk.attn)) return {p->wq, p->wk, p->config().heads};
  if (auto h = std::dynamic_pointer_cast<nn::HTransformerAttention>(blk.attn))
    return {h->wq, h->wk, h->config().heads};
  throw Error(str_cat("hkt-analyze: the scores and forms are defined for the attention kinds hkt, mha, local, "
                      "performer and htransformer; the model's attention is '", kind, "'"));
}


// The score vectors of one key window p.
struct RowSet {
  int64_t examples = 0;      // examples with len_l >= p, which give score vectors
  std::vector<double> rows;  // n x p: S_l[i, 0:p] for every valid query i of those examples
};

// One (layer, head, level) of the scores S_l.
struct LevelScores {
  int64_t p = 0;                   // the key window of --window's score vectors
  std::vector<int64_t> window_p;   // p of each requested window (0: not collected, too wide)
  std::map<int64_t, RowSet> sets;  // p -> its score vectors (p and every collected window_p)
  Moments entries;                 // every S_l[i, j] with i, j valid
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
// `windows` are further key windows whose score vectors are kept too (0 = the full row: p = the
// median len_l), each capped by the median len_l; a window whose p exceeds `max_p` is not collected.
ScoreStats collect_scores(nn::SequenceClassifier& model, const tasks::Dataset& data, int64_t window,
                          int64_t eig_samples, int64_t batch_size, const std::vector<int64_t>& windows = {},
                          int64_t max_p = 0);

// The combined scores S_hier [B, H, T, T] of every block (before the mask) for one batch (eval mode,
// no gradient); for an MHA block S_0 = Q K^T / sqrt(dh).
std::vector<Tensor> layer_scores(nn::SequenceClassifier& model, const Tensor& inputs, const Tensor& valid);

// The per-level scores S_l [B, H, T_l, T_l] of every block for one batch (eval mode, no gradient):
// [layer][level]; one level (S_0 = Q K^T / sqrt(dh)) for a kind with one query and key map.
std::vector<std::vector<Tensor>> layer_level_scores(nn::SequenceClassifier& model, const Tensor& inputs,
                                                    const Tensor& valid);

}  // namespace hkt::analysis
