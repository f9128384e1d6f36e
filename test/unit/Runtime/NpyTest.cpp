//===- NpyTest.cpp - .npy reading and writing -----------------------------===//
#include "TestUtil.h"
#include "../ScratchDir.h"

#include <cstdio>
#include <unistd.h>

using namespace tessel::runtime;
using namespace tessel::runtime::test;

namespace {

TEST(Npy, RoundTripsEveryDType) {
  std::mt19937 rng(51);
  std::vector<Tensor> tensors = {randomF32({2, 3}, rng), randomI64({5}, rng, -9, 9),
                                 randomBool({3, 1, 2}, rng), randomF32({}, rng),
                                 Tensor(DType::F32, {0, 4})};
  Tensor i32(DType::I32, {4});
  for (int i = 0; i < 4; ++i)
    i32.data<int32_t>()[i] = i * 1000 - 7;
  tensors.push_back(i32);
  Tensor f64(DType::F64, {3});
  const double f64Values[] = {1.0 / 3.0, -1e300, 5e-324};
  std::memcpy(f64.data(), f64Values, sizeof f64Values);
  tensors.push_back(f64);
  for (const Tensor &t : tensors) {
    std::string img = encodeNpy(t);
    if (t.dtype() == DType::F64)
      EXPECT_NE(img.find("'<f8'"), std::string::npos);
    // numpy aligns the data to 64 bytes (format 1.0 header).
    EXPECT_EQ((img.size() - t.byteSize()) % 64, 0u);
    Tensor back;
    Status s = parseNpy(img.data(), img.size(), "mem", back);
    ASSERT_TRUE(s.isOk()) << s.message();
    EXPECT_EQ(back.dtype(), t.dtype());
    EXPECT_EQ(back.shape(), t.shape());
    EXPECT_EQ(0, std::memcmp(back.data(), t.data(), t.byteSize()));
  }
}

TEST(Npy, FileRoundTrip) {
  std::mt19937 rng(52);
  Tensor t = randomF32({3, 4}, rng);
  tessel::test::ScratchDir scratch;
  std::string path = scratch.path("roundtrip.npy");
  ASSERT_TRUE(writeNpy(path, t).isOk());
  Tensor back;
  ASSERT_TRUE(readNpy(path, back).isOk());
  EXPECT_EQ(0, std::memcmp(back.data(), t.data(), t.byteSize()));
  std::remove(path.c_str());
}

TEST(Npy, ReadsNumpyWrittenHeaders) {
  // As numpy 1.x writes them, including a version 2.0 header.
  std::string h = "{'descr': '<i8', 'fortran_order': False, 'shape': (2,), }";
  h.append(118 - h.size() - 10 - 1 + 10, ' ');
  h += '\n';
  std::string img = std::string("\x93NUMPY\x01\x00", 8);
  img += static_cast<char>(h.size());
  img += '\0';
  img += h;
  int64_t v[2] = {42, -1};
  img.append(reinterpret_cast<char *>(v), 16);
  Tensor t;
  ASSERT_TRUE(parseNpy(img.data(), img.size(), "v1", t).isOk());
  EXPECT_EQ(t.data<int64_t>()[0], 42);

  std::string img2 = std::string("\x93NUMPY\x02\x00", 8);
  uint32_t len = static_cast<uint32_t>(h.size());
  img2.append(reinterpret_cast<char *>(&len), 4);
  img2 += h;
  img2.append(reinterpret_cast<char *>(v), 16);
  ASSERT_TRUE(parseNpy(img2.data(), img2.size(), "v2", t).isOk());
  EXPECT_EQ(t.data<int64_t>()[1], -1);
}

TEST(Npy, RejectsBadFiles) {
  Tensor t = Tensor::fromVector<float>(DType::F32, {2}, {1, 2});
  std::string good = encodeNpy(t);
  Tensor out;
  auto expectError = [&](std::string img, const std::string &needle) {
    Status s = parseNpy(img.data(), img.size(), "bad.npy", out);
    ASSERT_FALSE(s.isOk()) << needle;
    EXPECT_NE(s.message().find("bad.npy"), std::string::npos) << s.message();
    EXPECT_NE(s.message().find(needle), std::string::npos) << s.message();
  };
  expectError("", "magic");
  expectError("NUMPY garbage", "magic");
  expectError(good.substr(0, good.size() - 1), "truncated data");
  expectError(good.substr(0, 20), "truncated header");
  std::string c8 = good;
  c8.replace(c8.find("<f4"), 3, "<c8");
  expectError(c8, "unsupported dtype '<c8'");
  std::string fortran = good;
  fortran.replace(fortran.find("False"), 5, "True ");
  expectError(fortran, "fortran_order");
  std::string big = good;
  big.replace(big.find("<f4"), 3, ">f4");
  expectError(big, "unsupported dtype '>f4'");
  Status s = readNpy("/nonexistent/x.npy", out);
  EXPECT_FALSE(s.isOk());
  EXPECT_NE(s.message().find("/nonexistent/x.npy"), std::string::npos);
}

} // namespace
