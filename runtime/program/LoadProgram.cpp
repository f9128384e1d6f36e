//===- LoadProgram.cpp - Artifact programs into executable Programs -------===//
//
// The artifact library reads and writes programs; what makes one executable
// (Program::create's validation) belongs to the runtime, so the two members
// of the artifact API that return a Program are defined here.
//
//===----------------------------------------------------------------------===//
#include "artifact.pb.h"
#include "tessel/runtime/Artifact.h"
#include "tessel/runtime/ArtifactBuilder.h"
#include "tessel/runtime/Program.h"

namespace tessel::runtime {

namespace {

Status create(ProgramData &data, std::shared_ptr<const Program> &out) {
  return Program::create(*data.proto, data.weightData, std::move(data.keep),
                         data.path, out, &data.fileBacked);
}

} // namespace

Status Artifact::loadProgram(int rank,
                             std::shared_ptr<const Program> &out) const {
  ProgramData data;
  TSL_RETURN_IF_ERROR(readProgram(rank, data));
  return create(data, out);
}

Status ProgramBuilder::build(std::shared_ptr<const Program> &out) {
  ProgramData data;
  TSL_RETURN_IF_ERROR(finish(data));
  return create(data, out);
}

} // namespace tessel::runtime
