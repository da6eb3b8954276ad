// The approximation error as the number of levels grows (docs/analysis.md, "approx"): how well the
// combined score matrix of each model of a level sweep (HKT with L = 1, 2, ...) approximates a
// target's (a trained MHA model of the same task, or the largest-L model) on the same inputs, and
// whether the residual falls geometrically in L (Proposition 4.5 of the paper's summaries).
//
//   std::vector<ApproxModel> runs = {{"L=1", &m1}, {"L=2", &m2}, {"L=3", &m3}};
//   Report r = approx_report(runs, {"mha", &mha}, sample);
//   write_report("runs/approx", r);                      // report.json, approx.csv, approx_fit.csv
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "hkt/analysis/report.hpp"

namespace hkt::analysis {

struct ApproxModel {
  std::string label;                      // what the report calls it (a run folder's path)
  nn::SequenceClassifier* model = nullptr;
};

// Per layer, the relative Frobenius error ||S - S*||_F / ||S*||_F of each run's combined scores S to
// the target's S*, summed over the sample's examples and heads, after centring each query row over
// the keys it attends to (softmax ignores a constant per row) and matching the run's heads to the
// target's (the permutation with the smallest error; independently trained heads come in any order).
// `rel_error_fitted` allows one best scalar per head pair (scale-free). The runs must have the
// target's layers, heads and causal mode. Errors are pooled over layers per run, then fitted by
// log(err) = a + b L over the HKT runs (LogLinearFit), excluding a run that is the target itself.
Report approx_report(const std::vector<ApproxModel>& runs, const ApproxModel& target, const tasks::Dataset& data,
                     int64_t batch_size = 4);

}  // namespace hkt::analysis
