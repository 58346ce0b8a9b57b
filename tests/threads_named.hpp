#pragma once

// How many threads of this process carry a name: the tests of threads that
// must end with what owns them (a home thread, the engine's).

#include <dirent.h>
#include <fstream>
#include <string>

namespace georoute::test {

/// How many threads of this process are named `name` right now (at most 15
/// characters of a name show).
inline size_t threads_named(const std::string& name) {
  size_t n = 0;
  if (DIR* d = opendir("/proc/self/task")) {
    while (auto* e = readdir(d)) {
      if (e->d_name[0] == '.') continue;
      std::ifstream f{std::string{"/proc/self/task/"} + e->d_name + "/comm"};
      std::string comm;
      std::getline(f, comm);
      if (comm == name) ++n;
    }
    closedir(d);
  }
  return n;
}

} // namespace georoute::test
