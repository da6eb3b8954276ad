// op_harness entries of the copies, fills, random tensors and device transfers.
#include "op_harness/cases.hpp"

namespace hkt::harness {

// Copies, fills, random tensors and device transfers (hkt/ops/factory.hpp).
void add_factory(std::vector<OpEntry>& out) {
  out.push_back({"clone / to_dtype", {"copy"}, [](std::mt19937_64& rng) {
                   std::vector<Case> c = one_input(rng, "clone", [](const std::vector<Tensor>& in) { return clone(in[0]); });
                   const Shape s = shape(rng, 2, 2, 5);
                   c.push_back({"expanded " + str(s), {{s, Layout::Expanded}},
                                [](const std::vector<Tensor>& in) { return clone(in[0]); }});
                   c.push_back({"to float32 and back, transposed", {{s, Layout::Transposed}},
                                [](const std::vector<Tensor>& in) {
                                  return to_dtype(to_dtype(in[0], DType::Float32), in[0].dtype());
                                },
                                false});  // rounded to float32: not differentiable to float64 precision
                   c.push_back({"through int64 (integer values)", {{s, Layout::Sliced, -3, 3, true}},
                                [](const std::vector<Tensor>& in) {
                                  return to_dtype(to_dtype(in[0], DType::Int64), in[0].dtype());
                                },
                                false});  // through int64: no gradient
                   return c;
                 }});
  out.back().bad_input = [] { clone(Tensor()); };
  out.back().bad_needle = "clone: the tensor is undefined";

  out.push_back({"full / fill_", {"fill"}, [](std::mt19937_64& rng) {
                   auto f = [](const std::vector<Tensor>& in) {
                     Tensor h = full(in[0].shape(), 0.5, {in[0].dtype(), in[0].device()});
                     Tensor t = slice(zeros({2, 7}, {in[0].dtype(), in[0].device()}), 1, 1, 6, 2);
                     fill_(t, -2.0);  // a strided destination
                     return in[0] * h + sum(t);
                   };
                   return one_input(rng, "fill", f);
                 }});
  out.back().bad_input = [] {
    Tensor t = f32({2}).set_requires_grad(true);
    fill_(t, 1.0);
  };
  out.back().bad_needle = "fill_: in-place write to a tensor that requires grad";

  for (const bool is_normal : {false, true}) {
    out.push_back({is_normal ? "normal" : "uniform", {is_normal ? "normal" : "uniform"},
                   [is_normal](std::mt19937_64& rng) {
                     // A generator of its own per call: every evaluation draws the same values.
                     auto f = [is_normal](const std::vector<Tensor>& in) {
                       Generator g(3);
                       const TensorOptions o{in[0].dtype(), in[0].device()};
                       return in[0] + (is_normal ? normal(in[0].shape(), 0.5, 2.0, o, &g)
                                                 : uniform(in[0].shape(), -1.0, 1.0, o, &g));
                     };
                     return one_input(rng, is_normal ? "normal" : "uniform", f);
                   }});
    // The registry's error for a (device, dtype) that has no kernel: op, dtype and device.
    out.back().bad_input = [is_normal] { is_normal ? randn({2}, {DType::Int64}) : rand({2}, {DType::Int64}); };
    out.back().bad_needle = is_normal ? "normal: no kernel for int64 on cpu" : "uniform: no kernel for int64 on cpu";
  }

  out.push_back({"to_device", {"to_device", "device"}, [](std::mt19937_64& rng) {
                   // A round trip through the other device (CUDA from the CPU, the CPU from CUDA);
                   // without a device (a build without the backend) the tensor stays where it is.
                   auto f = [](const std::vector<Tensor>& in) {
                     if (!cuda_is_available()) return in[0] * 1.0;
                     const Device other = in[0].device().is_cpu() ? Device::cuda() : Device::cpu();
                     return to_device(to_device(in[0], other) * 2.0, in[0].device());
                   };
                   return one_input(rng, "to_device", f);
                 }});
  out.back().bad_input = [] { to_device(f32({2}), Device::cuda(99)); };
  out.back().bad_needle = "to_device";
}

}  // namespace hkt::harness
