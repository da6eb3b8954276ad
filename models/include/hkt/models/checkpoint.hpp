// Checkpoints: a module and its optimizer in safetensors files.
//
// A training checkpoint is a folder with two files:
//   model.safetensors      the module's state_dict() under its own names
//                          (blocks.0.attn.wq.1.weight ...), readable by any
//                          safetensors tool;
//   optimizer.safetensors  the optimizer's state_dict() (step, group.<g>.*,
//                          state.<i>.*).
// Both carry the same "__metadata__": the caller's entries (for example the
// model config as JSON) plus "hkt.step" and the global random generator's
// "hkt.rng_seed" / "hkt.rng_offset", so that dropout continues exactly where
// it stopped. Each file is written to a temporary file and renamed; the
// optimizer file is written first and the model file last, and loading
// refuses a pair whose steps differ (an interrupted save).
#pragma once
#include <map>
#include <string>

#include "hkt/models/module.hpp"
#include "hkt/models/optim.hpp"

namespace hkt::nn {

using Metadata = std::map<std::string, std::string>;

// One module <-> one safetensors file. load_model is strict (see
// Module::load_state_dict) and returns the file's metadata. Loading (here and
// load_checkpoint) refuses NaN or infinite values, naming the tensor.
void save_model(const std::string& path, const Module& model, const Metadata& metadata = {});
Metadata load_model(const std::string& path, Module& model, bool strict = true);

// A training checkpoint folder (created if missing).
void save_checkpoint(const std::string& dir, const Module& model, const Optimizer& opt, int64_t step,
                     const Metadata& metadata = {});
// Restores model, optimizer and the global generator; returns the metadata
// (hkt.step holds the step).
Metadata load_checkpoint(const std::string& dir, Module& model, Optimizer& opt);

// The name of the first floating-point tensor holding a NaN or an infinity
// (with the first such value and its flat index, "name (nan at element 3)"),
// or "" when every value is finite. Tensors on a device are copied back.
std::string first_non_finite(const NamedTensors& tensors);

}  // namespace hkt::nn
