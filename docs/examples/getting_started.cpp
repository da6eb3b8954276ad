// A model with an HKT attention layer, trained on random data, saved as a checkpoint.
#include <hkt/hkt.hpp>

#include <cstdio>
#include <random>

using namespace hkt;

// Token embedding -> HKT attention (residual) -> mean over time -> linear head.
struct TinyModel : nn::Module {
  TinyModel(int64_t vocab, int64_t dim, int64_t classes) : nn::Module("TinyModel") {
    nn::HKTConfig cfg;  // 3 levels by default
    cfg.dim = dim;
    cfg.heads = 2;
    embed = register_module("embed", std::make_shared<nn::Embedding>(vocab, dim));
    attn = register_module("attn", std::make_shared<nn::HKTAttention>(cfg));
    head = register_module("head", std::make_shared<nn::Linear>(dim, classes));
  }
  Tensor forward(const Tensor& ids) {
    Tensor x = embed->forward(ids);                        // [B, T, D]
    x = x + attn->forward(x);
    return head->forward(mean(x, {1}));                    // [B, classes]
  }
  std::shared_ptr<nn::Embedding> embed;
  std::shared_ptr<nn::HKTAttention> attn;
  std::shared_ptr<nn::Linear> head;
};

int main() {
  std::printf("hkt %s\n", hkt::version());
  manual_seed(0);
  const int64_t B = 32, T = 16, vocab = 8;
  TinyModel model(vocab, 32, 2);
  nn::AdamW opt(nn::decay_groups(model, 1e-2, 0.01));
  std::mt19937 rng(0);
  for (int step = 1; step <= 60; ++step) {
    // Random sequences; the label says whether token 0 occurs more often than token 1.
    std::vector<int64_t> ids(B * T), labels(B);
    for (int64_t b = 0; b < B; ++b) {
      int64_t balance = 0;
      for (int64_t t = 0; t < T; ++t) {
        ids[b * T + t] = static_cast<int64_t>(rng() % vocab);
        balance += (ids[b * T + t] == 0) - (ids[b * T + t] == 1);
      }
      labels[b] = balance > 0;
    }
    Tensor loss = cross_entropy(model.forward(from_vector(ids, {B, T})), from_vector(labels, {B}));
    opt.zero_grad();
    loss.backward();
    opt.step();
    if (step % 20 == 0) std::printf("step %d  loss %.4f\n", step, loss.item<float>());
  }
  nn::save_checkpoint("getting_started_checkpoint", model, opt, 60);  // model + optimizer state
  TinyModel again(vocab, 32, 2);
  nn::AdamW opt2(nn::decay_groups(again, 1e-2, 0.01));
  nn::load_checkpoint("getting_started_checkpoint", again, opt2);   // the same weights, bit for bit
  std::printf("saved and reloaded getting_started_checkpoint/\n");
}
