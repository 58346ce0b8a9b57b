// http_client in loop mode (`http_client_options::loop`): no thread of its
// own, every handler and completion on the loop's driver thread; `send`
// from that thread or from any other; the destructor on the loop thread, on
// another thread while the loop runs, and when nobody drives the loop.
// The loop here is driven by a plain thread (the engine loop scheduler does
// the same in the engine).

#include "tests/transport/client_test_util.hpp"
#include "tests/transport/loopback_server.hpp"
#include "georoute/transport/http_client.hpp"
#include "georoute/transport/io_loop.hpp"

#include <atomic>
#include <future>
#include <gtest/gtest.h>

namespace georoute::testing {
namespace {

using transport::failure;
using transport::http_client;
using transport::http_client_options;
using transport::io_loop;

/// Drives an io_loop on a thread of its own until `stop`.
class loop_runner {
public:
  loop_runner() {
    thread_ = std::thread{[this] {
      loop->become_driver();
      while (!stopping_.load())
        loop->run_one_until(std::chrono::steady_clock::now() + 20ms);
      loop->stop_driving();
    }};
  }
  ~loop_runner() { stop(); }

  /// Ends the driver thread; the loop then has no driver. What the thread
  /// left queued (e.g. the aborted reads of a client destroyed just before)
  /// runs here, as the engine loop does when its system stops: a queued
  /// handler holds its connection, the connection its client core and the
  /// core this loop, so one left in the queue would keep them all alive.
  void stop() {
    if (!thread_.joinable()) return;
    stopping_ = true;
    loop->post([] {});
    thread_.join();
    loop->become_driver();
    loop->poll();
    loop->stop_driving();
  }

  /// Runs `f` on the loop thread and waits for it.
  template <class F>
  void on_loop(F f) {
    std::promise<void> done;
    loop->post([&] {
      f();
      done.set_value();
    });
    done.get_future().wait();
  }

  std::shared_ptr<io_loop> loop = std::make_shared<io_loop>();

private:
  std::atomic<bool> stopping_{false};
  std::thread thread_;
};

http_client_options on(const loop_runner& r, size_t max_connections = 16) {
  http_client_options opts;
  opts.loop = r.loop;
  opts.max_connections_per_endpoint = max_connections;
  return opts;
}

reply echo_target(const server_request& q) {
  reply r;
  r.body = std::string{q.target()};
  return r;
}

reply slow(std::chrono::milliseconds delay) {
  reply r;
  r.body = "late";
  r.delay = delay;
  return r;
}

/// Records, per completion, whether it ran on the loop thread.
struct thread_check {
  std::shared_ptr<std::atomic<int>> off_loop =
      std::make_shared<std::atomic<int>>(0);
  http_client::callback wrap(const loop_runner& r, http_client::callback cb) {
    return [loop = r.loop, off = off_loop, cb = std::move(cb)](auto o) {
      if (!loop->on_loop_thread()) ++*off;
      cb(std::move(o));
    };
  }
};

TEST(HttpClientLoop, SendFromAnotherThread_CompletesOnTheLoopThread) {
  loop_runner r;
  loopback_server srv{echo_target};
  http_client client{on(r)};
  collector c;
  thread_check tc;
  constexpr int n = 50;
  for (int i = 0; i < n; ++i)
    client.send(get(srv.endpoint(), "/" + std::to_string(i)),
                tc.wrap(r, c.cb()));
  ASSERT_TRUE(c.wait_for(n));
  std::vector<bool> seen(n, false);
  for (const auto& o : c.outcomes()) {
    ASSERT_TRUE(o.success()) << to_string(o.error) << ": " << o.error_detail;
    auto i = std::stoi(o.body.substr(1));
    ASSERT_FALSE(seen[i]) << "duplicate completion for /" << i;
    seen[i] = true;
  }
  EXPECT_EQ(*tc.off_loop, 0);
  EXPECT_EQ(client.stats().requests, uint64_t{n});
}

TEST(HttpClientLoop, SendOnTheLoopThread_KeepAliveAndQueueing) {
  loop_runner r;
  loopback_server srv{echo_target};
  http_client client{on(r, 2)};
  collector c;
  thread_check tc;
  constexpr int n = 100;
  // Sent from the loop thread itself (as an actor on the engine loop does):
  // two connections, the rest waits in the pool's queue.
  r.on_loop([&] {
    for (int i = 0; i < n; ++i)
      client.send(get(srv.endpoint(), "/" + std::to_string(i)),
                  tc.wrap(r, c.cb()));
  });
  ASSERT_TRUE(c.wait_for(n));
  for (const auto& o : c.outcomes())
    ASSERT_TRUE(o.success()) << to_string(o.error) << ": " << o.error_detail;
  EXPECT_EQ(*tc.off_loop, 0);
  EXPECT_LE(srv.max_open(), 2);
  auto st = client.stats();
  EXPECT_EQ(st.reused + st.connections_opened, uint64_t{n});
  EXPECT_LE(st.connections_opened, 2u);
}

TEST(HttpClientLoop, NextRequestFromTheCompletion_ReusesTheConnection) {
  loop_runner r;
  loopback_server srv{echo_target};
  http_client client{on(r, 1)};
  collector c;
  std::atomic<int> left{20};
  std::function<void(transport::outcome)> again;
  auto cb = c.cb();
  again = [&](transport::outcome o) {
    cb(std::move(o));
    if (--left > 0) client.send(get(srv.endpoint()), again);
  };
  client.send(get(srv.endpoint()), again);
  ASSERT_TRUE(c.wait_for(20));
  for (const auto& o : c.outcomes())
    ASSERT_TRUE(o.success()) << to_string(o.error) << ": " << o.error_detail;
  EXPECT_EQ(client.stats().connections_opened, 1u);
  EXPECT_EQ(client.stats().reused, 19u);
}

TEST(HttpClientLoop, DeadlineAndQueueTimeout) {
  loop_runner r;
  loopback_server srv{[](const server_request&) { return slow(3s); }};
  http_client client{on(r, 1)};
  collector c;
  client.send(get(srv.endpoint(), "/", 100ms), c.cb());
  client.send(get(srv.endpoint(), "/", 100ms), c.cb()); // waits for a slot
  ASSERT_TRUE(c.wait_for(2));
  for (const auto& o : c.outcomes())
    EXPECT_EQ(o.error, failure::timeout) << o.error_detail;
}

TEST(HttpClientLoop, Destructor_OtherThreadWhileTheLoopRuns_AllResetOnce) {
  loop_runner r;
  loopback_server srv{[](const server_request&) { return slow(5s); }};
  collector c;
  auto client = std::make_unique<http_client>(on(r, 1));
  for (int i = 0; i < 3; ++i)
    client->send(get(srv.endpoint(), "/", 30s), c.cb());
  ASSERT_TRUE(eventually([&] { return srv.requests() == 1; }));
  auto t0 = std::chrono::steady_clock::now();
  client.reset();
  EXPECT_LT(elapsed_since(t0), 2s);
  ASSERT_EQ(c.count(), 3u); // before the destructor returned
  for (const auto& o : c.outcomes()) {
    EXPECT_EQ(o.error, failure::reset);
    EXPECT_EQ(o.error_detail, "client shut down");
  }
}

TEST(HttpClientLoop, Destructor_OnTheLoopThread_CompletesAtOnce) {
  loop_runner r;
  loopback_server srv{[](const server_request&) { return slow(5s); }};
  collector c;
  auto client = std::make_unique<http_client>(on(r, 1));
  for (int i = 0; i < 3; ++i)
    client->send(get(srv.endpoint(), "/", 30s), c.cb());
  ASSERT_TRUE(eventually([&] { return srv.requests() == 1; }));
  size_t seen_after_reset = 0;
  r.on_loop([&] {
    client.reset(); // must neither wait for nor run the loop
    seen_after_reset = c.count();
  });
  EXPECT_EQ(seen_after_reset, 3u);
  for (const auto& o : c.outcomes())
    EXPECT_EQ(o.error_detail, "client shut down");
  // The aborted socket operations finish on the loop afterwards: no second
  // callback.
  std::this_thread::sleep_for(50ms);
  EXPECT_EQ(c.count(), 3u);
}

TEST(HttpClientLoop, Destructor_NobodyDrivesTheLoop_ResetsAndReturns) {
  loop_runner r;
  loopback_server srv{[](const server_request&) { return slow(5s); }};
  collector c;
  auto client = std::make_unique<http_client>(on(r));
  client->send(get(srv.endpoint(), "/", 30s), c.cb());
  ASSERT_TRUE(eventually([&] { return srv.requests() == 1; }));
  r.stop(); // like an actor system that ended before the client
  auto t0 = std::chrono::steady_clock::now();
  client.reset();
  EXPECT_LT(elapsed_since(t0), 3s);
  ASSERT_EQ(c.count(), 1u);
  EXPECT_EQ(c.outcomes().front().error_detail, "client shut down");
}

TEST(HttpClientLoop, SendAfterTheLoopRunsAgain_IdleConnectionIsReused) {
  loop_runner r;
  loopback_server srv{echo_target};
  http_client client{on(r)};
  EXPECT_TRUE(send_sync(client, get(srv.endpoint())).success());
  std::this_thread::sleep_for(50ms); // the loop sleeps with an idle socket
  EXPECT_TRUE(send_sync(client, get(srv.endpoint())).success());
  EXPECT_EQ(client.stats().connections_opened, 1u);
}

} // namespace
} // namespace georoute::testing
