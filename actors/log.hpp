#pragma once

// Logs: what the engine tells an operator, handed to a callback of the host
// (spdlog, syslog, its own logger). No CAF, no Boost: a host includes it
// through actors/engine.hpp (`engine_options::log` and `log_level`).
//
// What is logged, once per event (the `event` names are stable):
//
//   info  topology.first_account      the first account read: its regions
//   warn  topology.write_region_moved the first write region moved (old -> new)
//   info  topology.regions_changed    readable regions added or removed
//   info  topology.multi_write        the account's multi-write flag flipped
//   warn  account.refresh_failed      an account read failed (the first of a
//                                     run; the rest of the run: debug)
//   info  account.refresh_recovered   the first success after failures
//   warn  region.marked               a region became unavailable for reads
//                                     and/or writes (why, until when)
//   info  region.mark_expired         a mark expired: the region is back
//   info  region.fleet_demoted        the fleet's reports agree a region is
//                                     failing: last in the read (write) order
//   info  region.fleet_restored       back in its place (the verdict lapsed
//                                     and this process's own probe answered)
//   warn  breaker.opened              a range's breaker in a region opened
//   info  breaker.probe, breaker.half_open, breaker.closed
//                                     the probe went, answered; it closed
//   warn  breaker.reopened            a probe or a half-open trial failed
//   warn  engine.restart              an actor died and was restarted
//   error engine.gave_up              an actor died too often: left down
//
// At debug and trace only, per request: a renewed mark
// (region.mark_renewed), a retry decision (operation.retry), a failed
// operation (operation.failed), a repeated refresh failure (debug), each
// finished operation (operation.done, trace). Nothing per request is logged
// at info or above. The account key, a signature or an Authorization header is
// never part of a record, at any level.
//
// The sink is called on the engine's actor threads, several at once: it must
// be thread-safe and return quickly (queue the line if writing may block).
// The engine holds no lock of its own while it calls the sink. An exception
// thrown by the sink is swallowed.

#include <cstdint>
#include <functional>
#include <iosfwd>
#include <memory>
#include <optional>
#include <string>
#include <string_view>

namespace georoute {

/// Severity, from the most verbose. `off` as a minimum logs nothing.
enum class log_level : uint8_t { trace, debug, info, warn, error, off };

/// "trace", "debug", "info", "warn", "error", "off".
const char* to_string(log_level level);

/// The level named `text` (as `to_string` spells it; "warning" too), or
/// nothing.
std::optional<log_level> parse_log_level(std::string_view text);

/// One log line.
struct log_record {
  log_level level = log_level::info;
  /// The actor that logs: "georoute.endpoint_manager", "georoute.router",
  /// "georoute.location_cache", "georoute.retry", "georoute.engine".
  std::string component;
  /// A stable name of the event ("region.marked"); see the file comment.
  std::string event;
  /// For people: "West US marked unavailable for reads until ...".
  std::string message;
};

/// The host's callback. Thread-safe, quick, see the file comment.
using log_sink = std::function<void(const log_record&)>;

/// "warn georoute.router breaker.opened: <message>".
std::string to_line(const log_record& record);

/// A sink that writes `to_line` and a newline to `out` under a mutex of its
/// own (e.g. `make_stream_sink(std::cerr)`). `out` must outlive the engine.
log_sink make_stream_sink(std::ostream& out);

/// The engine's handle on the sink, copied into every actor's configuration.
/// A default-constructed logger logs nothing; `enabled` is then one test.
class logger {
public:
  logger() = default;
  logger(log_sink sink, log_level min);

  /// Whether a record of `level` reaches the sink: build the text only then.
  bool enabled(log_level level) const {
    return sink_ != nullptr && level >= min_;
  }

  /// Hands the record to the sink if `enabled(level)`.
  void log(log_level level, std::string_view component, std::string_view event,
           std::string message) const;

private:
  std::shared_ptr<const log_sink> sink_;
  log_level min_ = log_level::off;
};

} // namespace georoute
