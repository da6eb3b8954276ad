// The training loop (see train.hpp): config JSON, data order, the loop with
// evaluation and checkpoints, resume, and the run folder's files.
#include "hkt/tasks/train.hpp"

#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <limits>
#include <memory>
#include <nlohmann/json.hpp>
#include <numeric>
#include <sstream>
#include <thread>

#include "hkt/core/grad_hook.hpp"
#include "hkt/core/grad_mode.hpp"
#include "hkt/core/json_read.hpp"
#include "hkt/core/random.hpp"
#include "hkt/models/checkpoint.hpp"
#include "hkt/models/optim.hpp"
#include "hkt/models/schedule.hpp"
#include "hkt/kernels/cuda.hpp"
#include "hkt/ops/elementwise.hpp"
#include "hkt/ops/factory.hpp"
#include "hkt/ops/nn.hpp"
#include "hkt/ops/threads.hpp"
#include "hkt/tasks/attention_kernels.hpp"
#include "hkt/tasks/files.hpp"
#include "hkt/tasks/memory.hpp"
#include "comm.hpp"
#include "hkt/tasks/distributed.hpp"
#include "run_folder.hpp"

namespace hkt::tasks {
namespace {

namespace fs = std::filesystem;
using json = nlohmann::ordered_json;
using namespace detail;  // run_folder.hpp
using Clock = std::chrono::steady_clock;

// --- config JSON ------------------------------------------------------------

constexpr const char* kCfg = "TrainConfig: ";

template <class F>
void each_key(const json& j, const std::string& where, F&& f) {
  HKT_CHECK(j.is_object(), kCfg, where.empty() ? "the config" : "'" + where + "'", " must be a JSON object, got ",
            j.type_name());
  for (auto it = j.begin(); it != j.end(); ++it) {
    const std::string key = where.empty() ? it.key() : where + "." + it.key();
    HKT_CHECK(f(it.key(), it.value(), key), kCfg, "unknown key '", key, "'");
  }
}

void get(const json& v, const std::string& key, std::string& out) {
  HKT_CHECK(v.is_string(), kCfg, "'", key, "' must be a string, got ", excerpt(v.dump()));
  out = v.get<std::string>();
}
void get(const json& v, const std::string& key, int64_t& out) {
  HKT_CHECK(v.is_number_integer(), kCfg, "'", key, "' must be an integer, got ", excerpt(v.dump()));
  HKT_CHECK(!v.is_number_unsigned() || v.get<uint64_t>() <= uint64_t(std::numeric_limits<int64_t>::max()), kCfg,
            "'", key, "' is out of range: ", excerpt(v.dump()));
  out = v.get<int64_t>();
}
void get(const json& v, const std::string& key, int& out) {
  int64_t x = 0;
  get(v, key, x);
  HKT_CHECK(x >= std::numeric_limits<int>::min() && x <= std::numeric_limits<int>::max(), kCfg, "'", key,
            "' is out of range: ", x);
  out = static_cast<int>(x);
}
void get(const json& v, const std::string& key, uint64_t& out) {
  HKT_CHECK(v.is_number_unsigned() || (v.is_number_integer() && v.get<int64_t>() >= 0), kCfg, "'", key,
            "' must be a non-negative integer, got ", excerpt(v.dump()));
  out = v.get<uint64_t>();
}
void get(const json& v, const std::string& key, double& out) {
  HKT_CHECK(v.is_number(), kCfg, "'", key, "' must be a number, got ", excerpt(v.dump()));
  out = v.get<double>();
}

json data_json(const TaskOptions& d) {
  return json{{"data_dir", d.data_dir},   {"seq_len", d.seq_len},     {"train_size", d.train_size},
              {"val_size", d.val_size},   {"test_size", d.test_size}, {"max_depth", d.max_depth},
              {"max_args", d.max_args},   {"min_len", d.min_len},     {"max_len", d.max_len},
              {"seed", d.seed}};
}

json config_json(const TrainConfig& c) {
  json j;
  j["task"] = c.task;
  j["data"] = data_json(c.data);
  j["model"] = c.model;
  j["model_overrides"] = json::parse(c.model_overrides);
  j["batch_size"] = c.batch_size;
  j["steps"] = c.steps;
  j["epochs"] = c.epochs;
  j["lr"] = c.lr;
  j["weight_decay"] = c.weight_decay;
  j["decay"] = c.decay;
  j["warmup"] = c.warmup;
  j["schedule"] = c.schedule;
  j["min_lr_factor"] = c.min_lr_factor;
  j["clip_norm"] = c.clip_norm;
  j["log_every"] = c.log_every;
  j["eval_every"] = c.eval_every;
  j["eval_batches"] = c.eval_batches;
  j["checkpoint_every"] = c.checkpoint_every;
  j["seed"] = c.seed;
  j["threads"] = c.threads;
  j["run_dir"] = c.run_dir;
  return j;
}

json parse_json(const std::string& text, const std::string& what) { return read_json<json>(text, what); }

std::string fmt(double v, int prec = 4) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.*f", prec, v);
  return buf;
}
std::string short_num(double v) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.3g", v);
  return buf;
}
std::string exact(double v) {  // round-trips a double through text
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.17g", v);
  return buf;
}
std::string duration(double s) {
  if (!std::isfinite(s) || s < 0) return "?";
  const auto t = static_cast<int64_t>(s + 0.5);
  char buf[64];
  if (t >= 3600) std::snprintf(buf, sizeof buf, "%lldh%02lldm", static_cast<long long>(t / 3600),
                               static_cast<long long>(t / 60 % 60));
  else std::snprintf(buf, sizeof buf, "%lldm%02llds", static_cast<long long>(t / 60), static_cast<long long>(t % 60));
  return buf;
}

// --- files ------------------------------------------------------------------

// The checkpoint folder to resume from: checkpoint/, else checkpoint.old/
// (a kill between the two renames of save_folder), else none.
fs::path find_checkpoint(const fs::path& run) {
  for (const char* name : {"checkpoint", "checkpoint.old"}) {
    std::error_code ec;
    if (fs::exists(run / name / "model.safetensors", ec) && fs::exists(run / name / "optimizer.safetensors", ec))
      return run / name;
  }
  return {};
}

// --- data order -----------------------------------------------------------------

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

// Correct predictions (the first largest logit) of logits [B, C] against labels;
// with `confusion` ([C * C], row = label), each example is also counted there.
int64_t count_correct(const Tensor& logits, const std::vector<int64_t>& labels,
                      std::vector<int64_t>* confusion = nullptr, std::vector<int64_t>* predicted = nullptr) {
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

// index,label,predicted per example of an evaluation, in its order.
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

json length_json(const LengthStats& st) {
  json h = json::array();
  for (const auto& [lo, n] : st.histogram) h.push_back(json{{"from", lo}, {"count", n}});
  return json{{"examples", st.n}, {"min", st.min}, {"p5", st.p5}, {"p25", st.p25}, {"median", st.median},
              {"p75", st.p75}, {"p95", st.p95}, {"max", st.max}, {"mean", st.mean},
              {"bin_width", st.bin_width}, {"histogram", h}};
}

// --- console --------------------------------------------------------------------

class Console {
 public:
  Console(const RunOptions& opt) : quiet_(opt.quiet), os_(opt.out ? *opt.out : std::cout) {
    tty_ = !quiet_ && &os_ == &std::cout && isatty(STDOUT_FILENO);
  }
  bool tty() const { return tty_; }
  void line(const std::string& s) {
    if (quiet_) return;
    if (bar_shown_) os_ << "\r\033[K";
    os_ << s << "\n" << std::flush;
    bar_shown_ = false;
  }
  // Redraws the progress bar (terminals only), at most ten times a second.
  void bar(const std::string& s, bool force) {
    if (!tty_) return;
    const auto now = Clock::now();
    if (!force && bar_shown_ && now - last_ < std::chrono::milliseconds(100)) return;
    last_ = now;
    os_ << "\r\033[K" << s << std::flush;
    bar_shown_ = true;
  }
  void end_bar() {
    if (bar_shown_) os_ << "\n" << std::flush;
    bar_shown_ = false;
  }

 private:
  bool quiet_, tty_ = false, bar_shown_ = false;
  std::ostream& os_;
  Clock::time_point last_{};
};

// evaluate() with the batches split across the ranks of the job (split: each
// rank its contiguous share of the batches) and the sums reduced: every rank
// returns the whole result.
EvalResult evaluate_split(nn::SequenceClassifier& model, const Dataset& data, int64_t batch_size,
                          int64_t max_batches, bool split);

// --- the run --------------------------------------------------------------------

// A batch copied to the model's device.
Batch on_device(Batch b, Device d) {
  if (d.is_cpu()) return b;
  b.inputs = to_device(b.inputs, d);
  if (b.valid.defined()) b.valid = to_device(b.valid, d);
  b.labels = to_device(b.labels, d);
  return b;
}

struct Run {
  const World& W = world();  // rank 0 alone writes the run folder
  bool writer() const { return W.rank == 0; }
  TrainConfig cfg;
  RunOptions ropt;
  fs::path dir;  // empty: write nothing
  Splits data;
  nn::ClassifierConfig mcfg;
  std::unique_ptr<nn::SequenceClassifier> model;
  std::unique_ptr<nn::AdamW> opt;
  nn::LRSchedule sched;
  int64_t total = 0, per_epoch = 0;
  int64_t step = 0;  // completed steps
  int64_t best_step = -1;
  double best_val = -1.0, final_val = -1.0;
  double prior_wall = 0.0, prior_train = 0.0;  // from earlier segments
  double seg_train = 0.0;
  double comm_s = 0.0;  // this segment's time in gradient and metric all-reduces (several ranks)
  GradReducer reducer{true};
  Clock::time_point seg_start = Clock::now();

  // Appends an event; a failed append stops the run (the last checkpoint is kept).
  void metric(const json& j) {
    if (dir.empty() || !writer()) return;
    try {
      append_file(dir / "metrics.jsonl", j.dump() + "\n");
    } catch (const Error& e) {
      throw Error(str_cat("train: step ", step, ": ", e.what(), "; stopping. ", kept_checkpoint()));
    }
  }

  // What a stopped run leaves to --resume.
  std::string kept_checkpoint() const {
    const fs::path ck = dir.empty() ? fs::path() : find_checkpoint(dir);
    return ck.empty() ? std::string("No checkpoint was written yet.")
                      : str_cat("The last checkpoint, '", ck.string(), "', is kept; --resume continues from it.");
  }

  double wall() const { return prior_wall + std::chrono::duration<double>(Clock::now() - seg_start).count(); }

  nn::Metadata metadata() const {
    nn::Metadata m;
    TrainConfig c = cfg;  // where and how fast it ran does not change the result
    c.run_dir.clear();
    c.threads = 0;
    m["hkt.config"] = c.to_json();
    m["hkt.model_config"] = mcfg.to_json();
    m["hkt.train.epoch"] = std::to_string(step / per_epoch);
    m["hkt.train.batch_in_epoch"] = std::to_string(step % per_epoch);
    m["hkt.train.best_step"] = std::to_string(best_step);
    m["hkt.train.best_val_acc"] = exact(best_val);
    return m;
  }

  // Every rank must hold the same weights (docs/distributed.md, "Checks"):
  // compared before each checkpoint, every kChecksumEvery steps and at the end.
  static constexpr int64_t kChecksumEvery = 50;
  void check_ranks_agree(const char* when) {
    if (W.size == 1) return;
    std::vector<Tensor> ts = model->parameters();
    const std::vector<uint64_t> sums = allgather_u64(checksum(ts));
    for (int r = 1; r < W.size; ++r)
      if (sums[static_cast<size_t>(r)] != sums[0])
        throw Error(str_cat("train: ", when, " (step ", step, "): the weights of rank ", r, " differ from rank 0's "
                            "(checksums ", sums[static_cast<size_t>(r)], " and ", sums[0],
                            "): the ranks diverged; stopping. ", kept_checkpoint()));
  }

  // Fault injection for tests/distributed_test.sh (diverge): HKT_TEST_DIVERGE=1 in the
  // environment of a job of several ranks changes one bit of rank 1's first weight after step 1,
  // which the next check must catch.
  const bool diverge_for_test = W.size > 1 && W.rank == 1 && std::getenv("HKT_TEST_DIVERGE") &&
                                std::string(std::getenv("HKT_TEST_DIVERGE")) == "1";
  void nudge_first_weight() {
    const Tensor p = model->parameters().front();
    HKT_CHECK(p.device().is_cpu() && p.is_contiguous() && p.numel() > 0, "HKT_TEST_DIVERGE: a CPU model is needed");
    static_cast<unsigned char*>(p.raw_data())[0] ^= 1;
  }

  void save_folder() {
    check_ranks_agree("before a checkpoint");
    if (dir.empty() || !writer()) return;
    const fs::path tmp = dir / "checkpoint.tmp", cur = dir / "checkpoint", old = dir / "checkpoint.old";
    fs::remove_all(tmp);
    try {
      nn::save_checkpoint(tmp.string(), *model, *opt, step, metadata());
      // Timings differ between runs, so they live beside the tensors, not in their metadata.
      json st = {{"step", step}, {"wall_s", wall()}, {"train_s", prior_train + seg_train}};
      write_file_atomic(tmp / "state.json", st.dump(2) + "\n");
    } catch (const Error& e) {
      // A full disk (or a file size limit): the folder being written is dropped,
      // the previous checkpoint is left as it was.
      std::error_code ec;
      fs::remove_all(tmp, ec);
      const fs::path prev = find_checkpoint(dir);
      throw Error(str_cat("train: the checkpoint of step ", step, " could not be written: ", e.what(), "; ",
                          prev.empty() ? std::string("there is no earlier checkpoint")
                                       : "the previous checkpoint '" + prev.string() + "' is kept"));
    }
    std::error_code ec;
    // A folder is renamed to checkpoint.trash before it is deleted, so that a kill
    // during the deletion never leaves part of a checkpoint under a name --resume reads.
    const auto discard = [&](const fs::path& p) {
      const fs::path trash = dir / "checkpoint.trash";
      fs::remove_all(trash);
      if (!fs::exists(p)) return;
      fs::rename(p, trash, ec);
      HKT_CHECK(!ec, "train: cannot rename '", p.string(), "' to '", trash.string(), "': ", ec.message());
      fs::remove_all(trash);
    };
    if (fs::exists(cur)) {
      discard(old);
      fs::rename(cur, old, ec);
      HKT_CHECK(!ec, "train: cannot rename '", cur.string(), "': ", ec.message());
    }
    fs::rename(tmp, cur, ec);
    HKT_CHECK(!ec, "train: cannot rename '", tmp.string(), "' to '", cur.string(), "': ", ec.message());
    discard(old);
    // The run --overwrite replaced goes once this one has a checkpoint.
    if (present(dir / kReplaced)) fs::remove_all(dir / kReplaced);
  }

  void setup(const Console& con) {
    (void)con;
    if (cfg.threads > 0) set_num_threads(cfg.threads);
    else if (W.size > 1 && !std::getenv("HKT_NUM_THREADS"))  // the node's cores shared by its ranks
      set_num_threads(std::max(1, static_cast<int>(std::thread::hardware_concurrency()) / W.local_size));
    if (W.size > 1 && !ropt.device.is_cpu())
      throw InputError(str_cat("train: ", W.size, " processes with --device ", ropt.device.str(),
                               ": data-parallel training runs on the CPU only in this version (docs/distributed.md)"));
    try {
      check_memory_before_data();
      data = load_task(cfg.task, cfg.data);
      mcfg = cfg.model_config(data.train);
      mcfg.validate();
      const Dataset& d = data.train;
      const int64_t per_example = d.seq_len * (d.vocab > 0 ? 9 : 1 + 4 * d.features);  // ids or features + mask
      check_memory(on_host(estimate_step_memory(mcfg, cfg.batch_size, d.seq_len,
                                                data.train.size() + data.val.size() + data.test.size(), per_example,
                                                true)),
                   ropt.max_memory, "train");
    } catch (const Error& e) {
      throw InputError(e.what());
    } catch (const fs::filesystem_error& e) {  // a data folder that cannot be listed (a link loop, ...)
      throw InputError(str_cat("the data of task ", cfg.task, ": ", e.what()));
    }
    Generator gen(cfg.seed);
    model = std::make_unique<nn::SequenceClassifier>(mcfg, &gen);
    model->train();
    model->to(ropt.device);  // before the optimizer, whose state follows the parameters
    opt = std::make_unique<nn::AdamW>(nn::decay_groups(
        *model, cfg.lr, cfg.weight_decay, cfg.decay == "matrices" ? nn::DecayRule::Matrices : nn::DecayRule::Weights));
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
    if (cfg.schedule == "constant") sched = nn::LRSchedule::constant(cfg.warmup);
    else if (cfg.schedule == "cosine") sched = nn::LRSchedule::warmup_cosine(cfg.warmup, total, cfg.min_lr_factor);
    else sched = nn::LRSchedule::warmup_linear(cfg.warmup, total, cfg.min_lr_factor);
  }

  // Before a data set is generated or read: the sizes the config gives (a task's
  // defaults are small), the model with a one-token vocabulary.
  void check_memory_before_data() const {
    nn::ClassifierConfig m = cfg.model_config_unfilled();
    if (cfg.data.seq_len > 0) m.max_len = cfg.data.seq_len;
    if (m.vocab == 0 && m.input_features == 0) m.vocab = 1;
    const int64_t n = cfg.data.train_size + cfg.data.val_size + cfg.data.test_size;
    check_memory(on_host(estimate_step_memory(m, cfg.batch_size, m.max_len, n, m.max_len * 9, true)),
                 ropt.max_memory, "train");
  }
  // On a CUDA device the step's tensors live in the device's memory, not in MemAvailable's.
  StepMemory on_host(StepMemory m) const {
    if (!ropt.device.is_cpu()) m.optimizer = m.activations = m.attention = 0;
    return m;
  }

  // Restores model, optimizer, generator and the loop's state from the last checkpoint.
  // A damaged, missing or inconsistent checkpoint or best model is bad input
  // (InputError, exit status 2), never a reason to start again from step 0.
  void restore(Console& con) {
    restore_checkpoint(con);
    check_ranks_agree("after resuming");
  }
  void restore_checkpoint(Console& con) {
    const fs::path ck = checkpoint_to_resume(dir);
    if (ck.empty()) {
      con.line("resume: no checkpoint in '" + dir.string() + "' yet (stopped before its first); starting from step 0");
    } else {
      try {
        restore_from(ck);
        check_best();
      } catch (const InputError&) {
        throw;
      } catch (const Error& e) {
        throw InputError(str_cat("resume: ", e.what()));
      }
    }
    // Events after the checkpoint will be logged again; lines that do not parse (a torn last line) go.
    if (writer() && present(dir / "metrics.jsonl")) {
      std::istringstream in(read_text_file(dir / "metrics.jsonl"));
      std::string kept, line;
      while (std::getline(in, line)) {
        if (line.empty()) continue;
        json j;
        try {
          check_json_text(line, "metrics.jsonl");
          j = json::parse(line, nullptr, false);
        } catch (const Error&) {
          continue;
        }
        if (!j.is_object()) continue;
        const json ev = j.value("event", json()), st = j.value("step", json(0));
        if (ev == "test" || ev == "error" || !st.is_number_integer() || st.get<int64_t>() > step) continue;
        kept += line + "\n";
      }
      write_file_atomic(dir / "metrics.jsonl", kept);
    }
    if (!ck.empty()) con.line("resume: continuing from step " + std::to_string(step) + " (" + ck.string() + ")");
  }

  void restore_from(const fs::path& ck) {
    const nn::Metadata md = nn::load_checkpoint(ck.string(), *model, *opt);
    auto need = [&](const std::string& k) -> const std::string& {
      auto it = md.find(k);
      HKT_CHECK(it != md.end(), "'", ck.string(), "' has no '", k, "' in its metadata");
      return it->second;
    };
    HKT_CHECK(need("hkt.model_config") == mcfg.to_json(), "'", ck.string(),
              "' holds a different model config than ", (dir / "config.json").string());
    step = metadata_int(need("hkt.step"), ck, "hkt.step");
    best_step = metadata_int(need("hkt.train.best_step"), ck, "hkt.train.best_step");
    best_val = metadata_double(need("hkt.train.best_val_acc"), ck, "hkt.train.best_val_acc");
    HKT_CHECK(step <= total && best_step >= -1 && best_step <= step, "'", ck.string(), "': step ", step,
              ", best step ", best_step, " do not fit a run of ", total, " steps");
    const fs::path sp = ck / "state.json";
    if (present(sp)) {
      const json st = parse_json(read_text_file(sp, 1 << 20), sp.string());
      HKT_CHECK(st.is_object() && st.value("wall_s", json(0.0)).is_number() &&
                    st.value("train_s", json(0.0)).is_number(),
                "'", sp.string(), "' must be an object with numbers wall_s and train_s");
      prior_wall = st.value("wall_s", 0.0);
      prior_train = st.value("train_s", 0.0);
    }
  }
  // best.safetensors must hold the best model the checkpoint records (or one
  // written after the checkpoint, which the resumed run writes again).
  void check_best() const {
    if (best_step < 0) return;
    const fs::path bp = dir / "best.safetensors";
    if (!present(bp))
      throw InputError(str_cat("resume: '", bp.string(), "' is missing; the checkpoint records the best model at step ",
                               best_step));
    Generator gen(cfg.seed);
    nn::SequenceClassifier best(mcfg, &gen);
    const nn::Metadata md = nn::load_model(bp.string(), best);
    const auto it = md.find("hkt.step");
    HKT_CHECK(it != md.end(), "'", bp.string(), "' has no 'hkt.step' in its metadata");
    const int64_t bs = metadata_int(it->second, bp, "hkt.step");
    HKT_CHECK(bs == best_step || bs > step, "'", bp.string(), "' is the model of step ", bs,
              " but the checkpoint records the best model at step ", best_step);
  }

  // Stops at a non-finite loss or gradient norm, naming the first non-finite
  // parameter (weights that were not finite before the step) or, when the
  // weights are finite, the first non-finite gradient.
  [[noreturn]] void non_finite(const std::string& what, double v) {
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

  void evaluate_now(Console& con) {
    const EvalResult v = evaluate_split(*model, data.val, cfg.batch_size, cfg.eval_batches, true);
    const EvalResult t = evaluate_split(*model, data.test, cfg.batch_size, cfg.eval_batches, true);
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
    metric(json{{"event", "eval"},       {"step", step},          {"epoch", static_cast<double>(step) / per_epoch},
                {"val_loss", v.loss},    {"val_acc", v.accuracy}, {"test_loss", t.loss},   {"test_acc", t.accuracy},
                {"best_step", best_step}, {"best_val_acc", best_val}});
    con.line("eval  step " + std::to_string(step) + "/" + std::to_string(total) + "  val loss " + fmt(v.loss) +
             " acc " + fmt(v.accuracy) + "  test loss " + fmt(t.loss) + " acc " + fmt(t.accuracy) +
             (better ? "  (best)" : ""));
  }

  TrainResult loop(Console& con) {
    TrainResult r;
    r.params = model->num_parameters();
    const std::vector<Tensor> params = model->parameters();
    const double clip = cfg.clip_norm > 0 ? cfg.clip_norm : std::numeric_limits<double>::max();
    std::vector<int64_t> order;
    int64_t order_epoch = -1;
    double win_loss = 0.0, win_gn = 0.0, win_time = 0.0;
    int64_t win_correct = 0, win_n = 0, win_steps = 0, seg_steps = 0;
    bool first = true;
    while (step < total) {
      if (stop_signal() != 0)
        throw Error(str_cat("train: stopped by signal ", stop_signal(), " (", strsignal(stop_signal()),
                            ") after step ", step, ". ", kept_checkpoint()));
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
      const std::vector<int64_t> idx(order.begin() + mine_lo, order.begin() + mine_hi);
      const Batch hb = data.train.batch(idx);  // on the host: its labels need no copy back
      const Batch b = on_device(hb, ropt.device);
      double lv = 0.0;
      int64_t correct = 0;
      if (W.size == 1) {
        const Tensor logits = model->forward(b.inputs, b.valid);
        const Tensor loss = cross_entropy(logits, b.labels);
        lv = loss.item_double();
        if (!std::isfinite(lv)) non_finite("training loss", lv);
        opt->zero_grad();
        loss.backward();
        correct = count_correct(logits, hb.labels.to_vector<int64_t>());
      } else {
        // The global batch's mean loss is the sum of the ranks' (sum of losses) / n; so is its gradient.
        // Dropout draws the counters the whole batch would give these examples (Generator::set_batch_slice).
        Generator& g = default_generator();
        g.set_batch_slice(static_cast<uint64_t>(mine_lo - lo), static_cast<uint64_t>(mine_hi - mine_lo),
                          static_cast<uint64_t>(n));
        Tensor logits, loss;
        try {
          logits = model->forward(b.inputs, b.valid);
          loss = cross_entropy(logits, b.labels, -100, Reduction::Sum) * (1.0 / static_cast<double>(n));
        } catch (...) {
          g.clear_batch_slice();
          throw;
        }
        g.clear_batch_slice();
        opt->zero_grad();
        reducer.begin(params);
        {
          const GradReadyGuard hook(reducer.hook());  // with overlap: buckets reduced during the backward
          loss.backward();
        }
        const auto c0 = Clock::now();
        reducer.finish();  // every rank now holds the global batch's gradient
        double sums[2] = {loss.item_double(), static_cast<double>(count_correct(logits, hb.labels.to_vector<int64_t>()))};
        allreduce_sum(sums, 2);
        comm_s += std::chrono::duration<double>(Clock::now() - c0).count();
        lv = sums[0];
        correct = static_cast<int64_t>(sums[1]);
        if (!std::isfinite(lv)) non_finite("training loss", lv);
      }
      const double gn = nn::clip_grad_norm_(params, clip);
      if (!std::isfinite(gn)) non_finite("gradient norm", gn);
      opt->set_lr_factor(sched.factor(opt->steps()));
      const double lr_now = opt->lr(0);
      opt->step();
      ++step;
      if (diverge_for_test && step == 1) nudge_first_weight();
      if (step % kChecksumEvery == 0 || step == total) check_ranks_agree("the periodic check");
      const double dt = std::chrono::duration<double>(Clock::now() - t0).count();
      seg_train += dt;
      ++seg_steps;
      if (first) r.first_loss = lv;
      first = false;
      r.last_loss = lv;
      win_loss += lv;
      win_gn += gn;
      win_correct += correct;
      win_n += hi - lo;
      ++win_steps;

      win_time += dt;
      const double eps = static_cast<double>(win_n) / std::max(1e-9, win_time);
      const double eta = seg_train / static_cast<double>(seg_steps) * static_cast<double>(total - step);
      if (con.tty()) {
        const int64_t width = 24, fill = width * step / total;
        std::ostringstream bar;
        bar << '[';
        for (int64_t i = 0; i < width; ++i) bar << (i < fill ? '#' : '.');
        bar << "] step " << step << '/' << total << " ep " << step / per_epoch << " loss " << fmt(win_loss / win_steps)
            << " acc " << fmt(static_cast<double>(win_correct) / win_n, 3) << ' ' << fmt(eps, 0) << " ex/s ETA "
            << duration(eta);
        con.bar(bar.str(), step == total);
      }
      if (cfg.log_every > 0 && (step % cfg.log_every == 0 || step == total)) {
        metric(json{{"event", "train"},
                    {"step", step},
                    {"epoch", (step - 1) / per_epoch},
                    {"loss", win_loss / win_steps},
                    {"acc", static_cast<double>(win_correct) / win_n},
                    {"lr", lr_now},
                    {"grad_norm", win_gn / win_steps},
                    {"examples_per_s", eps},
                    {"elapsed_s", wall()}});
        if (!con.tty())
          con.line("step " + std::to_string(step) + "/" + std::to_string(total) + "  epoch " +
                   std::to_string((step - 1) / per_epoch) + "  loss " + fmt(win_loss / win_steps) + "  acc " +
                   fmt(static_cast<double>(win_correct) / win_n) + "  lr " + short_num(lr_now) + "  " +
                   fmt(eps, 0) + " ex/s  ETA " + duration(eta));
        win_loss = win_gn = win_time = 0.0;
        win_correct = win_n = win_steps = 0;
      }
      if ((cfg.eval_every > 0 && step % cfg.eval_every == 0) || step == total) evaluate_now(con);
      if ((cfg.checkpoint_every > 0 && step % cfg.checkpoint_every == 0) || step == total) save_folder();
    }
    con.end_bar();
    r.completed = true;
    r.steps = step;
    return r;
  }

  TrainResult finish(Console& con, TrainResult r) {
    r.best_step = best_step;
    r.best_val_acc = best_val;
    r.final_val_acc = final_val;
    // The test accuracy of the best model (by validation accuracy), on the whole test set.
    if (best_step >= 0) {
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
    if (!dir.empty() && writer()) {
      json s;
      s["config"] = config_json(cfg);
      s["model_config"] = json::parse(mcfg.to_json());
      s["params"] = r.params;
      s["steps"] = step;
      s["best_step"] = best_step;
      s["best_val_acc"] = best_val;
      s["test_acc"] = r.test_acc;
      s["test_loss"] = r.test_loss;
      s["test_examples"] = data.test.size();
      s["final_val_acc"] = final_val;
      s["wall_s"] = r.wall_s;
      s["train_s"] = train_s;
      s["s_per_step"] = r.s_per_step;
      // Data parallel: processes, and this segment's time waiting for the gradients' and metrics'
      // all-reduces after the backward (what overlap did not hide), and its share of the steps' time.
      s["ranks"] = W.size;
      s["comm_wait_s"] = comm_s;
      s["comm_share"] = seg_train > 0 ? comm_s / seg_train : 0.0;
      write_file_atomic(dir / "summary.json", s.dump(2) + "\n");
    }
    con.line("done: " + std::to_string(step) + " steps, best val acc " + fmt(best_val) + " at step " +
             std::to_string(best_step) + ", test acc " + fmt(r.test_acc) + " (best model), " + fmt(r.wall_s, 1) +
             " s, " + fmt(r.s_per_step * 1000, 1) + " ms/step" + (dir.empty() ? "" : ", run folder " + dir.string()));
    return r;
  }

  // The files of a run already in the folder (none: a fresh folder).
  std::vector<std::string> earlier_run() const {
    std::vector<std::string> found;
    for (const char* f : kRunFiles)
      if (present(dir / f)) found.push_back(f);
    return found;
  }
  void refuse_earlier_run() const {
    check_run_folder(dir, "train");
    const std::vector<std::string> found = earlier_run();
    if (found.empty() || ropt.overwrite) return;
    std::string list;
    for (const std::string& f : found) list += (list.empty() ? "" : ", ") + f;
    throw InputError(str_cat("train: '", dir.string(), "' already holds a run (", list, "); continue it with --resume ",
                             dir.string(), ", choose another --run-dir, or give --overwrite to replace it"));
  }

  // A fresh run's folder, once setup() has checked the data and the settings (an
  // input error leaves an earlier run's folder as it was): created and locked;
  // an earlier run in it is refused, or with RunOptions::overwrite moved to
  // replaced/ (deleted at this run's first checkpoint); config.json written.
  void start_folder() {
    std::error_code ec;
    fs::create_directories(dir, ec);
    if (ec) throw InputError(str_cat("train: cannot create the run folder '", dir.string(), "': ", ec.message()));
    lock_folder();
    refuse_earlier_run();  // again, now that the folder is ours
    const std::vector<std::string> found = earlier_run();
    if (found.empty()) {
      write_file_atomic(dir / "config.json", cfg.to_json() + "\n");
      return;
    }
    const fs::path rep = dir / kReplaced;
    // replaced/ is only there while the run that replaced it has no checkpoint:
    // that run's files go, the run it replaced stays in replaced/.
    const bool keep_older = present(rep);
    if (!keep_older) {
      fs::create_directory(rep, ec);
      if (ec) throw Error(str_cat("train: cannot create '", rep.string(), "': ", ec.message()));
    }
    for (const std::string& f : found) {
      if (keep_older) {
        fs::remove_all(dir / f, ec);
      } else {
        fs::rename(dir / f, rep / f, ec);
      }
      if (ec) throw Error(str_cat("train: --overwrite: cannot move '", (dir / f).string(), "' aside: ", ec.message()));
    }
    write_file_atomic(dir / "config.json", cfg.to_json() + "\n");
  }

  std::unique_ptr<FolderLock> lock;
  void lock_folder() {
    try {
      lock = std::make_unique<FolderLock>(dir);
    } catch (const Error& e) {
      throw InputError(str_cat("train: ", e.what()));
    }
  }

  // The data's shape, per split (the length distribution above all): data.json
  // in the run folder and one console line per split.
  void describe_data(Console& con) {
    json j;
    j["task"] = cfg.task;
    j["seq_len"] = data.train.seq_len;
    for (const Dataset* d : {&data.train, &data.val, &data.test}) {
      const LengthStats st = length_stats(*d, 16);
      con.line("lengths " + d->name + ": " + st.str());
      const size_t slash = d->name.rfind('/');
      j[slash == std::string::npos ? d->name : d->name.substr(slash + 1)] = length_json(st);
    }
    if (!dir.empty() && writer()) write_file_atomic(dir / "data.json", j.dump(2) + "\n");
  }

  TrainResult go(bool resuming) {
    if (!writer()) ropt.quiet = true;  // rank 0 speaks for the job
    Console con(ropt);
    const StopSignals signals;
    if (!dir.empty() && !resuming && writer()) refuse_earlier_run();  // before the data is loaded: at once
    if (!dir.empty() && resuming && writer()) lock_folder();
    setup(con);
    if (!dir.empty() && !resuming && writer()) start_folder();
    // The other ranks read the checkpoint once rank 0 holds the folder.
    if (W.size > 1) barrier();
    const RunAttentionKernels kernels(dir.string(), ropt.device, resuming ? KernelsUse::resume : KernelsUse::train,
                                      ropt.cuda_autotune);
    if (!dir.empty() && resuming) restore(con);
    const int64_t np = model->num_parameters();
    con.line("task " + cfg.task + ": train " + std::to_string(data.train.size()) + ", val " +
             std::to_string(data.val.size()) + ", test " + std::to_string(data.test.size()) + ", T " +
             std::to_string(data.train.seq_len) + ", " + std::to_string(data.train.classes) + " classes");
    describe_data(con);
    con.line("model " + cfg.model + " (" + mcfg.attention + ", dim " + std::to_string(mcfg.dim) + ", heads " +
             std::to_string(mcfg.heads) + ", layers " + std::to_string(mcfg.layers) +
             (mcfg.attention == "hkt" ? ", levels " + std::to_string(mcfg.levels) : std::string()) + "): " +
             std::to_string(np) + " parameters; " + std::to_string(total) + " steps of " +
             std::to_string(cfg.batch_size) + " (" + std::to_string(per_epoch) + " per epoch), lr " + short_num(cfg.lr) +
             " " + sched.str());
    if (W.size > 1)
      con.line(str_cat("data parallel: ", W.size, " processes (", W.local_size, " on this machine), ",
                       get_num_threads(), " threads each; each takes a share of every batch of ", cfg.batch_size,
                       "; gradients summed in buckets of ", GradReducer::kBucketBytes >> 10, " KiB",
                       ropt.overlap ? " (non-blocking)" : " (blocking)"));
    reducer = GradReducer(ropt.overlap);
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
};

}  // namespace

// --- TrainConfig ----------------------------------------------------------------

void TrainConfig::validate() const {
  HKT_CHECK(!task.empty(), kCfg, "task is empty");
  check_task_name(task, kCfg);
  nn::ClassifierConfig::preset(model);  // throws for an unknown preset
  {
    const json o = parse_json(model_overrides, "TrainConfig: model_overrides");
    HKT_CHECK(o.is_object(), kCfg, "model_overrides must be a JSON object, got ", o.type_name());
    json m = parse_json(nn::ClassifierConfig::preset(model).to_json(), "preset");
    for (auto it = o.begin(); it != o.end(); ++it) {
      HKT_CHECK(m.contains(it.key()), kCfg, "model_overrides: unknown key '", it.key(), "'");
      m[it.key()] = it.value();
    }
    try {
      // The task fills in vocab / input_features later; check everything else now.
      nn::ClassifierConfig mc = nn::ClassifierConfig::from_json(m.dump());
      if (mc.vocab == 0 && mc.input_features == 0) mc.vocab = 1;
      if (data.seq_len > 0) mc.max_len = data.seq_len;  // the levels' bound depends on T
      mc.validate();
    } catch (const Error& e) {
      throw Error(str_cat(kCfg, "model_overrides: ", e.what()));
    }
  }
  HKT_CHECK(batch_size >= 1, kCfg, "batch_size must be >= 1, got ", batch_size);
  HKT_CHECK(steps >= 0 && epochs >= 0 && (steps > 0 || epochs > 0), kCfg,
            "set steps > 0 or epochs > 0 (got steps ", steps, ", epochs ", epochs, ")");
  HKT_CHECK(std::isfinite(lr) && lr > 0, kCfg, "lr must be > 0, got ", lr);
  HKT_CHECK(std::isfinite(weight_decay) && weight_decay >= 0, kCfg, "weight_decay must be >= 0, got ", weight_decay);
  HKT_CHECK(warmup >= 0, kCfg, "warmup must be >= 0, got ", warmup);
  HKT_CHECK(schedule == "constant" || schedule == "cosine" || schedule == "linear", kCfg, "schedule must be "
            "\"constant\", \"cosine\" or \"linear\", got \"", schedule, "\"");
  HKT_CHECK(min_lr_factor >= 0 && min_lr_factor <= 1, kCfg, "min_lr_factor must be in [0, 1], got ", min_lr_factor);
  HKT_CHECK(std::isfinite(clip_norm) && clip_norm >= 0, kCfg, "clip_norm must be >= 0, got ", clip_norm);
  HKT_CHECK(log_every >= 0, kCfg, "log_every must be >= 0, got ", log_every);
  HKT_CHECK(eval_every >= 0, kCfg, "eval_every must be >= 0, got ", eval_every);
  HKT_CHECK(eval_batches >= 0, kCfg, "eval_batches must be >= 0, got ", eval_batches);
  HKT_CHECK(checkpoint_every >= 0, kCfg, "checkpoint_every must be >= 0, got ", checkpoint_every);
  HKT_CHECK(threads >= 0, kCfg, "threads must be >= 0, got ", threads);
  HKT_CHECK(data.seq_len >= 0 && data.train_size >= 0 && data.val_size >= 0 && data.test_size >= 0 &&
                data.max_depth >= 0 && data.max_args >= 0 && data.min_len >= 0 && data.max_len >= 0,
            kCfg, "data sizes must be >= 0");
  HKT_CHECK(decay == "weights" || decay == "matrices", kCfg,
            "decay must be \"weights\" or \"matrices\" (which parameters weight decay applies to), got \"", decay,
            "\"");
  // Stated limits, checked before anything is allocated (the memory a run needs is checked too, in train()).
  const auto limit = [](const char* name, int64_t v, int64_t max) {
    HKT_CHECK(v <= max, kCfg, name, " must be <= ", max, ", got ", v);
  };
  limit("batch_size", batch_size, kMaxBatch);
  limit("steps", steps, kMaxSteps);
  limit("epochs", epochs, kMaxEpochs);
  limit("warmup", warmup, kMaxSteps);
  limit("threads", threads, 1024);
  limit("data.seq_len", data.seq_len, nn::ClassifierConfig::kMaxLen);
  limit("data.train_size", data.train_size, kMaxExamples);
  limit("data.val_size", data.val_size, kMaxExamples);
  limit("data.test_size", data.test_size, kMaxExamples);
  limit("data.max_depth", data.max_depth, 1024);
  limit("data.max_args", data.max_args, 1024);
}

std::string TrainConfig::to_json() const { return config_json(*this).dump(2); }

TrainConfig TrainConfig::from_json(const std::string& text) {
  TrainConfig c = from_json_unvalidated(text);
  c.validate();
  return c;
}

TrainConfig TrainConfig::from_json_unvalidated(const std::string& text) {
  const json j = parse_json(text, "TrainConfig");
  TrainConfig c;
  each_key(j, "", [&](const std::string& k, const json& v, const std::string& key) {
    if (k == "task") get(v, key, c.task);
    else if (k == "data") {
      each_key(v, "data", [&](const std::string& dk, const json& dv, const std::string& dkey) {
        if (dk == "data_dir") get(dv, dkey, c.data.data_dir);
        else if (dk == "seq_len") get(dv, dkey, c.data.seq_len);
        else if (dk == "train_size") get(dv, dkey, c.data.train_size);
        else if (dk == "val_size") get(dv, dkey, c.data.val_size);
        else if (dk == "test_size") get(dv, dkey, c.data.test_size);
        else if (dk == "max_depth") get(dv, dkey, c.data.max_depth);
        else if (dk == "max_args") get(dv, dkey, c.data.max_args);
        else if (dk == "min_len") get(dv, dkey, c.data.min_len);
        else if (dk == "max_len") get(dv, dkey, c.data.max_len);
        else if (dk == "seed") get(dv, dkey, c.data.seed);
        else return false;
        return true;
      });
    } else if (k == "model") get(v, key, c.model);
    else if (k == "model_overrides") {
      HKT_CHECK(v.is_object(), kCfg, "'model_overrides' must be a JSON object, got ", excerpt(v.dump()));
      c.model_overrides = v.dump();
    } else if (k == "batch_size") get(v, key, c.batch_size);
    else if (k == "steps") get(v, key, c.steps);
    else if (k == "epochs") get(v, key, c.epochs);
    else if (k == "lr") get(v, key, c.lr);
    else if (k == "weight_decay") get(v, key, c.weight_decay);
    else if (k == "decay") get(v, key, c.decay);
    else if (k == "warmup") get(v, key, c.warmup);
    else if (k == "schedule") get(v, key, c.schedule);
    else if (k == "min_lr_factor") get(v, key, c.min_lr_factor);
    else if (k == "clip_norm") get(v, key, c.clip_norm);
    else if (k == "log_every") get(v, key, c.log_every);
    else if (k == "eval_every") get(v, key, c.eval_every);
    else if (k == "eval_batches") get(v, key, c.eval_batches);
    else if (k == "checkpoint_every") get(v, key, c.checkpoint_every);
    else if (k == "seed") get(v, key, c.seed);
    else if (k == "threads") get(v, key, c.threads);
    else if (k == "run_dir") get(v, key, c.run_dir);
    else return false;
    return true;
  });
  return c;
}

void TrainConfig::set_override(const std::string& key, const std::string& json_value) {
  json o = parse_json(model_overrides, "TrainConfig: model_overrides");
  o[key] = parse_json(json_value, str_cat("TrainConfig: override '", key, "'"));
  model_overrides = o.dump();
}

nn::ClassifierConfig TrainConfig::model_config(const Dataset& train) const {
  nn::ClassifierConfig c = model_config_unfilled();
  fill_model_config(c, train);
  return c;
}

nn::ClassifierConfig TrainConfig::model_config_unfilled() const {
  json m = parse_json(nn::ClassifierConfig::preset(model).to_json(), "preset");
  const json o = parse_json(model_overrides, "TrainConfig: model_overrides");
  for (auto it = o.begin(); it != o.end(); ++it) m[it.key()] = it.value();
  return nn::ClassifierConfig::from_json(m.dump());
}

// --- entry points ---------------------------------------------------------------

EvalResult evaluate(nn::SequenceClassifier& model, const Dataset& data, int64_t batch_size, int64_t max_batches) {
  return evaluate_split(model, data, batch_size, max_batches, false);
}

namespace {
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
  }
  model.train(was_training);
  if (ranks > 1) {
    // The sums over the ranks; each example's prediction from the rank that evaluated it.
    const size_t cc = r.confusion.size();
    std::vector<double> v(3 + cc + static_cast<size_t>(m), 0.0);
    v[0] = loss_sum, v[1] = static_cast<double>(correct), v[2] = static_cast<double>(r.examples);
    for (size_t i = 0; i < cc; ++i) v[3 + i] = static_cast<double>(r.confusion[i]);
    for (size_t i = 0; i < r.predicted.size(); ++i) v[3 + cc + static_cast<size_t>(first) + i] = static_cast<double>(r.predicted[i]);
    detail::allreduce_sum(v.data(), static_cast<int64_t>(v.size()));
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
}  // namespace

// RunOptions::cuda_autotune: only on a CUDA device; checked before anything is written.
static void check_autotune(const RunOptions& opt) {
  if (opt.cuda_autotune && opt.device.is_cpu())
    throw InputError("cuda_autotune (--cuda-autotune): only on a CUDA device (--device cuda)");
}

TrainResult train(const TrainConfig& cfg, const RunOptions& opt) {
  try {
    cfg.validate();
  } catch (const Error& e) {
    throw InputError(e.what());
  }
  check_autotune(opt);
  Run run;
  run.cfg = cfg;
  run.ropt = opt;
  run.dir = cfg.run_dir;
  return run.go(false);
}

TrainResult resume(const std::string& run_dir, const RunOptions& opt) {
  check_autotune(opt);
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
  Run run;
  run.cfg = cfg;
  run.ropt = opt;
  run.dir = dir;
  return run.go(true);
}

}  // namespace hkt::tasks
