#pragma once

// `georoute emulator`: runs the multi-region gateway emulator in the
// foreground until SIGINT or SIGTERM. It has its own flags (see --help) and
// does not read the georoute configuration.

#include <string>
#include <vector>

namespace georoute::emulator {

/// Runs the command with `args` (the words after "emulator"). Returns the
/// process exit status: 0 after a clean shutdown or --help, 2 for a bad flag
/// or value (one line naming the flag, the value and what is allowed), 1 when
/// the servers cannot start (e.g. a port in use).
int run_emulator_command(std::vector<std::string> args);

} // namespace georoute::emulator
