// hkt-experiment's progress over a grid: runs trained so far and the ETA of the rest, from
// the mean wall time of the runs this invocation trained (runs side by side with --jobs N
// finish N at a time).
#pragma once
#include <chrono>
#include <cmath>
#include <cstddef>
#include <cstdio>
#include <string>

namespace hkt::apps {

class GridProgress {
 public:
  GridProgress(size_t to_train, int jobs) : to_train_(to_train), jobs_(jobs < 1 ? 1 : jobs) {}
  // One run ended (finished or failed) after `seconds`.
  void ended(double seconds) {
    ++ended_;
    seconds_ += seconds;
  }
  // "2/6 runs ended, about 4m10s left for the grid" (no estimate before the first run ends).
  std::string str() const {
    std::string s = std::to_string(ended_) + "/" + std::to_string(to_train_) + " runs ended";
    if (ended_ == 0 || ended_ >= to_train_) return s;
    const double left = seconds_ / static_cast<double>(ended_) * static_cast<double>(to_train_ - ended_) / jobs_;
    return s + ", about " + duration(left) + " left for the grid";
  }
  static std::string duration(double s) {
    const long t = std::lround(s);
    char buf[64];
    if (t >= 3600) std::snprintf(buf, sizeof buf, "%ldh%02ldm", t / 3600, t / 60 % 60);
    else std::snprintf(buf, sizeof buf, "%ldm%02lds", t / 60, t % 60);
    return buf;
  }

 private:
  size_t to_train_, ended_ = 0;
  int jobs_;
  double seconds_ = 0;
};

// Seconds since `t0`.
inline double seconds_since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

}  // namespace hkt::apps
