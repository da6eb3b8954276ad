// Tensor factories, copies and in-place fills.
#pragma once
#include <cstdint>
#include <vector>

#include "hkt/core/random.hpp"
#include "hkt/core/tensor.hpp"

namespace hkt {

struct TensorOptions {
  DType dtype = DType::Float32;
  Device device = Device::cpu();
  bool requires_grad = false;
};

Tensor empty(const Shape& shape, TensorOptions opt = {});
Tensor zeros(const Shape& shape, TensorOptions opt = {});
Tensor ones(const Shape& shape, TensorOptions opt = {});
Tensor full(const Shape& shape, double value, TensorOptions opt = {});
Tensor zeros_like(const Tensor& t);
Tensor ones_like(const Tensor& t);
Tensor full_like(const Tensor& t, double value);
// 0-dim tensor holding `value`.
Tensor scalar_tensor(double value, DType dtype = DType::Float32, Device device = Device::cpu());
// [start, start + step, ...) below end; dtype Int64 unless given.
Tensor arange(int64_t end, TensorOptions opt = {DType::Int64});
Tensor arange(double start, double end, double step = 1.0, TensorOptions opt = {DType::Int64});
// Normal(0, 1) and uniform [0, 1); seeded by `gen` (default: the global generator).
Tensor randn(const Shape& shape, TensorOptions opt = {}, Generator* gen = nullptr);
Tensor rand(const Shape& shape, TensorOptions opt = {}, Generator* gen = nullptr);
Tensor uniform(const Shape& shape, double lo, double hi, TensorOptions opt = {}, Generator* gen = nullptr);
Tensor normal(const Shape& shape, double mean, double std, TensorOptions opt = {}, Generator* gen = nullptr);

// From host values; the vector's size must equal the shape's element count.
Tensor from_vector(const std::vector<float>& v, const Shape& shape, TensorOptions opt = {DType::Float32});
Tensor from_vector(const std::vector<double>& v, const Shape& shape, TensorOptions opt = {DType::Float64});
Tensor from_vector(const std::vector<int64_t>& v, const Shape& shape, TensorOptions opt = {DType::Int64});

// Differentiable copies.
Tensor clone(const Tensor& t);       // contiguous copy
Tensor contiguous(const Tensor& t);  // t itself if already contiguous
Tensor to_dtype(const Tensor& t, DType dtype);
Tensor to_device(const Tensor& t, Device device);

// In-place writes (bump the storage version). They refuse a tensor that
// requires grad while grad mode is on: do parameter updates under NoGradGuard.
Tensor& copy_(Tensor& dst, const Tensor& src);  // src broadcasts to dst
Tensor& fill_(Tensor& dst, double value);
Tensor& zero_(Tensor& dst);

}  // namespace hkt
