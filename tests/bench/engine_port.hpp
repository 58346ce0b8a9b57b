#pragma once

// A port without sockets: every attempt is answered at once, on the
// caller's thread, by an in-process emulator engine (tests/emulator/
// engine.hpp). With `cache_documents`, the first answer to a document read
// is kept and replayed for the same target, so that the engine's own work
// (JSON, documents) stays out of the router's figures: what remains is the
// router, the port's signing and the actor hops. Used by the micro
// benchmark of the router path and by the memory measurement.
//
// Regions are told apart by endpoint: `endpoints` maps each region name to
// a made-up "http://127.0.0.1:PORT/" that nothing listens on; requests to
// `global_endpoint` are the global endpoint's ("").

#include "georoute/transport/auth.hpp"
#include "georoute/transport/port.hpp"
#include "tests/emulator/engine.hpp"

#include <atomic>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <unordered_map>

namespace georoute::bench {

/// Counts what a port was asked to send, by kind.
struct port_counts {
  std::atomic<uint64_t> account{0};
  std::atomic<uint64_t> collection_reads{0};
  std::atomic<uint64_t> pkranges_reads{0};
  /// pkranges requests answered 304: the end of the change feed, which
  /// every load reads up to (one load of one page is 2 requests).
  std::atomic<uint64_t> pkranges_not_modified{0};
  std::atomic<uint64_t> documents{0};
  std::atomic<uint64_t> other{0};

  void reset();
  /// Classifies one attempt by its kind; true for pkranges.
  bool count(const transport::attempt& a);
};

/// Wraps a port and counts every request before passing it on.
class counting_port : public transport::port {
public:
  explicit counting_port(transport::port_ptr inner)
      : inner_(std::move(inner)) {}
  void send(transport::attempt req, completion done) override;
  port_counts& counts() { return counts_; }

private:
  transport::port_ptr inner_;
  port_counts counts_;
};

/// See the file comment.
class engine_port : public transport::port {
public:
  /// `engine` must outlive the port. `sign`: sign every request with `key`
  /// as the real port does (the emulator engine may skip verifying).
  engine_port(emulator::engine& engine, std::string global_endpoint,
              std::map<std::string, std::string> endpoints,
              const std::string& key, bool sign, bool cache_documents);

  void send(transport::attempt a, completion done) override;

  /// Requests answered from the document cache.
  uint64_t replayed() const { return replayed_; }

private:
  emulator::engine& engine_;
  std::string global_;
  std::map<std::string, std::string> region_by_endpoint_;
  std::shared_ptr<transport::master_key> key_; ///< null: no signing
  bool cache_documents_;
  std::mutex mtx_;
  std::unordered_map<std::string, transport::outcome> documents_;
  std::atomic<uint64_t> replayed_{0};
};

} // namespace georoute::bench
