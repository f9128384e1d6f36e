//===- ReplayMain.cpp - runs fuzz inputs through a target once ------------===//
//
// The normal (non-clang, non-fuzz) build links each fuzz target with this
// main: `NAME-replay PATH...` feeds every file (of every folder) given to
// LLVMFuzzerTestOneInput once, in sorted order, and prints how many it ran.
// ctest runs it over the committed corpora (cmake/TesselFuzz.cmake), so a
// regression input that once crashed a target crashes this test again.
//
//===----------------------------------------------------------------------===//
#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <dirent.h>
#include <fstream>
#include <iterator>
#include <string>
#include <sys/stat.h>
#include <vector>

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
extern "C" __attribute__((weak)) int LLVMFuzzerInitialize(int *argc,
                                                          char ***argv);

namespace {

void collect(const std::string &path, std::vector<std::string> &files) {
  struct stat st;
  if (::stat(path.c_str(), &st) != 0) {
    std::fprintf(stderr, "replay: %s: not found\n", path.c_str());
    std::exit(1);
  }
  if (!S_ISDIR(st.st_mode)) {
    files.push_back(path);
    return;
  }
  DIR *d = ::opendir(path.c_str());
  if (!d)
    return;
  while (dirent *e = ::readdir(d)) {
    std::string name = e->d_name;
    if (name == "." || name == ".." || name[0] == '.')
      continue;
    collect(path + "/" + name, files);
  }
  ::closedir(d);
}

} // namespace

int main(int argc, char **argv) {
  if (LLVMFuzzerInitialize)
    LLVMFuzzerInitialize(&argc, &argv);
  std::vector<std::string> files;
  for (int i = 1; i < argc; ++i)
    collect(argv[i], files);
  std::sort(files.begin(), files.end());
  for (const std::string &f : files) {
    std::ifstream in(f, std::ios::binary);
    std::vector<char> bytes((std::istreambuf_iterator<char>(in)),
                            std::istreambuf_iterator<char>());
    LLVMFuzzerTestOneInput(reinterpret_cast<const uint8_t *>(bytes.data()),
                           bytes.size());
  }
  std::printf("replay: %zu inputs ran\n", files.size());
  return files.empty() ? 1 : 0;
}
