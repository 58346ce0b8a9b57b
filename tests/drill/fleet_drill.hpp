#pragma once

// The fleet drill (`georoute drill --fleet`): region health shared across
// the processes of a fleet, measured. The drill starts nats-server (TLS, one
// NKey user per process, publish permissions per reporter) and N georoute
// processes (`georoute fleet-member`, an internal command) against one
// emulator in the drill's own process, and runs, with sharing off and on:
//
//   hang      half the processes run, West US (everyone's first region)
//             hangs, the other half start 5 s later, West US heals 20 s
//             later and the run goes on 15 s: reads that waited for the
//             hedge threshold across the fleet (before and after a verdict
//             reached each process), what the late starters paid, when
//             every process avoided West US, the delivery latency, the
//             fail-back (each after its own probe);
//   starved   all regions healthy, one process stopped 900 ms of every
//             second: no demotion anywhere;
//   forged    a reporter with valid credentials claims every region down
//             100 times a second, and publishes on another reporter's
//             subjects: no demotion, the server refuses those publishes;
//   channel   the server stopped (SIGSTOP) for 8 s, then killed: the reads
//             of the processes look as without sharing.
//
// Built only with libnats (GEOROUTE_HAVE_NATS); otherwise both commands say
// so and exit with status 2.

#include <string>
#include <vector>

namespace georoute::drill {

/// `georoute drill --fleet [--processes=N] [--rate=R] [--json=F]`.
int run_fleet_drill(std::vector<std::string> args);

/// `georoute fleet-member ...`: one process of the fleet (started by the
/// drill; its flags are the drill's business).
int run_fleet_member(std::vector<std::string> args);

} // namespace georoute::drill
