// The CUDA runtime seen from the API: runs in every build. Without a GPU it
// checks that asking for CUDA fails with a clear hkt::Error (not a crash);
// with one, host <-> device copies and the caching allocator.
#include <doctest/doctest.h>

#include <cmath>
#include <cstdlib>
#include <string>

#include "helpers/check.hpp"

using namespace hkt;

TEST_CASE("cuda: availability is reported consistently") {
  const int n = cuda_device_count();
  CHECK(n >= 0);
  CHECK(cuda_is_available() == (n > 0));
  if (!cuda_is_built()) CHECK(n == 0);
  if (cuda_is_available()) {
    CHECK(cuda_unavailable_reason().empty());
  } else {
    CHECK(!cuda_unavailable_reason().empty());
    MESSAGE("no GPU here: " << cuda_unavailable_reason());
  }
}

TEST_CASE("cuda: without a GPU, asking for one is a clear error") {
  if (cuda_is_available()) {
    MESSAGE("SKIPPED: a GPU is present (this case checks the no-GPU errors)");
    return;
  }
  const Tensor x = ones({2, 3});
  test::check_error([&] { (void)to_device(x, Device::cuda()); }, "cuda:0");
  test::check_error([&] { (void)zeros({4}, {DType::Float32, Device::cuda()}); }, "cuda:0");
  test::check_error([&] { (void)Tensor::empty({4}, DType::Float32, Device::cuda()); }, "cuda:0");
  test::check_error([&] { require_cuda("hkt-train --device cuda"); }, "hkt-train --device cuda: CUDA was requested");
  if (cuda_is_built()) test::check_error([&] { (void)to_device(x, Device::cuda()); }, "no CUDA device");
  cuda_synchronize();  // a no-op without a GPU
  CHECK(cuda_memory_stats().device_mallocs == 0);
  cuda_empty_cache();
}

TEST_CASE("cuda: copies round-trip, any layout and dtype") {
  if (!cuda_is_available()) {
    MESSAGE("SKIPPED (no GPU): " << cuda_unavailable_reason());
    return;
  }
  const Tensor a = randn({5, 7}, {DType::Float32});
  const Tensor g = to_device(a, Device::cuda());
  CHECK(g.device() == Device::cuda());
  CHECK(to_device(g, Device::cpu()).to_vector<float>() == a.to_vector<float>());
  // Non-contiguous sources are made contiguous on their device first.
  const Tensor at = transpose(a, 0, 1);
  CHECK(to_device(to_device(at, Device::cuda()), Device::cpu()).to_vector<float>() == at.to_vector<float>());
  const Tensor gt = transpose(g, 0, 1);
  CHECK(to_device(gt, Device::cpu()).to_vector<float>() == at.to_vector<float>());
  const Tensor i = from_vector(std::vector<int64_t>{3, -1, 7}, {3});
  CHECK(to_device(to_device(i, Device::cuda()), Device::cpu()).to_vector<int64_t>() == i.to_vector<int64_t>());
  // from_vector / full straight onto the device.
  const Tensor f = full({3}, 2.5, {DType::Float64, Device::cuda()});
  CHECK(to_device(f, Device::cpu()).to_vector<double>() == std::vector<double>{2.5, 2.5, 2.5});
  // Gradients flow back across the copy.
  Tensor leaf = randn({4}).set_requires_grad(true);
  sum(to_device(leaf, Device::cuda()) * 3.0).backward();
  CHECK(leaf.grad().device() == Device::cpu());
  CHECK(leaf.grad().to_vector<float>() == std::vector<float>(4, 3.0f));
  // Only cuda:0 is used.
  test::check_error([&] { (void)to_device(a, Device::cuda(1)); }, "cuda:1");
}

TEST_CASE("cuda: the caching allocator reuses blocks in steady state") {
  if (!cuda_is_available()) {
    MESSAGE("SKIPPED (no GPU): " << cuda_unavailable_reason());
    return;
  }
  const Tensor x = randn({256, 256}, {DType::Float32, Device::cuda()});
  auto step = [&] { return sum(matmul(x, x) + x).item_double(); };
  (void)step();
  const uint64_t mallocs = cuda_memory_stats().device_mallocs;
  for (int i = 0; i < 5; ++i) (void)step();
  CHECK(cuda_memory_stats().device_mallocs == mallocs);
  CHECK(cuda_memory_stats().cache_hits > 0);
  cuda_empty_cache();
  CHECK(cuda_memory_stats().cached_bytes == 0);
}

TEST_CASE("cuda: HKT_CUDA_FILL_UNINITIALIZED=1 hands out every block, cached or new, filled with NaN") {
  if (!cuda_is_available()) {
    MESSAGE("SKIPPED (no GPU): " << cuda_unavailable_reason());
    return;
  }
  const char* fill = std::getenv("HKT_CUDA_FILL_UNINITIALIZED");
  if (!fill || std::string(fill) != "1") {
    MESSAGE("SKIPPED: HKT_CUDA_FILL_UNINITIALIZED=1 is not set (the emulated entry sets it)");
    return;
  }
  for (int round = 0; round < 2; ++round) {  // round 1 gets round 0's block back from the cache
    Tensor t = empty({1000}, {DType::Float32, Device::cuda()});
    for (float v : to_device(t, Device::cpu()).to_vector<float>()) REQUIRE(std::isnan(v));
    fill_(t, 1.5);
    CHECK(to_device(t, Device::cpu()).to_vector<float>() == std::vector<float>(1000, 1.5f));
  }
  const Tensor i = empty({10}, {DType::Int64, Device::cuda()});
  CHECK(to_device(i, Device::cpu()).to_vector<int64_t>() == std::vector<int64_t>(10, -1));
}

TEST_CASE("cuda: the attention autotuner's decisions as JSON: round trip, and clear errors") {
  cuda_attention_autotune_reset();
  const std::string good = R"({"format": "hkt-attention-kernels", "version": 1, "decisions": [
    {"pass": "forward", "B": 16, "H": 8, "T": 1024, "dh": 64, "L": 3, "causal": false, "masked": false,
     "aligned": true, "grads": [], "kernel": "wgmma"},
    {"pass": "backward", "B": 16, "H": 8, "T": 1024, "dh": 64, "L": 3, "causal": true, "masked": true,
     "aligned": false, "grads": ["dq", "dv", "dlambda"], "kernel": "general"}]})";
  cuda_attention_autotune_from_json(good);
  const std::vector<CudaAttentionChoice> c = cuda_attention_autotune_choices();
  if (cuda_is_built()) {
    REQUIRE(c.size() == 2);
    CHECK(c[0].call == "forward B=16 H=8 T=1024 dh=64 L=3");
    CHECK(c[0].kernel == "wgmma");
    CHECK(c[0].preset);
    CHECK(c[0].trials.empty());
    CHECK(c[1].call == "backward B=16 H=8 T=1024 dh=64 L=3 causal masked unaligned grads=dq,dv,dlambda");
    CHECK(c[1].kernel == "general");
    // Written back as read (fields in this order), and read again to the same.
    const std::string out = cuda_attention_autotune_to_json();
    CHECK(out.find(R"("pass": "backward",)") != std::string::npos);
    CHECK(out.find(R"("grads": [)") != std::string::npos);
    cuda_attention_autotune_reset();
    cuda_attention_autotune_from_json(out);
    CHECK(cuda_attention_autotune_to_json() == out);
  } else {
    CHECK(c.empty());  // validated, nothing to preset without CUDA
  }
  cuda_attention_autotune_reset();
  CHECK(cuda_attention_autotune_to_json() ==
        "{\n \"format\": \"hkt-attention-kernels\",\n \"version\": 1,\n \"decisions\": []\n}\n");

  // Each error names what is wrong, and nothing of the text is preset.
  const auto bad = [&](const std::string& text, const std::string& says) {
    INFO(text);
    test::check_error([&] { cuda_attention_autotune_from_json(text); }, says);
    CHECK(cuda_attention_autotune_choices().empty());
  };
  const std::string head = R"({"format": "hkt-attention-kernels", "version": 1, "decisions": [)";
  const std::string ok = R"({"pass": "forward", "B": 1, "H": 1, "T": 5, "dh": 8, "L": 1, "causal": false,
    "masked": false, "aligned": true, "grads": [], "kernel": "mma"})";
  bad("{\"format\": ", "attention kernel decisions: not JSON");
  bad(R"({"format": "safetensors", "version": 1, "decisions": []})", "not an \"hkt-attention-kernels\" file");
  bad(R"({"format": "hkt-attention-kernels", "version": 2, "decisions": []})", "version 2 is not 1");
  bad(R"({"format": "hkt-attention-kernels", "version": 1})", "\"decisions\" is missing or not a list");
  bad(head + ok + R"(, {"pass": "forward"}]})", "decision 1, \"B\" is missing");
  bad(head + ok + ", " + std::string(ok).replace(ok.find("\"T\": 5"), 6, "\"T\": 0") + "]}",
      "decision 1, \"T\" is 0, not a positive integer");
  bad(head + std::string(ok).replace(ok.find("\"forward\""), 9, "\"sideways\"") + "]}",
      "decision 0, \"pass\" is \"sideways\", not \"forward\" or \"backward\"");
  bad(head + std::string(ok).replace(ok.find("\"causal\": false"), 15, "\"causal\": 1") + "]}",
      "decision 0, \"causal\" is 1, not true or false");
  bad(head + std::string(ok).replace(ok.find("\"grads\": []"), 11, "\"grads\": [\"dx\"]") + "]}",
      "decision 0, \"grads\" has \"dx\", not one of");
  bad(head + std::string(ok).replace(ok.find("\"grads\": []"), 11, "\"grads\": [\"dq\"]") + "]}",
      "decision 0, \"grads\" is not empty for a forward");
  bad(head + std::string(ok).replace(ok.find("\"mma\""), 5, "\"\"") + "]}",
      "decision 0, \"kernel\" is \"\", not a kernel's name");
}
