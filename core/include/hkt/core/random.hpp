// Counter-based random numbers (Philox-4x32-10, Salmon et al. 2011).
//
// A Generator is a (seed, offset) pair. An op that needs n random numbers
// reserves n counters and element i uses counter offset + i, so the values
// depend only on the seed and the element's index, never on the number of
// threads or on the order in which they run.
#pragma once
#include <array>
#include <cstdint>

namespace hkt {

// Compiled for the GPU too (kernels/cuda/random.cu), so both backends draw the same bits.
#if defined(__CUDACC__)
#define HKT_PHILOX_HD __host__ __device__ inline
#else
#define HKT_PHILOX_HD inline
#endif

struct PhiloxBlock {
  uint32_t x, y, z, w;
};

// Philox-4x32-10 of the 128-bit counter (counter_hi, counter_lo) under the 64-bit key.
HKT_PHILOX_HD PhiloxBlock philox4x32_block(uint64_t counter_lo, uint64_t counter_hi, uint64_t key) {
  uint32_t c0 = static_cast<uint32_t>(counter_lo), c1 = static_cast<uint32_t>(counter_lo >> 32);
  uint32_t c2 = static_cast<uint32_t>(counter_hi), c3 = static_cast<uint32_t>(counter_hi >> 32);
  uint32_t k0 = static_cast<uint32_t>(key), k1 = static_cast<uint32_t>(key >> 32);
  for (int r = 0; r < 10; ++r) {
    const uint64_t p0 = uint64_t{0xD2511F53u} * c0;
    const uint64_t p1 = uint64_t{0xCD9E8D57u} * c2;
    const uint32_t n0 = static_cast<uint32_t>(p1 >> 32) ^ c1 ^ k0;
    const uint32_t n2 = static_cast<uint32_t>(p0 >> 32) ^ c3 ^ k1;
    c1 = static_cast<uint32_t>(p1);
    c3 = static_cast<uint32_t>(p0);
    c0 = n0;
    c2 = n2;
    k0 += 0x9E3779B9u;
    k1 += 0xBB67AE85u;
  }
  return {c0, c1, c2, c3};
}

inline std::array<uint32_t, 4> philox4x32(uint64_t counter_lo, uint64_t counter_hi, uint64_t key) {
  const PhiloxBlock r = philox4x32_block(counter_lo, counter_hi, key);
  return {r.x, r.y, r.z, r.w};
}

// Uniform in (0, 1] from 32 random bits (never 0, so log() is safe).
HKT_PHILOX_HD double uint_to_unit(uint32_t x) { return (static_cast<double>(x) + 1.0) * (1.0 / 4294967296.0); }

class Generator {
 public:
  explicit Generator(uint64_t seed = 0x5EEDull) : seed_(seed) {}
  void manual_seed(uint64_t seed) { seed_ = seed; offset_ = 0; }
  uint64_t seed() const { return seed_; }
  uint64_t offset() const { return offset_; }
  void set_offset(uint64_t off) { offset_ = off; }
  // Reserves n counters; returns the first.
  uint64_t reserve(uint64_t n) {
    const uint64_t first = offset_;
    offset_ += n;
    return first;
  }

 private:
  uint64_t seed_;
  uint64_t offset_ = 0;
};

// The process-wide default generator (used when an op is given none).
Generator& default_generator();
void manual_seed(uint64_t seed);

}  // namespace hkt
