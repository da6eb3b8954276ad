// The training loop (train.hpp, train_run.hpp): setup, data order, one
// train_step() per batch (train_step.cpp), when to log, evaluate and
// checkpoint, and the end of the run; train() and resume().
#include "hkt/tasks/train.hpp"

#include <algorithm>
#include <cstring>
#include <limits>
#include <numeric>
#include <thread>

#include "hkt/core/random.hpp"
#include "hkt/models/attention_kinds.hpp"
#include "hkt/models/checkpoint.hpp"
#include "hkt/ops/elementwise.hpp"
#include "hkt/ops/factory.hpp"
#include "hkt/ops/threads.hpp"
#include "hkt/tasks/progress.hpp"
#include "train_run.hpp"

namespace hkt::tasks {
namespace detail {
namespace {

namespace fs = std::filesystem;

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

// The learning-rate schedule of a run of `total` steps.
nn::LRSchedule lr_schedule(const TrainConfig& cfg, int64_t total) {
  if (cfg.schedule == "constant") return nn::LRSchedule::constant(cfg.warmup);
  if (cfg.schedule == "cosine") return nn::LRSchedule::warmup_cosine(cfg.warmup, total, cfg.min_lr_factor);
  return nn::LRSchedule::warmup_linear(cfg.warmup, total, cfg.min_lr_factor);
}

}  // namespace

void Run::setup() {
  if (cfg.threads > 0) set_num_threads(cfg.threads);
  else if (W.size > 1 && !std::getenv("HKT_NUM_THREADS"))  // the node's cores shared by its ranks
    set_num_threads(std::max(1, static_cast<int>(std::thread::hardware_concurrency()) / W.local_size));
  try {
    prepare_device(ropt.device);  // several ranks on GPUs: NCCL, one GPU each
  } catch (const Error& e) {
    throw InputError(str_cat("train: ", e.what()));
  }
  try {
    check_memory_before_data();
    data = load_task(cfg.task, cfg.data);
    mcfg = cfg.model_config(data.train);
    mcfg.validate();
    const Dataset& d = data.train;
    const int64_t per_example = d.seq_len * (d.vocab > 0 ? 9 : 1 + 4 * d.features);  // ids or features + mask
    mem_estimate = on_host(estimate_step_memory(mcfg, cfg.batch_size, d.seq_len,
                                                data.train.size() + data.val.size() + data.test.size(), per_example,
                                                true));
    check_memory(mem_estimate, ropt.max_memory, "train");
  } catch (const Error& e) {
    throw InputError(e.what());
  } catch (const fs::filesystem_error& e) {  // a data folder that cannot be listed (a link loop, ...)
    throw InputError(str_cat("the data of task ", cfg.task, ": ", e.what()));
  }
  if (const nn::AttentionKind* kind = nn::find_attention_kind(mcfg.attention);
      kind && kind->cpu_only && !ropt.device.is_cpu())
    throw InputError(str_cat("model ", cfg.model, ": the attention kind '", mcfg.attention,
                             "' has CPU kernels only; train it with --device cpu"));
  build_model(ropt.device);
  manual_seed(cfg.seed + 1);  // dropout
  per_epoch = (data.train.size() + cfg.batch_size - 1) / cfg.batch_size;
  total = cfg.steps > 0 ? cfg.steps : cfg.epochs * per_epoch;
  if (W.size > 1) {
    // Each rank takes a share of every global batch: the smallest (an epoch's last) must have one for each.
    const int64_t last = data.train.size() - (per_epoch - 1) * cfg.batch_size;
    if (std::min(cfg.batch_size, last) < W.size)
      throw InputError(str_cat("train: ", W.size, " processes need at least ", W.size, " examples in every batch; ",
                               "batch_size is ", cfg.batch_size, " and an epoch's last batch holds ", last,
                               " of the ", data.train.size(), " training examples"));
    broadcast_tensors(model->parameters());  // rank 0's initial weights, on every rank
  }
  if (cfg.warmup > total)
    throw InputError(str_cat(kCfg, "warmup (", cfg.warmup, ") exceeds the number of steps (", total, ")"));
  opt->set_schedule(lr_schedule(cfg, total));
}

void Run::build_model(Device d) {
  Generator gen(cfg.seed);
  model = std::make_unique<nn::SequenceClassifier>(mcfg, &gen);
  model->train();
  model->to(d);  // before the optimizer, whose state follows the parameters
  opt = std::make_unique<nn::AdamW>(nn::decay_groups(
      *model, cfg.lr, cfg.weight_decay, cfg.decay == "matrices" ? nn::DecayRule::Matrices : nn::DecayRule::Weights));
}

// Before a data set is generated or read: the sizes the config gives (a task's
// defaults are small), the model with a one-token vocabulary.
void Run::check_memory_before_data() const {
  nn::ClassifierConfig m = cfg.model_config_unfilled();
  if (cfg.data.seq_len > 0) m.max_len = cfg.data.seq_len;
  if (m.vocab == 0 && m.input_features == 0) m.vocab = 1;
  const int64_t n = cfg.data.train_size + cfg.data.val_size + cfg.data.test_size;
  check_memory(on_host(estimate_step_memory(m, cfg.batch_size, m.max_len, n, m.max_len * 9, true)),
               ropt.max_memory, "train");
}
// On a CUDA device the step's tensors live in the device's memory, not in MemAvailable's.
StepMemory Run::on_host(StepMemory m) const {
  if (!ropt.device.is_cpu()) m.optimizer = m.activations = m.attention = 0;
  return m;
}

TrainResult Run::loop(Console& con) {
  TrainResult r;
  r.params = model->num_parameters();
  const std::vector<Tensor> params = model->parameters();
  const double clip = cfg.clip_norm > 0 ? cfg.clip_norm : std::numeric_limits<double>::max();
  const StepContext ctx{*model, *opt, params, clip, W.size > 1 ? &dp : nullptr,
                        [this](const std::string& what, double v) { non_finite(what, v); }, &dp.reducer};
  std::vector<int64_t> order;
  int64_t order_epoch = -1, seg_steps = 0;
  Window win;
  while (step < total) {
    if (stop_signal() != 0) stop(con);
    if (ropt.stop_after > 0 && step >= ropt.stop_after) {
      con.end_bar();
      r.steps = step;
      return r;
    }
    const auto t0 = Clock::now();
    const int64_t epoch = step / per_epoch, pos = step % per_epoch;
    if (epoch != order_epoch) {
      order = epoch_order(data.train.size(), cfg.seed, epoch);
      order_epoch = epoch;
    }
    const int64_t lo = pos * cfg.batch_size, hi = std::min(lo + cfg.batch_size, data.train.size());
    // With several ranks, rank r takes examples [lo + n r / W, lo + n (r + 1) / W) of the global batch.
    const int64_t n = hi - lo, mine_lo = lo + n * W.rank / W.size, mine_hi = lo + n * (W.rank + 1) / W.size;
    dp.lo = static_cast<uint64_t>(mine_lo - lo), dp.count = static_cast<uint64_t>(mine_hi - mine_lo);
    dp.n = static_cast<uint64_t>(n);
    const Batch hb = data.train.batch(std::vector<int64_t>(order.begin() + mine_lo, order.begin() + mine_hi));
    const StepStats st = train_step(ctx, on_device(hb, ropt.device), hb.labels.to_vector<int64_t>());
    ++step;
    if (ropt.after_step) ropt.after_step(step, *model);
    if (step % kChecksumEvery == 0 || step == total) check_ranks_agree("the periodic check");
    const double dt = std::chrono::duration<double>(Clock::now() - t0).count();
    seg_train += dt;
    ++seg_steps;
    if (seg_steps == 1) r.first_loss = st.loss;
    r.last_loss = st.loss;
    win.add(st, n, dt);
    report(con, win, st.lr, seg_steps);
    const bool eval_test = cfg.eval_test_every > 0 && step % cfg.eval_test_every == 0;
    if ((cfg.eval_every > 0 && step % cfg.eval_every == 0) || step == total || eval_test) evaluate_now(con, eval_test);
    if ((cfg.checkpoint_every > 0 && step % cfg.checkpoint_every == 0) || step == total) save_folder();
  }
  con.end_bar();
  r.completed = true;
  r.steps = step;
  return r;
}

// SIGINT / SIGTERM: a checkpoint of the step reached (one process: with several, the
// ranks may stop at different steps, and the last periodic checkpoint stays), then Stopped.
// A run that replaces a parked run (--overwrite) and has not reached its first checkpoint
// writes none: the parked run stays the folder's last good state, and --resume takes it over
// as the run that replaced it (a checkpoint here would hide which run the parked one is).
void Run::stop(Console& con) {
  con.end_bar();
  const int sig = stop_signal();
  std::string saved;
  if (W.size == 1 && !dir.empty() && saved_step != step && parked.empty()) {
    save_folder(false);
    saved = str_cat("; the checkpoint of step ", step, " was written");
  }
  throw Stopped(sig, str_cat("train: stopped by signal ", sig, " (", strsignal(sig), ") after step ", step, saved,
                             ". ", kept_checkpoint()));
}

// The progress bar after every step (terminals), and every log_every steps the
// window's means in metrics.jsonl and, off a terminal, as a console line.
void Run::report(Console& con, Window& win, double lr, int64_t seg_steps) {
  const double eps = static_cast<double>(win.examples) / std::max(1e-9, win.time);
  const double eta = seg_train / static_cast<double>(seg_steps) * static_cast<double>(total - step);
  if (con.tty()) con.bar(progress_bar(step, total, per_epoch, win, eps, eta), step == total);
  if (cfg.log_every > 0 && (step % cfg.log_every == 0 || step == total)) {
    metric(json{{"event", "train"},
                {"step", step},
                {"epoch", (step - 1) / per_epoch},
                {"loss", win.mean_loss()},
                {"acc", win.accuracy()},
                {"lr", lr},
                {"grad_norm", win.grad_norm / win.steps},
                {"examples_per_s", eps},
                {"elapsed_s", wall()}});
    if (!con.tty()) con.line(log_line(step, total, per_epoch, win, lr, eps, eta));
    win = Window();
  }
}

// Stops at a non-finite loss or gradient norm, naming the first non-finite
// parameter (weights that were not finite before the step) or, when the
// weights are finite, the first non-finite gradient.
void Run::non_finite(const std::string& what, double v) {
  const std::string bad_param = nn::first_non_finite(model->named_parameters());
  std::string cause;
  if (!bad_param.empty()) {
    cause = "the weights were not finite before this step: parameter " + bad_param + ".";
  } else {
    nn::NamedTensors grads;
    for (const auto& [name, p] : model->named_parameters())
      if (p.grad().defined()) grads.emplace_back(name, p.grad());
    const std::string bad_grad = nn::first_non_finite(grads);
    // The largest weight, which tells an overflow of huge weights from one of the inputs.
    double largest = 0;
    std::string where;
    for (const auto& [name, p] : model->named_parameters()) {
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
  const std::string msg =
      str_cat("train: step ", step + 1, ": the ", what, " is ", v, " (not finite); stopping: ", cause, " ",
              kept_checkpoint());
  try {
    metric(json{{"event", "error"}, {"step", step + 1}, {"message", msg}});
  } catch (const Error&) {  // the error below says more
  }
  throw Error(msg);
}

void Run::check_ranks_agree(const char* when) {
  if (W.size == 1) return;
  std::vector<Tensor> ts = model->parameters();
  const std::vector<uint64_t> sums = allgather_u64(checksum(ts));
  for (int r = 1; r < W.size; ++r)
    if (sums[static_cast<size_t>(r)] != sums[0])
      throw Error(str_cat("train: ", when, " (step ", step, "): the weights of rank ", r, " differ from rank 0's "
                          "(checksums ", sums[static_cast<size_t>(r)], " and ", sums[0],
                          "): the ranks diverged; stopping. ", kept_checkpoint()));
}

TrainResult Run::finish(Console& con, TrainResult r) {
  r.best_step = best_step;
  r.best_val_acc = best_val;
  r.final_val_acc = final_val;
  // The test accuracy of the best model (by validation accuracy), on the whole test set.
  if (best_step >= 0) {
    con.line(str_cat("test: scoring the best model (step ", best_step, ", by validation) on the ", data.test.size(),
                     " test examples ..."));
    Generator gen(cfg.seed);
    nn::SequenceClassifier best(mcfg, &gen);
    best.to(ropt.device);
    if (!dir.empty() && writer()) nn::load_model((dir / "best.safetensors").string(), best);
    else if (dir.empty()) best.load_state_dict(model->state_dict());  // no run folder: the final model stands in
    if (!dir.empty()) broadcast_tensors(best.parameters());  // rank 0 read the file
    const EvalResult t = evaluate_split(best, data.test, cfg.batch_size, 0, true);
    r.test_acc = t.accuracy;
    r.test_loss = t.loss;
    if (!dir.empty() && writer()) write_file_atomic(dir / kTestPredictionsFile, predictions_csv(t, data.test));
    metric(json{{"event", "test"}, {"step", best_step}, {"test_loss", t.loss}, {"test_acc", t.accuracy}});
  }
  r.wall_s = wall();
  const double train_s = prior_train + seg_train;
  r.s_per_step = step > 0 ? train_s / static_cast<double>(step) : 0.0;
  write_summary(r, train_s);
  con.line("done: " + std::to_string(step) + " steps, best val acc " + fmt(best_val) + " at step " +
           std::to_string(best_step) + ", test acc " + fmt(r.test_acc) + " (best model), " + fmt(r.wall_s, 1) +
           " s, " + fmt(r.s_per_step * 1000, 1) + " ms/step" + (dir.empty() ? "" : ", run folder " + dir.string()));
  return r;
}

TrainResult Run::go(bool resuming) {
  if (!writer()) ropt.quiet = true;  // rank 0 speaks for the job
  Console con(ropt);
  // The library's long loops (generating ListOps, an evaluation) redraw the bar on a terminal;
  // the next line replaces it.
  const ProgressSink progress([&con](const std::string& s, bool done) { con.bar(s, done); });
  const StopSignals signals;
  if (!dir.empty() && !resuming && writer()) refuse_earlier_run();  // before the data is loaded: at once
  if (!dir.empty() && resuming && writer()) {
    lock_folder();
    check_entries();
    tidy_for_resume();
  }
  if (TrainResult done; resuming && !dir.empty() && finished_already(con, done)) return done;
  // Generating or reading a large data set takes a while: say so before, and how long after.
  con.line("task " + cfg.task + ": preparing the data and the model ...");
  const auto data_start = Clock::now();
  setup();
  const double data_s = std::chrono::duration<double>(Clock::now() - data_start).count();
  if (!dir.empty() && !resuming && writer()) start_folder();
  // The other ranks read the checkpoint once rank 0 holds the folder.
  if (W.size > 1) barrier();
  if (!dir.empty() && resuming) restore(con);
  if (!dir.empty() && lengthened && writer()) lengthen(con);
  const int64_t np = model->num_parameters();
  con.line("task " + cfg.task + ": train " + std::to_string(data.train.size()) + ", val " +
           std::to_string(data.val.size()) + ", test " + std::to_string(data.test.size()) + ", T " +
           std::to_string(data.train.seq_len) + ", " + std::to_string(data.train.classes) + " classes (ready in " +
           fmt(data_s, 1) + " s)");
  describe_data(con);
  con.line("model " + cfg.model + " (" + mcfg.attention + ", dim " + std::to_string(mcfg.dim) + ", heads " +
           std::to_string(mcfg.heads) + ", layers " + std::to_string(mcfg.layers) +
           (mcfg.attention == "hkt" ? ", levels " + std::to_string(mcfg.levels) : std::string()) + "): " +
           std::to_string(np) + " parameters; " + std::to_string(total) + " steps of " +
           std::to_string(cfg.batch_size) + " (" + std::to_string(per_epoch) + " per epoch), lr " + short_num(cfg.lr) +
           " " + opt->schedule()->str());
  if (W.size > 1)
    con.line(str_cat("data parallel: ", W.size, " processes (", W.local_size, " on this machine), ",
                     get_num_threads(), " threads each; each takes a share of every batch of ", cfg.batch_size,
                     "; gradients summed in buckets of ", GradReducer::kBucketBytes >> 10, " KiB",
                     ropt.overlap ? " (non-blocking)" : " (blocking)"));
  dp.reducer = GradReducer(ropt.overlap);
  seg_start = Clock::now();
  TrainResult r = loop(con);
  r.params = np;
  if (!r.completed) {
    r.wall_s = wall();
    r.best_step = best_step;
    r.best_val_acc = best_val;
    return r;
  }
  return finish(con, r);
}

}  // namespace detail

using namespace detail;

TrainResult train(const TrainConfig& cfg, const RunOptions& opt) {
  try {
    cfg.validate();
  } catch (const Error& e) {
    throw InputError(e.what());
  }
  detail::Run run;
  run.cfg = cfg;
  run.ropt = opt;
  run.dir = cfg.run_dir;
  return run.go(false);
}

TrainResult resume(const std::string& run_dir, const RunOptions& opt) {
  if (run_dir.empty()) throw InputError("resume: the run folder is empty (an unset variable?)");
  const fs::path dir(run_dir);
  check_run_folder(dir, "resume");
  std::error_code ec;
  if (!fs::is_directory(dir, ec)) throw InputError(str_cat("resume: '", run_dir, "' is not a folder (no config.json to resume from)"));
  if (!fs::exists(dir / "config.json", ec))
    throw InputError(str_cat("resume: '", run_dir,
                             "' has no config.json (not a run folder, or killed before it was written)"));
  TrainConfig cfg;
  try {
    cfg = TrainConfig::from_json(read_text_file(dir / "config.json"));
  } catch (const Error& e) {
    throw InputError(str_cat((dir / "config.json").string(), ": ", e.what()));
  }
  cfg.run_dir = run_dir;  // the folder may have moved
  const bool longer = opt.steps > 0 || opt.epochs > 0;
  if (longer) {  // a longer run: its schedule is that of the new length (setup())
    cfg.steps = opt.steps;
    if (opt.steps == 0) cfg.epochs = opt.epochs;
    try {
      cfg.validate();
    } catch (const Error& e) {
      throw InputError(str_cat("resume: --steps / --epochs: ", e.what()));
    }
  }
  detail::Run run;
  run.lengthened = longer;
  run.cfg = cfg;
  run.ropt = opt;
  run.dir = dir;
  return run.go(true);
}

}  // namespace hkt::tasks
