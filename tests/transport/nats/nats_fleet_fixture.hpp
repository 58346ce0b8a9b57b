#pragma once

// A fleet "f1" for the channel tests: a throwaway PKI (the server's TLS
// certificate for 127.0.0.1 and localhost), two reporters p01 and p02 with
// freshly generated NKeys, the server configuration nats_server_config()
// writes for them, and a nats-server child process running it. Reporters
// are opened with short ping and reconnect intervals so that every test
// takes seconds.

#include "georoute/actors/policy/fleet_subject.hpp"
#include "georoute/transport/nats/channel.hpp"
#include "georoute/transport/nats/nkey.hpp"
#include "georoute/transport/nats/server_config.hpp"
#include "tests/transport/nats/nats_server_process.hpp"
#include "tests/transport/test_pki.hpp"

#include <chrono>
#include <condition_variable>
#include <gtest/gtest.h>
#include <iostream>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

namespace georoute::testing {

using namespace std::chrono_literals;

/// True as soon as `done()` is, false if it is not within `limit`.
template <class F>
bool eventually(F done, std::chrono::milliseconds limit = 5000ms) {
  auto until = std::chrono::steady_clock::now() + limit;
  while (!done()) {
    if (std::chrono::steady_clock::now() > until) return false;
    std::this_thread::sleep_for(5ms);
  }
  return true;
}

/// What a channel's handlers saw. Shared with the handlers, so it outlives
/// the channel whatever the order of destruction.
struct channel_log {
  std::mutex mu;
  std::vector<nats_inbound> messages;
  std::vector<std::pair<bool, std::string>> statuses;

  std::vector<nats_inbound> received() {
    std::lock_guard<std::mutex> guard{mu};
    return messages;
  }
  std::vector<std::pair<bool, std::string>> status_log() {
    std::lock_guard<std::mutex> guard{mu};
    return statuses;
  }
  /// Whether a message with this payload came.
  bool has_payload(const std::string& payload) {
    std::lock_guard<std::mutex> guard{mu};
    for (auto& m : messages)
      if (m.payload == payload) return true;
    return false;
  }
};

struct reporter {
  std::string rid;
  nkey_pair keys;
  std::string seed_file;
};

class nats_fleet : public ::testing::Test {
protected:
  static constexpr const char* fleet = "f1";
  static constexpr const char* acct = "acct";

  void SetUp() override {
    if (nats_server_path().empty())
      GTEST_SKIP() << "nats-server was not found when the build was "
                      "configured (Debian: apt-get install nats-server)";
    for (const char* rid : {"p01", "p02"}) {
      auto keys = generate_user_nkey();
      ASSERT_TRUE(keys) << keys.error().what;
      reporter r{rid, *keys, pki_.dir() + "/" + rid + ".nk"};
      auto p = write_nkey_seed_file(r.seed_file, r.keys.seed);
      ASSERT_FALSE(p) << p->what;
      reporters_[rid] = r;
    }
    server_ = std::make_unique<nats_server_process>(
        pki_.dir(), [this](int port) { return config(port); });
  }

  void TearDown() override {
    if (HasFailure() && server_)
      std::cerr << "nats-server log:\n" << server_->log_text();
  }

  /// The server's configuration on `port`.
  std::string config(int port) {
    nats_server_config_options o;
    o.fleet = fleet;
    o.port = port;
    o.tls_cert_file = pki_.server_cert;
    o.tls_key_file = pki_.server_key;
    o.tls_ca_file = pki_.ca_cert;
    for (auto& [rid, r] : reporters_)
      o.users.push_back({rid, r.keys.public_key});
    auto text = nats_server_config(o);
    EXPECT_TRUE(text) << text.error().what;
    return text ? *text : std::string{};
  }

  void start_server() { ASSERT_TRUE(server_->start()) << server_->error(); }

  /// Options of reporter `rid` for the server's port, subscribed to the
  /// account's subjects; without credentials when `rid` is empty.
  nats_channel_options options(const std::string& rid) {
    nats_channel_options o;
    o.servers = {server_->url()};
    o.name = "georoute/" + (rid.empty() ? std::string{"anonymous"} : rid);
    if (!rid.empty()) {
      o.nkey_public = reporters_.at(rid).keys.public_key;
      o.nkey_seed_file = reporters_.at(rid).seed_file;
    }
    o.ca_file = pki_.ca_cert;
    o.expected_hostname = "localhost";
    o.subscribe_subject = fleet_subscription(fleet, acct);
    o.connect_timeout = 500ms;
    o.ping_interval = 200ms;
    o.max_pings_out = 2;
    o.reconnect_wait = 50ms;
    o.write_deadline = 200ms;
    return o;
  }

  /// Opens a channel whose handlers write to `log`.
  std::unique_ptr<nats_channel> open(nats_channel_options o,
                                     std::shared_ptr<channel_log> log) {
    auto ch = nats_channel::open(
        std::move(o),
        [log](nats_inbound m) {
          std::lock_guard<std::mutex> guard{log->mu};
          log->messages.push_back(std::move(m));
        },
        [log](bool up, std::string what) {
          std::lock_guard<std::mutex> guard{log->mu};
          log->statuses.emplace_back(up, std::move(what));
        });
    EXPECT_TRUE(ch) << ch.error().what;
    return ch ? std::move(*ch) : nullptr;
  }

  /// The subject reporter `rid` may publish on.
  static std::string subject_of(const std::string& rid) {
    return fleet_subject(fleet, acct, "West US 2", rid);
  }

  /// Publishes `payload` from `from` every 50 ms until `to` received it:
  /// after a (re)connect the receiver's subscription may reach the server a
  /// moment after the publisher's connection is up.
  static bool delivered(nats_channel& from, const std::string& rid,
                        channel_log& to, const std::string& payload) {
    return eventually([&] {
      if (to.has_payload(payload)) return true;
      from.publish(subject_of(rid), payload);
      std::this_thread::sleep_for(45ms);
      return to.has_payload(payload);
    });
  }

  test_pki pki_;
  std::map<std::string, reporter> reporters_;
  std::unique_ptr<nats_server_process> server_;
};

} // namespace georoute::testing
