// What a training run prints (console.hpp): lines, the progress bar redrawn
// in place on a terminal, the log line of a window of steps, number formats.
#include <unistd.h>

#include <cmath>
#include <cstdio>
#include <iostream>
#include <sstream>

#include "console.hpp"

namespace hkt::tasks::detail {

std::string fmt(double v, int prec) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.*f", prec, v);
  return buf;
}
std::string short_num(double v) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.3g", v);
  return buf;
}
std::string exact(double v) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.17g", v);
  return buf;
}
std::string duration(double s) {
  if (!std::isfinite(s) || s < 0) return "?";
  const auto t = static_cast<int64_t>(s + 0.5);
  char buf[64];
  if (t >= 3600) std::snprintf(buf, sizeof buf, "%lldh%02lldm", static_cast<long long>(t / 3600),
                               static_cast<long long>(t / 60 % 60));
  else std::snprintf(buf, sizeof buf, "%lldm%02llds", static_cast<long long>(t / 60), static_cast<long long>(t % 60));
  return buf;
}

Console::Console(const RunOptions& opt) : quiet_(opt.quiet), os_(opt.out ? *opt.out : std::cout) {
  tty_ = !quiet_ && &os_ == &std::cout && isatty(STDOUT_FILENO);
}

void Console::line(const std::string& s) {
  if (quiet_) return;
  if (bar_shown_) os_ << "\r\033[K";
  os_ << s << "\n" << std::flush;
  bar_shown_ = false;
}

void Console::bar(const std::string& s, bool force) {
  if (!tty_) return;
  const auto now = Clock::now();
  if (!force && bar_shown_ && now - last_ < std::chrono::milliseconds(100)) return;
  last_ = now;
  os_ << "\r\033[K" << s << std::flush;
  bar_shown_ = true;
}

void Console::end_bar() {
  if (bar_shown_) os_ << "\n" << std::flush;
  bar_shown_ = false;
}

// The speed of a window of steps, readable at any pace: examples per second with three
// significant digits, and the seconds per step too when a step takes a second or more
// (a bar that said "0 ex/s" for slow steps said nothing).
std::string speed(const Window& w, double eps) {
  const double per_step = w.steps > 0 ? w.time / static_cast<double>(w.steps) : 0.0;
  std::string s = (eps >= 100 ? fmt(eps, 0) : short_num(eps)) + " ex/s";
  if (per_step >= 1.0) s = fmt(per_step, per_step >= 10 ? 0 : 1) + " s/step, " + s;
  return s;
}

std::string progress_bar(int64_t step, int64_t total, int64_t per_epoch, const Window& w, double eps, double eta) {
  const int64_t width = 24, fill = width * step / total;
  std::ostringstream bar;
  bar << '[';
  for (int64_t i = 0; i < width; ++i) bar << (i < fill ? '#' : '.');
  bar << "] step " << step << '/' << total << " ep " << step / per_epoch << " loss " << fmt(w.mean_loss())
      << " acc " << fmt(w.accuracy(), 3) << ' ' << speed(w, eps) << " ETA " << duration(eta);
  return bar.str();
}

std::string log_line(int64_t step, int64_t total, int64_t per_epoch, const Window& w, double lr, double eps,
                     double eta) {
  return "step " + std::to_string(step) + "/" + std::to_string(total) + "  epoch " +
         std::to_string((step - 1) / per_epoch) + "  loss " + fmt(w.mean_loss()) + "  acc " + fmt(w.accuracy()) +
         "  lr " + short_num(lr) + "  " + speed(w, eps) + "  ETA " + duration(eta);
}

}  // namespace hkt::tasks::detail
