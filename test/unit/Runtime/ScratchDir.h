//===- ScratchDir.h - A fresh temporary directory per test ------*- C++ -*-===//
//
// Every test that writes files writes them here: a directory made with
// mkdtemp under gtest's temp dir, unique per test and per run (two runs of
// the suite at once never collide), removed when the test ends.
//
//===----------------------------------------------------------------------===//
#ifndef TESSEL_TEST_UNIT_RUNTIME_SCRATCHDIR_H
#define TESSEL_TEST_UNIT_RUNTIME_SCRATCHDIR_H

#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <string>
#include <vector>

namespace tessel::runtime::test {

class ScratchDir {
public:
  ScratchDir() {
    const ::testing::TestInfo *info =
        ::testing::UnitTest::GetInstance()->current_test_info();
    std::string tmpl = ::testing::TempDir() + "/tessel-" +
                       (info ? info->name() : std::string("test")) + "-XXXXXX";
    std::vector<char> buf(tmpl.begin(), tmpl.end());
    buf.push_back('\0');
    if (mkdtemp(buf.data()))
      dir = buf.data();
    else
      ADD_FAILURE() << "cannot create a directory " << tmpl;
  }
  ~ScratchDir() {
    std::error_code ec;
    if (!dir.empty())
      std::filesystem::remove_all(dir, ec);
  }
  ScratchDir(const ScratchDir &) = delete;
  ScratchDir &operator=(const ScratchDir &) = delete;

  /// The path of `name` inside the directory.
  std::string path(const std::string &name) const { return dir + "/" + name; }

private:
  std::string dir;
};

} // namespace tessel::runtime::test

#endif // TESSEL_TEST_UNIT_RUNTIME_SCRATCHDIR_H
