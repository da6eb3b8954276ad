// The training loop (train_loop.cpp): data order, one train_step() per batch,
// when to log, evaluate and checkpoint, and how a run stops. Internal to tasks/src.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "hkt/tasks/dataset.hpp"
#include "hkt/tasks/train.hpp"
#include "checkpoints.hpp"
#include "console.hpp"
#include "evaluation.hpp"
#include "run_folder.hpp"
#include "train_state.hpp"
#include "train_step.hpp"

namespace hkt::tasks::detail {

// Steps the run's TrainState from its step to its total (or to RunOptions::stop_after),
// evaluating and checkpointing on the way, and times the steps in the run's clock. It
// owns the data-parallel part of a step (DataParallel: the gradient reducer, the time
// spent in all-reduces) and the epoch's data order; the state, the clock and the folder are the run's.
class TrainLoop {
 public:
  TrainLoop(const TrainConfig& cfg, const RunOptions& ropt, const Dataset& train, TrainState& st, RunClock& clock,
            RunFolder& folder);
  // The steps of this segment: completed, or stopped by RunOptions::stop_after. A stop
  // signal checkpoints the step reached (Checkpoints::save_at_stop) and throws Stopped.
  TrainResult run(Console& con, Evaluator& eval, Checkpoints& ck);
  const DataParallel& data_parallel() const { return dp_; }

 private:
  Batch next_batch(int64_t& n);
  void evaluate_and_save(Console& con, Evaluator& eval, Checkpoints& ck) const;
  [[noreturn]] void stop(Console& con, Checkpoints& ck);
  void report(Console& con, Window& win, double lr, int64_t seg_steps);
  [[noreturn]] void non_finite(const std::string& what, double v);

  const TrainConfig& cfg_;
  const RunOptions& ropt_;
  const Dataset& train_;
  TrainState& st_;
  RunClock& clock_;
  RunFolder& folder_;
  DataParallel dp_;  // several ranks: this rank's share of each batch, the gradient reducer
  std::vector<int64_t> order_;  // the training set's order in epoch order_epoch_ (epoch_order)
  int64_t order_epoch_ = -1;
};

}  // namespace hkt::tasks::detail
