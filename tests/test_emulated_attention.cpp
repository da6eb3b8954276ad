// The library's fused CUDA attention kernels (kernels/cuda/attention.cu, the
// GPU's own source) run in the CPU emulator (kernels/cuda_emu) against the CPU
// fused kernel: outputs and every gradient, on small random shapes with T not
// a power of two, L = 1..4, both masks, key padding, float32 (3xTF32
// tensor-core products, emulated) and float64. Runs in every build, with or
// without a GPU, so a change to the CUDA kernels is checked before a GPU
// session. The GPU itself is checked by tests/test_cuda_attention.cpp; the
// lab's variants by tools/cuda-lab/tests.
#include <doctest/doctest.h>

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <new>
#include <random>
#include <set>
#include <string>

#include "kernels/cuda_emu/emulated.hpp"
#include "helpers/attention_cases.hpp"
#include "kernels/cuda_emu/host_memory.hpp"
#include "kernels/cuda/attention.hpp"

using namespace hkt;
using hkt::test::check_all;
using hkt_emu::install_host_allocator;
using hkt::test::Inputs;
using hkt::test::make_inputs;
using hkt::test::output_weights;

namespace {

// Under AddressSanitizer the emulator is about 7x slower: the suites take
// the first kAsanCases shapes of each list (what ASan adds is memory checks,
// which a few shapes exercise; the Release run takes them all).
#if defined(__SANITIZE_ADDRESS__)
constexpr size_t kAsanCases = 3;
#else
constexpr size_t kAsanCases = 0;  // 0: no limit
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
const void* misaligned_copy(const Tensor& t, std::vector<Tensor>& keep) {
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
MmaSyncs g_last_syncs;

std::vector<Tensor> run_emulated(const Inputs& src, DType dt, bool causal, double scale, unsigned want = kAllGrads,
                                 Misalign misalign = Misalign::none) {
  install_host_allocator();
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
void compare_cases(const std::vector<Case>& cases, uint64_t seed, const std::string& what) {
  const size_t n = kAsanCases ? std::min(cases.size(), kAsanCases) : cases.size();
  for (size_t i = 0; i < n; ++i) {
    const Case& c = cases[i];
    const Inputs in = make_inputs(c.B, c.H, c.T, c.dh, c.L, c.padded, seed++);
    const double scale = 1.0 / std::sqrt(static_cast<double>(c.dh));
    const auto emu = run_emulated(in, DType::Float32, c.causal, scale);
    const auto cpu = hkt::test::run(in, Device::cpu(), DType::Float32, c.causal, scale, false);
    check_all(emu, cpu, c.name() + ": emulated cuda (" + what + ") vs cpu fused", 1e-4);
  }
}

bool same_bits(const std::vector<Tensor>& a, const std::vector<Tensor>& b) {
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
bool order_independent(const Inputs& in, bool causal, double scale) {
  const auto fwd = run_emulated(in, DType::Float32, causal, scale);
  hkt_emu::set_reverse_order(true);
  const auto rev = run_emulated(in, DType::Float32, causal, scale);
  hkt_emu::set_reverse_order(false);
  return same_bits(fwd, rev);
}

}  // namespace

TEST_CASE("emulated cuda attention: fused kernels vs the CPU fused kernel, float32") {
  // Small shapes (the emulator runs every CUDA thread as a fiber): one and
  // several 64-row tiles, T not a power of two, a head dim that is not a
  // multiple of 16 or of 4 (no float4 loads), the levels' small grids.
  const std::vector<Case> cases = {
      {2, 1, 1, 16, 1, false, false},  {1, 2, 7, 16, 2, true, false},   {3, 1, 63, 32, 3, false, true},
      {3, 1, 100, 24, 4, true, true},  {1, 1, 130, 64, 3, false, false}, {1, 1, 129, 64, 1, true, false},
      {2, 1, 70, 18, 2, false, true},  {1, 1, 97, 100, 2, true, false},
      {1, 1, 127, 32, 2, false, false},  // the last key tile ends one past T: it keeps its mask tests
  };
  compare_cases(cases, 101, "default kernels");
}

TEST_CASE("emulated cuda attention: every backward writes only the gradients asked for, the same bits") {
  // Frozen queries (no dQ), frozen keys and values, dlambda alone: the kernels
  // skip the dQ product and its partials, the dK / dV stores, or the dlambda
  // partials. What is asked for must be what the full backward gives, bit for
  // bit, and the rest untouched; in both thread orders (races in these paths).
  const Inputs hkt = make_inputs(2, 1, 150, 24, 3, true, 31), mha = make_inputs(1, 2, 140, 32, 1, false, 33);
  const unsigned subsets[] = {kDK | kDV | kDLambda, kDQ | kDLambda, kDQ, kDV, kDLambda};
  const std::vector<const char*> variants = {"default"};
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

TEST_CASE("emulated cuda attention: random shapes, every kernel variant") {
  // Random (T, dh, L, masks) drawn with a fixed seed, under the default
  // kernels (the lab's variants: tools/cuda-lab/tests).
  const int n = kAsanCases ? 2 : 6;
  std::mt19937_64 rng(2026);
  const auto pick = [&](int lo, int hi) { return int(std::uniform_int_distribution<int>(lo, hi)(rng)); };
  const char* knobs[][2] = {{nullptr, nullptr}};
  for (int i = 0; i < n; ++i) {
    const int L = pick(1, 7);
    const int T = pick(1, 200);
    const int dh = pick(0, 3) == 0 && L < 7 ? pick(1, 128) : pick(1, 64);  // L = 7 with dh > 64 does not fit
    const Case c{pick(1, 3), pick(1, 2), T, dh, L, pick(0, 1) == 1, pick(0, 1) == 1};
    const auto& k = knobs[i % std::size(knobs)];
    if (k[0]) setenv(k[0], k[1], 1);
    compare_cases({c}, 1000 + uint64_t(i), std::string(k[0] ? k[0] : "default") + " sweep");
    if (k[0]) unsetenv(k[0]);
  }
}

TEST_CASE("emulated cuda attention: a switch or the tuner asking for the lab, in a program without it, is an error") {
  // The variants and the autotuner are tools/cuda-lab's: this program (the library's
  // kernels alone) has not installed them, so each variable that asks for them says so.
  const Inputs in = make_inputs(1, 2, 40, 16, 2, false, 7);
  const char* cases[][3] = {{"HKT_CUDA_ATTN_FWD", "mma", "HKT_CUDA_ATTN_FWD=mma names a kernel of tools/cuda-lab"},
                            {"HKT_CUDA_ATTN_BWD", "fused", "HKT_CUDA_ATTN_BWD=fused names a kernel of tools/cuda-lab"},
                            {"HKT_CUDA_ATTN_BWD_ACC", "regs", "HKT_CUDA_ATTN_BWD_ACC=regs names a kernel of tools/cuda-lab"},
                            {"HKT_CUDA_ATTN_AUTOTUNE", "1", "HKT_CUDA_ATTN_AUTOTUNE=1 asks for the autotuner of tools/cuda-lab"}};
  for (const auto& c : cases) {
    setenv(c[0], c[1], 1);
    CHECK_THROWS_WITH_AS(run_emulated(in, DType::Float32, false, 0.25), doctest::Contains(c[2]), Error);
    unsetenv(c[0]);
  }
  // Off is off: "0" and an empty value run the general kernels.
  const auto ref = run_emulated(in, DType::Float32, false, 0.25);
  for (const char* off : {"0", ""}) {
    setenv("HKT_CUDA_ATTN_AUTOTUNE", off, 1);
    CHECK(same_bits(run_emulated(in, DType::Float32, false, 0.25), ref));
    unsetenv("HKT_CUDA_ATTN_AUTOTUNE");
  }
}

TEST_CASE("emulated cuda attention: float64 matches the CPU to 1e-10") {
  const Inputs in = make_inputs(3, 1, 45, 16, 3, true, 5);
  for (bool causal : {false, true}) {
    const auto emu = run_emulated(in, DType::Float64, causal, 0.25);
    const auto cpu = hkt::test::run(in, Device::cpu(), DType::Float64, causal, 0.25, false);
    check_all(emu, cpu, std::string("float64") + (causal ? " causal" : ""), 1e-10);
  }
}

TEST_CASE("emulated cuda attention: the bits do not depend on the order threads and blocks run in") {
  const Inputs in = make_inputs(3, 1, 100, 24, 3, true, 9);
  for (bool causal : {false, true})
    CHECK_MESSAGE(order_independent(in, causal, 0.2), (causal ? "causal" : "bidirectional"));
}

TEST_CASE("emulated cuda attention: shapes the kernels cannot take are refused, saying why") {
  // A head dim above the kernel's 128 is refused on the host, before any launch.
  const Inputs in = make_inputs(1, 1, 8, 16, 1, false, 3);
  std::vector<const void*> q{in.q[0].raw_data()}, k{in.k[0].raw_data()};
  const Tensor o = zeros({1, 1, 8, 16}), lse = zeros({1, 1, 8});
  const cuda::AttnShape big{1, 1, 8, 200, 1, false, 1.0};
  CHECK_THROWS_WITH_AS(cuda::attention_forward<float>(big, q, k, in.v.raw_data(), in.lam.raw_data(), nullptr,
                                                      o.raw_data(), lse.raw_data()),
                       doctest::Contains("head dims up to 128"), Error);
  // L = 7 needs 64-row tiles, whose backward does not fit in shared memory at dh = 100.
  const Inputs in7 = make_inputs(1, 1, 70, 100, 7, false, 4);
  CHECK_THROWS_WITH_AS(run_emulated(in7, DType::Float32, false, 0.1),
                       doctest::Contains("no CUDA tile fits: dh = 100, L = 7, 32-bit floats need more shared memory "
                                         "than the device's 232448 bytes per block (use a smaller head dim, at most "
                                         "6 levels (32-row tiles), or the cpu)"),
                       Error);
}
