// One training step: forward, loss, backward, clipping and the optimizer step
// (train_step.hpp). The loop around it is in train_loop.cpp.
#include "train_step.hpp"

#include <chrono>
#include <cmath>
#include <tuple>

#include "hkt/core/grad_hook.hpp"
#include "hkt/core/random.hpp"
#include "hkt/ops/elementwise.hpp"
#include "hkt/ops/factory.hpp"
#include "hkt/ops/nn.hpp"

namespace hkt::tasks::detail {

StepStats train_step(const StepContext& s, const Batch& b, const std::vector<int64_t>& labels) {
  StepStats r;
  // Forward and loss: the batch's mean cross-entropy (several ranks: this rank's share of it).
  Tensor logits, loss;
  if (s.dp) {
    std::tie(logits, loss) = s.dp->forward(s.model, b);
  } else {
    logits = s.model.forward(b.inputs, b.valid);
    loss = cross_entropy(logits, b.labels);
    r.loss = loss.item_double();
    if (!std::isfinite(r.loss)) s.non_finite("training loss", r.loss);
  }
  // Backward (several ranks: the gradients summed over them).
  s.opt.zero_grad();
  if (s.dp) {
    s.dp->backward(loss, s.params);
  } else if (s.alone) {
    s.alone->begin(s.params);
    {
      const GradReadyGuard hook(s.alone->hook());
      loss.backward();
    }
    s.alone->finish();
  } else {
    loss.backward();
  }
  r.correct = count_correct(logits, labels);
  if (s.dp) {
    s.dp->sum_over_ranks(loss, r);
    if (!std::isfinite(r.loss)) s.non_finite("training loss", r.loss);
  }
  // Clipping.
  r.grad_norm = nn::clip_grad_norm_(s.params, s.clip);
  if (!std::isfinite(r.grad_norm)) s.non_finite("gradient norm", r.grad_norm);
  // The optimizer step, at its schedule's learning rate.
  s.opt.step();
  r.lr = s.opt.lr(0);
  return r;
}

// --- data parallel ------------------------------------------------------------------

std::pair<Tensor, Tensor> DataParallel::forward(nn::SequenceClassifier& model, const Batch& b) {
  // The global batch's mean loss is the sum of the ranks' (sum of losses) / n; so is its gradient.
  Generator& g = default_generator();
  g.set_batch_slice(lo, count, n);
  Tensor logits, loss;
  try {
    logits = model.forward(b.inputs, b.valid);
    loss = cross_entropy(logits, b.labels, -100, Reduction::Sum) * (1.0 / static_cast<double>(n));
  } catch (...) {
    g.clear_batch_slice();
    throw;
  }
  g.clear_batch_slice();
  return {logits, loss};
}

void DataParallel::backward(const Tensor& loss, const std::vector<Tensor>& params) {
  reducer.begin(params);
  {
    const GradReadyGuard hook(reducer.hook());  // with overlap: buckets reduced during the backward
    loss.backward();
  }
  const auto c0 = std::chrono::steady_clock::now();
  reducer.finish();  // every rank now holds the global batch's gradient
  comm_s += std::chrono::duration<double>(std::chrono::steady_clock::now() - c0).count();
}

void DataParallel::sum_over_ranks(const Tensor& loss, StepStats& s) {
  const auto c0 = std::chrono::steady_clock::now();
  double sums[2] = {loss.item_double(), static_cast<double>(s.correct)};
  allreduce_sum(sums, 2);
  comm_s += std::chrono::duration<double>(std::chrono::steady_clock::now() - c0).count();
  s.loss = sums[0];
  s.correct = static_cast<int64_t>(sums[1]);
}

// --- statistics -----------------------------------------------------------------------

int64_t count_correct(const Tensor& logits, const std::vector<int64_t>& labels, std::vector<int64_t>* confusion,
                      std::vector<int64_t>* predicted) {
  const std::vector<double> v = to_dtype(logits.detach(), DType::Float64).to_vector<double>();
  const int64_t B = logits.shape()[0], C = logits.shape()[1];
  int64_t correct = 0;
  for (int64_t r = 0; r < B; ++r) {
    int64_t best = 0;
    for (int64_t c = 1; c < C; ++c)
      if (v[r * C + c] > v[r * C + best]) best = c;
    correct += best == labels[r];
    if (confusion) ++(*confusion)[static_cast<size_t>(labels[r] * C + best)];
    if (predicted) predicted->push_back(best);
  }
  return correct;
}

}  // namespace hkt::tasks::detail
