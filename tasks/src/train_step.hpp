// One training step (train_step.cpp), internal to tasks/src: what train() does
// with one batch, apart from choosing the batch and reporting on the step.
#pragma once
#include <cstdint>
#include <functional>
#include <string>
#include <utility>
#include <vector>

#include "hkt/core/tensor.hpp"
#include "hkt/models/classifier.hpp"
#include "hkt/models/optim.hpp"
#include "hkt/tasks/dataset.hpp"
#include "comm.hpp"

namespace hkt::tasks::detail {

// What a step measured: the batch's mean loss, its correct predictions, the
// gradient norm before clipping, and the learning rate of the update.
struct StepStats {
  double loss = 0.0, grad_norm = 0.0, lr = 0.0;
  int64_t correct = 0;
};

// Data parallel (several ranks): this rank holds examples [lo, lo + count) of
// a global batch of n; the loss is its share of the global batch's mean, and
// the gradients and the statistics are summed over the ranks.
struct DataParallel {
  GradReducer reducer{true};
  double comm_s = 0.0;  // this segment's time in gradient and metric all-reduces
  uint64_t lo = 0, count = 0, n = 0;
  // The logits and this rank's share of the loss; dropout draws the counters the
  // whole batch would give these examples (Generator::set_batch_slice).
  std::pair<Tensor, Tensor> forward(nn::SequenceClassifier& model, const Batch& b);
  // The backward, with the gradients' buckets summed over the ranks as they complete.
  void backward(const Tensor& loss, const std::vector<Tensor>& params);
  // The global batch's loss and correct predictions, on every rank.
  void sum_over_ranks(const Tensor& loss, StepStats& s);
};

struct StepContext {
  nn::SequenceClassifier& model;
  nn::AdamW& opt;                     // with its learning-rate schedule
  const std::vector<Tensor>& params;  // model.parameters()
  double clip;                        // max gradient norm
  DataParallel* dp;                   // null: one process
  // Stops the run (throws) at a non-finite loss or gradient norm, before the weights change.
  std::function<void(const std::string& what, double value)> non_finite;
  // One process: its backward still goes through the reducer, a no-op except for the test hook
  // sum_buckets_alone_with_nccl (distributed.hpp), which sums the buckets with a one-rank NCCL communicator.
  GradReducer* alone = nullptr;
};

// Forward, loss, backward, clipping and the optimizer step on one batch (on
// the model's device); `labels` are the batch's labels on the host.
StepStats train_step(const StepContext& s, const Batch& b, const std::vector<int64_t>& labels);

// Correct predictions (the first largest logit) of logits [B, C] against labels;
// with `confusion` ([C * C], row = label), each example is also counted there.
int64_t count_correct(const Tensor& logits, const std::vector<int64_t>& labels,
                      std::vector<int64_t>* confusion = nullptr, std::vector<int64_t>* predicted = nullptr);

}  // namespace hkt::tasks::detail
