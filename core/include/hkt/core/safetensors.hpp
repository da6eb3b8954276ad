// Safetensors checkpoints (https://github.com/huggingface/safetensors).
//
// Layout: an 8-byte little-endian unsigned header length N, N bytes of UTF-8
// JSON (an object mapping tensor name -> {"dtype", "shape", "data_offsets"},
// plus an optional "__metadata__" object of string -> string), then the data
// buffer: raw little-endian, row-major values, tensors back to back with no
// gaps, offsets relative to the start of the buffer.
//
// The writer follows the reference implementation: tensors sorted by
// descending dtype ("I64" > "F64" > "F32" > "BOOL") then by name, header keys
// in the order dtype/shape/data_offsets with "__metadata__" first, header
// padded with spaces so that the data starts at an 8-byte aligned offset.
//
// The reader accepts any valid safetensors file whose tensors have a dtype hkt
// supports (F32, F64, I64, BOOL) and rejects every malformed input with an
// hkt::Error naming the file (or `source_name`) and the problem.
#pragma once
#include <map>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "hkt/core/tensor.hpp"

namespace hkt {

struct SafetensorsFile {
  // Contiguous CPU tensors, in buffer order (by data offsets; ties by name).
  std::vector<std::pair<std::string, Tensor>> tensors;
  std::map<std::string, std::string> metadata;  // "__metadata__"
  // The tensor called `name`, or nullptr.
  const Tensor* find(const std::string& name) const;
};

// Writes CPU tensors of any dtype (F32, F64, I64, BOOL) and any strides (in
// row-major logical order). Writes "<path>.tmp.<pid>" in the same folder,
// fsyncs it, then renames it over `path`, so that a crash never leaves a
// half-written checkpoint; on any failure removes the temporary file and throws
// hkt::Error naming the path. Names must be unique and not "__metadata__".
void save_safetensors(const std::string& path, const std::vector<std::pair<std::string, Tensor>>& tensors,
                      const std::map<std::string, std::string>& metadata = {});
SafetensorsFile load_safetensors(const std::string& path);

// In-memory variants: the bytes of a whole safetensors file.
std::string serialize_safetensors(const std::vector<std::pair<std::string, Tensor>>& tensors,
                                  const std::map<std::string, std::string>& metadata = {});
SafetensorsFile parse_safetensors(std::string_view bytes, const std::string& source_name = "<memory>");

}  // namespace hkt
