// What a test needs to call emulated kernels (hkt_cuda_emu.hpp): include this,
// then the kernels' host headers (e.g. kernels/cuda/attention.hpp).
//
// What the emulated .cu files define in hkt::cuda lands in
// hkt::cuda_emulated::cuda (a namespace definition of `cuda` in hkt reopens
// the inline namespace's), so it cannot clash with the real kernels of a
// libhkt built with CUDA. The host pointers a test passes are the emulated
// device memory.
#pragma once

namespace hkt {
inline namespace cuda_emulated {
namespace cuda {}
}  // namespace cuda_emulated
}  // namespace hkt

namespace hkt_emu {
// Runs the threads of a block, and the blocks of a grid, in reverse order
// (true) or in order (false, the default).
void set_reverse_order(bool reverse);
}  // namespace hkt_emu
