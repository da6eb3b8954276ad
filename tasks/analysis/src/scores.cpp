// The attention scores of a classifier on data (see scores.hpp).
#include "scores.hpp"

#include <algorithm>
#include <cmath>

#include "hkt/tasks.hpp"

namespace hkt::analysis {
namespace {

// ceil(len / 2^l), the valid blocks of level l for a sequence of `len` real positions.
int64_t level_len(int64_t len, int64_t l) {
  const int64_t block = int64_t{1} << l;
  return len / block + (len % block != 0);
}

std::vector<double> doubles(const Tensor& t) { return to_dtype(contiguous(t), DType::Float64).to_vector<double>(); }

// The block's scores for its attention input `a` [B, T, D]: levels S_l [B, H, T_l, T_l] and the
// combination [B, H, T, T] (the same as S_0 for MHA).
void block_scores(nn::Block& blk, const Tensor& a, const Tensor& valid, std::vector<Tensor>& levels,
                  Tensor& combined) {
  if (blk.hkt) {
    nn::HKTScores s = blk.hkt->inspect(a, valid);
    levels = s.levels;
    combined = s.combined;
    return;
  }
  const auto [wq, wk, H] = qk_maps(blk, blk.attn->type_name());
  const int64_t B = a.size(0), T = a.size(1), dh = a.size(2) / H;
  const Tensor q = permute(reshape(wq->forward(a), {B, T, H, dh}), {0, 2, 1, 3});
  const Tensor k = permute(reshape(wk->forward(a), {B, T, H, dh}), {0, 2, 1, 3});
  combined = matmul(q, transpose(k, 2, 3)) / std::sqrt(static_cast<double>(dh));
  levels = {combined};
}

// The classifier's input map, as in SequenceClassifier::forward.
Tensor embed(nn::SequenceClassifier& model, const Tensor& inputs) {
  const nn::ClassifierConfig& cfg = model.config();
  Tensor x = model.embed ? model.embed->forward(inputs) : model.input_map->forward(to_dtype(inputs, cfg.dtype));
  return x + slice(model.pos, 0, 0, inputs.size(1));
}


// Every block's levels and combination for one batch.
void all_block_scores(nn::SequenceClassifier& model, const Tensor& inputs, const Tensor& valid,
                      std::vector<std::vector<Tensor>>& levels, std::vector<Tensor>& combined) {
  const bool was_training = model.is_training();
  model.eval();
  NoGradGuard ng;
  Tensor x = embed(model, inputs);
  for (int64_t layer = 0; layer < model.config().layers; ++layer) {
    auto blk = model.blocks->at<nn::Block>(static_cast<size_t>(layer));
    levels.emplace_back();
    combined.emplace_back();
    block_scores(*blk, blk->ln1->forward(x), valid, levels.back(), combined.back());
    x = blk->forward(x, valid);
  }
  model.train(was_training);
}
}  // namespace

std::vector<Tensor> layer_scores(nn::SequenceClassifier& model, const Tensor& inputs, const Tensor& valid) {
  std::vector<std::vector<Tensor>> levels;
  std::vector<Tensor> combined;
  all_block_scores(model, inputs, valid, levels, combined);
  return combined;
}

std::vector<std::vector<Tensor>> layer_level_scores(nn::SequenceClassifier& model, const Tensor& inputs,
                                                    const Tensor& valid) {
  std::vector<std::vector<Tensor>> levels;
  std::vector<Tensor> combined;
  all_block_scores(model, inputs, valid, levels, combined);
  return levels;
}

ScoreStats collect_scores(nn::SequenceClassifier& model, const tasks::Dataset& data, int64_t window,
                          int64_t eig_samples, int64_t batch_size, const std::vector<int64_t>& windows,
                          int64_t max_p) {
  HKT_CHECK(data.size() >= 1, "analysis: the data set '", data.name, "' has no examples");
  HKT_CHECK(window >= 1 && batch_size >= 1 && eig_samples >= 0, "analysis: window (", window, ") and batch size (",
            batch_size, ") must be >= 1, eig_samples (", eig_samples, ") >= 0");
  const nn::ClassifierConfig& cfg = model.config();
  HKT_CHECK(data.seq_len <= cfg.max_len, "analysis: '", data.name, "' has sequences of length ", data.seq_len,
            " but the model's max_len is ", cfg.max_len);
  ScoreStats st;
  st.layers = cfg.layers;
  st.heads = cfg.heads;
  st.levels = nn::score_levels(cfg.attention);
  st.level.resize(static_cast<size_t>(st.layers * st.heads * st.levels));
  // p per level: the window, capped by the median sequence length at that level (so that at least
  // half the examples, those with len_l >= p, give score vectors).
  std::vector<int64_t> lens = data.lengths;
  std::sort(lens.begin(), lens.end());
  const int64_t median_len = lens[(lens.size() - 1) / 2];
  for (int64_t i = 0; i < st.layers; ++i)
    for (int64_t h = 0; h < st.heads; ++h)
      for (int64_t l = 0; l < st.levels; ++l) {
        LevelScores& ls = st.at(i, h, l);
        const int64_t full = level_len(median_len, l);
        ls.p = std::min(window, full);
        ls.sets[ls.p];
        for (int64_t w : windows) {
          const int64_t p = w > 0 ? std::min(w, full) : full;
          const bool fits = max_p <= 0 || p <= max_p;
          ls.window_p.push_back(fits ? p : 0);
          if (fits) ls.sets[p];
        }
      }
  const int64_t n_eig = std::min(eig_samples, data.size());
  st.combined.resize(static_cast<size_t>(st.layers * st.heads * n_eig));

  const bool was_training = model.is_training();
  model.eval();
  NoGradGuard ng;
  const int64_t N = data.size(), T = data.seq_len;
  for (int64_t lo = 0; lo < N; lo += batch_size) {
    const int64_t hi = std::min(N, lo + batch_size), B = hi - lo;
    std::vector<int64_t> idx(static_cast<size_t>(B));
    for (int64_t b = 0; b < B; ++b) idx[b] = lo + b;
    const tasks::Batch batch = data.batch(idx);
    Tensor x = embed(model, batch.inputs);
    for (int64_t layer = 0; layer < st.layers; ++layer) {
      auto blk = model.blocks->at<nn::Block>(static_cast<size_t>(layer));
      std::vector<Tensor> levels;
      Tensor combined;
      block_scores(*blk, blk->ln1->forward(x), batch.valid, levels, combined);
      for (int64_t l = 0; l < st.levels; ++l) {
        const int64_t Tl = levels[l].size(2);
        const std::vector<double> s = doubles(levels[l]);  // [B, H, Tl, Tl]
        for (int64_t b = 0; b < B; ++b) {
          const int64_t len = std::min(Tl, level_len(data.lengths[lo + b], l));
          for (int64_t h = 0; h < st.heads; ++h) {
            LevelScores& acc = st.at(layer, h, l);
            const double* m = s.data() + (b * st.heads + h) * Tl * Tl;
            for (auto& [p, set] : acc.sets) {
              if (len < p) continue;  // a window must hold real keys only
              ++set.examples;
              for (int64_t i = 0; i < len; ++i) set.rows.insert(set.rows.end(), m + i * Tl, m + i * Tl + p);
            }
            for (int64_t i = 0; i < len; ++i)
              for (int64_t j = 0; j < len; ++j) acc.entries.add(m[i * Tl + j]);
          }
        }
      }
      // Spectra of the symmetrised combined scores of the first eig_samples examples.
      if (lo < n_eig) {
        const std::vector<double> c = doubles(combined);  // [B, H, T, T]
        for (int64_t b = 0; b < B && lo + b < n_eig; ++b) {
          const int64_t len = data.lengths[lo + b];
          for (int64_t h = 0; h < st.heads; ++h) {
            const double* m = c.data() + (b * st.heads + h) * T * T;
            std::vector<double> sym(static_cast<size_t>(len * len));
            for (int64_t i = 0; i < len; ++i)
              for (int64_t j = 0; j < len; ++j) sym[i * len + j] = 0.5 * (m[i * T + j] + m[j * T + i]);
            CombinedSpectrum& cs = st.combined[static_cast<size_t>((layer * st.heads + h) * n_eig + lo + b)];
            cs.sample = lo + b;
            cs.values = sym_eig(sym, len).values;
          }
        }
      }
      x = blk->forward(x, batch.valid);
    }
  }
  model.train(was_training);
  return st;
}

}  // namespace hkt::analysis
