// Experiments: a grid of trainings (tasks x models x seeds) described by one
// JSON file, run one after another into one folder, and aggregated into a
// results table (mean +- std over seeds). hkt-experiment is the executable.
//
// The file (every key but "tasks", "models" and "seeds" is optional):
//   {
//     "name": "cpu",
//     "description": "what this protocol is for",
//     "notes": ["every reduction against the paper's protocol, one per line"],
//     "out_dir": "runs/cpu",                  // default runs/<name>
//     "baseline": "mha",                      // model whose time per step the others are divided by
//     "compare": [["hkt", "hkt-L1"]],         // more [model, reference] pairs for the margins table
//     "base":   { TrainConfig fields },       // applied first
//     "tasks":  { "listops": { TrainConfig fields, e.g. "task", "data": {...}, "steps" }, ... },
//     "models": { "hkt": { "model": "hkt-small" },
//                 "hkt-L1": { "model": "hkt-small", "model_overrides": { "levels": 1 } }, ... },
//     "seeds":  [1, 2, 3],
//     "order":  "seed"                         // training order: "seed" (default) or "task"
//   }
// A model entry may also hold "tasks": [task keys] (the model runs on those
// tasks only) and "seeds": [seeds] (its own seeds instead of the file's,
// e.g. an ablation trained once); neither is a TrainConfig field. Training
// order: "seed" trains every task and model of the first seed, then the next
// (a stop leaves whole seeds to compare); "task" finishes a task (seed by
// seed) before the next begins.
//
// Tuning: settings chosen by another experiment's runs, on validation accuracy.
//   "tuning": {"experiment": "cpu-fair-tune.json",          // relative to this file's folder
//              "fields": ["lr", "model_overrides.dropout"],   // what is taken over (this default)
//              "tasks": {"this task key": "its key there"}},  // default: the same key
// and in a model entry "tuned_as": "hkt": this model takes the fields from the
// run, among the tuning experiment's runs of family "hkt" on the same task
// (a model entry's "family", default its key; any seed), with the best
// validation accuracy (the first in the file's order on a tie). They apply
// after the model's own fields and before the task's "per_model". Until every
// such tuning run has finished, the runs that need them wait (ExperimentRun::
// waiting) and are not trained; hkt-experiment says so. "family", "tuned_as",
// "tasks" and "seeds" are not TrainConfig fields.
// A tuning that ran elsewhere (another machine, an earlier checkout whose run
// folders are gone) can be recorded in the file:
//   "tuning": {..., "recorded": {"listops-long": {"hkt": {"lr": 5e-4,
//              "model_overrides.dropout": 0.1, "run": "hkt-lr5e-4-d0.1", "best_val_acc": 0.3735}}}}
// keyed by the tuning experiment's task key and family, every tuned field
// required ("run" and "best_val_acc" optional, for the reader). While the
// tuning runs of that task and family are not all finished here, the record
// stands in for them; once they are, they choose, and a record that differs
// from their choice is an error (the grid would mix two settings).
// Shared runs: a model entry's "shared_with": "cpu-fair.json" (relative to
// this file's folder) says that this model's runs are that experiment's runs
// of the same task key, model key and seed, trained there: this file never
// trains them, takes their results from the other file's run folders, and
// says they wait until they have finished there. Each run's config must equal
// the other's but for run_dir (checked once both are resolved: an error names
// the first field that differs), so two protocols that share models (a fair
// test and a comparison with more peers) train them once. One level only: the
// other file may not share runs of its own. Not a TrainConfig field.
// A run's config is base, then the task's fields, then the model's fields,
// then the task's "per_model" fields for that model if any (e.g. a learning
// rate tuned per task and model: "listops": {..., "per_model": {"mha": {"lr":
// 5e-4}}}); objects such as "data" and "model_overrides" are merged key by
// key. Then "seed" and "run_dir" = out_dir/<task>/<model>/seed<seed>. A task entry
// without "task" uses its key as the task name. Configs are validated when
// the file is read (hkt::Error naming the run and the field).
#pragma once
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "hkt/tasks/train.hpp"

namespace hkt::tasks {

struct ExperimentRun {
  std::string task, model;  // keys of "tasks" and "models"
  std::string family;       // the model entry's "family" (default: its key), what "tuned_as" names
  uint64_t seed = 0;
  TrainConfig cfg;
  // Not empty while the tuning runs this run's settings come from are not all
  // finished ("tuned_as"), or while the experiment that trains it ("shared_with")
  // has not finished it: why the run waits. Such a run is not trained.
  std::string waiting;
  std::string shared_with;  // the experiment file that trains this run ("shared_with"), or empty
};

struct Experiment {
  std::string name, description, out_dir, baseline;
  std::vector<std::string> notes, tasks, models;  // keys in file order
  std::vector<uint64_t> seeds;
  std::string order = "seed";       // "seed" or "task"
  // With "tuning": one line per (task, family) saying which tuning run was chosen and why.
  std::vector<std::string> tuning_choices;
  // "launcher": the command each run is started under, e.g. ["mpirun", "-np", "2"] (data-parallel
  // training, docs/distributed.md): hkt-experiment then starts every run as `launcher... hkt-experiment
  // FILE --run ID`, in child processes even without --jobs. Empty: none.
  std::vector<std::string> launcher;
  std::vector<ExperimentRun> runs;  // tasks x models x seeds, in that order (a model's own tasks and seeds)
  // [model, reference] pairs whose test accuracies the results compare seed by
  // seed: every other model against the baseline, then the file's "compare".
  std::vector<std::pair<std::string, std::string>> comparisons;

  // Strict: unknown top-level keys are errors. out_dir_override replaces "out_dir".
  // base_dir: the folder "tuning"'s "experiment" path is relative to (from_file: the file's folder).
  static Experiment from_json(const std::string& text, const std::string& out_dir_override = "",
                              const std::string& base_dir = "");
  static Experiment from_file(const std::string& path, const std::string& out_dir_override = "");
};

// Where a run stands: finished (summary.json), started (config.json only:
// resume it), or not started.
enum class RunState { Done, Started, New };
RunState run_state(const std::string& run_dir);

// One finished run's summary.json.
struct RunSummary {
  bool done = false;
  int64_t steps = 0, params = 0, best_step = -1;
  double best_val_acc = -1, test_acc = -1, wall_s = 0, s_per_step = 0;
  int64_t test_examples = 0;  // 0 when the summary predates the field
  // Forward FLOPs of one training batch by the cost model (nn::model_flops of
  // the run's model at its batch size and T = the model's max_len); the
  // backward adds twice as much. 0 when the summary has no model_config.
  double flops_per_batch = 0;
  // Where the run trained ("cpu", "cuda:0"): its time per step compares only with runs on the same
  // kind of device. Summaries written before 2026-12-04 lack the field; every one of them trained on
  // the CPU (no run had trained on a GPU before then), so a missing field reads as "cpu".
  std::string device = "cpu";
};
RunSummary read_summary(const std::string& run_dir);

// The "step" of the last line of run_dir/metrics.jsonl that parses as a JSON
// object with an integer "step" (a line torn by a kill is skipped); -1 when
// there is none or the file is missing.
int64_t last_logged_step(const std::string& run_dir);

// Mean and sample standard deviation (n - 1; 0 for one value).
struct MeanStd {
  double mean = 0, std = 0;
  int64_t n = 0;
};
MeanStd mean_std(const std::vector<double>& x);

// The results table (markdown) of the finished runs: per task and model the
// seeds done, steps, best validation and test accuracy (mean +- std over
// seeds, in %) with the 95% binomial (Wilson) interval of the mean accuracy
// at one run's test-set size, parameters, forward GFLOPs of a training batch,
// time per step, its ratio to the baseline model on the same task, the ratio
// of their FLOPs per step (the cost model's expectation for the time ratio)
// and the summed wall time. Runs not finished are counted as missing.
//
// Then the comparisons (every model against the baseline, and the file's
// "compare" pairs; a pair whose runs have different numbers of steps is left
// out), paired by seed: the per-seed differences of test
// accuracy, with a 95% paired bootstrap interval over the test examples for
// each seed (from each run's test_predictions.csv); their mean with the 95%
// t interval over seeds; the bootstrap interval of the mean over seeds; and a
// verdict that follows the t interval (higher / lower when it excludes 0, not
// distinguishable when it holds 0; with one seed, the bootstrap interval,
// which says nothing about training randomness, and the verdict says so).
std::string results_markdown(const Experiment& e);
// The same numbers, one line per task and model (CSV with a header).
std::string results_csv(const Experiment& e);

}  // namespace hkt::tasks
