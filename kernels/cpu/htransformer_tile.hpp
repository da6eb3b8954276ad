// The pyramid and the score tile of the H-Transformer-1D kernel
// (kernels/cpu/htransformer.cpp has the picture): in the tensor's dtype,
// stored padded for the tile product of attention_tile.hpp (rows of q~, k~,
// vsum at a stride that is a multiple of 8, zero filled; k~ and vsum also
// transposed, with 8 spare columns, so that a block of keys is a column
// slice; 2 spare rows and 8 spare counts).
#pragma once
#include <algorithm>
#include <cstdint>
#include <limits>
#include <vector>

#include "kernels/cpu/attention_tile.hpp"
#include "kernels/cpu/htransformer_simd.hpp"
#include "kernels/cpu/parallel.hpp"

namespace hkt::cpu {

struct HtrDims {
  int64_t B, H, T, dh, dv;
  int64_t block;    // Nr as configured: the bias table has 4 block - 1 entries per head
  int64_t Tp, nr, L;  // the padded length Nr' 2^L, the block used Nr' (= min(block, Tp / 2)), the levels
  bool causal;
  double scale;
};

namespace htr {

inline int64_t up8(int64_t n) { return (n + 7) / 8 * 8; }
inline int64_t up2(int64_t n) { return (n + 1) / 2 * 2; }
template <class T>
inline constexpr T kNinf = -std::numeric_limits<T>::infinity();

// One level of the pyramid of one (b, h).
template <class T>
struct Level {
  int64_t n = 0, ldt = 0;            // tokens, the column stride of kt / vt (n + 8)
  std::vector<T> q, k, v;            // q~, k~ [n + 2, dhp], vsum [n + 2, dvp]
  const T *qd, *kd, *vd;             // their rows: the vectors', or level 0's inputs (direct()); null if not built
  std::vector<T> kt, vt;             // k~ [dhp, ldt] and vsum [dvp, ldt] transposed (vt: only if asked)
  std::vector<T> c, div, inv;        // counts of valid fine keys [n + 8]; the mean's divisor (>= 1), 1 / it [n]
  std::vector<char> ne;              // the group holds a valid token
};

// Level 0 can be the inputs themselves: no padding (rows, columns, masked tokens) and no
// spare row read (nr even).
inline bool direct(const HtrDims& d, const bool* valid) {
  return up8(d.dh) == d.dh && up8(d.dv) == d.dv && d.T == d.Tp && up2(d.nr) == d.nr &&
         (!valid || std::all_of(valid, valid + d.T, [](bool b) { return b; }));
}

// Builds the levels into P (its vectors reused: a workspace kept per thread
// spares the allocations and page faults of fresh buffers at every call):
// the rows of q~ and k~ transposed always; for the forward (backward false)
// the rows of vsum, for the backward the rows of k~ and vsum transposed.
// Level 0's rows are the inputs or padded copies, its kt and vt transposes;
// above, rows are means (sums) of row pairs and kt, vt of column pairs.
template <class T>
void build(const HtrDims& d, const T* q, const T* k, const T* v, const bool* valid, bool backward,
           std::vector<Level<T>>& P) {
  const int64_t dh = d.dh, dv = d.dv, dhp = up8(dh), dvp = up8(dv);
  const bool in_place = direct(d, valid);
  if (static_cast<int64_t>(P.size()) < d.L) P.resize(static_cast<size_t>(d.L));
  for (int64_t l = 0; l < d.L; ++l) {
    Level<T>& x = P[static_cast<size_t>(l)];
    const int64_t n = d.Tp >> l;
    const bool krows = l == 0 || backward, vrows = l == 0 || !backward;
    x.n = n, x.ldt = n + 8;
    x.c.assign(n + 8, T(0)), x.div.assign(n, T(1)), x.inv.assign(n, T(1)), x.ne.assign(n, 0);
    x.qd = x.kd = x.vd = nullptr;
    if (l == 0 && in_place) {
      x.qd = q, x.kd = k, x.vd = v;
      std::fill_n(x.c.data(), n, T(1)), std::fill_n(x.ne.data(), n, char(1));
    } else {
      // Every row is written below (so no zero fill first), but the 2 spare rows.
      x.q.resize((n + 2) * dhp), std::fill_n(x.q.data() + n * dhp, 2 * dhp, T(0)), x.qd = x.q.data();
      if (krows) x.k.resize((n + 2) * dhp), std::fill_n(x.k.data() + n * dhp, 2 * dhp, T(0)), x.kd = x.k.data();
      if (vrows) x.v.resize((n + 2) * dvp), std::fill_n(x.v.data() + n * dvp, 2 * dvp, T(0)), x.vd = x.v.data();
    }
    if (l == 0 && !in_place) {
      // The rows t < T in one copy where the padded stride is the input's; then the zero rows.
      auto rows = [&](T* dst, const T* src, int64_t w, int64_t wp) {
        if (w == wp)
          std::copy_n(src, d.T * w, dst);
        else
          for (int64_t t = 0; t < d.T; ++t) std::copy_n(src + t * w, w, dst + t * wp), std::fill_n(dst + t * wp + w, wp - w, T(0));
        std::fill(dst + d.T * wp, dst + n * wp, T(0));
        if (valid)
          for (int64_t t = 0; t < d.T; ++t)
            if (!valid[t]) std::fill_n(dst + t * wp, wp, T(0));
      };
      rows(x.q.data(), q, dh, dhp), rows(x.k.data(), k, dh, dhp), rows(x.v.data(), v, dv, dvp);
      for (int64_t t = 0; t < d.T; ++t)
        if (!valid || valid[t]) x.c[t] = T(1), x.ne[t] = 1;
    } else if (l > 0) {
      const Level<T>& f = P[static_cast<size_t>(l - 1)];
      for (int64_t p = 0; p < n; ++p) {
        const int64_t a = 2 * p, z = 2 * p + 1, kids = f.ne[a] + f.ne[z];
        x.c[p] = f.c[a] + f.c[z], x.ne[p] = kids > 0;
        x.div[p] = kids > 0 ? static_cast<T>(kids) : T(1);
        x.inv[p] = T(1) / x.div[p];  // (1 or 1/2: the product is the quotient, exactly)
      }
      // (the zero columns stay 0)
      pair_rows(x.q.data(), f.qd, n, dhp, x.inv.data(), d.causal);
      if (krows) pair_rows(x.k.data(), f.kd, n, dhp, x.inv.data(), false);
      if (vrows) pair_rows(x.v.data(), f.vd, n, dvp, static_cast<const T*>(nullptr), false);
    }
    // kt, vt: n columns and the zero spare ones (the zero columns of k~, vsum fill the spare rows)
    auto transposed = [&](std::vector<T>& dst, const T* src, const std::vector<T>* fine, const T* inv, int64_t cols) {
      dst.resize(cols * x.ldt);
      if (l == 0)
        attn_detail::tr(dst.data(), x.ldt, src, cols, n, cols);
      else
        for (int64_t e = 0; e < cols; ++e) pair_sums(dst.data() + e * x.ldt, fine->data() + e * (2 * n + 8), n, inv);
      for (int64_t e = 0; e < cols; ++e) std::fill_n(dst.data() + e * x.ldt + n, x.ldt - n, T(0));
    };
    const Level<T>* f = l > 0 ? &P[static_cast<size_t>(l - 1)] : nullptr;
    transposed(x.kt, x.kd, f ? &f->kt : nullptr, x.inv.data(), dhp);
    if (backward) transposed(x.vt, x.vd, f ? &f->vt : nullptr, nullptr, dvp);
  }
}

// The buffers of the kernels (htransformer.cpp), one per thread (per_thread in parallel.hpp),
// reused across (b, h) and calls.
template <class T>
struct Workspace {
  std::vector<Level<T>> P;
  std::vector<T> M, Y, Z, Mu, Yu, Zu;                 // forward: per row of a level and of the level above
  std::vector<T> mx, wa, wb;                          // the merge's max and weights per row
  std::vector<std::vector<T>> E, G, D, dqc, dkc, dvs;  // backward: per level
  std::vector<double> dacc;                            // backward: d bias per (segment kind, row, column)
  std::vector<T> dpart;                                // its partial sums over up to kBiasRun blocks
};

// The score tile of one query block: its rows [0, mr) (mr = nr rounded up to
// even) against up to three key blocks (segments LEFT, ANCHOR, RIGHT, in this
// order), each nrp = nr rounded up to 8 columns wide.
template <class T>
struct Tile {
  enum Kind { kLeft, kAnchor, kRight };
  struct Seg {
    int64_t start;  // the segment's first key
    Kind kind;
  };
  // Runs of segments that are adjacent both in the tile and in the level (nr a multiple of 8:
  // the level-0 band, LEFT + ANCHOR when causal), one product each.
  struct Run {
    int64_t col, start, cols, keys;  // first tile column, first key, tile columns, keys
  };
  int64_t nr, half, nrp, mr, ld = 0, ns = 0, nrun = 0, dhp, dvp;
  Seg seg[3];
  int kind[3];  // seg[i].kind
  Run run[3];
  // bias (padded by nrp + 8 both sides), scores, ..., counts per column, 0 / -inf per column (c > 0 / not)
  std::vector<T> tab, s, g, cp, cm;
  // The addend of the scores per layout (level 0 or not, which segments): bias, -inf where the
  // layout masks (padding columns, causal anchor, correction) [nr, ld]; built when first used.
  std::vector<T> add[16];
  bool built[16] = {};
  Mask<T> mask{};  // the present block's

  explicit Tile(const HtrDims& d)
      : nr(d.nr), half(d.nr / 2), nrp(up8(d.nr)), mr(up2(d.nr)), dhp(up8(d.dh)), dvp(up8(d.dv)) {
    tab.assign(4 * d.block - 1 + 2 * (nrp + 8), T(0));
    s.resize(mr * 3 * nrp), g.resize(mr * 3 * nrp), cp.resize(3 * nrp), cm.resize(3 * nrp);
  }
  void set_bias(const T* bias, int64_t nbias) {
    if (bias) std::copy_n(bias, nbias, tab.data() + nrp + 8);
    std::fill_n(built, 16, false);
  }
  // The keys [lo, hi) of segment i that row a sees (the causal anchor and the correction mask).
  void range(const HtrDims& d, int64_t l, int64_t i, int64_t a, int64_t& lo, int64_t& hi) const {
    lo = 0, hi = nr;
    if (seg[i].kind == kAnchor && d.causal) hi = a + 1;
    if (l > 0 && seg[i].kind == kLeft && a < half) hi = half;
    if (l > 0 && seg[i].kind == kRight && a >= half) lo = half;
  }
  // The addend for the present segments at level l (seg[i].start - blk nr is -nr, 0, nr by kind).
  const T* addend(const HtrDims& d, int64_t l) {
    int key = l > 0;
    for (int64_t i = 0; i < ns; ++i) key |= 2 << kind[i];
    std::vector<T>& t = add[key];
    if (built[key]) return t.data();
    t.resize(nr * ld);
    for (int64_t a = 0; a < nr; ++a)
      for (int64_t i = 0; i < ns; ++i) {
        int64_t lo, hi;
        range(d, l, i, a, lo, hi);
        const T* bt = tab.data() + nrp + 8 + ((kind[i] - 1) * nr - a + 2 * d.block - 1);
        T* r = t.data() + a * ld + i * nrp;
        for (int64_t j = 0; j < nrp; ++j) r[j] = j >= lo && j < hi ? bt[j] : kNinf<T>;
      }
    built[key] = true;
    return t.data();
  }
  // Segments of block blk at level l; then s = q~ k~^T (rows >= nr: 0), to be masked by `mask`
  // (scale, + bias, -inf where masked or c = 0) in the row passes (softmax_rows, dsoftmax_rows),
  // cp = the counts per column (0 at padding). Returns the segment count.
  int64_t scores(const HtrDims& d, const Level<T>& x, int64_t l, int64_t blk) {
    const int64_t nb = x.n / nr, dh = d.dh;
    ns = 0;
    if (blk >= 1) seg[ns++] = {(blk - 1) * nr, kLeft};
    if (l == 0) seg[ns++] = {blk * nr, kAnchor};
    if (!d.causal && blk + 1 < nb) seg[ns++] = {(blk + 1) * nr, kRight};
    ld = ns * nrp, nrun = 0;
    if (ns == 0) return 0;
    for (int64_t i = 0; i < ns; ++i) {
      kind[i] = seg[i].kind;
      if (i > 0 && nrp == nr && seg[i].start == run[nrun - 1].start + run[nrun - 1].keys)
        run[nrun - 1].cols += nrp, run[nrun - 1].keys += nr;
      else
        run[nrun++] = {i * nrp, seg[i].start, nrp, nr};
    }
    const T* qb = x.qd + blk * nr * dhp;
    for (int64_t i = 0; i < nrun; ++i)
      mm(qb, dhp, x.kt.data() + run[i].start, x.ldt, s.data() + run[i].col, ld, mr, run[i].cols, dh, false);
    for (int64_t i = 0; i < ns; ++i) {
      std::copy_n(x.c.data() + seg[i].start, nr, cp.data() + i * nrp);
      std::fill(cp.data() + i * nrp + nr, cp.data() + (i + 1) * nrp, T(0));
    }
    for (int64_t j = 0; j < ld; ++j) cm[j] = cp[j] > 0 ? T(0) : kNinf<T>;
    mask = {addend(d, l), cm.data(), static_cast<T>(d.scale)};
    std::fill(s.begin() + nr * ld, s.begin() + mr * ld, T(0));
    return ns;
  }
};

}  // namespace htr
}  // namespace hkt::cpu
