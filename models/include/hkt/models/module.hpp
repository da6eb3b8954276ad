// Module: the base of every layer and model.
//
// A module owns named parameters and buffers and named child modules. Names
// compose with dots, in registration order: a parameter "weight" of the Linear
// "1" (an element of the ModuleList "wq" of the child "attn" of element "0" of
// "blocks") is reported as "blocks.0.attn.wq.1.weight". Parameters are leaf tensors with
// requires_grad; buffers are saved in checkpoints but not trained.
#pragma once
#include <map>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "hkt/core/tensor.hpp"

namespace hkt::nn {

using NamedTensors = std::vector<std::pair<std::string, Tensor>>;

class Module {
 public:
  explicit Module(std::string type_name = "Module") : type_name_(std::move(type_name)) {}
  virtual ~Module() = default;
  Module(const Module&) = delete;
  Module& operator=(const Module&) = delete;

  const std::string& type_name() const { return type_name_; }

  // Registration. Names must be non-empty, contain no '.', and be unique
  // among this module's parameters, buffers and children.
  Tensor register_parameter(const std::string& name, Tensor t, bool requires_grad = true);
  Tensor register_buffer(const std::string& name, Tensor t);
  template <class M>
  std::shared_ptr<M> register_module(const std::string& name, std::shared_ptr<M> m) {
    add_child(name, m);
    return m;
  }

  // Recursive views, in registration order, with hierarchical names.
  std::vector<Tensor> parameters() const;
  NamedTensors named_parameters() const;
  NamedTensors named_buffers() const;
  std::vector<std::pair<std::string, std::shared_ptr<Module>>> named_children() const { return children_; }
  // This module ("") and all descendants.
  std::vector<std::pair<std::string, const Module*>> named_modules() const;

  // train() / eval() set the mode of this module and all descendants.
  void train(bool on = true);
  void eval() { train(false); }
  bool is_training() const { return training_; }

  // Drops the gradients of all parameters.
  void zero_grad();
  // Moves every parameter and buffer to `device` in place (each tensor keeps
  // its identity, so layers and optimisers created later see the moved
  // values; create the optimiser after the move). The gradients of the tensors
  // that move are dropped; tensors already on `device` are left as they are.
  void to(Device device);
  // Number of parameter elements (all, or only those with requires_grad).
  int64_t num_parameters(bool trainable_only = false) const;
  // A table: name, shape, count, and the total.
  std::string summary() const;

  // Parameters then buffers, by hierarchical name.
  NamedTensors state_dict() const;
  // Copies values into the existing tensors (so optimisers keep their
  // references). strict: every name must be present, nothing unexpected.
  // Shapes and dtypes must match. Errors name the offending tensor; on error
  // nothing is modified.
  void load_state_dict(const NamedTensors& state, bool strict = true);

 protected:
  void add_child(const std::string& name, std::shared_ptr<Module> m);

 private:
  void check_name(const std::string& name) const;
  void collect(const std::string& prefix, bool params, NamedTensors& out) const;

  std::string type_name_;
  NamedTensors params_, buffers_;
  std::vector<std::pair<std::string, std::shared_ptr<Module>>> children_;
  bool training_ = true;
};

// A module with one tensor in and one out.
class Layer : public Module {
 public:
  using Module::Module;
  virtual Tensor forward(const Tensor& x) = 0;
  Tensor operator()(const Tensor& x) { return forward(x); }
};

// Children named "0", "1", ... in order.
class ModuleList : public Module {
 public:
  ModuleList() : Module("ModuleList") {}
  template <class M>
  std::shared_ptr<M> push_back(std::shared_ptr<M> m) {
    items_.push_back(m);
    return register_module(std::to_string(items_.size() - 1), std::move(m));
  }
  size_t size() const { return items_.size(); }
  template <class M = Module>
  std::shared_ptr<M> at(size_t i) const {
    HKT_CHECK(i < items_.size(), "ModuleList: index ", i, " out of range (size ", items_.size(), ")");
    auto p = std::dynamic_pointer_cast<M>(items_[i]);
    HKT_CHECK(p, "ModuleList: element ", i, " is a ", items_[i]->type_name(), ", not the requested type");
    return p;
  }

 private:
  std::vector<std::shared_ptr<Module>> items_;
};

// Layers applied in order.
class Sequential : public Layer {
 public:
  Sequential() : Layer("Sequential") {}
  template <class M>
  std::shared_ptr<M> push_back(std::shared_ptr<M> m) {
    layers_.push_back(m);
    return register_module(std::to_string(layers_.size() - 1), std::move(m));
  }
  Tensor forward(const Tensor& x) override;

 private:
  std::vector<std::shared_ptr<Layer>> layers_;
};

}  // namespace hkt::nn
