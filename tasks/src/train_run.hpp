// The training run behind train() and resume() (train.hpp), internal to
// tasks/src. Its parts, each a small type in its own files, and who owns what:
//
//   Run          train_run.hpp, train.cpp: the run itself. It owns the config, the
//                RunOptions, the data, the TrainState, the RunClock and the RunFolder;
//                setup() loads the data and builds the model and its optimizer (which
//                owns the learning-rate schedule, models/optim.hpp); go() makes the
//                parts below for one segment, runs the loop and ends the run (the
//                test score, summary.json). run_finished.cpp: resume() of a finished
//                run; run_summary.cpp: data.json and summary.json.
//   TrainState   train_state.hpp: model, optimizer, step, total, best model so far:
//   RunClock     what a checkpoint holds, and the run's time.
//   TrainLoop    train_loop.hpp/.cpp: data order, one train_step() (train_step.cpp:
//                forward, loss, backward, clipping, the optimizer step) per batch, when
//                to log, evaluate and checkpoint, stop signals and non-finite values.
//                Owns the epoch's data order and the data-parallel part of a step.
//   Evaluator    evaluation.hpp/.cpp: the validation evaluations, best.safetensors,
//                the test score of the best model; evaluate() itself.
//   Checkpoints  checkpoints.hpp/.cpp: checkpoint/ written whole or not at all, and
//                --resume's restore from it.
//   RunFolder    run_folder.hpp, run_files.cpp: the folder's lock, an earlier run
//                refused or moved aside, config.json, metrics.jsonl; run_folder.cpp:
//                the rules a run folder follows (which checkpoint to resume from, ...).
//   Console      console.hpp/.cpp: what a run prints, the progress bar, number formats.
//
// The parts hold references to what the Run owns and never outlive one go().
// train_config.cpp: TrainConfig and its JSON.
#pragma once
#include <cstdint>
#include <filesystem>
#include <string>

#include "hkt/tasks/dataset.hpp"
#include "hkt/tasks/memory.hpp"
#include "hkt/tasks/train.hpp"
#include "checkpoints.hpp"
#include "console.hpp"
#include "evaluation.hpp"
#include "run_folder.hpp"
#include "train_state.hpp"
#include "train_step.hpp"

namespace hkt::tasks::detail {

// --- train_config.cpp -------------------------------------------------------------

inline constexpr const char* kCfg = "TrainConfig: ";
json config_json(const TrainConfig& c);
json parse_json(const std::string& text, const std::string& what);

// --- the run ----------------------------------------------------------------------

class Run {
 public:
  // lengthened: resume() with RunOptions::steps / epochs (cfg holds the new length).
  Run(const TrainConfig& cfg, const RunOptions& ropt, const std::filesystem::path& dir, bool lengthened)
      : cfg_(cfg), ropt_(ropt), folder_(dir, ropt.overwrite), lengthened_(lengthened) {}
  // The run: train() (resuming false) or resume() (true).
  TrainResult go(bool resuming);

 private:
  // train.cpp
  void setup();
  void check_memory_before_data() const;
  void build_model(Device d);  // mcfg's model with its initial values (Generator(seed)) on d, and its optimizer
  StepMemory on_host(StepMemory m) const;
  void announce(Console& con, double data_s) const;
  TrainResult finish(Console& con, Evaluator& eval, const DataParallel& dp, TrainResult r);
  // run_finished.cpp: resume() of a finished run checks its checkpoint and returns its summary
  // without loading the data (true), else leaves the run as it was (false).
  bool finished_already(Console& con, Checkpoints& ck, TrainResult& out);
  // run_summary.cpp
  void describe_data(Console& con) const;
  void write_summary(const TrainResult& r, const DataParallel& dp) const;

  TrainConfig cfg_;
  RunOptions ropt_;
  RunFolder folder_;
  Splits data_;
  StepMemory mem_estimate_;  // of a step with the data set (setup(); summary.json)
  TrainState st_;
  RunClock clock_;
  bool lengthened_;
};

}  // namespace hkt::tasks::detail
