// The emulator's scheduler: CUDA threads as fibers (see hkt_cuda_emu.hpp).
#include "kernels/cuda_emu/hkt_cuda_emu.hpp"

#include <cuda_runtime.h>

#include <atomic>
#include <cstdlib>
#include <exception>
#include <map>
#include <memory>
#include <mutex>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#if defined(__SANITIZE_ADDRESS__)
#include <sanitizer/asan_interface.h>
#include <sanitizer/common_interface_defs.h>
#endif

// Switching between stacks. On x86-64 a hand-written switch of the registers
// the ABI says a call preserves (rbp, rbx, r12-r15) and the stack pointer, as
// Boost.Context's jump_fcontext does: a function call's cost. The SSE and x87
// control words (rounding modes) are not switched: no emulated thread changes
// them, and saving and loading them took 80% of the switch. Elsewhere
// ucontext's swapcontext, which also saves the signal mask with a system call
// on every switch (about half the run time of the emulated suites on x86-64).
#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__)) && !defined(HKT_EMU_UCONTEXT)
#define HKT_EMU_FAST_SWITCH 1
// hkt_emu_switch_stack(&from_sp, to_sp): saves the registers on the current
// stack, stores the stack pointer in *from_sp, loads to_sp, restores the
// registers found there and returns into that stack.
asm(R"(
  .pushsection .text
  .globl hkt_emu_switch_stack
  .hidden hkt_emu_switch_stack
  .type hkt_emu_switch_stack, @function
hkt_emu_switch_stack:
  pushq %rbp
  pushq %rbx
  pushq %r12
  pushq %r13
  pushq %r14
  pushq %r15
  movq %rsp, (%rdi)
  movq %rsi, %rsp
  popq %r15
  popq %r14
  popq %r13
  popq %r12
  popq %rbx
  popq %rbp
  ret
  .size hkt_emu_switch_stack, .-hkt_emu_switch_stack
  .popsection
)");
extern "C" void hkt_emu_switch_stack(void** from_sp, void* to_sp);
#else
#include <ucontext.h>
#endif

namespace hkt_emu {
namespace {

struct Context {
#if HKT_EMU_FAST_SWITCH
  void* sp = nullptr;
#else
  ucontext_t uc;
#endif
};

// A context that starts entry() (which must never return) on the stack.
void make_context(Context& c, char* stack, size_t size, void (*entry)()) {
#if defined(__SANITIZE_ADDRESS__)
  // The frames of the fiber that used this stack before never returned: clear
  // the redzones ASan marked in them.
  __asan_unpoison_memory_region(stack, size);
#endif
#if HKT_EMU_FAST_SWITCH
  // What hkt_emu_switch_stack pops, from the lowest address: r15 .. rbp, the
  // address it returns to (entry), and a null return address for entry, whose
  // frame then starts 16-byte aligned as after a call.
  uint64_t* sp = reinterpret_cast<uint64_t*>((reinterpret_cast<uintptr_t>(stack) + size) & ~uintptr_t{15});
  *--sp = 0;
  *--sp = reinterpret_cast<uint64_t>(entry);
  for (int i = 0; i < 6; ++i) *--sp = 0;
  c.sp = sp;
#else
  getcontext(&c.uc);
  c.uc.uc_stack.ss_sp = stack;
  c.uc.uc_stack.ss_size = size;
  c.uc.uc_link = nullptr;
  makecontext(&c.uc, entry, 0);
#endif
}
void switch_context(Context& from, Context& to) {
#if HKT_EMU_FAST_SWITCH
  hkt_emu_switch_stack(&from.sp, to.sp);
#else
  swapcontext(&from.uc, &to.uc);
#endif
}

}  // namespace

ThreadCtx* g_ctx = nullptr;

namespace {

enum class St { Ready, Barrier, Warp, Done };

// A cp.async copy in flight: its source bytes, read at issue, land in dst
// when a cp.async.wait_group covering its group runs.
struct AsyncCopy {
  unsigned char* dst;
  unsigned char bytes[16];
  int group;  // the commit group it joins (the count of commits before it)
};

// A wgmma product recorded at issue, done at the wgmma_wait covering its group.
struct Wgmma {
  float* d;
  int n;
  const uint32_t* a;  // this lane's A registers, or null: A at desc_a
  uint64_t desc_a, desc_b;
  bool scale_d;
  int group;
};

struct Fiber {
  Context ctx;
  ThreadCtx tc;
  std::vector<AsyncCopy> copies;  // this thread's cp.async copies not yet landed
  int commits = 0;
  std::vector<Wgmma> wgmmas;  // its warpgroup products not yet done
  int wg_commits = 0;
  St st = St::Ready;
  const char* what = nullptr;  // the warp collective it waits in
  void* fake = nullptr;        // ASan's fake stack while switched out
  CollectiveFn fn = nullptr;
  void* data = nullptr;
};

constexpr size_t kStack = 256 * 1024;

struct Run {
  std::vector<Fiber> fibers;
  Context sched;
  int cur = -1;
  std::vector<unsigned char> smem;  // the block's dynamic shared memory (+ alignment slack)
  unsigned char* smem_base = nullptr;
  const std::function<void()>* body = nullptr;
  std::exception_ptr error;
  // AddressSanitizer's view of the stacks (fibers must tell it when they switch).
  void* sched_fake = nullptr;
  const void* sched_bottom = nullptr;
  size_t sched_size = 0;
};

// ASan's fiber annotations (no-ops without ASan): before a switch, where to;
// after it, that it happened. A fiber that ends passes null (its fake stack dies).
void start_switch(void** fake, const void* bottom, size_t size) {
#if defined(__SANITIZE_ADDRESS__)
  __sanitizer_start_switch_fiber(fake, bottom, size);
#else
  (void)fake, (void)bottom, (void)size;
#endif
}
void finish_switch(void* fake, const void** old_bottom, size_t* old_size) {
#if defined(__SANITIZE_ADDRESS__)
  __sanitizer_finish_switch_fiber(fake, old_bottom, old_size);
#else
  (void)fake, (void)old_bottom, (void)old_size;
#endif
}

Run* g_run = nullptr;
thread_local bool t_in_kernel = false;  // this host thread is running a grid
// HKT_EMU_REVERSE=1 starts a process with set_reverse_order(true).
bool g_reverse = [] {
  const char* e = std::getenv("HKT_EMU_REVERSE");
  return e && e[0] == '1';
}();
int g_last_error = 0;
std::map<const void*, int>& allowed() {
  static std::map<const void*, int> m;
  return m;
}
std::vector<std::unique_ptr<char[]>>& stacks() {
  static std::vector<std::unique_ptr<char[]>> s;
  return s;
}

Fiber& current() {
  if (!g_run || g_run->cur < 0) throw std::logic_error("hkt_emu: a device function was called outside a kernel");
  return g_run->fibers[static_cast<size_t>(g_run->cur)];
}

void park(St st) {
  Fiber& f = current();
  Run& r = *g_run;
  f.st = st;
  start_switch(&f.fake, r.sched_bottom, r.sched_size);
  switch_context(f.ctx, r.sched);
  finish_switch(f.fake, &r.sched_bottom, &r.sched_size);
}

void trampoline() {
  Run& r = *g_run;
  finish_switch(nullptr, &r.sched_bottom, &r.sched_size);
  try {
    (*r.body)();
  } catch (...) {
    if (!r.error) r.error = std::current_exception();
  }
  Fiber& f = r.fibers[static_cast<size_t>(r.cur)];
  f.st = St::Done;
  start_switch(nullptr, r.sched_bottom, r.sched_size);
  switch_context(f.ctx, r.sched);  // never resumed
  std::abort();
}

const char* state_name(const Fiber& f) {
  switch (f.st) {
    case St::Ready: return "ready";
    case St::Barrier: return "__syncthreads";
    case St::Warp: return f.what;
    case St::Done: return "exited";
  }
  return "?";
}

[[noreturn]] void stuck(const Run& r, const dim3& block) {
  std::ostringstream os;
  os << "hkt_emu: deadlock in block (" << block.x << ", " << block.y << ", " << block.z << "):";
  const char* prev = nullptr;
  for (size_t i = 0; i < r.fibers.size(); ++i) {
    const char* s = state_name(r.fibers[i]);
    if (s != prev) os << " thread " << i << " on: " << s << ";";
    prev = s;
  }
  throw std::logic_error(os.str());
}

// Completes warp w's collective when all its live lanes wait in it; true if it did.
bool resolve_warp(Run& r, size_t w) {
  const size_t n = r.fibers.size(), w0 = 32 * w, w1 = std::min(n, w0 + 32);
  size_t waiting = 0, done = 0;
  for (size_t i = w0; i < w1; ++i) {
    waiting += r.fibers[i].st == St::Warp;
    done += r.fibers[i].st == St::Done;
  }
  if (waiting == 0 || waiting + done != w1 - w0) return false;
  if (done)
    throw std::logic_error(std::string("hkt_emu: ") + r.fibers[w0].what + " in warp " + std::to_string(w) +
                           ": some lanes of the warp have exited");
  void* lanes[32];
  for (size_t i = w0; i < w1; ++i) {
    if (r.fibers[i].what != r.fibers[w0].what && std::strcmp(r.fibers[i].what, r.fibers[w0].what) != 0)
      throw std::logic_error(std::string("hkt_emu: divergent warp ") + std::to_string(w) + ": lane 0 in " +
                             r.fibers[w0].what + ", lane " + std::to_string(i - w0) + " in " + r.fibers[i].what);
    lanes[i - w0] = r.fibers[i].data;
  }
  r.fibers[w0].fn(lanes, int(w1 - w0));
  for (size_t i = w0; i < w1; ++i) r.fibers[i].st = St::Ready;
  return true;
}

// Runs the ready lanes of warp w (in lane order, or reversed) until each
// waits at a barrier, has exited, or waits in a collective that not all lanes
// have reached; completes the collectives on the way. True if anything ran.
bool run_warp(Run& r, size_t w) {
  const size_t n = r.fibers.size(), w0 = 32 * w, w1 = std::min(n, w0 + 32);
  bool moved = false;
  do {
    for (size_t k = w0; k < w1; ++k) {
      const size_t i = g_reverse ? w1 - 1 - (k - w0) : k;
      Fiber& f = r.fibers[i];
      if (f.st != St::Ready) continue;
      moved = true;
      r.cur = static_cast<int>(i);
      g_ctx = &f.tc;
      start_switch(&r.sched_fake, stacks()[i].get(), kStack);
      switch_context(r.sched, f.ctx);
      finish_switch(r.sched_fake, nullptr, nullptr);
      r.cur = -1;
      g_ctx = nullptr;
      if (r.error) std::rethrow_exception(r.error);
    }
  } while (resolve_warp(r, w));
  return moved;
}

void run_block(Run& r, const dim3& block, const dim3& grid, const dim3& bdim) {
  const size_t n = r.fibers.size();
  std::fill(r.smem.begin(), r.smem.end(), 0xFF);
  for (size_t i = 0; i < n; ++i) {
    Fiber& f = r.fibers[i];
    const unsigned t = static_cast<unsigned>(i);
    f.tc = {dim3(t % bdim.x, (t / bdim.x) % bdim.y, t / (bdim.x * bdim.y)), block, bdim, grid};
    f.st = St::Ready;
    f.copies.clear();
    f.commits = 0;
    f.wgmmas.clear();
    f.wg_commits = 0;
    make_context(f.ctx, stacks()[i].get(), kStack, trampoline);
  }
  // Between two barriers, one warp at a time runs as far as it can (warp 0
  // first, or the last warp first in reverse order), a schedule a GPU may
  // choose: a warp that reads what another warp writes in the same phase, or
  // overwrites what another still reads, then sees the wrong data in one of
  // the two orders, even when it reads through a warp collective.
  const size_t warps = (n + 31) / 32;
  for (;;) {
    bool moved = false;
    for (size_t k = 0; k < warps; ++k) moved = run_warp(r, g_reverse ? warps - 1 - k : k) || moved;
    size_t live = 0, at_barrier = 0;
    for (const Fiber& f : r.fibers) {
      live += f.st != St::Done;
      at_barrier += f.st == St::Barrier;
    }
    if (live == 0) {
      for (const Fiber& f : r.fibers)
        if (!f.wgmmas.empty())
          throw std::logic_error("hkt_emu: a thread exited with wgmma products it never waited for");
      return;
    }
    if (at_barrier == live) {
      for (Fiber& f : r.fibers)
        if (f.st == St::Barrier) f.st = St::Ready;
      moved = true;
    }
    if (!moved) stuck(r, block);
  }
}

}  // namespace

unsigned char* dynamic_shared() {
  current();
  return g_run->smem_base;
}
void sync_block() { park(St::Barrier); }
void warp_collective(const char* what, CollectiveFn fn, void* data) {
  Fiber& f = current();
  f.what = what;
  f.fn = fn;
  f.data = data;
  park(St::Warp);
}
void set_reverse_order(bool reverse) { g_reverse = reverse; }

namespace {
struct Mma16x8x8 {
  float* d;
  const uint32_t* a;
  const uint32_t* b;
};
HKT_EMU_UNINSTRUMENTED float tf32_value(uint32_t bits) { return tf32_truncate(__uint_as_float(bits)); }
std::atomic<uint64_t> g_mma_syncs{0};
HKT_EMU_UNINSTRUMENTED void mma16x8x8_warp(void* const* lanes, int n) {
  if (n != 32) throw std::logic_error("hkt_emu: mma.sync needs a full warp of 32 lanes");
  g_mma_syncs.fetch_add(1, std::memory_order_relaxed);
  float A[16][8], B[8][8], C[16][8];
  for (int l = 0; l < 32; ++l) {
    const Mma16x8x8& m = *static_cast<const Mma16x8x8*>(lanes[l]);
    const int g = l >> 2, t = l & 3;
    A[g][t] = tf32_value(m.a[0]);
    A[g + 8][t] = tf32_value(m.a[1]);
    A[g][t + 4] = tf32_value(m.a[2]);
    A[g + 8][t + 4] = tf32_value(m.a[3]);
    B[t][g] = tf32_value(m.b[0]);
    B[t + 4][g] = tf32_value(m.b[1]);
    C[g][2 * t] = m.d[0];
    C[g][2 * t + 1] = m.d[1];
    C[g + 8][2 * t] = m.d[2];
    C[g + 8][2 * t + 1] = m.d[3];
  }
  for (int r = 0; r < 16; ++r)
    for (int c = 0; c < 8; ++c)
      for (int k = 0; k < 8; ++k) C[r][c] += A[r][k] * B[k][c];
  for (int l = 0; l < 32; ++l) {
    const Mma16x8x8& m = *static_cast<const Mma16x8x8*>(lanes[l]);
    const int g = l >> 2, t = l & 3;
    m.d[0] = C[g][2 * t];
    m.d[1] = C[g][2 * t + 1];
    m.d[2] = C[g + 8][2 * t];
    m.d[3] = C[g + 8][2 * t + 1];
  }
}
}  // namespace

uint64_t mma_sync_count() { return g_mma_syncs.load(std::memory_order_relaxed); }
namespace {
std::atomic<uint64_t> g_prefetches{0};
}
void prefetch_l2(const void* p) {
  (void)*static_cast<const volatile unsigned char*>(p);
  g_prefetches.fetch_add(1, std::memory_order_relaxed);
}
uint64_t prefetch_count() { return g_prefetches.load(std::memory_order_relaxed); }
void expect(bool ok, const char* what) {
  if (!ok) throw std::logic_error(std::string("hkt_emu: ") + what);
}
void mma_m16n8k8_tf32(float (&d)[4], const uint32_t (&a)[4], const uint32_t (&b)[2]) {
  Mma16x8x8 me{d, a, b};
  warp_collective("mma.sync.m16n8k8.tf32", &mma16x8x8_warp, &me);
}
namespace {
bool g_cp_async_eager = false;
}
void set_cp_async_eager(bool eager) { g_cp_async_eager = eager; }
void cp_async16(void* dst, const void* src, int src_bytes) {
  if (reinterpret_cast<uintptr_t>(dst) % 16 || reinterpret_cast<uintptr_t>(src) % 16 || src_bytes < 0 ||
      src_bytes > 16)
    throw std::logic_error("hkt_emu: cp.async of 16 bytes needs 16-byte aligned addresses and 0 to 16 source bytes");
  Fiber& f = current();
  AsyncCopy c{static_cast<unsigned char*>(dst), {}, f.commits};
  std::memcpy(c.bytes, src, static_cast<size_t>(src_bytes));  // the rest is zero-filled
  if (g_cp_async_eager)
    std::memcpy(c.dst, c.bytes, 16);
  else
    f.copies.push_back(c);
}
void cp_async_commit() { ++current().commits; }
void cp_async_wait_group(int pending) {
  Fiber& f = current();
  std::vector<AsyncCopy> left;
  for (const AsyncCopy& c : f.copies) {
    if (c.group < f.commits - pending)
      std::memcpy(c.dst, c.bytes, 16);
    else
      left.push_back(c);
  }
  f.copies.swap(left);
}
namespace {
std::atomic<uint64_t> g_wgmmas{0};
// One K-major TF32 element of the descriptor's matrix: row r (M or N), column
// k < 8, in the layout without swizzle (kernels/cuda/wgmma.cuh).
float gmma_element(const Run& r, uint64_t desc, int row, int k) {
  if ((desc >> 62) != 0 || ((desc >> 49) & 7) != 0)
    throw std::logic_error("hkt_emu: wgmma descriptor with a swizzle or a base offset (not emulated)");
  const uint64_t start = (desc & 0x3FFF) << 4, lbo = ((desc >> 16) & 0x3FFF) << 4, sbo = ((desc >> 32) & 0x3FFF) << 4;
  const uint64_t at = start + uint64_t(row >> 3) * sbo + uint64_t(k >> 2) * lbo + uint64_t(row & 7) * 16 + (k & 3) * 4;
  const size_t size = r.smem.size() - size_t(r.smem_base - r.smem.data());
  if (at + 4 > size)
    throw std::logic_error("hkt_emu: wgmma operand outside the block's shared memory (byte " + std::to_string(at) +
                           ")");
  float x;
  std::memcpy(&x, r.smem_base + at, 4);
  return tf32_truncate(x);
}
struct WgmmaWait {
  Fiber* f;
  int pending;
  int warp;  // its rank in the warpgroup
};
void wgmma_wait_warp(void* const* lanes, int n) {
  if (n != 32) throw std::logic_error("hkt_emu: wgmma needs full warps");
  const WgmmaWait& w0 = *static_cast<const WgmmaWait*>(lanes[0]);
  const Fiber& f0 = *w0.f;
  for (int l = 1; l < 32; ++l) {
    const Fiber& f = *static_cast<const WgmmaWait*>(lanes[l])->f;
    bool same = f.wg_commits == f0.wg_commits && f.wgmmas.size() == f0.wgmmas.size() &&
                static_cast<const WgmmaWait*>(lanes[l])->pending == w0.pending;
    for (size_t i = 0; same && i < f.wgmmas.size(); ++i) {
      const Wgmma &x = f.wgmmas[i], &y = f0.wgmmas[i];
      same = x.n == y.n && (x.a == nullptr) == (y.a == nullptr) && x.desc_a == y.desc_a && x.desc_b == y.desc_b &&
             x.scale_d == y.scale_d && x.group == y.group;
    }
    if (!same) throw std::logic_error("hkt_emu: the lanes of a warp issued different wgmma products or waits");
  }
  const Run& r = *g_run;
  size_t done = 0;
  for (; done < f0.wgmmas.size() && f0.wgmmas[done].group < f0.wg_commits - w0.pending; ++done) {
    const Wgmma& op = f0.wgmmas[done];
    const int N = op.n;
    float A[16][8], B[256][8], D[16][256];
    for (int l = 0; l < 32; ++l) {
      const Wgmma& m = static_cast<const WgmmaWait*>(lanes[l])->f->wgmmas[done];
      const int g = l >> 2, t = l & 3;
      if (m.a) {
        A[g][t] = tf32_value(m.a[0]);
        A[g + 8][t] = tf32_value(m.a[1]);
        A[g][t + 4] = tf32_value(m.a[2]);
        A[g + 8][t + 4] = tf32_value(m.a[3]);
      }
      for (int c = 0; c < N / 8; ++c)
        for (int e = 0; e < 4; ++e) D[g + 8 * (e >> 1)][8 * c + 2 * t + (e & 1)] = op.scale_d ? m.d[4 * c + e] : 0.0f;
    }
    if (!op.a)
      for (int i = 0; i < 16; ++i)
        for (int k = 0; k < 8; ++k) A[i][k] = gmma_element(r, op.desc_a, 16 * w0.warp + i, k);
    for (int j = 0; j < N; ++j)
      for (int k = 0; k < 8; ++k) B[j][k] = gmma_element(r, op.desc_b, j, k);
    for (int i = 0; i < 16; ++i)
      for (int j = 0; j < N; ++j)
        for (int k = 0; k < 8; ++k) D[i][j] += A[i][k] * B[j][k];
    for (int l = 0; l < 32; ++l) {
      const Wgmma& m = static_cast<const WgmmaWait*>(lanes[l])->f->wgmmas[done];
      const int g = l >> 2, t = l & 3;
      for (int c = 0; c < N / 8; ++c)
        for (int e = 0; e < 4; ++e) m.d[4 * c + e] = D[g + 8 * (e >> 1)][8 * c + 2 * t + (e & 1)];
    }
    g_wgmmas.fetch_add(1, std::memory_order_relaxed);
  }
  for (int l = 0; l < 32; ++l) {
    auto& ops = static_cast<const WgmmaWait*>(lanes[l])->f->wgmmas;
    ops.erase(ops.begin(), ops.begin() + static_cast<std::ptrdiff_t>(done));
  }
}
}  // namespace

void wgmma_tf32(float* d, int n, const uint32_t* a, uint64_t desc_a, uint64_t desc_b, bool scale_d) {
  if (n < 8 || n > 256 || n % 8) throw std::logic_error("hkt_emu: wgmma with N not a multiple of 8 in [8, 256]");
  const dim3 bd = g_ctx->block_dim;
  if ((bd.x * bd.y * bd.z) % 128)
    throw std::logic_error("hkt_emu: wgmma in a block that is not whole warpgroups of 128 threads");
  Fiber& f = current();
  f.wgmmas.push_back({d, n, a, desc_a, desc_b, scale_d, f.wg_commits});
}
void wgmma_fence() { current(); }
void wgmma_commit() { ++current().wg_commits; }
void wgmma_wait(int pending) {
  Fiber& f = current();
  const ThreadCtx& c = f.tc;
  const unsigned tid = c.thread.x + c.block_dim.x * (c.thread.y + c.block_dim.y * c.thread.z);
  WgmmaWait me{&f, pending, int(tid / 32) % 4};
  warp_collective("wgmma.wait_group", &wgmma_wait_warp, &me);
}
uint64_t wgmma_count() { return g_wgmmas.load(std::memory_order_relaxed); }
uint32_t shared_address(const void* p) {
  if (!g_run) throw std::logic_error("hkt_emu: __cvta_generic_to_shared outside a kernel");
  const Run& r = *g_run;
  const auto* b = static_cast<const unsigned char*>(p);
  if (b < r.smem_base || b >= r.smem.data() + r.smem.size())
    throw std::logic_error("hkt_emu: __cvta_generic_to_shared of a pointer outside the dynamic shared memory");
  return static_cast<uint32_t>(b - r.smem_base);
}

void set_last_error(int e) {
  if (g_last_error == 0) g_last_error = e;
}
int take_last_error() {
  const int e = g_last_error;
  g_last_error = 0;
  return e;
}
void allow_dynamic_shared(const void* kernel_key, int bytes) { allowed()[kernel_key] = bytes; }
size_t dynamic_shared_limit(const void* kernel_key) {
  const auto it = allowed().find(kernel_key);
  return it == allowed().end() ? 48 * 1024 : static_cast<size_t>(it->second);
}

namespace {
std::set<const void*>& launched() {
  static std::set<const void*> s;
  return s;
}
}  // namespace
std::set<const void*> launched_kernels() { return launched(); }
void clear_launched_kernels() { launched().clear(); }
namespace {
std::atomic<uint64_t> g_work[5];  // by Work
}  // namespace
void count_work(Work w) { g_work[static_cast<int>(w)].fetch_add(1, std::memory_order_relaxed); }
namespace {
std::map<std::string, uint64_t>& by_kernel() {
  static std::map<std::string, uint64_t> m;
  return m;
}
std::mutex& by_kernel_mu() {
  static std::mutex mu;
  return mu;
}
}  // namespace
void count_launch(const char* name) {
  const std::lock_guard<std::mutex> lock(by_kernel_mu());
  ++by_kernel()[name];
}
std::map<std::string, uint64_t> launches_by_kernel() {
  const std::lock_guard<std::mutex> lock(by_kernel_mu());
  return by_kernel();
}
WorkCounts work_counts() {
  const auto n = [](Work w) { return g_work[static_cast<int>(w)].load(std::memory_order_relaxed); };
  return {n(Work::launch), n(Work::gemm), n(Work::copy), n(Work::to_host), n(Work::memset)};
}
void clear_work_counts() {
  for (std::atomic<uint64_t>& w : g_work) w.store(0, std::memory_order_relaxed);
  const std::lock_guard<std::mutex> lock(by_kernel_mu());
  by_kernel().clear();
}

int run_grid(const void* kernel_key, dim3 grid, dim3 block, size_t smem, const std::function<void()>& body) {
  if (t_in_kernel)
    throw std::logic_error("hkt_emu: a kernel launched another kernel (dynamic parallelism is not emulated)");
  // One grid at a time in the process (the fibers share g_run and g_ctx); a
  // launch from another host thread waits, as work queued on one stream does.
  static std::mutex one_grid;
  const std::lock_guard<std::mutex> lock(one_grid);
  launched().insert(kernel_key);
  count_work(Work::launch);
  const size_t threads = size_t(block.x) * block.y * block.z;
  if (threads == 0 || threads > 1024 || grid.x == 0 || grid.y == 0 || grid.z == 0 || grid.y > 65535 ||
      grid.z > 65535)
    return cudaErrorInvalidConfiguration;
  if (smem > dynamic_shared_limit(kernel_key)) return cudaErrorInvalidValue;
  while (stacks().size() < threads) stacks().push_back(std::make_unique<char[]>(kStack));
  Run r;
  r.fibers.resize(threads);
  r.smem.assign(smem + 128, 0xFF);
  r.smem_base = r.smem.data() + (128 - reinterpret_cast<uintptr_t>(r.smem.data()) % 128) % 128;
  r.body = &body;
  g_run = &r;
  t_in_kernel = true;
  struct Reset {
    ~Reset() {
      g_run = nullptr;
      g_ctx = nullptr;
      t_in_kernel = false;
    }
  } reset;
  for (unsigned zz = 0; zz < grid.z; ++zz)
    for (unsigned yy = 0; yy < grid.y; ++yy)
      for (unsigned xx = 0; xx < grid.x; ++xx) {
        const dim3 b = g_reverse ? dim3(grid.x - 1 - xx, grid.y - 1 - yy, grid.z - 1 - zz) : dim3(xx, yy, zz);
        run_block(r, b, grid, block);
      }
  return cudaSuccess;
}

}  // namespace hkt_emu
