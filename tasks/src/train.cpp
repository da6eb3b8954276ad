// The run (train_run.hpp): setup, the segment of training go() runs with its
// parts, and the end of the run; train() and resume().
#include "hkt/tasks/train.hpp"

#include <algorithm>
#include <thread>

#include "hkt/core/random.hpp"
#include "hkt/models/attention_kinds.hpp"
#include "hkt/ops/threads.hpp"
#include "hkt/tasks/distributed.hpp"
#include "hkt/tasks/progress.hpp"
#include "train_loop.hpp"
#include "train_run.hpp"

namespace hkt::tasks {
namespace detail {
namespace {

namespace fs = std::filesystem;

// The learning-rate schedule of a run of `total` steps.
nn::LRSchedule lr_schedule(const TrainConfig& cfg, int64_t total) {
  if (cfg.schedule == "constant") return nn::LRSchedule::constant(cfg.warmup);
  if (cfg.schedule == "cosine") return nn::LRSchedule::warmup_cosine(cfg.warmup, total, cfg.min_lr_factor);
  return nn::LRSchedule::warmup_linear(cfg.warmup, total, cfg.min_lr_factor);
}

}  // namespace

void Run::setup() {
  const World& w = world();
  if (cfg_.threads > 0) set_num_threads(cfg_.threads);
  else if (w.size > 1 && !std::getenv("HKT_NUM_THREADS"))  // the node's cores shared by its ranks
    set_num_threads(std::max(1, static_cast<int>(std::thread::hardware_concurrency()) / w.local_size));
  try {
    prepare_device(ropt_.device);  // several ranks on GPUs: NCCL, one GPU each
  } catch (const Error& e) {
    throw InputError(str_cat("train: ", e.what()));
  }
  try {
    check_memory_before_data();
    data_ = load_task(cfg_.task, cfg_.data);
    st_.mcfg = cfg_.model_config(data_.train);
    st_.mcfg.validate();
    const Dataset& d = data_.train;
    const int64_t per_example = d.seq_len * (d.vocab > 0 ? 9 : 1 + 4 * d.features);  // ids or features + mask
    mem_estimate_ = on_host(estimate_step_memory(st_.mcfg, cfg_.batch_size, d.seq_len,
                                                 data_.train.size() + data_.val.size() + data_.test.size(),
                                                 per_example, true));
    check_memory(mem_estimate_, ropt_.max_memory, "train");
  } catch (const Error& e) {
    throw InputError(e.what());
  } catch (const fs::filesystem_error& e) {  // a data folder that cannot be listed (a link loop, ...)
    throw InputError(str_cat("the data of task ", cfg_.task, ": ", e.what()));
  }
  if (const nn::AttentionKind* kind = nn::find_attention_kind(st_.mcfg.attention.kind());
      kind && kind->cpu_only && !ropt_.device.is_cpu())
    throw InputError(str_cat("model ", cfg_.model.preset(), ": the attention kind '", st_.mcfg.attention.kind(),
                             "' has CPU kernels only; train it with --device cpu"));
  build_model(ropt_.device);
  manual_seed(cfg_.seed + 1);  // dropout
  st_.per_epoch = (data_.train.size() + cfg_.batch_size - 1) / cfg_.batch_size;
  st_.total = cfg_.steps > 0 ? cfg_.steps : cfg_.epochs * st_.per_epoch;
  if (w.size > 1) {
    // Each rank takes a share of every global batch: the smallest (an epoch's last) must have one for each.
    const int64_t last = data_.train.size() - (st_.per_epoch - 1) * cfg_.batch_size;
    if (std::min(cfg_.batch_size, last) < w.size)
      throw InputError(str_cat("train: ", w.size, " processes need at least ", w.size, " examples in every batch; ",
                               "batch_size is ", cfg_.batch_size, " and an epoch's last batch holds ", last,
                               " of the ", data_.train.size(), " training examples"));
    broadcast_tensors(st_.model->parameters());  // rank 0's initial weights, on every rank
  }
  if (cfg_.warmup > st_.total)
    throw InputError(str_cat(kCfg, "warmup (", cfg_.warmup, ") exceeds the number of steps (", st_.total, ")"));
  st_.opt->set_schedule(lr_schedule(cfg_, st_.total));
}

void Run::build_model(Device d) {
  Generator gen(cfg_.seed);
  st_.model = std::make_unique<nn::SequenceClassifier>(st_.mcfg, &gen);
  st_.model->train();
  st_.model->to(d);  // before the optimizer, whose state follows the parameters
  st_.opt = std::make_unique<nn::AdamW>(nn::decay_groups(*st_.model, cfg_.lr, cfg_.weight_decay,
                                                         cfg_.decay == "matrices" ? nn::DecayRule::Matrices
                                                                                  : nn::DecayRule::Weights));
}

// Before a data set is generated or read: the sizes the config gives (a task's
// defaults are small), the model with a one-token vocabulary.
void Run::check_memory_before_data() const {
  nn::ClassifierConfig m = cfg_.model.config();
  if (cfg_.data.seq_len > 0) m.max_len = cfg_.data.seq_len;
  if (m.vocab == 0 && m.input_features == 0) m.vocab = 1;
  const int64_t n = cfg_.data.train_size + cfg_.data.val_size + cfg_.data.test_size;
  check_memory(on_host(estimate_step_memory(m, cfg_.batch_size, m.max_len, n, m.max_len * 9, true)),
               ropt_.max_memory, "train");
}
// On a CUDA device the step's tensors live in the device's memory, not in MemAvailable's.
StepMemory Run::on_host(StepMemory m) const {
  if (!ropt_.device.is_cpu()) m.optimizer = m.activations = m.attention = 0;
  return m;
}

// The lines before the first step: the data, the model, the schedule, the ranks.
void Run::announce(Console& con, double data_s) const {
  const nn::ClassifierConfig& m = st_.mcfg;
  con.line("task " + cfg_.task + ": train " + std::to_string(data_.train.size()) + ", val " +
           std::to_string(data_.val.size()) + ", test " + std::to_string(data_.test.size()) + ", T " +
           std::to_string(data_.train.seq_len) + ", " + std::to_string(data_.train.classes) + " classes (ready in " +
           fmt(data_s, 1) + " s)");
  describe_data(con);
  const nn::HKTOptions* hkt = m.attention.find<nn::HKTOptions>();
  con.line("model " + cfg_.model.preset() + " (" + m.attention.kind() + ", dim " + std::to_string(m.dim) +
           ", heads " + std::to_string(m.heads) + ", layers " + std::to_string(m.layers) +
           (hkt ? ", levels " + std::to_string(hkt->levels) : std::string()) + "): " +
           std::to_string(st_.model->num_parameters()) + " parameters; " + std::to_string(st_.total) + " steps of " +
           std::to_string(cfg_.batch_size) + " (" + std::to_string(st_.per_epoch) + " per epoch), lr " +
           short_num(cfg_.lr) + " " + st_.opt->schedule()->str());
  if (ropt_.device.is_cpu())
    if (const std::string advice = blas_core_advice(); !advice.empty()) con.line("note: " + advice);
  const World& w = world();
  if (w.size > 1)
    con.line(str_cat("data parallel: ", w.size, " processes (", w.local_size, " on this machine), ",
                     get_num_threads(), " threads each; each takes a share of every batch of ", cfg_.batch_size,
                     "; gradients summed in buckets of ", GradReducer::kBucketBytes >> 10, " KiB",
                     ropt_.overlap ? " (non-blocking)" : " (blocking)"));
}

TrainResult Run::finish(Console& con, Evaluator& eval, const DataParallel& dp, TrainResult r) {
  r.best_step = st_.best_step;
  r.best_val_acc = st_.best_val;
  r.final_val_acc = st_.final_val;
  // The test accuracy of the best model (by validation accuracy), on the whole test set.
  if (st_.best_step >= 0) {
    const EvalResult t = eval.test_best(con);
    r.test_acc = t.accuracy;
    r.test_loss = t.loss;
  }
  r.wall_s = clock_.wall();
  r.s_per_step = st_.step > 0 ? clock_.train_s() / static_cast<double>(st_.step) : 0.0;
  write_summary(r, dp);
  con.line("done: " + std::to_string(st_.step) + " steps, best val acc " + fmt(st_.best_val) + " at step " +
           std::to_string(st_.best_step) + ", test acc " + fmt(r.test_acc) + " (best model), " + fmt(r.wall_s, 1) +
           " s, " + fmt(r.s_per_step * 1000, 1) + " ms/step" +
           (folder_.none() ? "" : ", run folder " + folder_.dir().string()));
  return r;
}

TrainResult Run::go(bool resuming) {
  if (world().rank != 0) ropt_.quiet = true;  // rank 0 speaks for the job
  Console con(ropt_);
  // The library's long loops (generating ListOps, an evaluation) redraw the bar on a terminal;
  // the next line replaces it.
  const ProgressSink progress([&con](const std::string& s, bool done) { con.bar(s, done); });
  const StopSignals signals;
  if (!resuming && folder_.writes()) folder_.refuse_earlier_run();  // before the data is loaded: at once
  if (resuming && folder_.writes()) folder_.open_to_resume();
  Checkpoints ck(cfg_, st_, clock_, folder_);
  if (TrainResult done; resuming && !folder_.none() && finished_already(con, ck, done)) return done;
  // Generating or reading a large data set takes a while: say so before, and how long after.
  con.line("task " + cfg_.task + ": preparing the data and the model ...");
  const auto data_start = Clock::now();
  setup();
  const double data_s = std::chrono::duration<double>(Clock::now() - data_start).count();
  if (!resuming && folder_.writes()) folder_.start(cfg_);
  // The other ranks read the checkpoint once rank 0 holds the folder.
  if (world().size > 1) barrier();
  if (resuming && !folder_.none()) ck.restore(con);
  if (lengthened_ && folder_.writes()) {
    folder_.lengthen(cfg_);
    con.line(str_cat("resume: training to step ", st_.total, " (", st_.opt->schedule()->str(),
                     ", the schedule of a run of ", st_.total, " steps)"));
  }
  announce(con, data_s);
  Evaluator eval(cfg_, data_, st_, folder_, ropt_.device);
  TrainLoop loop(cfg_, ropt_, data_.train, st_, clock_, folder_);
  clock_.seg_start = Clock::now();
  TrainResult r = loop.run(con, eval, ck);
  if (!r.completed) {
    r.wall_s = clock_.wall();
    r.best_step = st_.best_step;
    r.best_val_acc = st_.best_val;
    return r;
  }
  return finish(con, eval, loop.data_parallel(), r);
}

}  // namespace detail

using namespace detail;

TrainResult train(const TrainConfig& cfg, const RunOptions& opt) {
  try {
    cfg.validate();
  } catch (const Error& e) {
    throw InputError(e.what());
  }
  detail::Run run(cfg, opt, cfg.run_dir, false);
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
  detail::Run run(cfg, opt, dir, longer);
  return run.go(true);
}

}  // namespace hkt::tasks
