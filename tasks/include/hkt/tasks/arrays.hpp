// Numeric arrays from a user's files (docs/tasks.md, "Your own data"): NumPy's .npy (one array) and
// .npz (a zip of .npy files, stored or deflated, read through libzip), and safetensors (through
// hkt's own reader, hkt/core/safetensors.hpp). Each array keeps its dtype as stored; the task code
// (array_data.hpp) checks the dtypes, shapes and values it needs.
//
// The .npy header (a Python dict literal: 'descr', 'fortran_order', 'shape') is parsed strictly, and
// the size it declares is checked against the bytes the file (or zip member) has before the data is
// allocated: a truncated file, or a header that claims more or fewer bytes than follow it, is an
// hkt::Error naming the file. Supported dtypes: bool, int8-64, uint8-64, float32, float64, either
// byte order; object arrays (what NumPy makes of ragged rows), strings, complex and structured
// dtypes and Fortran order are refused by name.
//
//   ArrayFile f = read_array_file("train.npz", {"inputs", "labels", "lengths"});
//   const NumArray* x = f.find("inputs");   // x->shape, x->int_at(i), x->float_at(i)
#pragma once
#include <cstdint>
#include <map>
#include <string>
#include <string_view>
#include <vector>

namespace hkt::tasks {

struct NumArray {
  std::string name;            // for messages: "train.npz: labels", or the .npy file's path
  char kind = 0;               // 'b' bool, 'i' signed integer, 'u' unsigned integer, 'f' float
  int itemsize = 0;            // bytes per element
  bool big_endian = false;
  std::vector<int64_t> shape;  // C order
  std::string data;            // size() * itemsize bytes, as stored

  int64_t size() const;        // elements
  std::string dtype() const;   // NumPy's name: "int64", "float32", "bool", ...
  bool is_integer() const { return kind == 'b' || kind == 'i' || kind == 'u'; }
  std::string shape_str() const;  // "(400, 32)"
  std::string index(int64_t flat) const;  // the C-order index of element `flat`: "[3, 7]"
  // Element `flat` as an integer (integer kinds only; a uint64 past int64's range is an error naming
  // the element) or as a double (any kind).
  int64_t int_at(int64_t flat) const;
  double float_at(int64_t flat) const;
};

// The bytes a data array may hold (16 GiB): a larger header is refused before anything is allocated.
inline constexpr uint64_t kMaxArrayBytes = uint64_t{1} << 34;

// A .npy file, or its bytes in memory (`name` stands for the file in messages).
NumArray read_npy(const std::string& path);
NumArray parse_npy(std::string_view bytes, const std::string& name);

// The arrays of a container file (.npz or .safetensors): `names` lists every array it holds (sorted),
// `arrays` the ones asked for that it has.
struct ArrayFile {
  std::string path;
  std::vector<std::string> names;
  std::map<std::string, NumArray> arrays;
  const NumArray* find(const std::string& name) const;
  std::string names_str() const;  // "inputs, labels" (or "none")
};
// .npz: each array is the member "<name>.npy"; only the `wanted` ones are read. .safetensors: every
// tensor is read (F32, F64, I64 and BOOL; hkt's reader refuses the others by name). The format comes
// from the extension (else an error naming the file and the extensions known).
ArrayFile read_array_file(const std::string& path, const std::vector<std::string>& wanted);
// The same from bytes in memory, `format` "npz" or "safetensors" (the fuzz targets' entry).
ArrayFile parse_array_file(std::string_view bytes, const std::string& name, const std::string& format,
                           const std::vector<std::string>& wanted);

// "npy", "npz" or "safetensors" from a path's extension (case-insensitive), else "".
std::string array_format_of(const std::string& path);

}  // namespace hkt::tasks
