#pragma once

// `georoute bench`: georoute against the limit (a raw Beast client) and
// against the official SDK (@azure/cosmos), side by side, in one run against
// one emulator in a child process. See tests/bench/README.md and
// `georoute bench --help`.

#include <string>
#include <vector>

namespace georoute::bench {

/// Runs the command with `args` (the words after "bench"). Returns the exit
/// status: 0 when every figure was measured, 1 when a part failed, 2 for a
/// bad flag.
int run_bench_command(std::vector<std::string> args);

} // namespace georoute::bench
