//===- Capture.cpp - stdout and stderr of a driver call, as text ----------===//
#include "Capture.h"

#include "llvm/Support/raw_ostream.h"

#include <unistd.h>

namespace tessel::python {

namespace {
void flushAll() {
  std::fflush(stdout);
  std::fflush(stderr);
  llvm::outs().flush();
  llvm::errs().flush();
}

std::string readAll(std::FILE *f) {
  std::string text;
  if (!f)
    return text;
  std::rewind(f);
  char buf[4096];
  size_t n;
  while ((n = std::fread(buf, 1, sizeof(buf), f)) > 0)
    text.append(buf, n);
  return text;
}
} // namespace

Capture::Capture() {
  flushAll();
  for (int fd = 1; fd <= 2; ++fd) {
    std::FILE *f = std::tmpfile();
    if (!f)
      continue; // nothing captured: the text goes where it went
    int s = dup(fd);
    if (s < 0 || dup2(fileno(f), fd) < 0) {
      if (s >= 0)
        close(s);
      std::fclose(f);
      continue;
    }
    files[fd - 1] = f;
    saved[fd - 1] = s;
  }
}

void Capture::finish() {
  flushAll();
  for (int i = 0; i < 2; ++i) {
    if (saved[i] < 0)
      continue;
    dup2(saved[i], i + 1);
    close(saved[i]);
    saved[i] = -1;
    (i == 0 ? outText : errText) = readAll(files[i]);
    std::fclose(files[i]);
    files[i] = nullptr;
  }
}

Capture::~Capture() { finish(); }

} // namespace tessel::python
