// Views share storage; their gradients map back to the input's shape.
#include "helpers/check.hpp"

using namespace hkt;
using namespace hkt::test;

TEST_CASE("views alias storage and have the expected geometry") {
  Tensor x = reshape(arange(0, 24, 1, {DType::Float32}), {2, 3, 4});
  CHECK(x.shape() == Shape{2, 3, 4});
  Tensor p = permute(x, {2, 0, 1});
  CHECK(p.shape() == Shape{4, 2, 3});
  CHECK(p.strides() == Strides{1, 12, 4});
  CHECK(p.storage() == x.storage());
  Tensor s = slice(x, 2, 1, 4, 2);  // elements 1, 3 of the last dim
  CHECK(s.shape() == Shape{2, 3, 2});
  CHECK(contiguous(s).to_vector<float>() ==
        std::vector<float>{1, 3, 5, 7, 9, 11, 13, 15, 17, 19, 21, 23});
  CHECK(s.storage() == x.storage());
  CHECK(narrow(x, 1, 1, 2).shape() == Shape{2, 2, 4});
  CHECK(select(x, 0, -1).to_vector<float>()[0] == 12.0f);
  Tensor e = expand(from_vector(std::vector<float>{1, 2, 3}, {3, 1}), {2, 3, 4});
  CHECK(e.strides() == Strides{0, 1, 0});
  CHECK(sum(e).item<float>() == 48.0f);
  CHECK(unsqueeze(x, -1).shape() == Shape{2, 3, 4, 1});
  CHECK(squeeze(unsqueeze(x, 1), 1).shape() == Shape{2, 3, 4});
  CHECK(flatten(x, 1).shape() == Shape{2, 12});
  CHECK(reshape(x, {-1, 4}).shape() == Shape{6, 4});
  // reshape of a non-contiguous tensor copies; view refuses.
  Tensor t = transpose(x, 0, 2);
  CHECK(reshape(t, {24}).to_vector<float>()[1] == 12.0f);
  check_error([&] { (void)view(t, {24}); }, "without a copy");
  CHECK(view(select(x, 2, 1), {6}).storage() == x.storage());
  // A write through a view is seen by the base.
  {
    Tensor col = select(x, 2, 0);
    fill_(col, -1.0);
  }
  CHECK(x.to_vector<float>()[4] == -1.0f);
}

TEST_CASE("view gradients") {
  gradcheck([](const std::vector<Tensor>& in) { return exp(reshape(in[0], {3, 4})) * 1.0; }, {leaf({2, 6})});
  gradcheck([](const std::vector<Tensor>& in) { return reshape(in[0], {6}) * 2.0; }, {transposed_leaf({2, 3})});
  gradcheck([](const std::vector<Tensor>& in) { return permute(in[0], {1, 2, 0}) * in[0].shape()[0]; },
            {leaf({2, 3, 4})});
  gradcheck([](const std::vector<Tensor>& in) { return tanh(transpose(in[0], 0, 1)); }, {leaf({3, 5})});
  gradcheck([](const std::vector<Tensor>& in) { return expand(in[0], {4, 3, 2}) * expand(in[0], {4, 3, 2}); },
            {leaf({3, 1})});
  gradcheck([](const std::vector<Tensor>& in) { return square(slice(in[0], 1, 1, 7, 3)); }, {leaf({2, 7})});
  gradcheck([](const std::vector<Tensor>& in) { return square(slice(in[0], 0, -2, 3)); }, {transposed_leaf({3, 4})});
  gradcheck([](const std::vector<Tensor>& in) { return exp(select(in[0], 1, 2)); }, {leaf({2, 3, 2})});
  gradcheck([](const std::vector<Tensor>& in) { return flatten(unsqueeze(in[0], 0)) * 3.0; }, {leaf({2, 2})});
}

TEST_CASE("view errors") {
  Tensor x = zeros({2, 3});
  check_error([&] { (void)reshape(x, {4, 2}); }, "reshape: shape [4, 2] does not hold 6 elements");
  check_error([&] { (void)reshape(x, {-1, -1}); }, "only one dim may be -1");
  check_error([&] { (void)permute(x, {0}); }, "permute: got 1 dims");
  check_error([&] { (void)permute(x, {1, 1}); }, "repeated");
  check_error([&] { (void)expand(x, {2, 4}); }, "expand: cannot expand shape [2, 3] to [2, 4]");
  check_error([&] { (void)slice(x, 1, 0, 5); }, "out of bounds for dim 1 of size 3");
  check_error([&] { (void)slice(x, 3, 0, 1); }, "dim 3 is out of range");
  check_error([&] { (void)squeeze(x, 0); }, "squeeze: dim 0 has size 2");
  check_error([&] { (void)select(x, 0, 2); }, "select: index 2 is out of range");
}
