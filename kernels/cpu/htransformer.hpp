// H-Transformer-1D attention on the CPU (hkt/ops/htransformer.hpp has the
// math): one task per (batch, head), O(T * dh) workspace per task, no T x T
// matrix. Arithmetic in double whatever the dtype; the bits do not depend on
// the thread count (each (b, h) is computed by one task, in a fixed order).
//
// Per task the (internally padded) sequence is restricted into a pyramid of
// group sums: level p holds, for groups of 2^p tokens, the sums of masked q,
// k, v and the valid-token count c. Block level 0 reads pyramid 0 (its own
// block), block level l >= 1 reads pyramid l - 1 (the sibling block). The
// forward merges each level's rows into a running (max, numerator,
// denominator) per fine query (one shared normalisation) and saves
// lse_i = max + log(denominator) (+inf where there is no key). The backward
// recomputes each row's scores, with P_iJ = exp(s_iJ - lse_i):
//   d vsum_J += sum_i P_iJ G_i,  ds_IJ = sum_{i in I} P_iJ (G_i . vsum_J - c_J G_i . Y_i),
//   d q~_I += scale sum_J ds_IJ k~_J,  d k~_J += scale sum_I ds_IJ q~_I,
// and prolongs the coarse gradients back: d q_i = sum_p d q~_p[i >> p] / c_p[i >> p]
// (the same for k), d v_i = sum_p d vsum_p[i >> p], all zero at padded tokens.
#pragma once
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <vector>

#include "kernels/cpu/parallel.hpp"

namespace hkt::cpu {

struct HtrDims {
  int64_t B, H, T, dh, block, levels;  // levels: as many as T needs, or fewer (>= 1)
  bool causal;
  double scale;
};

namespace htr {

// The restriction pyramid of one (b, h), in double.
struct Pyramid {
  int64_t Tp = 0, dh = 0;
  std::vector<std::vector<double>> q, k, v, c;  // [p]: [Tp >> p, dh] sums and [Tp >> p] counts
  std::vector<std::vector<double>> qm, km;      // [p]: the means over each group's valid tokens (0 if none)
  const double* kmean(int64_t p, int64_t i) const { return km[p].data() + i * dh; }
  const double* qmean(int64_t p, int64_t i) const { return qm[p].data() + i * dh; }
};

inline int64_t padded_len(const HtrDims& d) {
  const int64_t top = d.block << (d.levels - 1);
  return (d.T + top - 1) / top * top;
}

template <class T>
Pyramid build(const HtrDims& d, const T* q, const T* k, const T* v, const bool* valid, int64_t b) {
  Pyramid P;
  P.Tp = padded_len(d);
  P.dh = d.dh;
  const int64_t np = std::max<int64_t>(d.levels - 1, 1);
  P.q.resize(np), P.k.resize(np), P.v.resize(np), P.c.resize(np);
  P.q[0].assign(P.Tp * d.dh, 0.0), P.k[0] = P.q[0], P.v[0] = P.q[0];
  P.c[0].assign(P.Tp, 0.0);
  for (int64_t t = 0; t < d.T; ++t) {
    if (valid && !valid[b * d.T + t]) continue;
    P.c[0][t] = 1.0;
    for (int64_t e = 0; e < d.dh; ++e) {
      P.q[0][t * d.dh + e] = static_cast<double>(q[t * d.dh + e]);
      P.k[0][t * d.dh + e] = static_cast<double>(k[t * d.dh + e]);
      P.v[0][t * d.dh + e] = static_cast<double>(v[t * d.dh + e]);
    }
  }
  for (int64_t p = 1; p < np; ++p) {
    const int64_t n = P.Tp >> p;
    for (auto* x : {&P.q, &P.k, &P.v}) {
      (*x)[p].assign(n * d.dh, 0.0);
      for (int64_t i = 0; i < n; ++i)
        for (int64_t e = 0; e < d.dh; ++e)
          (*x)[p][i * d.dh + e] = (*x)[p - 1][2 * i * d.dh + e] + (*x)[p - 1][(2 * i + 1) * d.dh + e];
    }
    P.c[p].assign(n, 0.0);
    for (int64_t i = 0; i < n; ++i) P.c[p][i] = P.c[p - 1][2 * i] + P.c[p - 1][2 * i + 1];
  }
  P.qm.resize(np), P.km.resize(np);
  for (int64_t p = 0; p < np; ++p) {
    P.qm[p] = P.q[p];
    P.km[p] = P.k[p];
    for (int64_t i = 0; i < (P.Tp >> p); ++i) {
      const double inv = P.c[p][i] > 0 ? 1.0 / P.c[p][i] : 0.0;
      for (int64_t e = 0; e < d.dh; ++e) P.qm[p][i * d.dh + e] *= inv, P.km[p][i * d.dh + e] *= inv;
    }
  }
  return P;
}

// One row of one level: a query vector against N keys of pyramid p starting at
// coarse index j0; key j0 + j is attended when its count is > 0 and j <= last
// (last = N - 1 but for the causal diagonal block). The visitor sees every row
// of fine queries [i0, i0 + g) that takes the row's scores.
struct Row {
  int64_t p, j0, last, i0, g;
};

// Calls f(row, qvec) for every row of every level (the order is fixed).
template <class F>
void for_each_row(const HtrDims& d, const Pyramid& P, std::vector<double>& qv, F&& f) {
  const int64_t N = d.block, dh = d.dh;
  for (int64_t i = 0; i < P.Tp; ++i) {  // level 0: the diagonal blocks, fine queries
    if (P.c[0][i] == 0) continue;
    for (int64_t e = 0; e < dh; ++e) qv[e] = P.q[0][i * dh + e];
    f(Row{0, i / N * N, d.causal ? i % N : N - 1, i, 1}, qv);
  }
  for (int64_t l = 1; l < d.levels; ++l) {
    const int64_t p = l - 1, g = int64_t{1} << p, S = N * g;
    if (d.causal) {  // fine queries of a right block against the whole left block
      for (int64_t i = 0; i < P.Tp; ++i) {
        if (P.c[0][i] == 0 || (i / S) % 2 == 0) continue;
        for (int64_t e = 0; e < dh; ++e) qv[e] = P.q[0][i * dh + e];
        f(Row{p, (i / S - 1) * N, N - 1, i, 1}, qv);
      }
    } else {  // coarse queries against the sibling block
      for (int64_t I = 0; I < (P.Tp >> p); ++I) {
        if (P.c[p][I] == 0) continue;
        for (int64_t e = 0; e < dh; ++e) qv[e] = P.qmean(p, I)[e];
        f(Row{p, ((I / N) ^ 1) * N, N - 1, I * g, g}, qv);
      }
    }
  }
}

// The row's scores s[j] (masked ones left at -inf) and their max (-inf if none).
inline double scores(const HtrDims& d, const Pyramid& P, const Row& r, const std::vector<double>& qv,
                     std::vector<double>& s) {
  double m = -std::numeric_limits<double>::infinity();
  for (int64_t j = 0; j < d.block; ++j) {
    s[j] = -std::numeric_limits<double>::infinity();
    const int64_t J = r.j0 + j;
    if (j > r.last || P.c[r.p][J] == 0) continue;
    const double* kj = P.kmean(r.p, J);
    double acc = 0;
    for (int64_t e = 0; e < d.dh; ++e) acc += qv[e] * kj[e];
    s[j] = acc * d.scale;
    m = std::max(m, s[j]);
  }
  return m;
}

}  // namespace htr

// y [B, H, T, dh]; lse [B, H, T] (+inf where a query has no key or is padding).
template <class T>
void htransformer_forward(const HtrDims& d, const T* q, const T* k, const T* v, const bool* valid, T* y, T* lse) {
  const int64_t n = d.T * d.dh;
  parallel_for(0, d.B * d.H, 1, [&](int64_t lo, int64_t hi) {
    std::vector<double> qv(d.dh), s(d.block), acc(d.dh), num, M, den;
    for (int64_t bh = lo; bh < hi; ++bh) {
      const htr::Pyramid P = htr::build(d, q + bh * n, k + bh * n, v + bh * n, valid, bh / d.H);
      num.assign(P.Tp * d.dh, 0.0);
      M.assign(P.Tp, -std::numeric_limits<double>::infinity());
      den.assign(P.Tp, 0.0);
      htr::for_each_row(d, P, qv, [&](const htr::Row& r, const std::vector<double>& qr) {
        const double m = htr::scores(d, P, r, qr, s);
        if (m == -std::numeric_limits<double>::infinity()) return;
        std::fill(acc.begin(), acc.end(), 0.0);
        double z = 0;
        for (int64_t j = 0; j < d.block; ++j) {
          if (s[j] == -std::numeric_limits<double>::infinity()) continue;
          const int64_t J = r.j0 + j;
          const double w = std::exp(s[j] - m);
          z += w * P.c[r.p][J];
          const double* vj = P.v[r.p].data() + J * d.dh;
          for (int64_t e = 0; e < d.dh; ++e) acc[e] += w * vj[e];
        }
        for (int64_t i = r.i0; i < r.i0 + r.g; ++i) {  // merge into each fine query's running state
          if (P.c[0][i] == 0) continue;
          const double mx = std::max(M[i], m), a = std::exp(M[i] - mx), b = std::exp(m - mx);
          for (int64_t e = 0; e < d.dh; ++e) num[i * d.dh + e] = num[i * d.dh + e] * a + acc[e] * b;
          den[i] = den[i] * a + z * b;
          M[i] = mx;
        }
      });
      for (int64_t i = 0; i < d.T; ++i) {
        const bool any = den[i] > 0;
        for (int64_t e = 0; e < d.dh; ++e)
          y[bh * n + i * d.dh + e] = any ? static_cast<T>(num[i * d.dh + e] / den[i]) : T(0);
        lse[bh * d.T + i] = any ? static_cast<T>(M[i] + std::log(den[i])) : std::numeric_limits<T>::infinity();
      }
    }
  });
}

// dq, dk, dv [B, H, T, dh] from the forward's y and lse and the output gradient g.
template <class T>
void htransformer_backward(const HtrDims& d, const T* q, const T* k, const T* v, const bool* valid, const T* y,
                           const T* lse, const T* g, T* dq, T* dk, T* dv) {
  const int64_t n = d.T * d.dh, dh = d.dh;
  parallel_for(0, d.B * d.H, 1, [&](int64_t lo, int64_t hi) {
    std::vector<double> qv(dh), s(d.block), gh(dh), G, D, L;
    for (int64_t bh = lo; bh < hi; ++bh) {
      const htr::Pyramid P = htr::build(d, q + bh * n, k + bh * n, v + bh * n, valid, bh / d.H);
      const int64_t np = static_cast<int64_t>(P.c.size());
      G.assign(P.Tp * dh, 0.0);
      D.assign(P.Tp, 0.0);
      L.assign(P.Tp, std::numeric_limits<double>::infinity());
      for (int64_t i = 0; i < d.T; ++i) {
        if (P.c[0][i] == 0) continue;
        L[i] = static_cast<double>(lse[bh * d.T + i]);
        for (int64_t e = 0; e < dh; ++e) {
          G[i * dh + e] = static_cast<double>(g[bh * n + i * dh + e]);
          D[i] += G[i * dh + e] * static_cast<double>(y[bh * n + i * dh + e]);
        }
      }
      std::vector<std::vector<double>> dqc(np), dkc(np), dvs(np);
      for (int64_t p = 0; p < np; ++p) {
        dqc[p].assign((P.Tp >> p) * dh, 0.0);
        dkc[p] = dqc[p];
        dvs[p] = dqc[p];
      }
      htr::for_each_row(d, P, qv, [&](const htr::Row& r, const std::vector<double>& qr) {
        const double m = htr::scores(d, P, r, qr, s);
        if (m == -std::numeric_limits<double>::infinity()) return;
        std::fill(gh.begin(), gh.end(), 0.0);  // sum_i a_i G_i and sum_i a_i D_i, a_i = exp(m - lse_i)
        double dhat = 0;
        for (int64_t i = r.i0; i < r.i0 + r.g; ++i) {
          if (P.c[0][i] == 0 || std::isinf(L[i])) continue;
          const double a = std::exp(m - L[i]);
          for (int64_t e = 0; e < dh; ++e) gh[e] += a * G[i * dh + e];
          dhat += a * D[i];
        }
        // The row's query gradient lands on the coarse query (bidirectional levels >= 1) or the fine one.
        // (Level 0 and causal rows use fine queries: pyramid 0, where the mean is the token itself.)
        const int64_t qp = d.causal ? 0 : r.p, qi = r.i0 >> qp;
        for (int64_t j = 0; j < d.block; ++j) {
          if (s[j] == -std::numeric_limits<double>::infinity()) continue;
          const int64_t J = r.j0 + j;
          const double w = std::exp(s[j] - m);
          double gv = 0;
          const double* vj = P.v[r.p].data() + J * dh;
          double* dvj = dvs[r.p].data() + J * dh;
          for (int64_t e = 0; e < dh; ++e) {
            dvj[e] += w * gh[e];
            gv += gh[e] * vj[e];
          }
          const double ds = w * (gv - P.c[r.p][J] * dhat) * d.scale;
          const double* kj = P.kmean(r.p, J);
          double* dqr = dqc[qp].data() + qi * dh;
          double* dkj = dkc[r.p].data() + J * dh;
          for (int64_t e = 0; e < dh; ++e) {
            dqr[e] += ds * kj[e];
            dkj[e] += ds * qr[e];
          }
        }
      });
      for (int64_t i = 0; i < d.T; ++i) {
        const bool real = P.c[0][i] > 0;
        for (int64_t e = 0; e < dh; ++e) {
          double a = 0, b = 0, c = 0;
          if (real)
            for (int64_t p = 0; p < np; ++p) {
              const int64_t I = i >> p;
              const double cnt = P.c[p][I];
              a += dqc[p][I * dh + e] / cnt;
              b += dkc[p][I * dh + e] / cnt;
              c += dvs[p][I * dh + e];
            }
          if (dq) dq[bh * n + i * dh + e] = static_cast<T>(a);
          if (dk) dk[bh * n + i * dh + e] = static_cast<T>(b);
          if (dv) dv[bh * n + i * dh + e] = static_cast<T>(c);
        }
      }
    }
  });
}

}  // namespace hkt::cpu
