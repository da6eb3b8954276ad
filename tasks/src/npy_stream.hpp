// Inside the tasks layer: the .npy reader on any byte stream (tasks/src/npy.cpp), shared by the
// .npy files and the .npz members (tasks/src/array_files.cpp).
#pragma once
#include <cstddef>
#include <cstdint>
#include <functional>
#include <string>

#include "hkt/tasks/arrays.hpp"

namespace hkt::tasks {

// Reads up to n bytes into dst and returns how many (0 at the end); throws hkt::Error on a read error.
using ReadFn = std::function<size_t(char*, size_t)>;

// A .npy from a stream of `total` bytes: the preamble, the header, then (checked against the bytes
// left, before anything is allocated) the data. Errors name `name`.
NumArray npy_from(const ReadFn& read, uint64_t total, const std::string& name);

}  // namespace hkt::tasks
