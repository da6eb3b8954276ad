// The attention kinds a classifier block can use (ClassifierConfig::attention):
// one table from the kind's name to the builder of its module and the call of
// its forward. Adding a kind is one entry in models/src/attention_kinds.cpp
// (plus its config fields in ClassifierConfig, if it has any).
#pragma once
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "hkt/models/classifier.hpp"

namespace hkt::nn {

struct AttentionKind {
  std::string name;  // the value of ClassifierConfig::attention
  bool cpu_only = false;  // its kernels exist on the CPU only (a model on a device is refused)
  // Builds the attention module of block `layer` (registered as "attn") from
  // the classifier config and the fields every attention shares.
  std::function<std::shared_ptr<Module>(const ClassifierConfig& cfg, const AttentionConfig& base, int64_t layer)>
      build;
  // Calls its forward: x [B, T, D], valid Bool [B, T] or undefined.
  std::function<Tensor(Module& attn, const Tensor& x, const Tensor& valid)> forward;
};

// Every kind, in the order of the docs ("hkt", "mha", "local", "performer").
const std::vector<AttentionKind>& attention_kinds();
// The kind named `name`, or null.
const AttentionKind* find_attention_kind(const std::string& name);
// "\"hkt\", \"mha\", ..." for error messages.
std::string attention_kind_names();

}  // namespace hkt::nn
