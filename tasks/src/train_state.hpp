// What the parts of a training run (train_run.hpp) share: the state a
// checkpoint holds, and the run's clock. Internal to tasks/src.
#pragma once
#include <chrono>
#include <cstdint>
#include <memory>

#include "hkt/models/classifier.hpp"
#include "hkt/models/optim.hpp"

namespace hkt::tasks::detail {

using Clock = std::chrono::steady_clock;

// The model, its optimizer (which owns the learning-rate schedule of a run of
// `total` steps), where the loop is and the best model so far: what a
// checkpoint saves and restores (checkpoints.hpp). The run owns it; the loop
// steps it, the evaluator records the best model in it.
struct TrainState {
  nn::ClassifierConfig mcfg;
  std::unique_ptr<nn::SequenceClassifier> model;
  std::unique_ptr<nn::AdamW> opt;
  int64_t step = 0;                           // completed steps
  int64_t total = 0, per_epoch = 0;           // steps of the run, of an epoch
  int64_t best_step = -1;                     // of best.safetensors (-1: no evaluation yet)
  double best_val = -1.0, final_val = -1.0;   // validation accuracy: of the best model, of the last evaluation
};

// The run's time: the earlier segments' (a resumed run's, from its checkpoint) and this one's.
struct RunClock {
  double prior_wall = 0.0, prior_train = 0.0;  // from earlier segments
  double seg_train = 0.0;                      // this segment's steps
  Clock::time_point seg_start = Clock::now();

  // Elapsed time of the run, evaluations and checkpoints included.
  double wall() const { return prior_wall + std::chrono::duration<double>(Clock::now() - seg_start).count(); }
  // The steps' time alone.
  double train_s() const { return prior_train + seg_train; }
};

}  // namespace hkt::tasks::detail
