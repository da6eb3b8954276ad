// apply(): runs a Function and links its outputs into the autograd graph.
#include "hkt/core/function.hpp"

#include "hkt/core/grad_mode.hpp"
#include "hkt/core/profiler.hpp"

namespace hkt {
namespace {

class FunctionNode final : public Node {
 public:
  explicit FunctionNode(std::shared_ptr<Function> fn) : fn_(std::move(fn)), name_(fn_->name()) {}
  std::string name() const override { return name_; }
  std::vector<Tensor> apply(const std::vector<Tensor>& grad_outputs) override {
    HKT_CHECK(fn_, "backward through '", name_,
              "': its graph was already freed by an earlier backward(); pass retain_graph=true to the "
              "first backward() to run it twice");
    auto g = fn_->backward(grad_outputs);
    HKT_CHECK(g.size() == next.size(), "backward of '", name_, "' returned ", g.size(), " gradients for ",
              next.size(), " inputs");
    return g;
  }
  void release() override { fn_.reset(); }

 private:
  std::shared_ptr<Function> fn_;
  std::string name_;
};

}  // namespace

SavedTensor::SavedTensor(const Tensor& t) {
  if (t.defined()) {
    t_ = t.detach();
    version_ = t.storage()->version();
  }
}

Tensor SavedTensor::get(const char* op) const {
  if (t_.defined())
    HKT_CHECK(t_.storage()->version() == version_, "backward of '", op,
              "': a tensor it saved was modified in place after the forward pass (version ", version_, " -> ",
              t_.storage()->version(), ")");
  return t_;
}

// The bytes an op reads and writes: its inputs and its new outputs (none for a view).
static double moved_bytes(const std::vector<Tensor>& inputs, const std::vector<Tensor>& outputs) {
  double in = 0, out = 0;
  bool any_new = false;
  for (const Tensor& t : inputs)
    if (t.defined()) in += static_cast<double>(t.numel()) * static_cast<double>(dtype_size(t.dtype()));
  for (const Tensor& t : outputs) {
    if (!t.defined()) continue;
    bool view = false;
    for (const Tensor& i : inputs) view = view || (i.defined() && i.storage() == t.storage());
    if (view) continue;
    any_new = true;
    out += static_cast<double>(t.numel()) * static_cast<double>(dtype_size(t.dtype()));
  }
  return any_new ? in + out : 0.0;
}

std::vector<Tensor> apply(const std::shared_ptr<Function>& fn, const std::vector<Tensor>& inputs) {
  const char* op = fn->name();
  std::vector<TensorMeta> metas = fn->infer(inputs);
  std::vector<Tensor> outs;
  {
    NoGradGuard no_grad;
    profiler::Scope timed("fwd", op);
    outs = fn->forward(inputs, metas);
    if (timed.on()) profiler::count(0, moved_bytes(inputs, outs));
  }
  HKT_CHECK(outs.size() == metas.size(), op, ": forward returned ", outs.size(), " outputs but the shape rule ",
            "declares ", metas.size());
  for (size_t k = 0; k < outs.size(); ++k)
    HKT_CHECK(outs[k].defined() && outs[k].meta() == metas[k], op, ": forward output ", k, " is ",
              outs[k].defined() ? meta_str(outs[k].meta()) : std::string("undefined"),
              " but the shape rule declares ", meta_str(metas[k]));

  bool needs_grad = false;
  if (GradMode::is_enabled())
    for (size_t i = 0; i < inputs.size(); ++i)
      if (inputs[i].defined() && inputs[i].requires_grad() && fn->differentiable(i)) needs_grad = true;
  if (!needs_grad) return outs;

  auto node = std::make_shared<FunctionNode>(fn);
  node->next.resize(inputs.size());
  node->input_meta.resize(inputs.size());
  for (size_t i = 0; i < inputs.size(); ++i) {
    if (!inputs[i].defined()) {
      fn->needs_grad_.push_back(false);
      continue;
    }
    node->input_meta[i] = inputs[i].meta();
    if (fn->differentiable(i)) node->next[i] = gradient_edge(inputs[i]);
    fn->needs_grad_.push_back(node->next[i].node != nullptr);
  }
  for (size_t k = 0; k < outs.size(); ++k) {
    node->output_meta.push_back(outs[k].meta());
    if (!is_floating(outs[k].dtype())) continue;
    // Outputs may alias inputs (views): give each its own impl before linking.
    TensorImpl* impl = outs[k].unsafe_impl();
    for (const Tensor& in : inputs)
      if (in.defined() && in.unsafe_impl() == impl) {
        outs[k] = Tensor::view_of(in, in.shape(), in.strides(), in.offset());
        impl = outs[k].unsafe_impl();
      }
    impl->requires_grad = true;
    impl->grad_fn = node;
    impl->output_nr = static_cast<uint32_t>(k);
  }
  return outs;
}

}  // namespace hkt
