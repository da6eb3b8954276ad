// Host entry points of the fused CUDA attention (attention.cu); plain C++.
// Same problem and conventions as kernels/cpu/hkt_attention.cpp (see there and
// docs/cuda.md): q[l], k[l] [B, H, T_l, dh], v [B, H, T, dh], lambda [H, L],
// valid [B, T] or null; o [B, H, T, dh], lse [B, H, T]. Device pointers.
#pragma once
#include <cstdint>
#include <vector>

#include "hkt/kernels/op_list.hpp"

namespace hkt::cuda {

using AttnShape = sig::AttnShape;  // the op list's (hkt/kernels/op_list.hpp)

template <class T>
void attention_forward(const AttnShape& s, const std::vector<const void*>& q, const std::vector<const void*>& k,
                       const void* v, const void* lambda, const bool* valid, void* o, void* lse);
// dq, dk: empty when not wanted; dv, dlambda: null when not wanted.
template <class T>
void attention_backward(const AttnShape& s, const std::vector<const void*>& q, const std::vector<const void*>& k,
                        const void* v, const void* lambda, const bool* valid, const void* o, const void* lse,
                        const void* dout, const std::vector<void*>& dq, const std::vector<void*>& dk, void* dv,
                        void* dlambda);

}  // namespace hkt::cuda
