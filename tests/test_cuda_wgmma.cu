// The wgmma probe (tests/cuda_kernels/wgmma_probe.cuh) on the GPU, built for
// sm_90a: Hopper's warpgroup products as kernels/cuda/wgmma.cuh uses them
// (fragments, the gmma layout without swizzle, the descriptors, the wait)
// against a product on the CPU. test_emulator runs the same kernel in the
// emulator; this checks that the emulator's wgmma is the hardware's, which
// the wgmma attention forward's tests (test_cuda_attention, emulated and on
// the GPU) rely on. Skipped without a GPU and on devices other than compute
// capability 9.0.
#include <cuda_runtime.h>

#include <cstdio>
#include <string>
#include <vector>

#include "cuda_kernels/wgmma_probe.cuh"
#include "cuda_test_main.hpp"

namespace probe = hkt::cuda::probe;

TEST_CASE("cuda wgmma: the probe's products match the CPU (fragments, gmma layout, descriptors)") {
  HKT_REQUIRE_GPU();
  int major = 0, minor = 0;
  REQUIRE(cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, 0) == cudaSuccess);
  REQUIRE(cudaDeviceGetAttribute(&minor, cudaDevAttrComputeCapabilityMinor, 0) == cudaSuccess);
  if (major != 9 || minor != 0) {
    MESSAGE("SKIPPED (wgmma needs compute capability 9.0; this device is " << major << "." << minor << ")");
    return;
  }
  const probe::ProbeInputs in;
  const size_t n = in.a.size() * sizeof(float);
  float *a = nullptr, *a2 = nullptr, *b = nullptr, *out = nullptr;
  uint64_t* desc = nullptr;
  REQUIRE(cudaMalloc(&a, n) == cudaSuccess);
  REQUIRE(cudaMalloc(&a2, n) == cudaSuccess);
  REQUIRE(cudaMalloc(&b, n) == cudaSuccess);
  REQUIRE(cudaMalloc(&out, probe::kProbeFloats * sizeof(float)) == cudaSuccess);
  REQUIRE(cudaMalloc(&desc, 2 * sizeof(uint64_t)) == cudaSuccess);
  REQUIRE(cudaMemcpy(a, in.a.data(), n, cudaMemcpyHostToDevice) == cudaSuccess);
  REQUIRE(cudaMemcpy(a2, in.a2.data(), n, cudaMemcpyHostToDevice) == cudaSuccess);
  REQUIRE(cudaMemcpy(b, in.b.data(), n, cudaMemcpyHostToDevice) == cudaSuccess);
  probe::k_wgmma_probe<<<1, 128, probe::kProbeSmem>>>(a, a2, b, out, desc);
  const cudaError_t launched = cudaGetLastError(), done = cudaDeviceSynchronize();
  INFO("launch: " << cudaGetErrorString(launched) << "; run: " << cudaGetErrorString(done));
  REQUIRE(launched == cudaSuccess);
  REQUIRE(done == cudaSuccess);
  std::vector<float> host(probe::kProbeFloats);
  uint64_t d[2] = {0, 0};
  REQUIRE(cudaMemcpy(host.data(), out, host.size() * sizeof(float), cudaMemcpyDeviceToHost) == cudaSuccess);
  REQUIRE(cudaMemcpy(d, desc, sizeof d, cudaMemcpyDeviceToHost) == cudaSuccess);
  // The tensor cores sum in their own order: within 1e-5 relative of the CPU's float sums.
  const std::vector<std::string> errors = probe::probe_errors(in, host, d[0], uint32_t(d[1]), 1e-5, false);
  for (const std::string& e : errors) FAIL_CHECK(e);
  if (errors.empty()) std::printf("wgmma probe: every product matches the CPU (B at shared byte %llu)\n",
                                  static_cast<unsigned long long>(d[1]));
  for (void* p : {static_cast<void*>(a), static_cast<void*>(a2), static_cast<void*>(b), static_cast<void*>(out),
                  static_cast<void*>(desc)})
    cudaFree(p);
}
