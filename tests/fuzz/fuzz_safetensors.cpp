// libFuzzer target for the safetensors reader. Every input must either parse
// or throw hkt::Error; any other exception, crash or sanitizer report is a bug.
//
// Build (not part of the default build), e.g.:
//   clang++ -std=c++20 -g -O1 -fsanitize=fuzzer,address,undefined -Icore/include \
//       tests/fuzz/fuzz_safetensors.cpp core/src/safetensors.cpp core/src/tensor.cpp \
//       core/src/storage.cpp core/src/shape.cpp ... -o fuzz_safetensors
// or link against a sanitizer build of libhkt.
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "hkt/core/error.hpp"
#include "hkt/core/safetensors.hpp"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view bytes(reinterpret_cast<const char*>(data), size);
  try {
    const hkt::SafetensorsFile f = hkt::parse_safetensors(bytes, "<fuzz>");
    // Touch what was parsed, so that the sanitizers see every byte read back.
    for (const auto& [name, t] : f.tensors) {
      const auto* p = static_cast<const unsigned char*>(t.raw_data());
      const size_t n = static_cast<size_t>(t.numel()) * hkt::dtype_size(t.dtype());
      unsigned sum = 0;
      for (size_t i = 0; i < n; ++i) sum += p[i];
      if (f.find(name) == nullptr) __builtin_trap();  // every listed tensor is findable
      (void)sum;
    }
  } catch (const hkt::Error&) {
    // Malformed input: the expected outcome.
  }
  return 0;
}
