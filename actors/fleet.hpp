#pragma once

// The fleet actor: region health shared across the processes of a fleet.
// Off by default ([georoute.fleet-health]); when off it is not spawned, no
// thread starts and the router sends it nothing.
//
// What it does, all on its own actor:
//
//   router ──fleet_observations──▶ fleet actor ──publish──▶ fleet_link
//   (its own requests: threshold        │  (fleet_reporter: the sender's
//    waits, breaker openings,           │   rules,
//    actors/policy/fleet_report.hpp) refusals, errors, successes,       │
//    tallied and sent every 250 ms)     ▼
//   fleet_link ──fleet_inbox──▶ fleet actor (fleet_health: the receiver's
//   (a NATS delivery thread)           │   rules,
//   actors/policy/fleet_health.hpp)
//                                      ├──(fleet_atom, fleet_demotion)──▶
//                                      location cache └──probe (account
//                                      read)──▶ port
//
// - The link is the transport: `transport/nats/channel.hpp` in production,
//   an in-process bus in tests. Its `publish` never blocks; the actor calls
//   it from its own thread only. What arrives on the link is handed to
//   `fleet_inbox::deliver` on the link's thread, which only `anon_send`s it
//   here: no link thread touches actor state.
// - A verdict of the fleet is carried out by the location cache as a soft
//   demotion (the region goes after the healthy ones, usable as the last
//   resort), never as a mark. When a verdict lapses, the region comes back
//   only after this process's own probe of it answered in normal time; a
//   region this process itself claimed down is probed too, so that it can
//   take its claim back ("up").
// - Nothing of a caller leaves the process: a report holds counts, a region
//   name, times and the reporter's health score.

#include "georoute/actors/log.hpp"
#include "georoute/actors/policy/fleet_health.hpp"
#include "georoute/actors/policy/fleet_report.hpp"
#include "georoute/config/settings.hpp"
#include "georoute/messages/interfaces.hpp"
#include "georoute/transport/port.hpp"

#include <caf/actor.hpp>
#include <caf/actor_addr.hpp>
#include <caf/allowed_unsafe_message_type.hpp>
#include <chrono>
#include <cstdint>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

namespace caf {
class actor_system;
} // namespace caf

namespace georoute {

/// Where reports go out: NATS, or a test's bus. Thread-safe.
class fleet_link {
public:
  virtual ~fleet_link() = default;
  /// Hands one report over and returns at once: never blocks, never waits
  /// for the network. false: dropped (not connected, or its queue is full).
  virtual bool publish(const std::string& subject,
                       const std::string& payload) = 0;
  /// Whether a publish could reach the server now.
  virtual bool connected() const = 0;
};

/// What the link received, on its way to the fleet actor.
struct fleet_inbound {
  std::string subject;
  std::string payload;    ///< empty when oversized
  bool oversized = false; ///< longer than `max_fleet_payload`: not copied
};

/// Hands what a link receives to the current fleet actor. `deliver` is
/// called on the link's threads; it takes a mutex for a pointer copy and
/// sends one message. Before `attach`, or after `detach`, it drops.
/// The link's state changed: connected, or a connection failed or was lost.
struct fleet_link_status {
  bool connected = false;
};

// `(fleet_sync_atom)` to the fleet actor is answered (`caf::ok_atom`) once
// the fleet's view is in: the link connected, the peers were asked for their
// claims and `fleet_config::sync_grace` passed; or at once after the first
// connection failed. The router holds data requests at start until then
// (`georoute.fleet-health.startup-wait` at most).

class fleet_inbox {
public:
  void attach(caf::actor_addr target);
  void detach(const caf::actor_addr& target);
  void deliver(fleet_inbound in);
  /// The link's state changed (`connected`): when it just connected, the
  /// actor asks its peers for their claims at once instead of at its next
  /// tick. The last state is kept and told to an actor attached later (the
  /// link may connect, or fail to, before the actor exists).
  void link_status(bool connected);

private:
  std::mutex mtx_;
  caf::actor_addr target_;
  std::optional<bool> last_status_;
};

/// What the router saw on one region since its last tally (capped: the
/// policy needs counts of a few, not the traffic).
struct fleet_tally {
  std::string region;
  uint16_t threshold_waits = 0;
  uint16_t breaker_opened = 0;
  uint16_t refused = 0;
  uint16_t errors = 0;
  uint16_t successes = 0; ///< answered within the threshold
};

/// The router's tallies, sent every 250 ms at most, only while it has some.
struct fleet_observations {
  std::vector<fleet_tally> tallies;
};

/// Counters of the fleet actor, for metrics and the drill.
struct fleet_stats {
  fleet_health_counters health;
  fleet_report_counters report;
  uint64_t published = 0;       ///< handed to the link
  uint64_t publish_refused = 0; ///< the link dropped it
  uint64_t received = 0;        ///< inbound reports
  uint64_t dropped_subject = 0; ///< not a subject of this fleet and account
  uint64_t dropped_region = 0;  ///< a region the account does not list
  /// What the router's tallies and the marks brought, as received.
  uint64_t seen_threshold_waits = 0;
  uint64_t seen_breaker_opened = 0;
  uint64_t seen_refused = 0;
  uint64_t seen_errors = 0;
  uint64_t seen_successes = 0;
  uint64_t seen_marks = 0;
  uint64_t probes = 0;         ///< probes sent
  uint64_t probes_ok = 0;      ///< answered in normal time
  uint64_t demotions_sent = 0; ///< new demotion lists to the location cache
  std::vector<std::string> demoted; ///< regions demoted for reads now
  uint8_t local_health = 0;
};

struct fleet_config {
  std::string fleet;    ///< the fleet's subject token
  std::string account;  ///< the account's subject token
  std::string reporter; ///< this process's id: the user the server knows
  fleet_health_options health;
  fleet_report_options report;
  /// The self-timer: reports, evaluation, probes; its lateness feeds the
  /// local health score.
  std::chrono::milliseconds tick{100};
  /// A demoted region awaiting its probe is probed this often.
  std::chrono::milliseconds probe_interval{std::chrono::seconds{2}};
  /// A probe slower than this failed (the hedge threshold: normal time).
  std::chrono::milliseconds probe_timeout{std::chrono::seconds{1}};
  /// After the ask went out, how long the peers have to answer before the
  /// fleet's view counts as in (`fleet_sync_atom`).
  std::chrono::milliseconds sync_grace{50};
  std::shared_ptr<fleet_link> link;
  std::shared_ptr<fleet_inbox> inbox;
  logger log;
};

/// The account's token in the fleet's subjects: `settings.fleet.account`
/// if set, else the endpoint host's first label, with its port when it is
/// not the scheme's ("acct", "127-8081").
std::string fleet_account_token(const config::settings& s);

/// Spawns the fleet actor. It subscribes to `locations` for the account's
/// regions, sends it demotions and probes through `http`. It answers
/// `(stats_atom)` with `fleet_stats`. With a `supervisor` (the engine's), it
/// takes re-wiring (`engine_wiring`: a new location cache) from it only and
/// ends when it ends. Throws std::invalid_argument for options the policies
/// refuse (the settings check them first).
caf::actor spawn_fleet(caf::actor_system& sys, fleet_config cfg,
                       location_cache_actor locations, transport::port_ptr http,
                       caf::actor_addr supervisor = {});

} // namespace georoute

CAF_ALLOW_UNSAFE_MESSAGE_TYPE(georoute::fleet_inbound)
CAF_ALLOW_UNSAFE_MESSAGE_TYPE(georoute::fleet_link_status)
CAF_ALLOW_UNSAFE_MESSAGE_TYPE(georoute::fleet_observations)
CAF_ALLOW_UNSAFE_MESSAGE_TYPE(georoute::fleet_stats)
