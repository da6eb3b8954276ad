// Sliding-window (local) attention on the CPU: query i of each (batch, head)
// sees the keys j with |i - j| <= w (causal: i - w <= j <= i) that are valid.
// A row without any visible valid key gives 0 and lse = -inf (no gradient
// flows through it).
//
// Tiled: the rows of each (batch, head) are cut into chunks of kChunk rows,
// one task each; a chunk packs once the band of keys its rows see (K and V,
// both layouts, and Q / dO for the backward), zero padded (head dim to a
// multiple of 8, bands to a multiple of 8 plus 8). Inside a chunk, a tile of
// kTile query rows meets only its own band (kTile + 2w keys, against
// kTile + 2w + kTile - 1 for a chunk-wide band), so about 90% of the products
// are useful at w = 64. Every product is the register-blocked tile product of
// the fused attention (attention_tile.hpp: AVX2 + FMA for float32 when the CPU
// has them, portable otherwise) on pointers into the packed chunk; band and
// padding masks are applied per element.
//
// Forward: an exact softmax over the band; saves O and one log-sum-exp per
// row (O(T)). Backward, one pass, scores recomputed: per tile P, dS =
// P (dO V^T - D), dQ = scale dS K written at once, and dV^T += dO^T P,
// dK^T += Q^T dS into the chunk's band; a chunk's band overlaps its
// neighbours', so with several chunks the bands are kept and each key's
// gradient is the sum over the chunks that see it, in chunk order. The split
// depends on T alone and every sum has a fixed order, so the bits do not
// depend on the number of threads. O(T w dh) time; O(T) memory besides each
// thread's buffers (a chunk's band), kept per thread across calls.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <vector>

#include "kernels/cpu/attention_tile.hpp"
#include "kernels/cpu/parallel.hpp"
#include "kernels/backends.hpp"

namespace hkt::cpu {

struct LocalDims {
  int64_t B, H, len, dh, w;
  bool causal;
  double scale;
  int64_t lo(int64_t i) const { return std::max<int64_t>(0, i - w); }
  int64_t hi(int64_t i) const { return causal ? i : std::min<int64_t>(len - 1, i + std::min(w, len)); }  // inclusive
};

namespace local_detail {

inline constexpr int64_t kTile = 12, kChunk = 256;
inline int64_t up8(int64_t n) { return (n + 7) / 8 * 8; }
inline int64_t up2(int64_t n) { return (n + 1) / 2 * 2; }

// dst[r][c] (row stride ld) = src row r0 + r, columns [0, dh), r < n; zeros elsewhere up to rows x ld.
template <class T>
void pack_rows(const T* src, int64_t dh, int64_t r0, int64_t n, int64_t rows, int64_t ld, std::vector<T>& dst) {
  dst.resize(static_cast<size_t>(rows * ld));
  T* p = dst.data();
  for (int64_t r = 0; r < n; ++r, p += ld) std::copy_n(src + (r0 + r) * dh, dh, p), std::fill(p + dh, p + ld, T(0));
  std::fill(p, dst.data() + rows * ld, T(0));
}
// dst[c][r] (row stride ld) = src[r0 + r][c]: the transpose, zero padded to dhp x ld.
template <class T>
void pack_cols(const T* src, int64_t dh, int64_t r0, int64_t n, int64_t dhp, int64_t ld, std::vector<T>& dst) {
  dst.resize(static_cast<size_t>(dhp * ld));
  const int64_t n8 = dh % 8 == 0 ? n / 8 * 8 : 0;  // rows transposed 8 x 8 at a time (AVX2 for float32)
  attn_detail::tr(dst.data(), ld, src + r0 * dh, dh, n8, dh);
  for (int64_t c = 0; c < dh; ++c) {
    T* p = dst.data() + c * ld;
    for (int64_t r = n8; r < n; ++r) p[r] = src[(r0 + r) * dh + c];
    std::fill(p + n, p + ld, T(0));
  }
  std::fill(dst.data() + dh * ld, dst.data() + dhp * ld, T(0));
}

// x[c] += bias[c] for c in [a, b] (bias null: no padding), -inf elsewhere in [0, n).
template <class T>
void band_row(T* x, int64_t n, int64_t a, int64_t b, const T* bias) {
  constexpr T ninf = -std::numeric_limits<T>::infinity();
  a = std::max<int64_t>(a, 0), b = std::min<int64_t>(b, n - 1);
  if (a > b) {
    std::fill_n(x, n, ninf);
    return;
  }
  std::fill_n(x, a, ninf);
  if (bias)
    for (int64_t c = a; c <= b; ++c) x[c] += bias[c];
  std::fill(x + b + 1, x + n, ninf);
}

// Chunk c of a (batch, head): rows [i0, i0 + m) and the band of keys [j0, j0 + n) they see;
// packed row-major operands have ldq (queries) or ldk (keys) rows, column layouts that stride.
struct Chunk {
  int64_t i0, m, ldq, j0, n, ldk;
  Chunk(const LocalDims& d, int64_t c) {
    i0 = c * kChunk, m = std::min(kChunk, d.len - i0), ldq = up8(m) + 8;
    j0 = d.lo(i0), n = d.hi(i0 + m - 1) - j0 + 1, ldk = up8(n) + 8;
  }
};

// Tile t of a chunk: rows [i0, i0 + m) (mp = m rounded up to even), band [j0, j0 + n) of
// np = n rounded up to 8 columns, at row qo and column ko of the chunk's packed operands.
struct Tile {
  int64_t i0, m, mp, qo, j0, n, np, ko;
  Tile(const LocalDims& d, const Chunk& ch, int64_t t) {
    i0 = ch.i0 + t * kTile, m = std::min(kTile, ch.i0 + ch.m - i0), mp = up2(m), qo = i0 - ch.i0;
    j0 = d.lo(i0), n = d.hi(i0 + m - 1) - j0 + 1, np = up8(n), ko = j0 - ch.j0;
  }
};

// One thread's buffers: a chunk's packed operands, key bias and a tile's scores.
template <class T>
struct Work {
  std::vector<T> qr, qc, dor, doc, kr, kc, vr, vc, bias, s, g, acc, dkt, dvt, mx, sum, lse, dd;
  int64_t ldk = 0;      // the packed chunk's key stride
  bool padded = false;  // the keys have a padding mask (bias)
  // Q rows (and its columns for the backward), K columns, V rows, the key bias of chunk ch.
  void pack(const LocalDims& d, const Chunk& ch, int64_t off, const T* q, const T* k, const T* v, const bool* vb,
            bool backward) {
    const int64_t dh = d.dh, dhp = up8(dh);
    ldk = ch.ldk;
    pack_rows(q + off, dh, ch.i0, ch.m, ch.ldq, dhp, qr);  // scaled: the products give the scores
    const T sc = static_cast<T>(d.scale);
    for (T& x : qr) x *= sc;
    pack_cols(k + off, dh, ch.j0, ch.n, dhp, ch.ldk, kc);
    // Key bias only with padding (columns past the band are masked by band_row).
    padded = vb != nullptr;
    if (padded) {
      bias.assign(static_cast<size_t>(ch.ldk), -std::numeric_limits<T>::infinity());
      for (int64_t c = 0; c < ch.n; ++c)
        if (vb[ch.j0 + c]) bias[static_cast<size_t>(c)] = T(0);
    }
    if (!backward) {
      pack_rows(v + off, dh, ch.j0, ch.n, ch.ldk, dhp, vr);
    } else {
      pack_cols(q + off, dh, ch.i0, ch.m, dhp, ch.ldq, qc);
      pack_rows(k + off, dh, ch.j0, ch.n, ch.ldk, dhp, kr);
      pack_cols(v + off, dh, ch.j0, ch.n, dhp, ch.ldk, vc);
    }
    s.resize(static_cast<size_t>(kTile * ch.ldk)), g.resize(s.size());
    acc.resize(static_cast<size_t>(kTile * dhp));
  }
  // s = (scale Q) K^T + masks for the tile's rows (rows mp and beyond unused; rows m .. mp zero).
  void scores(const LocalDims& d, const Tile& t) {
    using attn_detail::mm;
    const int64_t dhp = up8(d.dh);
    mm(qr.data() + t.qo * dhp, dhp, kc.data() + t.ko, ldk, s.data(), t.np, t.mp, t.np,
       dhp, false);
    for (int64_t r = 0; r < t.m; ++r) {
      const int64_t i = t.i0 + r;
      band_row(s.data() + r * t.np, t.np, d.lo(i) - t.j0, d.hi(i) - t.j0, padded ? bias.data() + t.ko : nullptr);
    }
    std::fill(s.begin() + t.m * t.np, s.begin() + t.mp * t.np, T(0));
  }
};

}  // namespace local_detail

// q, k, v, o [B, H, T, dh] contiguous; valid [B, T] or null; lse [B, H, T].
template <class T>
void local_attention_forward(const LocalDims& d, const T* q, const T* k, const T* v, const bool* valid, T* o,
                             T* lse) {
  using namespace local_detail;
  using namespace attn_detail;
  const int64_t T_ = d.len, dh = d.dh, dhp = up8(dh), nch = (T_ + kChunk - 1) / kChunk;
  constexpr T ninf = -std::numeric_limits<T>::infinity();
  parallel_for(0, d.B * d.H * nch, 1, [&](int64_t lo_task, int64_t hi_task) {
    Work<T>& w = per_thread<Work<T>>();
    w.mx.resize(static_cast<size_t>(kTile)), w.sum.resize(static_cast<size_t>(kTile));
    for (int64_t task = lo_task; task < hi_task; ++task) {
      const int64_t bh = task / nch, off = bh * T_ * dh;
      const Chunk ch(d, task % nch);
      w.pack(d, ch, off, q, k, v, valid ? valid + (bh / d.H) * T_ : nullptr, false);
      for (int64_t ti = 0; ti * kTile < ch.m; ++ti) {
        const Tile t(d, ch, ti);
        w.scores(d, t);
        for (int64_t r = 0; r < t.m; ++r) {
          T* sr = w.s.data() + r * t.np;
          const T m = row_max(sr, t.np);
          w.mx[static_cast<size_t>(r)] = m;
          if (m == ninf) {
            std::fill_n(sr, t.np, T(0));
            continue;
          }
          w.sum[static_cast<size_t>(r)] = exp_shift(sr, t.np, m);
        }
        mm(w.s.data(), t.np, w.vr.data() + t.ko * dhp, dhp, w.acc.data(), dhp, t.mp, dhp, t.np, false);
        for (int64_t r = 0; r < t.m; ++r) {
          const int64_t i = t.i0 + r;
          T* oi = o + off + i * dh;
          const T m = w.mx[static_cast<size_t>(r)], sm = w.sum[static_cast<size_t>(r)];
          if (m == ninf) {
            std::fill_n(oi, dh, T(0));
            lse[bh * T_ + i] = ninf;
            continue;
          }
          for (int64_t c = 0; c < dh; ++c) oi[c] = w.acc[static_cast<size_t>(r * dhp + c)] / sm;
          lse[bh * T_ + i] = m + std::log(sm);
        }
      }
    }
  });
}

// Gradients of the forward above: dq, dk, dv [B, H, T, dh] (all written).
template <class T>
void local_attention_grad(const LocalDims& d, const T* q, const T* k, const T* v, const bool* valid, const T* o,
                          const T* lse, const T* dout, T* dq, T* dk, T* dv) {
  using namespace local_detail;
  using namespace attn_detail;
  const int64_t T_ = d.len, dh = d.dh, dhp = up8(dh), BH = d.B * d.H, nch = (T_ + kChunk - 1) / kChunk;
  const T scale = static_cast<T>(d.scale);
  constexpr T ninf = -std::numeric_limits<T>::infinity();
  // With several chunks, each task's dK^T and dV^T bands [dhp, ldk] stay here for the sums below.
  int64_t band = 0;
  for (int64_t c = 0; c < nch; ++c) band = std::max(band, dhp * Chunk(d, c).ldk);
  std::vector<T> part(nch > 1 ? static_cast<size_t>(BH * nch * 2 * band) : 0);
  parallel_for(0, BH * nch, 1, [&](int64_t lo_task, int64_t hi_task) {
    Work<T>& w = per_thread<Work<T>>();
    for (int64_t task = lo_task; task < hi_task; ++task) {
      const int64_t bh = task / nch, off = bh * T_ * dh;
      const Chunk ch(d, task % nch);
      w.pack(d, ch, off, q, k, v, valid ? valid + (bh / d.H) * T_ : nullptr, true);
      pack_rows(dout + off, dh, ch.i0, ch.m, ch.ldq, dhp, w.dor);
      pack_cols(dout + off, dh, ch.i0, ch.m, dhp, ch.ldq, w.doc);
      // Per row: -lse (+inf where the row sees no key, so that P = 0 there) and D = dO . O.
      w.lse.resize(static_cast<size_t>(ch.m)), w.dd.resize(static_cast<size_t>(ch.m));
      for (int64_t r = 0; r < ch.m; ++r) {
        const int64_t i = ch.i0 + r;
        w.lse[static_cast<size_t>(r)] = lse[bh * T_ + i];
        T s = 0;
        for (int64_t c = 0; c < dh; ++c) s += dout[off + i * dh + c] * o[off + i * dh + c];
        w.dd[static_cast<size_t>(r)] = s;
      }
      T* dkt = nullptr;
      T* dvt = nullptr;
      if (nch > 1) {
        dkt = part.data() + task * 2 * band, dvt = dkt + band;
        std::fill_n(dkt, 2 * band, T(0));
      } else {
        w.dkt.assign(static_cast<size_t>(band), T(0)), w.dvt.assign(static_cast<size_t>(band), T(0));
        dkt = w.dkt.data(), dvt = w.dvt.data();
      }
      for (int64_t ti = 0; ti * kTile < ch.m; ++ti) {
        const Tile t(d, ch, ti);
        w.scores(d, t);
        mm(w.dor.data() + t.qo * dhp, dhp, w.vc.data() + t.ko, ch.ldk, w.g.data(), t.np, t.mp, t.np, dhp, false);
        for (int64_t r = 0; r < t.mp; ++r) {
          T *sr = w.s.data() + r * t.np, *gr = w.g.data() + r * t.np;
          const T l = r < t.m ? w.lse[static_cast<size_t>(t.qo + r)] : ninf;
          if (l == ninf) {
            std::fill_n(sr, t.np, T(0)), std::fill_n(gr, t.np, T(0));
            continue;
          }
          exp_shift(sr, t.np, l);
          dsoftmax(sr, gr, t.np, w.dd[static_cast<size_t>(t.qo + r)]);
        }
        // dQ = scale dS K; dV^T += dO^T P; dK^T += Q^T dS (unscaled until written).
        mm(w.g.data(), t.np, w.kr.data() + t.ko * dhp, dhp, w.acc.data(), dhp, t.mp, dhp, t.np, false);
        for (int64_t r = 0; r < t.m; ++r)
          for (int64_t c = 0; c < dh; ++c) dq[off + (t.i0 + r) * dh + c] = scale * w.acc[static_cast<size_t>(r * dhp + c)];
        mm(w.doc.data() + t.qo, ch.ldq, w.s.data(), t.np, dvt + t.ko, ch.ldk, dhp, t.np, t.mp, true);
        mm(w.qc.data() + t.qo, ch.ldq, w.g.data(), t.np, dkt + t.ko, ch.ldk, dhp, t.np, t.mp, true);
      }
      if (nch == 1)
        for (int64_t r = 0; r < ch.n; ++r)
          for (int64_t c = 0; c < dh; ++c) {
            dk[off + (ch.j0 + r) * dh + c] = scale * dkt[c * ch.ldk + r];
            dv[off + (ch.j0 + r) * dh + c] = dvt[c * ch.ldk + r];
          }
    }
  });
  if (nch == 1) return;
  // Each key's gradient: the sum over the chunks whose band holds it, in chunk order.
  parallel_for(0, BH * nch, 1, [&](int64_t lo_task, int64_t hi_task) {
    for (int64_t task = lo_task; task < hi_task; ++task) {
      const int64_t bh = task / nch, off = bh * T_ * dh, j_lo = (task % nch) * kChunk;
      const int64_t j_hi = std::min(T_, j_lo + kChunk);
      std::fill(dk + off + j_lo * dh, dk + off + j_hi * dh, T(0));
      std::fill(dv + off + j_lo * dh, dv + off + j_hi * dh, T(0));
      for (int64_t c = 0; c < nch; ++c) {
        const Chunk ch(d, c);
        const int64_t a = std::max(j_lo, ch.j0), b = std::min(j_hi, ch.j0 + ch.n);
        const T* pk = part.data() + (bh * nch + c) * 2 * band;
        const T* pv = pk + band;
        for (int64_t j = a; j < b; ++j)
          for (int64_t e = 0; e < dh; ++e) {
            dk[off + j * dh + e] += pk[e * ch.ldk + (j - ch.j0)];
            dv[off + j * dh + e] += pv[e * ch.ldk + (j - ch.j0)];
          }
      }
      for (int64_t x = off + j_lo * dh; x < off + j_hi * dh; ++x) dk[x] *= scale;
    }
  });
}
// The op list's kernels (hkt/kernels/op_list.hpp's signatures), registered for its CPU dtypes.
using kernels::buf;
template <class T>
void local_attention(const void* q, const void* k, const void* v, const bool* valid, void* o, void* lse, int64_t B,
                     int64_t H, int64_t len, int64_t dh, int64_t w, bool causal, double scale) {
  local_attention_forward<T>({B, H, len, dh, w, causal, scale}, buf<T>(q), buf<T>(k), buf<T>(v), valid, buf<T>(o),
                             buf<T>(lse));
}
template <class T>
void local_attention_backward(const void* q, const void* k, const void* v, const bool* valid, const void* o,
                              const void* lse, const void* g, int64_t B, int64_t H, int64_t len, int64_t dh,
                              int64_t w, bool causal, double scale, void* dq, void* dk, void* dv) {
  local_attention_grad<T>({B, H, len, dh, w, causal, scale}, buf<T>(q), buf<T>(k), buf<T>(v), valid, buf<T>(o),
                          buf<T>(lse), buf<T>(g), buf<T>(dq), buf<T>(dk), buf<T>(dv));
}
HKT_CPU_KERNEL(local_attention)
HKT_CPU_KERNEL(local_attention_backward)

}  // namespace hkt::cpu
