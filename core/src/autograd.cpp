// The backward engine: an iterative topological walk over the graph.
#include "hkt/core/autograd.hpp"
#include "hkt/core/grad_hook.hpp"

#include <unordered_map>

#include "hkt/core/grad_mode.hpp"
#include "hkt/core/profiler.hpp"

namespace hkt {
namespace {
AutogradMath g_math;

const AutogradMath& math_checked() {
  HKT_CHECK(g_math.add && g_math.full && g_math.clone,
            "backward: the ops layer has not installed its autograd math (is libhkt fully linked?)");
  return g_math;
}
}  // namespace

Node::~Node() {
  std::vector<std::shared_ptr<Node>> stack;
  auto take = [&stack](std::vector<Edge>& edges) {
    for (Edge& e : edges)
      if (e.node && e.node.use_count() == 1) stack.push_back(std::move(e.node));
    edges.clear();
  };
  take(next);
  while (!stack.empty()) {
    std::shared_ptr<Node> n = std::move(stack.back());
    stack.pop_back();
    take(n->next);
  }  // n is destroyed here with no edges left
}

void set_autograd_math(const AutogradMath& m) { g_math = m; }
const AutogradMath& autograd_math() { return math_checked(); }

AccumulateGrad::AccumulateGrad(const std::shared_ptr<TensorImpl>& leaf) : leaf_(leaf) {
  Tensor t(leaf);
  input_meta = {t.meta()};
  output_meta = {t.meta()};
}

namespace {
thread_local GradReadyHook t_grad_ready;  // grad_hook.hpp

// Whether the incoming gradient can become the leaf's gradient as it is: the
// engine holds the only reference to it (it drops it after this call), no
// other tensor shares its storage, it fills that storage exactly in
// row-major order, and it belongs to no graph. PyTorch's AccumulateGrad
// takes such a gradient the same way instead of copying it; here that saves
// a copy per parameter and step (on a GPU a launch each).
bool can_adopt(const Tensor& g) {
  const std::shared_ptr<TensorImpl>& impl = g.impl_ptr();
  if (impl.use_count() != 1 || !impl->storage || impl->storage.use_count() != 1) return false;
  if (impl->grad_fn || impl->requires_grad || impl->offset != 0 || !g.is_contiguous()) return false;
  return impl->storage->nbytes() == static_cast<size_t>(g.numel()) * dtype_size(g.dtype());
}
}  // namespace

std::vector<Tensor> AccumulateGrad::apply(const std::vector<Tensor>& g) {
  auto leaf = leaf_.lock();
  if (!leaf) return {};
  const auto& m = math_checked();
  // The stored gradient is always a contiguous tensor that owns its storage
  // alone, never a view of some other buffer, so that optimisers may update
  // it in place: the incoming one when it is such (can_adopt), else a copy.
  if (leaf->grad)
    leaf->grad = m.add(Tensor(leaf->grad), g[0]).impl_ptr();
  else
    leaf->grad = can_adopt(g[0]) ? g[0].impl_ptr() : m.clone(g[0]).impl_ptr();
  if (t_grad_ready) t_grad_ready(Tensor(leaf));
  return {};
}

GradReadyGuard::GradReadyGuard(GradReadyHook hook) : previous_(std::move(t_grad_ready)) {
  t_grad_ready = std::move(hook);
}
GradReadyGuard::~GradReadyGuard() { t_grad_ready = std::move(previous_); }

Edge gradient_edge(const Tensor& t) {
  if (!t.defined() || !t.requires_grad()) return {};
  if (t.grad_fn()) return {t.grad_fn(), t.output_nr()};
  TensorImpl* impl = t.unsafe_impl();
  auto acc = impl->grad_accumulator.lock();
  if (!acc) {
    acc = std::make_shared<AccumulateGrad>(t.impl_ptr());
    impl->grad_accumulator = acc;
  }
  return {acc, 0};
}

void run_backward(const Tensor& root, const Tensor& gradient, bool retain_graph) {
  HKT_CHECK(root.defined(), "backward: called on an undefined tensor");
  HKT_CHECK(root.requires_grad(), "backward: the tensor does not require a gradient (no input of the ",
            "computation had requires_grad set, or it ran under NoGradGuard)");
  const auto& math = math_checked();
  Tensor seed = gradient;
  if (!seed.defined()) {
    HKT_CHECK(root.numel() == 1, "backward: the output has shape ", shape_str(root.shape()),
              "; backward() without a gradient needs a single-element output, otherwise pass a gradient of that shape");
    seed = math.full(root.meta(), 1.0);
  }
  HKT_CHECK(seed.meta() == root.meta(), "backward: the gradient is ", meta_str(seed.meta()),
            " but the output is ", meta_str(root.meta()));

  const Edge start = gradient_edge(root);
  NoGradGuard no_grad;  // backward formulas do not build a graph

  // 1. Count, for every reachable node, how many edges point at it.
  std::unordered_map<Node*, int> deps;
  std::vector<Node*> stack{start.node.get()};
  deps[start.node.get()] = 0;
  while (!stack.empty()) {
    Node* n = stack.back();
    stack.pop_back();
    for (const Edge& e : n->next) {
      if (!e.node) continue;
      auto [it, fresh] = deps.try_emplace(e.node.get(), 0);
      ++it->second;
      if (fresh) stack.push_back(e.node.get());
    }
  }

  // 2. Run nodes whose consumers have all run, accumulating gradient slots.
  std::unordered_map<Node*, std::vector<Tensor>> buffers;
  auto slot = [&](Node* n) -> std::vector<Tensor>& {
    auto& b = buffers[n];
    if (b.empty()) b.resize(n->output_meta.size());
    return b;
  };
  slot(start.node.get())[start.input_nr] = seed;
  // Keep the start node alive even if the root is the only owner.
  std::shared_ptr<Node> keep = start.node;
  std::vector<Node*> ready{start.node.get()};
  while (!ready.empty()) {
    Node* n = ready.back();
    ready.pop_back();
    std::vector<Tensor> grads = std::move(slot(n));
    buffers.erase(n);
    bool any = false;
    for (size_t k = 0; k < grads.size(); ++k) {
      if (grads[k].defined()) any = true;
      else grads[k] = math.full(n->output_meta[k], 0.0);
    }
    std::vector<Tensor> in_grads;
    if (any) {
      const std::string timed_name = profiler::enabled() ? n->name() : std::string();
      profiler::Scope timed("bwd", timed_name.c_str());
      in_grads = n->apply(grads);
      // A node that ran kernels of its own (no op inside it) moved its gradients in and out.
      if (timed.on() && !timed.had_children()) {
        double bytes = 0;
        for (const std::vector<Tensor>* ts : {&grads, &in_grads})
          for (const Tensor& t : *ts)
            if (t.defined()) bytes += static_cast<double>(t.numel()) * static_cast<double>(dtype_size(t.dtype()));
        profiler::count(0, bytes);
      }
    }
    if (!retain_graph) n->release();
    for (size_t i = 0; i < n->next.size(); ++i) {
      const Edge& e = n->next[i];
      if (!e.node) continue;
      if (i < in_grads.size() && in_grads[i].defined()) {
        const Tensor& g = in_grads[i];
        HKT_CHECK(g.meta() == n->input_meta[i], "backward of '", n->name(), "': gradient for input ", i, " is ",
                  meta_str(g.meta()), " but the input is ", meta_str(n->input_meta[i]));
        Tensor& acc = slot(e.node.get())[e.input_nr];
        acc = acc.defined() ? math.add(acc, g) : g;
      }
      if (--deps[e.node.get()] == 0) ready.push_back(e.node.get());
    }
  }
}

}  // namespace hkt
