// The attention of a classifier block, typed: its kind's own options (a struct
// per kind, declared beside the kind's module: HKTOptions in attention.hpp,
// LocalOptions and PerformerOptions in efficient_attention.hpp,
// HTransformerOptions in htransformer.hpp), and the two switches every kind
// shares (causal, projection biases).
//
//   nn::ClassifierConfig c = nn::ClassifierConfig::preset("hkt-small");
//   c.attention.edit<nn::HKTOptions>().levels = 2;   // typed; Error if the kind is not "hkt"
//   nn::LocalOptions w;  w.window = 32;
//   c.attention = w;                                  // another kind, with its options
//   c.attention = "mha";                              // a kind with its defaults
//
// A kind's options struct owns its defaults, its JSON keys and its checks
// (KindOptions below); the kind table (hkt/models/attention_kinds.hpp) names
// it, so a new kind is one options struct, its module and one table entry,
// with no edit to the classifier.
#pragma once
#include <cstdint>
#include <memory>
#include <nlohmann/json_fwd.hpp>
#include <string>
#include <type_traits>

#include "hkt/core/error.hpp"

namespace hkt::nn {

class KindOptions {
 public:
  virtual ~KindOptions() = default;
  virtual const char* kind() const = 0;  // the kind's name in the table ("hkt", "local", ...)
  virtual std::unique_ptr<KindOptions> clone() const = 0;
  virtual bool equals(const KindOptions& other) const = 0;
  // JSON: writes the kind's keys into j (in their documented order); reads one key, false
  // when it is not one of the kind's (a value of the wrong type is an Error naming the key).
  virtual void write(nlohmann::ordered_json& j) const = 0;
  virtual bool read(const std::string& key, const nlohmann::ordered_json& value) = 0;
  // Throws hkt::Error starting with `who` and naming the first invalid option; max_len is
  // the classifier's longest sequence (HKT's levels are bounded by it).
  virtual void validate(const char* who, int64_t max_len) const = 0;
  // The D x D matrices of one block's attention, for ClassifierConfig's size limit.
  virtual int64_t matrices() const { return 4; }
};

// The boilerplate of a kind's options struct D (D::kKind its name, D::operator== its fields').
template <class D>
class KindOptionsOf : public KindOptions {
 public:
  const char* kind() const override { return D::kKind; }
  std::unique_ptr<KindOptions> clone() const override { return std::make_unique<D>(static_cast<const D&>(*this)); }
  bool equals(const KindOptions& other) const override {
    const D* d = dynamic_cast<const D*>(&other);
    return d != nullptr && *d == static_cast<const D&>(*this);
  }
  bool operator==(const KindOptionsOf&) const { return true; }
};

class AttentionSpec {
 public:
  AttentionSpec();                          // "hkt" with its defaults
  AttentionSpec(const std::string& kind);   // the kind's defaults; Error naming the kinds if unknown
  AttentionSpec(const char* kind) : AttentionSpec(std::string(kind)) {}
  template <class O, class = std::enable_if_t<std::is_base_of_v<KindOptions, O>>>
  AttentionSpec(const O& options) : opts_(std::make_shared<O>(options)) {}

  // Another kind (its options replace these; causal and bias stay).
  AttentionSpec& operator=(const std::string& kind) { return *this = AttentionSpec(kind).with(causal, bias); }
  AttentionSpec& operator=(const char* kind) { return *this = std::string(kind); }
  template <class O, class = std::enable_if_t<std::is_base_of_v<KindOptions, O>>>
  AttentionSpec& operator=(const O& options) {
    opts_ = std::make_shared<O>(options);
    return *this;
  }
  AttentionSpec(const AttentionSpec&) = default;
  AttentionSpec& operator=(const AttentionSpec&) = default;

  bool causal = false;  // false: bidirectional (classification's default)
  bool bias = false;    // biases on the attention's projections

  std::string kind() const { return opts_->kind(); }
  const KindOptions& options() const { return *opts_; }
  KindOptions& options();  // for the JSON reader; copies options shared with another spec first
  template <class O>
  const O* find() const {
    return dynamic_cast<const O*>(opts_.get());
  }
  template <class O>
  const O& get() const {
    const O* o = find<O>();
    HKT_CHECK(o, "ClassifierConfig: attention \"", kind(), "\" has no options of \"", O::kKind, "\"");
    return *o;
  }
  template <class O>
  O& edit() {
    get<O>();  // the check
    return static_cast<O&>(options());
  }
  bool operator==(const AttentionSpec& o) const {
    return causal == o.causal && bias == o.bias && opts_->equals(*o.opts_);
  }
  // Compare kinds by name with kind() == "hkt" (a spec holds options too).
  bool operator==(const char*) const = delete;
  bool operator==(const std::string&) const = delete;

 private:
  AttentionSpec with(bool c, bool b) const {
    AttentionSpec s = *this;
    s.causal = c, s.bias = b;
    return s;
  }
  std::shared_ptr<KindOptions> opts_;  // never null; shared by copies until one is edited
};

}  // namespace hkt::nn
