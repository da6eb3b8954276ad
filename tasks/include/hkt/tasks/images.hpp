// Image classification data: CIFAR-10 (binary version) and IDX files
// (MNIST / Fashion-MNIST), read into hkt::tasks::Dataset.
//
// Every image is flattened row-major into a sequence of T = rows * cols pixel
// positions. No image is padded: every length is T.
// Bad input (a missing folder or file, a truncated record, a wrong magic
// number, a label out of range, ...) throws hkt::Error naming the file and
// the problem.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "hkt/tasks/dataset.hpp"

namespace hkt::tasks {

enum class ImageEncoding {
  // LRA's "Image" task encoding: one token per pixel, T = 1024, vocab 256
  // (token = the grayscale value 0..255; pad_id 0 is never used as padding).
  // The grayscale value is exactly what LRA's input pipeline computes,
  // tf.cast(tf.image.rgb_to_grayscale(uint8 image), tf.int32), emulated in
  // float32 the way TensorFlow does it:
  //   y    = (R / 255) * 0.2989 + (G / 255) * 0.5870 + (B / 255) * 0.1140
  //   gray = floor(y * 255.5)           (convert_image_dtype's float -> uint8)
  // This is close to, but not the same as, round(0.2989 R + 0.5870 G + 0.1140 B):
  // the 255.5 scale rounds down except near 255, so about a quarter of all
  // colours get one less (e.g. (R, G, B) = (11, 11, 0) gives 9, not 10).
  GrayTokens,
  // T = 1024 positions with 3 real features each (R, G, B scaled to [0, 1] by
  // / 255), for a linear input map; position t = row * 32 + col.
  RGB,
};

// CIFAR-10, binary version. `dir` is a folder holding data_batch_1.bin ..
// data_batch_5.bin and test_batch.bin, or its parent holding
// cifar-10-batches-bin/. Each record is 3073 bytes: the label (0..9), then
// 1024 red, 1024 green and 1024 blue bytes, each plane row-major 32 x 32.
// train = data_batch_1..5 in order (or only their first `max_train` records
// when max_train > 0, for quick runs), test = test_batch.
// CIFAR-10 has no validation split: `val_size` training examples, chosen with
// `seed` (carve_validation), become the validation set; val_size = 0 leaves
// it empty. (LRA itself holds out the last 10% of train; a seeded carve is
// used here for uniformity with the other tasks.)
// Names: "cifar10/train", "cifar10/val", "cifar10/test".
Splits load_cifar10(const std::string& dir, ImageEncoding enc, int64_t val_size = 5000, uint64_t seed = 0,
                    int64_t max_train = 0);

// IDX files (the MNIST format): a big-endian 32-bit magic number,
// 0x00000803 for images (then count, rows, cols) or 0x00000801 for labels
// (then count), each a big-endian 32-bit integer, then the unsigned bytes.
// A gzipped file (.gz) is read directly through zlib; a plain file too.
// The payload must have exactly the size the header says.
struct IdxImages {
  int64_t count = 0, rows = 0, cols = 0;
  std::vector<uint8_t> pixels;  // count * rows * cols, image-major, row-major within an image
};
IdxImages read_idx_images(const std::string& path);
std::vector<uint8_t> read_idx_labels(const std::string& path);

// Fashion-MNIST as a sequence of T = rows * cols = 784 pixel tokens (token =
// pixel value, vocab 256, no padding), 10 classes. `dir` holds
// train-images-idx3-ubyte, train-labels-idx1-ubyte, t10k-images-idx3-ubyte and
// t10k-labels-idx1-ubyte, each plain or gzipped (name + ".gz"); the default is
// where Debian's dataset-fashion-mnist package installs them
// (tools/hkt-data fashion-mnist downloads them into $HKT_DATA/fashion-mnist).
// train = the first `max_train` training images when max_train > 0 (else all
// 60,000); `val_size` of them, chosen with `seed`, become the validation set
// (0 = none); test = t10k.
// Names: "fashion_mnist/train", "fashion_mnist/val", "fashion_mnist/test".
Splits load_fashion_mnist(const std::string& dir = "/usr/share/datasets/fashion-mnist", int64_t val_size = 5000,
                          uint64_t seed = 0, int64_t max_train = 0);

}  // namespace hkt::tasks
