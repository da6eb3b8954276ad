// Shared-memory bank conflicts of the mma kernels' fragment reads and of the
// wgmma forward's tile stores, worked out from the layouts' own index
// functions (kernels/cuda/pair_tile.cuh, attention_variants.hpp's mma_ld, gmma_tile.cuh): a GPU serves a warp's read in phases (32 lanes
// for 4-byte reads, 16 for 8-byte, 8 for 16-byte), and a phase in which one
// of the 32 banks is asked for k different 4-byte words takes k passes. No
// GPU and no timing: the addresses alone decide it. A swizzle or padding
// that stops doing its job fails here, where the emulated suites (which
// check results) would not notice.
#include <doctest/doctest.h>

#include <algorithm>
#include <functional>
#include <map>
#include <set>
#include <vector>

#include "kernels/cuda_emu/hkt_cuda_emu.hpp"
#include "kernels/cuda/attention_common.cuh"
#include "kernels/cuda/attention_variants.hpp"
#include "kernels/cuda/gmma_tile.cuh"
#include "kernels/cuda/pair_tile.cuh"

namespace {

// The passes of the worst phase of one warp-wide read: lane `lane` reads
// `width` bytes at float offset at(g, t) (g = lane / 4, t = lane % 4).
int bank_ways(int width, const std::function<int(int g, int t)>& at) {
  const int per_phase = 128 / width;
  int worst = 0;
  for (int phase = 0; phase < 32 / per_phase; ++phase) {
    std::map<int, std::set<int>> words;  // bank -> distinct words
    for (int lane = phase * per_phase; lane < (phase + 1) * per_phase; ++lane)
      for (int w = 0; w < width / 4; ++w) {
        const int word = at(lane / 4, lane % 4) + w;
        words[word % 32].insert(word);
      }
    for (const auto& [bank, set] : words) worst = std::max(worst, static_cast<int>(set.size()));
  }
  return worst;
}

// A warp-wide fragment read: `width` bytes per lane at at(g, t, j, kk), the
// offset the kernel's loader uses (PairLane, SplitLane), which must be
// layout(g, t, j, kk), the offset the tile's layout gives that value.
struct Read {
  int width;
  std::function<int(int g, int t, int j, int kk)> at, layout;
};
// The worst passes of each read over every fragment of a 64-row tile of DHP
// values (j < 8, kk < DHP / 8); match: whether every offset is the layout's.
template <int DHP>
std::vector<int> worst_ways(const std::vector<Read>& reads, bool& match) {
  std::vector<int> worst(reads.size(), 0);
  for (size_t r = 0; r < reads.size(); ++r)
    for (int j = 0; j < 8; ++j)
      for (int kk = 0; kk < DHP / 8; ++kk) {
        const auto at = [&](int g, int t) { return reads[r].at(g, t, j, kk); };
        worst[r] = std::max(worst[r], bank_ways(reads[r].width, at));
        for (int g = 0; g < 8; ++g)
          for (int t = 0; t < 4; ++t) match = match && at(g, t) == reads[r].layout(g, t, j, kk);
      }
  return worst;
}

// Pair tiles: column pairs (load_b_chunk at col_at, load_a_pair: chunk
// (8 j + g, 4 kk + t)) and row pairs (warp_fb_pair: chunk (4 j + t, 8 n + g), n = kk), LDS.128.
template <int DHP>
std::vector<int> pair_tile_ways(bool& match) {
  using hkt::cuda::PairLane;
  const auto lane = [](int g, int t) { return PairLane<DHP>(4 * g + t); };
  return worst_ways<DHP>(
      {{16, [&](int g, int t, int j, int kk) { return lane(g, t).col_at(j, kk); },
        [](int g, int t, int j, int kk) { return hkt::cuda::pcol_chunk(8 * j + g, 4 * kk + t, DHP); }},
       {16, [&](int g, int t, int j, int kk) { return lane(g, t).row_at(j, kk); },
        [](int g, int t, int j, int kk) { return hkt::cuda::prow_chunk(4 * j + t, 8 * kk + g, DHP); }}},
      match);
}

// Split tiles: k along the row (warp_abt_split: LDS.64 of values (8 j + g,
// 8 kk + 2t, + 1)) and down the column (warp_fb_split: LDS.32 of value
// (8 j + 2t + h, 8 n + g), n = kk, both h).
template <int DHP>
std::vector<int> split_tile_ways(bool& match) {
  using hkt::cuda::SplitLane;
  using hkt::cuda::split_at;
  const auto lane = [](int g, int t) { return SplitLane<DHP>(4 * g + t); };
  std::vector<Read> reads = {{8, [&](int g, int t, int j, int kk) { return lane(g, t).k_at(j, kk); },
                              [](int g, int t, int j, int kk) { return split_at(8 * j + g, 8 * kk + 2 * t, DHP); }}};
  for (int h = 0; h < 2; ++h)
    reads.push_back({4, [=](int g, int t, int j, int n) { return lane(g, t).fb_at(j, n, h); },
                     [=](int g, int t, int j, int n) { return split_at(8 * j + 2 * t + h, 8 * n + g, DHP); }});
  const std::vector<int> w = worst_ways<DHP>(reads, match);
  return {w[0], std::max(w[1], w[2])};
}

}  // namespace

TEST_CASE("smem layouts: a bank that serves two words in one phase is counted as two passes") {
  CHECK(bank_ways(4, [](int g, int t) { return 4 * g + t; }) == 1);       // 32 lanes, 32 banks
  CHECK(bank_ways(4, [](int, int) { return 5; }) == 1);                   // one word: a broadcast
  CHECK(bank_ways(4, [](int g, int t) { return 64 * g + t; }) == 8);      // 8 rows of 64 floats: same banks
  CHECK(bank_ways(16, [](int g, int t) { return 4 * (4 * g + t); }) == 1);  // float4 per lane, contiguous
  CHECK(bank_ways(8, [](int g, int t) { return 64 * t + 2 * g; }) == 4);  // 4 rows of 64 floats in a half warp
}

TEST_CASE("smem layouts: the pair tiles' fragment reads are free of bank conflicts (pair_tile.cuh)") {
  bool match32 = true, match64 = true;
  for (const auto& [label, ways] :
       {std::pair{"DHP = 32", pair_tile_ways<32>(match32)}, {"DHP = 64", pair_tile_ways<64>(match64)}}) {
    const char* name = label;  // CAPTURE's lambda: clang 14 cannot capture a structured binding
    CAPTURE(name);
    CHECK(ways[0] == 1);  // column pairs
    CHECK(ways[1] == 1);  // row pairs
  }
  CHECK(match32);  // PairLane's precomputed offsets are the layouts'
  CHECK(match64);
  // Without the swizzles: column pairs put rows r, r + 1 on the same banks, row pairs the four t.
  CHECK(bank_ways(16, [](int g, int t) { return g * 128 + 4 * t; }) == 2);
  CHECK(bank_ways(16, [](int g, int t) { return t * 256 + 4 * g; }) == 4);
}

TEST_CASE("smem layouts: the split tiles' fragment reads are free of bank conflicts (pair_tile.cuh)") {
  bool match32 = true, match64 = true;
  for (const auto& [label, ways] :
       {std::pair{"DHP = 32", split_tile_ways<32>(match32)}, {"DHP = 64", split_tile_ways<64>(match64)}}) {
    const char* name = label;  // CAPTURE's lambda: clang 14 cannot capture a structured binding
    CAPTURE(name);
    CHECK(ways[0] == 1);  // warp_abt_split
    CHECK(ways[1] == 1);  // warp_fb_split
  }
  CHECK(match32);  // SplitLane's precomputed offsets are split_at's
  CHECK(match64);
  // Without the swizzle (rows of 64 floats), both would take 4 passes: 4 rows on the same banks.
  CHECK(bank_ways(8, [](int g, int t) { return 64 * g + 2 * t; }) == 4);
  CHECK(bank_ways(4, [](int g, int t) { return 64 * 2 * t + g; }) == 4);
}

TEST_CASE("smem layouts: tiles at mma_ld read as PTX fragments are free of bank conflicts (mma_tf32.cuh)") {
  for (const int dhp : {32, 64}) {
    CAPTURE(dhp);
    const int ld = hkt::cuda::mma_ld(dhp);
    // load_a_split and load_b_split (warp_abt): A[g][t] at row g, column t (and + 4, rows + 8).
    CHECK(bank_ways(4, [&](int g, int t) { return g * ld + t; }) == 1);
    // warp_fb: B[8j + 2t][8n + g].
    CHECK(bank_ways(4, [&](int g, int t) { return 2 * t * ld + g; }) == 1);
    // warp_ab: B[8kk + 2t][8n + g] (the pair order; the PTX order's B[8kk + t][8n + g] would take 2 passes).
    CHECK(bank_ways(4, [&](int g, int t) { return 2 * t * ld + g; }) == 1);
    CHECK(bank_ways(4, [&](int g, int t) { return t * ld + g; }) == 2);
    // Its A (dS at lay.lds = 68, load_a_split_k): one float2 of row g at column 2t. Two passes,
    // the same as the PTX order's two 4-byte reads in one pass each.
    const int lds = hkt::cuda::Layout(hkt::cuda::kMmaTile, dhp, 1).lds;
    CHECK(bank_ways(8, [&](int g, int t) { return g * lds + 2 * t; }) == 2);
  }
}

// The wgmma forward's stores of Q and K (as they are) and of V (transposed)
// into gmma tiles (gmma_tile.cuh): every element of the tile written once, as
// float4s whose 8-lane phases hit 8 different 16-byte bank groups, and the
// loads' 8-lane phases read 128 contiguous bytes of one source row.
TEST_CASE("smem layouts: the gmma tiles' float4 stores are free of bank conflicts (gmma_tile.cuh)") {
  using hkt::cuda::gmma_at;
  for (const int dhp : {32, 64}) {
    CAPTURE(dhp);
    const int c4 = dhp / 4;
    int worst_rows = 0, worst_cols = 0;
    std::vector<int> rows_written(size_t(64 * dhp)), cols_written(size_t(64 * dhp));
    bool rows_right = true, cols_right = true, loads_contiguous = true;
    for (int warp = 0; warp < 64 * c4 / 32; ++warp) {  // every unit of the natural tile, a warp at a time
      const auto u = [&](int g, int t) { return hkt::cuda::gmma_rows_unit(32 * warp + 4 * g + t, c4); };
      worst_rows = std::max(worst_rows, bank_ways(16, [&](int g, int t) { return gmma_at(u(g, t).r, u(g, t).c, 64); }));
      for (int lane = 0; lane < 32; ++lane) {
        const auto x = u(lane / 4, lane % 4);
        for (int e = 0; e < 4; ++e) ++rows_written[size_t(gmma_at(x.r, x.c + e, 64))];
        rows_right = rows_right && gmma_at(x.r, x.c + 3, 64) == gmma_at(x.r, x.c, 64) + 3;
      }
    }
    for (int warp = 0; warp < 64 * c4 / 4 / 32; ++warp) {  // the transposed tile's 4 x 4 blocks
      const auto u = [&](int g, int t) { return hkt::cuda::gmma_cols_unit(32 * warp + 4 * g + t, c4); };
      for (int s = 0; s < 4; ++s)
        worst_cols = std::max(worst_cols, bank_ways(16, [&](int g, int t) {
                                const auto x = u(g, t);
                                return gmma_at(x.d0 + ((s + x.rot) & 3), hkt::cuda::key_slot(x.j0), dhp);
                              }));
      for (int lane = 0; lane < 32; ++lane) {
        const auto x = u(lane / 4, lane % 4);
        const auto first = u((lane & ~7) / 4, 0);  // the lane that starts this lane's phase
        loads_contiguous = loads_contiguous && x.j0 == first.j0 && x.d0 == first.d0 + 4 * (lane & 7);
        for (int q = 0; q < 4; ++q)
          for (int d = 0; d < 4; ++d) {
            const int at = gmma_at(x.d0 + d, hkt::cuda::key_slot(x.j0 + 2 * q), dhp);
            ++cols_written[size_t(at)];
            // the float4 of column x.d0 + d holds the key slots k0 .. k0 + 3 in q order
            cols_right = cols_right && at == gmma_at(x.d0 + d, hkt::cuda::key_slot(x.j0), dhp) + q;
          }
      }
    }
    CHECK(worst_rows == 1);
    CHECK(worst_cols == 1);
    CHECK(rows_right);
    CHECK(cols_right);
    CHECK(loads_contiguous);
    CHECK(std::all_of(rows_written.begin(), rows_written.end(), [](int n) { return n == 1; }));
    CHECK(std::all_of(cols_written.begin(), cols_written.end(), [](int n) { return n == 1; }));
  }
  // Without the rotation, a phase of the transposed stores would hit 2 bank groups 4 times each.
  CHECK(bank_ways(16, [](int g, int t) {
          const auto x = hkt::cuda::gmma_cols_unit(4 * g + t, 16);
          return gmma_at(x.d0, hkt::cuda::key_slot(x.j0), 64);
        }) == 4);
}
