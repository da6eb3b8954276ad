#include "hkt/models/checkpoint.hpp"

#include <cmath>
#include <filesystem>

#include "hkt/core/random.hpp"
#include "hkt/core/safetensors.hpp"
#include "hkt/ops/factory.hpp"

namespace hkt::nn {
namespace {

NamedTensors tensors_of(const SafetensorsFile& f) { return f.tensors; }

Metadata with_state(const Metadata& md, int64_t step) {
  Metadata m = md;
  m["hkt.step"] = std::to_string(step);
  m["hkt.rng_seed"] = std::to_string(default_generator().seed());
  m["hkt.rng_offset"] = std::to_string(default_generator().offset());
  return m;
}

const std::string& need(const Metadata& m, const std::string& key, const std::string& path) {
  auto it = m.find(key);
  HKT_CHECK(it != m.end(), "load_checkpoint: '", path, "' has no '", key, "' in its metadata");
  return it->second;
}

uint64_t parse_u64(const std::string& s, const std::string& key, const std::string& path) {
  size_t used = 0;
  uint64_t v = 0;
  try {
    v = std::stoull(s, &used);
  } catch (const std::exception&) {
    used = 0;
  }
  HKT_CHECK(used == s.size() && !s.empty(), "load_checkpoint: '", path, "': metadata '", key, "' = '", s,
            "' is not a non-negative integer");
  return v;
}

// Safetensors files are written from host memory: device tensors are copied first.
NamedTensors on_cpu(NamedTensors ts) {
  for (auto& [n, t] : ts) t = to_device(t, Device::cpu());
  return ts;
}

// Refuses a file whose tensors are not all finite.
void check_finite(const SafetensorsFile& f, const std::string& path, const char* who) {
  const std::string bad = first_non_finite(f.tensors);
  HKT_CHECK(bad.empty(), who, ": '", path, "': tensor ", bad, ": the weights are not finite (a diverged run, or a "
            "damaged file)");
}

}  // namespace

std::string first_non_finite(const NamedTensors& tensors) {
  for (const auto& [name, t] : tensors) {
    if (!t.defined() || !is_floating(t.dtype()) || t.numel() == 0) continue;
    const std::vector<double> v = to_dtype(to_device(t.detach(), Device::cpu()), DType::Float64).to_vector<double>();
    for (size_t i = 0; i < v.size(); ++i)
      if (!std::isfinite(v[i])) return str_cat("'", name, "' (", v[i], " at element ", i, ")");
  }
  return "";
}

void save_model(const std::string& path, const Module& model, const Metadata& metadata) {
  save_safetensors(path, on_cpu(model.state_dict()), metadata);
}

Metadata load_model(const std::string& path, Module& model, bool strict) {
  SafetensorsFile f = load_safetensors(path);
  check_finite(f, path, "load_model");
  try {
    model.load_state_dict(tensors_of(f), strict);
  } catch (const Error& e) {
    throw Error(str_cat("load_model: '", path, "': ", e.what()));
  }
  return f.metadata;
}

void save_checkpoint(const std::string& dir, const Module& model, const Optimizer& opt, int64_t step,
                     const Metadata& metadata) {
  std::error_code ec;
  std::filesystem::create_directories(dir, ec);
  HKT_CHECK(!ec, "save_checkpoint: cannot create folder '", dir, "': ", ec.message());
  const Metadata md = with_state(metadata, step);
  save_safetensors(dir + "/optimizer.safetensors", on_cpu(opt.state_dict()), md);
  save_safetensors(dir + "/model.safetensors", on_cpu(model.state_dict()), md);
}

Metadata load_checkpoint(const std::string& dir, Module& model, Optimizer& opt) {
  const std::string mp = dir + "/model.safetensors", op = dir + "/optimizer.safetensors";
  SafetensorsFile mf = load_safetensors(mp);
  SafetensorsFile of = load_safetensors(op);
  check_finite(mf, mp, "load_checkpoint");
  check_finite(of, op, "load_checkpoint");
  const std::string& ms = need(mf.metadata, "hkt.step", mp);
  const std::string& os = need(of.metadata, "hkt.step", op);
  HKT_CHECK(ms == os, "load_checkpoint: '", dir, "': the model is from step ", ms, " but the optimizer from step ",
            os, " (an interrupted save?)");
  const uint64_t seed = parse_u64(need(mf.metadata, "hkt.rng_seed", mp), "hkt.rng_seed", mp);
  const uint64_t offset = parse_u64(need(mf.metadata, "hkt.rng_offset", mp), "hkt.rng_offset", mp);
  parse_u64(ms, "hkt.step", mp);
  // Validate both before changing either: load_state_dict modifies nothing on error,
  // but the model must not be loaded if the optimizer state is wrong.
  NamedTensors before = opt.state_dict();
  try {
    opt.load_state_dict(tensors_of(of));
  } catch (const Error& e) {
    throw Error(str_cat("load_checkpoint: '", op, "': ", e.what()));
  }
  try {
    model.load_state_dict(tensors_of(mf), true);
  } catch (const Error& e) {
    opt.load_state_dict(before);
    throw Error(str_cat("load_checkpoint: '", mp, "': ", e.what()));
  }
  default_generator().manual_seed(seed);
  default_generator().set_offset(offset);
  return mf.metadata;
}

}  // namespace hkt::nn
