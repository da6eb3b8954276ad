// One training loop for every task and model.
//
//   TrainConfig cfg;                       // or TrainConfig::from_json(text)
//   cfg.task = "listops"; cfg.model = "hkt-small"; cfg.steps = 2000; cfg.run_dir = "runs/x";
//   TrainResult r = train(cfg);            // later: resume("runs/x")
//
// Data order: epoch e visits the training set in a Philox permutation that is
// a pure function of (seed, e); step s uses batch s % B of epoch s / B
// (B = ceil(N / batch_size); the last batch of an epoch may be smaller). The
// step therefore is the whole data-order state.
//
// Randomness: the model's initial values come from Generator(seed); dropout
// draws from the global generator, seeded with seed + 1 at the start and
// saved in every checkpoint. A resumed run ends with the same weights, bit
// for bit, as an uninterrupted one.
//
// Several processes (mpirun / srun, tasks/distributed.hpp, docs/distributed.md):
// each rank takes a fixed share of every global batch (batch_size is the
// global batch), the gradients are summed over the ranks, rank 0 alone writes
// the run folder, and the result does not depend on the number of ranks
// beyond rounding.
//
// The run folder (cfg.run_dir; nothing is written when it is empty):
//   config.json        the TrainConfig, written at the start (resume reads it)
//   metrics.jsonl      one JSON object per log / eval event ("event": "train" | "eval" | "test" | "error")
//   checkpoint/        model.safetensors + optimizer.safetensors (save_checkpoint), every
//                      checkpoint_every steps and at the end; written to checkpoint.tmp/ and
//                      renamed, the previous one kept as checkpoint.old/ until then
//   data.json          the splits' sizes and length distributions (written at the start)
//   best.safetensors   the model with the best validation accuracy so far
//   summary.json       at the end: config, best step, best val acc, test acc of the best model, ...
//   test_predictions.csv  at the end: the best model's prediction for every test example
//   lock               flock'ed by the one process writing the run (it holds its pid); a second
//                      train() or resume() on the folder is refused at once (InputError)
//   replaced.<pid>.<n>/ with RunOptions::overwrite, the run it replaces, until this run's first
//                      checkpoint; its marker HKT_REPLACED_RUN.json says what it is (parked_runs.hpp)
//
// A non-finite loss or gradient norm throws hkt::Error naming the step and
// the first non-finite parameter or gradient; so does a failed append to
// metrics.jsonl (SIGXFSZ is ignored while a run writes, so a file size limit
// is a failed write). In every case the last checkpoint is left as it was, for
// resume(). SIGINT / SIGTERM (checked after each step) write a checkpoint of
// the step reached and throw Stopped (exit status 128 + the signal).
#pragma once
#include <cstdint>
#include <functional>
#include <iosfwd>
#include <string>
#include <vector>

#include "hkt/models/classifier.hpp"
#include "hkt/tasks/model_spec.hpp"
#include "hkt/tasks/registry.hpp"

namespace hkt::tasks {

struct TrainConfig {
  std::string task = "synthetic";
  TaskOptions data;
  ModelSpec model = "hkt-tiny";        // a ClassifierConfig preset and the typed fields set over it
  int64_t batch_size = 32;
  int64_t steps = 0;                   // > 0 wins over epochs
  int64_t epochs = 0;                  // used when steps == 0: steps = epochs * batches per epoch
  double lr = 1e-3;
  double weight_decay = 0.01;
  // Which parameters weight_decay applies to (nn::DecayRule, docs/models.md):
  // "weights" (default): the matrices of the linear maps, embeddings and
  // convolutions, not the positional table nor HKT's level logits theta;
  // "matrices": every parameter with two or more dimensions (pos and theta too).
  std::string decay = "weights";
  int64_t warmup = 0;                  // warm-up steps
  std::string schedule = "cosine";     // "constant", "cosine" or "linear"
  double min_lr_factor = 0.0;
  double clip_norm = 1.0;              // 0 = no clipping (the norm is still checked)
  int64_t log_every = 10;              // train-metrics events (0 = none)
  int64_t eval_every = 0;              // 0 = only at the end
  int64_t eval_batches = 0;            // validation/test batches per periodic eval (0 = all; else a fixed
                                       // seeded sample of that many batches' examples, see evaluate())
  int64_t checkpoint_every = 0;        // 0 = only at the end
  // Steps between evaluations of the test set during training, for a user who wants its curve
  // ("eval" events with test_acc; eval_batches applies). 0 (the default): the test set is scored
  // once, at the end, on the best checkpoint by validation accuracy ("test" event, summary.json).
  int64_t eval_test_every = 0;
  uint64_t seed = 0;
  int threads = 0;                     // 0 = the default (all cores or HKT_NUM_THREADS)
  std::string run_dir;                 // "" = write nothing

  // Throws hkt::Error naming the first invalid field.
  void validate() const;
  // Every field; "data" and "model_overrides" are nested objects.
  std::string to_json() const;
  // Strict: unknown keys (at any level) and wrong types are errors; missing
  // keys keep their defaults. The result is validated.
  static TrainConfig from_json(const std::string& json);
  // The same without validate(): for a base that flags complete (hkt-train
  // --config FILE --steps N), validated once they are applied.
  static TrainConfig from_json_unvalidated(const std::string& json);
  // model.config() with the task's dimensions filled in (vocab or input_features, classes, max_len).
  nn::ClassifierConfig model_config(const Dataset& train) const;

  // Limits of validate() (the model's are ClassifierConfig's).
  static constexpr int64_t kMaxBatch = int64_t{1} << 20, kMaxSteps = int64_t{1} << 48, kMaxEpochs = int64_t{1} << 20,
                           kMaxExamples = int64_t{1} << 31;

  bool operator==(const TrainConfig&) const = default;
};

struct EvalResult {
  double loss = 0.0, accuracy = 0.0;
  int64_t examples = 0;
  int64_t classes = 0;
  std::vector<int64_t> confusion;  // classes x classes: [label * classes + predicted] = examples
  std::vector<int64_t> indices;    // the examples evaluated, in order (indices into the data set)
  std::vector<int64_t> predicted;  // the predicted class of each, in the same order
};

// The run folder's per-example test results of the best model
// ("index,label,predicted", one line per test example): the input of the
// paired bootstrap in hkt-experiment's tables.
inline constexpr const char* kTestPredictionsFile = "test_predictions.csv";

struct TrainResult {
  int64_t steps = 0;         // optimizer steps done in total
  int64_t best_step = -1;    // step of best.safetensors (-1: no evaluation)
  double best_val_acc = -1.0;
  double test_acc = -1.0;    // of the best model, on the whole test set
  double test_loss = 0.0;
  double final_val_acc = -1.0;
  double first_loss = 0.0, last_loss = 0.0;  // training loss of the first / last step of this process
  double wall_s = 0.0;       // elapsed time of the run (evaluations and checkpoints included), summed
                             // over resumed segments up to their last checkpoint; summary.json's
                             // train_s is the steps' time alone
  double s_per_step = 0.0;
  int64_t params = 0;
  bool completed = false;    // false when stopped by RunOptions::stop_after
};

// Thrown by train() and resume() for bad input found before the first step:
// an invalid config, a missing or malformed data file or run folder. (The
// message is that of the underlying hkt::Error.) hkt-train exits 2 on it.
class InputError : public Error {
 public:
  using Error::Error;
};

// SIGINT or SIGTERM stopped the run after the step under way, and a checkpoint of
// that step was written (with one process; several ranks keep their last periodic
// checkpoint): resume() continues from it. Programs exit with 128 + signal (130, 143).
class Stopped : public Error {
 public:
  Stopped(int sig, const std::string& what) : Error(what), signal(sig) {}
  int signal;
};

struct RunOptions {
  bool quiet = false;            // no console output
  // resume() only, > 0: train to this many steps (or epochs, when steps is 0) instead of
  // the config's: a finished run continues, and config.json records the new length. The
  // learning-rate schedule is that of a run of the new length (docs/tasks.md, "Longer runs").
  int64_t steps = 0, epochs = 0;
  int64_t stop_after = 0;        // > 0: return after this step, as if killed (tests)
  std::ostream* out = nullptr;   // console (default std::cout)
  // Where the model and the batches live (not part of the config, so a run
  // may be resumed on another device). CUDA needs a GPU (hkt::require_cuda).
  Device device = Device::cpu();
  // Data-parallel training (several processes, docs/distributed.md): true =
  // each gradient bucket's all-reduce is non-blocking, started as soon as the
  // bucket is packed; false = blocking, one bucket after the other (to compare).
  bool overlap = true;
  // train() into a folder that holds a run (any file a run writes): false =
  // refused (InputError); true = the old run's files are moved aside to
  // RUN_DIR/replaced.<pid>.<n>/ (with a marker; hkt/tasks/parked_runs.hpp) once the
  // data and settings are checked, and deleted when the new run has written its
  // first checkpoint; a stop or kill before that keeps it, and nothing is lost.
  bool overwrite = false;
  // The memory a step may take, in bytes (0: MemAvailable of /proc/meminfo).
  // Before the data is loaded and again before the model is built, the peak
  // memory of a step and the data set is estimated (tasks/memory.hpp); a run
  // that does not fit is refused (InputError) with the estimate and the limit.
  double max_memory = 0;
  // Called on every rank after each optimizer step (step: the steps done so far), before the
  // step's checks, log line and checkpoint: a place for a user's own per-step code, and the
  // seam through which tests inject faults (tests/helpers/train_faults.cpp).
  std::function<void(int64_t step, nn::SequenceClassifier& model)> after_step;
};

// A fresh run (a folder holding a run is refused unless opt.overwrite).
TrainResult train(const TrainConfig& cfg, const RunOptions& opt = {});
// Continues the run in `run_dir` from its last checkpoint, reading
// run_dir/config.json; from step 0 only when the run has no checkpoint at all
// (stopped before its first). InputError (exit status 2), naming the file,
// for an empty path, a folder without config.json, a damaged or partial
// checkpoint (checkpoint/ that is a file, a dangling link, or lacks a file),
// a finished run without its checkpoint, non-finite weights, or a
// best.safetensors missing or not the best model the checkpoint records.
TrainResult resume(const std::string& run_dir, const RunOptions& opt = {});

// Evaluates on `data` in eval mode without gradients; the model's mode is
// restored. max_batches = 0: every example, in order. max_batches > 0 (and
// fewer than the set holds): max_batches x batch_size examples drawn from the
// whole set by a fixed seeded sample (kEvalSampleSeed), the same at every call,
// so that successive evaluations compare the same examples and a set stored
// by class (IMDB: positive reviews, then negative) is not judged on one class.
inline constexpr uint64_t kEvalSampleSeed = 0x65766131;  // "eva1"
EvalResult evaluate(nn::SequenceClassifier& model, const Dataset& data, int64_t batch_size, int64_t max_batches = 0);
// The same, split over the processes of an MPI job (world(), docs/distributed.md): each
// rank evaluates its contiguous share of the batches evaluate() would, the sums are
// all-reduced and every rank gets the whole result. A collective call; in a world of
// one process it is evaluate().
EvalResult evaluate_across_ranks(nn::SequenceClassifier& model, const Dataset& data, int64_t batch_size,
                                 int64_t max_batches = 0);

}  // namespace hkt::tasks
