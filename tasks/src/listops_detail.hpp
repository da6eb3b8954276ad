// ListOps (listops.cpp, listops_files.cpp): what the generator and the TSV files share.
// Internal to the tasks layer.
#pragma once
#include <cstdint>
#include <string>
#include <string_view>

#include "hkt/tasks/dataset.hpp"

namespace hkt::tasks::detail {

// 'expr' quoted, cut to 80 characters with its length, for error messages.
std::string excerpt(std::string_view s);
// An empty ListOps split named `name` (vocabulary, classes and pad id set).
Dataset listops_dataset(const std::string& name, int64_t seq_len);

}  // namespace hkt::tasks::detail
