// <hkt/kernels/cuda.hpp>: the attention autotuner's decisions as JSON
// (kernels/cuda/attention_tune.hpp), so that a later process, a resumed
// training run for one, runs the kernels an earlier one chose.
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "hkt/core/json_read.hpp"
#include "hkt/core/error.hpp"
#include "hkt/kernels/cuda.hpp"
// Plain declarations: the JSON is checked in every build, and only a CUDA
// build has the tuner to hand the decisions to.
#include "kernels/cuda/attention_tune.hpp"

namespace hkt {
namespace {

constexpr const char* kFormat = "hkt-attention-kernels";
using cuda::kTuneGradNames;

// One decision, as the JSON holds it.
struct Decision {
  cuda::TuneKey key;
  std::string kernel;
};

Decision parse(const nlohmann::json& d, size_t i) {
  const auto where = [&](const char* field) { return str_cat("decision ", i, ", \"", field, "\""); };
  HKT_CHECK(d.is_object(), "decision ", i, " is not an object");
  const auto need = [&](const char* field) -> const nlohmann::json& {
    HKT_CHECK(d.contains(field), where(field), " is missing");
    return d.at(field);
  };
  Decision r;
  cuda::TuneKey& k = r.key;
  const nlohmann::json& pass = need("pass");
  HKT_CHECK(pass == "forward" || pass == "backward", where("pass"), " is ", pass.dump(),
            ", not \"forward\" or \"backward\"");
  k.backward = pass == "backward";
  for (auto [field, dst] : {std::pair{"B", &k.B}, {"H", &k.H}, {"T", &k.T}, {"dh", &k.dh}, {"L", &k.L}}) {
    const nlohmann::json& v = need(field);
    HKT_CHECK(v.is_number_integer() && v.get<int64_t>() > 0, where(field), " is ", v.dump(),
              ", not a positive integer");
    *dst = v.get<int64_t>();
  }
  for (auto [field, dst] : {std::pair{"causal", &k.causal}, {"masked", &k.masked}, {"aligned", &k.aligned}}) {
    const nlohmann::json& v = need(field);
    HKT_CHECK(v.is_boolean(), where(field), " is ", v.dump(), ", not true or false");
    *dst = v.get<bool>();
  }
  const nlohmann::json& grads = need("grads");
  HKT_CHECK(grads.is_array(), where("grads"), " is not a list");
  for (const nlohmann::json& g : grads) {
    unsigned bit = 0;
    for (unsigned b = 0; b < 4; ++b)
      if (g == kTuneGradNames[b]) bit = 1u << b;
    HKT_CHECK(bit != 0, where("grads"), " has ", g.dump(), ", not one of \"dq\", \"dk\", \"dv\", \"dlambda\"");
    k.want |= bit;
  }
  HKT_CHECK(k.backward || k.want == 0, where("grads"), " is not empty for a forward");
  const nlohmann::json& kernel = need("kernel");
  HKT_CHECK(kernel.is_string() && !kernel.get<std::string>().empty(), where("kernel"), " is ", kernel.dump(),
            ", not a kernel's name");
  r.kernel = kernel.get<std::string>();
  return r;
}

// In the order of the fields above (ordered_json: not sorted by name).
[[maybe_unused]] nlohmann::ordered_json to_json(const cuda::TuneKey& k, const std::string& kernel) {  // CUDA only
  nlohmann::ordered_json grads = nlohmann::ordered_json::array();
  for (unsigned b = 0; b < 4; ++b)
    if (k.want & (1u << b)) grads.push_back(kTuneGradNames[b]);
  return {{"pass", k.backward ? "backward" : "forward"},
          {"B", k.B},
          {"H", k.H},
          {"T", k.T},
          {"dh", k.dh},
          {"L", k.L},
          {"causal", k.causal},
          {"masked", k.masked},
          {"aligned", k.aligned},
          {"grads", grads},
          {"kernel", kernel}};
}

}  // namespace

std::string cuda_attention_autotune_to_json() {
  nlohmann::ordered_json decisions = nlohmann::ordered_json::array();
#if HKT_WITH_CUDA
  for (const cuda::TuneResult& r : cuda::attention_autotune_results()) decisions.push_back(to_json(r.key, r.chosen));
#endif
  return nlohmann::ordered_json{{"format", kFormat}, {"version", 1}, {"decisions", decisions}}.dump(1) + "\n";
}

void cuda_attention_autotune_from_json(const std::string& text) {
  std::vector<Decision> all;
  try {
    check_json_text(text, "not JSON");  // size and nesting limits (hkt/core/json_read.hpp)
    const nlohmann::json j = nlohmann::json::parse(text);
    HKT_CHECK(j.is_object() && j.value("format", "") == kFormat, "not an \"", kFormat, "\" file (its \"format\")");
    HKT_CHECK(j.value("version", 0) == 1, "version ", j.value("version", nlohmann::json()).dump(),
              " is not 1, the one this build reads");
    HKT_CHECK(j.contains("decisions") && j["decisions"].is_array(), "\"decisions\" is missing or not a list");
    for (size_t i = 0; i < j["decisions"].size(); ++i) all.push_back(parse(j["decisions"][i], i));
  } catch (const nlohmann::json::exception& e) {
    throw Error(str_cat("attention kernel decisions: not JSON: ", excerpt(e.what(), 240)));
  } catch (const Error& e) {
    throw Error(str_cat("attention kernel decisions: ", e.what()));
  }
#if HKT_WITH_CUDA
  for (const Decision& d : all) cuda::set_attention_decision(d.key, d.kernel);
#endif
}

void cuda_attention_autotune_on_decision(std::function<void()> f) {
#if HKT_WITH_CUDA
  cuda::set_attention_autotune_listener(std::move(f));
#else
  (void)f;
#endif
}

}  // namespace hkt
