// Proposition 4.5 and Theorem 4.3 on a trained model (docs/analysis.md, "hkt-analyze theory"):
//  - Proposition 4.5: each head's combined score matrix on each sampled example (row-centred over its
//    valid keys, since softmax ignores a constant per row) is the fixed target; the best L-level fit
//    (levelfit.hpp) for L = 1 .. max_levels at each per-level rank r, its residual pooled over the
//    examples and heads, and the log-linear fit of the residual against L.
//  - Theorem 4.3 (HKT models): per layer, head and level l >= 1, how much the level's upsampled scores
//    Up_l(S_l) tell about the fine scores S_0 at the same valid pairs: rho^2, the residual's skewness and
//    kurtosis, the Gaussian information and its kurtosis correction (info.hpp).
//
//   Report r = theory_report(*m.model, sample, {.ranks = {1, 4, 8}});
//   write_report("runs/x/theory", r);   // report.json, levelfit.csv, levelfit_fit.csv, information.csv
#pragma once
#include <cstdint>
#include <vector>

#include "hkt/analysis/report.hpp"

namespace hkt::analysis {

struct TheoryOptions {
  int64_t max_levels = 5;              // the fits L = 1 .. max_levels
  std::vector<int64_t> ranks = {1, 4, 8};  // per-level ranks r of the fitted structure
  int64_t max_len = 128;               // an example longer than this is fitted on its first max_len positions
  int64_t batch_size = 4;
  int64_t max_sweeps = 100;            // coordinate-descent sweeps per fit
};

Report theory_report(nn::SequenceClassifier& model, const tasks::Dataset& data, const TheoryOptions& opt = {});

}  // namespace hkt::analysis
