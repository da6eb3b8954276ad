#include "hkt/models/module.hpp"

#include <iomanip>
#include <set>
#include <sstream>

#include "hkt/core/grad_mode.hpp"
#include "hkt/ops/factory.hpp"

namespace hkt::nn {

void Module::check_name(const std::string& name) const {
  HKT_CHECK(!name.empty() && name.find('.') == std::string::npos, type_name_, ": invalid member name '", name,
            "' (must be non-empty and contain no '.')");
  auto taken = [&](const auto& v) {
    for (const auto& [n, _] : v)
      if (n == name) return true;
    return false;
  };
  HKT_CHECK(!taken(params_) && !taken(buffers_) && !taken(children_), type_name_, ": the name '", name,
            "' is already registered");
}

Tensor Module::register_parameter(const std::string& name, Tensor t, bool requires_grad) {
  check_name(name);
  HKT_CHECK(t.defined(), type_name_, ": parameter '", name, "' is undefined");
  HKT_CHECK(t.is_leaf(), type_name_, ": parameter '", name, "' must be a leaf tensor (detach() it first)");
  t.set_requires_grad(requires_grad);
  params_.emplace_back(name, t);
  return t;
}

Tensor Module::register_buffer(const std::string& name, Tensor t) {
  check_name(name);
  HKT_CHECK(t.defined(), type_name_, ": buffer '", name, "' is undefined");
  buffers_.emplace_back(name, t);
  return t;
}

void Module::add_child(const std::string& name, std::shared_ptr<Module> m) {
  check_name(name);
  HKT_CHECK(m, type_name_, ": child module '", name, "' is null");
  children_.emplace_back(name, std::move(m));
}

void Module::collect(const std::string& prefix, bool params, NamedTensors& out) const {
  for (const auto& [n, t] : params ? params_ : buffers_) out.emplace_back(prefix + n, t);
  for (const auto& [n, c] : children_) c->collect(prefix + n + ".", params, out);
}

NamedTensors Module::named_parameters() const {
  NamedTensors out;
  collect("", true, out);
  return out;
}

NamedTensors Module::named_buffers() const {
  NamedTensors out;
  collect("", false, out);
  return out;
}

std::vector<Tensor> Module::parameters() const {
  std::vector<Tensor> out;
  for (auto& [n, t] : named_parameters()) out.push_back(t);
  return out;
}

std::vector<std::pair<std::string, const Module*>> Module::named_modules() const {
  std::vector<std::pair<std::string, const Module*>> out{{"", this}};
  // Iterative pre-order walk.
  std::vector<std::pair<std::string, const Module*>> stack;
  for (auto it = children_.rbegin(); it != children_.rend(); ++it) stack.emplace_back(it->first, it->second.get());
  while (!stack.empty()) {
    auto [name, m] = stack.back();
    stack.pop_back();
    out.emplace_back(name, m);
    for (auto it = m->children_.rbegin(); it != m->children_.rend(); ++it)
      stack.emplace_back(name + "." + it->first, it->second.get());
  }
  return out;
}

void Module::train(bool on) {
  training_ = on;
  for (auto& [n, c] : children_) c->train(on);
}

void Module::zero_grad() {
  for (auto& t : parameters()) t.set_grad(Tensor());
}

int64_t Module::num_parameters(bool trainable_only) const {
  int64_t n = 0;
  for (auto& t : parameters())
    if (!trainable_only || t.requires_grad()) n += t.numel();
  return n;
}

std::string Module::summary() const {
  const NamedTensors ps = named_parameters();
  size_t w = 4;
  for (auto& [n, t] : ps) w = std::max(w, n.size());
  std::ostringstream os;
  os << type_name_ << "\n";
  os << std::left << std::setw(static_cast<int>(w)) << "name" << "  " << std::setw(16) << "shape" << std::right
     << std::setw(12) << "params" << "\n";
  for (auto& [n, t] : ps)
    os << std::left << std::setw(static_cast<int>(w)) << n << "  " << std::setw(16) << shape_str(t.shape())
       << std::right << std::setw(12) << t.numel() << "\n";
  os << std::left << std::setw(static_cast<int>(w)) << "total" << "  " << std::setw(16) << "" << std::right
     << std::setw(12) << num_parameters() << "\n";
  return os.str();
}

NamedTensors Module::state_dict() const {
  NamedTensors out = named_parameters();
  for (auto& b : named_buffers()) out.push_back(b);
  return out;
}

void Module::to(Device device) {
  NoGradGuard ng;
  for (const NamedTensors& list : {named_parameters(), named_buffers()})
    for (const auto& [n, t] : list) {
      if (t.device() == device) continue;  // also a tensor shared by two modules, moved once
      const Tensor moved = contiguous(to_device(t.detach(), device));
      TensorImpl* impl = t.unsafe_impl();
      impl->storage = moved.storage();
      impl->offset = moved.offset();
      impl->strides = moved.strides();
      impl->grad.reset();
    }
}

void Module::load_state_dict(const NamedTensors& state, bool strict) {
  std::map<std::string, const Tensor*> given;
  for (const auto& [n, t] : state) {
    HKT_CHECK(given.emplace(n, &t).second, "load_state_dict: tensor '", n, "' given twice");
  }
  NamedTensors mine = state_dict();
  std::set<std::string> used;
  // Validate everything first, so that a failure modifies nothing.
  for (const auto& [n, t] : mine) {
    auto it = given.find(n);
    if (it == given.end()) {
      HKT_CHECK(!strict, "load_state_dict: missing tensor '", n, "' (", meta_str(t.meta()), ") in ", type_name_);
      continue;
    }
    const Tensor& src = *it->second;
    HKT_CHECK(src.shape() == t.shape(), "load_state_dict: tensor '", n, "' has shape ", shape_str(src.shape()),
              " but the model expects ", shape_str(t.shape()));
    HKT_CHECK(src.dtype() == t.dtype(), "load_state_dict: tensor '", n, "' is ", src.dtype(),
              " but the model expects ", t.dtype());
    used.insert(n);
  }
  if (strict)
    for (const auto& [n, t] : state)
      HKT_CHECK(used.count(n), "load_state_dict: unexpected tensor '", n, "' (", meta_str(t.meta()),
                ") not in ", type_name_);
  NoGradGuard ng;
  for (auto& [n, t] : mine) {
    auto it = given.find(n);
    if (it != given.end()) copy_(t, to_device(*it->second, t.device()));
  }
}

Tensor Sequential::forward(const Tensor& x) {
  Tensor y = x;
  for (auto& l : layers_) y = l->forward(y);
  return y;
}

}  // namespace hkt::nn
