#!/usr/bin/env python3
"""An independent NumPy (float64) reference for H-Transformer-1D attention as
its authors built it (Zhu and Soricut 2021, arXiv 2107.11906; code in
google/flaxformer, flaxformer/architectures/h_transformer/), written from a
reading of that code and sharing no code with it or with hkt.

    /usr/bin/python3 tests/reference/h1d_published.py --self-test
    /usr/bin/python3 tests/reference/h1d_published.py --score-count T Nr [--causal]

It is the target hkt's `htransformer` op is tested against
(tests/reference/check_htransformer.py, CTest reference_numpy_htransformer).
hkt's earlier `htransformer` kept the diagonal block at level 0 and only the
binary-tree sibling block at each coarser level (a HODLR-like layout, 24,064
scores per head at T = 512, Nr = 16); the published layout, which the op now
computes, is block-tridiagonal at every level.

Names below: "the authors" = flaxformer's h_transformer package; h_attention.py
holds HierarchicalAttention / OneDimHierarchicalAttention, token_hierarchy.py
holds TokenHierarchy / OneDimTokenHierarchy, hierarchical_relative_position_
bias.py holds OneDimHierarchicalRelativePositionBias.


THE PUBLISHED ALGORITHM, IN THIS PROJECT'S WORDS
================================================

Inputs per batch element and head: q, k, v of shape [T, dh] (this module takes
[B, H, T, dh]), a block size Nr (the authors' `num_clusters`), an optional
validity mask valid [B, T] (1 = real token, 0 = padding; the authors'
padding_mask, one mask for queries and keys in self-attention), an optional
relative-position bias table, and a logit scale (the authors divide the layer
input by sqrt(dh) before the query projection, `rescale_logits=True`; here the
score is scale * q.k with scale = 1/sqrt(dh) unless given).

1. Geometry (TokenHierarchy.__init__).
   * Nr must be even (the correction mask below halves it).  It is clamped to
     Nr' = min(Nr, T // 2) (T >= 4 in the authors' code; this module also
     takes T = 2).  So T = Nr is legal and means Nr' = T/2.
   * T / Nr' must be a power of two, 2^L with L >= 1.  The authors never pad
     inside the attention; a T that does not fit raises, and the caller (the
     data pipeline) pads the batch to such a length and passes padding_mask.
   * There are L = log2(T / Nr') LEVELS, numbered l = 0 .. L-1 (the authors'
     `num_level`).  Level 0 is the fine sequence; level l is the sequence
     coarsened l times, of length T_l = T / 2^l, cut into nb_l = T_l / Nr'
     blocks of Nr' coarse tokens (`num_block[l]`).  The coarsest level,
     l = L-1, has exactly 2 blocks.  (So there are L-1 coarse levels, not L.)
   * One coarse token at level l stands for a GROUP of 2^l consecutive fine
     tokens: coarse token p <-> fine tokens [p 2^l, (p+1) 2^l).

2. Coarsening (OneDimTokenHierarchy.hierarchical_coarsen, _coarsen_query_or_key,
   _coarsen_value, _coarsen_padding_mask; OneDimTokenCoarsening).
   Each level is made from the one below by combining adjacent PAIRS:
   * K (and Q when not causal): without a mask, the plain pair mean
     (CONST_AVERAGE: sum / 2), so level l holds the mean over the 2^l fine
     tokens.  With a mask: the pair SUM divided by the number of the two
     children that are non-empty (hold at least one valid fine token; 1 when
     neither is).  Non-emptiness is re-binarised at every level, so this is a
     recursive MEAN OF MEANS over non-empty children, not the mean over the
     valid fine tokens (children holding 2 and 1 valid tokens get equal
     weight).  Padded tokens are zero at level 0 (see 7), so they add nothing.
   * Q, causal (decoder self-attention): SAMPLE, the first token of each
     pair, so the coarse query of a group is the fine query of the group's
     first token (which is never later than any query in the group: no leak).
     No mask is used for it.
   * V: the pair SUM (no mask, no division), so level l holds the sum of v
     over the group.
   * Key counts c_l: c_0 = valid (or 1), c_l = pair sum of c_{l-1} = number of
     valid fine keys in the group (`aggregated_padding_mask`).  Without a mask
     the authors use the constant 2^l instead (gen_packed_zero_block_mask with
     use_growth_factor=True), which is the same thing.

3. Blocks (OneDimTokenHierarchy._setup_block_hierarchy, _pack_coarse_qkv,
   _shift_blocks_1d, _gen_zero_block_mask).  At level l, with query block b and
   key block b' (Nr' x Nr' score blocks of coarse tokens):
   * ANCHOR, coordinate 0, only at level 0: b' = b (the diagonal blocks).
   * LEFT, coordinate -1, at EVERY level 0 .. L-1: b' = b - 1 (none for b = 0:
     the authors compute it against a zero block and zero its query block).
   * RIGHT, coordinate +1, at every level, not causal: b' = b + 1 (none for the
     last block).
   So every level is block-tridiagonal (level 0 with its diagonal, levels >= 1
   without it: their diagonal is covered by the finer levels).

4. Scores (HierarchicalAttention._compute_hierarchical_similarity,
   _compute_hierarchical_attention, OneDimHierarchicalAttention.
   _gen_correction_mask, _gen_causal_mask).
   * s = scale * q~_p . k~_r + bias (for coarse query p and coarse key r of the
     level), a = exp(s - m), with m one offset per (batch, head) (mode
     SCAN_ALL, the default: the max over every computed block) that cancels
     in the ratio below.  Softmax temperature (default 1) divides s.
   * CORRECTION MASK, levels >= 1 only (and only when L > 1), with h = Nr'/2:
     in a LEFT block, zero rows [0, h) x columns [h, Nr'): the first half of
     the query block against the second half of the key block; in a RIGHT
     block, zero rows [h, Nr') x columns [0, h).  That quarter is exactly the
     part of the neighbour block that the level below already covers as one of
     ITS neighbour blocks, so the quarter is computed and then zeroed.
   * CAUSAL: the anchor block is multiplied by the lower triangle (key <=
     query, diagonal kept); RIGHT blocks are not computed at all; LEFT blocks
     lie wholly in the past.
   * Resulting partition: pair (i, j) of fine tokens is covered by exactly one
     level, namely the smallest l at which the level-l blocks holding i and j
     are equal or adjacent, |floor(i / (Nr' 2^l)) - floor(j / (Nr' 2^l))| <= 1
     (causal: only j <= i).  At that level the pair's score is shared by the
     2^l x 2^l fine pairs of (query group, key group).  Level 0 holds every
     pair whose blocks of Nr' tokens are equal or adjacent (so at least all
     |i - j| < Nr'), and a pair at level l >= 1 has
     Nr' 2^(l-1) < |i - j| < Nr' 2^(l+1): resolution halves as distance
     doubles, and along a row the group size never decreases going away from
     the diagonal on either side.

5. Normaliser and output (_compute_softmax_partition,
   _multiply_attention_value, OneDimTokenHierarchy.interpolate_cumulative_sum,
   OneDimTokenInterpolation).
   * Per level, numerator rows y_l[p] = sum over the level's blocks of
     a[p, r] * vsum_l[r] and partition rows z_l[p] = sum of a[p, r] * c_l[r]
     (the count of valid fine keys the coarse key stands for).
   * Interpolation back to the fine sequence is piecewise constant (the
     attention module's default: ConvKernelType.CONST with kernel size 2, a
     transposed convolution with kernel [1, 1] that repeats each entry twice
     per level; the LINEAR kernel [0.5, 1, 0.5] exists as an option, and is
     TokenHierarchy's own default, but HierarchicalAttention passes CONST):
     Y[i] = sum_l y_l[i >> l], Z[i] = sum_l z_l[i >> l].
   * ONE shared normaliser: out[i] = Y[i] / Z[i].  Equivalently (what
     dense_weights builds): the T x T matrix W[i, j] = valid[j] exp(s_level(i,j)
     (group(i), group(j))) / sum_j' (same), and out = W (valid * v): a softmax
     over the partition in which every fine key of a coarse group counts once.
   * The authors set Z to 1 at padded queries and wherever Z <= 1e-6 (to avoid
     NaN), and multiply the output by the query mask: a padded query, and a
     query with no valid key, gives 0.  This module sets Z to 1 where it is
     exactly 0 (float64; the 1e-6 floor would only matter for float32 under
     their offset) and multiplies by the mask.
   * Dropout (not modelled) multiplies the attention after Z is formed.

6. Hierarchical relative-position bias (HierarchicalRelativePositionBias.
   _create_1d_relative_position_bias, OneDimHierarchicalRelativePositionBias;
   use_rpb=True and use_multihead_rpb=True by default).
   * Parameters: a table of 4 Nr' - 1 scalars per head (shape [4 Nr' - 1, H];
     [4 Nr' - 1, 1] shared over heads when use_multihead_rpb=False),
     initialised N(0, 0.1^2).  This module takes it as [H, 4 Nr' - 1] or
     [4 Nr' - 1].
   * Indexing: in a block at coordinate c in {-1, 0, +1} (LEFT, ANCHOR, RIGHT)
     with query row a and key column b (0 <= a, b < Nr'), the entry is
     table[c Nr' + b - a + 2 Nr' - 1], i.e. table[(r - p) + 2 Nr' - 1] with
     r - p the signed distance, in coarse tokens of that level, from the
     coarse query to the coarse key (|r - p| <= 2 Nr' - 1).  The SAME table is
     used at every level (distance is measured in that level's units), added
     to the score before exp, and is untouched by the 1/sqrt(dh) scaling.  (The
     authors multiply the neighbour-block bias by the block mask that zeroes
     the non-existent boundary blocks; that changes nothing they use.)

7. Padding, exactly (HierarchicalAttention.__call__ and the functions above).
   * The authors multiply the layer INPUT by the mask before the q/k/v
     projections.  Their projections have a bias (initialised to 0), so after
     training a padded token's q, k, v equal the projection bias, not 0, and
     the padded v (and, through the pair sums, padded q/k) leak into coarse
     groups that hold valid tokens.  This module models the intended
     behaviour, which is also theirs whenever the projection bias is 0: q, k,
     v are multiplied by the mask first.
   * The key mask enters the normaliser only through the counts c_l and the
     numerator only through v = 0; scores of padded keys are not masked (their
     exp multiplies 0).  The query mask sets the coarse-query denominators
     (bidirectional) and zeroes padded outputs.
   * Causal with padding: the coarse query is the first token of its group
     even when that token is padding.

Cost: per head, level 0 computes its Nr' x Nr' anchor blocks and every level
its real neighbour blocks: score_count() below.  At T = 512, Nr = 16 that is
32 anchor + 2 (31 + 15 + 7 + 3 + 1) neighbour blocks of 256 = 37,376 scores
(the correction-masked quarters included: they are computed, then zeroed).
The authors' packed arrays also hold the zero boundary blocks, 39,936 entries;
the scores that survive the masks number 34,048.  Causal: 22,784 / 24,064 /
17,280.  O(T Nr) in all cases (sum_l nb_l < 2 nb_0).

Checked against the authors' own golden case (h_attention_test.py,
test_self_attention_output: T = 8, Nr = 2, q = k = v = x, their hand-computed
hierarchical similarity matrix), see _golden_check.
"""
import sys

import numpy as np


# ---------------------------------------------------------------------------
# geometry
# ---------------------------------------------------------------------------

def geometry(T, Nr):
    """(Nr', L): the effective block size (Nr clamped to T // 2, as the authors
    do) and the number of levels L = log2(T / Nr').  Raises ValueError for a
    shape the authors reject."""
    T, Nr = int(T), int(Nr)
    if T < 2:
        raise ValueError(f"T must be >= 2, got {T}")
    if Nr < 1:
        raise ValueError(f"Nr must be >= 1, got {Nr}")
    nr = min(Nr, T // 2)
    nb = T // nr
    if nb * nr != T:
        raise ValueError(f"T = {T} is not a multiple of Nr' = {nr}")
    L = nb.bit_length() - 1
    if (1 << L) != nb or L < 1:
        raise ValueError(f"T / Nr' = {nb} must be a power of two >= 2")
    if L >= 2 and nr % 2 != 0:
        raise ValueError(f"Nr' = {nr} must be even when there are {L} >= 2 levels")
    return nr, L


def _bias_table(bias, H, nr):
    """bias as [H, 4 nr - 1] float64 (None -> zeros)."""
    n = 4 * nr - 1
    if bias is None:
        return np.zeros((H, n))
    b = np.asarray(bias, dtype=np.float64)
    if b.ndim == 1:
        b = np.broadcast_to(b[None, :], (H, b.shape[0]))
    if b.shape != (H, n):
        raise ValueError(f"bias must be [{n}] or [{H}, {n}] (4 Nr' - 1 = {n}), got {b.shape}")
    return b


def bias_index(nr, c):
    """[nr, nr] indices into the bias table for the block at coordinate c
    (-1 LEFT, 0 ANCHOR, +1 RIGHT), row a = query, column b = key:
    c nr + b - a + 2 nr - 1 (the signed coarse distance key - query, shifted
    to start at 0)."""
    a = np.arange(nr)
    return c * nr + a[None, :] - a[:, None] + 2 * nr - 1


def _prep(q, k, v, valid, scale):
    q = np.asarray(q, dtype=np.float64)
    k = np.asarray(k, dtype=np.float64)
    v = np.asarray(v, dtype=np.float64)
    if q.ndim != 4 or k.shape != q.shape or v.shape[:3] != q.shape[:3]:
        raise ValueError("q, k must be [B, H, T, dh] and v [B, H, T, dv]")
    B, H, T, dh = q.shape
    if valid is None:
        vm = np.ones((B, T))
    else:
        vm = np.asarray(valid).astype(np.float64)
        if vm.shape != (B, T):
            raise ValueError(f"valid must be [B, T] = [{B}, {T}], got {vm.shape}")
        vm = (vm != 0).astype(np.float64)
    if scale is None:
        scale = 1.0 / np.sqrt(dh)
    m4 = vm[:, None, :, None]
    return q * m4, k * m4, v * m4, vm, float(scale), valid is not None


# ---------------------------------------------------------------------------
# 1. the partition and the implied dense matrix
# ---------------------------------------------------------------------------

def _level_cover(T, nr, l, causal):
    """Boolean [T_l, T_l]: the coarse (query, key) cells the level-l blocks
    compute and keep, built block by block from the published layout."""
    Tl = T >> l
    nb = Tl // nr
    h = nr // 2
    C = np.zeros((Tl, Tl), dtype=bool)
    full = np.ones((nr, nr), dtype=bool)
    anchor = np.tril(full) if causal else full
    left = full.copy()
    right = full.copy()
    if l >= 1:
        left[:h, h:] = False      # correction mask, LEFT block
        right[h:, :h] = False     # correction mask, RIGHT block
    for b in range(nb):
        rows = slice(b * nr, (b + 1) * nr)
        if l == 0:
            C[rows, b * nr:(b + 1) * nr] |= anchor
        if b >= 1:
            C[rows, (b - 1) * nr:b * nr] |= left
        if b + 1 < nb and not causal:
            C[rows, (b + 1) * nr:(b + 2) * nr] |= right
    return C


def partition(T, Nr, causal=False):
    """The published partition of the T x T score matrix.

    Returns a dict:
      level   int [T, T]: the level covering (query i, key j), -1 if none
              (causal j > i);
      qgroup  int [T, T]: number of fine queries sharing that score (2^level;
              the query group is averaged over, or, causal, represented by its
              first token); 0 where uncovered;
      kgroup  int [T, T]: number of fine keys the coarse key stands for
              (2^level), 0 where uncovered;
      cover   int [T, T]: how many (level, block) cells cover the pair (the
              published layout makes it exactly 1 on the covered set);
      nr, L   the effective block size and the number of levels.
    """
    nr, L = geometry(T, Nr)
    cover = np.zeros((T, T), dtype=np.int64)
    level = np.full((T, T), -1, dtype=np.int64)
    for l in range(L):
        g = 1 << l
        C = np.kron(_level_cover(T, nr, l, causal).astype(np.int64), np.ones((g, g), dtype=np.int64))
        cover += C
        level[C > 0] = l
    grp = np.where(level >= 0, 1 << np.maximum(level, 0), 0)
    return {"level": level, "qgroup": grp.copy(), "kgroup": grp.copy(), "cover": cover, "nr": nr, "L": L}


def _dense_coarse(x, vm, l, how):
    """Coarse level-l table of x [B, H, T, d] written directly per group (the
    dense path's own coarsening): 'mean' = recursive pair mean over non-empty
    children (plain mean without a mask), 'first' = first token of the group."""
    B, H, T, d = x.shape
    g = 1 << l
    if how == "first":
        return x[:, :, ::g, :]
    xs = x.reshape(B, H, T // g, g, d)
    ne = vm.reshape(B, T // g, g)
    width = g
    while width > 1:
        xs = xs.reshape(B, H, T // g, width // 2, 2, d)
        ne = ne.reshape(B, T // g, width // 2, 2)
        n = ne.sum(-1)
        xs = xs.sum(-2) / np.where(n > 0, n, 1.0)[:, None, :, :, None]
        ne = (n > 0).astype(np.float64)
        width //= 2
    return xs[:, :, :, 0, :]


def dense_weights(q, k, Nr, causal=False, valid=None, bias=None, scale=None):
    """The dense T x T attention matrix [B, H, T, T] the hierarchical attention
    implies: W[i, j] = valid[j] exp(s(i, j)) / sum_j' valid[j'] exp(s(i, j')),
    where on the partition s(i, j) = scale * q~ . k~ + bias for the coarse
    query and key of (i, j) at the level covering it, 0 off the partition
    (causal j > i), and every row of a padded query (or without a valid key)
    is 0."""
    q, k, _, vm, scale, _ = _prep(q, k, k, valid, scale)
    B, H, T, dh = q.shape
    part = partition(T, Nr, causal)
    nr, L, level = part["nr"], part["L"], part["level"]
    table = _bias_table(bias, H, nr)
    S = np.zeros((B, H, T, T))
    idx = np.arange(T)
    for l in range(L):
        at = level == l
        if not at.any():
            continue
        qc = _dense_coarse(q, vm, l, "first" if causal else "mean")
        kc = _dense_coarse(k, vm, l, "mean")
        s = scale * np.einsum("bhpd,bhrd->bhpr", qc, kc)
        s = np.repeat(np.repeat(s, 1 << l, axis=2), 1 << l, axis=3)
        rel = (idx[None, :] >> l) - (idx[:, None] >> l)                 # r - p
        bl = table[:, np.clip(rel + 2 * nr - 1, 0, 4 * nr - 2)]          # [H, T, T]
        S = np.where(at[None, None], s + bl[None], S)
    keep = (level >= 0)[None, None] & (vm[:, None, None, :] > 0)
    m = np.where(keep, S, -np.inf).max(axis=(2, 3), keepdims=True)
    m = np.where(np.isfinite(m), m, 0.0)
    E = np.where(keep, np.exp(S - m), 0.0)
    Z = E.sum(-1, keepdims=True)
    W = E / np.where(Z > 0, Z, 1.0)
    return W * vm[:, None, :, None]


def h1d_attention_dense(q, k, v, Nr, causal=False, valid=None, bias=None, scale=None):
    """The output from dense_weights: W @ (valid * v)."""
    W = dense_weights(q, k, Nr, causal, valid, bias, scale)
    _, _, v, _, _, _ = _prep(q, k, v, valid, scale)
    return W @ v


# ---------------------------------------------------------------------------
# 2. the hierarchical computation, the published way
# ---------------------------------------------------------------------------

def _coarsen(x, vm, L, how):
    """[x_0 .. x_{L-1}], level l of shape [B, H, T >> l, d], by pairs:
    'mean' (masked pair mean over non-empty children), 'first', 'sum'."""
    out = [x]
    ne = vm
    for _ in range(1, L):
        p = out[-1]
        B, H, Tp, d = p.shape
        pairs = p.reshape(B, H, Tp // 2, 2, d)
        if how == "first":
            out.append(pairs[:, :, :, 0, :])
        elif how == "sum":
            out.append(pairs.sum(3))
        else:
            n = ne.reshape(B, Tp // 2, 2).sum(-1)
            out.append(pairs.sum(3) / np.where(n > 0, n, 1.0)[:, None, :, None])
            ne = (n > 0).astype(np.float64)
    return out


def h1d_attention(q, k, v, Nr, causal=False, valid=None, bias=None, scale=None):
    """H-Transformer-1D attention for q, k [B, H, T, dh], v [B, H, T, dv]:
    per-level coarsening, block-tridiagonal scores with the correction mask,
    one shared normaliser, piecewise-constant interpolation.  O(T Nr) per head.
    valid [B, T] (nonzero = real token), bias [H, 4 Nr' - 1] or [4 Nr' - 1],
    scale defaults to 1/sqrt(dh).  Returns [B, H, T, dv]."""
    q, k, v, vm, scale, _ = _prep(q, k, v, valid, scale)
    B, H, T, dh = q.shape
    dv = v.shape[-1]
    nr, L = geometry(T, Nr)
    h = nr // 2
    table = _bias_table(bias, H, nr)

    def bias_block(c):
        return table[:, bias_index(nr, c)][None, :, None]   # [1, H, 1, nr, nr]

    qs = _coarsen(q, vm, L, "first" if causal else "mean")
    ks = _coarsen(k, vm, L, "mean")
    vs = _coarsen(v, vm, L, "sum")
    cs = _coarsen(vm[:, None, :, None], vm, L, "sum")      # valid-key counts, [B, 1, T_l, 1]

    full = np.ones((nr, nr), dtype=bool)
    lmask = full.copy()
    lmask[:h, h:] = False
    rmask = full.copy()
    rmask[h:, :h] = False

    # blocks: (level, query-block slice, key-block slice, score [B,H,n,nr,nr], keep mask)
    blocks = []
    for l in range(L):
        nb = (T >> l) // nr
        qb = qs[l].reshape(B, H, nb, nr, dh)
        kb = ks[l].reshape(B, H, nb, nr, dh)
        cb = cs[l].reshape(B, 1, nb, nr)
        todo = []
        if l == 0:
            todo.append((0, slice(0, nb), slice(0, nb), np.tril(full) if causal else full))
        todo.append((-1, slice(1, nb), slice(0, nb - 1), lmask if l >= 1 else full))
        if not causal:
            todo.append((1, slice(0, nb - 1), slice(1, nb), rmask if l >= 1 else full))
        for c, qsl, ksl, mask in todo:
            s = scale * np.einsum("bhnad,bhnkd->bhnak", qb[:, :, qsl], kb[:, :, ksl]) + bias_block(c)
            keep = mask[None, None, None] & (cb[:, :, ksl] > 0)[:, :, :, None, :]
            blocks.append((l, qsl, ksl, s, keep))

    # one offset per (batch, head): the max over the kept scores; it cancels
    m = np.full((B, H), -np.inf)
    for _, _, _, s, keep in blocks:
        if s.size:
            m = np.maximum(m, np.where(keep, s, -np.inf).max(axis=(2, 3, 4)))
    m = np.where(np.isfinite(m), m, 0.0)[:, :, None, None, None]

    Y = np.zeros((B, H, T, dv))
    Z = np.zeros((B, H, T, 1))
    for l in range(L):
        nb = (T >> l) // nr
        vb = vs[l].reshape(B, H, nb, nr, dv)
        cb = cs[l].reshape(B, 1, nb, nr)
        y = np.zeros((B, H, nb, nr, dv))
        z = np.zeros((B, H, nb, nr))
        for lv, qsl, ksl, s, keep in blocks:
            if lv != l:
                continue
            a = np.where(keep, np.exp(s - m), 0.0)
            y[:, :, qsl] += np.einsum("bhnak,bhnkd->bhnad", a, vb[:, :, ksl])
            z[:, :, qsl] += np.einsum("bhnak,bhnk->bhna", a, np.broadcast_to(cb[:, :, ksl], (B, H) + cb[:, :, ksl].shape[2:]))
        # piecewise-constant interpolation: each coarse row repeated 2^l times
        Y += np.repeat(y.reshape(B, H, T >> l, dv), 1 << l, axis=2)
        Z += np.repeat(z.reshape(B, H, T >> l, 1), 1 << l, axis=2)
    out = Y / np.where(Z > 0, Z, 1.0)
    return out * vm[:, None, :, None]


# ---------------------------------------------------------------------------
# 3. the score count
# ---------------------------------------------------------------------------

def score_count(T, Nr, causal=False, kind="computed"):
    """Scores per head of the published layout.

    kind='computed' (default): entries of the Nr' x Nr' blocks with a real key
      block: nb_0 anchor blocks plus, at every level, nb_l - 1 LEFT (and, not
      causal, nb_l - 1 RIGHT) blocks, correction-masked quarters included
      (computed, then zeroed): 37,376 at T = 512, Nr = 16.
    kind='materialised': what the authors' packed arrays hold, with the zero
      boundary blocks (nb_l LEFT/RIGHT blocks per level): 39,936.
    kind='kept': the scores left after the correction and causal masks, one per
      cell of the partition: 34,048."""
    nr, L = geometry(T, Nr)
    nbs = [(T >> l) // nr for l in range(L)]
    sides = 1 if causal else 2
    sq = nr * nr
    if kind == "computed":
        return nbs[0] * sq + sides * sum(n - 1 for n in nbs) * sq
    if kind == "materialised":
        return nbs[0] * sq + sides * sum(nbs) * sq
    if kind == "kept":
        anchor = nbs[0] * (nr * (nr + 1) // 2 if causal else sq)
        neigh = sum((n - 1) * (sq if l == 0 else sq - (nr // 2) ** 2) for l, n in enumerate(nbs))
        return anchor + sides * neigh
    raise ValueError(f"kind must be computed, materialised or kept, got {kind!r}")


# ---------------------------------------------------------------------------
# 4. self-test
# ---------------------------------------------------------------------------

class CheckFailed(Exception):
    pass


def _check(cond, name):
    if not cond:
        raise CheckFailed(name)


def _golden_check():
    """The authors' hand-computed case (h_attention_test.py,
    test_self_attention_output): T = 8, Nr = 2, q = k = v = x (2 features, one
    head, no projections, no bias), scores without the 1/sqrt(2) scale."""
    x = np.array([[0.08482573, 0.29561728, 0.33432317, 0.6481298, -0.7824855, 0.6298023, -0.3278767, -1.6607414],
                  [1.9097669, 1.1209449, -0.8260815, 1.0434877, -0.453946, 0.8152592, -1.1234418, 0.2729053]]).T
    upper = [  # their similarity matrix, upper triangle row by row (it is symmetric)
        [3.654405017, 2.165819418, -1.549263898, 2.047796353, 0.2592372306, 0.2592372306, -0.8335717156, -0.8335717156],
        [1.343907045, -0.8271601383, 1.361290584, 0.2592372306, 0.2592372306, -0.8335717156, -0.8335717156],
        [0.7941826266, -0.6453210751, 0.1133933598, -0.4629130414, -0.5346589167, -0.5346589167],
        [1.508938818, -0.9808392381, 1.258906586, -0.5346589167, -0.5346589167],
        [0.8183505286, -0.8628948204, 0.7665406749, 1.175621795],
        [1.0612985, -1.122393763, -0.8234501969],
        [1.369624608, 0.2379251883],
        [2.8325393]]
    s_ref = np.zeros((8, 8))
    for i, row in enumerate(upper):
        s_ref[i, i:] = row
    s_ref = np.triu(s_ref) + np.triu(s_ref, 1).T
    X = x[None, None]
    # the implied score matrix: log of the unnormalised dense weights, scale 1
    W = dense_weights(X, X, 2, scale=1.0)[0, 0]
    s = np.log(W)
    s = s - s[:, :1] + s_ref[:, :1]          # undo the per-row normalisation
    _check(np.abs(s - s_ref).max() < 1e-7, "golden: the authors' hand-computed similarity matrix (T=8, Nr=2)")
    e = np.exp(s_ref / np.sqrt(2))
    target = (e / e.sum(1, keepdims=True)) @ x
    for valid in (None, np.ones((1, 8))):
        out = h1d_attention(X, X, X, 2, valid=valid)[0, 0]
        _check(np.abs(out - target).max() < 1e-7, "golden: the authors' target output (T=8, Nr=2)")


def self_test():
    rng = np.random.default_rng(20210725)
    n = 0

    # partition: exactly-once coverage, the closed form, group sizes, monotonicity
    for T, Nr in [(4, 2), (8, 2), (16, 4), (32, 4), (64, 8), (128, 8), (256, 16), (512, 16), (16, 16), (64, 4)]:
        for causal in (False, True):
            P = partition(T, Nr, causal)
            nr, L, lev, cov = P["nr"], P["L"], P["level"], P["cover"]
            i = np.arange(T)[:, None]
            j = np.arange(T)[None, :]
            allowed = (j <= i) if causal else np.ones((T, T), dtype=bool)
            tag = f"T={T} Nr={Nr} causal={causal}"
            _check(np.array_equal(cov, allowed.astype(np.int64)),
                   f"partition: every (i, j) covered by exactly one level ({tag})")
            # closed form: the smallest level whose blocks of i and j are equal or adjacent
            closed = np.full((T, T), -1)
            for l in range(L - 1, -1, -1):
                near = np.abs(i // (nr << l) - j // (nr << l)) <= 1
                closed = np.where(near, l, closed)
            _check(np.array_equal(np.where(allowed, closed, -1), lev),
                   f"partition: level = smallest l with adjacent level-l blocks ({tag})")
            g = P["qgroup"]
            _check(np.array_equal(g, P["kgroup"]) and np.array_equal(g[allowed], 1 << lev[allowed]),
                   f"partition: group sizes 2^level ({tag})")
            d = np.abs(i - j)
            _check(np.all(g[(d < nr) & allowed] == 1), f"partition: group size 1 for |i - j| < Nr ({tag})")
            hi = (lev >= 1) & allowed
            _check(np.all(d[hi] > (nr << (lev[hi] - 1))) and np.all(d[hi] < (nr << (lev[hi] + 1))),
                   f"partition: level l >= 1 only at Nr 2^(l-1) < |i-j| < Nr 2^(l+1) ({tag})")
            for r in range(T):
                right = g[r, r:]
                left = g[r, :r + 1][::-1]
                ok = np.all(np.diff(left) >= 0) and (causal or np.all(np.diff(right) >= 0))
                _check(ok, f"partition: group size non-decreasing with |i - j| along row {r} ({tag})")
            # the partition accounts for the kept score count
            cells = (allowed / np.maximum(g, 1) ** 2).sum()
            _check(abs(cells - score_count(T, Nr, causal, "kept")) < 1e-9,
                   f"score_count: kept count = cells of the partition ({tag})")
            n += 1

    # the score count
    _check(score_count(512, 16) == 37376, "score_count(512, 16) == 37,376")
    _check(score_count(512, 16, kind="materialised") == 39936, "score_count materialised (512, 16) == 39,936")
    _check(score_count(512, 16, kind="kept") == 34048, "score_count kept (512, 16) == 34,048")
    _check(score_count(512, 16, causal=True) == 22784, "score_count causal (512, 16) == 22,784")

    _golden_check()

    # the bias layout, rebuilt the way the authors describe it: keys at
    # coordinates 0 .. 3 Nr - 1 (LEFT, ANCHOR, RIGHT blocks), the query block at
    # Nr .. 2 Nr - 1, index = (key - query) - min(key - query), split by key block
    for nr in (1, 2, 4, 16):
        rel = np.arange(3 * nr)[None, :] - np.arange(nr, 2 * nr)[:, None]
        rel = rel - rel.min()
        _check(rel.max() + 1 == 4 * nr - 1, f"bias: table of 4 Nr - 1 entries (Nr={nr})")
        for c in (-1, 0, 1):
            _check(np.array_equal(bias_index(nr, c), rel[:, (c + 1) * nr:(c + 2) * nr]),
                   f"bias: index layout of block {c} (Nr={nr})")

    # hierarchical == dense over the partition
    shapes = [(4, 2, 1, 1, 3), (8, 2, 2, 3, 4), (16, 4, 2, 2, 5), (32, 4, 1, 2, 8), (64, 8, 2, 1, 6),
              (128, 16, 1, 2, 4), (64, 4, 1, 1, 3), (16, 16, 2, 2, 4)]
    for T, Nr, B, H, dh in shapes:
        nr, _ = geometry(T, Nr)
        for causal in (False, True):
            for mask_kind in ("none", "right", "random"):
                for use_bias in (False, True):
                    q = rng.standard_normal((B, H, T, dh)) * 1.5
                    k = rng.standard_normal((B, H, T, dh)) * 1.5
                    v = rng.standard_normal((B, H, T, dh + 1))
                    if mask_kind == "none":
                        valid = None
                    elif mask_kind == "right":
                        lens = rng.integers(1, T + 1, size=B)
                        valid = np.arange(T)[None, :] < lens[:, None]
                    else:
                        valid = rng.random((B, T)) < 0.6
                    bias = rng.normal(0, 0.1, size=(H, 4 * nr - 1)) if use_bias else None
                    a = h1d_attention(q, k, v, Nr, causal, valid, bias)
                    b = h1d_attention_dense(q, k, v, Nr, causal, valid, bias)
                    tag = f"T={T} Nr={Nr} B={B} H={H} dh={dh} causal={causal} mask={mask_kind} bias={use_bias}"
                    _check(np.all(np.isfinite(a)), f"h1d_attention finite ({tag})")
                    _check(np.abs(a - b).max() <= 1e-10, f"h1d_attention == h1d_attention_dense to 1e-10 ({tag})")
                    if valid is not None:
                        _check(np.all(a[~np.broadcast_to(valid[:, None, :], (B, H, T))] == 0),
                               f"padded queries give 0 ({tag})")
                    n += 1
        # an all-ones mask is the same as no mask
        q, k, v = (rng.standard_normal((1, 2, T, 4)) for _ in range(3))
        for causal in (False, True):
            _check(np.abs(h1d_attention(q, k, v, Nr, causal, np.ones((1, T)))
                          - h1d_attention(q, k, v, Nr, causal)).max() < 1e-13,
                   f"all-valid mask == no mask (T={T} Nr={Nr} causal={causal})")

    # causal: no leak
    for T, Nr in [(16, 2), (64, 4), (128, 8)]:
        nr, _ = geometry(T, Nr)
        W = dense_weights(rng.standard_normal((1, 1, T, 4)), rng.standard_normal((1, 1, T, 4)), Nr, True)
        _check(np.all(np.triu(W[0, 0], 1) == 0), f"causal: dense weights are 0 for j > i (T={T} Nr={Nr})")
        q, k, v = (rng.standard_normal((2, 2, T, 4)) for _ in range(3))
        bias = rng.normal(0, 0.1, size=(2, 4 * nr - 1))
        valid = rng.random((2, T)) < 0.8
        base = h1d_attention(q, k, v, Nr, True, valid, bias)
        for i in list(range(0, T, max(1, T // 16))) + [T - 2]:
            k2, v2, q2 = k.copy(), v.copy(), q.copy()
            k2[:, :, i + 1:] = rng.standard_normal(k2[:, :, i + 1:].shape) * 3
            v2[:, :, i + 1:] = rng.standard_normal(v2[:, :, i + 1:].shape) * 3
            q2[:, :, i + 1:] = rng.standard_normal(q2[:, :, i + 1:].shape) * 3
            val2 = valid.copy()
            val2[:, i + 1:] = rng.random((2, T - i - 1)) < 0.5
            out = h1d_attention(q2, k2, v2, Nr, True, val2, bias)
            # exact in exact arithmetic; the shared exp offset may move by rounding only
            _check(np.abs(out[:, :, :i + 1] - base[:, :, :i + 1]).max() < 1e-12,
                   f"causal: changing q/k/v/valid at positions > {i} changes no output <= {i} (T={T} Nr={Nr})")
        n += 1

    # fully padded rows: 0, not NaN
    for causal in (False, True):
        T, Nr = 32, 4
        q, k, v = (rng.standard_normal((2, 2, T, 4)) for _ in range(3))
        valid = np.ones((2, T), dtype=bool)
        valid[1] = False
        valid[0, 5:] = False
        a = h1d_attention(q, k, v, Nr, causal, valid)
        b = h1d_attention_dense(q, k, v, Nr, causal, valid)
        _check(np.all(np.isfinite(a)) and np.all(a[1] == 0) and np.all(a[0, :, 5:] == 0),
               f"a fully padded sequence / padded rows give 0, not NaN (causal={causal})")
        _check(np.all(np.isfinite(b)) and np.abs(a - b).max() <= 1e-10, f"dense agrees on padded rows (causal={causal})")
        n += 1

    # K = 0 (T = Nr) and T = 2 Nr: exact softmax attention
    for T, Nr in [(4, 4), (8, 8), (16, 16), (8, 4), (32, 16)]:
        for causal in (False, True):
            for masked in (False, True):
                B, H, dh = 2, 2, 5
                q, k, v = (rng.standard_normal((B, H, T, dh)) for _ in range(3))
                valid = (rng.random((B, T)) < 0.7) if masked else None
                vm = np.ones((B, T), dtype=bool) if valid is None else valid
                s = np.einsum("bhid,bhjd->bhij", q, k) / np.sqrt(dh)
                ok = np.broadcast_to(vm[:, None, None, :], s.shape)
                if causal:
                    ok = ok & np.tril(np.ones((T, T), dtype=bool))
                e = np.where(ok, np.exp(s - s.max()), 0.0)
                zz = e.sum(-1, keepdims=True)
                ref = (e / np.where(zz > 0, zz, 1.0)) @ v * vm[:, None, :, None]
                a = h1d_attention(q, k, v, Nr, causal, valid)
                _check(np.abs(a - ref).max() <= 1e-12,
                       f"T={T} Nr={Nr}: exact softmax attention (causal={causal}, masked={masked})")
                n += 1
    return n


def main(argv):
    if len(argv) >= 2 and argv[1] == "--self-test":
        try:
            n = self_test()
        except CheckFailed as e:
            print(f"h1d_published self-test FAILED: {e}", file=sys.stderr)
            return 1
        print(f"h1d_published self-test: ok ({n} groups of checks)")
        return 0
    if len(argv) >= 4 and argv[1] == "--score-count":
        causal = "--causal" in argv[4:]
        T, Nr = int(argv[2]), int(argv[3])
        for kind in ("computed", "materialised", "kept"):
            print(f"{kind}: {score_count(T, Nr, causal, kind)}")
        return 0
    print(__doc__.split("\n\n")[1], file=sys.stderr)
    return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv))
