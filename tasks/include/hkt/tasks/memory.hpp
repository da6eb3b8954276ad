// The peak memory of a training or evaluation step, estimated before anything
// is built, and the machine's available memory: a run whose step cannot fit
// is refused with both figures instead of being killed part way.
//
//   const StepMemory m = estimate_step_memory(model_cfg, batch, T, examples, bytes_per_example, true);
//   check_memory(m, 0, "train");  // throws when m.total() > MemAvailable
#pragma once
#include <cstdint>
#include <string>

#include "hkt/models/classifier.hpp"

namespace hkt::tasks {

// Bytes, by part (doubles: the estimate of an absurd config must not overflow).
struct StepMemory {
  double weights = 0;      // the parameters
  double optimizer = 0;    // training: gradients and AdamW's two moments
  double activations = 0;  // per-token values of every layer (kept for the backward pass when training)
  double attention = 0;    // the attention kind's own working set (no kind keeps a T x T map)
  double data = 0;         // the data set in memory (examples x bytes_per_example)
  double runtime = 0;      // the process itself (code, libraries, threads): 17 MiB, or its RSS before any data
  double total() const { return weights + optimizer + activations + attention + data + runtime; }
  std::string str() const;  // "12.3 GiB (weights 1.0 GiB, optimizer ..., ..., data ...)"
};

// An estimate for batches of `batch` sequences of length T, from per-token costs
// measured against the peak RSS of training steps (memory.cpp; within 1.0-1.5x of the
// measured peak on the tested grid, never below it). training = false: a forward
// pass without gradients (evaluation), only one layer's values alive at once, fitted
// against hkt-eval's peak RSS the same way.
StepMemory estimate_step_memory(const nn::ClassifierConfig& cfg, int64_t batch, int64_t T, int64_t examples,
                                int64_t bytes_per_example, bool training);

// MemAvailable of /proc/meminfo in bytes; 0 when it cannot be read.
double available_memory();

// What the address-space limit (RLIMIT_AS, ulimit -v) leaves for a step: the
// limit less this process's mappings (VmSize) and a reserve for the work buffers
// OpenBLAS maps per thread and oneTBB's stacks; 0 when there is no limit.
double address_space_left();
// The resident set size of this process now (VmRSS of /proc/self/status), in
// bytes; 0 when it cannot be read.
double resident_now();
// resident_now() as it was the first time this was called (the estimate's first
// call, before a data set is read or a model built): the process's own share of
// every step's memory, its code and libraries.
double process_baseline();
// The peak resident set size of this process so far, in bytes (getrusage).
double peak_rss();

// Throws hkt::Error("<who>: a step needs about X ... but Y is available ...")
// when m.total() exceeds address_space_left() (ulimit -v; always checked), or
// when m.total() exceeds `limit` bytes (limit <= 0: available_memory(); no
// check when that is unknown). The message names the override.
void check_memory(const StepMemory& m, double limit, const std::string& who);

}  // namespace hkt::tasks
