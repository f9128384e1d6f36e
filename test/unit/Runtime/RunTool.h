//===- RunTool.h - Running tessel-run from the unit tests -------*- C++ -*-===//
#ifndef TESSEL_TEST_UNIT_RUNTIME_RUNTOOL_H
#define TESSEL_TEST_UNIT_RUNTIME_RUNTOOL_H

#include "../ScratchDir.h"
#include "tessel/runtime/Npy.h"

#include <gtest/gtest.h>

#include <cstdio>
#include <string>
#include <sys/wait.h>

namespace tessel::runtime::test {

struct RunResult {
  int exitCode;
  std::string output; // stdout and stderr
};

/// Runs `tessel-run ARGS` (TESSEL_RUN_PATH) through the shell; `env`:
/// VAR=VALUE assignments for it ("" none).
inline RunResult runTool(const std::string &args, const std::string &env = "") {
  std::string cmd = (env.empty() ? "" : env + " ") +
                    std::string(TESSEL_RUN_PATH) + " " + args + " 2>&1";
  FILE *p = popen(cmd.c_str(), "r");
  RunResult r{-1, ""};
  if (!p)
    return r;
  char buf[4096];
  size_t n;
  while ((n = fread(buf, 1, sizeof(buf), p)) > 0)
    r.output.append(buf, n);
  int status = pclose(p);
  r.exitCode = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  return r;
}

/// A test that runs tessel-run on an artifact and inputs it writes into a
/// scratch directory: the artifact is `art` (<stem>.tsl there), an input
/// <stem><suffix> (writeInput).
class RunToolTest : public ::testing::Test {
protected:
  explicit RunToolTest(const std::string &stem)
      : base(files.path(stem)), art(base + ".tsl") {}
  /// `t` written as .npy to `path` = base + suffix.
  void writeInput(const std::string &suffix, const Tensor &t,
                  std::string &path) {
    path = base + suffix;
    Status s = writeNpy(path, t);
    ASSERT_TRUE(s.isOk()) << s.message();
  }

  tessel::test::ScratchDir files;
  std::string base, art;
};

} // namespace tessel::runtime::test

#endif // TESSEL_TEST_UNIT_RUNTIME_RUNTOOL_H
