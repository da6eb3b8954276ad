// Installs the lab's attention kernels into the library
// (kernels/cuda/attention_variants.hpp); variants.cpp. Call once, before the
// first attention call, in a program linked with hkt_cuda_lab.
#pragma once

namespace hkt::cuda {
void install_lab_variants();
}  // namespace hkt::cuda
