#include "hkt/tasks/memory.hpp"

#include <sys/resource.h>

#include <algorithm>
#include <cstdio>
#include <fstream>
#include <sstream>

#include "hkt/core/error.hpp"
#include "hkt/models/efficient_attention.hpp"
#include "hkt/ops/threads.hpp"

namespace hkt::tasks {

namespace {

std::string gib(double b) {
  char buf[64];
  if (b >= 1024.0 * 1024 * 1024) std::snprintf(buf, sizeof buf, "%.2f GiB", b / (1024.0 * 1024 * 1024));
  else std::snprintf(buf, sizeof buf, "%.1f MiB", b / (1024.0 * 1024));
  return buf;
}

}  // namespace

std::string StepMemory::str() const {
  return str_cat(gib(total()), " (weights ", gib(weights), ", optimizer ", gib(optimizer), ", activations ",
                 gib(activations), ", attention ", gib(attention), ", runtime ", gib(runtime), ", data ", gib(data),
                 ")");
}

// The per-token costs below are the working sets of the fused kernels and the autograd
// graph as measured: peak RSS of one training step (hkt-train --steps 1) over T = 1,024 to
// 16,384, B = 1 and 4, hkt-tiny and the -small presets, every attention kind, fitted by
// least squares and then raised by kMargin, so that the estimate is at or above the measured
// peak (1.0-1.4x on that grid; tests/memory_test.sh checks it). None of the kinds keeps a
// T x T map: HKT's and MHA's fused kernels stream over key tiles and keep one row of
// statistics per query, local attention a row's log-sum-exp, Performer its [T, m] features,
// H-Transformer-1D an O(T dh) workspace per (batch, head).
StepMemory estimate_step_memory(const nn::ClassifierConfig& c, int64_t batch, int64_t T, int64_t examples,
                                int64_t bytes_per_example, bool training) {
  constexpr double kMargin = 1.25;
  const double s = c.dtype == DType::Float64 ? 8.0 : 4.0;
  const double D = static_cast<double>(c.dim), B = static_cast<double>(batch), t = static_cast<double>(T);
  const double H = static_cast<double>(c.heads), N = static_cast<double>(c.layers);
  const nn::HKTOptions* hkt = c.attention.find<nn::HKTOptions>();
  const double L = hkt ? static_cast<double>(hkt->levels) : 1.0, F = static_cast<double>(c.ffn_mult);
  StepMemory m;
  // The process itself: code, libraries, thread stacks and pools, the allocator's slack
  // (13.5 MiB measured in a CPU build), or what it already holds where that is more: a build
  // with the CUDA backend maps the GPU libraries, whose relocated pages put 150-220 MiB into
  // every process's RSS before anything runs.
  m.runtime = std::max(13.5e6, process_baseline()) * kMargin;
  // Parameters: embeddings and head, then per block the projections (Wv, Wo, and Wq, Wk per level),
  // the levels' pointwise maps and the FFN.
  const double params = static_cast<double>(c.vocab + c.input_features + c.max_len + c.classes) * D +
                        N * ((2.0 + 3.0 * L + 2.0 * F) * D * D + 16.0 * D);
  m.weights = params * s;
  if (training) m.optimizer = 3.0 * params * s;
  // Values per token and layer kept for the backward pass (one layer's alive in a forward
  // without gradients): layer norms, projections, the FFN's hidden values, dropout masks,
  // and per head the attention's row statistics and packed tiles.
  const double layers = training ? N : 1.0;
  // A forward pass without gradients keeps no dropout masks or row statistics: the block's
  // transient values, the FFN's hidden ones the most (fitted to hkt-eval's peak RSS the same
  // way, over T = 1,024 and 4,096 and every kind; tests/memory_test.sh; lowered by a fifth
  // on 2026-12-08, when float32 products left OpenBLAS and its work buffer left the peak).
  const double per_token =
      training ? (11.84 + 3.375 * F + 77.9 * c.dropout) * D + 192.1 * H : (10.4 + 1.6 * F) * D;
  m.activations = B * t * layers * per_token * s * kMargin;
  // The attention kinds' own working sets, per token and layer (HKT: its levels' Q, K and
  // statistics; Performer: the m features of q and k and their running products), and per
  // position and layer for HKT and H-Transformer-1D (buffers of the sequence's length).
  double att = 0;
  if (hkt) att = B * t * (2.95 * D + 66.7 * H) * L / 3.0 + t * 8.8 * D;
  else if (const auto* p = c.attention.find<nn::PerformerOptions>())
    // linear in m: checked at m = 256 (performer-small, issue 68), 1.12-1.14
    att = B * t * 15.15 * H * static_cast<double>(p->features);
  else if (c.attention.kind() == "htransformer") att = B * t * 0.64 * D + t * 8.8 * D;
  // Without gradients a kind keeps about a third of its training working set (no
  // statistics for the backward pass).
  m.attention = att * layers * s * kMargin * (training ? 1.0 : 0.35);
  // H-Transformer-1D's level buffers grow faster than B x T at one sequence per batch: about
  // 1,000 bytes per position and layer more (T = 16,384, B = 1 measured 5 KiB a token). Checked
  // again for the published layout (issue 68: every level block-tridiagonal, a relative-position
  // bias; per (b, h) task the kernel keeps its L levels of q~, k~, vsum, counts, under 2 Tp
  // (2 dh + dv + 3) doubles, and the merged (max, Y, Z) of two levels at a time): estimate /
  // peak RSS 1.22-1.39 over hkt-tiny T = 1,024-16,384 and htr-small T = 1,024, B = 1 and 4.
  if (c.attention.kind() == "htransformer") m.attention += t * 1000.0 * layers * kMargin;
  m.data = static_cast<double>(examples) * static_cast<double>(bytes_per_example);
  return m;
}

double resident_now() {
  std::ifstream f("/proc/self/status");
  for (std::string line; std::getline(f, line);)
    if (line.rfind("VmRSS:", 0) == 0) {
      std::istringstream in(line.substr(6));
      double kb = 0;
      if (in >> kb) return kb * 1024.0;
    }
  return 0;
}

double process_baseline() {
  static const double first = resident_now();
  return first;
}

double peak_rss() {
  struct rusage ru {};
  if (getrusage(RUSAGE_SELF, &ru) != 0) return 0;
  return static_cast<double>(ru.ru_maxrss) * 1024.0;  // KiB on Linux
}

double available_memory() {
  std::ifstream f("/proc/meminfo");
  std::string line;
  while (std::getline(f, line)) {
    if (line.rfind("MemAvailable:", 0) != 0) continue;
    std::istringstream in(line.substr(13));
    double kb = 0;
    if (in >> kb) return kb * 1024.0;
  }
  return 0;
}

double address_space_left() {
  struct rlimit rl {};
  if (::getrlimit(RLIMIT_AS, &rl) != 0 || rl.rlim_cur == RLIM_INFINITY) return 0;
  double used = 0;  // VmSize of /proc/self/status, bytes
  std::ifstream f("/proc/self/status");
  for (std::string line; std::getline(f, line);)
    if (line.rfind("VmSize:", 0) == 0) {
      std::istringstream in(line.substr(7));
      double kb = 0;
      if (in >> kb) used = kb * 1024.0;
    }
  // OpenBLAS maps a work buffer (32-64 MiB) per thread the first time it runs
  // on it, and a failed map makes it retry without end instead of failing;
  // oneTBB's workers need their stacks. Both are kept free.
  const double threads = std::max(1, get_num_threads()), blas = std::max(1, get_blas_num_threads());
  const double reserve = (blas + 1) * 64.0 * 1024 * 1024 + threads * 8.0 * 1024 * 1024;
  return std::max(1.0, static_cast<double>(rl.rlim_cur) - used - reserve);
}

void check_memory(const StepMemory& m, double limit, const std::string& who) {
  // The address-space limit (ulimit -v) is a hard one: a step over it would fail inside
  // OpenBLAS or oneTBB, where a failed allocation is not an error that names the step.
  if (const double as = address_space_left(); as > 0)
    HKT_CHECK(m.total() <= as, who, ": a step needs about ", m.str(), " but the address-space limit (ulimit -v, ",
              "RLIMIT_AS) leaves ", gib(as), " for it, after this process's own mappings and the buffers of "
              "OpenBLAS and oneTBB; raise the limit, or use a smaller batch, sequence length, model or data set");
  const bool given = limit > 0;
  if (!given) limit = available_memory();
  if (limit <= 0) return;  // unknown: nothing to compare with
  HKT_CHECK(m.total() <= limit, who, ": a step needs about ", m.str(), " but ", gib(limit),
            given ? " is allowed (--max-memory)" : " is available (MemAvailable, /proc/meminfo)",
            "; use a smaller batch, sequence length, model or data set",
            given ? std::string() : std::string(", or --max-memory GIB to allow more"));
}

}  // namespace hkt::tasks
