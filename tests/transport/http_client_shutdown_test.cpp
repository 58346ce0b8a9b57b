// http_client lifetime: the destructor completes every pending request
// exactly once with failure::reset ("client shut down"), promptly; and the
// client stays correct with several io threads.

#include "georoute/transport/http_client.hpp"
#include "tests/transport/client_test_util.hpp"
#include "tests/transport/loopback_server.hpp"

#include <gtest/gtest.h>

namespace georoute::testing {
// Named after the file as well: the unity build (tests/CMakeLists.txt)
// compiles it in one translation unit with other tests.
namespace http_client_shutdown_test {
namespace {

using transport::failure;
using transport::http_client;
using transport::http_client_options;

reply slow(std::chrono::milliseconds delay) {
  reply r;
  r.body = "late";
  r.delay = delay;
  return r;
}

TEST(HttpClientShutdown, Destructor_RequestInFlight_ResetOnce) {
  loopback_server srv{[](const server_request&) { return slow(5s); }};
  collector c;
  auto client = std::make_unique<http_client>(http_client_options{});
  client->send(get(srv.endpoint(), "/", 30s), c.cb());
  ASSERT_TRUE(eventually([&] { return srv.requests() == 1; }));
  auto t0 = std::chrono::steady_clock::now();
  client.reset();
  EXPECT_LT(elapsed_since(t0), 2s);
  // The destructor returns only after the callback ran: no waiting here.
  ASSERT_EQ(c.count(), 1u);
  auto o = c.outcomes().front();
  EXPECT_EQ(o.error, failure::reset);
  EXPECT_EQ(o.error_detail, "client shut down");
  EXPECT_EQ(o.endpoint, srv.endpoint());
}

TEST(HttpClientShutdown, Destructor_QueuedAndInFlight_AllResetOnce) {
  loopback_server srv{[](const server_request&) { return slow(5s); }};
  collector c;
  http_client_options opts;
  opts.max_connections_per_endpoint = 1;
  auto client = std::make_unique<http_client>(opts);
  for (int i = 0; i < 3; ++i)
    client->send(get(srv.endpoint(), "/", 30s), c.cb());
  ASSERT_TRUE(eventually([&] { return srv.requests() == 1; }));
  client.reset();
  ASSERT_EQ(c.count(), 3u);
  for (const auto& o : c.outcomes()) {
    EXPECT_EQ(o.error, failure::reset);
    EXPECT_EQ(o.error_detail, "client shut down");
  }
}

TEST(HttpClientShutdown, Destructor_MidTlsHandshake_ResetOnce) {
  // A socket that listens but never accepts: the kernel completes the TCP
  // connect, nobody ever answers the ClientHello.
  net::io_context ioc;
  tcp::acceptor silent{ioc};
  tcp::endpoint ep{net::ip::make_address("127.0.0.1"), 0};
  silent.open(ep.protocol());
  silent.bind(ep);
  silent.listen();
  auto port = silent.local_endpoint().port();
  collector c;
  auto client = std::make_unique<http_client>(http_client_options{});
  client->send(get("https://127.0.0.1:" + std::to_string(port) + "/", "/", 30s),
               c.cb());
  ASSERT_TRUE(
      eventually([&] { return client->stats().connections_opened == 1; }));
  auto t0 = std::chrono::steady_clock::now();
  client.reset();
  EXPECT_LT(elapsed_since(t0), 2s);
  ASSERT_EQ(c.count(), 1u);
  EXPECT_EQ(c.outcomes().front().error, failure::reset);
  EXPECT_EQ(c.outcomes().front().error_detail, "client shut down");
}

TEST(HttpClientShutdown, Destructor_IdleKeepAliveConnection_NoCallback) {
  loopback_server srv{[](const server_request&) { return slow(0ms); }};
  collector c;
  auto client = std::make_unique<http_client>(http_client_options{});
  client->send(get(srv.endpoint()), c.cb());
  ASSERT_TRUE(c.wait_for(1));
  EXPECT_TRUE(c.outcomes().front().success());
  client.reset();
  EXPECT_EQ(c.count(), 1u);
  EXPECT_TRUE(eventually([&] { return srv.open() == 0; }));
}

TEST(HttpClientShutdown, IoThreads_TwoThreadsManyRequests_AllSucceedOnce) {
  loopback_server srv{[](const server_request& q) {
    reply r;
    r.body = std::string{q.target()};
    return r;
  }};
  http_client_options opts;
  opts.io_threads = 2;
  opts.max_connections_per_endpoint = 4;
  collector c;
  http_client client{opts};
  constexpr int n = 200;
  for (int i = 0; i < n; ++i)
    client.send(get(srv.endpoint(), "/" + std::to_string(i)), c.cb());
  ASSERT_TRUE(c.wait_for(n));
  auto outs = c.outcomes();
  EXPECT_EQ(outs.size(), size_t{n});
  std::vector<bool> seen(n, false);
  for (const auto& o : outs) {
    ASSERT_TRUE(o.success()) << to_string(o.error) << ": " << o.error_detail;
    auto i = std::stoi(o.body.substr(1));
    ASSERT_FALSE(seen[i]) << "duplicate completion for /" << i;
    seen[i] = true;
  }
  EXPECT_LE(srv.accepted(), 4);
  EXPECT_LE(srv.max_open(), 4);
  auto st = client.stats();
  EXPECT_EQ(st.requests, uint64_t{n});
  EXPECT_EQ(st.reused + st.connections_opened, uint64_t{n});
}

} // namespace
} // namespace http_client_shutdown_test
} // namespace georoute::testing
