#include "hkt/tasks/progress.hpp"

#include <cmath>
#include <cstdio>
#include <utility>

namespace hkt::tasks {

namespace {

ProgressFn& current() {
  static ProgressFn fn;
  return fn;
}

std::string grouped(int64_t v) {
  std::string s = std::to_string(v < 0 ? -v : v), out;
  for (size_t i = 0; i < s.size(); ++i) {
    if (i > 0 && (s.size() - i) % 3 == 0) out += ',';
    out += s[i];
  }
  return v < 0 ? "-" + out : out;
}

}  // namespace

ProgressSink::ProgressSink(ProgressFn fn) : prev_(std::exchange(current(), std::move(fn))) {}
ProgressSink::~ProgressSink() { current() = std::move(prev_); }

std::string progress_line(const std::string& what, int64_t done, int64_t total, double elapsed_s) {
  const double f = total > 0 ? static_cast<double>(done) / static_cast<double>(total) : 0.0;
  std::string s = what + " " + grouped(done) + " of " + grouped(total) + " (" +
                  std::to_string(static_cast<int>(std::floor(100.0 * f))) + "%)";
  if (done > 0 && done < total && elapsed_s > 0) {
    const double left = elapsed_s * (1.0 - f) / f;
    char buf[64];
    if (left >= 120) std::snprintf(buf, sizeof buf, ", about %.0f min left", left / 60.0);
    else std::snprintf(buf, sizeof buf, ", about %.0f s left", std::ceil(left));
    s += buf;
  }
  return s;
}

Progress::Progress(std::string what, int64_t total)
    : what_(std::move(what)), total_(total), start_(Clock::now()), last_(start_) {}

Progress::~Progress() {
  if (shown_ && current()) current()(progress_line(what_, total_, total_, 0), true);
}

void Progress::set(int64_t done) {
  if (!current()) return;
  const auto now = Clock::now();
  if (now - start_ < std::chrono::seconds(1) || now - last_ < std::chrono::milliseconds(200)) return;
  last_ = now;
  shown_ = true;
  current()(progress_line(what_, done, total_, std::chrono::duration<double>(now - start_).count()), false);
}

}  // namespace hkt::tasks
