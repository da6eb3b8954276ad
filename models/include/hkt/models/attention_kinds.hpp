// The attention kinds a classifier block can use (ClassifierConfig::attention):
// one table from the kind's name to its options' defaults, the builder of its
// module and the call of its forward. Adding a kind is its options struct
// (hkt/models/attention_spec.hpp: defaults, JSON keys, checks), its module and
// one entry in models/src/attention_kinds.cpp; the classifier is not edited.
#pragma once
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "hkt/models/attention.hpp"
#include "hkt/models/attention_spec.hpp"

namespace hkt::nn {

struct AttentionKind {
  std::string name;  // the kind's name (KindOptions::kind())
  bool cpu_only = false;  // its kernels exist on the CPU only (a model on a device is refused)
  // The kind's options with their defaults.
  std::function<std::unique_ptr<KindOptions>()> defaults;
  // Builds the attention module of block `layer` (registered as "attn") from the kind's
  // options and the fields every attention shares.
  std::function<std::shared_ptr<Module>(const KindOptions& options, const AttentionConfig& base, int64_t layer)>
      build;
  // Calls its forward: x [B, T, D], valid Bool [B, T] or undefined.
  std::function<Tensor(Module& attn, const Tensor& x, const Tensor& valid)> forward;
};

// Every kind, in the order of the docs and of ClassifierConfig::to_json's keys
// ("hkt", "mha", "local", "performer", "htransformer").
const std::vector<AttentionKind>& attention_kinds();
// The kind named `name`, or null.
const AttentionKind* find_attention_kind(const std::string& name);
// "\"hkt\", \"mha\", ..." for error messages.
std::string attention_kind_names();

}  // namespace hkt::nn
