// Evaluation (train.hpp, train_run.hpp): evaluate() on a split, split across the
// ranks of a data-parallel job, and the run's evaluations during training.
#include <algorithm>
#include <numeric>

#include "hkt/core/grad_mode.hpp"
#include "hkt/models/checkpoint.hpp"
#include "hkt/ops/elementwise.hpp"
#include "hkt/ops/factory.hpp"
#include "hkt/ops/nn.hpp"
#include "hkt/tasks/progress.hpp"
#include "train_run.hpp"

namespace hkt::tasks {

EvalResult evaluate(nn::SequenceClassifier& model, const Dataset& data, int64_t batch_size, int64_t max_batches) {
  return detail::evaluate_split(model, data, batch_size, max_batches, false);
}
EvalResult evaluate_across_ranks(nn::SequenceClassifier& model, const Dataset& data, int64_t batch_size,
                                 int64_t max_batches) {
  return detail::evaluate_split(model, data, batch_size, max_batches, true);
}

namespace detail {

Batch on_device(Batch b, Device d) {
  if (d.is_cpu()) return b;
  b.inputs = to_device(b.inputs, d);
  if (b.valid.defined()) b.valid = to_device(b.valid, d);
  b.labels = to_device(b.labels, d);
  return b;
}

EvalResult evaluate_split(nn::SequenceClassifier& model, const Dataset& data, int64_t batch_size,
                          int64_t max_batches, bool split) {
  HKT_CHECK(batch_size >= 1, "evaluate: batch_size must be >= 1, got ", batch_size);
  const bool was_training = model.is_training();
  const std::vector<Tensor> params = model.parameters();
  const Device device = params.empty() ? Device::cpu() : params.front().device();  // the batches follow the model
  model.eval();
  NoGradGuard no_grad;
  EvalResult r;
  r.classes = data.classes;
  r.confusion.assign(static_cast<size_t>(data.classes * data.classes), 0);
  double loss_sum = 0.0;
  int64_t correct = 0;
  // Which examples: all, or a fixed seeded sample spread over the whole set (a set
  // stored by class, as IMDB's, would be judged on one class by its first batches).
  std::vector<int64_t> order;
  const int64_t n = data.size();
  if (max_batches > 0 && max_batches < (n + batch_size - 1) / batch_size) {
    order = seeded_permutation(n, kEvalSampleSeed);
    order.resize(static_cast<size_t>(max_batches * batch_size));
    std::sort(order.begin(), order.end());
  } else {
    order.resize(static_cast<size_t>(n));
    std::iota(order.begin(), order.end(), int64_t{0});
  }
  const auto m = static_cast<int64_t>(order.size());
  // Split: rank r evaluates batches [nb r / W, nb (r + 1) / W), the same batches one process would.
  const World& w = world();
  const int ranks = split ? w.size : 1, rank = split ? w.rank : 0;
  const int64_t nb = (m + batch_size - 1) / batch_size;
  const int64_t first = std::min(m, nb * rank / ranks * batch_size), last = std::min(m, nb * (rank + 1) / ranks * batch_size);
  Progress progress("scoring " + data.name, last - first);
  for (int64_t lo = first; lo < last; lo += batch_size) {
    const int64_t hi = std::min(lo + batch_size, m);
    const std::vector<int64_t> idx(order.begin() + lo, order.begin() + hi);
    const Batch hb = data.batch(idx);
    const Batch b = on_device(hb, device);
    const Tensor logits = model.forward(b.inputs, b.valid);
    HKT_CHECK(logits.size(1) == data.classes, "evaluate: the model has ", logits.size(1), " classes but ",
              data.name, " has ", data.classes);
    loss_sum += cross_entropy(logits, b.labels, -100, Reduction::Sum).item_double();
    correct += count_correct(logits, hb.labels.to_vector<int64_t>(), &r.confusion, &r.predicted);
    r.examples += hi - lo;
    progress.set(r.examples);
  }
  model.train(was_training);
  if (ranks > 1) {
    // The sums over the ranks; each example's prediction from the rank that evaluated it.
    const size_t cc = r.confusion.size();
    std::vector<double> v(3 + cc + static_cast<size_t>(m), 0.0);
    v[0] = loss_sum, v[1] = static_cast<double>(correct), v[2] = static_cast<double>(r.examples);
    for (size_t i = 0; i < cc; ++i) v[3 + i] = static_cast<double>(r.confusion[i]);
    for (size_t i = 0; i < r.predicted.size(); ++i) v[3 + cc + static_cast<size_t>(first) + i] = static_cast<double>(r.predicted[i]);
    allreduce_sum(v.data(), static_cast<int64_t>(v.size()));
    loss_sum = v[0], correct = static_cast<int64_t>(v[1]), r.examples = static_cast<int64_t>(v[2]);
    for (size_t i = 0; i < cc; ++i) r.confusion[i] = static_cast<int64_t>(v[3 + i]);
    r.predicted.resize(static_cast<size_t>(m));
    for (size_t i = 0; i < static_cast<size_t>(m); ++i) r.predicted[i] = static_cast<int64_t>(v[3 + cc + i]);
  }
  HKT_CHECK(r.examples > 0, "evaluate: ", data.name, " has no examples");
  r.loss = loss_sum / static_cast<double>(r.examples);
  r.accuracy = static_cast<double>(correct) / static_cast<double>(r.examples);
  r.indices = std::move(order);
  return r;
}

std::string predictions_csv(const EvalResult& r, const Dataset& d) {
  std::string out = "index,label,predicted\n";
  out.reserve(out.size() + r.indices.size() * 12);
  for (size_t i = 0; i < r.indices.size(); ++i) {
    const int64_t k = r.indices[i];
    out += std::to_string(k) + ',' + std::to_string(d.labels[static_cast<size_t>(k)]) + ',' +
           std::to_string(r.predicted[i]) + '\n';
  }
  return out;
}

// Validation decides (the best model); the test set is scored here only when asked for
// (eval_test_every: its curve, "test_acc" in the event), else once at the end (finish()).
void Run::evaluate_now(Console& con, bool with_test) {
  // A large evaluation takes a while: on a terminal the bar says what runs (replaced by the result).
  if (con.tty())
    con.bar(str_cat("eval  step ", step, "/", total, ": scoring ",
                    cfg.eval_batches > 0 ? std::min(data.val.size(), cfg.eval_batches * cfg.batch_size) : data.val.size(),
                    " validation examples", with_test ? " and the test set" : "", " ..."),
            true);
  const EvalResult v = evaluate_split(*model, data.val, cfg.batch_size, cfg.eval_batches, true);
  EvalResult t;
  if (with_test) t = evaluate_split(*model, data.test, cfg.batch_size, cfg.eval_batches, true);
  final_val = v.accuracy;
  const bool better = v.accuracy > best_val;
  if (better) {
    best_val = v.accuracy;
    best_step = step;
    if (!dir.empty() && writer())
      nn::save_model((dir / "best.safetensors").string(), *model,
                     {{"hkt.step", std::to_string(step)}, {"hkt.val_acc", exact(v.accuracy)},
                      {"hkt.model_config", mcfg.to_json()}});
  }
  // epoch: training epochs completed, fractional (for the curves of hkt-plot).
  json ev{{"event", "eval"}, {"step", step}, {"epoch", static_cast<double>(step) / per_epoch},
          {"val_loss", v.loss}, {"val_acc", v.accuracy}};
  if (with_test) ev.update(json{{"test_loss", t.loss}, {"test_acc", t.accuracy}, {"test_curve", true}});
  ev.update(json{{"best_step", best_step}, {"best_val_acc", best_val}});
  metric(ev);
  con.line("eval  step " + std::to_string(step) + "/" + std::to_string(total) + "  val loss " + fmt(v.loss) +
           " acc " + fmt(v.accuracy) +
           (with_test ? "  test loss " + fmt(t.loss) + " acc " + fmt(t.accuracy) + " (curve)" : std::string()) +
           (better ? "  (best)" : ""));
}

}  // namespace detail
}  // namespace hkt::tasks
