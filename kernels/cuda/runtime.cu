// The CUDA runtime side of the backend: device detection, the stream and the
// cuBLAS handle, the caching allocator, host <-> device copies.
#include <cstdlib>
#include <map>
#include <mutex>
#include <vector>

#include "hkt/core/storage.hpp"
#include "kernels/cuda/common.cuh"
#include "kernels/cuda/runtime.hpp"
#include "kernels/backends.hpp"

namespace hkt::cuda {
namespace {

struct DeviceInfo {
  int count = 0;
  std::string reason;  // why count is 0
};

const DeviceInfo& device_info() {
  static const DeviceInfo info = [] {
    DeviceInfo d;
    const cudaError_t e = cudaGetDeviceCount(&d.count);
    if (e != cudaSuccess) {
      d.count = 0;
      const bool absent = e == cudaErrorNoDevice || e == cudaErrorInsufficientDriver;
      d.reason = str_cat(absent ? "no NVIDIA GPU with a working driver was found (" : "CUDA failed to start (",
                         "cudaGetDeviceCount: ", cudaGetErrorName(e), ": ", cudaGetErrorString(e), ")");
      (void)cudaGetLastError();  // clear the sticky-free error state
    } else if (d.count == 0) {
      d.reason = "cudaGetDeviceCount found no CUDA device";
    }
    return d;
  }();
  return info;
}

// Caching allocator: freed blocks go to a free list per size class and are
// handed out again without cudaMalloc/cudaFree (both synchronise the device).
// Reuse needs no event: every user of device memory works on stream(), so a
// block's next user is queued after its previous users. When cudaMalloc runs
// out of memory the cache is released and the allocation retried once.
//
// HKT_CUDA_FILL_UNINITIALIZED=1 fills every block handed out, new or cached,
// with 0xFF bytes (NaN in float32 and float64, -1 in int64) before use, so a
// kernel that reads output it never wrote gives NaN instead of a stale value
// (as torch.utils.deterministic.fill_uninitialized_memory does; the emulated
// test suites turn it on). It costs a memset per allocation.
class CudaAllocator final : public Allocator {
 public:
  CudaAllocator() {
    const char* e = std::getenv("HKT_CUDA_FILL_UNINITIALIZED");
    fill_ = e && e[0] == '1';
  }
  void* allocate(size_t nbytes, Device device) override {
    void* p = take(nbytes, device);
    if (fill_) CUDA_CHECK(cudaMemsetAsync(p, 0xFF, size_class(nbytes), stream()));
    return p;
  }
  void deallocate(void* p, size_t nbytes, Device) override {
    const size_t n = size_class(nbytes);
    std::lock_guard<std::mutex> lock(mu_);
    free_[n].push_back(p);
    stats_.cached_bytes += n;
    stats_.allocated_bytes -= n;
  }
  void copy_to_host(void* dst, const void* src, size_t nbytes, Device) override {
    copy_device_to_host(dst, src, nbytes);
  }
  MemoryStats stats() {
    std::lock_guard<std::mutex> lock(mu_);
    return stats_;
  }
  void release_cached() {
    std::lock_guard<std::mutex> lock(mu_);
    release_cached_locked();
  }

 private:
  // A block of size_class(nbytes): from the cache, else from cudaMalloc.
  void* take(size_t nbytes, Device device) {
    require_device(device.index, "allocating device memory");
    const size_t n = size_class(nbytes);
    std::lock_guard<std::mutex> lock(mu_);
    auto it = free_.find(n);
    if (it != free_.end() && !it->second.empty()) {
      void* p = it->second.back();
      it->second.pop_back();
      stats_.cached_bytes -= n;
      ++stats_.cache_hits;
      return note_alloc(p, n);
    }
    void* p = nullptr;
    cudaError_t e = cudaMalloc(&p, n);
    if (e == cudaErrorMemoryAllocation) {
      (void)cudaGetLastError();
      release_cached_locked();
      e = cudaMalloc(&p, n);
    }
    if (e != cudaSuccess) {
      (void)cudaGetLastError();
      throw Error(str_cat("out of memory on cuda:0: could not allocate ", nbytes, " bytes (", stats_.allocated_bytes,
                          " bytes in use by tensors; cudaMalloc: ", cudaGetErrorString(e), ")"));
    }
    ++stats_.device_mallocs;
    return note_alloc(p, n);
  }
  // 512-byte multiples below 1 MiB; above, steps of 1/8 of the power of two
  // below (at most 12.5% waste), so that nearby sizes share a class.
  static size_t size_class(size_t nbytes) {
    size_t n = (nbytes + 511) / 512 * 512;
    if (n == 0) n = 512;
    if (n < (size_t{1} << 20)) return n;
    const size_t step = (size_t{1} << (63 - __builtin_clzll(n))) / 8;
    return (n + step - 1) / step * step;
  }
  void* note_alloc(void* p, size_t n) {
    stats_.allocated_bytes += n;
    if (stats_.allocated_bytes > stats_.peak_allocated_bytes) stats_.peak_allocated_bytes = stats_.allocated_bytes;
    return p;
  }
  void release_cached_locked() {
    for (auto& [size, blocks] : free_)
      for (void* p : blocks) CUDA_CHECK(cudaFree(p));  // cudaFree waits for the device
    free_.clear();
    stats_.cached_bytes = 0;
  }
  std::mutex mu_;
  std::map<size_t, std::vector<void*>> free_;
  MemoryStats stats_;
  bool fill_ = false;
};

// Never destroyed: Storage destructors may run during static destruction,
// after the CUDA runtime has begun to shut down; they only touch the lists.
CudaAllocator& allocator() {
  static CudaAllocator* a = new CudaAllocator();
  return *a;
}

// The allocator is installed whenever the backend is built; without a GPU its
// first allocation throws the error of require_device().
const bool kInstalled = [] {
  set_allocator(DeviceType::CUDA, &allocator());
  return true;
}();

}  // namespace

int device_count() { return device_info().count; }
std::string no_device_reason() { return device_info().reason; }

void require_device(int index, const char* what) {
  const DeviceInfo& d = device_info();
  HKT_CHECK(d.count > 0, what, ": CUDA was requested (cuda:", index, ") but no CUDA device is available: ", d.reason,
            ". Run on the cpu (--device cpu) or on a machine with an NVIDIA GPU");
  HKT_CHECK(index == 0, what, ": cuda:", index,
            " requested; this backend uses one device, cuda:0 (select it with CUDA_VISIBLE_DEVICES)");
}

cudaStream_t stream() {
  static cudaStream_t s = [] {
    require_device(0, "CUDA stream");
    cudaStream_t st = nullptr;
    // A blocking stream: work on the legacy default stream (e.g. a library
    // that calls cudaMemcpy) is still ordered with ours.
    CUDA_CHECK(cudaStreamCreateWithFlags(&st, cudaStreamDefault));
    return st;
  }();
  return s;
}

cublasHandle_t cublas() {
  static cublasHandle_t h = [] {
    cublasHandle_t handle = nullptr;
    CUBLAS_CHECK(cublasCreate(&handle));
    CUBLAS_CHECK(cublasSetStream(handle, stream()));
    // Full float32 products (no TF32), so that results match the CPU to ~1e-6.
    CUBLAS_CHECK(cublasSetMathMode(handle, CUBLAS_DEFAULT_MATH));
    return handle;
  }();
  return h;
}

void copy_host_to_device(void* dst, const void* src, size_t nbytes) {
  if (nbytes == 0) return;
  CUDA_CHECK(cudaMemcpyAsync(dst, src, nbytes, cudaMemcpyHostToDevice, stream()));
  CUDA_CHECK(cudaStreamSynchronize(stream()));
}
void copy_device_to_host(void* dst, const void* src, size_t nbytes) {
  if (nbytes == 0) return;
  CUDA_CHECK(cudaMemcpyAsync(dst, src, nbytes, cudaMemcpyDeviceToHost, stream()));
  CUDA_CHECK(cudaStreamSynchronize(stream()));
}
void copy_device_to_device(void* dst, const void* src, size_t nbytes) {
  if (nbytes == 0) return;
  CUDA_CHECK(cudaMemcpyAsync(dst, src, nbytes, cudaMemcpyDeviceToDevice, stream()));
}
void synchronize() {
  if (device_count() > 0) CUDA_CHECK(cudaStreamSynchronize(stream()));
}

MemoryStats memory_stats() { return allocator().stats(); }
void empty_cache() {
  if (device_count() == 0) return;
  CUDA_CHECK(cudaStreamSynchronize(stream()));
  allocator().release_cached();
}

// to_device's copies: nbytes between a device buffer and a host or device one.
void transfer(void* dst, Device to, const void* src, Device from, size_t nbytes) {
  if (from.is_cpu())
    copy_host_to_device(dst, src, nbytes);
  else if (to.is_cpu())
    copy_device_to_host(dst, src, nbytes);
  else
    copy_device_to_device(dst, src, nbytes);
}

// The op list's transfer (every dtype) and require_device (to_device's device check).
HKT_CUDA_KERNEL_AS(transfer, transfer)
HKT_CUDA_KERNEL_AS(require_device, require_device)

}  // namespace hkt::cuda
