// The JSON of a config struct S as a table of its fields (key -> member), shared
// by ClassifierConfig and every attention kind's options: one writer, one
// strict reader with the messages of ClassifierConfig::from_json.
#pragma once
#include <cstdint>
#include <limits>
#include <nlohmann/json.hpp>
#include <string>
#include <type_traits>
#include <variant>
#include <vector>

#include "hkt/core/dtype.hpp"
#include "hkt/core/error.hpp"
#include "hkt/core/json_read.hpp"

namespace hkt::nn::detail {

using ordered_json = nlohmann::ordered_json;
inline constexpr const char* kFromJson = "ClassifierConfig::from_json: ";

template <class S>
struct OptionField {
  const char* key;
  std::variant<std::string S::*, int64_t S::*, double S::*, bool S::*, DType S::*> ptr;
  // Written only when it differs from the default: a key added after runs were archived, so
  // that their configs (and checkpoints' hkt.model_config, compared as text on resume) still
  // equal what to_json writes for the same model.
  bool only_if_changed = false;
};
template <class S>
using OptionFields = std::vector<OptionField<S>>;

template <class S>
void write_fields(const S& s, const OptionFields<S>& fields, ordered_json& j) {
  static const S defaults;
  for (const OptionField<S>& f : fields)
    std::visit(
        [&](auto ptr) {
          using T = std::remove_cvref_t<decltype(s.*ptr)>;
          if (f.only_if_changed && s.*ptr == defaults.*ptr) return;
          if constexpr (std::is_same_v<T, DType>)
            j[f.key] = dtype_name(s.*ptr);
          else
            j[f.key] = s.*ptr;
        },
        f.ptr);
}

template <class T>
T read_value(const char* key, const ordered_json& v) {
  if constexpr (std::is_same_v<T, std::string>) {
    HKT_CHECK(v.is_string(), kFromJson, "key '", key, "' must be a string, got ", v.type_name());
    return v.get<std::string>();
  } else if constexpr (std::is_same_v<T, int64_t>) {
    HKT_CHECK(v.is_number_integer(), kFromJson, "key '", key, "' must be an integer, got ", excerpt(v.dump()));
    HKT_CHECK(!v.is_number_unsigned() || v.get<uint64_t>() <= uint64_t(std::numeric_limits<int64_t>::max()),
              kFromJson, "key '", key, "' is out of range: ", excerpt(v.dump()));
    return v.get<int64_t>();
  } else if constexpr (std::is_same_v<T, double>) {
    HKT_CHECK(v.is_number(), kFromJson, "key '", key, "' must be a number, got ", excerpt(v.dump()));
    return v.get<double>();
  } else if constexpr (std::is_same_v<T, bool>) {
    HKT_CHECK(v.is_boolean(), kFromJson, "key '", key, "' must be true or false, got ", excerpt(v.dump()));
    return v.get<bool>();
  } else {
    static_assert(std::is_same_v<T, DType>);
    HKT_CHECK(v.is_string(), kFromJson, "key '", key, "' must be \"float32\" or \"float64\", got ", excerpt(v.dump()));
    const std::string s = v.get<std::string>();
    HKT_CHECK(s == "float32" || s == "float64", kFromJson, "key '", key, "' must be \"float32\" or \"float64\", got \"",
              s, "\"");
    return s == "float32" ? DType::Float32 : DType::Float64;
  }
}

// Reads `key` into s; false when no field has that key.
template <class S>
bool read_field(S& s, const OptionFields<S>& fields, const std::string& key, const ordered_json& v) {
  for (const OptionField<S>& f : fields)
    if (key == f.key) {
      std::visit([&](auto ptr) { s.*ptr = read_value<std::remove_cvref_t<decltype(s.*ptr)>>(f.key, v); }, f.ptr);
      return true;
    }
  return false;
}

}  // namespace hkt::nn::detail

// The JSON members of a kind's options struct S, from its table of fields FIELDS (an
// expression of type const OptionFields<S>&), in the .cpp of its kind.
#define HKT_KIND_OPTIONS_JSON(S, FIELDS)                                                                        \
  void S::write(nlohmann::ordered_json& j) const { ::hkt::nn::detail::write_fields(*this, FIELDS, j); }         \
  bool S::read(const std::string& key, const nlohmann::ordered_json& v) {                                       \
    return ::hkt::nn::detail::read_field(*this, FIELDS, key, v);                                                \
  }
