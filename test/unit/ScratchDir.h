//===- ScratchDir.h - A fresh temporary directory per test ------*- C++ -*-===//
//
// Every unit test that writes files writes them here: a directory made with
// mkdtemp under gtest's temp dir (which honours TEST_TMPDIR and TMPDIR),
// unique per test and per run (two runs of the suite at once never
// collide), removed with everything in it when the test ends. No LLVM: the
// runtime's tests use it too.
//
//===----------------------------------------------------------------------===//
#ifndef TESSEL_TEST_UNIT_SCRATCHDIR_H
#define TESSEL_TEST_UNIT_SCRATCHDIR_H

#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

namespace tessel::test {

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

  /// Writes `text` to the file `name` in the directory; returns its path.
  std::string write(const std::string &name, const std::string &text) const {
    std::string file = path(name);
    std::ofstream os(file, std::ios::binary);
    os << text;
    if (!os)
      ADD_FAILURE() << "cannot write " << file;
    return file;
  }

private:
  std::string dir;
};

} // namespace tessel::test

#endif // TESSEL_TEST_UNIT_SCRATCHDIR_H
