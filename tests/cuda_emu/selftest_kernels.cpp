// Small kernels that check the emulator itself (tests/test_cuda_emulator.cpp):
// compiled like an emulated .cu file; plain host functions run them.
#include "kernels/cuda_emu/hkt_cuda_emu.hpp"

#include <mma.h>

#include <cstring>
#include <string>
#include <vector>

#include "kernels/cuda/common.cuh"
#include "cuda_kernels/wgmma_probe.cuh"

namespace hkt::cuda {
namespace {

__global__ void k_shuffles(int* out) {
  const int t = threadIdx.x;
  out[t] = __shfl_xor_sync(0xffffffffu, t, 1) * 1000 + __shfl_down_sync(0xffffffffu, t, 4);
}
__global__ void k_block_sum(const double* x, double* out) {
  const double s = block_reduce(x[threadIdx.x], 0.0, SumOp{});
  if (threadIdx.x == 0) *out = s;
}
__global__ void k_shared_poison(float* out) {
  HKT_DYNAMIC_SHARED(raw);
  float* s = reinterpret_cast<float*>(raw);
  if (threadIdx.x == 0) s[0] = 1.0f;
  __syncthreads();
  out[threadIdx.x] = s[threadIdx.x];  // only s[0] was written
}
__global__ void k_deadlock(int* out) {
  if (threadIdx.x < 16)
    out[threadIdx.x] = __shfl_xor_sync(0xffffffffu, 1, 1);
  else
    __syncthreads();
}
__global__ void k_big_shared(float* out) {
  HKT_DYNAMIC_SHARED(raw);
  reinterpret_cast<float*>(raw)[threadIdx.x] = 2.0f;
  __syncthreads();
  out[threadIdx.x] = reinterpret_cast<float*>(raw)[threadIdx.x];
}
// C = A B + C for one 16 x 16 x 8 tile (A row major, B column major), one warp.
__global__ void k_wmma(const float* A, const float* B, float* C, int offset) {
  namespace wmma = nvcuda::wmma;
  wmma::fragment<wmma::matrix_a, 16, 16, 8, wmma::precision::tf32, wmma::row_major> a;
  wmma::fragment<wmma::matrix_b, 16, 16, 8, wmma::precision::tf32, wmma::col_major> b;
  wmma::fragment<wmma::accumulator, 16, 16, 8, float> c;
  wmma::load_matrix_sync(a, A + offset, 8);
  wmma::load_matrix_sync(b, B, 8);
  wmma::load_matrix_sync(c, C, 16, wmma::mem_row_major);
  wmma::mma_sync(c, a, b, c);
  wmma::store_matrix_sync(C, c, 16, wmma::mem_row_major);
}

// cp.async: each of 32 threads copies 16 bytes of src (thread 31: 8 of them,
// the rest zero-filled) to shared memory in two commit groups; out gets what
// shared memory holds before any wait (0), after waiting for all but the
// newest group (1) and after waiting for all (2), 8 floats per thread each.
__global__ void k_cp_async(const float* src, float* out) {
  HKT_DYNAMIC_SHARED(raw);
  float* s = reinterpret_cast<float*>(raw);
  const int t = threadIdx.x;
  ::hkt_emu::cp_async16(s + 4 * t, src + 4 * t, t == 31 ? 8 : 16);
  ::hkt_emu::cp_async_commit();
  ::hkt_emu::cp_async16(s + 128 + 4 * t, src + 128 + 4 * t, 16);
  ::hkt_emu::cp_async_commit();
  const auto dump = [&](int phase) {
    for (int i = 0; i < 4; ++i) {
      out[phase * 256 + 8 * t + i] = s[4 * t + i];
      out[phase * 256 + 8 * t + 4 + i] = s[128 + 4 * t + i];
    }
  };
  dump(0);
  ::hkt_emu::cp_async_wait_group(1);
  dump(1);
  ::hkt_emu::cp_async_wait_group(0);
  dump(2);
}

// A kernel that never waits for its product.
__global__ void k_wgmma_no_wait() {
  HKT_DYNAMIC_SHARED(raw);
  float* s = reinterpret_cast<float*>(raw);
  for (int e = threadIdx.x; e < 2 * 64 * 8; e += 128) s[e] = 1.0f;
  __syncthreads();
  float d[8][4];
  wgmma_ss<8>(d, gmma_desc(s), gmma_desc(s + 64 * 8), false);
  wgmma_commit();
}

}  // namespace

namespace emu_selftest {

// The wgmma probe (tests/cuda_kernels/wgmma_probe.cuh) on host memory.
std::vector<float> wgmma(const probe::ProbeInputs& in, uint64_t (&desc)[2]) {
  std::vector<float> out(probe::kProbeFloats);
  HKT_LAUNCH(1, 128, probe::kProbeSmem, probe::k_wgmma_probe)(in.a.data(), in.a2.data(), in.b.data(), out.data(),
                                                             desc);
  CUDA_CHECK_LAUNCH();
  return out;
}
void wgmma_no_wait() { HKT_LAUNCH(1, 128, 2 * 64 * 8 * sizeof(float), k_wgmma_no_wait)(); }

std::vector<float> cp_async(const std::vector<float>& src) {
  std::vector<float> out(3 * 256);
  HKT_LAUNCH(1, 32, 256 * sizeof(float), k_cp_async)(src.data(), out.data());
  CUDA_CHECK_LAUNCH();
  return out;
}

std::vector<int> shuffles() {
  std::vector<int> out(64);
  HKT_LAUNCH(1, 64, 0, k_shuffles)(out.data());
  CUDA_CHECK_LAUNCH();
  return out;
}
double block_sum(const std::vector<double>& x) {
  double out = 0;
  HKT_LAUNCH(1, static_cast<unsigned>(x.size()), 0, k_block_sum)(x.data(), &out);
  CUDA_CHECK_LAUNCH();
  return out;
}
std::vector<float> shared_poison() {
  std::vector<float> out(32);
  HKT_LAUNCH(1, 32, 32 * sizeof(float), k_shared_poison)(out.data());
  CUDA_CHECK_LAUNCH();
  return out;
}
void deadlock() {
  std::vector<int> out(64);
  HKT_LAUNCH(1, 64, 0, k_deadlock)(out.data());
}
// The launch's error code, before (0) or after (1) raising the kernel's limit.
int big_shared(bool allow) {
  const size_t bytes = 64 * 1024;
  if (allow)
    CUDA_CHECK(cudaFuncSetAttribute(k_big_shared, cudaFuncAttributeMaxDynamicSharedMemorySize, int(bytes)));
  std::vector<float> out(128);
  HKT_LAUNCH(1, 128, bytes, k_big_shared)(out.data());
  return static_cast<int>(cudaGetLastError());
}
void wmma(const float* A, const float* B, float* C, int offset) {
  HKT_LAUNCH(1, 32, 0, k_wmma)(A, B, C, offset);
  CUDA_CHECK_LAUNCH();
}

// The device-memory checks of include/cuda_runtime.h, one call each, as the
// names of the errors returned (test_emulator.cpp lists what each must be).
std::vector<std::string> memory_checks() {
  std::vector<std::string> r;
  const auto note = [&](cudaError_t e) { r.push_back(cudaGetErrorName(e)); };
  float host[64] = {};
  float* dev = nullptr;
  note(cudaMalloc(&dev, sizeof host));
  uint32_t bits = 0;
  std::memcpy(&bits, dev, 4);
  r.push_back(bits == 0xFFFFFFFFu ? "poisoned" : "not poisoned");
  note(cudaMemcpyAsync(dev, host, sizeof host, cudaMemcpyHostToDevice));
  note(cudaMemcpyAsync(host, dev, sizeof host, cudaMemcpyDeviceToHost));
  note(cudaMemcpyAsync(dev, dev + 32, 16, cudaMemcpyDeviceToDevice));
  note(cudaMemcpyAsync(host, dev, sizeof host, cudaMemcpyHostToDevice));      // wrong kind
  note(cudaMemcpyAsync(dev, host, sizeof host + 4, cudaMemcpyHostToDevice));  // past the block
  note(cudaMemsetAsync(dev + 1, 0, 8));
  note(cudaMemsetAsync(host, 0, sizeof host));  // host memory
  note(cudaFree(host));                         // not from cudaMalloc
  note(cudaFree(dev));
  note(cudaMemsetAsync(dev, 0, 8));  // freed
  hkt_emu::set_device_memory_limit(size_t{1} << 20);
  void* big = nullptr;
  note(cudaMalloc(&big, size_t{2} << 20));
  hkt_emu::set_device_memory_limit(size_t{141} << 30);
  return r;
}

// cublasSgemm(ta, tb, m, n, k) on device copies of the column-major A, B
// (on_device false: the host vectors themselves); C gets the result. Returns
// the status's name.
std::string sgemm(bool ta, bool tb, int m, int n, int k, const std::vector<float>& A, int lda,
                  const std::vector<float>& B, int ldb, std::vector<float>& C, int ldc, bool on_device) {
  cublasHandle_t h = nullptr;
  CUBLAS_CHECK(cublasCreate(&h));
  const auto dev_copy = [&](const std::vector<float>& v) {
    float* d = nullptr;
    CUDA_CHECK(cudaMalloc(&d, v.size() * sizeof(float)));
    CUDA_CHECK(cudaMemcpyAsync(d, v.data(), v.size() * sizeof(float), cudaMemcpyHostToDevice));
    return d;
  };
  const float alpha = 1, beta = 0;
  const cublasOperation_t oa = ta ? CUBLAS_OP_T : CUBLAS_OP_N, ob = tb ? CUBLAS_OP_T : CUBLAS_OP_N;
  cublasStatus_t st;
  if (on_device) {
    float *a = dev_copy(A), *b = dev_copy(B), *c = dev_copy(C);
    st = cublasSgemm(h, oa, ob, m, n, k, &alpha, a, lda, b, ldb, &beta, c, ldc);
    CUDA_CHECK(cudaMemcpyAsync(C.data(), c, C.size() * sizeof(float), cudaMemcpyDeviceToHost));
    for (float* p : {a, b, c}) CUDA_CHECK(cudaFree(p));
  } else {
    st = cublasSgemm(h, oa, ob, m, n, k, &alpha, A.data(), lda, B.data(), ldb, &beta, C.data(), ldc);
  }
  CUBLAS_CHECK(cublasDestroy(h));
  return cublasGetStatusName(st);
}

}  // namespace emu_selftest
}  // namespace hkt::cuda
