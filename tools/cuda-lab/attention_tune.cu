// The lab's attention autotuner (attention_tune.hpp; docs/cuda.md, "The lab").
#include "tools/cuda-lab/attention_tune.hpp"

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

bool autotune_may_try(const std::string& name) {
  const char* e = std::getenv("HKT_CUDA_ATTN_AUTOTUNE_SKIP");
  if (!e || !*e) return true;
  // Every kernel's name once, but general's (the reference).
  std::vector<std::string> skippable;
  for (int i = 1; i < kFwdKernels; ++i) skippable.emplace_back(kernel_name(FwdKernel(i)));
  for (int i = 1; i < kBwdKernels; ++i) {
    const std::string n = kernel_name(BwdKernel(i));
    if (std::find(skippable.begin(), skippable.end(), n) == skippable.end()) skippable.push_back(n);
  }
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
  HKT_CHECK(mode >= -1 && mode <= 2, "set_attention_autotune: mode ", mode, " is not -1 (the variable), 0, 1 or 2");
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
  return best;
}

namespace {

// The candidates the tuner tries, the reference (general) first: the
// library's and those the lab installed.
std::vector<FwdKernel> fwd_candidates() {
  std::vector<FwdKernel> c{FwdKernel::general};
  for (int i = 1; i < kFwdKernels; ++i)
    if (attention_variants().forward[i]) c.push_back(FwdKernel(i));
  return c;
}
std::vector<BwdKernel> bwd_candidates() {
  std::vector<BwdKernel> c{BwdKernel::general};
  for (int i = 1; i < kBwdKernels; ++i)
    if (attention_variants().backward[i]) c.push_back(BwdKernel(i));
  return c;
}
// Their names, in the same order (autotune()'s candidates).
template <class K>
std::vector<std::string> names_of(const std::vector<K>& ks) {
  std::vector<std::string> n;
  for (K k : ks) n.emplace_back(kernel_name(k));
  return n;
}
TuneKey tune_key(bool backward, const AttnShape& s, const bool* valid, bool aligned, unsigned want) {
  return {backward, s.B, s.H, s.T, s.dh, s.L, s.causal, valid != nullptr, aligned, want};
}

}  // namespace

FwdKernel tuned_forward(const AttnShape& s, const std::vector<const void*>& q, const std::vector<const void*>& k,
                        const void* v, const void* lambda, const bool* valid, float* o, float* lse) {
  if (attention_autotune_mode() == 0) return FwdKernel::general;
  const TuneKey key = tune_key(false, s, valid, mma_rows_aligned(s.dh, q, k, v, o), 0);
  const std::vector<FwdKernel> cands = fwd_candidates();
  const int64_t rows = s.B * s.H * s.T;
  return cands[size_t(autotune(
      key, names_of(cands),
      [&](int i) { return attention_forward_with(cands[size_t(i)], s, q, k, v, lambda, valid, o, lse); },
      [&]() -> std::vector<TuneOutput> { return {{o, rows * s.dh}, {lse, rows}}; }))];
}

BwdKernel tuned_backward(const AttnShape& s, const std::vector<const void*>& q, const std::vector<const void*>& k,
                         const void* v, const void* lambda, const bool* valid, const float* o, const float* lse,
                         const float* dout, const std::vector<void*>& dq, const std::vector<void*>& dk, float* dv,
                         float* dlambda) {
  if (attention_autotune_mode() == 0) return BwdKernel::general;
  const unsigned want = (dq.empty() ? 0u : 1u) | (dk.empty() ? 0u : 2u) | (dv ? 4u : 0u) | (dlambda ? 8u : 0u);
  const TuneKey key = tune_key(true, s, valid, mma_rows_aligned(s.dh, q, k, v, dout, dq, dk, dv), want);
  const std::vector<BwdKernel> cands = bwd_candidates();
  return cands[size_t(autotune(
      key, names_of(cands),
      [&](int i) {
        return attention_backward_with(cands[size_t(i)], s, q, k, v, lambda, valid, o, lse, dout, dq, dk, dv,
                                       dlambda);
      },
      [&] {
        std::vector<TuneOutput> outs;
        for (int64_t l = 0; l < s.L; ++l) {
          const int64_t n = level_elems(s, l);
          if (!dq.empty()) outs.push_back({static_cast<const float*>(dq[size_t(l)]), n});
          if (!dk.empty()) outs.push_back({static_cast<const float*>(dk[size_t(l)]), n});
        }
        if (dv) outs.push_back({dv, level_elems(s, 0)});
        if (dlambda) outs.push_back({dlambda, s.H * s.L});
        return outs;
      }))];
}

}  // namespace hkt::cuda
