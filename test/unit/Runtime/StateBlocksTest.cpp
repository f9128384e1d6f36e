//===- StateBlocksTest.cpp - tessel-run's blocks of a global tensor -------===//
//
// fillBlock (runtime/tooling, tessel/tooling/StateBlocks.h), which puts a rank's block of a
// state together from a checkpoint's blocks saved on another mesh: a 2-D
// tensor cut in row and column blocks, replicas, padded blocks, pieces of a
// fused parameter, and blocks that do not cover what a rank needs.
//
//===----------------------------------------------------------------------===//
#include "tessel/tooling/StateBlocks.h"

#include <gtest/gtest.h>

#include <vector>

namespace tessel::tooling {
namespace {

// The global tensor: 6 x 8, element (i, j) = 10 i + j.
constexpr int64_t kRows = 6, kCols = 8;
float at(int64_t i, int64_t j) { return static_cast<float>(10 * i + j); }

/// The block [r0, r0 + rows) x [c0, c0 + cols) of the global tensor, as a
/// source (values past the tensor: -1, padding).
struct Saved {
  std::vector<float> data;
  StateBlock block;
  Saved(int64_t r0, int64_t c0, int64_t rows, int64_t cols) {
    for (int64_t i = r0; i < r0 + rows; ++i)
      for (int64_t j = c0; j < c0 + cols; ++j)
        data.push_back(i < kRows && j < kCols ? at(i, j) : -1.0f);
    block.data = data.data();
    block.shape = {rows, cols};
    block.offset = {r0, c0};
    block.within({kRows, kCols});
    block.where = "test";
  }
};

StateBlock wanted(int64_t r0, int64_t c0, int64_t rows, int64_t cols) {
  StateBlock b;
  b.shape = {rows, cols};
  b.offset = {r0, c0};
  b.within({kRows, kCols});
  return b;
}

void expectBlock(const std::vector<float> &got, int64_t r0, int64_t c0,
                 int64_t rows, int64_t cols) {
  for (int64_t i = 0; i < rows; ++i)
    for (int64_t j = 0; j < cols; ++j) {
      const bool inside = r0 + i < kRows && c0 + j < kCols;
      EXPECT_EQ(got[i * cols + j], inside ? at(r0 + i, c0 + j) : 0.0f)
          << "element (" << r0 + i << ", " << c0 + j << ")";
    }
}

TEST(StateBlocks, RowBlocksIntoColumnBlocks) {
  // Saved: 2 row blocks (tp=2 on dim 0), each twice (dp=2 replicas).
  Saved a(0, 0, 3, kCols), b(3, 0, 3, kCols), a2(0, 0, 3, kCols),
      b2(3, 0, 3, kCols);
  std::vector<StateBlock> sources = {a.block, a2.block, b.block, b2.block};
  // Wanted: the second column block (tp=2 on dim 1).
  std::vector<float> got(kRows * 4, 0.0f);
  ASSERT_TRUE(fillBlock("w", sizeof(float), wanted(0, 4, kRows, 4),
                        got.data(), sources)
                  .isOk());
  expectBlock(got, 0, 4, kRows, 4);
  // The whole tensor, on one rank.
  std::vector<float> whole(kRows * kCols, 0.0f);
  ASSERT_TRUE(fillBlock("w", sizeof(float), wanted(0, 0, kRows, kCols),
                        whole.data(), sources)
                  .isOk());
  expectBlock(whole, 0, 0, kRows, kCols);
}

TEST(StateBlocks, PaddedBlocks) {
  // Saved: dim 1 padded to 9 and cut in 3 (blocks of 3; the last holds 2).
  Saved a(0, 0, kRows, 3), b(0, 3, kRows, 3), c(0, 6, kRows, 3);
  // Wanted: dim 1 in blocks of 4 (no padding), and a padded row block of 4
  // rows at row 4 (rows 6, 7 past the tensor stay zero).
  std::vector<float> got(kRows * 4, 0.0f);
  ASSERT_TRUE(fillBlock("w", sizeof(float), wanted(0, 4, kRows, 4),
                        got.data(), {a.block, b.block, c.block})
                  .isOk());
  expectBlock(got, 0, 4, kRows, 4);
  std::vector<float> rows(4 * kCols, 0.0f);
  ASSERT_TRUE(fillBlock("w", sizeof(float), wanted(4, 0, 4, kCols),
                        rows.data(), {a.block, b.block, c.block})
                  .isOk());
  expectBlock(rows, 4, 0, 4, kCols);
}

TEST(StateBlocks, PiecesOfAFusedParameter) {
  // A state "w[dim 1: 2..6]": a [6, 4] tensor of its own, block [6, 2] at
  // [0, 2] of it, i.e. columns 4..5 of w.
  StateBlock piece;
  piece.shape = {kRows, 2};
  EXPECT_EQ(blockOfState("w[dim 1: 2..6]", {kRows, 4}, {0, 2}, piece), "w");
  EXPECT_EQ(piece.offset, (std::vector<int64_t>{0, 4}));
  EXPECT_EQ(piece.lo, (std::vector<int64_t>{0, 2}));
  EXPECT_EQ(piece.hi, (std::vector<int64_t>{kRows, 6}));
  Saved whole(0, 0, kRows, kCols);
  std::vector<float> got(kRows * 2, 0.0f);
  ASSERT_TRUE(
      fillBlock("w", sizeof(float), piece, got.data(), {whole.block}).isOk());
  expectBlock(got, 0, 4, kRows, 2);
  // Any other name is a block of itself.
  StateBlock plain;
  EXPECT_EQ(blockOfState("w[x]", {kRows, kCols}, {0, 0}, plain), "w[x]");
}

TEST(StateBlocks, GapsAndOverlapsAreErrors) {
  Saved a(0, 0, 3, kCols);
  std::vector<float> got(kRows * kCols, 0.0f);
  runtime::Status s = fillBlock("w", sizeof(float), wanted(0, 0, kRows, kCols),
                                got.data(), {a.block});
  ASSERT_FALSE(s.isOk());
  EXPECT_NE(s.message().find("'w': the checkpoint's blocks (1 distinct) "
                             "cover 24 of the 48 elements"),
            std::string::npos)
      << s.message();
  Saved b(2, 0, 4, kCols);
  s = fillBlock("w", sizeof(float), wanted(0, 0, kRows, kCols), got.data(),
                {a.block, b.block});
  ASSERT_FALSE(s.isOk());
  EXPECT_NE(s.message().find("(they overlap)"), std::string::npos)
      << s.message();
}

} // namespace
} // namespace tessel::tooling
