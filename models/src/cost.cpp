// The cost model of HKT.md: FLOPs of the Q K^T score products.
#include "hkt/models/attention.hpp"

namespace hkt::nn {

ScoreCost score_flops(int64_t B, int64_t T, int64_t D, int64_t H, int64_t L) {
  HKT_CHECK(B >= 1 && T >= 1, "score_flops: B and T must be >= 1, got B = ", B, ", T = ", T);
  HKT_CHECK(D >= 1 && H >= 1 && D % H == 0, "score_flops: D (", D, ") must be a positive multiple of H (", H, ")");
  HKT_CHECK(L >= 1 && L <= 62, "score_flops: L must be in [1, 62], got ", L);
  const double bhd = static_cast<double>(B) * static_cast<double>(H) * static_cast<double>(D / H);
  ScoreCost c;
  for (int64_t l = 0; l < L; ++l) {
    // T_l = ceil(T / 2^l)
    const int64_t block = int64_t{1} << l;
    const double tl = static_cast<double>(T / block + (T % block != 0));
    c.per_level.push_back(2.0 * bhd * tl * tl);
    c.total += c.per_level.back();
  }
  c.mha = 2.0 * bhd * static_cast<double>(T) * static_cast<double>(T);
  c.ratio = c.total / c.mha;
  return c;
}

}  // namespace hkt::nn
