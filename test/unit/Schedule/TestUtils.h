//===- TestUtils.h - Helpers for the schedule unit tests --------*- C++ -*-===//

#ifndef TESSEL_TEST_UNIT_SCHEDULE_TESTUTILS_H
#define TESSEL_TEST_UNIT_SCHEDULE_TESTUTILS_H

#include "../ScratchDir.h"
#include "tessel/Schedule/Registry.h"
#include "tessel/Schedule/TextFormat.h"

#include "llvm/ADT/SmallString.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/raw_ostream.h"

#include "gtest/gtest.h"

#include <string>

namespace tessel::pipeline::testing {

/// The value of an Expected, failing the test with its message otherwise.
template <typename T> T unwrap(llvm::Expected<T> e) {
  if (!e) {
    ADD_FAILURE() << llvm::toString(e.takeError());
    return T();
  }
  return std::move(*e);
}

/// The message of a failed Expected or Error; "" (and a test failure) when
/// it succeeded.
template <typename T> std::string errorOf(llvm::Expected<T> e) {
  if (e) {
    ADD_FAILURE() << "expected an error";
    return "";
  }
  return llvm::toString(e.takeError());
}
inline std::string errorOf(llvm::Error e) {
  if (!e) {
    ADD_FAILURE() << "expected an error";
    return "";
  }
  return llvm::toString(std::move(e));
}

/// p ranks, m microbatches, v chunks per rank.
inline ScheduleOptions options(int32_t p, int32_t m, int32_t v = 1) {
  ScheduleOptions opts;
  opts.ranks = p;
  opts.microbatches = m;
  opts.chunks = v;
  return opts;
}

inline Schedule build(llvm::StringRef name, int32_t p, int32_t m,
                      int32_t v = 1) {
  return unwrap(ScheduleRegistry::getGlobal().build(name, options(p, m, v)));
}

inline Schedule parse(llvm::StringRef text) {
  return unwrap(parseSchedule(text, "test.sched", "test"));
}

using ::tessel::test::ScratchDir;

} // namespace tessel::pipeline::testing

#endif // TESSEL_TEST_UNIT_SCHEDULE_TESTUTILS_H
