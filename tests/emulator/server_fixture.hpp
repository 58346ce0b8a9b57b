#pragma once

// Shared by the emulator's network tests (server_test.cpp, admin_test.cpp):
// a fixture with a three-region emulator on 127.0.0.1 port 0, a signed-request
// helper over the project's transport::http_client, and a raw POSIX exchange
// for what the client would hide.

#include "tests/emulator/emulator.hpp"
#include "georoute/transport/auth.hpp"
#include "georoute/transport/http_client.hpp"
#include "georoute/transport/url.hpp"

#include <arpa/inet.h>
#include <chrono>
#include <future>
#include <gtest/gtest.h>
#include <memory>
#include <netinet/in.h>
#include <nlohmann/json.hpp>
#include <string>
#include <sys/socket.h>
#include <unistd.h>
#include <variant>
#include <vector>

namespace georoute::emulator_testing {

using namespace std::chrono_literals;
using emulator::region_state;
using json = nlohmann::json;
using transport::failure;
using steady = std::chrono::steady_clock;

inline const std::vector<std::string> three_regions{"West US", "East US",
                                                    "North Europe"};

class EmulatorServer : public ::testing::Test {
protected:
  void SetUp() override {
    emulator::emulator_options o;
    o.engine.regions = three_regions;
    o.engine.initial_ranges = 2;
    auto started = emulator::emulator::start(o);
    ASSERT_TRUE(started) << started.error().what;
    emu = std::move(*started);
    auto k = transport::parse_master_key(emu->key());
    ASSERT_TRUE(k) << k.error().what;
    key = std::make_unique<transport::master_key>(std::move(*k));
    client = make_client();
  }

  static std::unique_ptr<transport::http_client> make_client() {
    transport::http_client_options co;
    co.max_connections_per_endpoint = 4;
    return std::make_unique<transport::http_client>(co);
  }

  /// A signed request, sent and waited for.
  transport::outcome
  send(const std::string& method, const std::string& endpoint,
       const std::string& target, std::string body = {},
       std::vector<std::pair<std::string, std::string>> headers = {},
       std::chrono::milliseconds timeout = 5s,
       transport::http_client* via = nullptr) {
    transport::request r;
    r.method = method;
    r.endpoint = endpoint;
    r.target = target;
    r.body = std::move(body);
    r.headers = std::move(headers);
    if (!r.body.empty())
      r.headers.emplace_back("content-type", "application/json");
    r.timeout = timeout;
    transport::sign_request(r, *key, std::chrono::system_clock::now());
    std::promise<transport::outcome> p;
    auto f = p.get_future();
    (via ? via : client.get())->send(std::move(r), [&p](transport::outcome o) {
      p.set_value(std::move(o));
    });
    return f.get();
  }

  /// An admin call on the global endpoint (unsigned is fine, signed too).
  transport::outcome admin(const std::string& method, const std::string& path,
                           const std::string& body = {}) {
    return send(method, emu->global_endpoint(), "/_emulator/" + path, body);
  }

  std::string west() const { return emu->endpoint("West US"); }

  /// Creates database `d` and collection `c` (pk /pk) in the write region.
  void create_collection() {
    auto db = send("POST", west(), "/dbs", R"({"id":"d"})");
    ASSERT_EQ(db.status, 201) << db.error_detail << db.body;
    auto coll = send("POST", west(), "/dbs/d/colls",
                     R"({"id":"c","partitionKey":{"paths":["/pk"],)"
                     R"("kind":"Hash","version":2}})");
    ASSERT_EQ(coll.status, 201) << coll.error_detail << coll.body;
  }

  std::unique_ptr<emulator::emulator> emu;
  std::unique_ptr<transport::master_key> key;
  std::unique_ptr<transport::http_client> client;
};

inline json parse(const transport::outcome& o) {
  auto j = json::parse(o.body, nullptr, false);
  EXPECT_FALSE(j.is_discarded()) << o.body;
  return j;
}

inline uint16_t port_of(const std::string& endpoint) {
  auto u = transport::parse_url(endpoint);
  auto* p = std::get_if<transport::url>(&u);
  EXPECT_NE(p, nullptr) << endpoint;
  return p ? p->port : 0;
}

/// A raw HTTP/1.1 exchange over a POSIX socket: sends `text`, reads until
/// the server closes (or 2 s pass). Returns what arrived.
inline std::string raw_exchange(const std::string& endpoint,
                                const std::string& text) {
  int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(port_of(endpoint));
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  timeval tv{2, 0};
  ::setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
  std::string out;
  if (::connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) == 0 &&
      ::send(fd, text.data(), text.size(), 0) ==
          static_cast<ssize_t>(text.size())) {
    char buf[4096];
    for (;;) {
      auto n = ::recv(fd, buf, sizeof(buf), 0);
      if (n <= 0) break;
      out.append(buf, static_cast<size_t>(n));
    }
  }
  ::close(fd);
  return out;
}

} // namespace georoute::emulator_testing
