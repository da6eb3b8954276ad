// Checkpoints: save a model and its optimizer, resume bit for bit; errors.
#include <filesystem>
#include <fstream>

#include "helpers/check.hpp"
#include "helpers/temp_dir.hpp"

using namespace hkt;
using namespace hkt::nn;
using namespace hkt::test;

namespace {

struct TinyNet : Module {
  std::shared_ptr<Embedding> emb;
  std::shared_ptr<LayerNorm> ln;
  std::shared_ptr<FeedForward> ff;
  std::shared_ptr<Linear> head;
  TinyNet() : Module("TinyNet") {
    emb = register_module("emb", std::make_shared<Embedding>(16, 8));
    ln = register_module("ln", std::make_shared<LayerNorm>(8));
    ff = register_module("ff", std::make_shared<FeedForward>(8, 32, 0.2));
    head = register_module("head", std::make_shared<Linear>(8, 4));
  }
  Tensor loss(const Tensor& ids, const Tensor& y) {
    Tensor h = emb->forward(ids);
    h = h + ff->forward(ln->forward(h));
    return cross_entropy(head->forward(mean(h, {1})), y);
  }
};

struct Data {
  Tensor ids, y;
};
Data batch(int64_t step) {
  Generator g(1000 + static_cast<uint64_t>(step));
  const auto u = rand({6 * 5}, {DType::Float64}, &g).to_vector<double>();
  std::vector<int64_t> ids(u.size()), y(6);
  for (size_t i = 0; i < u.size(); ++i) ids[i] = static_cast<int64_t>(u[i] * 16) % 16;
  for (size_t i = 0; i < 6; ++i) y[i] = ids[i * 5] % 4;
  return {from_vector(ids, {6, 5}), from_vector(y, {6})};
}

float train_step(TinyNet& net, AdamW& opt, const LRSchedule& sched, int64_t step) {
  const Data d = batch(step);
  opt.zero_grad();
  Tensor l = net.loss(d.ids, d.y);
  l.backward();
  clip_grad_norm_(net.parameters(), 1.0);
  opt.set_lr_factor(sched.factor(step));
  opt.step();
  return l.item<float>();
}

}  // namespace

TEST_CASE("resume from a checkpoint: the next 10 losses are bit-identical") {
  // save_checkpoint creates the folder: "ckpt" does not exist yet.
  TempDir tmp("ckpt");
  const std::string dir = tmp.str("ckpt");
  const LRSchedule sched = LRSchedule::warmup_cosine(3, 20, 0.1);
  manual_seed(5);
  TinyNet net;
  AdamW opt(decay_groups(net, 1e-2, 0.01));
  for (int64_t s = 0; s < 5; ++s) train_step(net, opt, sched, s);
  save_checkpoint(dir, net, opt, 5, {{"config", R"({"dim": 8})"}});
  std::vector<float> uninterrupted;
  for (int64_t s = 5; s < 15; ++s) uninterrupted.push_back(train_step(net, opt, sched, s));

  manual_seed(77);  // a different model and generator state, overwritten by the load
  TinyNet fresh;
  AdamW fresh_opt(decay_groups(fresh, 1e-2, 0.01));
  (void)randn({123});
  const Metadata md = load_checkpoint(dir, fresh, fresh_opt);
  CHECK(md.at("config") == R"({"dim": 8})");
  CHECK(md.at("hkt.step") == "5");
  CHECK(fresh_opt.steps() == 5);
  std::vector<float> resumed;
  for (int64_t s = 5; s < 15; ++s) resumed.push_back(train_step(fresh, fresh_opt, sched, s));
  CHECK(resumed == uninterrupted);
  for (size_t i = 0; i < net.parameters().size(); ++i)
    CHECK(net.parameters()[i].to_vector<float>() == fresh.parameters()[i].to_vector<float>());
  // The model file holds the parameters under their hierarchical names.
  const SafetensorsFile f = load_safetensors(dir + "/model.safetensors");
  REQUIRE(f.find("ff.fc1.weight"));
  CHECK(f.find("ff.fc1.weight")->shape() == Shape{32, 8});
  CHECK(!std::filesystem::exists(dir + "/model.safetensors.tmp"));
}

TEST_CASE("checkpoint errors name the file and the tensor, and change nothing") {
  TempDir tmp("ckpt");
  manual_seed(1);
  TinyNet net;
  AdamW opt(decay_groups(net, 1e-2, 0.01));
  train_step(net, opt, LRSchedule::constant(), 0);
  const std::string dir = tmp.str("ckpt");
  save_checkpoint(dir, net, opt, 1);

  struct Other : Module {
    Other() : Module("Other") { register_module("head", std::make_shared<Linear>(8, 5)); }
  } other;
  check_error([&] { (void)load_model(dir + "/model.safetensors", other); },
              "'head.weight' has shape [4, 8] but the model expects [5, 8]");

  // A model saved at another step than the optimizer.
  save_model(dir + "/model.safetensors", net, {{"hkt.step", "9"}, {"hkt.rng_seed", "1"}, {"hkt.rng_offset", "0"}});
  TinyNet fresh;
  AdamW fresh_opt(decay_groups(fresh, 1e-2, 0.01));
  const auto before = fresh.parameters()[0].to_vector<float>();
  check_error([&] { (void)load_checkpoint(dir, fresh, fresh_opt); }, "the model is from step 9 but the optimizer from step 1");
  CHECK(fresh.parameters()[0].to_vector<float>() == before);

  check_error([&] { (void)load_checkpoint(dir + "/missing", fresh, fresh_opt); }, "cannot open");
  std::ofstream(dir + "/model.safetensors", std::ios::binary | std::ios::trunc) << "garbage";
  check_error([&] { (void)load_checkpoint(dir, fresh, fresh_opt); }, "model.safetensors");
  CHECK(fresh_opt.steps() == 0);
}
