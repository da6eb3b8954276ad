// Local (sliding-window) and Performer attention: the fused local op against
// its composite reference, the linear-attention composites against their
// T x T references, float64 gradients, causal no-leak, padding, the special
// cases (w >= T is MHA; FAVOR+ approaches softmax as m grows), the presets,
// checkpoints, FLOPs and bad configurations.
#include <cmath>
#include <filesystem>

#include "helpers/check.hpp"

using namespace hkt;
using namespace hkt::nn;
using namespace hkt::test;

namespace {

Tensor rnd(const Shape& s, uint64_t seed, double lo = -1.0, double hi = 1.0) {
  Generator g(seed);
  return uniform(s, lo, hi, {DType::Float64}, &g).set_requires_grad(true);
}

// Bool [B, T]: row b has its first b and last (b + 1) positions padded (at least one valid).
Tensor pad_mask(int64_t B, int64_t T) {
  std::vector<int64_t> v;
  for (int64_t b = 0; b < B; ++b)
    for (int64_t t = 0; t < T; ++t) v.push_back(t >= std::min(b, T - 1) && (t < T - 1 - b || t == T - 1 - b && b == 0));
  return gt(from_vector(v, {B, T}), 0.0);
}

std::vector<double> grads_of(const Tensor& out, const std::vector<Tensor>& in) {
  for (const Tensor& t : in) const_cast<Tensor&>(t).set_grad(Tensor());
  sum(out * out).backward();
  std::vector<double> g;
  for (const Tensor& t : in) {
    const std::vector<double> v = vals(t.grad());
    g.insert(g.end(), v.begin(), v.end());
  }
  return g;
}

// One local-attention case: the fused op against the composite reference,
// forward and gradients in float64 (1e-12, 1e-10); with f32, also the float32
// kernel (AVX2 + FMA where the CPU has them) against the float64 reference.
struct LocalCase {
  int64_t B, H, T, dh, w;
  bool causal;
  Tensor valid;
};

void check_local_case(const LocalCase& c, int& seed, bool f32) {
  CAPTURE(c.T);
  CAPTURE(c.w);
  CAPTURE(c.dh);
  CAPTURE(c.causal);
  CAPTURE(c.valid.defined());
  const Shape shape{c.B, c.H, c.T, c.dh};
  const Tensor q = rnd(shape, ++seed), k = rnd(shape, ++seed), v = rnd(shape, ++seed);
  const Tensor r = local_attention_reference(q, k, v, c.valid, c.w, c.causal, 0.6);
  const Tensor a = local_attention(q, k, v, c.valid, c.w, c.causal, 0.6);
  const std::vector<double> gr = grads_of(r, {q, k, v});
  check_close(vals(a), vals(r), 1e-12);
  check_close(grads_of(a, {q, k, v}), gr, 1e-10);
  if (!f32) return;
  auto to32 = [](const Tensor& t) { return to_dtype(t.detach(), DType::Float32).set_requires_grad(true); };
  const Tensor q32 = to32(q), k32 = to32(k), v32 = to32(v);
  const Tensor a32 = local_attention(q32, k32, v32, c.valid, c.w, c.causal, 0.6);
  check_close(vals(a32), vals(r), 2e-5);
  check_close(grads_of(a32, {q32, k32, v32}), gr, 2e-4);
}

}  // namespace

TEST_CASE("local_attention: fused = composite reference on random shapes (forward and gradients, float64)") {
  int n = 0;
  for (int64_t T : {1, 5, 17, 37, 64})
    for (int64_t w : {int64_t{0}, int64_t{1}, int64_t{3}, T + 1})
      for (bool causal : {false, true})
        for (bool padded : {false, true})
          check_local_case({2, 2, T, 3, w, causal, padded ? pad_mask(2, T) : Tensor()}, n, false);
}

// Bool [2, T]: row 0 has every seventh position padded, row 1 only its first
// 3 positions valid (queries further than w from them see no valid key).
Tensor holes_mask(int64_t T) {
  std::vector<int64_t> v;
  for (int64_t t = 0; t < T; ++t) v.push_back(t % 7 != 3);
  for (int64_t t = 0; t < T; ++t) v.push_back(t < 3);
  return gt(from_vector(v, {2, T}), 0.0);
}

// The tiled kernel's edges: T around the 12-row tile and the 256-row chunk
// (one chunk, two, three), bands narrower and wider than a tile and than a
// chunk, head dims not a multiple of 8; float64 (portable tile product) to
// 1e-12 and float32 (AVX2 + FMA where the CPU has them) against the float64
// reference.
TEST_CASE("local_attention: tile edges against the composite reference (float64 and float32)") {
  int n = 100;
  for (int64_t T : {11, 12, 13, 63, 200, 255, 256, 257, 600})
    for (int64_t w : {1, 3, 64, 100, 300})
      for (int64_t dh : {5, 33})
        for (bool causal : {false, true}) {
          const bool padded = (T + w + dh) % 2 == 0;
          check_local_case({2, 1, T, dh, w, causal, padded ? holes_mask(T) : Tensor()}, n, true);
        }
}

TEST_CASE("local_attention: float32 forward and gradients with 1 and 2 threads give the same bits") {
  for (bool causal : {false, true}) {
    const Shape s{2, 3, 333, 40};
    const Tensor valid = holes_mask(333);
    std::vector<std::vector<double>> outs;
    for (int threads : {1, 2}) {
      set_num_threads(threads);
      Generator gt(21);
      const Tensor q = randn(s, {DType::Float32}, &gt).set_requires_grad(true);
      const Tensor k = randn(s, {DType::Float32}, &gt).set_requires_grad(true);
      const Tensor v = randn(s, {DType::Float32}, &gt).set_requires_grad(true);
      const Tensor a = local_attention(q, k, v, valid, 50, causal, 0.3);
      std::vector<double> all = vals(a);
      const std::vector<double> gr = grads_of(a, {q, k, v});
      all.insert(all.end(), gr.begin(), gr.end());
      outs.push_back(all);
    }
    set_num_threads(0);
    CAPTURE(causal);
    CHECK(outs[0] == outs[1]);
  }
}

TEST_CASE("local_attention: float64 gradient check (causal and padded)") {
  const Tensor q = rnd({1, 2, 7, 3}, 1), k = rnd({1, 2, 7, 3}, 2), v = rnd({1, 2, 7, 3}, 3);
  const Tensor valid = pad_mask(1, 7);
  for (bool causal : {false, true})
    gradcheck([&](const std::vector<Tensor>& in) { return local_attention(in[0], in[1], in[2], valid, 2, causal, 0.8); },
              {q, k, v});
}

TEST_CASE("local_attention: w >= T - 1 equals MHA") {
  for (bool causal : {false, true}) {
    const int64_t T = 13;
    const Tensor q = rnd({2, 3, T, 4}, 11), k = rnd({2, 3, T, 4}, 12), v = rnd({2, 3, T, 4}, 13);
    const Tensor valid = pad_mask(2, T);
    check_close(vals(local_attention(q, k, v, valid, T - 1, causal, 0.5)),
                vals(mha_attention(q, k, v, valid, causal, 0.5)), 1e-12);
    check_close(vals(local_attention(q, k, v, Tensor(), 1000, causal, 0.5)),
                vals(mha_attention(q, k, v, Tensor(), causal, 0.5)), 1e-12);
  }
}

TEST_CASE("local_attention: a key outside the window changes nothing") {
  const int64_t T = 20, w = 3;
  const Tensor q = rnd({1, 1, T, 4}, 1), k = rnd({1, 1, T, 4}, 2), v = rnd({1, 1, T, 4}, 3);
  const std::vector<double> a = vals(local_attention(q, k, v, Tensor(), w, false, 1.0));
  Tensor k2 = clone(k.detach()), v2 = clone(v.detach());
  {
    NoGradGuard ng;
    fill_(k2, 0.0);  // every key changed ...
    fill_(v2, 0.0);
  }
  // ... but query 10 sees keys 7..13 only: copy those back.
  Tensor k3 = cat({slice(k2, 2, 0, 7), slice(k.detach(), 2, 7, 14), slice(k2, 2, 14, T)}, 2);
  Tensor v3 = cat({slice(v2, 2, 0, 7), slice(v.detach(), 2, 7, 14), slice(v2, 2, 14, T)}, 2);
  const std::vector<double> b = vals(local_attention(q, k3, v3, Tensor(), w, false, 1.0));
  for (int64_t c = 0; c < 4; ++c) CHECK(a[10 * 4 + c] == b[10 * 4 + c]);
  CHECK(a[2 * 4] != b[2 * 4]);
}

TEST_CASE("local_attention: bad input") {
  const Tensor x = zeros({1, 2, 5, 3}, {DType::Float32});
  check_error([&] { local_attention(x, x, x, Tensor(), -1, false, 1.0); }, "local_attention: window must be >= 0, got -1");
  check_error([&] { local_attention(x, zeros({1, 2, 4, 3}, {DType::Float32}), x, Tensor(), 2, false, 1.0); },
              "local_attention: k must have v's shape [1, 2, 5, 3]");
  check_error([&] { local_attention(x, x, x, zeros({1, 4}, {DType::Bool}), 2, false, 1.0); },
              "local_attention: valid must be Bool [1, 5]");
  check_error([&] { local_attention(x, x, x, Tensor(), 2, false, std::nan("")); }, "scale must be finite");
  check_error([&] { LocalConfig c; c.window = -2; LocalAttention a(c); }, "LocalAttention: window must be >= 0, got -2");
}

TEST_CASE("linear_attention: chunked prefix sums = the T x T reference; gradients (float64)") {
  int n = 100;
  for (int64_t T : {1, 6, 13, 40})
    for (bool causal : {false, true})
      for (bool padded : {false, true}) {
        const int64_t B = 2, H = 2, m = 5, dh = 3;
        const Tensor pq = rnd({B, H, T, m}, ++n, 0.1, 1.0), pk = rnd({B, H, T, m}, ++n, 0.1, 1.0);
        const Tensor v = rnd({B, H, T, dh}, ++n);
        const Tensor valid = padded ? pad_mask(B, T) : Tensor();
        CAPTURE(T);
        CAPTURE(causal);
        CAPTURE(padded);
        const Tensor a = linear_attention(pq, pk, v, valid, causal, 4);
        const Tensor r = linear_attention_reference(pq, pk, v, valid, causal);
        check_close(vals(a), vals(r), 1e-12);
        check_close(grads_of(a, {pq, pk, v}), grads_of(r, {pq, pk, v}), 1e-10);
      }
}

TEST_CASE("performer feature maps: float64 gradient checks through linear_attention") {
  const Tensor q = rnd({1, 2, 6, 4}, 1), k = rnd({1, 2, 6, 4}, 2), v = rnd({1, 2, 6, 4}, 3);
  const Tensor w = orthogonal_features(8, 4, 3, DType::Float64);
  const Tensor valid = pad_mask(1, 6);
  for (bool causal : {false, true}) {
    gradcheck([&](const std::vector<Tensor>& in) {
      return linear_attention(favor_features(in[0], w, true), favor_features(in[1], w, false), in[2], valid, causal, 4);
    }, {q, k, v});
    gradcheck([&](const std::vector<Tensor>& in) {
      return linear_attention(elu1_features(in[0]), elu1_features(in[1]), in[2], valid, causal, 4);
    }, {q, k, v});
  }
}

TEST_CASE("orthogonal_features: orthogonal blocks, deterministic from the seed") {
  const std::vector<double> w = vals(orthogonal_features(6, 4, 9, DType::Float64));
  CHECK(w == vals(orthogonal_features(6, 4, 9, DType::Float64)));
  CHECK(w != vals(orthogonal_features(6, 4, 10, DType::Float64)));
  for (int a = 0; a < 4; ++a)
    for (int b = 0; b < a; ++b) {
      double d = 0;
      for (int c = 0; c < 4; ++c) d += w[a * 4 + c] * w[b * 4 + c];
      CHECK(std::abs(d) < 1e-9);
    }
}

TEST_CASE("performer: FAVOR+ approaches softmax attention as the number of features grows (measured)") {
  const int64_t B = 2, H = 2, T = 32, dh = 8;
  const double scale = 1.0 / std::sqrt(static_cast<double>(dh));
  std::vector<double> err;
  for (int64_t m : {16, 64, 256, 1024}) {
    double e = 0;
    const int seeds = 6;
    for (int s = 0; s < seeds; ++s) {
      const Tensor q = rnd({B, H, T, dh}, 10 + s, -0.6, 0.6), k = rnd({B, H, T, dh}, 20 + s, -0.6, 0.6);
      const Tensor v = rnd({B, H, T, dh}, 30 + s);
      const Tensor w = orthogonal_features(m, dh, 1000 + s, DType::Float64);
      const Tensor exact = mha_attention(q, k, v, Tensor(), false, scale);
      const Tensor approx = linear_attention(favor_features(q, w, true), favor_features(k, w, false), v, Tensor(), false);
      e += std::sqrt(vals(mean((approx - exact) * (approx - exact)))[0]) / seeds;
    }
    MESSAGE("FAVOR+ m = " << m << ": RMS error against softmax attention " << e);
    err.push_back(e);
  }
  for (size_t i = 1; i < err.size(); ++i) CHECK(err[i] < err[i - 1]);
  CHECK(err.back() < err.front() / 4);  // about 1 / sqrt(m): 1/8 from 16 to 1024
}

namespace {

template <class M, class C>
void check_causal_and_padding(C cfg) {
  Generator g(3);
  cfg.dim = 8;
  cfg.heads = 2;
  cfg.dtype = DType::Float64;
  cfg.gen = &g;
  const int64_t T = 11;
  {
    cfg.causal = true;
    M a(cfg);
    a.eval();
    const Tensor x = rnd({2, T, 8}, 5);
    const std::vector<double> y = vals(a(x));
    for (int64_t t : {0, 4, 10}) {
      // Change token t: no output before t changes.
      Tensor x2 = clone(x.detach());
      {
        NoGradGuard ng;
        Tensor row = slice(x2, 1, t, t + 1);
        fill_(row, 3.0);
      }
      const std::vector<double> y2 = vals(a(x2));
      for (int64_t b = 0; b < 2; ++b)
        for (int64_t i = 0; i < T; ++i)
          for (int64_t c = 0; c < 8; ++c) {
            const size_t p = static_cast<size_t>((b * T + i) * 8 + c);
            if (i < t) CHECK(y2[p] == doctest::Approx(y[p]).epsilon(1e-13));
          }
      CHECK(y2[static_cast<size_t>(t * 8)] != y[static_cast<size_t>(t * 8)]);
    }
  }
  for (bool causal : {false, true}) {
    cfg.causal = causal;
    M a(cfg);
    a.eval();
    const Tensor valid = pad_mask(2, T);
    const Tensor x = rnd({2, T, 8}, 6);
    const std::vector<double> y = vals(a(x, valid)), mask = vals(to_dtype(valid, DType::Float64));
    // Changing the padded positions changes no valid output; padded outputs are 0.
    const Tensor x2 = x.detach() + 5.0 * (1.0 - unsqueeze(to_dtype(valid, DType::Float64), -1));
    const std::vector<double> y2 = vals(a(x2, valid));
    for (size_t p = 0; p < y.size(); ++p) {
      if (mask[p / 8] > 0) CHECK(y2[p] == doctest::Approx(y[p]).epsilon(1e-12));
      else CHECK(y[p] == 0.0);
    }
  }
}

}  // namespace

TEST_CASE("LocalAttention: causal no-leak and padding") {
  LocalConfig c;
  c.window = 3;
  check_causal_and_padding<LocalAttention>(c);
}

TEST_CASE("PerformerAttention: causal no-leak and padding (FAVOR+ and elu+1)") {
  PerformerConfig c;
  c.features = 16;
  check_causal_and_padding<PerformerAttention>(c);
  c.feature_map = "elu+1";
  check_causal_and_padding<PerformerAttention>(c);
}

TEST_CASE("LocalAttention and PerformerAttention: fused = composite layers") {
  Generator g(1);
  const Tensor x = rnd({2, 9, 8}, 4), valid = pad_mask(2, 9);
  for (bool causal : {false, true}) {
    LocalConfig l;
    l.dim = 8, l.heads = 2, l.window = 2, l.causal = causal, l.dtype = DType::Float64, l.gen = &g;
    LocalAttention a(l);
    l.fused = false;
    LocalAttention b(l);
    b.load_state_dict(a.named_parameters());
    check_close(vals(a(x, valid)), vals(b(x, valid)), 1e-12);
    PerformerConfig p;
    p.dim = 8, p.heads = 2, p.features = 12, p.causal = causal, p.dtype = DType::Float64, p.gen = &g;
    PerformerAttention c(p);
    p.fused = false;
    PerformerAttention d(p);
    c.eval(), d.eval();
    NamedTensors s = c.named_parameters();
    for (const auto& kv : c.named_buffers()) s.push_back(kv);
    d.load_state_dict(s);
    check_close(vals(c(x, valid)), vals(d(x, valid)), 1e-12);
  }
}

TEST_CASE("PerformerAttention: features redrawn every redraw_interval training forwards, from the seed") {
  PerformerConfig p;
  p.dim = 8, p.heads = 2, p.features = 8, p.redraw_interval = 2, p.seed = 5;
  PerformerAttention a(p), b(p);
  const Tensor x = zeros({1, 3, 8}, {DType::Float32});
  const std::vector<double> f0 = vals(a.features);
  CHECK(f0 == vals(orthogonal_features(8, 4, 5)));
  a.eval();
  a(x);
  a(x);
  a(x);
  CHECK(vals(a.features) == f0);  // eval: no redraw
  a.train();
  a(x);
  a(x);
  CHECK(vals(a.features) == f0);  // forwards 0 and 1 use draw 0
  a(x);                            // forward 2: draw 1
  CHECK(vals(a.features) == vals(orthogonal_features(8, 4, 6)));
  CHECK(vals(a.draws)[0] == 3);
  for (int i = 0; i < 3; ++i) b(x);
  CHECK(vals(b.features) == vals(a.features));
  p.redraw_interval = 0;
  PerformerAttention c(p);
  for (int i = 0; i < 5; ++i) c(x);
  CHECK(vals(c.features) == f0);
}

TEST_CASE("PerformerAttention: bad configurations") {
  PerformerConfig p;
  p.features = 0;
  check_error([&] { PerformerAttention a(p); }, "PerformerAttention: features must be >= 1, got 0");
  p.features = 4;
  p.feature_map = "relu";
  check_error([&] { PerformerAttention a(p); }, "feature_map must be \"favor+\" or \"elu+1\", got \"relu\"");
  p.feature_map = "favor+";
  p.redraw_interval = -2;
  check_error([&] { PerformerAttention a(p); }, "redraw_interval must be >= 0, or -1 (every call), got -2");
  p.redraw_interval = 1;
  p.epsilon = -1e-6;
  check_error([&] { PerformerAttention a(p); }, "epsilon must be finite and >= 0");
}

TEST_CASE("classifier: local and performer kinds, config fields and their errors") {
  ClassifierConfig c = ClassifierConfig::preset("local-small");
  CHECK(c.attention.kind() == "local");
  CHECK(ClassifierConfig::preset("performer-small").attention.kind() == "performer");
  c.vocab = 10;
  c.attention.edit<LocalOptions>().window = -1;
  check_error([&] { c.validate(); }, "ClassifierConfig: window must be >= 0");
  c.attention.edit<LocalOptions>().window = 4;
  CHECK(ClassifierConfig::from_json(c.to_json()) == c);
  c.attention = "performer";
  PerformerOptions& p = c.attention.edit<PerformerOptions>();
  p.features = 0;
  check_error([&] { c.validate(); }, "ClassifierConfig: features must be >= 1");
  p.features = 4;
  p.feature_map = "cos";
  check_error([&] { c.validate(); }, "ClassifierConfig: feature_map must be \"favor+\" or \"elu+1\", got \"cos\"");
  p.feature_map = "elu+1";
  p.redraw_interval = -3;
  check_error([&] { c.validate(); }, "ClassifierConfig: redraw_interval must be >= 0");
  p.redraw_interval = 10;
  check_error([&] { c.attention = "linformer"; },
              "unknown attention kind 'linformer' (expected one of \"hkt\", \"mha\", \"local\", \"performer\"");
  CHECK(c.attention.get<PerformerOptions>().features == 4);  // a failed assignment changes nothing
  CHECK(ClassifierConfig::from_json(c.to_json()) == c);
}

TEST_CASE("classifier: local-small and performer-small are within 2% of hkt-small's parameters on every task's shape") {
  struct S {
    int64_t vocab, features, max_len, classes;
  };
  for (const S& s : {S{16, 0, 512, 10}, S{16, 0, 2000, 10}, S{256, 0, 1024, 10}, S{0, 3, 1024, 10},
                     S{256, 0, 784, 10}, S{257, 0, 1024, 2}})
    for (const char* name : {"local-small", "performer-small", "htr-small"}) {
      int64_t n[3];
      const char* names[3] = {"hkt-small", name, "mha-matched"};
      for (int k = 0; k < 3; ++k) {
        ClassifierConfig c = ClassifierConfig::preset(names[k]);
        c.vocab = s.vocab;
        c.input_features = s.features;
        c.max_len = s.max_len;
        c.classes = s.classes;
        n[k] = SequenceClassifier(c).num_parameters();
      }
      CAPTURE(name);
      CAPTURE(s.max_len);
      CHECK(std::abs(static_cast<double>(n[1] - n[0])) / static_cast<double>(n[0]) < 0.02);
      // The attention projections of MHA, the FFN of mha-matched; htr-small adds its relative-position
      // bias, heads x (4 Nr - 1) per layer.
      const ClassifierConfig c = ClassifierConfig::preset(name);
      const HTransformerOptions* h = c.attention.find<HTransformerOptions>();
      const int64_t extra = h ? c.layers * c.heads * (4 * h->block - 1) : 0;
      CHECK(n[1] == n[2] + extra);
    }
}

TEST_CASE("classifier: local, performer and htransformer train a step, and checkpoints round-trip") {
  for (const char* name : {"local-small", "performer-small", "htr-small"}) {
    ClassifierConfig c = ClassifierConfig::preset(name);
    c.dim = 16, c.heads = 2, c.layers = 2, c.vocab = 12, c.classes = 3, c.max_len = 20;
    if (c.attention.kind() == "local") c.attention.edit<LocalOptions>().window = 3;
    if (c.attention.kind() == "performer") {
      c.attention.edit<PerformerOptions>().features = 8;
      c.attention.edit<PerformerOptions>().redraw_interval = 1;
    }
    if (c.attention.kind() == "htransformer") c.attention.edit<HTransformerOptions>().block = 4;
    Generator g(4);
    SequenceClassifier m(c, &g);
    Generator gx(8);
    const Tensor x = to_dtype(uniform({3, 17}, 0.0, 11.5, {DType::Float64}, &gx), DType::Int64);
    const Tensor valid = pad_mask(3, 17);
    sum(m.forward(x, valid)).backward();
    m.forward(x, valid);  // a second training forward: Performer redraws (interval 1)
    for (const auto& [n, p] : m.named_parameters()) CHECK(p.grad().defined());
    const std::string path = (std::filesystem::temp_directory_path() / (std::string("hkt_eff_") + name + ".safetensors")).string();
    save_model(path, m, {{"config", c.to_json()}});
    Generator g2(99);
    SequenceClassifier m2(c, &g2);
    load_model(path, m2);
    m.eval(), m2.eval();
    check_close(vals(m.forward(x, valid)), vals(m2.forward(x, valid)), 0.0);
    std::filesystem::remove(path);
  }
}

TEST_CASE("ClassifierConfig: htr_bias is written only when off (archived configs still compare equal)") {
  ClassifierConfig c = ClassifierConfig::preset("htr-small");
  c.vocab = 16;
  CHECK(c.attention.get<HTransformerOptions>().htr_bias);
  CHECK(c.to_json().find("htr_bias") == std::string::npos);
  c.attention.edit<HTransformerOptions>().htr_bias = false;
  CHECK(c.to_json().find("\"htr_bias\": false") != std::string::npos);
  CHECK(ClassifierConfig::from_json(c.to_json()) == c);
  CHECK(SequenceClassifier(c).num_parameters() ==
        [&] {
          ClassifierConfig on = c;
          on.attention.edit<HTransformerOptions>().htr_bias = true;
          return SequenceClassifier(on).num_parameters() -
                 on.layers * on.heads * (4 * on.attention.get<HTransformerOptions>().block - 1);
        }());
}

TEST_CASE("model_flops: htransformer") {
  ClassifierConfig h = ClassifierConfig::preset("htr-small");
  CHECK(h.attention.kind() == "htransformer");
  h.vocab = 16;
  h.max_len = 4096;
  // T = 64, Nr = 16: L = 2 levels; 4 ANCHOR blocks, level 0: 3 LEFT + 3 RIGHT, level 1: 1 + 1,
  // each 16 x 16 (the published layout, docs/htransformer.md).
  const ModelFlops f = model_flops(h, 1, 64);
  CHECK(f.scores == doctest::Approx(2 * 2.0 * (4 + 6 + 2) * 256 * 128));
  CHECK(f.values == f.scores);
  // Causal: no RIGHT blocks.
  h.attention.causal = true;
  CHECK(model_flops(h, 1, 64).scores == doctest::Approx(2 * 2.0 * (4 + 3 + 1) * 256 * 128));
  // T = 512: 37,376 scores per head (tests/reference/h1d_published.py --score-count 512 16).
  h.attention.causal = false;
  CHECK(model_flops(h, 1, 512).scores == doctest::Approx(2 * 2.0 * 37376 * 128));
  // T = 50 pads to T' = 64 = Nr 2^2.
  CHECK(model_flops(h, 1, 50).scores == doctest::Approx(model_flops(h, 1, 64).scores));
  h.attention.edit<HTransformerOptions>().htr_levels = 1;
  check_error([&] { h.validate(); }, "htr_levels must be 0");
  h.attention.edit<HTransformerOptions>().htr_levels = 0;
  h.attention.edit<HTransformerOptions>().block = 3;
  check_error([&] { h.validate(); }, "block must be even and >= 2");
}

TEST_CASE("model_flops: local and performer") {
  ClassifierConfig c = ClassifierConfig::preset("local-small");
  c.vocab = 16;
  c.max_len = 4096;
  ClassifierConfig mha = ClassifierConfig::preset("mha-matched");
  mha.vocab = 16;
  mha.max_len = 4096;
  // w >= T - 1: local costs what MHA does.
  c.attention.edit<LocalOptions>().window = 100;
  CHECK(model_flops(c, 2, 64).total() == doctest::Approx(model_flops(mha, 2, 64).total()));
  // w = 64 at T = 4096: scores over (2w + 1) T - w (w + 1) pairs.
  c.attention.edit<LocalOptions>().window = 64;
  const double pairs = 129.0 * 4096 - 64 * 65;
  CHECK(model_flops(c, 1, 4096).scores == doctest::Approx(2 * 2.0 * pairs * 128));
  ClassifierConfig p = ClassifierConfig::preset("performer-small");
  p.vocab = 16;
  p.max_len = 4096;
  const ModelFlops f = model_flops(p, 1, 4096);
  CHECK(p.attention.get<PerformerOptions>().features == 256);
  CHECK(f.scores == doctest::Approx(2 * 2 * 2.0 * 4096 * 256 * 128));
  CHECK(f.values == doctest::Approx(2 * 2 * 2.0 * 4096 * 256 * 128));
  // Linear in T.
  CHECK(model_flops(p, 1, 2048).total() == doctest::Approx(model_flops(p, 1, 4096).total() / 2).epsilon(0.01));
}
