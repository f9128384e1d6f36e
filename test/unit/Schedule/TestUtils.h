//===- TestUtils.h - Helpers for the schedule unit tests --------*- C++ -*-===//

#ifndef TESSEL_TEST_UNIT_SCHEDULE_TESTUTILS_H
#define TESSEL_TEST_UNIT_SCHEDULE_TESTUTILS_H

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

/// A directory of the test's own, unique per run (under ::testing::TempDir(),
/// which honours TEST_TMPDIR and TMPDIR), removed with everything in it when
/// the test ends: two runs at once never share a file.
class ScratchDir {
public:
  ScratchDir() {
    const ::testing::TestInfo *info =
        ::testing::UnitTest::GetInstance()->current_test_info();
    std::string prefix = ::testing::TempDir() + "tessel-" +
                         (info ? info->name() : std::string("test"));
    if (std::error_code ec =
            llvm::sys::fs::createUniqueDirectory(prefix, path_))
      ADD_FAILURE() << "cannot create a directory " << prefix << "-*: "
                    << ec.message();
  }
  ~ScratchDir() {
    if (!path_.empty())
      llvm::sys::fs::remove_directories(path_);
  }
  ScratchDir(const ScratchDir &) = delete;
  ScratchDir &operator=(const ScratchDir &) = delete;

  llvm::StringRef path() const { return path_; }

  /// Writes `text` to the file `name` in the directory; returns its path.
  std::string write(llvm::StringRef name, llvm::StringRef text) const {
    llvm::SmallString<128> file(path_);
    llvm::sys::path::append(file, name);
    std::error_code ec;
    llvm::raw_fd_ostream os(file, ec);
    if (ec)
      ADD_FAILURE() << "cannot write " << file.str().str() << ": "
                    << ec.message();
    else
      os << text;
    return file.str().str();
  }

private:
  llvm::SmallString<128> path_;
};

} // namespace tessel::pipeline::testing

#endif // TESSEL_TEST_UNIT_SCHEDULE_TESTUTILS_H
