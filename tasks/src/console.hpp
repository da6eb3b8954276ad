// What a training run prints (console.cpp): lines, the progress bar redrawn in
// place on a terminal, the log line of a window of steps, number formats.
// Internal to tasks/src.
#pragma once
#include <cstdint>
#include <iosfwd>
#include <string>

#include "hkt/tasks/train.hpp"
#include "train_state.hpp"
#include "train_step.hpp"

namespace hkt::tasks::detail {

std::string fmt(double v, int prec = 4);
std::string short_num(double v);
std::string exact(double v);  // round-trips a double through text
std::string duration(double s);

// The run's console: lines, and on a terminal a progress bar redrawn in place.
// Quiet (RunOptions::quiet, and every rank but 0): nothing is printed.
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

}  // namespace hkt::tasks::detail
