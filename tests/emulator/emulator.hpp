#pragma once

// The multi-region gateway emulator: one Beast HTTP server per region on
// 127.0.0.1 plus the global account endpoint, all backed by one `engine`.
// Used in-process by tests and the drill (this handle), over the JSON admin
// API `/_emulator/...` on the global endpoint by other processes, and as the
// command `georoute emulator`.
//
// Region-level faults live here because they are about sockets: offline-refuse
// (the port is closed), offline-reset (accept, then reset), hang (accept,
// never answer) and added latency. Status-code faults live in the engine.
// Socket faults and latency apply to region servers only: the global endpoint
// is always online, because it also serves the admin API that lifts them.

#include "tests/emulator/engine.hpp"

#include <chrono>
#include <cstdint>
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

/// Options of an emulator.
struct emulator_options {
  engine_options engine;
  /// Fixed ports per region (same order as engine.regions); empty or 0 =
  /// ephemeral.
  std::vector<uint16_t> region_ports;
  uint16_t global_port = 0; ///< 0 = ephemeral
  size_t io_threads = 1;
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

  result<bool> set_region_state(const std::string& region, region_state s);
  region_state get_region_state(const std::string& region) const;
  /// Added before every response of `region`.
  result<bool> set_latency(const std::string& region,
                           std::chrono::milliseconds latency);
  /// The latency set for `region` (0 when none or unknown).
  std::chrono::milliseconds get_latency(const std::string& region) const;

  /// Connections accepted per region (for keep-alive tests); "" = the
  /// global endpoint.
  uint64_t accepted_connections(const std::string& region) const;
  /// Connections open now, over every server (the global endpoint too).
  uint64_t open_connections() const;

  emulator(const emulator&) = delete;
  emulator& operator=(const emulator&) = delete;

private:
  emulator();
  struct impl;
  std::unique_ptr<impl> impl_;
};

} // namespace georoute::emulator
