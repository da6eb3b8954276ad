// H-Transformer-1D attention on the CPU, the published layout (Zhu and Soricut
// 2021; hkt/ops/htransformer.hpp has the math, docs/htransformer.md the
// picture): one task per (batch, head), O(T (dh + dv)) workspace per task, no
// T x T matrix. Arithmetic in double whatever the dtype; the bits do not
// depend on the thread count (each (b, h) is one task in a fixed order, and
// the bias gradient is reduced over the batch in order after the tasks).
//
// Per task the sequence (padded with masked tokens to Tp = Nr 2^L) is
// coarsened into L levels: level l has Tp >> l tokens, q~ and k~ the masked
// mean of means of pairs (causal q~: the first token of each pair), vsum the
// pair sums of v and c the number of valid fine keys of each group. At every
// level each coarse query p of block b sees the keys of blocks b - 1 (LEFT)
// and b + 1 (RIGHT, not causal) and, at level 0, its own block b (ANCHOR,
// lower-triangular when causal); at levels >= 1 the correction mask drops the
// quarter of LEFT/RIGHT the level below covers; keys with c = 0 are dropped.
// Score s = scale q~_p . k~_r + bias[r - p + 2 Nr - 1].
//
// Forward: per level and coarse row p its max m, y = sum exp(s - m) vsum and
// z = sum exp(s - m) c; the levels are merged top-down (row p of level l takes
// row p >> 1 of level l + 1), O(Tp dv), giving per fine query Y, Z and its
// offset M: out = Y / Z, lse = M + log Z (+inf for padding or no key).
// Backward: with w = exp(s - lse_i) for fine query i of the row's group,
//   d vsum_r += sum_i w g_i,   ds = sum_i w (g_i . vsum_r - c_r g_i . out_i),
// where sum_i exp(-lse_i) g_i (and g_i . out_i) over each group is a pyramid
// of offset sums built bottom-up (O(Tp dv)); then d q~, d k~, d bias from ds,
// and the coarsening transposed top-down: d x_{l-1}[2p + j] += d x_l[p] / n_l[p]
// (n_l = the number of non-empty children, at least 1) for the means, the
// first child only for causal q, both children for vsum.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <vector>

#include "kernels/cpu/parallel.hpp"
#include "kernels/backends.hpp"

namespace hkt::cpu {

struct HtrDims {
  int64_t B, H, T, dh, dv;
  int64_t block;    // Nr as configured: the bias table has 4 block - 1 entries per head
  int64_t Tp, nr, L;  // the padded length Nr' 2^L, the block used Nr' (= min(block, Tp / 2)), the levels
  bool causal;
  double scale;
};

namespace htr {

constexpr double kInf = std::numeric_limits<double>::infinity();

// The levels of one (b, h), in double.
struct Pyramid {
  std::vector<std::vector<double>> q, k, v, c, n;  // [l]: q~, k~ [Tl, dh], vsum [Tl, dv], counts, divisors
  std::vector<std::vector<char>> ne;               // [l]: the group holds a valid token
};

template <class T>
Pyramid build(const HtrDims& d, const T* q, const T* k, const T* v, const bool* valid, int64_t b) {
  Pyramid P;
  const auto L = static_cast<size_t>(d.L);
  P.q.resize(L), P.k.resize(L), P.v.resize(L), P.c.resize(L), P.n.resize(L), P.ne.resize(L);
  P.q[0].assign(d.Tp * d.dh, 0.0), P.k[0] = P.q[0];
  P.v[0].assign(d.Tp * d.dv, 0.0);
  P.c[0].assign(d.Tp, 0.0), P.n[0].assign(d.Tp, 1.0), P.ne[0].assign(d.Tp, 0);
  for (int64_t t = 0; t < d.T; ++t) {
    if (valid && !valid[b * d.T + t]) continue;
    P.c[0][t] = 1.0, P.ne[0][t] = 1;
    for (int64_t e = 0; e < d.dh; ++e) {
      P.q[0][t * d.dh + e] = static_cast<double>(q[t * d.dh + e]);
      P.k[0][t * d.dh + e] = static_cast<double>(k[t * d.dh + e]);
    }
    for (int64_t e = 0; e < d.dv; ++e) P.v[0][t * d.dv + e] = static_cast<double>(v[t * d.dv + e]);
  }
  for (size_t l = 1; l < L; ++l) {
    const int64_t n = d.Tp >> l;
    P.q[l].assign(n * d.dh, 0.0), P.k[l] = P.q[l];
    P.v[l].assign(n * d.dv, 0.0);
    P.c[l].assign(n, 0.0), P.n[l].assign(n, 1.0), P.ne[l].assign(n, 0);
    for (int64_t p = 0; p < n; ++p) {
      const int64_t a = 2 * p, z = 2 * p + 1, kids = P.ne[l - 1][a] + P.ne[l - 1][z];
      P.c[l][p] = P.c[l - 1][a] + P.c[l - 1][z];
      P.ne[l][p] = kids > 0;
      const double div = kids > 0 ? static_cast<double>(kids) : 1.0;
      P.n[l][p] = div;
      for (int64_t e = 0; e < d.dh; ++e) {
        P.k[l][p * d.dh + e] = (P.k[l - 1][a * d.dh + e] + P.k[l - 1][z * d.dh + e]) / div;
        P.q[l][p * d.dh + e] =
            d.causal ? P.q[l - 1][a * d.dh + e] : (P.q[l - 1][a * d.dh + e] + P.q[l - 1][z * d.dh + e]) / div;
      }
      for (int64_t e = 0; e < d.dv; ++e) P.v[l][p * d.dv + e] = P.v[l - 1][a * d.dv + e] + P.v[l - 1][z * d.dv + e];
    }
  }
  return P;
}

// The keys coarse query p of level l sees (in a fixed order: LEFT, ANCHOR,
// RIGHT), written to keys; returns how many. Keys without a valid token are left out.
inline int64_t row_keys(const HtrDims& d, const Pyramid& P, int64_t l, int64_t p, std::vector<int64_t>& keys) {
  const int64_t nr = d.nr, h = nr / 2, nb = (d.Tp >> l) / nr, blk = p / nr, a = p % nr;
  const std::vector<double>& c = P.c[static_cast<size_t>(l)];
  int64_t n = 0;
  auto take = [&](int64_t r) {
    if (c[r] > 0) keys[n++] = r;
  };
  if (blk >= 1)
    for (int64_t j = 0; j < nr; ++j)
      if (l == 0 || !(a < h && j >= h)) take((blk - 1) * nr + j);
  if (l == 0)
    for (int64_t j = 0; j < (d.causal ? a + 1 : nr); ++j) take(blk * nr + j);
  if (!d.causal && blk + 1 < nb)
    for (int64_t j = 0; j < nr; ++j)
      if (l == 0 || !(a >= h && j < h)) take((blk + 1) * nr + j);
  return n;
}

// The row's scores s[0 .. n) for its keys and their max (-inf if none).
inline double scores(const HtrDims& d, const Pyramid& P, int64_t l, int64_t p, const std::vector<int64_t>& keys,
                     int64_t n, const double* bias, std::vector<double>& s) {
  const auto L = static_cast<size_t>(l);
  const double* qp = P.q[L].data() + p * d.dh;
  double m = -kInf;
  for (int64_t j = 0; j < n; ++j) {
    const double* kr = P.k[L].data() + keys[j] * d.dh;
    double acc = 0;
    for (int64_t e = 0; e < d.dh; ++e) acc += qp[e] * kr[e];
    s[j] = acc * d.scale + (bias ? bias[keys[j] - p + 2 * d.block - 1] : 0.0);
    m = std::max(m, s[j]);
  }
  return m;
}

}  // namespace htr

// y [B, H, T, dv]; lse [B, H, T] (+inf where a query is padding or has no key).
// bias [H, 4 block - 1] or null.
template <class T>
void htransformer_forward(const HtrDims& d, const T* q, const T* k, const T* v, const bool* valid, const T* bias,
                          T* y, T* lse) {
  const int64_t nq = d.T * d.dh, nv = d.T * d.dv, nbias = 4 * d.block - 1;
  parallel_for(0, d.B * d.H, 1, [&](int64_t lo, int64_t hi) {
    std::vector<int64_t> keys(3 * d.nr);
    std::vector<double> s(3 * d.nr), tab(bias ? nbias : 0);
    for (int64_t bh = lo; bh < hi; ++bh) {
      for (int64_t j = 0; j < static_cast<int64_t>(tab.size()); ++j)
        tab[j] = static_cast<double>(bias[(bh % d.H) * nbias + j]);
      const htr::Pyramid P = htr::build(d, q + bh * nq, k + bh * nq, v + bh * nv, valid, bh / d.H);
      std::vector<std::vector<double>> M(d.L), Y(d.L), Z(d.L);
      for (int64_t l = d.L - 1; l >= 0; --l) {
        const int64_t n = d.Tp >> l;
        M[l].assign(n, -htr::kInf), Y[l].assign(n * d.dv, 0.0), Z[l].assign(n, 0.0);
        for (int64_t p = 0; p < n; ++p) {
          const int64_t cnt = htr::row_keys(d, P, l, p, keys);
          const double m = htr::scores(d, P, l, p, keys, cnt, bias ? tab.data() : nullptr, s);
          double* yp = Y[l].data() + p * d.dv;
          double z = 0;
          for (int64_t j = 0; j < cnt; ++j) {
            const double w = std::exp(s[j] - m);
            z += w * P.c[l][keys[j]];
            const double* vr = P.v[l].data() + keys[j] * d.dv;
            for (int64_t e = 0; e < d.dv; ++e) yp[e] += w * vr[e];
          }
          M[l][p] = m, Z[l][p] = z;
          if (l + 1 == d.L) continue;
          // Merge the coarser levels' state (already merged into row p >> 1 of level l + 1).
          const int64_t up = p >> 1;
          const double mu = M[l + 1][up], mx = std::max(m, mu);
          if (mx == -htr::kInf) continue;
          const double a = std::exp(m - mx), b = std::exp(mu - mx);
          const double* yu = Y[l + 1].data() + up * d.dv;
          for (int64_t e = 0; e < d.dv; ++e) yp[e] = a * yp[e] + b * yu[e];
          Z[l][p] = a * z + b * Z[l + 1][up];
          M[l][p] = mx;
        }
        if (l + 1 < d.L) M[l + 1].clear(), Y[l + 1].clear(), Z[l + 1].clear();
      }
      for (int64_t i = 0; i < d.T; ++i) {
        const bool live = P.c[0][i] > 0 && Z[0][i] > 0;
        for (int64_t e = 0; e < d.dv; ++e)
          y[bh * nv + i * d.dv + e] = live ? static_cast<T>(Y[0][i * d.dv + e] / Z[0][i]) : T(0);
        lse[bh * d.T + i] = live ? static_cast<T>(M[0][i] + std::log(Z[0][i])) : std::numeric_limits<T>::infinity();
      }
    }
  });
}

// dq, dk [B, H, T, dh], dv [B, H, T, dv], dbias [H, 4 block - 1] (each may be
// null) from the forward's y and lse and the output gradient g.
template <class T>
void htransformer_grad(const HtrDims& d, const T* q, const T* k, const T* v, const bool* valid, const T* bias,
                           const T* y, const T* lse, const T* g, T* dq, T* dk, T* dv, T* dbias) {
  const int64_t nq = d.T * d.dh, nv = d.T * d.dv, nbias = 4 * d.block - 1, dh = d.dh, dvd = d.dv;
  std::vector<double> dtab(dbias ? d.B * d.H * nbias : 0, 0.0);  // per (b, h), reduced over b below
  parallel_for(0, d.B * d.H, 1, [&](int64_t lo, int64_t hi) {
    std::vector<int64_t> keys(3 * d.nr);
    std::vector<double> s(3 * d.nr), tab(bias ? nbias : 0), gh(dvd);
    for (int64_t bh = lo; bh < hi; ++bh) {
      for (int64_t j = 0; j < static_cast<int64_t>(tab.size()); ++j)
        tab[j] = static_cast<double>(bias[(bh % d.H) * nbias + j]);
      const htr::Pyramid P = htr::build(d, q + bh * nq, k + bh * nq, v + bh * nv, valid, bh / d.H);
      // The pyramid of sum_i exp(-lse_i - E) g_i and sum_i exp(-lse_i - E) g_i . y_i over each
      // group, with E the group's max of -lse (-inf: no live query in the group).
      std::vector<std::vector<double>> E(d.L), G(d.L), D(d.L);
      E[0].assign(d.Tp, -htr::kInf), G[0].assign(d.Tp * dvd, 0.0), D[0].assign(d.Tp, 0.0);
      for (int64_t i = 0; i < d.T; ++i) {
        const double li = static_cast<double>(lse[bh * d.T + i]);
        if (P.c[0][i] == 0 || std::isinf(li)) continue;
        E[0][i] = -li;
        for (int64_t e = 0; e < dvd; ++e) {
          G[0][i * dvd + e] = static_cast<double>(g[bh * nv + i * dvd + e]);
          D[0][i] += G[0][i * dvd + e] * static_cast<double>(y[bh * nv + i * dvd + e]);
        }
      }
      for (int64_t l = 1; l < d.L; ++l) {
        const int64_t n = d.Tp >> l;
        E[l].assign(n, -htr::kInf), G[l].assign(n * dvd, 0.0), D[l].assign(n, 0.0);
        for (int64_t p = 0; p < n; ++p) {
          const double ea = E[l - 1][2 * p], eb = E[l - 1][2 * p + 1], mx = std::max(ea, eb);
          if (mx == -htr::kInf) continue;
          const double a = std::exp(ea - mx), b = std::exp(eb - mx);
          E[l][p] = mx;
          D[l][p] = a * D[l - 1][2 * p] + b * D[l - 1][2 * p + 1];
          for (int64_t e = 0; e < dvd; ++e)
            G[l][p * dvd + e] = a * G[l - 1][2 * p * dvd + e] + b * G[l - 1][(2 * p + 1) * dvd + e];
        }
      }
      std::vector<std::vector<double>> dqc(d.L), dkc(d.L), dvs(d.L);
      for (int64_t l = 0; l < d.L; ++l) {
        dqc[l].assign((d.Tp >> l) * dh, 0.0), dkc[l] = dqc[l];
        dvs[l].assign((d.Tp >> l) * dvd, 0.0);
      }
      double* db = dbias ? dtab.data() + bh * nbias : nullptr;
      for (int64_t l = 0; l < d.L; ++l)
        for (int64_t p = 0; p < (d.Tp >> l); ++p) {
          if (E[l][p] == -htr::kInf) continue;
          const int64_t cnt = htr::row_keys(d, P, l, p, keys);
          const double m = htr::scores(d, P, l, p, keys, cnt, bias ? tab.data() : nullptr, s);
          if (cnt == 0) continue;
          const double f = std::exp(m + E[l][p]), dhat = f * D[l][p];
          for (int64_t e = 0; e < dvd; ++e) gh[e] = f * G[l][p * dvd + e];
          const double* qp = P.q[l].data() + p * dh;
          double* dqp = dqc[l].data() + p * dh;
          for (int64_t j = 0; j < cnt; ++j) {
            const int64_t r = keys[j];
            const double w = std::exp(s[j] - m);
            const double* vr = P.v[l].data() + r * dvd;
            double* dvr = dvs[l].data() + r * dvd;
            double gv = 0;
            for (int64_t e = 0; e < dvd; ++e) {
              dvr[e] += w * gh[e];
              gv += gh[e] * vr[e];
            }
            const double ds = w * (gv - P.c[l][r] * dhat);
            if (db) db[r - p + 2 * d.block - 1] += ds;
            const double* kr = P.k[l].data() + r * dh;
            double* dkr = dkc[l].data() + r * dh;
            for (int64_t e = 0; e < dh; ++e) {
              dqp[e] += d.scale * ds * kr[e];
              dkr[e] += d.scale * ds * qp[e];
            }
          }
        }
      // The coarsening, transposed: top-down to level 0.
      for (int64_t l = d.L - 1; l >= 1; --l)
        for (int64_t p = 0; p < (d.Tp >> l); ++p) {
          const double inv = 1.0 / P.n[l][p];
          for (int64_t j = 0; j < 2; ++j) {
            const int64_t ch = 2 * p + j;
            for (int64_t e = 0; e < dh; ++e) {
              dkc[l - 1][ch * dh + e] += dkc[l][p * dh + e] * inv;
              if (!d.causal) dqc[l - 1][ch * dh + e] += dqc[l][p * dh + e] * inv;
              else if (j == 0) dqc[l - 1][ch * dh + e] += dqc[l][p * dh + e];
            }
            for (int64_t e = 0; e < dvd; ++e) dvs[l - 1][ch * dvd + e] += dvs[l][p * dvd + e];
          }
        }
      for (int64_t i = 0; i < d.T; ++i) {
        const bool real = P.c[0][i] > 0;
        for (int64_t e = 0; e < dh; ++e) {
          if (dq) dq[bh * nq + i * dh + e] = real ? static_cast<T>(dqc[0][i * dh + e]) : T(0);
          if (dk) dk[bh * nq + i * dh + e] = real ? static_cast<T>(dkc[0][i * dh + e]) : T(0);
        }
        if (dv)
          for (int64_t e = 0; e < dvd; ++e) dv[bh * nv + i * dvd + e] = real ? static_cast<T>(dvs[0][i * dvd + e]) : T(0);
      }
    }
  });
  if (dbias)
    for (int64_t h = 0; h < d.H; ++h)
      for (int64_t j = 0; j < nbias; ++j) {
        double acc = 0;
        for (int64_t b = 0; b < d.B; ++b) acc += dtab[(b * d.H + h) * nbias + j];
        dbias[h * nbias + j] = static_cast<T>(acc);
      }
}

// The op list's kernels (hkt/kernels/op_list.hpp's signatures), registered for its CPU dtypes.
using kernels::buf;
inline HtrDims htr_dims(const sig::HtrShape& d) {
  return {d.B, d.H, d.T, d.dh, d.dv, d.block, d.Tp, d.nr, d.L, d.causal, d.scale};
}
template <class T>
void htransformer(const sig::HtrShape& d, const void* q, const void* k, const void* v, const bool* valid,
                  const void* bias, void* y, void* lse) {
  htransformer_forward<T>(htr_dims(d), buf<T>(q), buf<T>(k), buf<T>(v), valid, buf<T>(bias), buf<T>(y), buf<T>(lse));
}
template <class T>
void htransformer_backward(const sig::HtrShape& d, const void* q, const void* k, const void* v, const bool* valid,
                           const void* bias, const void* y, const void* lse, const void* g, void* dq, void* dk,
                           void* dv, void* dbias) {
  htransformer_grad<T>(htr_dims(d), buf<T>(q), buf<T>(k), buf<T>(v), valid, buf<T>(bias), buf<T>(y), buf<T>(lse),
                       buf<T>(g), buf<T>(dq), buf<T>(dk), buf<T>(dv), buf<T>(dbias));
}
HKT_CPU_KERNEL(htransformer)
HKT_CPU_KERNEL(htransformer_backward)

}  // namespace hkt::cpu
