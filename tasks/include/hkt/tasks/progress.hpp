// Progress of the library's long loops (generating ListOps, an evaluation): the
// loop counts its work with a Progress; the executable that owns the terminal
// installs, for as long as a ProgressSink lives, what to do with the lines
// (hkt-train redraws its bar, hkt-eval a line on stderr). Without a sink, or
// before a second has passed, nothing is shown: a short wait stays silent.
//
//   hkt::tasks::ProgressSink sink([](const std::string& s, bool done) { ... });
//   ...
//   hkt::tasks::Progress p("listops: generating", total);   // inside the loop's owner
//   for (...) p.set(done);                                 // cheap: a clock read
#pragma once
#include <chrono>
#include <cstdint>
#include <functional>
#include <string>

namespace hkt::tasks {

// line: "listops: generating 41,280 of 96,000 (43%), about 12 s left"; done: the loop
// ended (the sink clears what it drew).
using ProgressFn = std::function<void(const std::string& line, bool done)>;

// Installs fn as the current sink for its lifetime; the previous one comes back after.
class ProgressSink {
 public:
  explicit ProgressSink(ProgressFn fn);
  ~ProgressSink();
  ProgressSink(const ProgressSink&) = delete;
  ProgressSink& operator=(const ProgressSink&) = delete;

 private:
  ProgressFn prev_;
};

class Progress {
 public:
  Progress(std::string what, int64_t total);
  ~Progress();  // tells the sink the loop ended, when it showed anything
  Progress(const Progress&) = delete;
  Progress& operator=(const Progress&) = delete;
  void set(int64_t done);  // a line at most every 0.2 s, from 1 s after the start

 private:
  using Clock = std::chrono::steady_clock;
  std::string what_;
  int64_t total_;
  Clock::time_point start_, last_;
  bool shown_ = false;
};

// "41,280 of 96,000 (43%), about 12 s left" (the ETA from the rate so far).
std::string progress_line(const std::string& what, int64_t done, int64_t total, double elapsed_s);

}  // namespace hkt::tasks
