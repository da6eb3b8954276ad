// The fused CUDA attention kernels run in the CPU emulator (kernels/cuda_emu)
// on host memory, and their checks against the CPU fused kernel: shared by the
// suite of the library's default kernels (tests/test_emulated_attention.cpp)
// and the lab's checks of its variants (tools/cuda-lab/tests/test_lab_emulated.cpp),
// whose programs each compile the kernels through the emulator (hkt_emulated_attention_unit,
// testing/CMakeLists.txt) and link them next to the real libhkt.
#pragma once
// First: the emulated kernels' names (kernels/cuda_emu/emulated.hpp), then their host headers.
#include "kernels/cuda_emu/emulated.hpp"

#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <iterator>
#include <random>
#include <string>
#include <vector>

#include "hkt/hkt.hpp"
#include "kernels/cuda/attention.hpp"
#include "kernels/cuda_emu/host_memory.hpp"
#include "testing/attention_cases.hpp"

namespace hkt::test {

// Under AddressSanitizer the emulator is about 7x slower: the suites take
// the first kAsanCases shapes of each list (what ASan adds is memory checks,
// which a few shapes exercise; the Release run takes them all).
#if defined(__SANITIZE_ADDRESS__)
inline constexpr size_t kAsanCases = 3;
#else
inline constexpr size_t kAsanCases = 0;  // 0: no limit
#endif

struct Case {
  int64_t B, H, T, dh, L;
  bool causal, padded;
  std::string name() const {
    return "B " + std::to_string(B) + " H " + std::to_string(H) + " T " + std::to_string(T) + " dh " +
           std::to_string(dh) + " L " + std::to_string(L) + (causal ? " causal" : "") + (padded ? " padded" : "");
  }
};

// The emulated kernels' output and gradients (q[l], k[l], v, lambda) of
// sum(attention * w), in hkt::test::run's order, as float64 tensors.
// The gradients attention_backward is asked for (run_emulated's `want`).
enum Want : unsigned { kDQ = 1, kDK = 2, kDV = 4, kDLambda = 8, kAllGrads = 15 };

// Which input run_emulated hands the kernels 4 bytes past a 16-byte boundary
// (a view at an odd offset): the mma kernels must leave such calls to the
// general ones (mma_rows_aligned).
enum class Misalign { none, q0, v, dout };
// A copy of t's values whose data starts 4 bytes past a 16-byte boundary
// (kept alive in keep).
inline const void* misaligned_copy(const Tensor& t, std::vector<Tensor>& keep) {
  const size_t bytes = static_cast<size_t>(t.numel()) * dtype_size(t.dtype());
  const Tensor& buf = keep.emplace_back(zeros({t.numel() + 8}, {t.dtype()}));
  auto* base = static_cast<unsigned char*>(buf.raw_data());
  auto* p = base + (16 - reinterpret_cast<uintptr_t>(base) % 16) % 16 + 4;
  std::memcpy(p, t.raw_data(), bytes);
  return p;
}
// The warp-wide mma.sync products of run_emulated's last forward and backward
// (0: the general kernels ran).
struct MmaSyncs {
  uint64_t fwd = 0, bwd = 0;
};
inline MmaSyncs g_last_syncs;

inline std::vector<Tensor> run_emulated(const Inputs& src, DType dt, bool causal, double scale,
                                        unsigned want = kAllGrads, Misalign misalign = Misalign::none) {
  hkt_emu::install_host_allocator();
  const auto cast = [&](const Tensor& t) { return contiguous(to_dtype(t, dt)); };
  std::vector<Tensor> q, k, grads;
  std::vector<const void*> qp, kp;
  std::vector<void*> dqp, dkp;
  for (const Tensor& t : src.q) q.push_back(cast(t));
  for (const Tensor& t : src.k) k.push_back(cast(t));
  for (const Tensor& t : q) qp.push_back(t.raw_data());
  for (const Tensor& t : k) kp.push_back(t.raw_data());
  const Tensor v = cast(src.v), lam = cast(src.lam);
  const Tensor valid = src.valid.defined() ? contiguous(src.valid) : Tensor();
  const bool* vp = valid.defined() ? static_cast<const bool*>(valid.raw_data()) : nullptr;
  const int64_t B = v.shape()[0], H = v.shape()[1], T = v.shape()[2], dh = v.shape()[3];
  const cuda::AttnShape s{B, H, T, dh, static_cast<int64_t>(q.size()), causal, scale};
  const Tensor o = zeros({B, H, T, dh}, {dt}), lse = zeros({B, H, T}, {dt});
  const Tensor w = cast(output_weights(o.shape(), dt));
  for (const Tensor& t : q) dqp.push_back(grads.emplace_back(full(t.shape(), 7, {dt})).raw_data());
  for (const Tensor& t : k) dkp.push_back(grads.emplace_back(full(t.shape(), 7, {dt})).raw_data());
  const Tensor dv = full(v.shape(), 7, {dt}), dlam = full(lam.shape(), 7, {dt});
  // Gradients not asked for: empty lists and null pointers (their tensors keep the 7s).
  if (!(want & kDQ)) dqp.clear();
  if (!(want & kDK)) dkp.clear();
  void* const dvp = want & kDV ? dv.raw_data() : nullptr;
  void* const dlp = want & kDLambda ? dlam.raw_data() : nullptr;
  std::vector<Tensor> keep;
  const void* vd = v.raw_data();
  const void* wd = w.raw_data();
  if (misalign == Misalign::q0) qp[0] = misaligned_copy(q[0], keep);
  if (misalign == Misalign::v) vd = misaligned_copy(v, keep);
  if (misalign == Misalign::dout) wd = misaligned_copy(w, keep);
  if (dt == DType::Float32) {
    const uint64_t before = hkt_emu::mma_sync_count();
    cuda::attention_forward<float>(s, qp, kp, vd, lam.raw_data(), vp, o.raw_data(), lse.raw_data());
    const uint64_t mid = hkt_emu::mma_sync_count();
    cuda::attention_backward<float>(s, qp, kp, vd, lam.raw_data(), vp, o.raw_data(), lse.raw_data(), wd, dqp, dkp,
                                    dvp, dlp);
    g_last_syncs = {mid - before, hkt_emu::mma_sync_count() - mid};
  } else {
    cuda::attention_forward<double>(s, qp, kp, v.raw_data(), lam.raw_data(), vp, o.raw_data(),
                                    lse.raw_data());
    cuda::attention_backward<double>(s, qp, kp, v.raw_data(), lam.raw_data(), vp, o.raw_data(),
                                     lse.raw_data(), w.raw_data(), dqp, dkp, dvp, dlp);
  }
  std::vector<Tensor> out{to_dtype(o, DType::Float64)};
  for (const Tensor& g : grads) out.push_back(to_dtype(g, DType::Float64));
  out.push_back(to_dtype(dv, DType::Float64));
  out.push_back(to_dtype(dlam, DType::Float64));
  return out;
}

// Every case in the emulator against the CPU fused kernel, float32, 1e-4.
inline void compare_cases(const std::vector<Case>& cases, uint64_t seed, const std::string& what) {
  const size_t n = kAsanCases ? std::min(cases.size(), kAsanCases) : cases.size();
  for (size_t i = 0; i < n; ++i) {
    const Case& c = cases[i];
    const Inputs in = make_inputs(c.B, c.H, c.T, c.dh, c.L, c.padded, seed++);
    const double scale = 1.0 / std::sqrt(static_cast<double>(c.dh));
    const auto emu = run_emulated(in, DType::Float32, c.causal, scale);
    const auto cpu = run(in, Device::cpu(), DType::Float32, c.causal, scale, false);
    check_all(emu, cpu, c.name() + ": emulated cuda (" + what + ") vs cpu fused", 1e-4);
  }
}

// A switch of the kernels: an environment variable and its value.
struct Knob {
  const char* var = nullptr;
  const char* value = nullptr;
};

// n random cases (B, H, T, dh, L, masks drawn with a fixed seed) in the
// emulator against the CPU fused kernel, case i under knobs[i % size] (none:
// the default kernels).
inline void compare_random_shapes(int n, const std::vector<Knob>& knobs) {
  std::mt19937_64 rng(2026);
  const auto pick = [&](int lo, int hi) { return int(std::uniform_int_distribution<int>(lo, hi)(rng)); };
  for (int i = 0; i < n; ++i) {
    const int L = pick(1, 7);
    const int T = pick(1, 200);
    const int dh = pick(0, 3) == 0 && L < 7 ? pick(1, 128) : pick(1, 64);  // L = 7 with dh > 64 does not fit
    const Case c{pick(1, 3), pick(1, 2), T, dh, L, pick(0, 1) == 1, pick(0, 1) == 1};
    const Knob k = knobs.empty() ? Knob{} : knobs[static_cast<size_t>(i) % knobs.size()];
    if (k.var) setenv(k.var, k.value, 1);
    compare_cases({c}, 1000 + uint64_t(i), (k.var ? std::string(k.var) + "=" + k.value : "default") + " sweep");
    if (k.var) unsetenv(k.var);
  }
}

inline bool same_bits(const std::vector<Tensor>& a, const std::vector<Tensor>& b) {
  if (a.size() != b.size()) return false;
  for (size_t i = 0; i < a.size(); ++i) {
    const std::vector<double> x = a[i].to_vector<double>(), y = b[i].to_vector<double>();
    if (x.size() != y.size() || std::memcmp(x.data(), y.data(), x.size() * sizeof(double)) != 0) return false;
  }
  return true;
}

// True when the kernels give the same bits with the threads of each block,
// and the blocks of each grid, run in order and in reverse order: a race (a
// read not separated from a write by a barrier, or an order-dependent sum
// across blocks) gives other bits.
inline bool order_independent(const Inputs& in, bool causal, double scale) {
  const auto fwd = run_emulated(in, DType::Float32, causal, scale);
  hkt_emu::set_reverse_order(true);
  const auto rev = run_emulated(in, DType::Float32, causal, scale);
  hkt_emu::set_reverse_order(false);
  return same_bits(fwd, rev);
}

// Frozen queries (no dQ), frozen keys and values, dlambda alone: the kernels
// skip the dQ product and its partials, the dK / dV stores, or the dlambda
// partials. What is asked for must be what the full backward gives, bit for
// bit, and the rest untouched; in both thread orders (races in these paths).
// Each of `variants` names the backward (HKT_CUDA_ATTN_BWD; "default": the
// variable unset). Under ASan, the first two subsets of gradients.
inline void check_gradient_subsets(const std::vector<const char*>& variants) {
  const Inputs hkt = make_inputs(2, 1, 150, 24, 3, true, 31), mha = make_inputs(1, 2, 140, 32, 1, false, 33);
  const unsigned subsets[] = {kDK | kDV | kDLambda, kDQ | kDLambda, kDQ, kDV, kDLambda};
  for (const char* variant : variants) {
    if (std::strcmp(variant, "default") != 0) setenv("HKT_CUDA_ATTN_BWD", variant, 1);
    for (const Inputs* in : {&hkt, &mha}) {
      const size_t L = in->q.size();
      const auto full = run_emulated(*in, DType::Float32, true, 0.2);
      for (size_t k = 0; k < (kAsanCases ? 2 : std::size(subsets)); ++k)
        for (bool reverse : {false, true}) {
          const unsigned want = subsets[k];
          hkt_emu::set_reverse_order(reverse);
          const auto part = run_emulated(*in, DType::Float32, true, 0.2, want);
          hkt_emu::set_reverse_order(false);
          // out = {o, dq[0..L), dk[0..L), dv, dlambda}
          for (size_t i = 1; i < part.size(); ++i) {
            const unsigned which = i <= L ? kDQ : i <= 2 * L ? kDK : i == 2 * L + 1 ? kDV : kDLambda;
            const std::string what = std::string(variant) + ", L = " + std::to_string(L) + ", want " +
                                     std::to_string(want) + (reverse ? " reversed" : "") + ", output " +
                                     std::to_string(i);
            if (want & which) {
              CHECK_MESSAGE(same_bits({part[i]}, {full[i]}), what);
            } else {
              const std::vector<double> x = part[i].to_vector<double>();
              const bool untouched = std::all_of(x.begin(), x.end(), [](double e) { return e == 7.0; });
              CHECK_MESSAGE(untouched, (what + " written"));
            }
          }
        }
    }
    unsetenv("HKT_CUDA_ATTN_BWD");
  }
}

}  // namespace hkt::test
