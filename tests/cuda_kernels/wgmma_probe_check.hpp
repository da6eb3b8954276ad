// The host side of the wgmma probe (wgmma_probe.cuh): its inputs, and what
// its output must be (plain C++: test_emulator and test_cuda_wgmma include it
// without the kernels' headers). The descriptor fields it expects are written
// out here, not taken from kernels/cuda/wgmma.cuh: LBO 128 and SBO 256 bytes,
// no swizzle, as the PTX ISA's K-major layout without swizzle has them for
// core matrices of 8 rows x 16 bytes laid out as gmma_at does.
#pragma once
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

namespace hkt::cuda::probe {

constexpr int kProbeFloats = 128 * 96;
constexpr size_t kProbeSmem = 2 * 64 * 8 * sizeof(float);

inline float probe_tf32(float x) {
  uint32_t u;
  std::memcpy(&u, &x, 4);
  u &= ~0x1fffu;
  std::memcpy(&x, &u, 4);
  return x;
}

// The probe's inputs: fixed values whose sums differ across rows and columns,
// each exactly a TF32 number, so that the products do not depend on whether
// the tensor cores truncate or round the low mantissa bits (the probe checks
// the layout, not that).
struct ProbeInputs {
  std::vector<float> a, a2, b;
  ProbeInputs() : a(64 * 8), a2(64 * 8), b(64 * 8) {
    for (size_t i = 0; i < a.size(); ++i) {
      a[i] = probe_tf32(1.0f + float(i) * 1e-3f + 1e-6f);
      a2[i] = probe_tf32(0.25f - float(i) * 3e-4f);
      b[i] = probe_tf32(0.5f - float((i * 37) % 512) * 7e-4f);
    }
  }
};

// What is wrong with a probe's output (empty: nothing): the descriptor's
// fields (B at shared-state-space byte b_byte: the kernel's desc[1]), every D and E element after the
// wait against the CPU (TF32 inputs, float sums; within tol relative, 0 for
// the emulator's exact k order), and, with before_wait, that phase 0 still
// held the old values (the emulator's promise; a GPU's registers may hold anything).
inline std::vector<std::string> probe_errors(const ProbeInputs& in, const std::vector<float>& out, uint64_t desc,
                                             uint32_t b_byte, double tol, bool before_wait) {
  std::vector<std::string> err;
  const auto field = [&](int shift) { return (desc >> shift) & 0x3FFF; };
  if (field(0) != b_byte / 16) err.push_back("descriptor start address " + std::to_string(field(0)));
  if (field(16) != 128 / 16) err.push_back("descriptor LBO " + std::to_string(field(16)));
  if (field(32) != 256 / 16) err.push_back("descriptor SBO " + std::to_string(field(32)));
  if ((desc >> 49) != 0) err.push_back("descriptor base offset or swizzle set");
  for (int tid = 0; tid < 128 && err.size() < 8; ++tid) {
    const int lane = tid % 32, g = lane / 4, t = lane % 4;
    for (int c = 0; c < 8; ++c)
      for (int e = 0; e < 4; ++e) {
        const int row = 16 * (tid / 32) + g + 8 * (e / 2), col = 8 * c + 2 * t + e % 2;
        float want = 0;
        for (int k = 0; k < 8; ++k) want += probe_tf32(in.a[size_t(row * 8 + k)]) * probe_tf32(in.b[size_t(col * 8 + k)]);
        const float want_e = want;
        for (int k = 0; k < 8; ++k) want += probe_tf32(in.a2[size_t(row * 8 + k)]) * probe_tf32(in.b[size_t(col * 8 + k)]);
        const auto at = [&](int phase, int i) { return out[size_t(tid * 96 + phase * 48 + i)]; };
        const auto off = [&](float got, float w) { return std::abs(double(got) - double(w)) > tol * std::abs(double(w)); };
        const std::string where = "thread " + std::to_string(tid) + ", row " + std::to_string(row) + ", column " +
                                  std::to_string(col) + ": ";
        if (off(at(1, 4 * c + e), want))
          err.push_back(where + "D " + std::to_string(at(1, 4 * c + e)) + ", want " + std::to_string(want));
        if (c < 4 && off(at(1, 32 + 4 * c + e), want_e))
          err.push_back(where + "E " + std::to_string(at(1, 32 + 4 * c + e)) + ", want " + std::to_string(want_e));
        if (before_wait && (at(0, 4 * c + e) != -1.0f || (c < 4 && at(0, 32 + 4 * c + e) != -2.0f)))
          err.push_back(where + "the product was done before its wait");
      }
  }
  return err;
}

}  // namespace hkt::cuda::probe
