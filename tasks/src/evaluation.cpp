// Evaluation (train.hpp, evaluation.hpp): evaluate() on a split, split across the
// ranks of a data-parallel job, and the run's evaluations (Evaluator).
#include <algorithm>
#include <numeric>

#include "hkt/core/grad_mode.hpp"
#include "hkt/core/random.hpp"
#include "hkt/models/checkpoint.hpp"
#include "hkt/ops/elementwise.hpp"
#include "hkt/ops/factory.hpp"
#include "hkt/ops/nn.hpp"
#include "hkt/tasks/progress.hpp"
#include "comm.hpp"
#include "evaluation.hpp"
#include "train_step.hpp"

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
// (eval_test_every: its curve, "test_acc" in the event), else once at the end (test_best()).
void Evaluator::now(Console& con, bool with_test) {
  const int64_t step = st_.step;
  // A large evaluation takes a while: on a terminal the bar says what runs (replaced by the result).
  if (con.tty())
    con.bar(str_cat("eval  step ", step, "/", st_.total, ": scoring ",
                    cfg_.eval_batches > 0 ? std::min(data_.val.size(), cfg_.eval_batches * cfg_.batch_size)
                                          : data_.val.size(),
                    " validation examples", with_test ? " and the test set" : "", " ..."),
            true);
  const EvalResult v = evaluate_split(*st_.model, data_.val, cfg_.batch_size, cfg_.eval_batches, true);
  EvalResult t;
  if (with_test) t = evaluate_split(*st_.model, data_.test, cfg_.batch_size, cfg_.eval_batches, true);
  st_.final_val = v.accuracy;
  const bool better = v.accuracy > st_.best_val;
  if (better) {
    st_.best_val = v.accuracy;
    st_.best_step = step;
    if (folder_.writes())
      nn::save_model((folder_.dir() / "best.safetensors").string(), *st_.model,
                     {{"hkt.step", std::to_string(step)}, {"hkt.val_acc", exact(v.accuracy)},
                      {"hkt.model_config", st_.mcfg.to_json()}});
  }
  // epoch: training epochs completed, fractional (for the curves of hkt-plot).
  json ev{{"event", "eval"}, {"step", step}, {"epoch", static_cast<double>(step) / st_.per_epoch},
          {"val_loss", v.loss}, {"val_acc", v.accuracy}};
  if (with_test) ev.update(json{{"test_loss", t.loss}, {"test_acc", t.accuracy}, {"test_curve", true}});
  ev.update(json{{"best_step", st_.best_step}, {"best_val_acc", st_.best_val}});
  folder_.metric(ev, step);
  con.line("eval  step " + std::to_string(step) + "/" + std::to_string(st_.total) + "  val loss " + fmt(v.loss) +
           " acc " + fmt(v.accuracy) +
           (with_test ? "  test loss " + fmt(t.loss) + " acc " + fmt(t.accuracy) + " (curve)" : std::string()) +
           (better ? "  (best)" : ""));
}

EvalResult Evaluator::test_best(Console& con) {
  con.line(str_cat("test: scoring the best model (step ", st_.best_step, ", by validation) on the ",
                   data_.test.size(), " test examples ..."));
  Generator gen(cfg_.seed);
  nn::SequenceClassifier best(st_.mcfg, &gen);
  best.to(device_);
  if (folder_.writes()) nn::load_model((folder_.dir() / "best.safetensors").string(), best);
  else if (folder_.none()) best.load_state_dict(st_.model->state_dict());  // no run folder: the final model stands in
  if (!folder_.none()) broadcast_tensors(best.parameters());  // rank 0 read the file
  const EvalResult t = evaluate_split(best, data_.test, cfg_.batch_size, 0, true);
  folder_.write(kTestPredictionsFile, predictions_csv(t, data_.test));
  folder_.metric(json{{"event", "test"}, {"step", st_.best_step}, {"test_loss", t.loss}, {"test_acc", t.accuracy}},
                 st_.step);
  return t;
}

}  // namespace detail
}  // namespace hkt::tasks
