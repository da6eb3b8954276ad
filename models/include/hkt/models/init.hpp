// Parameter initialisation. Each scheme draws from `gen` (the global
// generator when null), so that manual_seed(s) followed by building a model
// gives the same parameters bit for bit, whatever the thread count.
//
// Fans follow PyTorch's convention for a weight of shape [out, in, k...]:
// fan_in = in * prod(k), fan_out = out * prod(k). A 1-D tensor has
// fan_in = fan_out = its size.
#pragma once
#include <utility>

#include "hkt/core/random.hpp"
#include "hkt/core/tensor.hpp"

namespace hkt::nn::init {

std::pair<int64_t, int64_t> fans(const Tensor& t);

void constant_(Tensor& t, double value);
void zeros_(Tensor& t);
void ones_(Tensor& t);
// N(mean, std^2).
void normal_(Tensor& t, double mean, double std, Generator* gen = nullptr);
// U(lo, hi).
void uniform_(Tensor& t, double lo, double hi, Generator* gen = nullptr);
// Glorot: U(-b, b), b = gain * sqrt(6 / (fan_in + fan_out)).
void xavier_uniform_(Tensor& t, double gain = 1.0, Generator* gen = nullptr);
// He: U(-b, b), b = sqrt(2 / (1 + a^2)) * sqrt(3 / fan_in). With a = sqrt(5)
// this is PyTorch's default for Linear weights: b = 1 / sqrt(fan_in).
void kaiming_uniform_(Tensor& t, double a = 0.0, Generator* gen = nullptr);

}  // namespace hkt::nn::init
