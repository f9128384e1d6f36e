//===- make-pipeline-artifact.cpp - Pipelined artifacts for the lit tests -===//
//
//   make-pipeline-artifact [--stages P] [--microbatches M] [--rows R]
//                          [--width D] [--gpipe] [--one-rank] OUT.tsl
//   make-pipeline-artifact --pingpong BYTES OUT.tsl
//
// Writes the hand-built pipeline of PipelineProgram.h: P ranks (mesh
// pp=P), rank s running stage s's 1F1B (or GPipe) actions with p2p between
// stages, every instruction tagged with its action; --one-rank writes the
// same model as one rank's program, microbatch after microbatch, whose
// outputs the pipeline's equal bitwise. --pingpong writes 2 ranks that
// bounce an f32 message of BYTES there and back and nothing else: half a
// run is one p2p transfer (docs/pipeline.md's figure for Gloo's p2p).
//
//===----------------------------------------------------------------------===//
#include "PipelineProgram.h"

#include "tessel/runtime/Runtime.h"

#include <cstdio>
#include <cstdlib>
#include <string>

using namespace tessel::runtime;
using namespace tessel::runtime::pipetest;

int main(int argc, char **argv) {
  PipelineSpec p;
  bool oneRank = false;
  int pingpong = 0;
  std::string out;
  auto usage = [] {
    std::fprintf(stderr,
                 "usage: make-pipeline-artifact [--stages P] [--microbatches "
                 "M] [--rows R] [--width D] [--gpipe] [--one-rank] OUT.tsl\n"
                 "       make-pipeline-artifact --pingpong BYTES OUT.tsl\n");
    return 2;
  };
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    auto next = [&](auto &v) {
      if (i + 1 >= argc)
        return false;
      v = std::atoi(argv[++i]);
      return true;
    };
    bool ok = true;
    if (a == "--stages")
      ok = next(p.stages);
    else if (a == "--microbatches")
      ok = next(p.microbatches);
    else if (a == "--rows")
      ok = next(p.rows);
    else if (a == "--width")
      ok = next(p.width);
    else if (a == "--gpipe")
      p.oneF1B = false;
    else if (a == "--one-rank")
      oneRank = true;
    else if (a == "--pingpong")
      ok = next(pingpong);
    else if (a[0] != '-' && out.empty())
      out = a;
    else
      ok = false;
    if (!ok)
      return usage();
  }
  if (out.empty() || pingpong < 0 || pingpong > (1 << 30) || p.stages < 1 ||
      p.microbatches < 1 || p.rows < 1 ||
      p.width < 1 || p.width > 4096 || p.rows > 4096 || p.microbatches > 256)
    return usage();
  ArtifactBuilder b("make-pipeline-artifact");
  if (pingpong > 0) {
    const int64_t n = (pingpong + 3) / 4;
    b.setMesh({{"pp", 2}});
    std::vector<float> x = pipelineValues(n, 1);
    for (int r = 0; r < 2; ++r) {
      ProgramBuilder &p = b.rank(r);
      int got = p.addBuffer(DType::F32, {n}, "got");
      if (r == 0) {
        int w = p.addWeight("x", DType::F32, {n}, x.data());
        p.addOp("send", {w}, {}, Attrs().i("peer", 1).i("tag", 0));
        p.addOp("recv", {}, {got}, Attrs().i("peer", 1).i("tag", 1));
      } else {
        p.addOp("recv", {}, {got}, Attrs().i("peer", 0).i("tag", 0));
        p.addOp("send", {got}, {}, Attrs().i("peer", 0).i("tag", 1));
      }
      p.addOutput("got", got);
    }
    if (Status s = b.write(out); !s) {
      std::fprintf(stderr, "make-pipeline-artifact: %s\n", s.message().c_str());
      return 1;
    }
    return 0;
  }
  const int ranks = oneRank ? 1 : p.stages;
  if (ranks > 1)
    b.setMesh({{"pp", ranks}});
  for (int r = 0; r < ranks; ++r)
    buildPipelineRank(p, r, oneRank, b.rank(r));
  if (Status s = b.write(out); !s) {
    std::fprintf(stderr, "make-pipeline-artifact: %s\n", s.message().c_str());
    return 1;
  }
  return 0;
}
