// The op profiler: wall time per op, forward and backward, with calls, total
// (inclusive) and self (exclusive of the ops it called) time.
//
//   HKT_PROFILE=1 build/bin/hkt-train ...   # table on stderr at exit
//
// or in code:
//
//   hkt::profiler::enable();
//   ... forward, backward, optimizer step ...
//   std::cout << hkt::profiler::table();
//
// Every op (everything that goes through hkt::apply) is recorded as
// "fwd <name>" and its backward node as "bwd <name>"; a backward written with
// differentiable ops shows those ops under their own names, and its "bwd"
// entry keeps only the time spent in its own kernels (self time). Regions of
// your own (an optimizer step, data loading) are timed with a Scope.
//
// Times are wall-clock on the calling thread: a CPU kernel's time includes its
// parallel loop, so comparing a run at 1 thread with one at N shows which ops
// do not scale. CUDA kernels are asynchronous: their time lands on whichever
// later op waits for the device (a copy to the host), unless you synchronise.
// Off by default; when off, the cost per op is one relaxed atomic load.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

namespace hkt::profiler {

// On or off (on at start-up when the environment has HKT_PROFILE set to
// anything but "" or "0"; the table is then printed to stderr at exit).
void enable(bool on = true);
bool enabled();
// Forgets what was recorded.
void reset();

struct Entry {
  std::string name;  // "fwd matmul", "bwd softmax", "region <name>"
  int64_t calls = 0;
  double total_s = 0;  // inclusive
  double self_s = 0;   // minus the time of scopes opened inside it
};
// Everything recorded, largest self time first.
std::vector<Entry> entries();
// A markdown table of the `top` entries by self time (0: all), with each
// one's share of the summed self time, and a last line for the rest.
std::string table(size_t top = 25);

// Times a region while alive (nothing when the profiler is off). kind: "fwd",
// "bwd", "region"; name must outlive the scope (a literal, an op's name()).
class Scope {
 public:
  Scope(const char* kind, const char* name);
  explicit Scope(const char* name) : Scope("region", name) {}
  ~Scope();
  Scope(const Scope&) = delete;
  Scope& operator=(const Scope&) = delete;

 private:
  const char* kind_;
  const char* name_;
  bool on_;
  double start_ = 0, child_ = 0;
  Scope* parent_ = nullptr;
};

}  // namespace hkt::profiler
