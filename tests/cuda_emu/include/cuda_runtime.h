// Stand-in for the CUDA runtime header in emulated builds (tests/cuda_emu).
#pragma once
#ifndef HKT_CUDA_EMULATED
#error "tests/cuda_emu/include is for emulated builds: include tests/cuda_emu/hkt_cuda_emu.hpp first"
#endif
