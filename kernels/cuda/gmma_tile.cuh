// How a block of 128 threads stores 64-row tiles into gmma tiles (wgmma.cuh,
// gmma_at), as float4s, without bank conflicts: host and device functions, so
// that tests/test_smem_layouts.cpp checks the addresses. A 16-byte store is
// served 8 lanes at a time, and in a gmma tile the 16-byte bank group of
// element (n, c) is n % 8 (core matrices are 128 bytes, rows 16 bytes apart),
// so the 8 lanes of a phase must write 8 rows n that differ mod 8.
#pragma once

#include "kernels/cuda/wgmma.cuh"

namespace hkt::cuda {

// A tile of 64 rows as it is (rows r of C4 float4s): unit e (thread e of a
// pass of 128, pass by pass) takes row r, columns c .. c + 3 and writes them
// to gmma_at(r, c, 64) .. + 3: the 8 lanes of a phase take 8 consecutive rows
// of one column (and read 16 bytes from each of 8 rows).
struct GmmaRowsUnit {
  int r, c;
};
__host__ __device__ constexpr GmmaRowsUnit gmma_rows_unit(int e, int c4) {
  return {((e >> 3) / c4) * 8 + (e & 7), 4 * ((e >> 3) % c4)};
}

// Key j of a tile at column key_slot(j) of a transposed tile (V in P V):
// within each group of 8, an A fragment's k index t holds key 2t and t + 4
// key 2t + 1 (the columns of the score fragments it comes from).
__host__ __device__ constexpr int key_slot(int j) { return (j & ~7) | ((j & 1) << 2) | ((j & 7) >> 1); }

// A tile of 64 rows stored transposed (DHP rows n = column d of the source,
// 64 columns = key_slot of the source row): unit u (of 64 C4 / 4) reads the
// 4 x 4 block of rows j0, j0 + 2, j0 + 4, j0 + 6 (keys of one parity in a
// group of 8: key slots k0 .. k0 + 3, k0 = key_slot(j0)) and columns d0 .. d0 + 3;
// its store s writes column d0 + ((s + rot) & 3) as one float4 at
// gmma_at(d0 + ((s + rot) & 3), k0, DHP). Units u .. u + 7 share j0 and take
// 8 consecutive column chunks, whose rot and d0 % 8 differ: the 8 rows of a
// store phase differ mod 8 (the loads: 128 contiguous bytes of a row).
struct GmmaColsUnit {
  int j0, d0, rot;
};
__host__ __device__ constexpr GmmaColsUnit gmma_cols_unit(int u, int c4) {
  return {8 * ((u / c4) >> 1) + ((u / c4) & 1), 4 * (u % c4), ((u % c4) >> 1) & 3};
}

}  // namespace hkt::cuda
