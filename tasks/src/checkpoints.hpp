// The checkpoints of a training run (checkpoints.cpp): written so that a kill
// never leaves a partial one, and restored by --resume. Internal to tasks/src.
#pragma once
#include <cstdint>
#include <filesystem>

#include "hkt/models/checkpoint.hpp"
#include "hkt/tasks/train.hpp"
#include "console.hpp"
#include "run_folder.hpp"
#include "train_state.hpp"

namespace hkt::tasks::detail {

// checkpoint/ of the run folder: the run's TrainState (the model, the optimizer,
// the step, the best model so far; the schedule is the config's and is not
// saved) and its clock (state.json). It reads the state and the clock it saves
// and writes those it restores; the run owns them.
class Checkpoints {
 public:
  Checkpoints(const TrainConfig& cfg, TrainState& st, RunClock& clock, RunFolder& folder)
      : cfg_(cfg), st_(st), clock_(clock), folder_(folder) {}

  // A checkpoint of the step reached (after checking that the ranks agree), written to
  // checkpoint.tmp/ and renamed into place. drop_replaced: the run --overwrite moved aside
  // goes (a checkpoint the run reached by itself, not the one a stop writes).
  void save(bool drop_replaced = true);
  // After SIGINT / SIGTERM: with one process, a checkpoint of the step reached unless it has
  // one, or replaces a parked run (--overwrite) and has not reached its first checkpoint (the
  // parked run stays the folder's last good state). Whether one was written.
  bool save_at_stop();
  // --resume: model, optimizer, generator and the loop's state from the last checkpoint (none:
  // from step 0); the events after it leave metrics.jsonl.
  void restore(Console& con);
  // restore_from(ck) and check_best(): a damaged, missing or inconsistent checkpoint or best
  // model is bad input (InputError, exit status 2), never a reason to start again from step 0.
  void restore_checked(const std::filesystem::path& ck);
  // As if nothing had been restored.
  void forget() { saved_step_ = -1; }

 private:
  void restore_from(const std::filesystem::path& ck);
  void check_best() const;
  nn::Metadata metadata() const;

  const TrainConfig& cfg_;
  TrainState& st_;
  RunClock& clock_;
  RunFolder& folder_;
  int64_t saved_step_ = -1;  // the step of the checkpoint in the folder (-1: none yet)
};

// Every rank must hold the same weights (docs/distributed.md, "Checks"): compared
// before each checkpoint, after resuming, every kChecksumEvery steps and at the end;
// Error when they differ.
inline constexpr int64_t kChecksumEvery = 50;
void check_ranks_agree(const TrainState& st, const RunFolder& folder, const char* when);

}  // namespace hkt::tasks::detail
