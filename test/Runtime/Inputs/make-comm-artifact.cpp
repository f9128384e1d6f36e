//===- make-comm-artifact.cpp - Multi-rank artifacts for the lit tests ----===//
//
//   make-comm-artifact --dp D --tp T OUT.tsl [--input X.npy]
//   make-comm-artifact --reference --dp D --tp T OUT.tsl
//   make-comm-artifact --compare A.npy B.npy
//   make-comm-artifact --allreduce MiB --ranks N OUT.tsl [--input X.npy]
//
// Writes by hand what the partitioner would: a Megatron MLP over a mesh
// dp=D, tp=T (rank d*T + t). Every rank gets the whole input x [4D, 8],
// slices its replica's rows, runs h = relu(x W1) with W1 split on columns and
// y = h W2 with W2 split on rows, and uses every collective to rebuild whole,
// replicated outputs:
//   y      all_reduce(sum) over the tp group, then all_gather over dp
//   ymean  all_reduce(mean) of the partial products (= y / T)
//   y2     reduce_scatter(sum, dim 0) then all_gather(dim 0)
//   h      all_gather(dim 1) of the column pieces
//   h2     all_to_all(split 0, concat 1) then all_gather(dim 0)
//   hb     broadcast of the last tp member's piece
//   hswap  collective_permute around the tp ring, then all_gather(dim 1)
//   hswap2 the same through send/recv
// --reference writes the single-rank program computing the same outputs on
// whole weights; --compare checks two .npy files agree (rtol = atol = 1e-5).
// --allreduce writes one all_reduce(sum) of an f32 input of that many MiB
// over N ranks (the bandwidth figure of docs/runtime.md).
//
//===----------------------------------------------------------------------===//
#include "tessel/runtime/Runtime.h"

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

using namespace tessel::runtime;

namespace {

constexpr int64_t kRows = 4, kIn = 8, kHid = 8, kOut = 6;

std::vector<float> values(int64_t n, int salt) {
  std::vector<float> v(n);
  for (int64_t i = 0; i < n; ++i)
    v[i] = static_cast<float>(((i * 37 + salt * 11) % 19) - 9) / 8.0f;
  return v;
}

/// Columns [c0, c1) of a row-major [rows, cols] matrix.
std::vector<float> columns(const std::vector<float> &m, int64_t rows,
                           int64_t cols, int64_t c0, int64_t c1) {
  std::vector<float> r;
  for (int64_t i = 0; i < rows; ++i)
    for (int64_t j = c0; j < c1; ++j)
      r.push_back(m[i * cols + j]);
  return r;
}

std::vector<int64_t> range(int64_t start, int64_t n, int64_t step = 1) {
  std::vector<int64_t> r;
  for (int64_t i = 0; i < n; ++i)
    r.push_back(start + i * step);
  return r;
}

/// relu(x W1) W2 on `rows` rows of hidden width `hid`: adds the weights and
/// the ops; returns the buffers of the relu and of the product.
std::pair<int, int> addMlp(ProgramBuilder &p, int x, int64_t rows, int64_t hid,
                           const std::vector<float> &w1,
                           const std::vector<float> &w2) {
  int W1 = p.addWeight("w1", DType::F32, {kIn, hid}, w1.data());
  int W2 = p.addWeight("w2", DType::F32, {hid, kOut}, w2.data());
  int h0 = p.addBuffer(DType::F32, {rows, hid});
  int h = p.addBuffer(DType::F32, {rows, hid});
  int y = p.addBuffer(DType::F32, {rows, kOut});
  p.addOp("matmul", {x, W1}, {h0});
  p.addOp("relu", {h0}, {h});
  p.addOp("matmul", {h, W2}, {y});
  return {h, y};
}

/// Prints a failed status; returns the exit code, 1.
int fail(const Status &s) {
  std::fprintf(stderr, "%s\n", s.message().c_str());
  return 1;
}

int usage() {
  std::fprintf(stderr,
               "usage: make-comm-artifact [--reference] --dp D --tp T OUT.tsl "
               "[--input X.npy]\n"
               "       make-comm-artifact --compare A.npy B.npy\n");
  return 2;
}

int compare(const std::string &a, const std::string &b) {
  Tensor x, y;
  if (Status s = readNpy(a, x); !s)
    return fail(s);
  if (Status s = readNpy(b, y); !s)
    return fail(s);
  if (x.dtype() != DType::F32 || y.dtype() != DType::F32 ||
      x.shape() != y.shape()) {
    std::fprintf(stderr, "%s is %s %s, %s is %s %s\n", a.c_str(),
                 dtypeName(x.dtype()), shapeToString(x.shape()).c_str(),
                 b.c_str(), dtypeName(y.dtype()), shapeToString(y.shape()).c_str());
    return 1;
  }
  for (int64_t i = 0; i < x.numElements(); ++i) {
    float p = x.data<float>()[i], q = y.data<float>()[i];
    if (!(std::fabs(p - q) <= 1e-5f + 1e-5f * std::fabs(q))) {
      std::fprintf(stderr, "%s and %s differ at flat index %lld: %g vs %g\n",
                   a.c_str(), b.c_str(), static_cast<long long>(i), p, q);
      return 1;
    }
  }
  std::printf("equal: %s %s\n", a.c_str(), b.c_str());
  return 0;
}

} // namespace

int main(int argc, char **argv) {
  bool reference = false;
  int64_t dp = 1, tp = 1, allreduceMiB = 0, ranks = 2;
  std::string out, input;
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    if (a == "--compare" && i + 2 < argc)
      return compare(argv[i + 1], argv[i + 2]);
    if (a == "--reference")
      reference = true;
    else if (a == "--dp" && i + 1 < argc)
      dp = std::atoi(argv[++i]);
    else if (a == "--tp" && i + 1 < argc)
      tp = std::atoi(argv[++i]);
    else if (a == "--allreduce" && i + 1 < argc)
      allreduceMiB = std::atoi(argv[++i]);
    else if (a == "--ranks" && i + 1 < argc)
      ranks = std::atoi(argv[++i]);
    else if (a == "--input" && i + 1 < argc)
      input = argv[++i];
    else if (a[0] != '-' && out.empty())
      out = a;
    else
      return usage();
  }
  if (out.empty() || dp < 1 || tp < 1)
    return usage();

  if (allreduceMiB > 0) {
    int64_t n = allreduceMiB * (int64_t(1) << 20) / 4;
    if (!input.empty()) {
      Tensor x(DType::F32, {n});
      for (int64_t i = 0; i < n; ++i)
        x.data<float>()[i] = static_cast<float>(i % 7);
      if (Status s = writeNpy(input, x); !s)
        return fail(s);
    }
    ArtifactBuilder b("make-comm-artifact");
    b.setMesh({{"dp", ranks}});
    for (int r = 0; r < ranks; ++r) {
      ProgramBuilder &p = b.rank(r);
      int x = p.addInput("x", DType::F32, {n});
      int y = p.addBuffer(DType::F32, {n});
      p.addOp("all_reduce", {x}, {y},
              Attrs().s("kind", "sum").is("group", range(0, ranks)));
      p.addOutput("y", y);
    }
    if (Status s = b.write(out); !s)
      return fail(s);
    return 0;
  }

  const int64_t rows = kRows * dp, hid = kHid * tp;
  std::vector<float> w1 = values(kIn * hid, 1), w2 = values(hid * kOut, 2);
  if (!input.empty()) {
    Tensor x = Tensor::fromVector(DType::F32, {rows, kIn}, values(rows * kIn, 3));
    if (Status s = writeNpy(input, x); !s)
      return fail(s);
  }

  ArtifactBuilder b("make-comm-artifact");
  if (reference) {
    ProgramBuilder &p = b.rank(0);
    int x = p.addInput("x", DType::F32, {rows, kIn});
    auto [h, y] = addMlp(p, x, rows, hid, w1, w2);
    float inv = 1.0f / static_cast<float>(tp);
    int k = p.addConstant(DType::F32, {1}, &inv);
    int ymean = p.addBuffer(DType::F32, {rows, kOut});
    p.addOp("mul", {y, k}, {ymean});
    int y2 = p.addBuffer(DType::F32, {rows, kOut});
    p.addOp("copy", {y}, {y2});
    int h2 = p.addBuffer(DType::F32, {rows, hid});
    p.addOp("copy", {h}, {h2});
    auto cols = [&](int64_t c0, int64_t c1) {
      int r = p.addBuffer(DType::F32, {rows, c1 - c0});
      p.addOp("slice", {h}, {r},
              Attrs().is("starts", {0, c0}).is("ends", {rows, c1}).is("steps", {1, 1}));
      return r;
    };
    int hb = cols(kHid * (tp - 1), hid);
    int hswap = p.addBuffer(DType::F32, {rows, hid});
    int hswap2 = p.addBuffer(DType::F32, {rows, hid});
    if (tp == 1) {
      p.addOp("copy", {h}, {hswap});
      p.addOp("copy", {h}, {hswap2});
    } else {
      int head = cols(0, kHid * (tp - 1));
      p.addOp("concat", {hb, head}, {hswap}, Attrs().i("axis", 1));
      p.addOp("concat", {hb, head}, {hswap2}, Attrs().i("axis", 1));
    }
    p.addOutput("y", y);
    p.addOutput("ymean", ymean);
    p.addOutput("y2", y2);
    p.addOutput("h", h);
    p.addOutput("h2", h2);
    p.addOutput("hb", hb);
    p.addOutput("hswap", hswap);
    p.addOutput("hswap2", hswap2);
  } else {
    b.setMesh({{"dp", dp}, {"tp", tp}});
    for (int64_t d = 0; d < dp; ++d)
      for (int64_t t = 0; t < tp; ++t) {
        int64_t rank = d * tp + t;
        ProgramBuilder &p = b.rank(static_cast<int>(rank));
        std::vector<int64_t> tpGroup = range(d * tp, tp);
        std::vector<int64_t> dpGroup = range(t, dp, tp);
        auto tpA = [&](Attrs a) { return a.is("group", tpGroup); };
        int xw = p.addInput("x", DType::F32, {rows, kIn});
        int x = p.addBuffer(DType::F32, {kRows, kIn});
        p.addOp("slice", {xw}, {x},
                Attrs()
                    .is("starts", {d * kRows, 0})
                    .is("ends", {(d + 1) * kRows, kIn})
                    .is("steps", {1, 1}));
        std::vector<float> w1t = columns(w1, kIn, hid, t * kHid, (t + 1) * kHid);
        std::vector<float> w2t(w2.begin() + t * kHid * kOut,
                               w2.begin() + (t + 1) * kHid * kOut);
        auto [a, part] = addMlp(p, x, kRows, kHid, w1t, w2t);
        // Whole over dp: all_gather along rows over the replicas.
        auto overDp = [&](int local, int64_t cols, const std::string &name) {
          Shape s{rows, cols};
          int whole = p.addBuffer(DType::F32, s);
          p.addOp("all_gather", {local}, {whole},
                  Attrs().i("dim", 0).is("group", dpGroup));
          p.addOutput(name, whole);
        };
        int y = p.addBuffer(DType::F32, {kRows, kOut});
        p.addOp("all_reduce", {part}, {y}, tpA(Attrs().s("kind", "sum")));
        overDp(y, kOut, "y");
        int ymean = p.addBuffer(DType::F32, {kRows, kOut});
        p.addOp("all_reduce", {part}, {ymean}, tpA(Attrs().s("kind", "mean")));
        overDp(ymean, kOut, "ymean");
        int rs = p.addBuffer(DType::F32, {chunkSize(kRows, tp, t), kOut});
        p.addOp("reduce_scatter", {part}, {rs},
                tpA(Attrs().s("kind", "sum").i("dim", 0)));
        int y2 = p.addBuffer(DType::F32, {kRows, kOut});
        p.addOp("all_gather", {rs}, {y2}, tpA(Attrs().i("dim", 0)));
        overDp(y2, kOut, "y2");
        int h = p.addBuffer(DType::F32, {kRows, hid});
        p.addOp("all_gather", {a}, {h}, tpA(Attrs().i("dim", 1)));
        overDp(h, hid, "h");
        int a2a = p.addBuffer(DType::F32, {chunkSize(kRows, tp, t), hid});
        p.addOp("all_to_all", {a}, {a2a},
                tpA(Attrs().i("split_dim", 0).i("concat_dim", 1)));
        int h2 = p.addBuffer(DType::F32, {kRows, hid});
        p.addOp("all_gather", {a2a}, {h2}, tpA(Attrs().i("dim", 0)));
        overDp(h2, hid, "h2");
        int hb = p.addBuffer(DType::F32, {kRows, kHid});
        p.addOp("broadcast", {a}, {hb}, tpA(Attrs().i("root", tp - 1)));
        overDp(hb, kHid, "hb");
        std::vector<int64_t> ring;
        for (int64_t i = 0; i < tp; ++i) {
          ring.push_back(i);
          ring.push_back((i + 1) % tp);
        }
        int perm = p.addBuffer(DType::F32, {kRows, kHid});
        p.addOp("collective_permute", {a}, {perm},
                tpA(Attrs().is("pairs", ring)));
        int hswap = p.addBuffer(DType::F32, {kRows, hid});
        p.addOp("all_gather", {perm}, {hswap}, tpA(Attrs().i("dim", 1)));
        overDp(hswap, hid, "hswap");
        int got = p.addBuffer(DType::F32, {kRows, kHid});
        if (tp > 1) {
          int64_t right = d * tp + (t + 1) % tp, left = d * tp + (t + tp - 1) % tp;
          p.addOp("send", {a}, {}, Attrs().i("peer", right).i("tag", 5));
          p.addOp("recv", {}, {got}, Attrs().i("peer", left).i("tag", 5));
        } else {
          p.addOp("copy", {a}, {got});
        }
        int hswap2 = p.addBuffer(DType::F32, {kRows, hid});
        p.addOp("all_gather", {got}, {hswap2}, tpA(Attrs().i("dim", 1)));
        overDp(hswap2, hid, "hswap2");
      }
  }
  if (Status s = b.write(out); !s)
    return fail(s);
  return 0;
}
