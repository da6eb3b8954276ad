// The fused attention's kernel variants by name, and the autotuner that picks
// one per shape by running them all (HKT_CUDA_ATTN_AUTOTUNE=1, or
// hkt::cuda_attention_autotune: docs/cuda.md, "Choosing the kernel"), as
// cuDNN's benchmark mode does for convolutions. Every candidate's results are
// compared with the reference kernel's on the call's own inputs before it is
// timed, so a variant that is wrong on some device or shape is never chosen.
// Plain C++ (attention_tune.cu); device pointers.
#pragma once
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

namespace hkt::cuda {

// The values of the knobs HKT_CUDA_ATTN_FWD and HKT_CUDA_ATTN_BWD (general:
// the default kernels of attention.cu; general-regs: the general backward
// with its accumulators in registers, also HKT_CUDA_ATTN_BWD_ACC=regs; the
// others are tools/cuda-lab's, attention_variants.hpp).
enum class FwdKernel { general, mma, mma_async, mma_lean, wgmma, wgmma2 };
enum class BwdKernel { general, general_regs, mma, fused, fused8, fused8_async, wgmma };
inline constexpr int kFwdKernels = 6, kBwdKernels = 7;
const char* kernel_name(FwdKernel k);
const char* kernel_name(BwdKernel k);
// The kernel a knob names; `set` tells whether the variable is set at all.
// Throws hkt::Error naming the variable and the accepted values for any other value.
FwdKernel fwd_kernel_knob(bool* set);
BwdKernel bwd_kernel_knob(bool* set);

// What makes two calls the same to the tuner: the pass, the shape, and what
// decides which kernels can take the call.
struct TuneKey {
  bool backward = false;
  int64_t B = 0, H = 0, T = 0, dh = 0, L = 0;
  bool causal = false, masked = false;
  bool aligned = false;  // every row 16-byte aligned (the mma kernels' condition)
  unsigned want = 0;     // backward: the gradients asked for, bit b for kTuneGradNames[b]
  auto operator<=>(const TuneKey&) const = default;
};
inline constexpr const char* kTuneGradNames[4] = {"dq", "dk", "dv", "dlambda"};
std::string describe(const TuneKey& key);  // "backward B=16 H=8 T=1024 dh=64 L=3 causal ..."

struct TuneTrial {
  std::string kernel;
  double ms = -1;         // its best time; -1 when it was not timed
  double rel_error = 0;   // largest of max|out - ref| / max|ref| over its outputs
  std::string outcome;    // "chosen", "slower", "not applicable", "wrong results", "failed: ..."
};
struct TuneResult {
  TuneKey key;
  std::string chosen;
  std::vector<TuneTrial> trials;  // candidate order; the first is the reference
  bool preset = false;            // set by set_attention_decision, not tuned here (no trials)
};

// A float buffer on the device that every candidate writes in full.
struct TuneOutput {
  const float* data;
  int64_t n;
};

// Whether the tuner may try kernel `name`: not when HKT_CUDA_ATTN_AUTOTUNE_SKIP
// (a comma-separated list of kernel names, e.g. "wgmma,wgmma2") names it, for
// a kernel that faults on some device. "general" is never skipped (it is the
// reference); a name that is no kernel's throws, listing the names.
bool autotune_may_try(const std::string& name);

// 0 off (the default), 1 on, 2 on and a line per decision on stderr. The mode
// set by set_attention_autotune (>= 0) wins over HKT_CUDA_ATTN_AUTOTUNE
// (0, 1 or verbose; anything else throws); -1 goes back to the variable.
int attention_autotune_mode();
void set_attention_autotune(int mode);
// What set_attention_autotune last set (-1: the variable decides), so that a
// scope that sets the mode can restore the one before it.
int attention_autotune_setting();
// Every decision so far, in the order they were made.
std::vector<TuneResult> attention_autotune_results();
void clear_attention_autotune();
// Decides `key` without trials (a decision an earlier process saved): its
// calls run `kernel` from now on, unless the kernel is not among a call's
// candidates (another build), which is then tuned. Replaces a decision made.
void set_attention_decision(const TuneKey& key, const std::string& kernel);
// The kernel decided for `key` ("" when none is).
std::string attention_decision(const TuneKey& key);
// Called after each new decision of the tuner (outside its lock), e.g. to
// save the decisions; an empty function removes it.
void set_attention_autotune_listener(std::function<void()> f);

// Relative tolerance against the reference: the accuracy every kernel is
// tested to against the CPU (docs/cuda.md).
constexpr double kTuneRelTol = 1e-4;

// The index among `names` (every candidate of the pass, the reference
// first) of the kernel to use for `key`. A decided key returns its kernel's
// index at once, running nothing and calling neither `run` nor `outputs`,
// unless HKT_CUDA_ATTN_AUTOTUNE_SKIP names that kernel or `names` lacks it (a
// decision preset by another build): such a key is tuned again, as a new one
// is. Tuning runs candidate 0 (the reference: it must take the call, and is
// never skipped), keeps its outputs, then runs every other candidate i that
// the skip variable does not name: run(i) returns false when i cannot take
// the call; otherwise its outputs must match the reference's within
// kTuneRelTol (an exact match for non-finite values), and a candidate that
// throws hkt::Error is passed over. The matching ones are timed (best of 2
// runs after the checked one) and the fastest is cached. The outputs hold
// whatever ran last: the caller runs the chosen kernel.
int autotune(const TuneKey& key, const std::vector<std::string>& names, const std::function<bool(int)>& run,
             const std::function<std::vector<TuneOutput>()>& outputs);

}  // namespace hkt::cuda
