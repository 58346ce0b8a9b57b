// The regression replay of a harness without libFuzzer (the normal g++ build,
// run by ctest as fuzz.corpus_<name>): every file of every directory given on
// the command line (the committed seed corpus, including crash-* regressions)
// goes through LLVMFuzzerTestOneInput once. A harness that crashes or breaks
// an invariant aborts, which fails the test; an empty corpus fails too, so a
// mistyped path cannot pass silently.

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size);

int main(int argc, char** argv) {
  namespace fs = std::filesystem;
  std::vector<fs::path> inputs;
  for (int i = 1; i < argc; ++i) {
    fs::path p = argv[i];
    if (fs::is_directory(p)) {
      for (const auto& e : fs::recursive_directory_iterator(p))
        if (e.is_regular_file()) inputs.push_back(e.path());
    } else if (fs::is_regular_file(p)) {
      inputs.push_back(p);
    } else {
      std::fprintf(stderr, "no such file or directory: %s\n", argv[i]);
      return 2;
    }
  }
  std::sort(inputs.begin(), inputs.end());
  if (inputs.empty()) {
    std::fprintf(stderr, "no inputs found\n");
    return 2;
  }
  for (const auto& p : inputs) {
    std::ifstream in(p, std::ios::binary);
    std::vector<char> bytes((std::istreambuf_iterator<char>(in)),
                            std::istreambuf_iterator<char>());
    std::fprintf(stderr, "replay %s (%zu bytes)\n", p.string().c_str(),
                 bytes.size());
    // A non-null pointer even for an empty file, as libFuzzer passes.
    static const uint8_t empty = 0;
    LLVMFuzzerTestOneInput(
        bytes.empty() ? &empty : reinterpret_cast<const uint8_t*>(bytes.data()),
        bytes.size());
  }
  std::printf("%zu inputs replayed\n", inputs.size());
  return 0;
}
