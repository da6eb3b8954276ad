// Stand-in for CUDA's <mma.h> in emulated builds (kernels/cuda_emu): the WMMA
// API for float accumulators and TF32 inputs (m16n16k8), as documented in the
// CUDA C++ Programming Guide ("Warp Matrix Functions").
//
// A fragment holds its lane's share: element e of lane l is element 32 e + l
// of the row-major matrix (the real mapping is unspecified; code that is
// correct on a GPU cannot depend on it). load/store/fill act per lane;
// mma_sync is a warp collective that gathers the 32 shares, multiplies once
// and hands each lane its share of the result.
#pragma once
#ifndef HKT_CUDA_EMULATED
#error "kernels/cuda_emu/include is for emulated builds: include kernels/cuda_emu/hkt_cuda_emu.hpp first"
#endif
#include <cstdint>
#include <cstring>
#include <stdexcept>
#include <string>
#include <type_traits>

namespace nvcuda {
namespace wmma {

struct matrix_a {};
struct matrix_b {};
struct accumulator {};
struct row_major {};
struct col_major {};
enum layout_t { mem_row_major, mem_col_major };
namespace precision {
struct tf32 {};
}  // namespace precision

// cvt.rna.tf32.f32: the nearest TF32 value (ties away from zero), as a float.
inline float __float_to_tf32(float x) {
  const uint32_t u = ::hkt_emu::tf32_rna_bits(x);
  float r;
  std::memcpy(&r, &u, 4);
  return r;
}
namespace detail {
template <class Use, int M, int N, int K>
struct dims {
  static constexpr int rows = std::is_same_v<Use, matrix_b> ? K : M;
  static constexpr int cols = std::is_same_v<Use, matrix_a> ? K : N;
};
[[noreturn]] inline void fail(const std::string& what) { throw std::logic_error("hkt_emu: wmma: " + what); }
// Where element e of this lane's share of a rows x cols fragment lives in
// memory at ldm (row or column major).
inline size_t offset(int e, int cols, unsigned ldm, bool row_major) {
  const int i = 32 * e + int(::hkt_emu::lane_id()), r = i / cols, c = i % cols;
  return row_major ? size_t(r) * ldm + c : size_t(c) * ldm + r;
}
inline void check_ptr(const void* p, unsigned ldm, size_t elem, const char* fn) {
  if (reinterpret_cast<uintptr_t>(p) % 32 != 0)
    fail(std::string(fn) + ": the pointer must be 256-bit (32-byte) aligned");
  if ((ldm * elem) % 16 != 0) fail(std::string(fn) + ": ldm must be a multiple of 16 bytes");
}
}  // namespace detail

template <class Use, int M, int N, int K, class T, class Layout = void>
struct fragment {
  static_assert(M == 16 && N == 16 && K == 8, "hkt_emu: only the m16n16k8 shape is emulated");
  static_assert(std::is_same_v<T, precision::tf32> || std::is_same_v<T, float>,
                "hkt_emu: only tf32 inputs and float accumulators are emulated");
  using element_type = float;
  static constexpr int rows = detail::dims<Use, M, N, K>::rows, cols = detail::dims<Use, M, N, K>::cols;
  static constexpr int num_elements = rows * cols / 32;
  element_type x[num_elements];
};

template <class Use, int M, int N, int K, class T, class L>
void fill_fragment(fragment<Use, M, N, K, T, L>& f, float v) {
  for (float& e : f.x) e = v;
}

// matrix_a / matrix_b: the fragment's layout parameter says how p is laid out.
template <class Use, int M, int N, int K, class T, class L>
void load_matrix_sync(fragment<Use, M, N, K, T, L>& f, const float* p, unsigned ldm) {
  static_assert(!std::is_same_v<Use, accumulator>, "an accumulator load needs a layout_t");
  detail::check_ptr(p, ldm, sizeof(float), "load_matrix_sync");
  using F = fragment<Use, M, N, K, T, L>;
  for (int e = 0; e < F::num_elements; ++e) f.x[e] = p[detail::offset(e, F::cols, ldm, std::is_same_v<L, row_major>)];
}
template <int M, int N, int K>
void load_matrix_sync(fragment<accumulator, M, N, K, float>& f, const float* p, unsigned ldm, layout_t lay) {
  detail::check_ptr(p, ldm, sizeof(float), "load_matrix_sync");
  using F = fragment<accumulator, M, N, K, float>;
  for (int e = 0; e < F::num_elements; ++e) f.x[e] = p[detail::offset(e, F::cols, ldm, lay == mem_row_major)];
}
template <int M, int N, int K>
void store_matrix_sync(float* p, const fragment<accumulator, M, N, K, float>& f, unsigned ldm, layout_t lay) {
  detail::check_ptr(p, ldm, sizeof(float), "store_matrix_sync");
  using F = fragment<accumulator, M, N, K, float>;
  for (int e = 0; e < F::num_elements; ++e) p[detail::offset(e, F::cols, ldm, lay == mem_row_major)] = f.x[e];
}

namespace detail {
struct MmaLane {
  const float *a, *b, *c;
  float* d;
};
template <int M, int N, int K>
HKT_EMU_UNINSTRUMENTED void mma_warp(void* const* lanes, int n) {
  if (n != 32) fail("mma_sync needs a full warp of 32 lanes");
  float A[M * K], B[K * N], C[M * N];
  constexpr int ea = M * K / 32, eb = K * N / 32, ec = M * N / 32;
  for (int l = 0; l < 32; ++l) {
    const MmaLane& m = *static_cast<const MmaLane*>(lanes[l]);
    for (int e = 0; e < ea; ++e) A[32 * e + l] = ::hkt_emu::tf32_truncate(m.a[e]);
    for (int e = 0; e < eb; ++e) B[32 * e + l] = ::hkt_emu::tf32_truncate(m.b[e]);
    for (int e = 0; e < ec; ++e) C[32 * e + l] = m.c[e];
  }
  float D[M * N];
  for (int r = 0; r < M; ++r)
    for (int c = 0; c < N; ++c) {
      float s = C[r * N + c];
      for (int k = 0; k < K; ++k) s += A[r * K + k] * B[k * N + c];
      D[r * N + c] = s;
    }
  for (int l = 0; l < 32; ++l) {
    const MmaLane& m = *static_cast<const MmaLane*>(lanes[l]);
    for (int e = 0; e < ec; ++e) m.d[e] = D[32 * e + l];
  }
}
}  // namespace detail

template <int M, int N, int K, class LA, class LB>
void mma_sync(fragment<accumulator, M, N, K, float>& d, const fragment<matrix_a, M, N, K, precision::tf32, LA>& a,
              const fragment<matrix_b, M, N, K, precision::tf32, LB>& b,
              const fragment<accumulator, M, N, K, float>& c) {
  detail::MmaLane me{a.x, b.x, c.x, d.x};
  ::hkt_emu::warp_collective("wmma::mma_sync", &detail::mma_warp<M, N, K>, &me);
}

}  // namespace wmma
}  // namespace nvcuda
