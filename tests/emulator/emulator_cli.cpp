// georoute_emulator: `georoute emulator` on its own, for when the whole
// georoute program (the engine, the drill, the bench) is more than one
// needs to build. `georoute_emulator [emulator] <flags>` = `georoute
// emulator <flags>`, so tests/conformance/run.sh can run it as --georoute.

#include "tests/emulator/emulator_main.hpp"

#include <string>
#include <vector>

int main(int argc, char** argv) {
  std::vector<std::string> args(argv + 1, argv + argc);
  if (!args.empty() && args.front() == "emulator") args.erase(args.begin());
  return georoute::emulator::run_emulator_command(std::move(args));
}
