#pragma once

// The emulator of `georoute bench`: `georoute emulator` started as a child
// process (this executable, /proc/self/exe), so that the CPU it spends is not
// counted as the client's. Endpoints come from its banner; faults and
// topology changes go through its admin API (/_emulator/... on the global
// endpoint), set-up requests are signed with its key. All HTTP goes through
// transport::http_client; all of it to 127.0.0.1.

#include "georoute/actors/policy/result.hpp"
#include "georoute/transport/outcome.hpp"

#include <map>
#include <memory>
#include <string>
#include <vector>

namespace georoute::transport {
class http_client;
} // namespace georoute::transport

namespace georoute::bench {

/// See the file comment.
class child_emulator {
public:
  /// Starts `exe emulator <args>` and waits (at most 15 s) for its banner.
  static result<std::unique_ptr<child_emulator>>
  start(const std::string& exe, const std::vector<std::string>& args);

  ~child_emulator(); ///< SIGTERM, then waits (SIGKILL after 10 s)

  int pid() const { return pid_; }
  const std::string& global_endpoint() const { return global_; }
  /// Region name -> "http://127.0.0.1:PORT/", from the banner.
  const std::map<std::string, std::string>& regions() const { return regions_; }
  const std::string& key() const { return key_; }

  /// One admin call (`path` below /_emulator/, e.g. "regions/West%20US/state").
  /// A non-2xx answer or a transport failure is a problem naming both.
  result<std::string> admin(const std::string& method, const std::string& path,
                            const std::string& json_body = {});

  /// One signed gateway request to `endpoint` (blocking, 10 s timeout).
  transport::outcome
  call(const std::string& method, const std::string& endpoint,
       const std::string& target, const std::string& body = {},
       std::vector<std::pair<std::string, std::string>> headers = {});

  child_emulator(const child_emulator&) = delete;
  child_emulator& operator=(const child_emulator&) = delete;

private:
  child_emulator();
  int pid_ = -1;
  int out_fd_ = -1;
  std::string global_;
  std::map<std::string, std::string> regions_;
  std::string key_;
  std::shared_ptr<transport::http_client> client_;
};

/// "West US" -> "West%20US" (path segments of the admin API).
std::string percent_encode(const std::string& text);

} // namespace georoute::bench
