// The CPU backend: every CPU kernel of the op list (hkt/kernels/op_list.hpp),
// registered here and nowhere else, through adapters from the shared void*
// signatures (hkt/kernels/signatures.hpp) to the typed kernels of kernels/cpu/.
#include "kernels/backends.hpp"
#include "kernels/cpu/attention.hpp"
#include "kernels/cpu/bias_gelu.hpp"
#include "kernels/cpu/conv.hpp"
#include "kernels/cpu/elementwise.hpp"
#include "kernels/cpu/gated_mix.hpp"
#include "kernels/cpu/gemm.hpp"
#include "kernels/cpu/htransformer.hpp"
#include "kernels/cpu/index.hpp"
#include "kernels/cpu/layer_norm.hpp"
#include "kernels/cpu/local_attention.hpp"
#include "kernels/cpu/loss.hpp"
#include "kernels/cpu/optim.hpp"
#include "kernels/cpu/random.hpp"
#include "kernels/cpu/reduce.hpp"
#include "kernels/cpu/softmax.hpp"

namespace hkt::kernels {
namespace {

template <class T> const T* in(const void* p) { return static_cast<const T*>(p); }
template <class T> T* out(void* p) { return static_cast<T*>(p); }

template <class Op, class T>
void unary(const void* x, const Strides& xs, void* y, const Shape& shape) {
  cpu::unary<Op, T>(in<T>(x), xs, out<T>(y), contiguous_strides(shape), shape);
}
template <class Op, class T>
void unary_grad(const void* x, const void* y, const void* g, void* gx, int64_t n) {
  cpu::unary_grad<Op, T>(in<T>(x), in<T>(y), in<T>(g), out<T>(gx), n);
}
template <class Op, class T, class R>
void binary(const void* a, const Strides& as, const void* b, const Strides& bs, void* o, const Shape& shape) {
  cpu::binary<Op, T, R>(in<T>(a), as, in<T>(b), bs, out<R>(o), contiguous_strides(shape), shape);
}
template <class T, template <class> class R>
void reduce(const void* x, const Shape& shape, const Strides& strides, const std::vector<bool>& red, void* o) {
  cpu::reduce<T>(in<T>(x), shape, strides, red, out<T>(o), R<T>{});
}
template <class T, bool Log>
void softmax(const void* x, void* y, int64_t outer, int64_t D, int64_t inner) {
  cpu::softmax_forward<T, Log>(in<T>(x), out<T>(y), outer, D, inner);
}
template <class T, bool Log>
void softmax_grad(const void* y, const void* g, void* dx, int64_t outer, int64_t D, int64_t inner) {
  cpu::softmax_backward<T, Log>(in<T>(y), in<T>(g), out<T>(dx), outer, D, inner);
}
template <class T>
void layer_norm(const void* x, const void* w, const void* b, void* y, void* mean, void* rstd, int64_t rows, int64_t D,
                double eps) {
  cpu::layer_norm_forward<T>(in<T>(x), in<T>(w), in<T>(b), out<T>(y), out<T>(mean), out<T>(rstd), rows, D, eps);
}
template <class T>
void layer_norm_grad(const void* x, const void* g, const void* w, const void* mean, const void* rstd, int64_t rows,
                     int64_t D, void* dx, void* dw, void* db) {
  cpu::layer_norm_backward<T>(in<T>(x), in<T>(g), in<T>(w), in<T>(mean), in<T>(rstd), rows, D, out<T>(dx),
                              out<T>(dw), out<T>(db));
}
template <class T>
void gated_mix(const void* a, const void* b, const void* w, void* y, int64_t rows, int64_t C) {
  cpu::gated_mix_forward<T>(in<T>(a), in<T>(b), in<T>(w), out<T>(y), rows, C);
}
template <class T>
void gated_mix_grad(const void* a, const void* b, const void* w, const void* g, int64_t rows, int64_t C, void* da,
                    void* db, void* dw) {
  cpu::gated_mix_backward<T>(in<T>(a), in<T>(b), in<T>(w), in<T>(g), rows, C, out<T>(da), out<T>(db), out<T>(dw));
}
template <class T>
void conv(const void* x, const void* w, const void* bias, void* y, int64_t B, int64_t len, int64_t C, int64_t k,
          int64_t s) {
  cpu::causal_dwconv1d_forward<T>(in<T>(x), in<T>(w), in<T>(bias), out<T>(y), B, len, C, k, s);
}
template <class T>
void conv_grad(const void* x, const void* w, const void* g, int64_t B, int64_t len, int64_t C, int64_t k, int64_t s,
               void* dx, void* dw, void* db) {
  cpu::causal_dwconv1d_backward<T>(in<T>(x), in<T>(w), in<T>(g), B, len, C, k, s, out<T>(dx), out<T>(dw), out<T>(db));
}
template <class T>
void ce(const void* x, const int64_t* t, int64_t N, int64_t C, int64_t ignore, void* loss, void* lse) {
  cpu::ce_forward<T>(in<T>(x), t, N, C, ignore, out<T>(loss), out<T>(lse));
}
template <class T>
void ce_grad(const void* x, const int64_t* t, int64_t N, int64_t C, int64_t ignore, const void* lse, const void* g,
             int64_t g_stride, double scale, void* dx) {
  cpu::ce_backward<T>(in<T>(x), t, N, C, ignore, in<T>(lse), in<T>(g), g_stride, scale, out<T>(dx));
}
template <class T>
void dropout_mask(void* o, int64_t n, uint64_t seed, uint64_t first, double p) {
  cpu::dropout_mask<T>(out<T>(o), n, seed, first, p);
}
template <class D>
void copy(const void* src, DType sdt, const Strides& ss, void* dst, const Strides& ds, const Shape& shape) {
  dispatch_all(sdt, [&]<class S>() { cpu::copy<S, D>(in<S>(src), ss, out<D>(dst), ds, shape); });
}
template <class T>
void fill(void* dst, const Strides& ds, const Shape& shape, double v) {
  cpu::fill<T>(out<T>(dst), ds, shape, static_cast<T>(v));
}
template <class T>
void uniform(void* o, int64_t n, uint64_t seed, uint64_t first, double lo, double hi) {
  cpu::rand_uniform<T>(out<T>(o), n, seed, first, lo, hi);
}
template <class T>
void normal(void* o, int64_t n, uint64_t seed, uint64_t first, double mean, double std) {
  cpu::rand_normal<T>(out<T>(o), n, seed, first, mean, std);
}
template <class T>
void copy_same(const void* src, const Strides& ss, void* dst, const Strides& ds, const Shape& shape) {
  cpu::copy<T, T>(in<T>(src), ss, out<T>(dst), ds, shape);
}
template <class T>
void gather(const void* x, const Strides& xs, int64_t xd, const int64_t* idx, const Strides& is, void* o,
            const Shape& shape) {
  cpu::indexed_gather<T>(in<T>(x), xs, xd, idx, is, out<T>(o), shape);
}
template <class T>
void index_add(const void* g, const int64_t* idx, int64_t outer, int64_t n, int64_t inner, void* gx, int64_t size) {
  cpu::index_add_rows<T>(in<T>(g), idx, outer, n, inner, out<T>(gx), size);
}
template <class T>
void scatter_add(const void* g, const Strides& gs, int64_t g_dim, const int64_t* idx, const Strides& is, int64_t i_dim,
                 void* gx, const Strides& gxs, int64_t gx_dim, const Shape& cols, int64_t len) {
  cpu::scatter_add_dim<T>(in<T>(g), gs, g_dim, idx, is, i_dim, out<T>(gx), gxs, gx_dim, cols, len);
}
template <class T>
void where(const void* c, const Strides& cs, const void* a, const Strides& as, const void* b, const Strides& bs,
           void* o, const Shape& shape) {
  cpu::where<T>(in<bool>(c), cs, in<T>(a), as, in<T>(b), bs, out<T>(o), shape);
}
template <class T>
void gemm_batched(bool ta, bool tb, int64_t m, int64_t n, int64_t k, const void* a, int64_t lda, const int64_t* a_off,
                  const void* b, int64_t ldb, const int64_t* b_off, void* c, int64_t batch) {
  cpu::gemm_batched<T>(ta, tb, m, n, k, in<T>(a), lda, a_off, in<T>(b), ldb, b_off, out<T>(c), batch);
}
template <class T>
void sgd(void* p, const void* g, void* buf, int64_t n, double lr, double momentum, double dampening, double wd,
         bool nesterov, bool first_step) {
  cpu::sgd_update<T>(out<T>(p), in<T>(g), out<T>(buf), n, lr, momentum, dampening, wd, nesterov, first_step);
}
template <class T>
void adamw(void* p, const void* g, void* m, void* v, int64_t n, double beta1, double beta2, double eps, double decay,
           double step_size, double bc2_sqrt) {
  cpu::adamw_update<T>(out<T>(p), in<T>(g), out<T>(m), out<T>(v), n, beta1, beta2, eps, decay, step_size, bc2_sqrt);
}
template <class T>
void adamw_multi(const std::vector<opt::AdamWTensor>& ts, double beta1, double beta2, double eps) {
  for (const opt::AdamWTensor& t : ts)
    adamw<T>(t.p, t.g, t.m, t.v, t.n, beta1, beta2, eps, t.decay, t.step_size, t.bc2_sqrt);
}
template <class T>
double sum_squares(const void* x, int64_t n) {
  return cpu::sum_squares<T>(in<T>(x), n);
}
template <class T>
void scale(void* x, int64_t n, double factor) {
  cpu::scale<T>(out<T>(x), n, factor);
}
template <class T>
void sum_squares_multi(const std::vector<opt::MultiTensor>& ts, double* o) {
  for (size_t i = 0; i < ts.size(); ++i) o[i] = cpu::sum_squares<T>(in<T>(ts[i].x), ts[i].n);
}
template <class T>
void scale_multi(const std::vector<opt::MultiTensor>& ts, double factor) {
  for (const opt::MultiTensor& t : ts) cpu::scale<T>(out<T>(t.x), t.n, factor);
}
template <class T>
void bias_gelu(const void* x, const void* b, void* y, int64_t rows, int64_t C, bool approximate) {
  if (approximate) cpu::bias_gelu_forward<T, ew::GeluTanh>(in<T>(x), in<T>(b), out<T>(y), rows, C);
  else cpu::bias_gelu_forward<T, ew::GeluErf>(in<T>(x), in<T>(b), out<T>(y), rows, C);
}
template <class T>
void bias_gelu_grad(const void* x, const void* b, const void* g, void* dx, int64_t rows, int64_t C, bool approximate) {
  if (approximate) cpu::bias_gelu_backward<T, ew::GeluTanh>(in<T>(x), in<T>(b), in<T>(g), out<T>(dx), rows, C);
  else cpu::bias_gelu_backward<T, ew::GeluErf>(in<T>(x), in<T>(b), in<T>(g), out<T>(dx), rows, C);
}
template <class T>
cpu::AttnArgs<T> attn_args(const sig::AttnShape& s, const std::vector<const void*>& q,
                           const std::vector<const void*>& k, const void* v, const void* lambda, const bool* valid) {
  cpu::AttnArgs<T> a;
  a.B = s.B, a.H = s.H, a.len = s.T, a.dh = s.dh, a.L = s.L;
  for (const void* p : q) a.q.push_back(in<T>(p));
  for (const void* p : k) a.k.push_back(in<T>(p));
  a.v = in<T>(v), a.lambda = in<T>(lambda), a.valid = valid;
  a.causal = s.causal, a.scale = s.scale;
  return a;
}
template <class T>
void attention(const sig::AttnShape& s, const std::vector<const void*>& q, const std::vector<const void*>& k,
               const void* v, const void* lambda, const bool* valid, void* o, void* lse) {
  cpu::attention_forward<T>(attn_args<T>(s, q, k, v, lambda, valid), out<T>(o), out<T>(lse));
}
template <class T>
void attention_grad(const sig::AttnShape& s, const std::vector<const void*>& q, const std::vector<const void*>& k,
                    const void* v, const void* lambda, const bool* valid, const void* o, const void* lse,
                    const void* dout, const std::vector<void*>& dq, const std::vector<void*>& dk, void* dv,
                    void* dlambda) {
  std::vector<T*> dqt, dkt;
  for (void* p : dq) dqt.push_back(out<T>(p));
  for (void* p : dk) dkt.push_back(out<T>(p));
  cpu::attention_backward<T>(attn_args<T>(s, q, k, v, lambda, valid), in<T>(o), in<T>(lse), in<T>(dout), dqt, dkt,
                             out<T>(dv), out<T>(dlambda));
}

// H-Transformer-1D attention (kernels/cpu/htransformer.hpp).
cpu::HtrDims htr_dims(const sig::HtrShape& d) {
  return {d.B, d.H, d.T, d.dh, d.dv, d.block, d.Tp, d.nr, d.L, d.causal, d.scale};
}
template <class T>
void htransformer(const sig::HtrShape& d, const void* q, const void* k, const void* v, const bool* valid,
                  const void* bias, void* y, void* lse) {
  cpu::htransformer_forward<T>(htr_dims(d), in<T>(q), in<T>(k), in<T>(v), valid, in<T>(bias), out<T>(y), out<T>(lse));
}
template <class T>
void htransformer_grad(const sig::HtrShape& d, const void* q, const void* k, const void* v, const bool* valid,
                       const void* bias, const void* y, const void* lse, const void* g, void* dq, void* dk, void* dv,
                       void* dbias) {
  cpu::htransformer_backward<T>(htr_dims(d), in<T>(q), in<T>(k), in<T>(v), valid, in<T>(bias), in<T>(y), in<T>(lse),
                                in<T>(g), out<T>(dq), out<T>(dk), out<T>(dv), out<T>(dbias));
}

// Local (sliding-window) attention (kernels/cpu/local_attention.hpp).
template <class T>
void local_attn(const void* q, const void* k, const void* v, const bool* valid, void* o, void* lse, int64_t B,
                int64_t H, int64_t len, int64_t dh, int64_t w, bool causal, double scale) {
  cpu::local_attention_forward<T>({B, H, len, dh, w, causal, scale}, in<T>(q), in<T>(k), in<T>(v), valid, out<T>(o),
                                  out<T>(lse));
}
template <class T>
void local_attn_grad(const void* q, const void* k, const void* v, const bool* valid, const void* o, const void* lse,
                     const void* g, int64_t B, int64_t H, int64_t len, int64_t dh, int64_t w, bool causal,
                     double scale, void* dq, void* dk, void* dv) {
  cpu::local_attention_backward<T>({B, H, len, dh, w, causal, scale}, in<T>(q), in<T>(k), in<T>(v), valid, in<T>(o),
                                   in<T>(lse), in<T>(g), out<T>(dq), out<T>(dk), out<T>(dv));
}

constexpr auto kCpu = DeviceType::CPU;

// The float32 and float64 instances of a kernel template F<T, Args...>.
#define HKT_CPU_FLOAT(table, ...)                                 \
  do {                                                            \
    (table).set(kCpu, DType::Float32, &__VA_ARGS__<float>);       \
    (table).set(kCpu, DType::Float64, &__VA_ARGS__<double>);      \
  } while (0)

// ... and the int64 and bool ones.
#define HKT_CPU_ALL(table, ...)                                  \
  do {                                                           \
    HKT_CPU_FLOAT(table, __VA_ARGS__);                           \
    (table).set(kCpu, DType::Int64, &__VA_ARGS__<int64_t>);      \
    (table).set(kCpu, DType::Bool, &__VA_ARGS__<bool>);          \
  } while (0)

}  // namespace

void register_cpu_kernels(Tables& t) {
  HKT_CPU_ALL(t.copy, copy);
  HKT_CPU_ALL(t.fill, fill);
  HKT_CPU_ALL(t.cat, copy_same);
  t.index_check.set(kCpu, DType::Int64, &cpu::first_out_of_range);
  HKT_CPU_ALL(t.gather, gather);
  HKT_CPU_FLOAT(t.index_add, index_add);
  HKT_CPU_FLOAT(t.scatter_add, scatter_add);
  HKT_CPU_ALL(t.where, where);
  HKT_CPU_FLOAT(t.matmul, gemm_batched);
  HKT_CPU_FLOAT(t.sgd, sgd);
  HKT_CPU_FLOAT(t.adamw, adamw);
  HKT_CPU_FLOAT(t.adamw_multi, adamw_multi);
  HKT_CPU_FLOAT(t.sum_squares, sum_squares);
  HKT_CPU_FLOAT(t.scale, scale);
  HKT_CPU_FLOAT(t.sum_squares_multi, sum_squares_multi);
  HKT_CPU_FLOAT(t.scale_multi, scale_multi);
  HKT_CPU_FLOAT(t.uniform, uniform);
  HKT_CPU_FLOAT(t.normal, normal);
#define HKT_REG(name, S)                                                    \
  t.name.set(kCpu, DType::Float32, &unary<ew::S, float>);                   \
  t.name.set(kCpu, DType::Float64, &unary<ew::S, double>);                  \
  t.name##_backward.set(kCpu, DType::Float32, &unary_grad<ew::S, float>);   \
  t.name##_backward.set(kCpu, DType::Float64, &unary_grad<ew::S, double>);
  HKT_UNARY_OPS(HKT_REG)
#undef HKT_REG
#define HKT_REG(name, S)                                                    \
  t.name.set(kCpu, DType::Float32, &binary<ew::S, float, float>);          \
  t.name.set(kCpu, DType::Float64, &binary<ew::S, double, double>);        \
  if constexpr (!std::is_same_v<ew::S, ew::Div> && !std::is_same_v<ew::S, ew::Pow>) \
    t.name.set(kCpu, DType::Int64, &binary<ew::S, int64_t, int64_t>);
  HKT_BINARY_OPS(HKT_REG)
#undef HKT_REG
#define HKT_REG(name, S)                                                    \
  t.name.set(kCpu, DType::Float32, &binary<ew::S, float, bool>);           \
  t.name.set(kCpu, DType::Float64, &binary<ew::S, double, bool>);          \
  t.name.set(kCpu, DType::Int64, &binary<ew::S, int64_t, bool>);           \
  t.name.set(kCpu, DType::Bool, &binary<ew::S, bool, bool>);
  HKT_COMPARE_OPS(HKT_REG)
#undef HKT_REG

  t.sum.set(kCpu, DType::Float32, &reduce<float, cpu::SumReducer>);
  t.sum.set(kCpu, DType::Float64, &reduce<double, cpu::SumReducer>);
  t.sum.set(kCpu, DType::Int64, &reduce<int64_t, cpu::SumReducer>);
  t.max.set(kCpu, DType::Float32, &reduce<float, cpu::MaxReducer>);
  t.max.set(kCpu, DType::Float64, &reduce<double, cpu::MaxReducer>);
  t.max.set(kCpu, DType::Int64, &reduce<int64_t, cpu::MaxReducer>);
  t.softmax.set(kCpu, DType::Float32, &softmax<float, false>);
  t.softmax.set(kCpu, DType::Float64, &softmax<double, false>);
  t.log_softmax.set(kCpu, DType::Float32, &softmax<float, true>);
  t.log_softmax.set(kCpu, DType::Float64, &softmax<double, true>);
  t.softmax_backward.set(kCpu, DType::Float32, &softmax_grad<float, false>);
  t.softmax_backward.set(kCpu, DType::Float64, &softmax_grad<double, false>);
  t.log_softmax_backward.set(kCpu, DType::Float32, &softmax_grad<float, true>);
  t.log_softmax_backward.set(kCpu, DType::Float64, &softmax_grad<double, true>);
  HKT_CPU_FLOAT(t.layer_norm, layer_norm);
  HKT_CPU_FLOAT(t.layer_norm_backward, layer_norm_grad);
  HKT_CPU_FLOAT(t.gated_mix, gated_mix);
  HKT_CPU_FLOAT(t.gated_mix_backward, gated_mix_grad);
  HKT_CPU_FLOAT(t.conv, conv);
  HKT_CPU_FLOAT(t.conv_backward, conv_grad);
  t.ce_check.set(kCpu, DType::Int64, &cpu::ce_check_targets);
  HKT_CPU_FLOAT(t.cross_entropy, ce);
  HKT_CPU_FLOAT(t.cross_entropy_backward, ce_grad);
  HKT_CPU_FLOAT(t.dropout, dropout_mask);
  HKT_CPU_FLOAT(t.bias_gelu, bias_gelu);
  HKT_CPU_FLOAT(t.bias_gelu_backward, bias_gelu_grad);
  HKT_CPU_FLOAT(t.attention, attention);
  HKT_CPU_FLOAT(t.attention_backward, attention_grad);
  // H-Transformer-1D attention.
  HKT_CPU_FLOAT(t.htransformer, htransformer);
  HKT_CPU_FLOAT(t.htransformer_backward, htransformer_grad);
  HKT_CPU_FLOAT(t.local_attention, local_attn);
  HKT_CPU_FLOAT(t.local_attention_backward, local_attn_grad);
}

}  // namespace hkt::kernels
