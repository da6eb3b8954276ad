// Counter-based random numbers (Philox-4x32-10, Salmon et al. 2011).
//
// A Generator is a (seed, offset) pair. An op that needs n random numbers
// reserves n counters and element i uses counter offset + i, so the values
// depend only on the seed and the element's index, never on the number of
// threads or on the order in which they run.
#pragma once
#include <array>
#include <cstdint>
#include <stdexcept>
#include <string>

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
    if (slice_global_ != 0) return reserve_slice(n);
    const uint64_t first = offset_;
    offset_ += n;
    return first;
  }
  // Data-parallel training (docs/distributed.md): this process holds examples
  // [first, first + local) of a batch of `global` examples. While set, reserve(n)
  // for a tensor whose leading dimension is the local batch (n = local x per
  // example) returns the counters that the whole batch's tensor would give these
  // examples and advances the offset by the whole batch's count (global x per
  // example), so that a process draws the same bits as one process holding the
  // whole batch. n must be a multiple of `local` (std::invalid_argument
  // otherwise). clear_batch_slice() ends it.
  void set_batch_slice(uint64_t first, uint64_t local, uint64_t global) {
    if (local == 0 || first + local > global)
      throw std::invalid_argument("Generator::set_batch_slice: examples [" + std::to_string(first) + ", " +
                                  std::to_string(first + local) + ") are not a non-empty part of a batch of " +
                                  std::to_string(global));
    slice_first_ = first;
    slice_local_ = local;
    slice_global_ = global;
  }
  void clear_batch_slice() { slice_first_ = slice_local_ = slice_global_ = 0; }

 private:
  uint64_t reserve_slice(uint64_t n) {
    if (n % slice_local_ != 0)
      throw std::invalid_argument("Generator: " + std::to_string(n) + " random numbers asked for while the batch is " +
                                  "split across processes, not a multiple of the local batch (" +
                                  std::to_string(slice_local_) + " examples): a random op on a tensor whose "
                                  "leading dimension is not the batch");
    const uint64_t per = n / slice_local_;
    const uint64_t first = offset_ + slice_first_ * per;
    offset_ += per * slice_global_;
    return first;
  }
  uint64_t seed_;
  uint64_t offset_ = 0;
  uint64_t slice_first_ = 0, slice_local_ = 0, slice_global_ = 0;
};

// The process-wide default generator (used when an op is given none).
Generator& default_generator();
void manual_seed(uint64_t seed);

}  // namespace hkt
