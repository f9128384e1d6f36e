//===- ArtifactTest.cpp - Writing, loading and rejecting artifacts --------===//
#include "MlpFixture.h"
#include "../ScratchDir.h"

#include "artifact.pb.h"
#include "tessel/runtime/Safetensors.h"

#include <fstream>
#include <sstream>
#include <sys/stat.h>

using namespace tessel::runtime;
using namespace tessel::runtime::test;

namespace {

std::string readFile(const std::string &p) {
  std::ifstream in(p, std::ios::binary);
  std::ostringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

void writeFileBytes(const std::string &p, const std::string &bytes) {
  std::ofstream out(p, std::ios::binary | std::ios::trunc);
  out.write(bytes.data(), bytes.size());
}

class ArtifactTest : public ::testing::Test {
protected:
  tessel::test::ScratchDir scratch;
  void SetUp() override {
    dir = scratch.path("artifact.tsl");
    ArtifactBuilder b("artifact-test");
    mlp.build(b.rank(0));
    Status s = b.write(dir);
    ASSERT_TRUE(s.isOk()) << s.message();
  }

  /// Opens and loads rank 0; returns the first error.
  Status load(bool verify = true) {
    std::unique_ptr<Artifact> a;
    LoadOptions o;
    o.verifyChecksums = verify;
    TSL_RETURN_IF_ERROR(Artifact::open(dir, a, o));
    std::shared_ptr<const Program> p;
    return a->loadProgram(0, p);
  }

  /// Rewrites the message in file `name` of the artifact with edit(message).
  template <typename Message, typename Edit>
  void editMessage(const std::string &name, Edit edit) {
    Message m;
    ASSERT_TRUE(m.ParseFromString(readFile(dir + "/" + name)));
    edit(m);
    // A manifest is sealed with its checksum, as every writer seals it.
    if constexpr (std::is_same_v<Message, tessel::artifact::Manifest>)
      writeFileBytes(dir + "/" + name, sealManifest(m));
    else
      writeFileBytes(dir + "/" + name, m.SerializeAsString());
  }

  /// Rewrites file `name` of the artifact with edit(its bytes), in place.
  void editBytes(const std::string &name,
                 const std::function<void(std::string &)> &edit) {
    std::string bytes = readFile(dir + "/" + name);
    edit(bytes);
    writeFileBytes(dir + "/" + name, bytes);
  }

  void expectLoadError(const std::string &file, const std::string &needle,
                       bool verify = true) {
    Status s = load(verify);
    ASSERT_FALSE(s.isOk()) << "expected an error mentioning " << needle;
    EXPECT_NE(s.message().find(file), std::string::npos) << s.message();
    EXPECT_NE(s.message().find(needle), std::string::npos) << s.message();
  }

  std::string dir;
  Mlp mlp{71};
};

TEST_F(ArtifactTest, LayoutAndRoundTrip) {
  struct stat st;
  for (const char *f : {"manifest.pb", "rank0.program.pb", "rank0.weights.safetensors"})
    EXPECT_EQ(stat((dir + "/" + f).c_str(), &st), 0) << f;
  std::unique_ptr<Artifact> a;
  ASSERT_TRUE(Artifact::open(dir, a).isOk());
  EXPECT_EQ(a->numRanks(), 1);
  EXPECT_EQ(a->producer(), "artifact-test");
  std::shared_ptr<const Program> p;
  Status s = a->loadProgram(0, p);
  ASSERT_TRUE(s.isOk()) << s.message();
  EXPECT_EQ(p->ops.size(), 5u);
  // Weights are mapped from the file, not copied, and naturally aligned.
  for (const BufferInfo &b : p->buffers) {
    if (b.kind == BufferInfo::Kind::Weight) {
      EXPECT_EQ(reinterpret_cast<uintptr_t>(b.data) % 4, 0u);
    }
  }

  std::unique_ptr<Executor> exec;
  ASSERT_TRUE(createExecutor("cpu", p, {}, exec).isOk());
  std::mt19937 rng(1);
  Tensor x = randomF32({Mlp::kBatch, Mlp::kIn}, rng);
  ASSERT_TRUE(exec->setInput("x", x).isOk());
  ASSERT_TRUE(exec->run().isOk());
  Tensor y;
  ASSERT_TRUE(exec->getOutput("y", y).isOk());
  expectNear(y, mlp.reference(x), 1e-6, 1e-5);
  // Liveness planning reuses memory: 5 [4,32]-ish buffers need less than all.
  EXPECT_LT(p->arenaSize, 4u * 64 * 8 * 5);
}

TEST_F(ArtifactTest, SafetensorsFileIsStandard) {
  std::string w = readFile(dir + "/rank0.weights.safetensors");
  ASSERT_GE(w.size(), 8u);
  uint64_t n = 0;
  std::memcpy(&n, w.data(), 8);
  EXPECT_EQ((8 + n) % 64, 0u);
  std::string header = w.substr(8, n);
  EXPECT_NE(header.find("\"fc1.weight\":{\"dtype\":\"F32\",\"shape\":[8,32]"),
            std::string::npos)
      << header;
  EXPECT_EQ(w.size(), 8 + n + 4 * (8 * 32 + 32 + 32 * 5 + 5));
}

// Weights streamed from sources when the artifact is written: a source
// that passes its bytes in pieces, blocks that two ranks hold alike stored
// once (shared.weights.safetensors), and a source that falls short named.
TEST(ArtifactStreaming, SourcesAndSharedWeights) {
  tessel::test::ScratchDir scratch;
  const std::string dir = scratch.path("streamed.tsl");
  std::vector<float> whole(6 * 4), own0(6 * 4), own1(6 * 4);
  for (size_t i = 0; i < whole.size(); ++i)
    whole[i] = 0.5f * float(i);
  for (int i = 0; i < 24; ++i) {
    own0[i] = float(100 + i);
    own1[i] = float(200 + i);
  }
  // Three bytes at a time: no piece is a whole element.
  auto pieces = [](const std::vector<float> &v) {
    return [v](const ProgramBuilder::ByteSink &sink) -> Status {
      const char *p = reinterpret_cast<const char *>(v.data());
      size_t n = v.size() * sizeof(float);
      for (size_t at = 0; at < n; at += 3)
        TSL_RETURN_IF_ERROR(sink(p + at, std::min<size_t>(3, n - at)));
      return Status::ok();
    };
  };
  ArtifactBuilder b("streaming-test");
  b.setMesh({{"dp", 2}});
  for (int r = 0; r < 2; ++r) {
    ProgramBuilder &p = b.rank(r);
    int x = p.addInput("x", DType::F32, {6, 4});
    int w = p.addWeight("w", DType::F32, {6, 4}, pieces(whole), "w");
    int v = p.addWeight("v", DType::F32, {6, 4}, pieces(r ? own1 : own0),
                        r ? "v@1" : "v@0");
    int y = p.addBuffer(DType::F32, {6, 4});
    int z = p.addBuffer(DType::F32, {6, 4});
    p.addOp("add", {x, w}, {y});
    p.addOp("add", {y, v}, {z});
    p.addOutput("z", z);
  }
  Status s = b.write(dir);
  ASSERT_TRUE(s.isOk()) << s.message();
  const std::string shared = readFile(dir + "/shared.weights.safetensors");
  EXPECT_NE(shared.find("\"w\":{\"dtype\":\"F32\",\"shape\":[6,4]"),
            std::string::npos);
  EXPECT_EQ(shared.find("\"v"), std::string::npos);
  for (int r = 0; r < 2; ++r) {
    const std::string own =
        readFile(dir + "/rank" + std::to_string(r) + ".weights.safetensors");
    EXPECT_EQ(own.find("\"w\""), std::string::npos) << "rank " << r;
    EXPECT_NE(own.find("\"v\""), std::string::npos) << "rank " << r;
  }
  std::unique_ptr<Artifact> a;
  ASSERT_TRUE(Artifact::open(dir, a).isOk());
  for (int r = 0; r < 2; ++r) {
    std::shared_ptr<const Program> p;
    s = a->loadProgram(r, p);
    ASSERT_TRUE(s.isOk()) << s.message();
    std::unique_ptr<Executor> exec;
    ASSERT_TRUE(createExecutor("cpu", p, {}, exec).isOk());
    Tensor x = Tensor::fromVector(DType::F32, {6, 4},
                                  std::vector<float>(24, 0.0f));
    ASSERT_TRUE(exec->setInput("x", x).isOk());
    ASSERT_TRUE(exec->run().isOk());
    Tensor z;
    ASSERT_TRUE(exec->getOutput("z", z).isOk());
    const std::vector<float> &own = r ? own1 : own0;
    for (int i = 0; i < 6; ++i)
      for (int j = 0; j < 4; ++j)
        EXPECT_EQ(z.data<float>()[i * 4 + j],
                  whole[i * 4 + j] + own[i * 4 + j])
            << "rank " << r << " [" << i << ", " << j << "]";
  }

  // A source that gives fewer bytes than its buffer: one message naming it.
  ArtifactBuilder bad("streaming-test");
  ProgramBuilder &p = bad.rank(0);
  int w = p.addWeight("short.weight", DType::F32, {4},
                      [](const ProgramBuilder::ByteSink &sink) {
                        float one = 1.0f;
                        return sink(&one, sizeof one);
                      });
  p.addOutput("w", w);
  s = bad.write(scratch.path("bad.tsl"));
  ASSERT_FALSE(s.isOk());
  EXPECT_NE(s.message().find("weight 'short.weight': its source gave 4 of "
                             "its 16 bytes"),
            std::string::npos)
      << s.message();
}

TEST_F(ArtifactTest, MissingDirectory) {
  dir += ".nope";
  expectLoadError(dir, "not a Tessel artifact directory");
}

TEST_F(ArtifactTest, GarbageManifest) {
  writeFileBytes(dir + "/manifest.pb", "\xff\xff\xff garbage");
  expectLoadError("manifest.pb", "no manifest checksum");
  // Garbage sealed with its checksum: the protobuf parse refuses it.
  std::string bytes = "\xff\xff\xff garbage";
  uint32_t crc = crc32c(bytes.data(), bytes.size());
  bytes += '\x7d';
  for (int i = 0; i < 4; ++i)
    bytes += static_cast<char>((crc >> (8 * i)) & 0xff);
  writeFileBytes(dir + "/manifest.pb", bytes);
  expectLoadError("manifest.pb", "corrupted or truncated");
}

TEST_F(ArtifactTest, TruncatedManifest) {
  const std::string m = readFile(dir + "/manifest.pb");
  editBytes("manifest.pb", [](std::string &b) { b.resize(b.size() - 3); });
  expectLoadError("manifest.pb", "no manifest checksum");
  // Bytes cut from the middle: the seal is there, its CRC no longer holds.
  editBytes("manifest.pb", [&](std::string &b) {
    b = m.substr(0, m.size() - 9) + m.substr(m.size() - 5);
  });
  expectLoadError("manifest.pb", "corrupted: its CRC-32C is");
}

TEST_F(ArtifactTest, ManifestOfAnOlderTesselc) {
  // What tesselc wrote before manifests had their checksum.
  tessel::artifact::Manifest m;
  ASSERT_TRUE(m.ParseFromString(readFile(dir + "/manifest.pb")));
  m.clear_manifest_crc32c();
  writeFileBytes(dir + "/manifest.pb", m.SerializeAsString());
  expectLoadError("manifest.pb", "no manifest checksum: an artifact written "
                                 "by an older tesselc (recompile it)");
}

TEST_F(ArtifactTest, WrongFormatVersion) {
  editMessage<tessel::artifact::Manifest>(
      "manifest.pb", [](auto &m) { m.set_format_version(99); });
  expectLoadError("manifest.pb", "unsupported format_version 99 (this runtime reads 1)");
}

TEST_F(ArtifactTest, WrongProgramFormatVersion) {
  editMessage<tessel::artifact::Program>(
      "rank0.program.pb", [](auto &p) { p.set_format_version(2); });
  expectLoadError("rank0.program.pb", "unsupported program format_version 2",
                  /*verify=*/false);
}

TEST_F(ArtifactTest, TruncatedProgram) {
  editBytes("rank0.program.pb", [](std::string &b) { b.resize(b.size() / 2); });
  expectLoadError("rank0.program.pb", "truncated or corrupted");
  expectLoadError("rank0.program.pb", "truncated or corrupted", false);
}

TEST_F(ArtifactTest, CorruptedProgramByte) {
  editBytes("rank0.program.pb", [](std::string &b) { b[b.size() / 2] ^= 0x5a; });
  expectLoadError("rank0.program.pb", "CRC-32C");
}

TEST_F(ArtifactTest, TruncatedWeights) {
  const size_t size = readFile(dir + "/rank0.weights.safetensors").size();
  editBytes("rank0.weights.safetensors",
            [](std::string &b) { b.resize(b.size() - 10); });
  expectLoadError("rank0.weights.safetensors", "truncated or corrupted");
  // Without checksums the safetensors index itself notices.
  editMessage<tessel::artifact::Manifest>("manifest.pb", [&](auto &m) {
    m.mutable_ranks(0)->mutable_weights(0)->set_size(size - 10);
  });
  expectLoadError("rank0.weights.safetensors", "outside the data section", false);
}

TEST_F(ArtifactTest, BadSafetensorsHeader) {
  editBytes("rank0.weights.safetensors", [](std::string &b) { b[8] = '['; });
  expectLoadError("rank0.weights.safetensors", "safetensors", false);
}

TEST_F(ArtifactTest, RandomCorruptionNeverCrashes) {
  // Flip bytes of the program and weights with checksums off: every load
  // either succeeds or reports an error naming a file.
  std::string prog = readFile(dir + "/rank0.program.pb");
  std::string weights = readFile(dir + "/rank0.weights.safetensors");
  std::mt19937 rng(72);
  int errors = 0;
  for (int trial = 0; trial < 300; ++trial) {
    std::string p = prog, w = weights;
    std::string &target = trial % 3 == 0 ? w : p;
    size_t limit = &target == &w ? std::min<size_t>(w.size(), 600) : target.size();
    for (int k = 0; k < 1 + trial % 4; ++k)
      target[rng() % limit] = static_cast<char>(rng());
    writeFileBytes(dir + "/rank0.program.pb", p);
    writeFileBytes(dir + "/rank0.weights.safetensors", w);
    std::unique_ptr<Artifact> a;
    LoadOptions o;
    o.verifyChecksums = false;
    ASSERT_TRUE(Artifact::open(dir, a, o).isOk());
    std::shared_ptr<const Program> pr;
    Status s = a->loadProgram(0, pr);
    if (!s) {
      ++errors;
      EXPECT_NE(s.message().find(".tsl/rank0."), std::string::npos) << s.message();
      continue;
    }
    // A program that still validates must run without crashing.
    std::unique_ptr<Executor> exec;
    if (createExecutor("cpu", pr, {}, exec).isOk())
      (void)exec->run();
  }
  EXPECT_GT(errors, 0);
}

TEST(ProgramValidation, RejectsBadPrograms) {
  auto expectBuildError = [](std::function<void(ProgramBuilder &)> f,
                             const std::string &needle) {
    ProgramBuilder pb;
    f(pb);
    std::shared_ptr<const Program> p;
    Status s = pb.build(p);
    ASSERT_FALSE(s.isOk()) << needle;
    EXPECT_NE(s.message().find(needle), std::string::npos) << s.message();
  };
  expectBuildError(
      [](ProgramBuilder &p) {
        int a = p.addInput("a", DType::F32, {2, 3});
        int b = p.addInput("b", DType::F32, {4});
        int c = p.addBuffer(DType::F32, {2, 3});
        p.addOp("add", {a, b}, {c}, {}, "bad_add");
      },
      "instruction 0 (add 'bad_add'): operand shapes [2, 3] and [4] do not broadcast");
  expectBuildError(
      [](ProgramBuilder &p) {
        int a = p.addInput("a", DType::F32, {2, 3});
        int b = p.addInput("b", DType::F32, {4, 5});
        int c = p.addBuffer(DType::F32, {2, 5});
        p.addOp("matmul", {a, b}, {c});
      },
      "contraction dims differ");
  expectBuildError(
      [](ProgramBuilder &p) {
        int a = p.addInput("a", DType::F32, {2, 3});
        int c = p.addBuffer(DType::F32, {2, 3});
        p.addOp("frobnicate", {a}, {c});
      },
      "unknown op 'frobnicate'");
  expectBuildError(
      [](ProgramBuilder &p) {
        int a = p.addInput("a", DType::F32, {2, 3});
        int c = p.addBuffer(DType::F32, {3, 2});
        p.addOp("transpose", {a}, {c}, Attrs().is("perm", {0, 0}));
      },
      "perm is not a permutation");
  expectBuildError(
      [](ProgramBuilder &p) {
        int a = p.addInput("a", DType::F32, {2, 3});
        p.addOp("relu", {a}, {7});
      },
      "result buffer 7 does not exist");
  {
    // An offset past the arena (as a corrupted artifact could hold).
    ProgramBuilder pb;
    int a = pb.addInput("a", DType::F32, {2, 3});
    int c = pb.addBuffer(DType::F32, {2, 3});
    pb.addOp("relu", {a}, {c});
    pb.planMemory();
    pb.proto().mutable_buffers(c)->set_offset(1 << 20);
    std::shared_ptr<const Program> p;
    Status s = Program::create(pb.proto(), {}, {}, "prog.pb", p);
    ASSERT_FALSE(s.isOk());
    EXPECT_NE(s.message().find("prog.pb: buffer 1: offset 1048576 and length "
                               "24 lie outside the arena of"),
              std::string::npos)
        << s.message();
    // An offset near 2^64: offset + length wraps into the arena, and the
    // check must not form that sum.
    pb.proto().mutable_buffers(c)->set_offset(UINT64_MAX - 7);
    s = Program::create(pb.proto(), {}, {}, "prog.pb", p);
    ASSERT_FALSE(s.isOk());
    EXPECT_NE(s.message().find("offset 18446744073709551608 and length 24 lie "
                               "outside the arena of"),
              std::string::npos)
        << s.message();
  }
  {
    // An arena of a petabyte: both numbers, the bytes needed and available.
    ProgramBuilder pb;
    int a = pb.addInput("a", DType::F32, {2, 3});
    int c = pb.addBuffer(DType::F32, {2, 3});
    pb.addOp("relu", {a}, {c});
    pb.planMemory();
    pb.proto().set_arena_size(uint64_t(1) << 50);
    std::shared_ptr<const Program> p;
    Status s = Program::create(pb.proto(), {}, {}, "prog.pb", p);
    ASSERT_FALSE(s.isOk());
    EXPECT_NE(s.message().find(
                  "prog.pb: the program's arena needs 1125899906842624 bytes, "
                  "more than the 70368744177664 (64 TiB) a program may use; "
                  "this machine has " +
                  std::to_string(physicalMemoryBytes()) + " bytes of memory"),
              std::string::npos)
        << s.message();
  }
  expectBuildError(
      [](ProgramBuilder &p) {
        int a = p.addBuffer(DType::F32, {4, 4}, "a", 0);
        int c = p.addBuffer(DType::F32, {4, 4}, "c", 32);
        p.addOp("softmax", {a}, {c});
      },
      "overlaps operand buffer");
  expectBuildError(
      [](ProgramBuilder &p) {
        float w = 1;
        int a = p.addInput("a", DType::F32, {1});
        int k = p.addConstant(DType::F32, {1}, &w);
        p.addOp("neg", {a}, {k});
      },
      "is read-only");
  expectBuildError(
      [](ProgramBuilder &p) {
        int a = p.addInput("a", DType::F32, {2});
        int c = p.addBuffer(DType::I64, {2});
        p.addOp("cast", {a}, {c}, Attrs().s("to", "f128"));
      },
      "attribute 'to' = 'f128'");
  expectBuildError(
      [](ProgramBuilder &p) {
        int a = p.addInput("a", DType::F32, {2});
        int c = p.addBuffer(DType::F32, {2});
        p.addOp("round_float", {a}, {c}, Attrs().i("exponent_bits", 9));
      },
      "attribute 'exponent_bits' must be in [2, 8], got 9");
  expectBuildError(
      [](ProgramBuilder &p) {
        int a = p.addInput("a", DType::F32, {2});
        int c = p.addBuffer(DType::F32, {2});
        p.addOp("round_float", {a}, {c}, Attrs().i("mantissa_bits", 24));
      },
      "attribute 'mantissa_bits' must be in [0, 23], got 24");
}

// A slice of a 1-D buffer by step 1 is a view: the planner places it
// inside its operand at its offset (64-byte aligned), keeps the operand's
// slot alive while it lives, and the loader accepts it; an unaligned or
// strided slice, or one of a buffer written again later, gets bytes of its
// own. A result inside its operand elsewhere is refused.
TEST(ProgramValidation, SliceViews) {
  auto slice = [](int64_t start, int64_t end, int64_t step) {
    return Attrs().is("starts", {start}).is("ends", {end}).is("steps", {step});
  };
  ProgramBuilder pb;
  int a = pb.addInput("a", DType::F32, {256});
  int b = pb.addBuffer(DType::F32, {256});
  pb.addOp("neg", {a}, {b});
  int v1 = pb.addBuffer(DType::F32, {16}), v2 = pb.addBuffer(DType::F32, {32});
  pb.addOp("slice", {b}, {v1}, slice(0, 16, 1));
  pb.addOp("slice", {b}, {v2}, slice(32, 64, 1));
  int odd = pb.addBuffer(DType::F32, {8}), strided = pb.addBuffer(DType::F32, {8});
  pb.addOp("slice", {b}, {odd}, slice(3, 11, 1));
  pb.addOp("slice", {b}, {strided}, slice(0, 16, 2));
  // b's last use; the views keep its bytes alive past it.
  int big = pb.addBuffer(DType::F32, {256});
  pb.addOp("neg", {b}, {big});
  int c1 = pb.addBuffer(DType::F32, {16}), c2 = pb.addBuffer(DType::F32, {32});
  pb.addOp("neg", {v1}, {c1});
  pb.addOp("neg", {v2}, {c2});
  // d is written again after its slice: the slice copies.
  int d = pb.addBuffer(DType::F32, {256});
  pb.addOp("neg", {big}, {d});
  int w = pb.addBuffer(DType::F32, {16});
  pb.addOp("slice", {d}, {w}, slice(0, 16, 1));
  pb.addOp("relu", {d}, {d});
  for (int o : {odd, strided, c1, c2, w, d})
    pb.addOutput("o" + std::to_string(o), o);
  pb.planMemory();
  auto off = [&](int id) { return pb.proto().buffers(id).offset(); };
  EXPECT_EQ(off(v1), off(b));
  EXPECT_EQ(off(v2), off(b) + 32 * 4);
  auto outside = [&](int id, int of) {
    return off(id) + pb.proto().buffers(id).shape(0) * 4 <= off(of) ||
           off(of) + 256 * 4 <= off(id);
  };
  EXPECT_TRUE(outside(odd, b));
  EXPECT_TRUE(outside(strided, b));
  EXPECT_TRUE(outside(w, d));
  // The views live to c1 and c2: neither big nor them share b's bytes.
  EXPECT_TRUE(outside(big, b));
  EXPECT_TRUE(outside(c1, b));
  EXPECT_TRUE(outside(c2, b));
  std::shared_ptr<const Program> p;
  Status s = Program::create(pb.proto(), {}, {}, "prog.pb", p);
  EXPECT_TRUE(s.isOk()) << s.message();

  // The same view one element off is not where the slice lies.
  pb.proto().mutable_buffers(v2)->set_offset(off(b) + 31 * 4);
  s = Program::create(pb.proto(), {}, {}, "prog.pb", p);
  ASSERT_FALSE(s.isOk());
  EXPECT_NE(s.message().find("overlaps operand buffer"), std::string::npos)
      << s.message();
}

} // namespace

// A safetensors header nested deeper than any real one: refused before the
// recursive parser sees it, with the depth found and the limit.
TEST(Safetensors, DeepHeaderNamesDepthAndLimit) {
  const std::string header = "{\"__metadata__\": {\"x\": " +
                             std::string(100000, '[') +
                             std::string(100000, ']') + "}}";
  std::string file(8, '\0');
  for (int i = 0; i < 8; ++i)
    file[i] = char((header.size() >> (8 * i)) & 0xff);
  file += header;
  SafetensorsIndex idx;
  Status s = parseSafetensors(reinterpret_cast<const unsigned char *>(file.data()),
                              file.size(), "deep.safetensors", idx);
  ASSERT_FALSE(s.isOk());
  EXPECT_EQ(s.message(), "deep.safetensors: invalid safetensors file: JSON "
                         "header nested 100002 deep at byte 53 (the limit is "
                         "32)");
}
