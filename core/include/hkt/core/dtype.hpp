// Element types and devices.
#pragma once
#include <cstddef>
#include <cstdint>
#include <ostream>
#include <string>

#include "hkt/core/error.hpp"

namespace hkt {

// Bool is the mask type (1 byte); Int64 is for indices and labels.
enum class DType : uint8_t { Float32, Float64, Int64, Bool };

inline size_t dtype_size(DType t) {
  switch (t) {
    case DType::Float32: return 4;
    case DType::Float64: return 8;
    case DType::Int64: return 8;
    case DType::Bool: return 1;
  }
  return 0;
}
inline const char* dtype_name(DType t) {
  switch (t) {
    case DType::Float32: return "float32";
    case DType::Float64: return "float64";
    case DType::Int64: return "int64";
    case DType::Bool: return "bool";
  }
  return "?";
}
inline bool is_floating(DType t) { return t == DType::Float32 || t == DType::Float64; }
inline std::ostream& operator<<(std::ostream& os, DType t) { return os << dtype_name(t); }

template <class T> struct dtype_of;
template <> struct dtype_of<float> { static constexpr DType value = DType::Float32; };
template <> struct dtype_of<double> { static constexpr DType value = DType::Float64; };
template <> struct dtype_of<int64_t> { static constexpr DType value = DType::Int64; };
template <> struct dtype_of<bool> { static constexpr DType value = DType::Bool; };

enum class DeviceType : uint8_t { CPU = 0, CUDA = 1 };
inline constexpr int kNumDeviceTypes = 2;
inline constexpr int kNumDTypes = 4;

struct Device {
  DeviceType type = DeviceType::CPU;
  int index = 0;
  static Device cpu() { return {DeviceType::CPU, 0}; }
  static Device cuda(int i = 0) { return {DeviceType::CUDA, i}; }
  bool is_cpu() const { return type == DeviceType::CPU; }
  bool operator==(const Device&) const = default;
  std::string str() const {
    return type == DeviceType::CPU ? std::string("cpu") : "cuda:" + std::to_string(index);
  }
};
inline std::ostream& operator<<(std::ostream& os, const Device& d) { return os << d.str(); }

// Calls f.template operator()<T>() with T the C++ type of a floating dtype;
// throws naming `op` for any other dtype. Usage:
//   dispatch_float(t.dtype(), "exp", [&]<class T>() { ... });
template <class F>
decltype(auto) dispatch_float(DType t, const char* op, F&& f) {
  switch (t) {
    case DType::Float32: return f.template operator()<float>();
    case DType::Float64: return f.template operator()<double>();
    default: throw Error(str_cat(op, ": expected a floating dtype (float32 or float64), got ", t));
  }
}
// Same, for every dtype.
template <class F>
decltype(auto) dispatch_all(DType t, F&& f) {
  switch (t) {
    case DType::Float32: return f.template operator()<float>();
    case DType::Float64: return f.template operator()<double>();
    case DType::Int64: return f.template operator()<int64_t>();
    case DType::Bool: return f.template operator()<bool>();
  }
  throw Error("unknown dtype");
}

}  // namespace hkt
