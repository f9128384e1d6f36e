//===- CorruptionTest.cpp - Every byte of an artifact and a checkpoint ----===//
//
// A small real artifact (a training step with its training.pb, source model
// and grads/ gradient program, sealed as tesselc seals it) and a small real
// checkpoint (saved by the tooling library after two steps): a copy with
// one byte flipped, at every byte of every file up to 4 KiB and a dense
// stride beyond (the first 256 bytes always: headers and indices), is
// refused at load with a message naming the flipped file, never loaded and
// never a crash. The loads are the tooling library's own, as tessel-run
// calls them, in process (thousands of loads take a second or two).
//
//===----------------------------------------------------------------------===//
#include "../ScratchDir.h"
#include "CounterStep.h"
#include "artifact.pb.h"
#include "tessel/runtime/Artifact.h"
#include "tessel/runtime/ArtifactBuilder.h"
#include "tessel/runtime/MappedFile.h"
#include "tessel/runtime/Runtime.h"
#include "tessel/runtime/TrainingInfo.h"
#include "tessel/tooling/Checkpoint.h"
#include "tessel/tooling/Grads.h"
#include "tessel/tooling/TrainingInfo.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <functional>
#include <string>
#include <vector>

namespace tessel::runtime::test {
namespace {

namespace fs = std::filesystem;

std::string readBytes(const std::string &path) {
  std::ifstream in(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), {});
}

void writeFile(const std::string &path, const std::string &bytes) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
}

/// Every regular file under `dir`, relative to it, sorted.
std::vector<std::string> filesUnder(const std::string &dir) {
  std::vector<std::string> out;
  for (const auto &e : fs::recursive_directory_iterator(dir))
    if (e.is_regular_file())
      out.push_back(fs::relative(e.path(), dir).string());
  std::sort(out.begin(), out.end());
  return out;
}

/// The byte offsets of a file of `size` bytes that get flipped: all of a
/// small file; of a larger one the first 256 (headers, indices) and then a
/// stride that leaves no 64-byte region untouched.
std::vector<size_t> positions(size_t size) {
  std::vector<size_t> out;
  for (size_t i = 0; i < size; i += (size <= 4096 || i < 256) ? 1 : 61)
    out.push_back(i);
  if (size && out.back() != size - 1)
    out.push_back(size - 1);
  return out;
}

/// How many flipped copies of `dir`'s files flipEveryFile tries.
size_t flipsOf(const std::string &dir) {
  size_t n = 0;
  for (const std::string &name : filesUnder(dir))
    n += positions(fs::file_size(dir + "/" + name)).size();
  return n;
}

/// Flips each position of each file of `dir` in turn (XOR 0xff, restored
/// after) and expects `load(dir)` to fail naming the file; returns how many
/// flipped copies were tried.
size_t flipEveryFile(const std::string &dir,
                     const std::function<Status(const std::string &)> &load) {
  size_t tried = 0;
  for (const std::string &name : filesUnder(dir)) {
    const std::string path = dir + "/" + name;
    const std::string pristine = readBytes(path);
    // The byte rewritten in place: a truncating rewrite of the whole file
    // per flip makes the file system flush it on close (ext4), 100x slower.
    auto put = [&](size_t at, char byte) {
      std::fstream f(path, std::ios::binary | std::ios::in | std::ios::out);
      f.seekp(static_cast<std::streamoff>(at));
      f.put(byte);
    };
    for (size_t at : positions(pristine.size())) {
      put(at, static_cast<char>(pristine[at] ^ 0xff));
      Status s = load(dir);
      put(at, pristine[at]);
      ++tried;
      EXPECT_FALSE(s.isOk()) << name << ": byte " << at << " flipped, loaded";
      if (!s.isOk()) {
        EXPECT_NE(s.message().find(name), std::string::npos)
            << name << ": byte " << at << " flipped: " << s.message();
      }
      if (::testing::Test::HasFailure())
        return tried;
    }
  }
  return tried;
}

/// Everything tessel-run reads of an artifact before it trains with
/// --grads and --export-onnx: the manifest, each rank's program and
/// weights, training.pb, the source model, and grads/.
Status loadArtifact(const std::string &dir) {
  std::unique_ptr<Artifact> a;
  TSL_RETURN_IF_ERROR(Artifact::open(dir, a));
  for (int r = 0; r < a->numRanks(); ++r) {
    std::shared_ptr<const Program> p;
    TSL_RETURN_IF_ERROR(a->loadProgram(r, p));
  }
  artifact::TrainingInfo info;
  bool present = false;
  TSL_RETURN_IF_ERROR(tooling::readTrainingInfo(dir, info, present));
  if (!present)
    return Status::error("no training.pb");
  std::shared_ptr<MappedFile> source;
  TSL_RETURN_IF_ERROR(
      tooling::openArtifactFile(dir, info.source_model(), source, present));
  if (!present)
    return Status::error("no " + info.source_model());
  std::unique_ptr<Artifact> grads;
  TSL_RETURN_IF_ERROR(tooling::openGradientArtifact(dir, grads));
  std::shared_ptr<const Program> p;
  return grads->loadProgram(0, p);
}

class CorruptionTest : public ::testing::Test {
protected:
  void SetUp() override {
    art = scratch.path("step.tsl");
    ArtifactBuilder b("corruption-test");
    buildStep(b, 1);
    ASSERT_TRUE(b.write(art).isOk());
    // What tesselc --train --grads-program writes beside the programs.
    artifact::TrainingInfo info;
    info.set_loss("mse");
    info.set_source_model("source.onnx");
    artifact::TrainedTensor *t = info.add_tensors();
    t->set_tensor("s");
    t->set_dtype(artifact::F32);
    t->add_shape(kN);
    t->set_state("s");
    ASSERT_TRUE(writeTrainingInfo(art, info).isOk());
    writeFile(art + "/source.onnx", std::string(300, '\x42'));
    ArtifactBuilder g("corruption-test grads");
    buildStep(g, 1);
    ASSERT_TRUE(g.write(art + "/grads").isOk());
    Status s = recordArtifactFiles(art);
    ASSERT_TRUE(s.isOk()) << s.message();
  }

  /// The artifact's rank-0 program and a CPU executor of it.
  void openExecutor(std::shared_ptr<const Program> &program,
                    std::unique_ptr<Executor> &exec) {
    std::unique_ptr<Artifact> a;
    ASSERT_TRUE(Artifact::open(art, a).isOk());
    ASSERT_TRUE(a->loadProgram(0, program).isOk());
    ASSERT_TRUE(createExecutor("cpu", program, {}, exec).isOk());
  }

  tessel::test::ScratchDir scratch;
  std::string art;
};

TEST_F(CorruptionTest, EveryFileOfTheArtifactIsChecked) {
  Status s = loadArtifact(art);
  ASSERT_TRUE(s.isOk()) << s.message();
  // The manifest lists every file but itself and the ranks' own.
  std::unique_ptr<Artifact> a;
  ASSERT_TRUE(Artifact::open(art, a).isOk());
  std::vector<std::string> listed;
  for (const auto &f : a->manifest().files())
    listed.push_back(f.path());
  EXPECT_EQ(listed,
            (std::vector<std::string>{
                "grads/manifest.pb", "grads/rank0.program.pb",
                "grads/rank0.weights.safetensors", "source.onnx",
                "training.pb"}));
  const size_t flips = flipsOf(art);
  EXPECT_GT(flips, 1000u);
  EXPECT_EQ(flipEveryFile(art, loadArtifact), flips);
  EXPECT_TRUE(loadArtifact(art).isOk()) << "every byte restored";
}

TEST_F(CorruptionTest, AFileTheManifestDoesNotListIsRefused) {
  // An artifact of an older tesselc: training.pb beside, not in, the
  // manifest.
  std::unique_ptr<Artifact> a;
  ASSERT_TRUE(Artifact::open(art, a).isOk());
  artifact::Manifest m = a->manifest();
  m.clear_files();
  writeFile(art + "/manifest.pb", sealManifest(m));
  Status s = loadArtifact(art);
  ASSERT_FALSE(s.isOk());
  EXPECT_EQ(s.message(), art + "/training.pb: not listed in " + art +
                             "/manifest.pb (an artifact written by an older "
                             "tesselc: recompile it)");
}

TEST_F(CorruptionTest, EveryFileOfTheCheckpointIsChecked) {
  std::shared_ptr<const Program> program;
  std::unique_ptr<Executor> exec;
  ASSERT_NO_FATAL_FAILURE(openExecutor(program, exec));
  const std::vector<float> x = {0.5f, 1, -1, 2};
  std::vector<float> losses;
  for (int step = 0; step < 2; ++step) {
    ASSERT_TRUE(
        exec->setInput("x", Tensor::fromVector(DType::F32, {kN}, x)).isOk());
    ASSERT_TRUE(exec->run().isOk());
    Tensor l;
    ASSERT_TRUE(exec->getOutput("loss", l).isOk());
    losses.push_back(*l.data<float>());
  }
  const std::string ck = scratch.path("ck");
  tooling::CheckpointInfo info;
  info.step = 2;
  info.dataPosition = 2;
  info.losses = &losses;
  tooling::CheckpointGroup group;
  Status saved = tooling::saveCheckpoint(*exec, ck, info, group);
  ASSERT_TRUE(saved.isOk()) << saved.message();
  EXPECT_EQ(filesUnder(ck),
            (std::vector<std::string>{"losses.npy",
                                      "model.safetensors.index.json",
                                      "rank0.safetensors"}));

  // What --resume reads: the index, every state, the losses before it.
  std::unique_ptr<Executor> fresh;
  ASSERT_TRUE(createExecutor("cpu", program, {}, fresh).isOk());
  auto resume = [&](const std::string &dir) -> Status {
    tooling::CheckpointInfo at;
    TSL_RETURN_IF_ERROR(tooling::readCheckpointInfo(dir, at));
    TSL_RETURN_IF_ERROR(tooling::loadCheckpoint(*fresh, dir, 0, 1));
    std::vector<float> history;
    bool found = false;
    TSL_RETURN_IF_ERROR(tooling::readCheckpointLosses(dir, history, found));
    if (!found)
      return Status::error("no losses");
    return Status::ok();
  };
  Status s = resume(ck);
  ASSERT_TRUE(s.isOk()) << s.message();
  Tensor state;
  ASSERT_TRUE(fresh->getState("count", state).isOk());
  EXPECT_EQ(*state.data<float>(), 2.0f);
  const size_t flips = flipsOf(ck);
  EXPECT_GT(flips, 500u);
  EXPECT_EQ(flipEveryFile(ck, resume), flips);
  EXPECT_TRUE(resume(ck).isOk()) << "every byte restored";
}

TEST_F(CorruptionTest, AnEditedDataPositionIsRefusedEvenResealed) {
  std::shared_ptr<const Program> program;
  std::unique_ptr<Executor> exec;
  ASSERT_NO_FATAL_FAILURE(openExecutor(program, exec));
  const std::string ck = scratch.path("ck");
  tooling::CheckpointInfo info;
  info.step = 3;
  info.dataPosition = 5;
  tooling::CheckpointGroup group;
  ASSERT_TRUE(tooling::saveCheckpoint(*exec, ck, info, group).isOk());
  const std::string indexPath = ck + "/model.safetensors.index.json";
  std::string index = readBytes(indexPath);
  size_t at = index.find("\"data_position\": 5");
  ASSERT_NE(at, std::string::npos) << index;
  index.replace(at, 18, "\"data_position\": 7");
  // Edited by hand: the index's checksum no longer holds.
  writeFile(indexPath, index);
  Status s = tooling::loadCheckpoint(*exec, ck, 0, 1);
  ASSERT_FALSE(s.isOk());
  EXPECT_NE(s.message().find(indexPath + ": corrupted: its CRC-32C is "),
            std::string::npos)
      << s.message();
  // Sealed again after the edit: the rank file says where it stood.
  writeFile(indexPath, tooling::sealIndex(
                           index.substr(0, index.rfind("\"index_crc32c\""))));
  s = tooling::loadCheckpoint(*exec, ck, 0, 1);
  ASSERT_FALSE(s.isOk());
  EXPECT_EQ(s.message(), ck + "/rank0.safetensors: corrupt checkpoint: its "
                              "data_position is '5', the index says 7");
}

} // namespace
} // namespace tessel::runtime::test
