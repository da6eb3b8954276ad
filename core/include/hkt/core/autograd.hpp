// The autograd graph and engine.
//
// Each op application that needs a gradient creates a Node. A Node has one
// incoming gradient slot per output of the op and one Edge per input, pointing
// at the Node that produced that input (or at the leaf's AccumulateGrad node).
// backward() sorts the reachable graph iteratively (no recursion), runs each
// node once all its consumers have run, and frees the graph unless asked to
// retain it.
#pragma once
#include <memory>
#include <string>
#include <vector>

#include "hkt/core/tensor.hpp"

namespace hkt {

struct Edge {
  std::shared_ptr<Node> node;  // null: that input needs no gradient
  uint32_t input_nr = 0;       // which gradient slot of `node`
};

class Node {
 public:
  // Frees the chain of nodes only this one keeps alive with a loop, not by
  // recursive destructors, so that a graph of any depth can be dropped.
  virtual ~Node();
  virtual std::string name() const = 0;
  // grad_outputs: one per output (never undefined; zeros where unused).
  // Returns one gradient per input (undefined where none).
  virtual std::vector<Tensor> apply(const std::vector<Tensor>& grad_outputs) = 0;
  // Drops what backward needed (saved tensors). A released node throws on apply.
  virtual void release() {}

  std::vector<Edge> next;            // one per input
  std::vector<TensorMeta> input_meta;  // for the gradient shape check
  std::vector<TensorMeta> output_meta;
};

// Sink for a leaf: adds the incoming gradient into leaf.grad.
class AccumulateGrad : public Node {
 public:
  explicit AccumulateGrad(const std::shared_ptr<TensorImpl>& leaf);
  std::string name() const override { return "AccumulateGrad"; }
  std::vector<Tensor> apply(const std::vector<Tensor>& grad_outputs) override;

 private:
  std::weak_ptr<TensorImpl> leaf_;
};

// The edge that a gradient for `t` should flow along (null node if none).
Edge gradient_edge(const Tensor& t);

// Elementary tensor math that the engine needs (accumulating gradients,
// default seeds). The ops layer installs these at start-up; core never
// calls upward directly.
struct AutogradMath {
  Tensor (*add)(const Tensor&, const Tensor&) = nullptr;
  Tensor (*full)(const TensorMeta&, double) = nullptr;
  Tensor (*clone)(const Tensor&) = nullptr;  // contiguous copy
};
void set_autograd_math(const AutogradMath& m);
const AutogradMath& autograd_math();

void run_backward(const Tensor& root, const Tensor& gradient, bool retain_graph);

}  // namespace hkt
