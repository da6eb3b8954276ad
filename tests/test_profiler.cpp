// The op profiler (hkt/core/profiler.hpp): entries for forward ops, backward
// nodes and regions, self against total time, off by default, reset, table.
#include <doctest/doctest.h>

#include <chrono>
#include <cstdlib>
#include <string>
#include <thread>

#include "hkt/core/profiler.hpp"
#include "hkt/ops/elementwise.hpp"
#include "hkt/ops/factory.hpp"
#include "hkt/ops/linalg.hpp"
#include "hkt/ops/reduce.hpp"
#include "hkt/ops/view.hpp"

using namespace hkt;

namespace {

const profiler::Entry* find(const std::vector<profiler::Entry>& es, const std::string& name) {
  for (const profiler::Entry& e : es)
    if (e.name == name) return &e;
  return nullptr;
}

// Off and empty for the cases below, whatever the environment says.
struct Clean {
  Clean() {
    profiler::enable(false);
    profiler::reset();
  }
  ~Clean() {
    profiler::enable(false);
    profiler::reset();
  }
};

}  // namespace

TEST_CASE("profiler: off records nothing") {
  Clean c;
  Tensor a = randn({8, 8}).set_requires_grad(true);
  sum(matmul(a, a)).backward();
  CHECK(profiler::entries().empty());
}

TEST_CASE("profiler: forward ops, backward nodes and regions, with self and total time") {
  Clean c;
  profiler::enable();
  CHECK(profiler::enabled());
  Tensor a = randn({64, 64}).set_requires_grad(true);
  Tensor b = randn({64, 64}).set_requires_grad(true);
  {
    profiler::Scope region("my region");
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
    Tensor loss = sum(matmul(a, b) * 2.0);
    loss.backward();
  }
  profiler::enable(false);
  sum(matmul(a, b)).backward();  // not recorded
  const auto es = profiler::entries();
  const profiler::Entry* mm = find(es, "fwd matmul");
  const profiler::Entry* bmm = find(es, "bwd matmul");
  const profiler::Entry* region = find(es, "region my region");
  REQUIRE(mm != nullptr);
  REQUIRE(bmm != nullptr);
  REQUIRE(region != nullptr);
  CHECK(find(es, "fwd sum") != nullptr);
  CHECK(find(es, "bwd sum") != nullptr);
  // The forward matmul, plus the two products of its backward (written with matmul).
  CHECK(mm->calls == 3);
  CHECK(bmm->calls == 1);
  CHECK(region->calls == 1);
  // The backward node's own time excludes the matmuls it ran; the region's
  // excludes every op, but not the sleep.
  CHECK(bmm->self_s <= bmm->total_s);
  CHECK(bmm->total_s > bmm->self_s);
  CHECK(region->total_s >= 0.02);
  CHECK(region->self_s >= 0.02);
  CHECK(region->self_s < region->total_s);
  for (const profiler::Entry& e : es) {
    CHECK(e.self_s >= 0.0);
    CHECK(e.self_s <= e.total_s + 1e-12);
  }
  // Largest self time first: the region (it slept).
  CHECK(es.front().name == "region my region");
  const std::string t = profiler::table(2);
  CHECK(t.find("| op | calls | self ms | total ms | self % | GFLOP | GFLOP/s | GB | GB/s |") != std::string::npos);
  CHECK(t.find("| region my region | 1 |") != std::string::npos);
  CHECK(t.find("more) |") != std::string::npos);  // the rest in one line
  CHECK(t.find("| **all** |") != std::string::npos);
  profiler::reset();
  CHECK(profiler::entries().empty());
}

TEST_CASE("profiler: FLOPs and bytes per op (products count FLOPs, views move no bytes)") {
  Clean c;
  profiler::enable();
  Tensor a = randn({2, 16, 24}).set_requires_grad(true);  // a batch of 2: [16, 24] @ [24, 8]
  Tensor b = randn({2, 24, 8}).set_requires_grad(true);
  Tensor y = matmul(a, b);
  Tensor r = reshape(y, {2, 128});  // a view
  Tensor s = sum(r);
  s.backward();
  {
    profiler::Scope outside("no op");
    profiler::count(5, 7);  // counts on the innermost scope
  }
  profiler::enable(false);
  profiler::count(1e9, 1e9);  // off: nothing
  const auto es = profiler::entries();
  const profiler::Entry* mm = find(es, "fwd matmul");
  REQUIRE(mm != nullptr);
  REQUIRE(mm->calls == 3);  // the forward and the two products of its backward
  // Each product is 2 m n k over the batch: forward [16, 24] x [24, 8], dA [16, 8] x [8, 24],
  // dB [24, 16] x [16, 8]: the same 2 * 2 * 16 * 24 * 8 each.
  CHECK(mm->flops == doctest::Approx(3 * 2.0 * 2 * 16 * 24 * 8));
  // Bytes: inputs and output of the forward, 4 bytes a float; the backward's products move at
  // least as much, counted on their own.
  CHECK(mm->bytes >= 4.0 * (2 * 16 * 24 + 2 * 24 * 8 + 2 * 16 * 8));
  const profiler::Entry* view = find(es, "fwd reshape");
  REQUIRE(view != nullptr);
  CHECK(view->bytes == 0.0);
  CHECK(view->flops == 0.0);
  const profiler::Entry* sm = find(es, "fwd sum");
  REQUIRE(sm != nullptr);
  CHECK(sm->bytes == doctest::Approx(4.0 * (2 * 128 + 1)));
  CHECK(sm->flops == 0.0);
  const profiler::Entry* region = find(es, "region no op");
  REQUIRE(region != nullptr);
  CHECK(region->flops == 5.0);
  CHECK(region->bytes == 7.0);
  const std::string t = profiler::table();
  const size_t at = t.find("| fwd reshape |");
  REQUIRE(at != std::string::npos);
  const std::string line = t.substr(at, t.find('\n', at) - at);
  CHECK(line.size() > 18);
  CHECK(line.substr(line.size() - 18) == " | - | - | - | - |");  // the view: no work counted
}

TEST_CASE("profiler: layout copies are named copy, dtype casts to_dtype") {
  Clean c;
  profiler::enable();
  Tensor a = randn({4, 6});
  (void)contiguous(transpose(a, 0, 1));
  (void)clone(a);
  (void)to_dtype(a, DType::Float64);
  profiler::enable(false);
  const auto es = profiler::entries();
  REQUIRE(find(es, "fwd copy") != nullptr);
  CHECK(find(es, "fwd copy")->calls == 2);
  REQUIRE(find(es, "fwd to_dtype") != nullptr);
  CHECK(find(es, "fwd to_dtype")->calls == 1);
}

// Run by CTest a second time with HKT_PROFILE=1 (tests/CMakeLists.txt), which
// checks that the table reaches stderr at exit.
TEST_CASE("profiler: HKT_PROFILE turns it on at start-up") {
  const char* v = std::getenv("HKT_PROFILE");
  if (v == nullptr || std::string(v).empty() || std::string(v) == "0") {
    CHECK_FALSE(profiler::enabled());
    return;
  }
  CHECK(profiler::enabled());
  Tensor a = randn({4, 4});
  (void)matmul(a, a);
}
