// Runs the fuzz target once on each file named (or each file of each directory named), as libFuzzer
// would replay them: the committed corpus stays a regression test in builds without libFuzzer.
#include <dirent.h>
#include <sys/stat.h>

#include <cstdint>
#include <cstdio>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

extern "C" int LLVMFuzzerInitialize(int *argc, char ***argv);
extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

namespace {
size_t run_file(const std::string &path) {
  std::ifstream in(path, std::ios::binary);
  std::vector<uint8_t> bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  LLVMFuzzerTestOneInput(bytes.data(), bytes.size());
  return 1;
}
}  // namespace

int main(int argc, char **argv) {
  LLVMFuzzerInitialize(&argc, &argv);
  size_t runs = 0;
  for (int i = 1; i < argc; i++) {
    struct stat st {};
    if (stat(argv[i], &st) != 0) {
      std::fprintf(stderr, "cannot read %s\n", argv[i]);
      return 1;
    }
    if (!S_ISDIR(st.st_mode)) {
      runs += run_file(argv[i]);
      continue;
    }
    DIR *dir = opendir(argv[i]);
    while (dirent *entry = readdir(dir))
      if (entry->d_name[0] != '.') runs += run_file(std::string(argv[i]) + "/" + entry->d_name);
    closedir(dir);
  }
  std::fprintf(stderr, "replayed %zu inputs\n", runs);  // stderr: a target may silence stdout
  return runs ? 0 : 1;
}
