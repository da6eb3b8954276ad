// Evaluation (evaluation.cpp): evaluate() split across the ranks of a job, and
// the evaluator of a training run. Internal to tasks/src.
#pragma once
#include <cstdint>
#include <string>

#include "hkt/tasks/dataset.hpp"
#include "hkt/tasks/train.hpp"
#include "console.hpp"
#include "run_folder.hpp"
#include "train_state.hpp"

namespace hkt::tasks::detail {

// A batch copied to device d.
Batch on_device(Batch b, Device d);
// evaluate() with the batches split across the ranks of the job (split: each
// rank its contiguous share of the batches) and the sums reduced: every rank
// returns the whole result.
EvalResult evaluate_split(nn::SequenceClassifier& model, const Dataset& data, int64_t batch_size,
                          int64_t max_batches, bool split);
// index,label,predicted per example of an evaluation, in its order.
std::string predictions_csv(const EvalResult& r, const Dataset& d);

// The run's evaluations: validation decides the best model (best.safetensors, and
// the best step and accuracy in the TrainState it records them in), and the test
// set is scored on it at the end (or along the way for its curve, eval_test_every).
class Evaluator {
 public:
  Evaluator(const TrainConfig& cfg, const Splits& data, TrainState& st, RunFolder& folder, Device device)
      : cfg_(cfg), data_(data), st_(st), folder_(folder), device_(device) {}
  // Validation accuracy now (and the test set's, with_test); best.safetensors when better.
  void now(Console& con, bool with_test);
  // The best model by validation accuracy (the final model when there is no run folder)
  // on the whole test set: the "test" event and test_predictions.csv.
  EvalResult test_best(Console& con);

 private:
  const TrainConfig& cfg_;
  const Splits& data_;
  TrainState& st_;
  RunFolder& folder_;
  Device device_;  // where the models are scored
};

}  // namespace hkt::tasks::detail
