// A run folder's fused-attention kernels on a CUDA device. With
// --cuda-autotune, the tuner picks a kernel per call shape by timing them
// (hkt::cuda_attention_autotune; docs/cuda.md, "Choosing the kernel"), and
// RUN_DIR/attention_kernels.json keeps its picks, so that a resumed run and an
// evaluation of the run (hkt-eval --device cuda) run the same kernels, and
// give the same bits, without timing anything again.
//
//   RunAttentionKernels k(run_dir, Device::cuda(), KernelsUse::evaluate);
//   evaluate(model, data, batch_size);  // the run's kernels for the run's shapes
#pragma once
#include <iosfwd>
#include <optional>
#include <string>

#include "hkt/core/dtype.hpp"  // Device
#include "hkt/kernels/cuda.hpp"

namespace hkt::tasks {

inline constexpr const char* kAttentionKernelsFile = "attention_kernels.json";

enum class KernelsUse {
  train,     // a fresh run: with `tune`, the tuner on and the file written as decisions are made
  resume,    // the file read when there is one, then kept up to date as for train
  evaluate,  // the file read when there is one; never written
};

// While it lives, on a CUDA device with a run folder: the decisions the file
// holds (when read) are preset, and the tuner is on when they were read or
// `tune` is set, so that calls of those shapes run the kernels named and other
// shapes are tuned. When it ends, the tuner's setting is what it was before
// (the decisions stay: the process runs those kernels whenever it tunes).
// Nothing on the CPU. Without a folder, `tune` turns the tuner on only.
// Throws InputError (train.hpp) naming the file when it cannot be read or is
// not a decisions file; nothing is changed then.
class RunAttentionKernels {
 public:
  RunAttentionKernels(const std::string& run_dir, Device device, KernelsUse use, bool tune = false);
  ~RunAttentionKernels();
  RunAttentionKernels(const RunAttentionKernels&) = delete;
  RunAttentionKernels& operator=(const RunAttentionKernels&) = delete;

  bool read() const { return read_; }  // the folder's file was read

 private:
  std::optional<CudaAttentionAutotuneScope> tuner_;
  bool read_ = false;
  bool listening_ = false;
};

// One line per attention kernel the tuner chose or a run folder named
// ("attention kernel (autotuned): CALL: KERNEL", with " (saved in the run
// folder)" for the latter); nothing when there is none.
void print_attention_kernels(std::ostream& os);

}  // namespace hkt::tasks
