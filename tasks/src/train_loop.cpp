// The training loop (train_loop.hpp): data order, one train_step() per batch
// (train_step.cpp), when to log, evaluate and checkpoint, and how a run stops.
#include "train_loop.hpp"

#include <algorithm>
#include <cstring>
#include <limits>
#include <numeric>

#include "hkt/core/random.hpp"
#include "hkt/ops/elementwise.hpp"
#include "hkt/ops/factory.hpp"
#include "hkt/tasks/distributed.hpp"

namespace hkt::tasks::detail {
namespace {

// The permutation of [0, n) for `epoch`: Fisher-Yates with Philox draws keyed by the seed.
std::vector<int64_t> epoch_order(int64_t n, uint64_t seed, int64_t epoch) {
  std::vector<int64_t> p(static_cast<size_t>(n));
  std::iota(p.begin(), p.end(), 0);
  const uint64_t key = seed ^ 0xD1B54A32D192ED03ull;
  for (int64_t i = n - 1; i > 0; --i) {
    const auto r = philox4x32(static_cast<uint64_t>(i), static_cast<uint64_t>(epoch), key);
    const uint64_t u = (static_cast<uint64_t>(r[0]) << 32) | r[1];
    std::swap(p[i], p[static_cast<int64_t>(u % static_cast<uint64_t>(i + 1))]);
  }
  return p;
}

}  // namespace

TrainLoop::TrainLoop(const TrainConfig& cfg, const RunOptions& ropt, const Dataset& train, TrainState& st,
                     RunClock& clock, RunFolder& folder)
    : cfg_(cfg), ropt_(ropt), train_(train), st_(st), clock_(clock), folder_(folder) {
  dp_.reducer = GradReducer(ropt.overlap);
}

TrainResult TrainLoop::run(Console& con, Evaluator& eval, Checkpoints& ck) {
  TrainResult r;
  r.params = st_.model->num_parameters();
  const World& w = world();
  const std::vector<Tensor> params = st_.model->parameters();
  const double clip = cfg_.clip_norm > 0 ? cfg_.clip_norm : std::numeric_limits<double>::max();
  const StepContext ctx{*st_.model, *st_.opt, params, clip, w.size > 1 ? &dp_ : nullptr,
                        [this](const std::string& what, double v) { non_finite(what, v); }, &dp_.reducer};
  int64_t seg_steps = 0;
  Window win;
  int64_t& step = st_.step;
  while (step < st_.total) {
    if (stop_signal() != 0) stop(con, ck);
    if (ropt_.stop_after > 0 && step >= ropt_.stop_after) {
      con.end_bar();
      r.steps = step;
      return r;
    }
    const auto t0 = Clock::now();
    int64_t n = 0;
    const Batch hb = next_batch(n);
    const StepStats st = train_step(ctx, on_device(hb, ropt_.device), hb.labels.to_vector<int64_t>());
    ++step;
    if (ropt_.after_step) ropt_.after_step(step, *st_.model);
    if (step % kChecksumEvery == 0 || step == st_.total) check_ranks_agree(st_, folder_, "the periodic check");
    const double dt = std::chrono::duration<double>(Clock::now() - t0).count();
    clock_.seg_train += dt;
    ++seg_steps;
    if (seg_steps == 1) r.first_loss = st.loss;
    r.last_loss = st.loss;
    win.add(st, n, dt);
    report(con, win, st.lr, seg_steps);
    evaluate_and_save(con, eval, ck);
  }
  con.end_bar();
  r.completed = true;
  r.steps = step;
  return r;
}

// This rank's share of the global batch of the step under way (several ranks: rank r takes
// examples [lo + n r / W, lo + n (r + 1) / W) of it); n: the global batch's size.
Batch TrainLoop::next_batch(int64_t& n) {
  const World& w = world();
  const int64_t epoch = st_.step / st_.per_epoch, pos = st_.step % st_.per_epoch;
  if (epoch != order_epoch_) {
    order_ = epoch_order(train_.size(), cfg_.seed, epoch);
    order_epoch_ = epoch;
  }
  const int64_t lo = pos * cfg_.batch_size, hi = std::min(lo + cfg_.batch_size, train_.size());
  n = hi - lo;
  const int64_t mine_lo = lo + n * w.rank / w.size, mine_hi = lo + n * (w.rank + 1) / w.size;
  dp_.lo = static_cast<uint64_t>(mine_lo - lo), dp_.count = static_cast<uint64_t>(mine_hi - mine_lo);
  dp_.n = static_cast<uint64_t>(n);
  return train_.batch(std::vector<int64_t>(order_.begin() + mine_lo, order_.begin() + mine_hi));
}

// The evaluation and the checkpoint due after the step just taken (both at the last step).
void TrainLoop::evaluate_and_save(Console& con, Evaluator& eval, Checkpoints& ck) const {
  const int64_t step = st_.step;
  const bool eval_test = cfg_.eval_test_every > 0 && step % cfg_.eval_test_every == 0;
  if ((cfg_.eval_every > 0 && step % cfg_.eval_every == 0) || step == st_.total || eval_test)
    eval.now(con, eval_test);
  if ((cfg_.checkpoint_every > 0 && step % cfg_.checkpoint_every == 0) || step == st_.total) ck.save();
}

// SIGINT / SIGTERM: a checkpoint of the step reached (one process: with several, the
// ranks may stop at different steps, and the last periodic checkpoint stays), then Stopped.
// A run that replaces a parked run (--overwrite) and has not reached its first checkpoint
// writes none: the parked run stays the folder's last good state, and --resume takes it over
// as the run that replaced it (a checkpoint here would hide which run the parked one is).
void TrainLoop::stop(Console& con, Checkpoints& ck) {
  con.end_bar();
  const int sig = stop_signal();
  std::string saved;
  if (ck.save_at_stop()) saved = str_cat("; the checkpoint of step ", st_.step, " was written");
  throw Stopped(sig, str_cat("train: stopped by signal ", sig, " (", strsignal(sig), ") after step ", st_.step, saved,
                             ". ", folder_.kept_checkpoint()));
}

// The progress bar after every step (terminals), and every log_every steps the
// window's means in metrics.jsonl and, off a terminal, as a console line.
void TrainLoop::report(Console& con, Window& win, double lr, int64_t seg_steps) {
  const int64_t step = st_.step, total = st_.total, per_epoch = st_.per_epoch;
  const double eps = static_cast<double>(win.examples) / std::max(1e-9, win.time);
  const double eta = clock_.seg_train / static_cast<double>(seg_steps) * static_cast<double>(total - step);
  if (con.tty()) con.bar(progress_bar(step, total, per_epoch, win, eps, eta), step == total);
  if (cfg_.log_every > 0 && (step % cfg_.log_every == 0 || step == total)) {
    folder_.metric(json{{"event", "train"},
                        {"step", step},
                        {"epoch", (step - 1) / per_epoch},
                        {"loss", win.mean_loss()},
                        {"acc", win.accuracy()},
                        {"lr", lr},
                        {"grad_norm", win.grad_norm / win.steps},
                        {"examples_per_s", eps},
                        {"elapsed_s", clock_.wall()}},
                   step);
    if (!con.tty()) con.line(log_line(step, total, per_epoch, win, lr, eps, eta));
    win = Window();
  }
}

// Stops at a non-finite loss or gradient norm, naming the first non-finite
// parameter (weights that were not finite before the step) or, when the
// weights are finite, the first non-finite gradient.
void TrainLoop::non_finite(const std::string& what, double v) {
  const nn::SequenceClassifier& model = *st_.model;
  const std::string bad_param = nn::first_non_finite(model.named_parameters());
  std::string cause;
  if (!bad_param.empty()) {
    cause = "the weights were not finite before this step: parameter " + bad_param + ".";
  } else {
    nn::NamedTensors grads;
    for (const auto& [name, p] : model.named_parameters())
      if (p.grad().defined()) grads.emplace_back(name, p.grad());
    const std::string bad_grad = nn::first_non_finite(grads);
    // The largest weight, which tells an overflow of huge weights from one of the inputs.
    double largest = 0;
    std::string where;
    for (const auto& [name, p] : model.named_parameters()) {
      const std::vector<double> w = to_dtype(to_device(p.detach(), Device::cpu()), DType::Float64).to_vector<double>();
      for (double x : w)
        if (std::abs(x) > largest) largest = std::abs(x), where = name;
    }
    const std::string size = str_cat("the weights are finite (the largest, in '", where, "', is ",
                                     short_num(largest), ")");
    cause = bad_grad.empty() ? size + "; the loss overflowed in the forward pass."
                             : size + "; the first non-finite gradient is that of " + bad_grad +
                                   " (the step's gradients overflowed: a lower --lr or --clip-norm may help).";
  }
  const int64_t step = st_.step;
  const std::string msg =
      str_cat("train: step ", step + 1, ": the ", what, " is ", v, " (not finite); stopping: ", cause, " ",
              folder_.kept_checkpoint());
  try {
    folder_.metric(json{{"event", "error"}, {"step", step + 1}, {"message", msg}}, step);
  } catch (const Error&) {  // the error below says more
  }
  throw Error(msg);
}

}  // namespace hkt::tasks::detail
