// The CPU emulator of the CUDA kernels (kernels/cuda_emu) checked on small
// kernels of its own (tests/cuda_emu/selftest_kernels.cpp): warp shuffles,
// block_reduce, WMMA with TF32 rounding, cp.async, wgmma, poisoned shared memory, launch limits,
// deadlock detection, the device-memory checks and the emulated cuBLAS GEMM.
// tests/test_emulated_attention.cpp and the emulated backend rely on these.
#include <doctest/doctest.h>

#include <cmath>
#include <cstring>
#include <numeric>
#include <random>
#include <stdexcept>
#include <string>
#include <vector>

#include "kernels/cuda_emu/emulated.hpp"
#include "cuda_kernels/wgmma_probe_check.hpp"

namespace hkt::cuda::emu_selftest {
std::vector<int> shuffles();
double block_sum(const std::vector<double>& x);
std::vector<float> shared_poison();
void deadlock();
int big_shared(bool allow);
void wmma(const float* A, const float* B, float* C, int offset);
std::vector<std::string> memory_checks();
std::vector<float> cp_async(const std::vector<float>& src);
std::vector<float> wgmma(const probe::ProbeInputs& in, uint64_t (&desc)[2]);
void wgmma_no_wait();
std::string sgemm(bool ta, bool tb, int m, int n, int k, const std::vector<float>& A, int lda,
                  const std::vector<float>& B, int ldb, std::vector<float>& C, int ldc, bool on_device);
}  // namespace hkt::cuda::emu_selftest

namespace st = hkt::cuda::emu_selftest;

namespace {
// TF32's bits of x (the tensor cores read no others): the probe's helper.
using hkt::cuda::probe::probe_tf32;
}  // namespace

TEST_CASE("emulator: warp shuffles exchange within each warp of 32") {
  const std::vector<int> out = st::shuffles();
  for (int t = 0; t < 64; ++t) {
    const int lane = t % 32, base = t - lane;
    const int down = lane + 4 < 32 ? t + 4 : t;  // out of range: the lane's own value
    CHECK_MESSAGE(out[size_t(t)] == (base + (lane ^ 1)) * 1000 + down, "thread " << t);
  }
}

TEST_CASE("emulator: block_reduce of kernels/cuda/common.cuh over 256 and 96 threads") {
  for (size_t n : {256u, 96u}) {
    std::vector<double> x(n);
    std::iota(x.begin(), x.end(), 1.0);
    CHECK(st::block_sum(x) == doctest::Approx(double(n) * double(n + 1) / 2));
  }
}

TEST_CASE("emulator: dynamic shared memory starts as NaN, so reading it unwritten shows") {
  const std::vector<float> out = st::shared_poison();
  CHECK(out[0] == 1.0f);
  for (size_t i = 1; i < out.size(); ++i) CHECK(std::isnan(out[i]));
}

TEST_CASE("emulator: threads waiting on different barriers are a deadlock, reported") {
  CHECK_THROWS_WITH_AS(st::deadlock(), doctest::Contains("deadlock in block (0, 0, 0)"), std::logic_error);
}

TEST_CASE("emulator: cp.async copies land at the wait that covers their group, zero-filled past src_bytes") {
  std::vector<float> src(256);
  std::iota(src.begin(), src.end(), 1.0f);
  const std::vector<float> out = st::cp_async(src);  // kernels may be handed host memory
  for (int t = 0; t < 32; ++t)
    for (int i = 0; i < 4; ++i) {
      const auto at = [&](int phase, int group) { return out[size_t(phase * 256 + 8 * t + 4 * group + i)]; };
      const float first = t == 31 && i >= 2 ? 0.0f : src[size_t(4 * t + i)], second = src[size_t(128 + 4 * t + i)];
      CHECK(std::isnan(at(0, 0)));  // nothing landed before a wait
      CHECK(std::isnan(at(0, 1)));
      CHECK(at(1, 0) == first);  // wait_group 1: the older group only
      CHECK(std::isnan(at(1, 1)));
      CHECK(at(2, 0) == first);
      CHECK(at(2, 1) == second);
    }
}

TEST_CASE("emulator: wgmma takes K-major operands through descriptors and is done at its wait") {
  // The probe that test_cuda_wgmma runs on a GPU (tests/cuda_kernels/wgmma_probe.cuh),
  // here exact (the emulator sums in k order) and with the products still undone
  // before the wait. B sits at byte 2048 of shared memory.
  const hkt::cuda::probe::ProbeInputs in;
  uint64_t desc[2] = {0, 0};
  const std::vector<float> out = st::wgmma(in, desc);
  CHECK(desc[1] == 2048);  // the emulator's shared addresses start at 0
  for (const std::string& e : hkt::cuda::probe::probe_errors(in, out, desc[0], uint32_t(desc[1]), 0.0, true))
    FAIL_CHECK(e);
  CHECK(hkt_emu::wgmma_count() >= 3 * 4);  // three products, four warps each
  CHECK_THROWS_WITH_AS(st::wgmma_no_wait(), doctest::Contains("never waited"), std::logic_error);
}

TEST_CASE("emulator: dynamic shared memory above 48 KiB needs cudaFuncSetAttribute, as on a GPU") {
  CHECK(st::big_shared(false) == 1);  // cudaErrorInvalidValue
  CHECK(st::big_shared(true) == 0);
}

TEST_CASE("emulator: wmma m16n16k8 uses the TF32 bits of A and B and checks alignment") {
  alignas(32) float A[16 * 8 + 8], B[16 * 8], C[16 * 16];
  for (int i = 0; i < 16 * 8 + 8; ++i) A[i] = 1.0f + float(i) * 1e-3f + 1e-6f;
  for (int i = 0; i < 16 * 8; ++i) B[i] = 0.5f - float(i) * 7e-4f;
  for (int i = 0; i < 16 * 16; ++i) C[i] = float(i);
  float want[16 * 16];
  for (int r = 0; r < 16; ++r)
    for (int c = 0; c < 16; ++c) {
      float s = C[r * 16 + c];
      for (int k = 0; k < 8; ++k) s += probe_tf32(A[r * 8 + k]) * probe_tf32(B[c * 8 + k]);
      want[r * 16 + c] = s;
    }
  st::wmma(A, B, C, 0);
  for (int i = 0; i < 16 * 16; ++i) CHECK_MESSAGE(C[i] == want[i], "element " << i);
  // A + 4 floats is 16-byte aligned only: WMMA needs 32 bytes.
  CHECK_THROWS_WITH_AS(st::wmma(A, B, C, 4), doctest::Contains("32-byte"), std::logic_error);
}

TEST_CASE("emulator: device memory is checked as a GPU would (copy kinds, memsets, frees, the size limit)") {
  const std::vector<std::string> want = {
      "cudaSuccess",            // cudaMalloc
      "poisoned",               // fresh device memory reads as NaN (0xFF bytes)
      "cudaSuccess",            // host -> device
      "cudaSuccess",            // device -> host
      "cudaSuccess",            // device -> device
      "cudaErrorInvalidValue",  // cudaMemcpyHostToDevice with a host destination
      "cudaErrorInvalidValue",  // a copy running past the end of the block
      "cudaSuccess",            // memset inside the block
      "cudaErrorInvalidValue",  // memset of host memory
      "cudaErrorInvalidValue",  // cudaFree of host memory
      "cudaSuccess",            // cudaFree
      "cudaErrorInvalidValue",  // memset of freed memory
      "cudaErrorMemoryAllocation",  // 2 MiB past a 1 MiB limit
  };
  CHECK(st::memory_checks() == want);
}

TEST_CASE("emulator: cuBLAS sgemm is column-major op(A) op(B), with cuBLAS's argument checks") {
  std::mt19937 rng(3);
  std::uniform_real_distribution<float> u(-1, 1);
  const int m = 5, n = 3, k = 7;
  for (bool ta : {false, true})
    for (bool tb : {false, true}) {
      // Stored sizes (column-major, leading dimension = rows + 2 of padding).
      const int ar = ta ? k : m, ac = ta ? m : k, br = tb ? n : k, bc = tb ? k : n;
      const int lda = ar + 2, ldb = br + 2, ldc = m + 1;
      std::vector<float> A(static_cast<size_t>(lda * ac)), B(static_cast<size_t>(ldb * bc)), C(ldc * n, 99.0f);
      for (float& x : A) x = u(rng);
      for (float& x : B) x = u(rng);
      CHECK(st::sgemm(ta, tb, m, n, k, A, lda, B, ldb, C, ldc, true) == "CUBLAS_STATUS_SUCCESS");
      for (int i = 0; i < m; ++i)
        for (int j = 0; j < n; ++j) {
          float want = 0;
          for (int p = 0; p < k; ++p)
            want += (ta ? A[p + i * lda] : A[i + p * lda]) * (tb ? B[j + p * ldb] : B[p + j * ldb]);
          CHECK(C[i + j * ldc] == doctest::Approx(want).epsilon(1e-6));
        }
      CHECK(C[m] == 99.0f);  // the padding row of C is left alone
      CHECK(st::sgemm(ta, tb, m, n, k, A, ar - 1, B, ldb, C, ldc, true) == "CUBLAS_STATUS_INVALID_VALUE");
      CHECK(st::sgemm(ta, tb, m, n, k, A, lda, B, br - 1, C, ldc, true) == "CUBLAS_STATUS_INVALID_VALUE");
      CHECK(st::sgemm(ta, tb, m, n, k, A, lda, B, ldb, C, m - 1, true) == "CUBLAS_STATUS_INVALID_VALUE");
      CHECK(st::sgemm(ta, tb, m, n, k, A, lda, B, ldb, C, ldc, false) == "CUBLAS_STATUS_INVALID_VALUE");
    }
}
