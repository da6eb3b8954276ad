// ModelSpec (hkt/tasks/model_spec.hpp): a preset and the typed fields set over it, and
// their JSON at the file boundary.
#include "hkt/tasks/model_spec.hpp"

#include <algorithm>
#include <nlohmann/json.hpp>

#include "hkt/core/json_read.hpp"
#include "hkt/models/attention_kinds.hpp"

namespace hkt::tasks {

using ordered_json = nlohmann::ordered_json;

ModelSpec::ModelSpec(const std::string& preset) : preset_(preset), config_(nn::ClassifierConfig::preset(preset)) {}

void ModelSpec::name_key(const std::string& key) {
  if (std::find(named_.begin(), named_.end(), key) == named_.end()) named_.push_back(key);
}

void ModelSpec::apply_overrides(const std::string& text) {
  const ordered_json o = read_json<ordered_json>(text, "model_overrides");
  HKT_CHECK(o.is_object(), "model_overrides must be a JSON object, got ", o.type_name());
  nn::ClassifierConfig base = config_;
  if (const auto a = o.find("attention"); a != o.end() && a->is_string() && a->get<std::string>() != base.attention.kind())
    base.attention = a->get<std::string>();  // another kind: its defaults, not this one's options
  ordered_json m = read_json<ordered_json>(base.to_json(), "the preset");
  for (auto it = o.begin(); it != o.end(); ++it) {
    HKT_CHECK(m.contains(it.key()), "unknown key '", it.key(), "'");
    m[it.key()] = it.value();
  }
  config_ = nn::ClassifierConfig::from_json(m.dump());
  for (auto it = o.begin(); it != o.end(); ++it) name_key(it.key());
}

ModelSpec ModelSpec::with_preset(const std::string& preset, bool drop_other_kinds) const {
  ModelSpec m(preset);
  ordered_json o = read_json<ordered_json>(overrides_json(), "model_overrides");
  if (o.empty()) return m;
  if (drop_other_kinds) {
    const std::string kind = o.contains("attention") ? o["attention"].get<std::string>() : m.config_.attention.kind();
    ordered_json kept = ordered_json::object();
    for (auto it = o.begin(); it != o.end(); ++it) {
      bool other = false;
      for (const nn::AttentionKind& k : nn::attention_kinds())
        if (k.name != kind && k.defaults()->read(it.key(), it.value())) other = true;
      if (!other) kept[it.key()] = it.value();
    }
    o = kept;
  }
  m.apply_overrides(o.dump());
  return m;
}

std::string ModelSpec::overrides_json() const {
  const ordered_json have = read_json<ordered_json>(config_.to_json(), "the model");
  const ordered_json preset = read_json<ordered_json>(nn::ClassifierConfig::preset(preset_).to_json(), "the preset");
  ordered_json o = ordered_json::object();
  for (const std::string& key : named_)  // first the named keys, in the order they were named
    if (have.contains(key)) o[key] = have[key];
  for (auto it = have.begin(); it != have.end(); ++it)  // then any other change, in to_json's order
    if (!o.contains(it.key()) && (!preset.contains(it.key()) || preset[it.key()] != it.value()))
      o[it.key()] = it.value();
  return o.dump();
}

}  // namespace hkt::tasks
