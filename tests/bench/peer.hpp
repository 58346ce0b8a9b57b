#pragma once

// The peer: @azure/cosmos (Node.js) driven through tests/bench/peer.mjs in a
// child `node` process, one JSON line per command each way. `start`
// installs the SDK with npm into `work_dir` when it is missing (the
// versions pinned by tests/conformance/package-lock.json) and answers a
// problem with the reason when it cannot (no node, no npm, no registry).

#include "georoute/actors/policy/result.hpp"

#include <chrono>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>

namespace georoute::bench {

/// See the file comment.
class node_peer {
public:
  /// `source_dir`: the source tree (peer.mjs, the conformance package
  /// files); `work_dir`: where node_modules goes (never the source tree).
  static result<std::unique_ptr<node_peer>> start(const std::string& source_dir,
                                                  const std::string& work_dir);
  ~node_peer(); ///< sends quit, waits, kills after 5 s

  /// Sends one command and waits (at most `timeout`) for its reply line.
  /// A reply with an "error" field is a problem.
  result<nlohmann::json> call(const nlohmann::json& cmd,
                              std::chrono::milliseconds timeout);

  int pid() const { return pid_; }

  node_peer(const node_peer&) = delete;
  node_peer& operator=(const node_peer&) = delete;

private:
  node_peer() = default;
  int pid_ = -1;
  int in_fd_ = -1;  ///< node's stdin
  int out_fd_ = -1; ///< node's stdout
  std::string pending_;
};

} // namespace georoute::bench
