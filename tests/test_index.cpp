// cat, stack, index_select, embedding, gather, where, masked_fill: forward
// values, float64 gradchecks (broadcast and non-contiguous inputs), errors.
#include <doctest/doctest.h>

#include <string>
#include <vector>

#include "hkt/core/grad_mode.hpp"
#include "hkt/ops/elementwise.hpp"
#include "hkt/ops/factory.hpp"
#include "hkt/ops/gradcheck.hpp"
#include "hkt/ops/index.hpp"
#include "hkt/ops/reduce.hpp"
#include "hkt/ops/view.hpp"
#include "helpers/check.hpp"

using namespace hkt;
using hkt::test::error_of;

namespace {

using VD = std::vector<double>;
using VF = std::vector<float>;
using VI = std::vector<int64_t>;

Tensor D(const VD& v, const Shape& s) { return from_vector(v, s); }
Tensor I(const VI& v, const Shape& s) { return from_vector(v, s); }
Tensor B(const VI& v, const Shape& s) { return from_vector(v, s, {DType::Bool}); }
Tensor rnd(const Shape& s) { return randn(s, {DType::Float64}); }
Tensor leaf(const Shape& s) { return rnd(s).set_requires_grad(true); }
// A non-contiguous float64 leaf of shape [a, b] (the transpose of a [b, a] tensor).
Tensor leaf_t(int64_t a, int64_t b) { return transpose(rnd({b, a}), 0, 1).detach().set_requires_grad(true); }

VD vals(const Tensor& t) { return to_dtype(t, DType::Float64).to_vector<double>(); }
VI ivals(const Tensor& t) { return to_dtype(t, DType::Int64).to_vector<int64_t>(); }

}  // namespace

// --- forward values ------------------------------------------------------------------

TEST_CASE("cat: values along dims 0, 1 and -1, non-contiguous input") {
  Tensor a = D({1, 2, 3, 4, 5, 6}, {2, 3});
  Tensor b = D({7, 8, 9}, {1, 3});
  Tensor c0 = cat({a, b}, 0);
  CHECK(c0.shape() == Shape{3, 3});
  CHECK(vals(c0) == VD{1, 2, 3, 4, 5, 6, 7, 8, 9});

  Tensor e = D({10, 20}, {2, 1});
  Tensor c1 = cat({a, e, a}, -1);
  CHECK(c1.shape() == Shape{2, 7});
  CHECK(vals(c1) == VD{1, 2, 3, 10, 1, 2, 3, 4, 5, 6, 20, 4, 5, 6});

  Tensor at = transpose(D({1, 2, 3, 4, 5, 6}, {3, 2}), 0, 1);  // [[1,3,5],[2,4,6]]
  CHECK(vals(cat({at, a}, 1)) == VD{1, 3, 5, 1, 2, 3, 2, 4, 6, 4, 5, 6});

  // float32, int64 and bool data.
  CHECK(vals(cat({from_vector(VF{1, 2}, {2}), from_vector(VF{3}, {1})})) == VD{1, 2, 3});
  Tensor ci = cat({I({1, 2}, {2}), I({3}, {1})});
  CHECK(ci.dtype() == DType::Int64);
  CHECK(ci.to_vector<int64_t>() == VI{1, 2, 3});
  Tensor cb = cat({B({1, 0}, {2}), B({1}, {1})});
  CHECK(cb.dtype() == DType::Bool);
  CHECK(ivals(cb) == VI{1, 0, 1});
  // an empty piece
  CHECK(vals(cat({a, zeros({0, 3}, {DType::Float64})})) == vals(a));
}

TEST_CASE("stack: values at dims 0, 1 and -1") {
  Tensor a = D({1, 2, 3, 4}, {2, 2});
  Tensor b = D({5, 6, 7, 8}, {2, 2});
  Tensor s0 = stack({a, b});
  CHECK(s0.shape() == Shape{2, 2, 2});
  CHECK(vals(s0) == VD{1, 2, 3, 4, 5, 6, 7, 8});
  Tensor s1 = stack({a, b}, 1);
  CHECK(s1.shape() == Shape{2, 2, 2});
  CHECK(vals(s1) == VD{1, 2, 5, 6, 3, 4, 7, 8});
  Tensor s2 = stack({a, b}, -1);
  CHECK(s2.shape() == Shape{2, 2, 2});
  CHECK(vals(s2) == VD{1, 5, 2, 6, 3, 7, 4, 8});
  // 0-dim tensors stack into a vector
  Tensor v = stack({scalar_tensor(1, DType::Int64), scalar_tensor(2, DType::Int64), scalar_tensor(3, DType::Int64)});
  CHECK(v.shape() == Shape{3});
  CHECK(v.to_vector<int64_t>() == VI{1, 2, 3});
  // non-contiguous input
  CHECK(vals(stack({transpose(a, 0, 1), b}, 0)) == VD{1, 3, 2, 4, 5, 6, 7, 8});
}

TEST_CASE("index_select: values, repeated indices, negative dim, non-contiguous") {
  Tensor x = D({1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12}, {3, 4});
  Tensor r = index_select(x, 0, I({2, 0, 2}, {3}));
  CHECK(r.shape() == Shape{3, 4});
  CHECK(vals(r) == VD{9, 10, 11, 12, 1, 2, 3, 4, 9, 10, 11, 12});
  Tensor c = index_select(x, -1, I({3, 1}, {2}));
  CHECK(c.shape() == Shape{3, 2});
  CHECK(vals(c) == VD{4, 2, 8, 6, 12, 10});
  // transposed x: xt[i][j] = x[j][i]
  Tensor xt = transpose(x, 0, 1);  // [4, 3]
  CHECK(vals(index_select(xt, 0, I({1}, {1}))) == VD{2, 6, 10});
  CHECK(vals(index_select(xt, 1, I({2, 2}, {2}))) == VD{9, 9, 10, 10, 11, 11, 12, 12});
  // 3-D, middle dim; int64 and bool data
  Tensor y = I({0, 1, 2, 3, 4, 5, 6, 7}, {2, 2, 2});
  CHECK(index_select(y, 1, I({1, 0}, {2})).to_vector<int64_t>() == VI{2, 3, 0, 1, 6, 7, 4, 5});
  CHECK(ivals(index_select(B({1, 0, 0}, {3}), 0, I({2, 0}, {2}))) == VI{0, 1});
  // empty index
  CHECK(index_select(x, 0, I({}, {0})).shape() == Shape{0, 4});
  // non-contiguous index
  Tensor idx2 = I({0, 9, 2, 9}, {2, 2});
  CHECK(vals(index_select(x, 0, select(idx2, 1, 0))) == VD{1, 2, 3, 4, 9, 10, 11, 12});
}

TEST_CASE("embedding: values for ids of any shape") {
  Tensor w = D({0, 1, 10, 11, 20, 21, 30, 31}, {4, 2});
  Tensor e = embedding(w, I({3, 0, 1, 1}, {2, 2}));
  CHECK(e.shape() == Shape{2, 2, 2});
  CHECK(vals(e) == VD{30, 31, 0, 1, 10, 11, 10, 11});
  Tensor e0 = embedding(w, scalar_tensor(2, DType::Int64));
  CHECK(e0.shape() == Shape{2});
  CHECK(vals(e0) == VD{20, 21});
  Tensor wf = from_vector(VF{1, 2, 3, 4}, {2, 2});
  CHECK(embedding(wf, I({1}, {1})).dtype() == DType::Float32);
  CHECK(vals(embedding(transpose(wf, 0, 1), I({1, 0}, {2}))) == VD{2, 4, 1, 3});
}

TEST_CASE("gather: values along dims 0 and last, index smaller than x") {
  Tensor x = D({1, 2, 3, 4, 5, 6}, {2, 3});
  Tensor g1 = gather(x, 1, I({2, 0, 1, 1}, {2, 2}));
  CHECK(g1.shape() == Shape{2, 2});
  CHECK(vals(g1) == VD{3, 1, 5, 5});
  Tensor gl = gather(x, -1, I({0, 0, 0, 2}, {2, 2}));
  CHECK(vals(gl) == VD{1, 1, 4, 6});
  Tensor g0 = gather(x, 0, I({1, 0, 1, 0, 0, 1, 1, 1}, {4, 2}));  // dim 0 may be larger than x's
  CHECK(g0.shape() == Shape{4, 2});
  CHECK(vals(g0) == VD{4, 2, 4, 2, 1, 5, 4, 5});
  // non-contiguous x (xt = [[1,4],[2,5],[3,6]])
  CHECK(vals(gather(transpose(x, 0, 1), 1, I({1, 0, 1}, {3, 1}))) == VD{4, 2, 6});
  CHECK(gather(I({7, 8, 9}, {3}), 0, I({2, 2, 0}, {3})).to_vector<int64_t>() == VI{9, 9, 7});
}

TEST_CASE("where: values with broadcasting and dtypes") {
  Tensor c = B({1, 0, 1}, {3});
  Tensor a = D({1, 2, 3, 4, 5, 6}, {2, 3});
  Tensor b = D({-1, -2}, {2, 1});
  Tensor w = where(c, a, b);
  CHECK(w.shape() == Shape{2, 3});
  CHECK(vals(w) == VD{1, -1, 3, 4, -2, 6});
  Tensor cc = B({1, 0}, {2, 1});
  CHECK(vals(where(cc, D({7}, {1}), D({1, 2, 3}, {3}))) == VD{7, 7, 7, 1, 2, 3});
  CHECK(where(c, I({1, 2, 3}, {3}), I({9, 9, 9}, {3})).to_vector<int64_t>() == VI{1, 9, 3});
  CHECK(ivals(where(c, B({0, 0, 0}, {3}), B({1, 1, 1}, {3}))) == VI{0, 1, 0});
  Tensor wf = where(c, from_vector(VF{1, 2, 3}, {3}), from_vector(VF{0}, {1}));
  CHECK(wf.dtype() == DType::Float32);
  CHECK(vals(wf) == VD{1, 0, 3});
  // non-contiguous operands
  Tensor at = transpose(D({1, 2, 3, 4}, {2, 2}), 0, 1);  // [[1,3],[2,4]]
  CHECK(vals(where(transpose(B({1, 0, 0, 1}, {2, 2}), 0, 1), at, zeros({2, 2}, {DType::Float64}))) ==
        VD{1, 0, 0, 4});
}

TEST_CASE("masked_fill: values with broadcast mask") {
  Tensor x = D({1, 2, 3, 4, 5, 6}, {2, 3});
  CHECK(vals(masked_fill(x, B({0, 1, 0}, {3}), -9)) == VD{1, -9, 3, 4, -9, 6});
  CHECK(vals(masked_fill(x, B({1, 0}, {2, 1}), 0.5)) == VD{0.5, 0.5, 0.5, 4, 5, 6});
  CHECK(vals(masked_fill(x, B({1}, {}), 7)) == VD{7, 7, 7, 7, 7, 7});
  CHECK(vals(masked_fill(transpose(x, 0, 1), B({0, 1}, {2}), 0)) == VD{1, 0, 2, 0, 3, 0});
  CHECK(masked_fill(I({1, 2, 3}, {3}), B({1, 0, 0}, {3}), -1).to_vector<int64_t>() == VI{-1, 2, 3});
  CHECK(ivals(masked_fill(B({0, 0}, {2}), B({0, 1}, {2}), 1)) == VI{0, 1});
  Tensor xf = from_vector(VF{1, 2}, {2});
  Tensor mf = masked_fill(xf, B({1, 0}, {2}), -1e9);
  CHECK(mf.dtype() == DType::Float32);
  CHECK(vals(mf)[0] == doctest::Approx(-1e9));
}

// --- gradients ------------------------------------------------------------------------

TEST_CASE("gradcheck: cat and stack") {
  Tensor a = leaf({2, 3}), b = leaf({2, 1}), c = leaf_t(2, 2);
  gradcheck([](const std::vector<Tensor>& in) { return cat({in[0], in[1], in[2]}, 1); }, {a, b, c});
  gradcheck([](const std::vector<Tensor>& in) { return cat({in[0], in[1]}, 0) * 2.0; }, {leaf({1, 3}), a});
  gradcheck([](const std::vector<Tensor>& in) { return cat({in[0], in[0], in[1]}, -1); }, {a, leaf_t(2, 3)});
  // a non-differentiable piece in the middle
  gradcheck([](const std::vector<Tensor>& in) { return cat({in[0], ones({2, 3}, {DType::Float64}), in[0]}, 0); },
            {a});
  gradcheck([](const std::vector<Tensor>& in) { return stack({in[0], in[1], in[0]}, -1); }, {leaf_t(2, 3), a});
  gradcheck([](const std::vector<Tensor>& in) { return stack({in[0], in[1]}, 1); }, {a, leaf({2, 3})});
  gradcheck([](const std::vector<Tensor>& in) { return stack({in[0], in[1]}); }, {leaf({}), leaf({})});
}

TEST_CASE("gradcheck: index_select and embedding with repeated indices") {
  const Tensor idx = I({2, 0, 2, 2, 1}, {5});
  gradcheck([&](const std::vector<Tensor>& in) { return index_select(in[0], 0, idx); }, {leaf({3, 4})});
  gradcheck([&](const std::vector<Tensor>& in) { return index_select(in[0], -1, idx); }, {leaf_t(2, 3)});
  gradcheck([&](const std::vector<Tensor>& in) { return index_select(in[0], 1, idx); }, {leaf({2, 3, 2})});
  const Tensor ids = I({1, 3, 1, 0, 1, 3}, {2, 3});
  gradcheck([&](const std::vector<Tensor>& in) { return embedding(in[0], ids); }, {leaf({5, 3})});
  gradcheck([&](const std::vector<Tensor>& in) { return embedding(in[0], ids); }, {leaf_t(4, 2)});
  // non-contiguous gradient flowing in
  gradcheck([&](const std::vector<Tensor>& in) { return transpose(embedding(in[0], ids), 0, 2) * 3.0; },
            {leaf({4, 3})});
}

TEST_CASE("gradcheck: gather along dims 0 and last") {
  const Tensor i0 = I({2, 0, 1, 2, 2, 0}, {3, 2});
  gradcheck([&](const std::vector<Tensor>& in) { return gather(in[0], 0, i0); }, {leaf({3, 3})});
  const Tensor il = I({1, 1, 0, 1, 2, 2, 2, 0}, {2, 4});
  gradcheck([&](const std::vector<Tensor>& in) { return gather(in[0], -1, il); }, {leaf({3, 3})});
  gradcheck([&](const std::vector<Tensor>& in) { return gather(in[0], 1, il); }, {leaf_t(2, 3)});
  const Tensor i3 = I({0, 1, 1, 1, 0, 0, 1, 0}, {2, 2, 2});
  gradcheck([&](const std::vector<Tensor>& in) { return gather(in[0], 1, i3); }, {leaf({2, 2, 3})});
}

TEST_CASE("gradcheck: where and masked_fill with broadcasting") {
  const Tensor c = B({1, 0, 0, 1, 1, 0}, {2, 3});
  gradcheck([&](const std::vector<Tensor>& in) { return where(c, in[0], in[1]); }, {leaf({2, 3}), leaf({2, 3})});
  gradcheck([&](const std::vector<Tensor>& in) { return where(c, in[0], in[1]); }, {leaf({3}), leaf({2, 1})});
  gradcheck([&](const std::vector<Tensor>& in) { return where(B({1, 0}, {2, 1, 1}), in[0], in[1]); },
            {leaf({3, 1}), leaf_t(3, 2)});
  gradcheck([&](const std::vector<Tensor>& in) { return where(c, in[0], zeros({}, {DType::Float64})); },
            {leaf_t(2, 3)});
  gradcheck([&](const std::vector<Tensor>& in) { return masked_fill(in[0], c, 5.0); }, {leaf({2, 3})});
  gradcheck([&](const std::vector<Tensor>& in) { return masked_fill(in[0], B({0, 1, 1}, {3}), -2.0); },
            {leaf_t(2, 3)});
  gradcheck([&](const std::vector<Tensor>& in) { return masked_fill(in[0], B({1, 0}, {2, 1, 1}), 0.0); },
            {leaf({2, 3, 2})});
}

TEST_CASE("gradcheck: chained index ops") {
  const Tensor idx = I({1, 1, 0}, {3});
  gradcheck(
      [&](const std::vector<Tensor>& in) {
        const Tensor y = index_select(in[0], 0, idx);
        return index_select(y * y, 1, I({0, 1, 0}, {3}));
      },
      {leaf({2, 2})});
  const Tensor gi = I({1, 0, 1, 1}, {2, 2});
  gradcheck([&](const std::vector<Tensor>& in) { return gather(gather(in[0], 1, gi), 0, gi) * in[0]; },
            {leaf({2, 2})});
  gradcheck(
      [&](const std::vector<Tensor>& in) {
        const Tensor s = stack({in[0], in[1]}, 0);  // [2, 2, 3]
        return where(B({1, 0, 0}, {3}), masked_fill(s, B({0, 1}, {2, 1, 1}), 1.0), in[0] * 2.0);
      },
      {leaf({2, 3}), leaf_t(2, 3)});
}

TEST_CASE("index backward accumulates repeated indices deterministically") {
  // Many repeats of a few rows: the gradient is exactly the count per row.
  const int64_t n = 20000, V = 7, Dm = 33;
  std::vector<int64_t> idv(n);
  for (int64_t i = 0; i < n; ++i) idv[i] = (i * 5) % V;
  const Tensor ids = I(idv, {n});
  Tensor w = ones({V, Dm}, {DType::Float32}).set_requires_grad(true);
  sum(embedding(w, ids)).backward();
  const std::vector<float> g = w.grad().to_vector<float>();
  for (int64_t r = 0; r < V; ++r) {
    int64_t count = 0;
    for (int64_t i = 0; i < n; ++i) count += idv[i] == r;
    CHECK(g[r * Dm] == static_cast<float>(count));
    CHECK(g[r * Dm + Dm - 1] == static_cast<float>(count));
  }
  // Same bits on a second run with non-integer gradients.
  Tensor w2 = randn({V, Dm}).set_requires_grad(true);
  const Tensor scale = randn({n, Dm});
  sum(embedding(w2, ids) * scale).backward();
  const std::vector<float> first = w2.grad().to_vector<float>();
  w2.set_grad(Tensor());
  sum(embedding(w2, ids) * scale).backward();
  CHECK(w2.grad().to_vector<float>() == first);
  // gather's scatter-add likewise
  const Tensor gidx = I(std::vector<int64_t>(static_cast<size_t>(n), 3), {1, n});
  Tensor x = randn({2, 5}).set_requires_grad(true);
  const Tensor gs = randn({1, n});
  sum(gather(x, 1, gidx) * gs).backward();
  const std::vector<float> gf = x.grad().to_vector<float>();
  x.set_grad(Tensor());
  sum(gather(x, 1, gidx) * gs).backward();
  CHECK(x.grad().to_vector<float>() == gf);
  CHECK(gf[3] != 0.0f);
  CHECK(gf[5 + 3] == 0.0f);
}

TEST_CASE("indices and masks receive no gradient") {
  Tensor x = leaf({3, 2});
  Tensor y = index_select(x, 0, I({0, 2}, {2}));
  CHECK(y.requires_grad());
  Tensor c = B({1, 0}, {2});
  Tensor w = where(c, leaf({2}), rnd({2}));
  CHECK(w.requires_grad());
  CHECK_FALSE(where(c, rnd({2}), rnd({2})).requires_grad());
  CHECK_FALSE(index_select(I({1, 2, 3}, {3}), 0, I({0}, {1})).requires_grad());
}

// --- errors ---------------------------------------------------------------------------

TEST_CASE("cat / stack errors") {
  CHECK_THROWS_WITH_AS(cat({}), doctest::Contains("cat: expected a non-empty list"), Error);
  CHECK_THROWS_WITH_AS(stack({}), doctest::Contains("stack: expected a non-empty list"), Error);
  const Tensor a = rnd({2, 3});
  CHECK_THROWS_WITH_AS(cat({a, a, rnd({2, 4})}, 0), doctest::Contains("tensor 2 has shape [2, 4]"), Error);
  CHECK_NOTHROW(cat({a, rnd({2, 4})}, 1));
  CHECK_THROWS_WITH_AS(cat({a, rnd({2, 3, 1})}), doctest::Contains("tensor 1 has 3 dims"), Error);
  CHECK_THROWS_WITH_AS(cat({a, randn({2, 3})}), doctest::Contains("tensor 1 is float32 but tensor 0 is float64"),
                       Error);
  CHECK_THROWS_AS(cat({a, a}, 2), Error);
  CHECK_THROWS_AS(cat({a, a}, -3), Error);
  CHECK_THROWS_AS(cat({scalar_tensor(1.0), scalar_tensor(2.0)}), Error);
  CHECK_THROWS_AS(cat({a, Tensor()}), Error);
  CHECK_THROWS_WITH_AS(stack({a, a, rnd({3, 2})}), doctest::Contains("stack: tensor 2 has shape [3, 2]"), Error);
  CHECK_THROWS_AS(stack({a, a}, 3), Error);
  CHECK_NOTHROW(stack({a, a}, -3));
  CHECK_THROWS_AS(stack({a, I({1, 2, 3, 4, 5, 6}, {2, 3})}), Error);
}

TEST_CASE("index_select / embedding / gather errors") {
  const Tensor x = rnd({3, 4});
  const std::string msg = error_of([&] { index_select(x, 0, I({0, 3}, {2})); });
  CHECK(msg.find("index_select") != std::string::npos);
  CHECK(msg.find("index 3") != std::string::npos);
  CHECK(msg.find("0 .. 2") != std::string::npos);
  CHECK_THROWS_WITH_AS(index_select(x, 1, I({-1}, {1})), doctest::Contains("index -1"), Error);
  CHECK_THROWS_WITH_AS(index_select(x, 0, from_vector(VD{0}, {1})),
                       doctest::Contains("index_select: index must be int64, got float64"), Error);
  CHECK_THROWS_WITH_AS(index_select(x, 0, I({0, 1}, {1, 2})), doctest::Contains("must be 1-D"), Error);
  CHECK_THROWS_AS(index_select(x, 2, I({0}, {1})), Error);
  CHECK_THROWS_AS(index_select(scalar_tensor(1.0), 0, I({0}, {1})), Error);

  const Tensor w = rnd({5, 2});
  const std::string emsg = error_of([&] { embedding(w, I({1, 7, 2}, {3})); });
  CHECK(emsg.find("embedding") != std::string::npos);
  CHECK(emsg.find("index 7") != std::string::npos);
  CHECK(emsg.find("0 .. 4") != std::string::npos);
  CHECK_THROWS_WITH_AS(embedding(rnd({5}), I({0}, {1})), doctest::Contains("embedding: weight must be 2-D"), Error);
  CHECK_THROWS_WITH_AS(embedding(w, B({0}, {1})), doctest::Contains("ids must be int64, got bool"), Error);

  CHECK_THROWS_WITH_AS(gather(x, 1, I({4}, {1, 1})), doctest::Contains("gather: index 4"), Error);
  CHECK_THROWS_WITH_AS(gather(x, 1, I({0}, {1})), doctest::Contains("same number of dims"), Error);
  CHECK_THROWS_WITH_AS(gather(x, 1, zeros({4, 1}, {DType::Int64})), doctest::Contains("exceeds x shape"), Error);
  CHECK_NOTHROW(gather(x, 0, zeros({6, 1}, {DType::Int64})));
  CHECK_THROWS_AS(gather(x, 0, zeros({1, 1}, {DType::Float32})), Error);
  CHECK_THROWS_AS(gather(x, -3, zeros({1, 1}, {DType::Int64})), Error);
}

TEST_CASE("where / masked_fill errors") {
  const Tensor a = rnd({2, 3});
  CHECK_THROWS_WITH_AS(where(I({1, 0, 1}, {3}), a, a), doctest::Contains("where: cond must be bool, got int64"),
                       Error);
  CHECK_THROWS_WITH_AS(where(B({1, 0, 1}, {3}), a, randn({2, 3})), doctest::Contains("where: dtype mismatch"), Error);
  CHECK_THROWS_WITH_AS(where(B({1, 0}, {2}), a, a), doctest::Contains("where: shapes"), Error);
  CHECK_THROWS_AS(where(B({1, 0, 1}, {3}), a, rnd({4, 1})), Error);
  CHECK_THROWS_WITH_AS(masked_fill(a, I({1, 0, 1}, {3}), 0), doctest::Contains("masked_fill: mask must be bool"),
                       Error);
  CHECK_THROWS_WITH_AS(masked_fill(a, B({1, 0}, {2}), 0),
                       doctest::Contains("mask shape [2] does not broadcast to x shape [2, 3]"), Error);
  CHECK_THROWS_AS(masked_fill(a, B({1, 0, 1, 1, 0, 1}, {3, 2, 1}), 0), Error);  // would grow x
}
