//===- Fail.cpp - tesselc: error messages ---------------------------------===//

#include "Compile.h"

#include "llvm/Support/WithColor.h"

int tessel::fail(const llvm::Twine &message) {
  llvm::WithColor::error(llvm::errs(), "tesselc") << message << "\n";
  return 1;
}
