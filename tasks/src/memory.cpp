#include "hkt/tasks/memory.hpp"

#include <sys/resource.h>

#include <algorithm>
#include <cstdio>
#include <fstream>
#include <sstream>

#include "hkt/core/error.hpp"
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
                 gib(activations), ", attention ", gib(attention), ", data ", gib(data), ")");
}

StepMemory estimate_step_memory(const nn::ClassifierConfig& c, int64_t batch, int64_t T, int64_t examples,
                                int64_t bytes_per_example, bool training) {
  const double s = c.dtype == DType::Float64 ? 8.0 : 4.0;
  const double D = static_cast<double>(c.dim), B = static_cast<double>(batch), t = static_cast<double>(T);
  const double H = static_cast<double>(c.heads), N = static_cast<double>(c.layers);
  const bool hkt = c.attention == "hkt";
  const double L = hkt ? static_cast<double>(c.levels) : 1.0, F = static_cast<double>(c.ffn_mult);
  StepMemory m;
  // Parameters: embeddings and head, then per block the projections (Wv, Wo, and Wq, Wk per level),
  // the levels' pointwise maps and the FFN.
  const double params = static_cast<double>(c.vocab + c.input_features + c.max_len + c.classes) * D +
                        N * ((2.0 + 3.0 * L + 2.0 * F) * D * D + 16.0 * D);
  m.weights = params * s;
  if (training) m.optimizer = 3.0 * params * s;
  // Per token and layer: layer norms, Q/K/V (per level), the attention output, the FFN's hidden
  // values (before and after GELU) and the residual stream.
  const double per_token = (8.0 + 3.0 * L + 3.0 * F) * D * s;
  m.activations = B * t * per_token * (training ? N : 2.0);
  // Scores and probabilities at every level (T_l = ceil(T / 2^l)), and HKT's combined T x T weights.
  double att = 0;
  for (int64_t l = 0; l < (hkt ? c.levels : 1); ++l) {
    const double tl = static_cast<double>((T + (int64_t{1} << l) - 1) >> l);
    att += 2.0 * B * H * tl * tl * s;
  }
  if (hkt) att += B * H * t * t * s;
  // Local: the fused kernel keeps one log-sum-exp per row (the scores of a window are recomputed);
  // Performer: the features of q and k [T, m] and the chunks' [64, 64] products and [m, dh] running sums.
  if (c.attention == "local") att = B * H * t * s;
  if (c.attention == "performer") {
    const double m = static_cast<double>(c.features), chunk = 64.0;
    att = B * H * t * (2.0 * m + (c.causal ? chunk + m * D / H / chunk : 0.0)) * s;
  }
  // H-Transformer-1D: one log-sum-exp per row and an O(T' dh) workspace per (batch, head), T' <= 2 T.
  if (c.attention == "htransformer") att = 2.0 * B * H * t * (1.0 + D / H) * s;
  m.attention = att * (training ? N : 1.0);
  m.data = static_cast<double>(examples) * static_cast<double>(bytes_per_example);
  return m;
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
