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
//
// Work per op: hkt::apply counts the bytes an op reads and writes (its inputs
// and new outputs; a view moves none), autograd those of a backward node that
// runs kernels of its own (gradients in and out), and ops whose arithmetic is
// products count their FLOPs (matmul 2 m n k; the attention kinds their score
// and value products, a backward twice its forward, as nn::model_flops counts
// a training step). The table gives each op's GFLOP/s and GB/s on its self
// time: products against the machine's sgemm, the rest against its memory.
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
  double flops = 0;    // counted by the op (count()), summed over calls
  double bytes = 0;    // read and written, summed over calls
};
// Everything recorded, largest self time first.
std::vector<Entry> entries();
// A markdown table of the `top` entries by self time (0: all), with each
// one's share of the summed self time, and a last line for the rest.
std::string table(size_t top = 25);

// Adds work to the innermost open scope on this thread (nothing when the
// profiler is off or no scope is open): an op's forward or backward calls it
// with the FLOPs of its products.
void count(double flops, double bytes = 0);

// Times a region while alive (nothing when the profiler is off). kind: "fwd",
// "bwd", "region"; name must outlive the scope (a literal, an op's name()).
class Scope {
 public:
  Scope(const char* kind, const char* name);
  explicit Scope(const char* name) : Scope("region", name) {}
  ~Scope();
  bool on() const { return on_; }
  // Whether an inner scope (an op called from this one) has closed.
  bool had_children() const { return child_ > 0; }
  Scope(const Scope&) = delete;
  Scope& operator=(const Scope&) = delete;

 private:
  const char* kind_;
  const char* name_;
  bool on_;
  double start_ = 0, child_ = 0, flops_ = 0, bytes_ = 0;
  friend void count(double, double);
  Scope* parent_ = nullptr;
};

}  // namespace hkt::profiler
