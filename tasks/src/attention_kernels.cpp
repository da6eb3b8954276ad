// A run folder's attention kernels (attention_kernels.hpp).
#include "hkt/tasks/attention_kernels.hpp"

#include <filesystem>
#include <ostream>

#include "hkt/core/error.hpp"
#include "hkt/tasks/files.hpp"
#include "hkt/tasks/train.hpp"

namespace hkt::tasks {

namespace fs = std::filesystem;

RunAttentionKernels::RunAttentionKernels(const std::string& run_dir, Device device, KernelsUse use, bool tune) {
  if (device.is_cpu()) return;
  if (run_dir.empty()) {
    if (tune) tuner_.emplace(true);
    return;
  }
  const fs::path file = fs::path(run_dir) / kAttentionKernelsFile;
  std::error_code ec;
  if (use != KernelsUse::train && fs::exists(file, ec)) {
    try {
      cuda_attention_autotune_from_json(read_text_file(file));
    } catch (const Error& e) {
      throw InputError(str_cat(file.string(), ": ", e.what()));
    }
    read_ = true;
  }
  if (!read_ && !tune) return;
  tuner_.emplace(true);
  if (use == KernelsUse::evaluate) return;
  write_file_atomic(file, cuda_attention_autotune_to_json());
  cuda_attention_autotune_on_decision([file] { write_file_atomic(file, cuda_attention_autotune_to_json()); });
  listening_ = true;
}

RunAttentionKernels::~RunAttentionKernels() {
  if (listening_) cuda_attention_autotune_on_decision({});
}

void print_attention_kernels(std::ostream& os) {
  for (const CudaAttentionChoice& c : cuda_attention_autotune_choices())
    os << "attention kernel (autotuned): " << c.call << ": " << c.kernel
       << (c.preset ? " (saved in the run folder)" : "") << "\n";
}

}  // namespace hkt::tasks
