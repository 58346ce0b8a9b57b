#pragma once

// The multi-region gateway emulator: one Beast HTTP server per region on
// 127.0.0.1 plus the global account endpoint, all backed by one `engine`.
// Used in-process by tests and the drill (this handle), over the JSON admin
// API `/_emulator/...` on the global endpoint by other processes, and as the
// command `georoute emulator`.
//
// Region-level faults live here because they are about sockets: offline-refuse
// (the port is closed), offline-reset (accept, then reset), hang (accept,
// never answer), added latency with jitter, and a flapping region that
// alternates between a failure and service on a period. Status-code faults,
// and faults scoped to one partition-key range (status, hang, delay), live in
// the engine (`fault_rule`); the servers carry out their hangs and delays.
// Socket faults and latency apply to region servers only: the global endpoint
// is always online, because it also serves the admin API that lifts them.
//
// Every wait is a timer on the io threads, never a sleep: a slow or flapping
// region delays only its own responses.
//
// Lifting a hang (the region leaves `hang`, a hang rule is removed, `reset`)
// closes the connections of the requests it held instead of answering them:
// a held request was never served, and answering it after the lift would
// apply a write long after its client gave up, which no test could tell from
// a lost one. Closed, the client sees what a hang is to it: sent, no answer.

#include "tests/emulator/engine.hpp"

#include <chrono>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

namespace georoute::emulator {

/// How a region's server treats connections.
enum class region_state {
  online,
  offline_refuse, ///< listening socket closed: connect is refused
  offline_reset,  ///< accept, then reset the connection
  hang,           ///< accept and read, never answer
};

const char* to_string(region_state x);
result<region_state> parse_region_state(const std::string& text);

/// A region that alternates between a failure and service: down for
/// `down_for`, up (online) for `up_for`, down again, ... until lifted. The
/// down phase comes first.
struct flap_schedule {
  /// The state while down: hang, offline_refuse or offline_reset; online
  /// means the region only turns slow (then `down_latency` must be > 0).
  region_state down_state = region_state::hang;
  /// Added to every response while down, on top of the region's latency.
  std::chrono::milliseconds down_latency{0};
  std::chrono::milliseconds down_for{2000};
  std::chrono::milliseconds up_for{3000};
};

/// Where a region's flap is.
struct flap_status {
  bool active = false;
  bool down = false;        ///< in the down phase now
  uint64_t transitions = 0; ///< phases entered since the flap started
  flap_schedule schedule;
};

/// Options of an emulator.
struct emulator_options {
  engine_options engine;
  /// Fixed ports per region (same order as engine.regions); empty or 0 =
  /// ephemeral.
  std::vector<uint16_t> region_ports;
  uint16_t global_port = 0; ///< 0 = ephemeral
  size_t io_threads = 1;
  /// Seeds the latency jitter: region i draws from its own generator seeded
  /// with seed + i, so a run's sequence of delays per region repeats.
  uint64_t seed = 0x6a69'7474'6572;
};

/// See the file comment.
class emulator {
public:
  /// Binds every server on 127.0.0.1 and starts the io threads.
  static result<std::unique_ptr<emulator>> start(emulator_options opts);

  ~emulator(); ///< stops the servers and joins the io threads

  /// "http://127.0.0.1:<port>/" of the global endpoint.
  std::string global_endpoint() const;
  /// "http://127.0.0.1:<port>/" of a region.
  std::string endpoint(const std::string& region) const;
  /// Region name → endpoint.
  std::map<std::string, std::string> endpoints() const;
  /// The master key (base64).
  const std::string& key() const;

  /// The engine, for topology control, status faults and counters.
  engine& control();

  /// Also ends a flap of `region` (an explicit state wins).
  result<bool> set_region_state(const std::string& region, region_state s);
  region_state get_region_state(const std::string& region) const;
  /// Added before every response of `region` (every request, keep-alive
  /// connections too), drawn per request from latency ± jitter (uniform,
  /// seeded: see emulator_options::seed). 0 <= jitter <= latency.
  result<bool> set_latency(const std::string& region,
                           std::chrono::milliseconds latency,
                           std::chrono::milliseconds jitter = {});
  /// The latency set for `region` (0 when none or unknown).
  std::chrono::milliseconds get_latency(const std::string& region) const;
  /// The jitter set for `region` (0 when none or unknown).
  std::chrono::milliseconds get_jitter(const std::string& region) const;

  /// Starts (or restarts) a flap of `region`; its first phase is down.
  /// Periods in [10 ms, 24 h].
  result<bool> start_flap(const std::string& region, flap_schedule s);
  /// Ends a flap: the region is online without the flap's latency. A region
  /// that does not flap is left as it is.
  result<bool> stop_flap(const std::string& region);
  /// Inactive for an unknown region.
  flap_status get_flap(const std::string& region) const;

  /// Requests held now at `region` ("" = the global endpoint) by a hang: the
  /// region's hang state or a hang rule. 0 for an unknown region.
  uint64_t held_requests(const std::string& region) const;

  /// Lifts every fault: each region online, without latency, jitter or
  /// flap, and every fault rule of the engine removed (held requests are
  /// released). Topology (write regions, removed regions, replication lag,
  /// throughput, clock offset) and counters stay. The first problem (a port
  /// that cannot listen again) is returned after trying every region.
  result<bool> reset_faults();

  /// Connections accepted per region (for keep-alive tests); "" = the
  /// global endpoint.
  uint64_t accepted_connections(const std::string& region) const;
  /// Connections open now, over every server (the global endpoint too).
  uint64_t open_connections() const;
  /// Connections open now at `region` ("" = the global endpoint).
  uint64_t open_connections(const std::string& region) const;
  /// Connections at `region` that the kernel completed and the server has
  /// not accepted yet: above a handful, the region stopped taking new
  /// connections while clients kept connecting. 0 while it refuses.
  uint64_t accept_queue(const std::string& region) const;
  /// Times `region`'s accept completed ("" = the global endpoint): each
  /// takes every connection the kernel had queued (up to 256), so a burst
  /// of connections costs one turn of the io threads, not one each.
  uint64_t accept_turns(const std::string& region) const;
  /// Runs `f` on one of the io threads (tests: hold the servers while the
  /// kernel queues connections). `f` must not wait for the servers.
  void post_to_io(std::function<void()> f);

  emulator(const emulator&) = delete;
  emulator& operator=(const emulator&) = delete;

private:
  emulator();
  struct impl;
  std::unique_ptr<impl> impl_;
};

} // namespace georoute::emulator
