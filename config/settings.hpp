#pragma once

// The validated, immutable configuration of georoute. Built once by
// `read_settings` (config/options.hpp; `georoute_config::load` for the
// georoute program) or by hand, checked by `check_settings` either way, and
// handed to each actor by value (or the slice it needs). No handler reads
// global configuration.
//
// Every default lives here, in-class, and is documented. The option table
// (config/options.cpp) maps each field to its key, bounds and help and reads
// its default from a default-constructed `settings`; config/georoute.ini
// repeats the defaults with the reason for each, and a test holds the file
// to the table.

#include "georoute/actors/policy/hedging.hpp"
#include "georoute/actors/policy/partition_breaker.hpp"
#include "georoute/actors/policy/partition_failover.hpp"
#include "georoute/actors/policy/timeout_ladder.hpp"

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <ostream>
#include <string>
#include <vector>

namespace georoute::config {

using std::chrono::milliseconds;
using std::chrono::seconds;

/// A secret string (the account key). It never prints: streaming or
/// `to_string` gives "<redacted>". Only `reveal()` hands out the value.
class secret {
public:
  secret() = default;
  explicit secret(std::string value) : value_(std::move(value)) {}

  const std::string& reveal() const { return value_; }
  bool empty() const { return value_.empty(); }

  friend std::ostream& operator<<(std::ostream& os, const secret& x) {
    return os << (x.empty() ? "<unset>" : "<redacted>");
  }

private:
  std::string value_;
};

inline std::string to_string(const secret& x) {
  return x.empty() ? "<unset>" : "<redacted>";
}

/// Region preferences and availability marking (.NET LocationCache,
/// src/Routing/LocationCache.cs).
struct location_options {
  /// Regions to use first, in order. Empty: the account's own order.
  std::vector<std::string> preferred_regions;
  /// Regions never used for reads or multi-write writes (matched
  /// case-insensitively).
  std::vector<std::string> excluded_regions;
  /// Follow the account's region lists; off pins every request to the
  /// account endpoint.
  bool endpoint_discovery = true;
  /// Write to every write region of a multi-write account.
  bool use_multiple_write_locations = true;
  /// How long a region stays demoted after a failure.
  milliseconds unavailable_region_expiry = seconds{300};
};

/// Account topology refresh (.NET GlobalEndpointManager,
/// src/Routing/GlobalEndpointManager.cs).
struct refresh_options {
  /// The background refresh period. The loop never stops while the endpoint
  /// manager lives.
  milliseconds background_interval = seconds{300};
  /// Non-forced refreshes closer together than this are skipped.
  milliseconds min_interval = seconds{15};
};

/// Retry budgets (.NET ClientRetryPolicy (src/ClientRetryPolicy.cs), .NET
/// MetadataDetachedExecutor and MetadataHedgingStrategy).
struct retry_options {
  /// Hard deadline of one detached metadata operation, clamped into
  /// [30 s, 86400 s].
  milliseconds metadata_hard_deadline = seconds{300};
  /// At most this many attempts per detached metadata operation.
  uint32_t metadata_attempt_cap = 200;
  /// Endpoint-failure retries per operation.
  uint32_t failover_retries = 120;
  /// Pause before a failover retry (reads; writes after the first).
  milliseconds failover_retry_interval = seconds{1};
  /// 429 retries per operation.
  uint32_t throttle_retries = 9;
  /// Cumulative 429 back-off per operation.
  milliseconds throttle_max_wait = seconds{30};
  /// Budget of one data-plane operation when the request names none: once
  /// spent, no new attempt starts (an end-to-end latency policy).
  milliseconds operation_budget = seconds{60};
  /// Retry writes that may have been applied (timed out, or lost after
  /// they were sent) where another region can take them, with a tracking
  /// property in the document (`request_options::write_retries`). Off: it
  /// changes the user's documents.
  bool write_retries = false;
};

/// HTTP transport.
struct http_options {
  /// Keep-alive connections per endpoint.
  size_t max_connections_per_endpoint = 16;
  /// Larger response bodies are a protocol error.
  size_t response_body_limit = size_t{64} * 1024 * 1024;
  /// PEM file of trusted CAs for https endpoints; empty = system store.
  std::string tls_ca_file;
  /// Asio threads of the HTTP client.
  size_t io_threads = 1;
  /// Per-attempt timeouts per request kind.
  timeout_ladders ladders;
};

/// Region health shared across a fleet over NATS ([georoute.fleet-health];
/// actors/fleet.hpp). Off by default: then nothing of it runs.
struct fleet_health_settings {
  bool enabled = false;
  /// NATS servers: "tls://host:port" (plain "nats://" on loopback only).
  std::vector<std::string> servers;
  /// The fleet's name: keeps fleets apart on one server ([a-z0-9_-]).
  std::string fleet = "default";
  /// This process's reporter id: the NATS user the server knows it as, and
  /// the last token of the subjects it may publish on ([a-z0-9_-]).
  std::string reporter;
  /// The account's token in subjects; empty: from the account endpoint's
  /// host (its first label and port).
  std::string account;
  /// NKey identity: the public key ("U...") and the file of its seed.
  std::string nkey;
  std::string nkey_seed_file;
  /// TLS: the CA that signed the server's certificate (TLS is on when it
  /// is set), and an optional client certificate and key.
  std::string ca_file;
  std::string cert_file;
  std::string key_file;
  /// k: distinct reporters whose claims make a verdict.
  uint32_t min_reporters = 2;
  /// How long a claim asks to be believed (and the most believed).
  milliseconds claim_ttl = seconds{15};
  /// The sender's evidence window, and the threshold waits in it that make
  /// a region "down".
  milliseconds window = seconds{10};
  uint32_t threshold_waits = 2;
  /// Demoted regions awaiting this process's own probe, and regions it
  /// claims down, are probed this often.
  milliseconds probe_interval = seconds{2};
  /// At start, data requests wait at most this long for the fleet's view
  /// (the channel connected, its peers asked for their claims and given a
  /// moment to answer), so that a process started during an incident the
  /// fleet knows does not send its first reads into it. Not at all once
  /// the first connection failed (a server that refuses); 0: never.
  milliseconds startup_wait = seconds{1};
};

/// Everything, validated.
struct settings {
  /// The account (global) endpoint; empty when only the emulator or drill
  /// runs, which bring their own.
  std::string account_endpoint;
  /// The master key (base64).
  secret account_key;
  /// Where the key came from: "GEOROUTE_ACCOUNT_KEY", "key-file <path>" or
  /// "" when unset.
  std::string account_key_source;
  location_options location;
  refresh_options refresh;
  retry_options retry;
  http_options http;
  /// CAF scheduler workers of the georoute program; 0 in the file means one
  /// per core. Only `georoute_config::load` applies it: a host's own
  /// scheduler settings are left alone.
  size_t scheduler_threads = 0;
  /// Entries of the query-plan LRU cache.
  size_t query_plan_cache_size = 1024;
  /// Collections kept by the collection cache, per index (by name, by rid).
  size_t collection_cache_size = 10000;
  /// Routing maps (one per collection) kept by the partition-range cache.
  size_t pkrange_cache_size = 10000;
  /// Callers that may wait for one key's fetch in any metadata cache.
  size_t cache_max_waiters = 10000;
  /// Data-plane operations the request router holds at once; a request
  /// beyond it is refused at once with errc::overloaded.
  size_t max_operations_in_flight = 10000;
  /// Cross-region hedging of reads ([georoute.hedging]); the defaults are
  /// documented on `hedging_options`.
  hedging_options hedging;
  /// The per-partition circuit breaker of the data plane
  /// ([georoute.circuit-breaker]): on by default; it acts only after a
  /// range fails 10 consecutive reads (5 multi-write writes) in one region.
  /// The defaults are documented on `partition_breaker_options`.
  bool circuit_breaker_enabled = true;
  partition_breaker_options circuit_breaker;
  /// Per-partition automatic failover of single-write accounts' writes
  /// ([georoute.per-partition-failover]): followed when the account says so;
  /// the defaults are documented on `partition_failover_options`.
  partition_failover_options per_partition_failover;
  /// Region health shared across a fleet ([georoute.fleet-health]).
  fleet_health_settings fleet;
};

/// Bounds of the metadata hard deadline.
constexpr milliseconds min_metadata_hard_deadline = seconds{30};
constexpr milliseconds max_metadata_hard_deadline = seconds{86400};

/// Renders every setting as INI text with the key redacted (for
/// --dump-config).
std::string render(const settings& s);

} // namespace georoute::config
