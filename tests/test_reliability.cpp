// Resource errors (docs/reliability.md): requests that cannot fit in memory
// fail before allocating and say how much they needed; a full disk while
// saving keeps the previous file or checkpoint and says so. Also the
// regression inputs found by fuzzing the readers (tests/fuzz).
#include <doctest/doctest.h>
#include <sys/resource.h>

#include <csignal>
#include <filesystem>
#include <fstream>
#include <functional>

#include "helpers/temp_dir.hpp"
#include "hkt/tasks.hpp"

using namespace hkt;
using hkt::test::TempDir;
namespace fs = std::filesystem;

namespace {

// While alive, files of this process cannot grow past `bytes`: a write past
// the limit fails with EFBIG (SIGXFSZ, which would kill the process, is
// ignored), as it would on a full disk.
class FileSizeLimit {
 public:
  explicit FileSizeLimit(rlim_t bytes) {
    getrlimit(RLIMIT_FSIZE, &old_);
    old_handler_ = std::signal(SIGXFSZ, SIG_IGN);
    rlimit r = old_;
    r.rlim_cur = bytes;
    REQUIRE(setrlimit(RLIMIT_FSIZE, &r) == 0);
  }
  ~FileSizeLimit() {
    setrlimit(RLIMIT_FSIZE, &old_);
    std::signal(SIGXFSZ, old_handler_);
  }

 private:
  rlimit old_{};
  void (*old_handler_)(int) = nullptr;
};

bool contains(const std::string& s, const std::string& part) { return s.find(part) != std::string::npos; }

std::string error_of(const std::function<void()>& f) {
  try {
    f();
  } catch (const Error& e) {
    return e.what();
  }
  return "(no error)";
}

}  // namespace

TEST_CASE("a tensor larger than the machine's memory is refused before allocating, with its size") {
  // 2^40 float32 = 4 TiB: more than any machine this runs on.
  const std::string msg = error_of([] { empty({int64_t{1} << 20, int64_t{1} << 20}); });
  INFO(msg);
  CHECK(contains(msg, "out of memory"));
  CHECK(contains(msg, "4398046511104 bytes"));
  CHECK(contains(msg, "4096.00 GiB"));
  CHECK(contains(msg, "[1048576, 1048576]"));
  // Sizes that overflow 64 bits are refused too (no wrap-around to a small buffer).
  const std::string big = error_of([] { empty({int64_t{1} << 32, int64_t{1} << 32}); });
  INFO(big);
  CHECK(contains(big, "more than 2^64 bytes"));
  // A zero-size dimension makes any shape empty.
  CHECK(empty({int64_t{1} << 40, 0}).numel() == 0);
}

TEST_CASE("composite attention with a T x T matrix too large fails with the bytes it needed") {
  // fused = false forms [B, H, T, T] score matrices: at T = 2^19, 2^38 floats per head.
  nn::HKTConfig cfg;
  cfg.dim = 4;
  cfg.heads = 1;
  cfg.levels = 2;
  cfg.fused = false;
  nn::HKTAttention attn(cfg);
  const Tensor x = zeros({1, int64_t{1} << 19, 4});
  const std::string msg = error_of([&] { attn.forward(x); });
  INFO(msg);
  CHECK(contains(msg, "out of memory"));
  CHECK(contains(msg, "bytes"));
  CHECK(contains(msg, "GiB"));
}

TEST_CASE("save_safetensors on a full disk names the file and keeps the previous one") {
  TempDir dir("reliability_st");
  const std::string path = dir.str("w.safetensors");
  const Tensor small = arange(0.0, 8.0, 1.0, {DType::Float32});
  save_safetensors(path, {{"w", small}});
  const Tensor big = randn({256, 256});  // 256 KiB
  std::string msg;
  {
    FileSizeLimit limit(16 * 1024);
    msg = error_of([&] { save_safetensors(path, {{"w", big}}); });
  }
  INFO(msg);
  CHECK(contains(msg, path));
  CHECK(contains(msg, "File too large"));
  const SafetensorsFile f = load_safetensors(path);  // the previous file, whole
  CHECK(f.find("w")->to_vector<float>() == small.to_vector<float>());
  int files = 0;
  for (const auto& e : fs::directory_iterator(dir.path)) files += e.is_regular_file();
  CHECK(files == 1);  // no temporary file left behind
}

TEST_CASE("a checkpoint that cannot be written keeps the previous checkpoint and says so") {
  TempDir dir("reliability_ck");
  tasks::TrainConfig c;
  c.task = "synthetic";
  c.data.train_size = 64;
  c.data.val_size = 16;
  c.data.test_size = 16;
  c.data.seq_len = 16;
  c.model = "hkt-tiny";
  c.batch_size = 16;
  c.steps = 6;
  c.checkpoint_every = 2;
  c.eval_every = 0;
  c.log_every = 0;
  c.seed = 3;
  c.run_dir = dir.str("run");
  tasks::RunOptions o;
  o.quiet = true;
  o.stop_after = 2;  // checkpoint at step 2, then stop as if killed
  tasks::train(c, o);
  REQUIRE(fs::exists(dir.str("run/checkpoint/model.safetensors")));
  std::string msg;
  {
    FileSizeLimit limit(2048);  // smaller than either checkpoint file
    tasks::RunOptions go;
    go.quiet = true;
    msg = error_of([&] { tasks::resume(c.run_dir, go); });  // fails saving at step 4
  }
  INFO(msg);
  CHECK(contains(msg, "checkpoint of step 4 could not be written"));
  CHECK(contains(msg, "File too large"));
  CHECK(contains(msg, "previous checkpoint '" + dir.str("run/checkpoint") + "' is kept"));
  CHECK_FALSE(fs::exists(dir.str("run/checkpoint.tmp")));
  // The kept checkpoint loads, and the run resumes from it to the end.
  const SafetensorsFile m = load_safetensors(dir.str("run/checkpoint/model.safetensors"));
  CHECK(m.metadata.at("hkt.step") == "2");
  tasks::RunOptions go;
  go.quiet = true;
  CHECK(tasks::resume(c.run_dir, go).steps == 6);
}

TEST_CASE("bad input before the first step is an InputError (hkt-train exits 2)") {
  TempDir dir("reliability_in");
  tasks::TrainConfig c;
  c.task = "cifar10";
  c.data.data_dir = dir.str("no-such-folder");
  c.steps = 1;
  c.run_dir = dir.str("run");
  tasks::RunOptions o;
  o.quiet = true;
  CHECK_THROWS_AS(tasks::train(c, o), tasks::InputError);
  c.task = "synthetic";
  c.model.edit().attention.edit<nn::HKTOptions>().levels = 0;
  CHECK_THROWS_AS(tasks::train(c, o), tasks::InputError);
  CHECK_THROWS_AS(tasks::resume(dir.str("nothing-here"), o), tasks::InputError);
}

// Found by tests/fuzz/fuzz_config: a number too large for a double made
// nlohmann::json throw out_of_range, which ClassifierConfig::from_json let
// escape as a non-hkt::Error (the reproducer is in tests/fuzz/corpus/config/).
TEST_CASE("fuzz regression: a config with a number out of range is an hkt::Error") {
  for (const char* text : {"1E581", "{\"dim\": 1E581}", "-1e99999"}) {
    INFO(text);
    CHECK_THROWS_AS(nn::ClassifierConfig::from_json(text), Error);
    CHECK_THROWS_AS(tasks::TrainConfig::from_json(text), Error);
  }
}

TEST_CASE("the step memory estimate: its parts, how it grows, and the refusal naming both figures") {
  nn::ClassifierConfig c = nn::ClassifierConfig::preset("hkt-small");
  c.vocab = 20;
  c.classes = 10;
  c.max_len = 1024;
  const tasks::StepMemory a = tasks::estimate_step_memory(c, 16, 512, 1000, 512 * 9, true);
  CHECK(a.weights > 0);
  CHECK(a.optimizer == doctest::Approx(3 * a.weights));
  CHECK(a.data == doctest::Approx(1000.0 * 512 * 9));
  // The fused attention kernels keep O(T) memory per head: their working set grows with T, as the
  // rest does (tests/memory_test.sh checks the estimate against measured peaks); evaluation keeps no
  // optimizer state and one layer's values.
  const tasks::StepMemory b = tasks::estimate_step_memory(c, 16, 1024, 1000, 512 * 9, true);
  CHECK(b.attention == doctest::Approx(2 * a.attention).epsilon(0.01));
  CHECK(b.activations == doctest::Approx(2 * a.activations));
  const tasks::StepMemory e = tasks::estimate_step_memory(c, 16, 512, 1000, 512 * 9, false);
  CHECK(e.optimizer == 0);
  CHECK(e.total() < a.total());
  // Well below the bytes of the [B, H, T, T] score maps, which the fused kernels never form.
  CHECK(a.attention < 16.0 * c.heads * 512 * 512 * 4 * c.layers);
  tasks::check_memory(a, 1e12, "test");  // fits
  const std::string msg = error_of([&] { tasks::check_memory(a, 1e6, "test"); });
  CHECK(contains(msg, "test: a step needs about "));
  CHECK(contains(msg, "is allowed (--max-memory)"));
  CHECK(tasks::available_memory() > 0);  // Linux: /proc/meminfo
}
