// The CUDA backend: every CUDA kernel of the op list (hkt/kernels/op_list.hpp),
// registered here and nowhere else. The kernels take the shared void*
// signatures (hkt/kernels/signatures.hpp) directly; kernels.hpp and
// kernels_nn.hpp declare them. Plain C++ (no launch here).
#include "kernels/backends.hpp"
#include "kernels/cuda/attention.hpp"
#include "kernels/cuda/kernels.hpp"
#include "kernels/cuda/kernels_nn.hpp"
#include "kernels/cuda/runtime.hpp"

namespace hkt::cuda {
// bias_gelu.cu (called through the tables only).
template <class T>
void bias_gelu_forward(const void* x, const void* b, void* y, int64_t rows, int64_t C, bool approximate);
template <class T>
void bias_gelu_backward(const void* x, const void* b, const void* g, void* dx, int64_t rows, int64_t C,
                        bool approximate);
}  // namespace hkt::cuda

namespace hkt::kernels {
namespace {

constexpr auto kCuda = DeviceType::CUDA;

// The float32 and float64 instances of a kernel template.
#define HKT_CUDA_FLOAT(table, ...)                           \
  do {                                                       \
    (table).set(kCuda, DType::Float32, &__VA_ARGS__<float>);  \
    (table).set(kCuda, DType::Float64, &__VA_ARGS__<double>); \
  } while (0)

// ... and the int64 and bool ones.
#define HKT_CUDA_ALL(table, ...)                              \
  do {                                                        \
    HKT_CUDA_FLOAT(table, __VA_ARGS__);                       \
    (table).set(kCuda, DType::Int64, &__VA_ARGS__<int64_t>);  \
    (table).set(kCuda, DType::Bool, &__VA_ARGS__<bool>);      \
  } while (0)

template <class T>
void adamw_multi(const std::vector<opt::AdamWTensor>& ts, double beta1, double beta2, double eps) {
  cuda::adamw_update_multi<T>(ts, beta1, beta2, eps);
}

void transfer(void* dst, Device to, const void* src, Device from, size_t nbytes) {
  if (from.is_cpu())
    cuda::copy_host_to_device(dst, src, nbytes);
  else if (to.is_cpu())
    cuda::copy_device_to_host(dst, src, nbytes);
  else
    cuda::copy_device_to_device(dst, src, nbytes);
}

}  // namespace

void register_cuda_kernels(Tables& t) {
  HKT_CUDA_ALL(t.copy, cuda::copy_cast);
  HKT_CUDA_ALL(t.fill, cuda::fill);
  for (DType dt : {DType::Float32, DType::Float64, DType::Int64, DType::Bool}) t.transfer.set(kCuda, dt, &transfer);
  t.require_device.set(kCuda, DType::Float32, &cuda::require_device);
  HKT_CUDA_ALL(t.cat, cuda::copy_same);
  t.index_check.set(kCuda, DType::Int64, &cuda::first_out_of_range);
  HKT_CUDA_ALL(t.gather, cuda::indexed_gather);
  HKT_CUDA_FLOAT(t.index_add, cuda::index_add_rows);
  HKT_CUDA_FLOAT(t.scatter_add, cuda::scatter_add_dim);
  HKT_CUDA_ALL(t.where, cuda::where);
  HKT_CUDA_FLOAT(t.matmul, cuda::gemm_batched);
  HKT_CUDA_FLOAT(t.sgd, cuda::sgd_update);
  HKT_CUDA_FLOAT(t.adamw, cuda::adamw_update);
  HKT_CUDA_FLOAT(t.adamw_multi, adamw_multi);
  HKT_CUDA_FLOAT(t.sum_squares, cuda::sum_squares);
  HKT_CUDA_FLOAT(t.scale, cuda::scale);
  HKT_CUDA_FLOAT(t.sum_squares_multi, cuda::sum_squares_multi);
  HKT_CUDA_FLOAT(t.scale_multi, cuda::scale_multi);
  HKT_CUDA_FLOAT(t.uniform, cuda::rand_uniform);
  HKT_CUDA_FLOAT(t.normal, cuda::rand_normal);
#define HKT_REG(name, S)                                                         \
  t.name.set(kCuda, DType::Float32, &cuda::unary<ew::S, float>);                 \
  t.name.set(kCuda, DType::Float64, &cuda::unary<ew::S, double>);                \
  t.name##_backward.set(kCuda, DType::Float32, &cuda::unary_grad<ew::S, float>); \
  t.name##_backward.set(kCuda, DType::Float64, &cuda::unary_grad<ew::S, double>);
  HKT_UNARY_OPS(HKT_REG)
#undef HKT_REG
#define HKT_REG(name, S)                                                                \
  t.name.set(kCuda, DType::Float32, &cuda::binary<ew::S, float, float>);                \
  t.name.set(kCuda, DType::Float64, &cuda::binary<ew::S, double, double>);              \
  if constexpr (!std::is_same_v<ew::S, ew::Div> && !std::is_same_v<ew::S, ew::Pow>) \
    t.name.set(kCuda, DType::Int64, &cuda::binary<ew::S, int64_t, int64_t>);
  HKT_BINARY_OPS(HKT_REG)
#undef HKT_REG
#define HKT_REG(name, S)                                                \
  t.name.set(kCuda, DType::Float32, &cuda::binary<ew::S, float, bool>);   \
  t.name.set(kCuda, DType::Float64, &cuda::binary<ew::S, double, bool>);  \
  t.name.set(kCuda, DType::Int64, &cuda::binary<ew::S, int64_t, bool>);   \
  t.name.set(kCuda, DType::Bool, &cuda::binary<ew::S, bool, bool>);
  HKT_COMPARE_OPS(HKT_REG)
#undef HKT_REG

  HKT_CUDA_FLOAT(t.sum, cuda::reduce_sum);
  t.sum.set(kCuda, DType::Int64, &cuda::reduce_sum<int64_t>);
  HKT_CUDA_FLOAT(t.max, cuda::reduce_max);
  t.max.set(kCuda, DType::Int64, &cuda::reduce_max<int64_t>);
  t.softmax.set(kCuda, DType::Float32, &cuda::softmax_forward<float, false>);
  t.softmax.set(kCuda, DType::Float64, &cuda::softmax_forward<double, false>);
  t.log_softmax.set(kCuda, DType::Float32, &cuda::softmax_forward<float, true>);
  t.log_softmax.set(kCuda, DType::Float64, &cuda::softmax_forward<double, true>);
  t.softmax_backward.set(kCuda, DType::Float32, &cuda::softmax_backward<float, false>);
  t.softmax_backward.set(kCuda, DType::Float64, &cuda::softmax_backward<double, false>);
  t.log_softmax_backward.set(kCuda, DType::Float32, &cuda::softmax_backward<float, true>);
  t.log_softmax_backward.set(kCuda, DType::Float64, &cuda::softmax_backward<double, true>);
  HKT_CUDA_FLOAT(t.layer_norm, cuda::layer_norm_forward);
  HKT_CUDA_FLOAT(t.layer_norm_backward, cuda::layer_norm_backward);
  HKT_CUDA_FLOAT(t.gated_mix, cuda::gated_mix_forward);
  HKT_CUDA_FLOAT(t.gated_mix_backward, cuda::gated_mix_backward);
  HKT_CUDA_FLOAT(t.conv, cuda::conv_forward);
  HKT_CUDA_FLOAT(t.conv_backward, cuda::conv_backward);
  t.ce_check.set(kCuda, DType::Int64, &cuda::ce_check_targets);
  HKT_CUDA_FLOAT(t.cross_entropy, cuda::ce_forward);
  HKT_CUDA_FLOAT(t.cross_entropy_backward, cuda::ce_backward);
  HKT_CUDA_FLOAT(t.dropout, cuda::dropout_mask);
  HKT_CUDA_FLOAT(t.bias_gelu, cuda::bias_gelu_forward);
  HKT_CUDA_FLOAT(t.bias_gelu_backward, cuda::bias_gelu_backward);
  // The default attention kernels: attention.cu's dispatcher (switches, the lab's chooser, fallbacks).
  HKT_CUDA_FLOAT(t.attention, cuda::attention_forward);
  HKT_CUDA_FLOAT(t.attention_backward, cuda::attention_backward);
}

}  // namespace hkt::kernels
