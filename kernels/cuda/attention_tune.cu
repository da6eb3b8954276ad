// The attention kernels' names and knobs, and the autotuner
// (attention_tune.hpp; docs/cuda.md, "Choosing the kernel").
#include "kernels/cuda/attention_tune.hpp"

#include <algorithm>
#include <cfloat>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <memory>
#include <mutex>
#include <string_view>

#include "kernels/cuda/common.cuh"

namespace hkt::cuda {
namespace {

constexpr std::pair<FwdKernel, const char*> kFwdNames[] = {
    {FwdKernel::general, "general"}, {FwdKernel::mma, "mma"},       {FwdKernel::mma_async, "mma-async"},
    {FwdKernel::mma_lean, "mma-lean"}, {FwdKernel::wgmma, "wgmma"}, {FwdKernel::wgmma2, "wgmma2"}};
constexpr std::pair<BwdKernel, const char*> kBwdNames[] = {
    {BwdKernel::general, "general"}, {BwdKernel::general_regs, "general-regs"}, {BwdKernel::mma, "mma"},
    {BwdKernel::fused, "fused"},     {BwdKernel::fused8, "fused8"},             {BwdKernel::fused8_async, "fused8-async"},
    {BwdKernel::wgmma, "wgmma"}};

template <class K, size_t N>
const char* name_of(const std::pair<K, const char*> (&names)[N], K k) {
  for (const auto& [kk, n] : names)
    if (kk == k) return n;
  return "?";
}
template <class K, size_t N>
K parse_knob(const std::pair<K, const char*> (&names)[N], const char* var, bool* set) {
  const char* e = std::getenv(var);
  *set = e && *e;
  if (!*set) return names[0].first;
  std::string accepted;
  for (const auto& [k, n] : names) {
    if (std::string_view(e) == n) return k;
    accepted += accepted.empty() ? n : std::string(", ") + n;
  }
  throw Error(str_cat("hkt_attention: ", var, "=", e, " names no kernel; it takes one of ", accepted,
                      " (docs/cuda.md, \"Kernel variants\")"));
}

// Per block: max |a - ref| over the pairs that differ and are both finite,
// max |ref| over the finite ref, and the count of pairs that differ where
// either is not finite (NaN differs from everything).
__global__ void tune_compare(const float* a, const float* ref, int64_t n, float* out) {
  float diff = 0, scale = 0, bad = 0;
  HKT_CUDA_LOOP(i, n) {
    const float x = a[i], y = ref[i];
    const bool fx = fabsf(x) <= FLT_MAX, fy = fabsf(y) <= FLT_MAX;
    if (!(x == y)) {
      if (fx && fy)
        diff = fmaxf(diff, fabsf(x - y));
      else
        bad += 1;
    }
    if (fy) scale = fmaxf(scale, fabsf(y));
  }
  diff = block_reduce(diff, 0.0f, MaxOp{});
  scale = block_reduce(scale, 0.0f, MaxOp{});
  bad = block_reduce(bad, 0.0f, SumOp{});
  if (threadIdx.x == 0) {
    out[3 * blockIdx.x] = diff;
    out[3 * blockIdx.x + 1] = scale;
    out[3 * blockIdx.x + 2] = bad;
  }
}

// max|a - ref| / max|ref| (with 1e-6 absolute slack, as the tests' check_all),
// or infinity when a non-finite value differs.
double rel_error(const float* a, const float* ref, int64_t n) {
  if (n == 0) return 0;
  const unsigned blocks = std::min(blocks_for(n), 1024u);
  Scratch part(size_t{3} * blocks * sizeof(float));
  HKT_LAUNCH(blocks, kThreads, 0, tune_compare)(a, ref, n, part.as<float>());
  CUDA_CHECK_LAUNCH();
  std::vector<float> host(size_t{3} * blocks);
  CUDA_CHECK(cudaMemcpyAsync(host.data(), part.as<float>(), host.size() * sizeof(float), cudaMemcpyDeviceToHost,
                             stream()));
  CUDA_CHECK(cudaStreamSynchronize(stream()));
  double diff = 0, scale = 0, bad = 0;
  for (unsigned b = 0; b < blocks; ++b) {
    diff = std::max(diff, double(host[3 * b]));
    scale = std::max(scale, double(host[3 * b + 1]));
    bad += host[3 * b + 2];
  }
  if (bad > 0) return INFINITY;
  return diff <= 1e-6 ? 0 : diff / std::max(scale, 1e-6 / kTuneRelTol);
}

struct Cache {
  std::mutex mu;
  std::map<TuneKey, size_t> index;  // into results
  std::vector<TuneResult> results;
  std::function<void()> listener;
  // Records r: replaces the decision for its key, or adds one.
  void record(TuneResult r) {
    if (auto it = index.find(r.key); it != index.end()) {
      results[it->second] = std::move(r);
      return;
    }
    index.emplace(r.key, results.size());
    results.push_back(std::move(r));
  }
};
Cache& cache() {
  static Cache c;
  return c;
}
int g_api_mode = -1;  // set_attention_autotune; guarded by cache().mu

double run_ms(const std::function<bool(int)>& run, int i) {
  CUDA_CHECK(cudaStreamSynchronize(stream()));
  const auto t0 = std::chrono::steady_clock::now();
  run(i);
  CUDA_CHECK(cudaStreamSynchronize(stream()));
  return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
}

}  // namespace

const char* kernel_name(FwdKernel k) { return name_of(kFwdNames, k); }
const char* kernel_name(BwdKernel k) { return name_of(kBwdNames, k); }
FwdKernel fwd_kernel_knob(bool* set) { return parse_knob(kFwdNames, "HKT_CUDA_ATTN_FWD", set); }
BwdKernel bwd_kernel_knob(bool* set) {
  const BwdKernel k = parse_knob(kBwdNames, "HKT_CUDA_ATTN_BWD", set);
  // HKT_CUDA_ATTN_BWD_ACC=regs: the general backward's accumulators in registers.
  const char* acc = std::getenv("HKT_CUDA_ATTN_BWD_ACC");
  if (acc && *acc) {
    HKT_CHECK(std::string_view(acc) == "regs" || std::string_view(acc) == "smem", "hkt_attention: HKT_CUDA_ATTN_BWD_ACC=",
              acc, " is neither regs nor smem");
    if (std::string_view(acc) == "regs" && k == BwdKernel::general) {
      *set = true;
      return BwdKernel::general_regs;
    }
  }
  return k;
}

bool autotune_may_try(const std::string& name) {
  const char* e = std::getenv("HKT_CUDA_ATTN_AUTOTUNE_SKIP");
  if (!e || !*e) return true;
  // Every kernel's name once, but general's (the reference).
  std::vector<std::string> skippable;
  for (const auto& [k, n] : kFwdNames) skippable.emplace_back(n);
  for (const auto& [k, n] : kBwdNames)
    if (std::find(skippable.begin(), skippable.end(), n) == skippable.end()) skippable.emplace_back(n);
  skippable.erase(std::find(skippable.begin(), skippable.end(), "general"));
  bool skip = false;
  std::string_view list(e);
  while (!list.empty()) {
    const size_t comma = list.find(',');
    const std::string item(list.substr(0, comma));
    list = comma == std::string_view::npos ? std::string_view() : list.substr(comma + 1);
    if (std::find(skippable.begin(), skippable.end(), item) == skippable.end()) {
      std::string names;
      for (const std::string& n : skippable) names += (names.empty() ? "" : ", ") + n;
      throw Error(str_cat("hkt_attention: HKT_CUDA_ATTN_AUTOTUNE_SKIP=", e, ": \"", item,
                          "\" is not a kernel the tuner may skip (", names, ")"));
    }
    skip = skip || item == name;
  }
  return !skip;
}

std::string describe(const TuneKey& k) {
  std::string s = str_cat(k.backward ? "backward" : "forward", " B=", k.B, " H=", k.H, " T=", k.T, " dh=", k.dh,
                          " L=", k.L, k.causal ? " causal" : "", k.masked ? " masked" : "",
                          k.aligned ? "" : " unaligned");
  if (k.backward) {
    s += " grads=";
    bool first = true;
    for (int b = 0; b < 4; ++b)
      if (k.want & (1u << b)) {
        s += first ? kTuneGradNames[b] : str_cat(",", kTuneGradNames[b]);
        first = false;
      }
    if (first) s += "none";
  }
  return s;
}

// The mode, the caller holding cache().mu.
int autotune_mode_locked() {
  if (g_api_mode >= 0) return g_api_mode;
  const char* e = std::getenv("HKT_CUDA_ATTN_AUTOTUNE");
  if (!e || !*e || std::string_view(e) == "0") return 0;
  if (std::string_view(e) == "1") return 1;
  if (std::string_view(e) == "verbose") return 2;
  throw Error(str_cat("hkt_attention: HKT_CUDA_ATTN_AUTOTUNE=", e, " is not 0, 1 or verbose"));
}
int attention_autotune_mode() {
  std::lock_guard lock(cache().mu);
  return autotune_mode_locked();
}
void set_attention_autotune(int mode) {
  HKT_CHECK(mode >= -1 && mode <= 2, "cuda_attention_autotune: mode ", mode, " is not -1 (the variable), 0, 1 or 2");
  std::lock_guard lock(cache().mu);
  g_api_mode = mode;
}
int attention_autotune_setting() {
  std::lock_guard lock(cache().mu);
  return g_api_mode;
}
std::vector<TuneResult> attention_autotune_results() {
  std::lock_guard lock(cache().mu);
  return cache().results;
}
void clear_attention_autotune() {
  std::lock_guard lock(cache().mu);
  cache().index.clear();
  cache().results.clear();
}
void set_attention_decision(const TuneKey& key, const std::string& kernel) {
  HKT_CHECK(!kernel.empty(), "set_attention_decision: no kernel named for ", describe(key));
  std::lock_guard lock(cache().mu);
  cache().record(TuneResult{key, kernel, {}, true});
}
std::string attention_decision(const TuneKey& key) {
  std::lock_guard lock(cache().mu);
  const auto it = cache().index.find(key);
  return it == cache().index.end() ? std::string() : cache().results[it->second].chosen;
}
void set_attention_autotune_listener(std::function<void()> f) {
  std::lock_guard lock(cache().mu);
  cache().listener = std::move(f);
}

int autotune(const TuneKey& key, const std::vector<std::string>& names, const std::function<bool(int)>& run,
             const std::function<std::vector<TuneOutput>()>& outputs) {
  HKT_CHECK(!names.empty(), "autotune: no candidates for ", describe(key));
  Cache& c = cache();
  // Held through the trials: two threads tuning at once would time each other.
  std::unique_lock lock(c.mu);
  if (auto it = c.index.find(key); it != c.index.end()) {
    const std::string& chosen = c.results[it->second].chosen;
    for (size_t i = 0; i < names.size(); ++i)
      if (names[i] == chosen && (i == 0 || autotune_may_try(chosen))) return static_cast<int>(i);
    // Skipped now, or a preset kernel this build does not have: tuned below, replacing it.
  }
  // Which candidates run: the reference, and those the skip variable does not name.
  std::vector<size_t> tried{0};
  for (size_t i = 1; i < names.size(); ++i)
    if (autotune_may_try(names[i])) tried.push_back(i);
  const bool verbose = autotune_mode_locked() == 2;
  const std::vector<TuneOutput> outs = outputs();
  TuneResult res{key, names[0], {}};
  // The reference's outputs, kept.
  bool ref_ran = false;
  try {
    ref_ran = run(0);
  } catch (const Error& e) {
    throw Error(str_cat("autotune: the reference kernel ", names[0], " failed on ", describe(key), ": ", e.what()));
  }
  HKT_CHECK(ref_ran, "autotune: the reference kernel ", names[0], " cannot take ", describe(key));
  std::vector<std::unique_ptr<Scratch>> ref;
  for (const TuneOutput& o : outs) {
    ref.push_back(std::make_unique<Scratch>(std::max<size_t>(1, size_t(o.n) * sizeof(float))));
    CUDA_CHECK(cudaMemcpyAsync(ref.back()->as<float>(), o.data, size_t(o.n) * sizeof(float),
                               cudaMemcpyDeviceToDevice, stream()));
  }
  int best = -1;          // into names
  size_t best_trial = 0;  // into res.trials
  for (size_t i : tried) {
    TuneTrial t{names[i], -1, 0, ""};
    try {
      if (i > 0 && !run(static_cast<int>(i))) {
        t.outcome = "not applicable";
        res.trials.push_back(t);
        continue;
      }
      for (size_t o = 0; o < outs.size(); ++o)
        t.rel_error = std::max(t.rel_error, rel_error(outs[o].data, ref[o]->as<float>(), outs[o].n));
      if (!(t.rel_error <= kTuneRelTol)) {
        t.outcome = "wrong results";
      } else {
        t.ms = std::min(run_ms(run, static_cast<int>(i)), run_ms(run, static_cast<int>(i)));
        if (best < 0 || t.ms < res.trials[best_trial].ms) {
          best = static_cast<int>(i);
          best_trial = res.trials.size();
        }
        t.outcome = "slower";
      }
    } catch (const Error& e) {
      HKT_CHECK(i > 0, "autotune: the reference kernel ", names[0], " failed on ", describe(key), ": ", e.what());
      t.outcome = str_cat("failed: ", e.what());
    }
    res.trials.push_back(t);
  }
  HKT_CHECK(best >= 0, "autotune: no kernel matched the reference on ", describe(key));
  res.chosen = names[size_t(best)];
  res.trials[best_trial].outcome = "chosen";
  if (verbose) {
    std::string line = str_cat("hkt: attention autotune, ", describe(key), ":");
    for (const TuneTrial& t : res.trials) {
      line += str_cat(" ", t.kernel, " ");
      if (t.ms >= 0)
        line += str_cat(t.ms, " ms", t.outcome == "chosen" ? " (chosen)" : "");
      else
        line += str_cat("(", t.outcome, t.outcome == "wrong results" ? str_cat(", rel error ", t.rel_error) : "",
                        ")");
      line += ";";
    }
    std::fprintf(stderr, "%s\n", line.c_str());
  }
  c.record(std::move(res));
  const std::function<void()> listener = c.listener;
  lock.unlock();
  if (listener) listener();
  return best;
}

}  // namespace hkt::cuda
