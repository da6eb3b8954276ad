// The lab's autotuner of the fused attention (docs/cuda.md, "The lab"): the
// first float32 call of each shape (and pass, mask, gradients asked for) runs
// every kernel the program has (the library's general kernels and the lab's
// installed variants), compares each one's results with the general kernel's
// on the call's own inputs (kTuneRelTol), times the ones that match and keeps
// the fastest for the later calls, as cuDNN's benchmark mode does. On with
// HKT_CUDA_ATTN_AUTOTUNE=1 (or verbose: a line per decision on stderr) or
// set_attention_autotune; HKT_CUDA_ATTN_FWD / _BWD, when set, win over it.
// install_lab_variants() (variants.cpp) installs it into the library
// (attention_variants.hpp: choose_forward / choose_backward).
// Plain C++ (attention_tune.cu); device pointers.
#pragma once
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "kernels/cuda/attention_variants.hpp"

namespace hkt::cuda {

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

// The library's chooser hooks (AttnForwardChooser, AttnBackwardChooser): with
// the tuner on, autotune() over general and every installed variant (the
// reference first); with it off, general.
FwdKernel tuned_forward(const AttnShape& s, const std::vector<const void*>& q, const std::vector<const void*>& k,
                        const void* v, const void* lambda, const bool* valid, float* o, float* lse);
BwdKernel tuned_backward(const AttnShape& s, const std::vector<const void*>& q, const std::vector<const void*>& k,
                         const void* v, const void* lambda, const bool* valid, const float* o, const float* lse,
                         const float* dout, const std::vector<void*>& dq, const std::vector<void*>& dk, float* dv,
                         float* dlambda);

}  // namespace hkt::cuda
