// The training run behind train() and resume() (train.hpp), internal to
// tasks/src. Its parts, each in its own file:
//   train_step.cpp    train_step(): forward, loss, backward, clipping, the optimizer step
//   train.cpp         the loop around it: setup, data order, when to log, evaluate and
//                     checkpoint, the end of the run; train() and resume()
//   console.cpp       what a run prints: lines, the progress bar, number formats
//   evaluation.cpp    evaluate() and the run's evaluations (best.safetensors)
//   run_files.cpp     the run folder: creating and locking it, metrics.jsonl,
//                     checkpoints, resuming, data.json and summary.json
//   run_finished.cpp  resume() of a finished run: checked, then its summary, no data loaded
//   train_config.cpp  TrainConfig and its JSON
#pragma once
#include <chrono>
#include <cstdint>
#include <cstdlib>
#include <filesystem>
#include <iosfwd>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "hkt/models/checkpoint.hpp"
#include "hkt/models/classifier.hpp"
#include "hkt/models/optim.hpp"
#include "hkt/models/schedule.hpp"
#include "hkt/tasks/dataset.hpp"
#include "hkt/tasks/distributed.hpp"
#include "hkt/tasks/files.hpp"
#include "hkt/tasks/memory.hpp"
#include "hkt/tasks/train.hpp"
#include "comm.hpp"
#include "run_folder.hpp"
#include "train_step.hpp"

namespace hkt::tasks::detail {

using json = nlohmann::ordered_json;
using Clock = std::chrono::steady_clock;

// --- train_config.cpp -------------------------------------------------------------

inline constexpr const char* kCfg = "TrainConfig: ";
json config_json(const TrainConfig& c);
json parse_json(const std::string& text, const std::string& what);

// --- console.cpp ------------------------------------------------------------------

std::string fmt(double v, int prec = 4);
std::string short_num(double v);
std::string exact(double v);  // round-trips a double through text
std::string duration(double s);

// The run's console: lines, and on a terminal a progress bar redrawn in place.
class Console {
 public:
  explicit Console(const RunOptions& opt);
  bool tty() const { return tty_; }
  void line(const std::string& s);
  // Redraws the progress bar (terminals only), at most ten times a second.
  void bar(const std::string& s, bool force);
  void end_bar();

 private:
  bool quiet_, tty_ = false, bar_shown_ = false;
  std::ostream& os_;
  Clock::time_point last_{};
};

// The training steps since the last log line.
struct Window {
  double loss = 0.0, grad_norm = 0.0, time = 0.0;
  int64_t correct = 0, examples = 0, steps = 0;
  void add(const StepStats& s, int64_t examples_in_batch, double dt) {
    loss += s.loss;
    grad_norm += s.grad_norm;
    correct += s.correct;
    examples += examples_in_batch;
    ++steps;
    time += dt;
  }
  double mean_loss() const { return loss / steps; }
  double accuracy() const { return static_cast<double>(correct) / examples; }
};
// The progress bar and the log line after `step` of `total`.
std::string progress_bar(int64_t step, int64_t total, int64_t per_epoch, const Window& w, double eps, double eta);
std::string log_line(int64_t step, int64_t total, int64_t per_epoch, const Window& w, double lr, double eps,
                     double eta);

// --- evaluation.cpp ---------------------------------------------------------------

// A batch copied to device d.
Batch on_device(Batch b, Device d);
// evaluate() with the batches split across the ranks of the job (split: each
// rank its contiguous share of the batches) and the sums reduced: every rank
// returns the whole result.
EvalResult evaluate_split(nn::SequenceClassifier& model, const Dataset& data, int64_t batch_size,
                          int64_t max_batches, bool split);
// index,label,predicted per example of an evaluation, in its order.
std::string predictions_csv(const EvalResult& r, const Dataset& d);

// --- the run (train.cpp, evaluation.cpp, run_files.cpp) -----------------------------

struct Run {
  const World& W = world();  // rank 0 alone writes the run folder
  bool writer() const { return W.rank == 0; }
  TrainConfig cfg;
  RunOptions ropt;
  std::filesystem::path dir;  // empty: write nothing
  Splits data;
  nn::ClassifierConfig mcfg;
  std::unique_ptr<nn::SequenceClassifier> model;
  std::unique_ptr<nn::AdamW> opt;
  int64_t total = 0, per_epoch = 0;
  StepMemory mem_estimate;  // of a step with the data set (setup(); summary.json)
  int64_t step = 0;  // completed steps
  int64_t best_step = -1;
  double best_val = -1.0, final_val = -1.0;
  double prior_wall = 0.0, prior_train = 0.0;  // from earlier segments
  double seg_train = 0.0;
  DataParallel dp;  // several ranks: the gradient reducer and this segment's time in all-reduces
  Clock::time_point seg_start = Clock::now();
  std::unique_ptr<FolderLock> lock;
  // The run --overwrite moved aside (or this run took over), deleted at the first checkpoint.
  std::filesystem::path parked;

  double wall() const { return prior_wall + std::chrono::duration<double>(Clock::now() - seg_start).count(); }

  // train.cpp: the run.
  TrainResult go(bool resuming);
  void setup();
  void check_memory_before_data() const;
  void build_model(Device d);  // mcfg's model with its initial values (Generator(seed)) on d, and its optimizer
  StepMemory on_host(StepMemory m) const;
  TrainResult loop(Console& con);
  [[noreturn]] void stop(Console& con);  // after a stop signal
  int64_t saved_step = -1;               // the step of the checkpoint in the folder (-1: none yet)
  void report(Console& con, Window& win, double lr, int64_t seg_steps);
  TrainResult finish(Console& con, TrainResult r);
  [[noreturn]] void non_finite(const std::string& what, double v);
  // Every rank must hold the same weights (docs/distributed.md, "Checks"):
  // compared before each checkpoint, every kChecksumEvery steps and at the end.
  static constexpr int64_t kChecksumEvery = 50;
  void check_ranks_agree(const char* when);

  // evaluation.cpp: validation accuracy now (and the test set's, with_test); best.safetensors when better.
  void evaluate_now(Console& con, bool with_test);

  // run_files.cpp: the run folder.
  void metric(const json& j);  // appends an event; a failed append stops the run
  std::string kept_checkpoint() const;  // what a stopped run leaves to --resume
  nn::Metadata metadata() const;
  void save_folder(bool drop_replaced = true);
  void restore(Console& con);
  bool lengthened = false;   // resume() with RunOptions::steps / epochs
  void lengthen(Console& con);  // config.json of the new length; the finished run's results go
  // run_finished.cpp: resume() of a finished run checks its checkpoint and returns its summary
  // without loading the data (true), else leaves the run as it was (false).
  bool finished_already(Console& con, TrainResult& out);
  void restore_checkpoint(Console& con);
  void restore_from(const std::filesystem::path& ck);
  void restore_checked(const std::filesystem::path& ck);  // restore_from + check_best; damage: InputError
  void check_best() const;
  std::vector<std::string> earlier_run() const;
  void refuse_earlier_run() const;
  void start_folder();
  void lock_folder();
  void check_entries() const;
  void tidy_for_resume();
  void say(const std::vector<std::string>& notes) const;  // no link, FIFO or folder under a name the run writes
  void describe_data(Console& con);
  void write_summary(const TrainResult& r, double train_s) const;
};

}  // namespace hkt::tasks::detail
