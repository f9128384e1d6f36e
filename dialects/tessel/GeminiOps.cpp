//===- GeminiOps.cpp - verifiers of the Gemini ops ------------------------===//
//
// The ops of GeminiOps.td (tesselc --plugin gemini). Each check carries the
// constraint label of its ODS description.
//
//===----------------------------------------------------------------------===//

#include "dialects/tessel/TesselOps.h"

using namespace mlir;
using namespace mlir::tessel;

LogicalResult ChunkFetchOp::verify() {
  // C1
  if (getParams().empty())
    return emitOpError() << "fetches no parameter";
  // C2
  if (getCopies().size() != getParams().size())
    return emitOpError() << "has " << getCopies().size() << " results for "
                         << getParams().size() << " operands";
  for (auto [i, p, c] : llvm::enumerate(getParams(), getCopies()))
    if (p.getType() != c.getType())
      return emitOpError() << "result " << i << " has type " << c.getType()
                           << ", operand " << i << " " << p.getType();
  // C3
  if (static_cast<int64_t>(getChunk()) < 0)
    return emitOpError() << "chunk " << static_cast<int64_t>(getChunk())
                         << " is negative";
  return success();
}
