#pragma once

// The fleet's link over NATS: a `fleet_link` (actors/fleet.hpp) made of one
// `nats_channel` (transport/nats/channel.hpp) from `[georoute.fleet-health]`.
// Built only where libnats was found (library georoute_fleet_nats, with
// GEOROUTE_HAVE_NATS defined); a build without it has no such function, and
// an engine with fleet health on and no link refuses to start.
//
// The channel subscribes to the fleet's subjects of the account and hands
// every message to the inbox on its delivery thread; publishing hands the
// report to the channel's own thread. Neither ever waits for the network.

#include "georoute/actors/fleet.hpp"
#include "georoute/actors/policy/result.hpp"
#include "georoute/config/settings.hpp"

#include <memory>

namespace georoute {

class nats_channel;

/// A link and the inbox it delivers to, for `engine_options::fleet` and
/// `engine_options::inbox`. Keep it until the engine stopped; destroying it
/// closes the connection and joins the channel's thread (not from an actor).
struct nats_fleet {
  std::shared_ptr<fleet_link> link;
  std::shared_ptr<fleet_inbox> inbox;
};

/// Opens the channel of `s.fleet` (returns at once; it connects in the
/// background). A problem names what is wrong: fleet health off, an option,
/// a file that cannot be read.
result<nats_fleet> make_nats_fleet_link(const config::settings& s);

} // namespace georoute
