// Learning-rate schedules: a factor per optimizer step. An optimizer given one
// (Optimizer::set_schedule) applies factor(opt.steps()) at each step().
//
// `step` counts completed optimizer steps from 0. With W = warmup_steps,
// N = total_steps and m = min_factor:
//   step < W:        (step + 1) / W                 (linear warm-up; 1 at the last warm-up step)
//   Constant:        1 after the warm-up
//   WarmupCosine:    m + (1 - m) * (1 + cos(pi * p)) / 2,  p = (step - W) / (N - W), for W <= step < N
//   WarmupLinear:    m + (1 - m) * (1 - p),                same p
//   step >= N:       m                              (decaying kinds: constant after the end)
// Constraints (checked by factor() and the helpers; hkt::Error otherwise):
// W >= 0; m in [0, 1]; for the decaying kinds N >= 1 and W <= N; Constant
// ignores N and m.
#pragma once
#include <cstdint>
#include <string>

namespace hkt::nn {

struct LRSchedule {
  enum class Kind { Constant, WarmupCosine, WarmupLinear };
  Kind kind = Kind::Constant;
  int64_t warmup_steps = 0;
  int64_t total_steps = 0;
  double min_factor = 0.0;

  // The factor for the update with 0-based index `step` (>= 0).
  double factor(int64_t step) const;
  // Throws hkt::Error naming the first invalid field.
  void validate() const;

  static LRSchedule constant(int64_t warmup_steps = 0);
  static LRSchedule warmup_cosine(int64_t warmup_steps, int64_t total_steps, double min_factor = 0.0);
  static LRSchedule warmup_linear(int64_t warmup_steps, int64_t total_steps, double min_factor = 0.0);

  // "constant", "cosine" or "linear", optionally followed by ':' and
  // comma-separated key=value pairs among warmup, total, min, e.g.
  // "cosine:warmup=100,total=5000,min=0.1". The result is validated.
  static LRSchedule parse(const std::string& text);
  // The same format (fields the kind ignores are left out).
  std::string str() const;

  bool operator==(const LRSchedule&) const = default;
};

}  // namespace hkt::nn
