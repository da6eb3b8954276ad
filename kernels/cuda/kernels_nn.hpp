// Declarations of the CUDA kernels of the nn ops (loss, conv, optimizers,
// indexing); see kernels.hpp for the conventions. Plain C++.
#pragma once
#include <cstdint>
#include <vector>

#include "hkt/core/shape.hpp"
#include "hkt/kernels/optim_defs.hpp"  // opt::MultiTensor

namespace hkt::cuda {

// --- loss.cu: cross-entropy over contiguous [N, C] logits, int64 targets [N] ---
// Target check: copies the targets to the host (the result goes to the host anyway).
void ce_check_targets(const int64_t* t, int64_t N, int64_t C, int64_t ignore, int64_t* bad_row, int64_t* bad_value,
                      int64_t* count);
template <class T>
void ce_forward(const void* x, const int64_t* t, int64_t N, int64_t C, int64_t ignore, void* loss, void* lse);
template <class T>
void ce_backward(const void* x, const int64_t* t, int64_t N, int64_t C, int64_t ignore, const void* lse,
                 const void* g, int64_t g_stride, double scale, void* dx);

// --- conv.cu: causal depthwise conv1d (x [B, T, C], w [C, k], y [B, ceil(T/s), C]) ---
template <class T>
void conv_forward(const void* x, const void* w, const void* bias, void* y, int64_t B, int64_t len, int64_t C,
                  int64_t k, int64_t s);
template <class T>
void conv_backward(const void* x, const void* w, const void* g, int64_t B, int64_t len, int64_t C, int64_t k,
                   int64_t s, void* dx, void* dw, void* db);

// --- gated_mix.cu: y = w a + (1 - w) b per channel (a, b, y [rows, C], w [C]) ---
template <class T>
void gated_mix_forward(const void* a, const void* b, const void* w, void* y, int64_t rows, int64_t C);
// Any of da, db, dw may be null; a and b are read only for dw.
template <class T>
void gated_mix_backward(const void* a, const void* b, const void* w, const void* g, int64_t rows, int64_t C, void* da,
                        void* db, void* dw);

// --- optim.cu ---------------------------------------------------------------
template <class T>
void sgd_update(void* p, const void* g, void* buf, int64_t n, double lr, double momentum, double dampening, double wd,
                bool nesterov, bool first_step);
template <class T>
void adamw_update(void* p, const void* g, void* m, void* v, int64_t n, double beta1, double beta2, double eps,
                  double decay, double step_size, double bc2_sqrt);
// One parameter of a multi-tensor AdamW step (device pointers, per-tensor scalars): the op
// list's own struct, so the registration passes its vector through unchanged.
using AdamWTensor = opt::AdamWTensor;
// All the tensors (one dtype T) in one launch.
template <class T>
void adamw_update_multi(const std::vector<AdamWTensor>& ts, double beta1, double beta2, double eps);
template <class T>
double sum_squares(const void* x, int64_t n);
template <class T>
void scale(void* x, int64_t n, double factor);
// out[i] = sum_squares<T>(ts[i]) to the bit (the same chunks, merged in the
// same order), in two launches per 64 tensors and one copy to the host for all.
template <class T>
void sum_squares_multi(const std::vector<opt::MultiTensor>& ts, double* out);
// scale<T> of every tensor, one launch per 64 tensors.
template <class T>
void scale_multi(const std::vector<opt::MultiTensor>& ts, double factor);

// --- index.cu (signatures of ops/src/index.cpp's tables) ---------------------
int64_t first_out_of_range(const int64_t* idx, const Strides& is, const Shape& shape, int64_t size, int64_t* bad);
template <class T>
void indexed_gather(const void* x, const Strides& xs, int64_t x_dim_stride, const int64_t* idx, const Strides& is,
                    void* out, const Shape& shape);
template <class T>
void index_add_rows(const void* g, const int64_t* idx, int64_t outer, int64_t n, int64_t inner, void* gx,
                    int64_t size);
template <class T>
void scatter_add_dim(const void* g, const Strides& gs, int64_t g_dim, const int64_t* idx, const Strides& is,
                     int64_t i_dim, void* gx, const Strides& gxs, int64_t gx_dim, const Shape& cols, int64_t len);

}  // namespace hkt::cuda
