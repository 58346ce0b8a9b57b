// http_client over plain HTTP against the loopback server: keep-alive,
// pooling, deadlines, error mapping, limits and header mapping; what is sent
// again when a kept-alive socket closes under a request, and the table that
// decides it.

#include "georoute/transport/http_client.hpp"
#include "tests/transport/client_test_util.hpp"
#include "tests/transport/loopback_server.hpp"

#include <atomic>
#include <gtest/gtest.h>
#include <string>
#include <utility>
#include <vector>

namespace georoute::testing {
namespace {

using transport::failure;
using transport::http_client;
using transport::http_client_options;
using transport::outcome;

reply ok(std::string body = "ok") {
  reply r;
  r.body = std::move(body);
  return r;
}

TEST(HttpClient, KeepAlive_SequentialRequests_OneConnection) {
  loopback_server srv{[](const server_request&) { return ok(); }};
  http_client client{{}};
  constexpr int n = 5;
  for (int i = 0; i < n; ++i) {
    auto o = send_sync(client, get(srv.endpoint(), "/r" + std::to_string(i)));
    ASSERT_EQ(o.error, failure::none) << o.error_detail;
    EXPECT_EQ(o.status, 200);
    EXPECT_EQ(o.body, "ok");
  }
  EXPECT_EQ(srv.accepted(), 1);
  auto st = client.stats();
  EXPECT_EQ(st.requests, uint64_t{n});
  EXPECT_EQ(st.connections_opened, 1u);
  EXPECT_EQ(st.reused, uint64_t{n - 1});
}

// Every outcome names the connection that carried it and how many requests
// that connection had answered before: what a report needs to tell a
// fresh connection from a kept-alive one when an attempt fails.
TEST(HttpClient, Outcome_NamesItsConnectionAndWhatItServedBefore) {
  loopback_server srv{[](const server_request& q) {
    reply r = ok();
    if (q.target() == "/reset") r.how = reply::mode::reset_mid_body;
    return r;
  }};
  http_client client{{}};
  auto first = send_sync(client, get(srv.endpoint(), "/a"));
  ASSERT_TRUE(first.success()) << first.error_detail;
  EXPECT_NE(first.connection, 0u);
  EXPECT_EQ(first.connection_served, 0u);
  auto second = send_sync(client, get(srv.endpoint(), "/b"));
  EXPECT_EQ(second.connection, first.connection);
  EXPECT_EQ(second.connection_served, 1u);
  // A failure on that kept-alive connection says so too; the next request
  // goes out on a new one.
  auto cut = send_sync(client, get(srv.endpoint(), "/reset"));
  EXPECT_EQ(cut.error, failure::reset) << cut.error_detail;
  EXPECT_EQ(cut.connection, first.connection);
  EXPECT_EQ(cut.connection_served, 2u);
  auto fresh = send_sync(client, get(srv.endpoint(), "/c"));
  ASSERT_TRUE(fresh.success()) << fresh.error_detail;
  EXPECT_NE(fresh.connection, first.connection);
  EXPECT_EQ(fresh.connection_served, 0u);
}

// Every outcome says where its time went: the pool, a fresh connection's
// connect, the write, the wait for the answer. A request that found every
// connection busy says how long it queued.
TEST(HttpClient, Outcome_Timeline_QueueConnectWriteWait) {
  loopback_server srv{[](const server_request& q) {
    reply r = ok();
    if (q.target() == "/slow") r.delay = 100ms;
    return r;
  }};
  http_client_options opts;
  opts.max_connections_per_endpoint = 1;
  http_client client{opts};
  auto fresh = send_sync(client, get(srv.endpoint(), "/slow"));
  ASSERT_TRUE(fresh.success()) << fresh.error_detail;
  EXPECT_GE(fresh.queued_us, 0);
  EXPECT_GE(fresh.connect_us, 0) << "a fresh connection's connect";
  EXPECT_GE(fresh.write_us, 0);
  EXPECT_GE(fresh.wait_us, 100'000) << "the server's 100 ms";
  auto reused = send_sync(client, get(srv.endpoint(), "/fast"));
  ASSERT_TRUE(reused.success()) << reused.error_detail;
  EXPECT_EQ(reused.connect_us, 0) << "a kept-alive connection connects not";
  EXPECT_GE(reused.wait_us, 0);
  // One connection, two requests at once: the second waits in the pool
  // for the first's 100 ms.
  collector c;
  client.send(get(srv.endpoint(), "/slow"), c.cb());
  client.send(get(srv.endpoint(), "/fast"), c.cb());
  ASSERT_TRUE(c.wait_for(2));
  int64_t most_queued = 0;
  for (const auto& o : c.outcomes()) {
    ASSERT_TRUE(o.success()) << o.error_detail;
    most_queued = std::max(most_queued, o.queued_us);
  }
  EXPECT_GE(most_queued, 90'000) << "the second did not wait in the pool";
  // Nothing answers: the phases it reached, the wait until the deadline.
  loopback_server mute{[](const server_request&) {
    reply r = ok();
    r.delay = 2s;
    return r;
  }};
  auto late = send_sync(client, get(mute.endpoint(), "/x", 200ms));
  EXPECT_EQ(late.error, failure::timeout);
  EXPECT_GE(late.wait_us, 150'000) << late.wait_us;
}

TEST(HttpClient, Request_MethodTargetHeadersBody_SentVerbatim) {
  loopback_server srv{[](const server_request&) { return ok(); }};
  http_client client{{}};
  transport::request r;
  r.method = "POST";
  // The base path of the endpoint is ignored: the target is sent as given.
  r.endpoint = "http://127.0.0.1:" + std::to_string(srv.port()) + "/base/";
  r.target = "/dbs/d/colls/c/docs?x=1";
  r.headers = {{"x-ms-version", "2018-12-31"},
               {"authorization", "type%3Dmaster%26sig%3Dabc"},
               {"Content-Type", "application/json"}};
  r.body = R"({"id":"1"})";
  auto o = send_sync(client, r);
  ASSERT_EQ(o.error, failure::none) << o.error_detail;
  auto seen = srv.received();
  ASSERT_EQ(seen.size(), 1u);
  const auto& q = seen.front();
  EXPECT_EQ(q.method(), http::verb::post);
  EXPECT_EQ(q.target(), "/dbs/d/colls/c/docs?x=1");
  EXPECT_EQ(q[http::field::host], "127.0.0.1:" + std::to_string(srv.port()));
  EXPECT_EQ(q["x-ms-version"], "2018-12-31");
  EXPECT_EQ(q["authorization"], "type%3Dmaster%26sig%3Dabc");
  EXPECT_EQ(q[http::field::content_type], "application/json");
  EXPECT_EQ(q[http::field::content_length], std::to_string(r.body.size()));
  EXPECT_EQ(q.body(), r.body);
  EXPECT_EQ(q.version(), 11u);
  EXPECT_TRUE(q.keep_alive());
  EXPECT_EQ(o.endpoint, r.endpoint);
}

TEST(HttpClient, Request_EveryOne_CarriesGeorouteUserAgent) {
  loopback_server srv{[](const server_request&) { return ok(); }};
  http_client client{{}};
  auto plain = get(srv.endpoint(), "/a");
  auto claimed = get(srv.endpoint(), "/b");
  claimed.headers = {{"User-Agent", "someone-else/1.0"}};
  ASSERT_EQ(send_sync(client, plain).error, failure::none);
  ASSERT_EQ(send_sync(client, claimed).error, failure::none);
  auto seen = srv.received();
  ASSERT_EQ(seen.size(), 2u);
  for (const auto& q : seen) {
    EXPECT_EQ(q[http::field::user_agent], "georoute/" GEOROUTE_PROJECT_VERSION)
        << q.target();
    EXPECT_EQ(q.count(http::field::user_agent), 1u)
        << "one User-Agent header, the client's";
  }
}

TEST(HttpClient, Request_ClientOwnedHeaders_CallersLeftOut) {
  loopback_server srv{[](const server_request&) { return ok(); }};
  http_client client{{}};
  // A caller's Host, Content-Length, Connection and Transfer-Encoding
  // (any spelling) would contradict what the client writes: left out.
  auto r = get(srv.endpoint(), "/dbs/d");
  r.headers = {{"Host", "evil.example"},
               {"content-length", "99"},
               {"CONNECTION", "close"},
               {"Transfer-Encoding", "chunked"},
               {"x-ms-version", "2018-12-31"}};
  auto o = send_sync(client, r);
  ASSERT_EQ(o.error, failure::none) << o.error_detail;
  // A POST without a body still says its length; a GET without one does not.
  auto post = get(srv.endpoint(), "/dbs/d/colls");
  post.method = "POST";
  o = send_sync(client, post);
  ASSERT_EQ(o.error, failure::none) << o.error_detail;
  auto seen = srv.received();
  ASSERT_EQ(seen.size(), 2u);
  EXPECT_EQ(seen[0][http::field::host],
            "127.0.0.1:" + std::to_string(srv.port()));
  EXPECT_EQ(seen[0].count(http::field::host), 1u);
  EXPECT_EQ(seen[0].count(http::field::content_length), 0u);
  EXPECT_EQ(seen[0].count(http::field::transfer_encoding), 0u);
  EXPECT_TRUE(seen[0].keep_alive());
  EXPECT_EQ(seen[0]["x-ms-version"], "2018-12-31");
  EXPECT_EQ(seen[1].method(), http::verb::post);
  EXPECT_EQ(seen[1][http::field::content_length], "0");
  // Both went over the one kept-alive connection.
  EXPECT_EQ(srv.accepted(), 1);
}

TEST(HttpClient, Request_CrLfInHeaderOrTarget_RefusedBeforeSending) {
  loopback_server srv{[](const server_request&) { return ok(); }};
  http_client client{{}};
  // A CR or LF would end the header early and smuggle in another header or
  // a second request: such a request is refused, and nothing is sent.
  auto smuggle = get(srv.endpoint(), "/dbs/d");
  smuggle.headers = {
      {"x-ms-session-token", "0:1#1\r\nContent-Length: 40\r\n\r\nGET /x"}};
  auto o = send_sync(client, smuggle);
  EXPECT_EQ(o.error, failure::protocol);
  EXPECT_FALSE(o.request_sent);
  EXPECT_NE(o.error_detail.find("request not sent"), std::string::npos)
      << o.error_detail;
  EXPECT_NE(o.error_detail.find("'x-ms-session-token'"), std::string::npos)
      << o.error_detail;

  auto target = get(srv.endpoint(), "/dbs/d/colls/c/docs/a b");
  o = send_sync(client, target);
  EXPECT_EQ(o.error, failure::protocol);
  EXPECT_NE(o.error_detail.find("target"), std::string::npos) << o.error_detail;

  auto name = get(srv.endpoint(), "/dbs/d");
  name.headers = {{"x-ms bad", "v"}};
  o = send_sync(client, name);
  EXPECT_EQ(o.error, failure::protocol);
  EXPECT_NE(o.error_detail.find("'x-ms bad'"), std::string::npos)
      << o.error_detail;

  auto method = get(srv.endpoint(), "/dbs/d");
  method.method = "GET /evil";
  o = send_sync(client, method);
  EXPECT_EQ(o.error, failure::protocol);

  EXPECT_EQ(srv.accepted(), 0);
  EXPECT_TRUE(srv.received().empty());
  // The client still works.
  o = send_sync(client, get(srv.endpoint(), "/dbs/d"));
  EXPECT_EQ(o.error, failure::none) << o.error_detail;
}

TEST(HttpClient, Response_HeaderLargerThanTheConnectionsBlock_MappedWhole) {
  // A response's fields live in a block the connection keeps; a header
  // block larger than it spills to the heap and is mapped just the same,
  // and the next response on the connection starts clean.
  std::atomic<int> n{0};
  const std::string big(9000, 'c');
  loopback_server srv{[&](const server_request&) {
    reply r;
    if (n++ == 0) {
      for (int i = 0; i < 40; ++i)
        r.headers.emplace_back("x-filler-" + std::to_string(i),
                               std::string(100, 'f'));
      r.headers.emplace_back("x-ms-continuation", big);
    }
    r.headers.emplace_back("x-ms-session-token", "0:" + std::to_string(n));
    r.body = "b" + std::to_string(n);
    return r;
  }};
  http_client_options opts;
  opts.max_header_bytes = 64 * 1024;
  http_client client{opts};
  auto o = send_sync(client, get(srv.endpoint(), "/a"));
  ASSERT_EQ(o.error, failure::none) << o.error_detail;
  EXPECT_EQ(o.continuation, big);
  EXPECT_EQ(o.session_token, "0:1");
  EXPECT_EQ(o.body, "b1");
  o = send_sync(client, get(srv.endpoint(), "/b"));
  ASSERT_EQ(o.error, failure::none) << o.error_detail;
  EXPECT_EQ(o.continuation, "");
  EXPECT_EQ(o.session_token, "0:2");
  EXPECT_EQ(o.body, "b2");
  EXPECT_EQ(srv.accepted(), 1);
}

TEST(HttpClient, Response_MsHeaders_MappedIntoOutcome) {
  loopback_server srv{[](const server_request&) {
    reply r;
    r.status = 429;
    r.headers = {{"x-ms-substatus", "3200"},
                 {"x-ms-retry-after-ms", "1500"},
                 {"x-ms-session-token", "0:1#12#3=4"},
                 {"x-ms-request-charge", "2.75"},
                 {"ETag", "\"00000-abc\""},
                 {"x-ms-continuation", "{\"token\":\"+RID:1\"}"},
                 {"x-ms-content-path", "dbs/d/colls/c"},
                 {"x-ms-activity-id", "6f2c-aid"}};
    r.body = R"({"code":"TooManyRequests"})";
    return r;
  }};
  http_client client{{}};
  auto req = get(srv.endpoint(), "/dbs/d");
  auto o = send_sync(client, req);
  ASSERT_EQ(o.error, failure::none) << o.error_detail;
  EXPECT_EQ(o.status, 429);
  EXPECT_FALSE(o.success());
  EXPECT_EQ(o.substatus, 3200);
  EXPECT_EQ(o.retry_after_ms, 1500);
  EXPECT_EQ(o.session_token, "0:1#12#3=4");
  EXPECT_DOUBLE_EQ(o.request_charge, 2.75);
  EXPECT_EQ(o.etag, "\"00000-abc\"");
  EXPECT_EQ(o.continuation, "{\"token\":\"+RID:1\"}");
  EXPECT_EQ(o.content_path, "dbs/d/colls/c");
  EXPECT_EQ(o.activity_id, "6f2c-aid");
  EXPECT_EQ(o.body, R"({"code":"TooManyRequests"})");
  EXPECT_EQ(o.endpoint, req.endpoint);
  EXPECT_TRUE(o.error_detail.empty());
}

TEST(HttpClient, Response_MsHeadersAbsentOrGarbage_Defaults) {
  loopback_server srv{[](const server_request& q) {
    reply r;
    if (q.target() == "/garbage")
      r.headers = {{"x-ms-substatus", "12ab"},
                   {"x-ms-retry-after-ms", "soon"},
                   {"x-ms-request-charge", "lots"}};
    return r;
  }};
  http_client client{{}};
  for (auto target : {"/absent", "/garbage"}) {
    auto o = send_sync(client, get(srv.endpoint(), target));
    ASSERT_EQ(o.error, failure::none) << target << ": " << o.error_detail;
    EXPECT_TRUE(o.success()) << target;
    EXPECT_EQ(o.substatus, 0) << target;
    EXPECT_EQ(o.retry_after_ms, -1) << target;
    EXPECT_EQ(o.request_charge, 0.0) << target;
    EXPECT_EQ(o.session_token, "") << target;
    EXPECT_EQ(o.etag, "") << target;
  }
}

TEST(HttpClient, Response_Status503_IsAResponseNotAFailure) {
  loopback_server srv{[](const server_request&) {
    reply r;
    r.status = 503;
    r.body = "busy";
    return r;
  }};
  http_client client{{}};
  auto o = send_sync(client, get(srv.endpoint()));
  EXPECT_EQ(o.error, failure::none) << o.error_detail;
  EXPECT_EQ(o.status, 503);
  EXPECT_EQ(o.body, "busy");
  EXPECT_FALSE(o.success());
}

TEST(HttpClient, Pool_SixConcurrentSlowRequests_AtMostTwoConnections) {
  loopback_server srv{[](const server_request&) {
    reply r = ok();
    r.delay = 300ms;
    return r;
  }};
  http_client_options opts;
  opts.max_connections_per_endpoint = 2;
  http_client client{opts};
  collector c;
  auto t0 = std::chrono::steady_clock::now();
  for (int i = 0; i < 6; ++i)
    client.send(get(srv.endpoint(), "/slow"), c.cb());
  ASSERT_TRUE(c.wait_for(6));
  auto took = elapsed_since(t0);
  for (const auto& o : c.outcomes())
    EXPECT_TRUE(o.success()) << to_string(o.error) << ": " << o.error_detail;
  EXPECT_EQ(srv.accepted(), 2);
  EXPECT_LE(srv.max_open(), 2);
  EXPECT_LE(srv.max_in_flight(), 2);
  // Six 300 ms requests over two connections take three rounds.
  EXPECT_GE(took, 850ms);
  auto st = client.stats();
  EXPECT_EQ(st.connections_opened, 2u);
  EXPECT_EQ(st.reused, 4u);
}

TEST(HttpClient, Pool_QueueWaitPastDeadline_Timeout) {
  loopback_server srv{[](const server_request&) {
    reply r = ok();
    r.delay = 1000ms;
    return r;
  }};
  http_client_options opts;
  opts.max_connections_per_endpoint = 1;
  http_client client{opts};
  collector first;
  client.send(get(srv.endpoint(), "/slow", 5s), first.cb());
  auto t0 = std::chrono::steady_clock::now();
  auto o = send_sync(client, get(srv.endpoint(), "/queued", 150ms));
  EXPECT_EQ(o.error, failure::timeout) << o.error_detail;
  EXPECT_NE(o.error_detail.find("no free connection"), std::string::npos)
      << o.error_detail;
  EXPECT_LT(elapsed_since(t0), 900ms);
  ASSERT_TRUE(first.wait_for(1));
  EXPECT_TRUE(first.outcomes().front().success());
  EXPECT_EQ(srv.requests(), 1);
}

TEST(HttpClient, Timeout_SlowServer_TimeoutThenNewConnection) {
  loopback_server srv{[](const server_request& q) {
    reply r = ok();
    if (q.target() == "/slow") r.delay = 2000ms;
    return r;
  }};
  http_client client{{}};
  auto t0 = std::chrono::steady_clock::now();
  auto o = send_sync(client, get(srv.endpoint(), "/slow", 200ms));
  auto took = elapsed_since(t0);
  EXPECT_EQ(o.error, failure::timeout) << o.error_detail;
  EXPECT_EQ(o.status, 0);
  EXPECT_GE(took, 150ms);
  EXPECT_LT(took, 1500ms);
  auto next = send_sync(client, get(srv.endpoint(), "/fast"));
  EXPECT_TRUE(next.success()) << next.error_detail;
  EXPECT_EQ(srv.accepted(), 2);
  EXPECT_EQ(client.stats().connections_opened, 2u);
  EXPECT_EQ(client.stats().reused, 0u);
}

// The deadline also holds on a kept-alive socket, and the timed-out socket
// is not reused.
TEST(HttpClient, Timeout_SlowServerOnReusedSocket_TimeoutThenNewConnection) {
  loopback_server srv{[](const server_request& q) {
    reply r = ok();
    if (q.target() == "/slow") r.delay = 2000ms;
    return r;
  }};
  http_client client{{}};
  ASSERT_TRUE(send_sync(client, get(srv.endpoint(), "/fast")).success());
  auto t0 = std::chrono::steady_clock::now();
  auto o = send_sync(client, get(srv.endpoint(), "/slow", 200ms));
  auto took = elapsed_since(t0);
  EXPECT_EQ(o.error, failure::timeout) << o.error_detail;
  EXPECT_LT(took, 1500ms);
  EXPECT_EQ(client.stats().reused, 1u);
  EXPECT_TRUE(send_sync(client, get(srv.endpoint(), "/fast")).success());
  EXPECT_EQ(srv.accepted(), 2);
  EXPECT_EQ(client.stats().connections_opened, 2u);
}

// One deadline timer per connection, left pending between requests: when
// a short request's wait expires under a later, longer one, it waits again
// for the later deadline instead of cutting that request off.
TEST(HttpClient, Timeout_LongerDeadlineAfterAShortOne_NotCutShort) {
  loopback_server srv{[](const server_request& q) {
    reply r = ok();
    if (q.target() == "/slow") r.delay = 700ms;
    return r;
  }};
  http_client client{{}};
  ASSERT_TRUE(send_sync(client, get(srv.endpoint(), "/fast", 200ms)).success());
  auto o = send_sync(client, get(srv.endpoint(), "/slow", 5000ms));
  EXPECT_TRUE(o.success()) << to_string(o.error) << ": " << o.error_detail;
  // And the next short one still times out on that same kind of socket.
  auto late = send_sync(client, get(srv.endpoint(), "/slow", 200ms));
  EXPECT_EQ(late.error, failure::timeout) << late.error_detail;
  EXPECT_EQ(client.stats().reused, 2u);
}

TEST(HttpClient, Connect_ClosedPort_Refused) {
  auto port = closed_loopback_port();
  http_client client{{}};
  auto o =
      send_sync(client, get("http://127.0.0.1:" + std::to_string(port) + "/"));
  EXPECT_EQ(o.error, failure::refused) << o.error_detail;
  EXPECT_FALSE(o.request_sent);
  EXPECT_NE(o.error_detail.find("connect to 127.0.0.1:" + std::to_string(port)),
            std::string::npos)
      << o.error_detail;
  EXPECT_EQ(client.stats().connections_opened, 0u);
}

// Response bytes had arrived before the RST: the server may have acted on
// the request, so even on a reused socket it is not retried.
TEST(HttpClient, Server_ResetMidResponseOnReusedSocket_ResetWithoutRetry) {
  loopback_server srv{[](const server_request& q) {
    reply r = ok();
    if (q.target() == "/reset") r.how = reply::mode::reset_mid_body;
    return r;
  }};
  http_client client{{}};
  ASSERT_TRUE(send_sync(client, get(srv.endpoint(), "/first")).success());
  auto o = send_sync(client, get(srv.endpoint(), "/reset"));
  EXPECT_EQ(o.error, failure::reset) << o.error_detail;
  EXPECT_TRUE(o.request_sent);
  EXPECT_EQ(o.status, 0);
  EXPECT_EQ(client.stats().reused, 1u);
  EXPECT_EQ(srv.requests(), 2);
  EXPECT_EQ(srv.accepted(), 1);
}

// A truncated body is reported as reset (the peer closed mid-exchange), and
// since response bytes had arrived the request is not retried.
TEST(HttpClient, Server_TruncatedBodyOnReusedSocket_ResetWithoutRetry) {
  loopback_server srv{[](const server_request& q) {
    reply r = ok();
    if (q.target() == "/truncated") r.how = reply::mode::truncated_body;
    return r;
  }};
  http_client client{{}};
  ASSERT_TRUE(send_sync(client, get(srv.endpoint(), "/first")).success());
  auto o = send_sync(client, get(srv.endpoint(), "/truncated"));
  EXPECT_EQ(o.error, failure::reset) << o.error_detail;
  EXPECT_EQ(client.stats().reused, 1u);
  EXPECT_EQ(srv.requests(), 2);
  EXPECT_EQ(srv.accepted(), 1);
}

TEST(HttpClient, Server_GarbageResponse_Protocol) {
  loopback_server srv{[](const server_request&) {
    reply r;
    r.how = reply::mode::raw;
    r.raw = "HELLO WORLD\r\n\r\n";
    return r;
  }};
  http_client client{{}};
  auto o = send_sync(client, get(srv.endpoint()));
  EXPECT_EQ(o.error, failure::protocol) << o.error_detail;
}

TEST(HttpClient, Limits_BodyOverLimit_BodyTooLargeAndAtLimit_Ok) {
  loopback_server srv{[](const server_request& q) {
    if (q.target() == "/chunked") {
      reply r; // 2 KiB in one chunk: no Content-Length to check up front
      r.how = reply::mode::raw;
      r.raw = "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n800\r\n" +
              std::string(2048, 'c') + "\r\n0\r\n\r\n";
      return r;
    }
    return ok(std::string(q.target() == "/big" ? 4096 : 1024, 'b'));
  }};
  http_client_options opts;
  opts.max_response_body = 1024;
  http_client client{opts};
  auto big = send_sync(client, get(srv.endpoint(), "/big"));
  EXPECT_EQ(big.error, failure::body_too_large) << big.error_detail;
  EXPECT_TRUE(big.body.empty());
  auto chunked = send_sync(client, get(srv.endpoint(), "/chunked"));
  EXPECT_EQ(chunked.error, failure::body_too_large) << chunked.error_detail;
  auto fits = send_sync(client, get(srv.endpoint(), "/fits"));
  EXPECT_TRUE(fits.success()) << fits.error_detail;
  EXPECT_EQ(fits.body.size(), 1024u);
}

TEST(HttpClient, Limits_HeadersOverLimit_Protocol) {
  loopback_server srv{[](const server_request& q) {
    reply r = ok();
    if (q.target() == "/big") r.headers = {{"x-big", std::string(4096, 'h')}};
    return r;
  }};
  http_client_options opts;
  opts.max_header_bytes = 1024;
  http_client client{opts};
  auto big = send_sync(client, get(srv.endpoint(), "/big"));
  EXPECT_EQ(big.error, failure::protocol) << big.error_detail;
  auto small = send_sync(client, get(srv.endpoint(), "/small"));
  EXPECT_TRUE(small.success()) << small.error_detail;
}

TEST(HttpClient, Server_ConnectionClose_NotReused) {
  loopback_server srv{[](const server_request&) {
    reply r = ok();
    r.connection_close = true;
    return r;
  }};
  http_client client{{}};
  for (int i = 0; i < 3; ++i) {
    auto o = send_sync(client, get(srv.endpoint()));
    EXPECT_TRUE(o.success()) << o.error_detail;
  }
  EXPECT_EQ(srv.accepted(), 3);
  EXPECT_EQ(client.stats().reused, 0u);
  EXPECT_EQ(client.stats().connections_opened, 3u);
}

// The server closes a kept-alive socket while it is idle (the stale-pool
// case). Its FIN is on the socket before the next request is written: the
// client sees it, writes nothing there, and sends the request once on a
// fresh connection.
TEST(HttpClient, KeepAlive_ServerClosedIdleSocket_SentOnFreshConnection) {
  loopback_server srv{[](const server_request& q) {
    reply r = ok(std::string{q.target()});
    if (q.target() == "/then-close") r.how = reply::mode::close_silently;
    return r;
  }};
  http_client client{{}};
  ASSERT_TRUE(send_sync(client, get(srv.endpoint(), "/then-close")).success());
  ASSERT_TRUE(eventually([&] { return srv.closed() == 1; }));
  auto o = send_sync(client, get(srv.endpoint(), "/after"));
  EXPECT_TRUE(o.success()) << to_string(o.error) << ": " << o.error_detail;
  EXPECT_EQ(o.body, "/after");
  EXPECT_EQ(srv.accepted(), 2);
  EXPECT_EQ(srv.requests(), 2);
  auto st = client.stats();
  EXPECT_EQ(st.requests, 2u);
  EXPECT_EQ(st.connections_opened, 2u);
  EXPECT_EQ(st.reused, 0u); // nothing was written on the dead socket
  EXPECT_EQ(st.stale_unsent, 1u);
  EXPECT_EQ(st.resent, 0u);
}

// The same for a create, which may never be sent twice: nothing of it was
// written on the dead socket, so sending it on a fresh one applies it once.
TEST(HttpClient, KeepAlive_ServerClosedIdleSocketBeforeCreate_AppliedOnce) {
  std::atomic<int> creates{0};
  loopback_server srv{[&creates](const server_request& q) {
    if (q.target() == "/then-close") {
      reply r = ok();
      r.how = reply::mode::close_silently;
      return r;
    }
    ++creates;
    reply r = ok("created");
    r.status = 201;
    return r;
  }};
  http_client client{{}};
  ASSERT_TRUE(send_sync(client, get(srv.endpoint(), "/then-close")).success());
  ASSERT_TRUE(eventually([&] { return srv.closed() == 1; }));
  transport::request create;
  create.method = "POST";
  create.endpoint = srv.endpoint();
  create.target = "/dbs/d/colls/c/docs";
  create.headers = {{"content-type", "application/json"}};
  create.body = R"({"id":"doc1"})";
  auto o = send_sync(client, create);
  EXPECT_EQ(o.status, 201) << to_string(o.error) << ": " << o.error_detail;
  EXPECT_EQ(creates.load(), 1);
  EXPECT_EQ(srv.accepted(), 2);
  auto st = client.stats();
  EXPECT_EQ(st.stale_unsent, 1u);
  EXPECT_EQ(st.resent, 0u);
  EXPECT_EQ(st.resend_refused, 0u);
}

// -- a kept-alive socket that closes after the server applied the request ---
//
// The server reads the request, applies it (counts it) and closes the
// kept-alive socket without a byte of answer. From the client the close
// looks like the stale-pool race; only what repeats harmlessly is sent
// again.

transport::request
kind_request(std::string method, std::string target,
             std::vector<std::pair<std::string, std::string>> headers,
             std::string body = {}) {
  transport::request r;
  r.method = std::move(method);
  r.target = std::move(target);
  r.headers = std::move(headers);
  r.body = std::move(body);
  r.timeout = 5s;
  return r;
}

const std::string docs = "/dbs/d/colls/c/docs";
const std::string doc1 = "/dbs/d/colls/c/docs/doc1";

transport::request query_post() {
  return kind_request("POST", docs,
                      {{"content-type", "application/query+json"},
                       {"x-ms-documentdb-isquery", "True"}},
                      R"({"query":"SELECT * FROM c"})");
}

transport::request query_plan_post() {
  return kind_request("POST", docs,
                      {{"content-type", "application/query+json"},
                       {"x-ms-cosmos-is-query-plan-request", "True"}},
                      R"({"query":"SELECT * FROM c"})");
}

transport::request create_post() {
  return kind_request("POST", docs, {{"content-type", "application/json"}},
                      R"({"id":"doc1"})");
}

transport::request upsert_post() {
  return kind_request("POST", docs,
                      {{"content-type", "application/json"},
                       {"x-ms-documentdb-is-upsert", "true"}},
                      R"({"id":"doc1"})");
}

transport::request put_replace() {
  return kind_request("PUT", doc1, {{"content-type", "application/json"}},
                      R"({"id":"doc1","n":2})");
}

transport::request put_replace_if_match() {
  return kind_request(
      "PUT", doc1,
      {{"content-type", "application/json"}, {"if-match", "\"00000-abc\""}},
      R"({"id":"doc1","n":2})");
}

transport::request delete_doc() {
  return kind_request("DELETE", doc1, {});
}

transport::request patch_doc() {
  return kind_request(
      "PATCH", doc1, {{"content-type", "application/json-patch+json"}},
      R"({"operations":[{"op":"incr","path":"/n","value":1}]})");
}

/// What became of one request whose first copy the server applied and then
/// answered by closing the kept-alive socket.
struct closed_after_apply {
  outcome o;
  int applied = 0;  ///< copies the server's handler saw
  int accepted = 0; ///< connections the server accepted
  transport::http_client_stats stats;
};

closed_after_apply send_closed_after_apply(transport::request r) {
  std::atomic<int> applied{0};
  loopback_server srv{[&applied](const server_request& q) {
    if (q.target() == "/warm") return ok();
    reply answer = ok("applied");
    if (++applied == 1) answer.how = reply::mode::close_unanswered;
    return answer;
  }};
  http_client client{{}};
  // The request under test goes out on a kept-alive socket.
  EXPECT_TRUE(send_sync(client, get(srv.endpoint(), "/warm")).success());
  r.endpoint = srv.endpoint();
  closed_after_apply result;
  result.o = send_sync(client, r);
  result.applied = applied.load();
  result.accepted = srv.accepted();
  result.stats = client.stats();
  return result;
}

void expect_resent(const closed_after_apply& r) {
  EXPECT_TRUE(r.o.success())
      << to_string(r.o.error) << ": " << r.o.error_detail;
  EXPECT_EQ(r.o.body, "applied");
  EXPECT_EQ(r.applied, 2);  // the first copy and the one sent again
  EXPECT_EQ(r.accepted, 2); // on a fresh connection
  EXPECT_EQ(r.stats.reused, 1u);
  EXPECT_EQ(r.stats.resent, 1u);
  EXPECT_EQ(r.stats.resend_refused, 0u);
  EXPECT_EQ(r.stats.stale_unsent, 0u);
}

void expect_not_resent(const closed_after_apply& r) {
  EXPECT_EQ(r.o.error, failure::reset) << r.o.error_detail;
  EXPECT_TRUE(r.o.request_sent);
  EXPECT_EQ(r.o.status, 0);
  EXPECT_NE(r.o.error_detail.find("may have applied it"), std::string::npos)
      << r.o.error_detail;
  EXPECT_EQ(r.applied, 1);  // exactly once
  EXPECT_EQ(r.accepted, 1); // no fresh connection
  EXPECT_EQ(r.stats.resent, 0u);
  EXPECT_EQ(r.stats.resend_refused, 1u);
  EXPECT_EQ(r.stats.stale_unsent, 0u);
}

TEST(HttpClient, ClosedAfterApply_Get_ResentOnFreshConnection) {
  expect_resent(send_closed_after_apply(get("", doc1)));
}

TEST(HttpClient, ClosedAfterApply_QueryPost_ResentOnFreshConnection) {
  expect_resent(send_closed_after_apply(query_post()));
}

TEST(HttpClient, ClosedAfterApply_QueryPlanPost_ResentOnFreshConnection) {
  expect_resent(send_closed_after_apply(query_plan_post()));
}

TEST(HttpClient, ClosedAfterApply_CreatePost_AppliedOnceResetMaybeApplied) {
  expect_not_resent(send_closed_after_apply(create_post()));
}

TEST(HttpClient, ClosedAfterApply_UpsertPost_AppliedOnceResetMaybeApplied) {
  expect_not_resent(send_closed_after_apply(upsert_post()));
}

TEST(HttpClient, ClosedAfterApply_PutReplace_AppliedOnceResetMaybeApplied) {
  expect_not_resent(send_closed_after_apply(put_replace()));
}

TEST(HttpClient,
     ClosedAfterApply_PutReplaceWithIfMatch_AppliedOnceResetMaybeApplied) {
  expect_not_resent(send_closed_after_apply(put_replace_if_match()));
}

TEST(HttpClient, ClosedAfterApply_Delete_AppliedOnceResetMaybeApplied) {
  expect_not_resent(send_closed_after_apply(delete_doc()));
}

TEST(HttpClient, ClosedAfterApply_Patch_AppliedOnceResetMaybeApplied) {
  expect_not_resent(send_closed_after_apply(patch_doc()));
}

// On a fresh connection the client never sends again by itself, whatever
// the method; the outcome says the request went out, so that the retry
// policy does not take it for a connection that never carried it.
TEST(HttpClient, ClosedAfterApply_CreateOnFreshConnection_ResetRequestSent) {
  std::atomic<int> applied{0};
  loopback_server srv{[&applied](const server_request&) {
    ++applied;
    reply r;
    r.how = reply::mode::close_unanswered;
    return r;
  }};
  http_client client{{}};
  auto r = create_post();
  r.endpoint = srv.endpoint();
  auto o = send_sync(client, r);
  EXPECT_EQ(o.error, failure::reset) << o.error_detail;
  EXPECT_TRUE(o.request_sent);
  EXPECT_EQ(applied.load(), 1);
  EXPECT_EQ(srv.accepted(), 1);
  auto st = client.stats();
  EXPECT_EQ(st.resent + st.resend_refused + st.stale_unsent, 0u);
}

// -- the resend table ---------------------------------------------------------

struct resend_row {
  const char* name;
  transport::request req;
  bool repeat_safe;
};

std::vector<resend_row> resend_rows() {
  auto with = [](transport::request r, auto change) {
    change(r);
    return r;
  };
  return {
      {"Get", get("", doc1), true},
      {"Head", kind_request("HEAD", doc1, {}), true},
      {"GetFeed", get("", docs), true},
      {"QueryPost", query_post(), true},
      {"QueryPlanPost", query_plan_post(), true},
      {"QueryPostContentTypeWithCharsetAndCase",
       kind_request(
           "POST", docs,
           {{"Content-Type", " Application/Query+JSON; charset=utf-8"}}),
       true},
      {"QueryHeaderWithJsonBody",
       kind_request("POST", docs,
                    {{"content-type", "application/json"},
                     {"x-ms-documentdb-isquery", "True"}}),
       false},
      {"QueryHeaderWithoutContentType",
       kind_request("POST", docs, {{"x-ms-documentdb-isquery", "True"}}),
       false},
      {"TwoContentTypesOneJson",
       kind_request("POST", docs,
                    {{"content-type", "application/query+json"},
                     {"content-type", "application/json"}}),
       false},
      {"CreatePost", create_post(), false},
      {"UpsertPost", upsert_post(), false},
      {"StoredProcedurePost",
       kind_request("POST", "/dbs/d/colls/c/sprocs/p",
                    {{"content-type", "application/json"}}, "[]"),
       false},
      {"PutReplace", put_replace(), false},
      {"PutReplaceWithIfMatch", put_replace_if_match(), false},
      {"Delete", delete_doc(), false},
      {"DeleteWithIfMatch",
       with(delete_doc(),
            [](auto& r) { r.headers.emplace_back("if-match", "\"e\""); }),
       false},
      {"Patch", patch_doc(), false},
      {"LowerCaseGet", kind_request("get", doc1, {}), false},
      {"Options", kind_request("OPTIONS", doc1, {}), false},
  };
}

TEST(ResendRule, RepeatSafe_EachMethodAndKind_AsTheTable) {
  for (const auto& r : resend_rows())
    EXPECT_EQ(transport::repeat_safe(r.req), r.repeat_safe) << r.name;
}

TEST(ResendRule, ResendAfterClose_ProvablyUnsent_EveryMethodResent) {
  for (const auto& r : resend_rows())
    EXPECT_TRUE(
        transport::resend_after_close(r.req, transport::send_progress::unsent))
        << r.name;
}

TEST(ResendRule, ResendAfterClose_MaybeSent_OnlyRepeatSafeResent) {
  for (const auto& r : resend_rows())
    EXPECT_EQ(transport::resend_after_close(
                  r.req, transport::send_progress::maybe_sent),
              r.repeat_safe)
        << r.name;
}

TEST(HttpClient, Endpoint_Unparsable_Protocol) {
  http_client client{{}};
  auto o = send_sync(client, get("ftp://127.0.0.1:21/"));
  EXPECT_EQ(o.error, failure::protocol) << o.error_detail;
  EXPECT_NE(o.error_detail.find("bad endpoint"), std::string::npos)
      << o.error_detail;
  EXPECT_EQ(o.endpoint, "ftp://127.0.0.1:21/");
  EXPECT_EQ(client.stats().requests, 1u);
}

TEST(HttpClient, Endpoint_LocalhostName_ResolvedAndHostHeaderKept) {
  loopback_server srv{[](const server_request&) { return ok(); }};
  http_client client{{}};
  auto ep = "http://localhost:" + std::to_string(srv.port()) + "/";
  auto o = send_sync(client, get(ep));
  ASSERT_TRUE(o.success()) << to_string(o.error) << ": " << o.error_detail;
  auto seen = srv.received();
  ASSERT_EQ(seen.size(), 1u);
  EXPECT_EQ(seen.front()[http::field::host],
            "localhost:" + std::to_string(srv.port()));
}

TEST(HttpClient, Endpoint_UnknownHost_Dns) {
  http_client client{{}};
  auto o = send_sync(client, get("http://no-such-host.invalid:80/", "/", 3s));
  if (o.error == failure::timeout)
    GTEST_SKIP() << "this machine's resolver does not answer: "
                 << o.error_detail;
  EXPECT_EQ(o.error, failure::dns) << o.error_detail;
  EXPECT_NE(o.error_detail.find("resolve no-such-host.invalid:80"),
            std::string::npos)
      << o.error_detail;
}

TEST(HttpClient, Callback_Throws_ClientKeepsWorking) {
  loopback_server srv{[](const server_request&) { return ok(); }};
  http_client client{{}};
  collector c;
  auto inner = c.cb();
  client.send(get(srv.endpoint()), [inner](outcome o) {
    inner(std::move(o));
    throw std::runtime_error("callback bug");
  });
  ASSERT_TRUE(c.wait_for(1));
  auto o = send_sync(client, get(srv.endpoint()));
  EXPECT_TRUE(o.success()) << o.error_detail;
  EXPECT_EQ(c.count(), 1u);
}

} // namespace
} // namespace georoute::testing
