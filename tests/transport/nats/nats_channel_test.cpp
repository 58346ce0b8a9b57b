// The NATS channel (transport/nats/channel.hpp) against a real nats-server
// child process: NKey identities over TLS, per-reporter permissions, no
// echo, and the rules that keep NATS from holding anybody up: open() and
// publish() return at once whatever the server does, buffers are bounded,
// the channel reconnects by itself, and it closes cleanly under traffic.

#include "tests/threads_named.hpp"
#include "tests/transport/nats/nats_fleet_fixture.hpp"

#include <atomic>
#include <csignal>

namespace georoute::nats_channel_test {
namespace {

using namespace std::chrono_literals;
using georoute::testing::channel_log;
using georoute::testing::eventually;
using clock_type = std::chrono::steady_clock;

class NatsChannel : public georoute::testing::nats_fleet {
protected:
  std::shared_ptr<channel_log> log_a = std::make_shared<channel_log>();
  std::shared_ptr<channel_log> log_b = std::make_shared<channel_log>();

  /// Reporters p01 (A) and p02 (B), both connected.
  void open_both(nats_channel_options a, nats_channel_options b) {
    a_ = open(std::move(a), log_a);
    b_ = open(std::move(b), log_b);
    ASSERT_TRUE(a_ && b_);
    ASSERT_TRUE(eventually([&] { return a_->connected() && b_->connected(); }))
        << "not connected";
  }
  void open_both() { open_both(options("p01"), options("p02")); }

  /// Opens A and B without waiting for a connection; how long that took.
  clock_type::duration open_both_now() {
    auto t0 = clock_type::now();
    a_ = open(options("p01"), log_a);
    b_ = open(options("p02"), log_b);
    return clock_type::now() - t0;
  }

  std::unique_ptr<nats_channel> a_, b_;
};

// The longest of `n` publish() calls on `ch`, made over `spread`.
clock_type::duration slowest_publish(nats_channel& ch, const std::string& subj,
                                     int n, std::chrono::milliseconds spread) {
  clock_type::duration worst{0};
  for (int i = 0; i < n; ++i) {
    auto t0 = clock_type::now();
    ch.publish(subj, "tick " + std::to_string(i));
    worst = std::max(worst, clock_type::now() - t0);
    std::this_thread::sleep_for(spread / n);
  }
  return worst;
}

TEST_F(NatsChannel, TwoReportersOverTls_ThePeerGetsItTheSenderDoesNot) {
  ASSERT_NO_FATAL_FAILURE(start_server());
  ASSERT_NO_FATAL_FAILURE(open_both());
  const std::string payload = R"({"v":1,"st":"down","sc":"read"})";
  ASSERT_TRUE(a_->publish(subject_of("p01"), payload));
  ASSERT_TRUE(eventually([&] { return !log_b->received().empty(); }));
  auto got = log_b->received();
  ASSERT_EQ(got.size(), 1u);
  EXPECT_EQ(got[0].subject, "georoute.h1.f1.acct.westus2.p01");
  EXPECT_EQ(got[0].payload, payload);
  EXPECT_FALSE(got[0].oversized);

  // B answers; once A has B's message, its own would have come before it
  // had the server echoed it (one connection's messages keep their order).
  ASSERT_TRUE(b_->publish(subject_of("p02"), "from b"));
  ASSERT_TRUE(eventually([&] { return !log_a->received().empty(); }));
  auto got_a = log_a->received();
  ASSERT_EQ(got_a.size(), 1u) << "A received its own message";
  EXPECT_EQ(got_a[0].payload, "from b");
  EXPECT_EQ(log_b->received().size(), 1u) << "B received its own message";

  auto ca = a_->counters();
  EXPECT_EQ(ca.published, 1u);
  EXPECT_EQ(ca.received, 1u);
  EXPECT_EQ(ca.permission_errors, 0u);
  EXPECT_EQ(b_->counters().received, 1u);
}

TEST_F(NatsChannel, PublishOnAnotherReportersSubject_RefusedAndCounted) {
  ASSERT_NO_FATAL_FAILURE(start_server());
  ASSERT_NO_FATAL_FAILURE(open_both());
  ASSERT_TRUE(a_->publish(subject_of("p02"), "forged"));
  EXPECT_TRUE(
      eventually([&] { return a_->counters().permission_errors == 1; }));
  // A's own subject still works; B, which gets A's messages in order, has
  // the allowed one only.
  ASSERT_TRUE(a_->publish(subject_of("p01"), "allowed"));
  ASSERT_TRUE(eventually([&] { return log_b->has_payload("allowed"); }));
  auto got = log_b->received();
  ASSERT_EQ(got.size(), 1u) << "the forged report was delivered";
  EXPECT_EQ(got[0].subject, subject_of("p01"));
  EXPECT_TRUE(a_->connected()) << "a refused publish costs the connection";
}

TEST_F(NatsChannel, WithoutCredentials_Refused) {
  ASSERT_NO_FATAL_FAILURE(start_server());
  auto log_c = std::make_shared<channel_log>();
  auto opts = options("");
  auto c = open(opts, log_c);
  ASSERT_TRUE(c);
  // The control: a reporter with its NKey gets in meanwhile.
  a_ = open(options("p01"), log_a);
  ASSERT_TRUE(a_);
  ASSERT_TRUE(eventually([&] { return a_->connected(); }));
  // cnats gives up on a connection the server refused at the first
  // attempt; the channel tries a new one, refused as well. cnats 3.4.1 does
  // not pass the server's reason on ("closed: No server available for
  // connection"); the server's log has it.
  ASSERT_TRUE(eventually([&] { return c->counters().reopens >= 2; }))
      << "the channel did not try again";
  EXPECT_FALSE(c->connected());
  bool closed = false;
  for (auto& [up, what] : log_c->status_log()) {
    EXPECT_FALSE(up) << what;
    closed = closed || what.rfind("closed", 0) == 0;
  }
  EXPECT_TRUE(closed) << "no 'closed' status";
  EXPECT_TRUE(eventually([&] {
    return server_->log_text().find(
               "\"v3.4.1:C:georoute/anonymous\" - authentication error") !=
           std::string::npos;
  })) << "the server did not refuse it";
  EXPECT_FALSE(c->publish(subject_of("p01"), "x"));
  EXPECT_EQ(c->counters().dropped_not_connected, 1u);
}

TEST_F(NatsChannel, ServerAbsentAtOpen_OpenReturnsAtOnceAndConnectsLater) {
  // To learn a port, which then stays free.
  ASSERT_NO_FATAL_FAILURE(start_server());
  int port = server_->port();
  server_->stop();

  auto took = open_both_now();
  ASSERT_TRUE(a_ && b_);
  EXPECT_LT(took, 500ms) << "open() waited for the server";
  EXPECT_FALSE(a_->connected());
  EXPECT_FALSE(a_->publish(subject_of("p01"), "too early"));
  EXPECT_EQ(a_->counters().dropped_not_connected, 1u);
  EXPECT_EQ(a_->counters().published, 0u);
  // The first attempt's failure is said at once (a fleet actor that waits
  // for the fleet's view at start stops waiting on it).
  ASSERT_TRUE(eventually([&] {
    for (auto& [up, what] : log_a->status_log())
      if (!up && what.rfind("not connected yet", 0) == 0) return true;
    return false;
  })) << "the first failed attempt was not said";

  std::this_thread::sleep_for(300ms); // a few failed attempts
  ASSERT_TRUE(server_->start()) << server_->error();
  ASSERT_EQ(server_->port(), port);
  ASSERT_TRUE(eventually([&] { return a_->connected() && b_->connected(); }))
      << "no connection once the server is up";
  EXPECT_TRUE(delivered(*a_, "p01", *log_b, "late but there"));
  EXPECT_FALSE(log_b->has_payload("too early")) << "kept for later";
  bool said_connected = false;
  for (auto& [up, what] : log_a->status_log())
    if (up && what.rfind("connected to tls://127.0.0.1:", 0) == 0)
      said_connected = true;
  EXPECT_TRUE(said_connected);
}

// A hung server accepts TCP connections (the kernel does) and never says
// INFO: cnats 3.4.1 gives up on such a first connection for good; the
// channel opens a new one until the server answers.
TEST_F(NatsChannel,
       ServerHungAtOpen_OpenReturnsAtOnceAndConnectsOnceItResumes) {
  ASSERT_NO_FATAL_FAILURE(start_server());
  server_->pause();
  auto took = open_both_now();
  ASSERT_TRUE(a_ && b_);
  EXPECT_LT(took, 500ms) << "open() waited for the server";
  // A connect timeout (500 ms), cnats gives up, the channel reopens.
  EXPECT_TRUE(eventually([&] { return a_->counters().reopens >= 1; }, 3000ms));
  EXPECT_FALSE(a_->connected());
  server_->resume();
  ASSERT_TRUE(eventually([&] { return a_->connected() && b_->connected(); }))
      << "no connection after SIGCONT";
  EXPECT_TRUE(delivered(*a_, "p01", *log_b, "after the resume"));
}

TEST_F(NatsChannel, ServerKilled_PublishStaysImmediateAndTheChannelReconnects) {
  ASSERT_NO_FATAL_FAILURE(start_server());
  ASSERT_NO_FATAL_FAILURE(open_both());
  // Three reports wait in A's queue when the server dies: once the channel
  // knows, its thread drops them rather than leave them to cnats for later.
  georoute::nats_channel_testing::hold_publisher(*a_, true);
  for (int i = 0; i < 3; ++i)
    ASSERT_TRUE(a_->publish(subject_of("p01"), "queued before the kill"));
  server_->kill();
  auto worst = slowest_publish(*a_, subject_of("p01"), 20, 400ms);
  EXPECT_LT(worst, 100ms);
  ASSERT_TRUE(eventually([&] { return !a_->connected(); }, 3000ms));
  auto before = a_->counters();
  EXPECT_FALSE(a_->publish(subject_of("p01"), "while down"));
  georoute::nats_channel_testing::hold_publisher(*a_, false);
  EXPECT_TRUE(eventually([&] {
    return a_->counters().dropped_not_connected >=
           before.dropped_not_connected + 1 + 3;
  })) << "queued reports were not dropped";
  EXPECT_EQ(a_->counters().published, before.published);
  EXPECT_GE(a_->counters().disconnects, 1u);

  ASSERT_TRUE(server_->start()) << server_->error();
  ASSERT_TRUE(eventually([&] { return a_->connected() && b_->connected(); }))
      << "no reconnect";
  EXPECT_GE(a_->counters().reconnects, 1u);
  EXPECT_TRUE(delivered(*a_, "p01", *log_b, "after the restart"));
  for (auto& m : log_b->received())
    EXPECT_EQ(m.payload, "after the restart") << "sent after the reconnect";
}

TEST_F(NatsChannel,
       ServerHung_PingsNoticeAndTheChannelReconnectsAfterItResumes) {
  ASSERT_NO_FATAL_FAILURE(start_server());
  ASSERT_NO_FATAL_FAILURE(open_both());
  server_->pause();
  // Pings every 200 ms, two unanswered end the connection: well within 3 s.
  auto t0 = clock_type::now();
  clock_type::duration worst{0};
  bool noticed = eventually(
      [&] {
        worst =
            std::max(worst, slowest_publish(*a_, subject_of("p01"), 1, 10ms));
        return !a_->connected();
      },
      3000ms);
  auto noticed_after = clock_type::now() - t0;
  server_->resume();
  EXPECT_TRUE(noticed) << "a hung server went unnoticed";
  EXPECT_LT(worst, 100ms) << "publish() waited on the hung server";
  EXPECT_GE(noticed_after, 200ms) << "noticed before a ping could be missed";
  ASSERT_TRUE(eventually([&] { return a_->connected() && b_->connected(); }))
      << "no reconnect after SIGCONT";
  EXPECT_GE(a_->counters().reconnects, 1u);
  EXPECT_TRUE(delivered(*a_, "p01", *log_b, "after the resume"));
}

TEST_F(NatsChannel, QueueFull_TheNewestIsDroppedAndCounted) {
  ASSERT_NO_FATAL_FAILURE(start_server());
  auto a = options("p01");
  a.publish_queue = 8;
  ASSERT_NO_FATAL_FAILURE(open_both(a, options("p02")));
  georoute::nats_channel_testing::hold_publisher(*a_, true);
  for (int i = 0; i < 8; ++i)
    EXPECT_TRUE(a_->publish(subject_of("p01"), std::to_string(i)));
  for (int i = 8; i < 13; ++i)
    EXPECT_FALSE(a_->publish(subject_of("p01"), std::to_string(i)));
  EXPECT_EQ(a_->counters().dropped_queue_full, 5u);
  EXPECT_EQ(a_->counters().published, 0u);
  georoute::nats_channel_testing::hold_publisher(*a_, false);
  ASSERT_TRUE(eventually([&] { return log_b->received().size() >= 8; }));
  std::this_thread::sleep_for(100ms); // anything more would show by now
  auto got = log_b->received();
  ASSERT_EQ(got.size(), 8u);
  for (int i = 0; i < 8; ++i)
    EXPECT_EQ(got[i].payload, std::to_string(i));
  EXPECT_EQ(a_->counters().published, 8u);
}

TEST_F(NatsChannel, OversizedInbound_FlaggedNotCopied) {
  ASSERT_NO_FATAL_FAILURE(start_server());
  auto b = options("p02");
  b.max_payload = 1024;
  ASSERT_NO_FATAL_FAILURE(open_both(options("p01"), b));
  ASSERT_TRUE(a_->publish(subject_of("p01"), std::string(1025, 'x')));
  ASSERT_TRUE(a_->publish(subject_of("p01"), std::string(1024, 'y')));
  ASSERT_TRUE(eventually([&] { return log_b->received().size() == 2; }));
  auto got = log_b->received();
  EXPECT_TRUE(got[0].oversized);
  EXPECT_TRUE(got[0].payload.empty());
  EXPECT_EQ(got[0].subject, subject_of("p01"));
  EXPECT_FALSE(got[1].oversized);
  EXPECT_EQ(got[1].payload, std::string(1024, 'y'));
  EXPECT_EQ(b_->counters().received, 2u);
  EXPECT_EQ(b_->counters().received_oversized, 1u);
}

TEST_F(NatsChannel,
       SlowHandler_InboundBeyondThePendingLimitIsDroppedAndCounted) {
  ASSERT_NO_FATAL_FAILURE(start_server());
  auto b_opts = options("p02");
  b_opts.pending_msgs = 4;
  // B's handler waits at a gate the test holds closed.
  struct gate_state {
    std::mutex gate;
    std::atomic<int> handled{0};
  };
  auto g = std::make_shared<gate_state>();
  std::unique_lock<std::mutex> closed_gate{g->gate};
  auto ch = nats_channel::open(b_opts,
                               [g](nats_inbound) {
                                 std::lock_guard<std::mutex> wait_for_the_gate{
                                     g->gate};
                                 ++g->handled;
                               },
                               {});
  ASSERT_TRUE(ch) << ch.error().what;
  b_ = std::move(*ch);
  a_ = open(options("p01"), log_a);
  ASSERT_TRUE(a_);
  ASSERT_TRUE(eventually([&] { return a_->connected() && b_->connected(); }));
  for (int i = 0; i < 40; ++i) {
    ASSERT_TRUE(a_->publish(subject_of("p01"), std::to_string(i)));
    std::this_thread::sleep_for(1ms);
  }
  ASSERT_TRUE(eventually([&] { return a_->counters().published == 40; }));
  std::this_thread::sleep_for(200ms); // all 40 reach B's client
  closed_gate.unlock();
  ASSERT_TRUE(eventually([&] {
    auto c = b_->counters();
    return c.received + c.dropped_slow_consumer == 40;
  })) << "received "
      << b_->counters().received << ", dropped "
      << b_->counters().dropped_slow_consumer;
  EXPECT_GE(b_->counters().dropped_slow_consumer, 30u);
  EXPECT_EQ(static_cast<uint64_t>(g->handled.load()), b_->counters().received);
}

TEST_F(NatsChannel, DestroyedWhileMessagesArrive_CleanAndSilentAfterwards) {
  ASSERT_NO_FATAL_FAILURE(start_server());
  // cnats' threads of a connection are made by the channel's thread and
  // carry its name too.
  auto names = georoute::test::threads_named("georoute.nats");
  ASSERT_NO_FATAL_FAILURE(open_both());
  EXPECT_GE(georoute::test::threads_named("georoute.nats"), names + 2);
  // B's handler notes a call that comes after B is gone.
  struct late_check {
    std::atomic<bool> destroyed{false};
    std::atomic<int> calls{0};
    std::atomic<int> late{0};
  };
  auto late = std::make_shared<late_check>();
  auto ch = nats_channel::open(options("p02"),
                               // Slow enough that the destructor comes
                               // while it runs.
                               [late](nats_inbound) {
                                 ++late->calls;
                                 std::this_thread::sleep_for(20ms);
                                 if (late->destroyed) ++late->late;
                               },
                               {});
  ASSERT_TRUE(ch) << ch.error().what;
  auto c = std::move(*ch);
  ASSERT_TRUE(eventually([&] { return c->connected(); }));
  // No assertion from here until the pump is joined.
  std::atomic<bool> stop{false};
  std::thread pump{[&] {
    for (int i = 0; !stop; ++i) {
      a_->publish(subject_of("p01"), std::to_string(i));
      std::this_thread::sleep_for(100us);
    }
  }};
  bool flowing = eventually([&] { return late->calls > 5; });
  auto t0 = clock_type::now();
  c.reset();
  auto took = clock_type::now() - t0;
  late->destroyed = true;
  std::this_thread::sleep_for(200ms);
  stop = true;
  pump.join();
  EXPECT_TRUE(flowing) << "messages were not arriving";
  EXPECT_EQ(late->late, 0) << "the handler ran after the destructor returned";
  EXPECT_LT(took, 2000ms);
  a_.reset();
  b_.reset();
  EXPECT_TRUE(eventually([&] {
    return georoute::test::threads_named("georoute.nats") == names;
  })) << georoute::test::threads_named("georoute.nats")
      << " threads left";
}

TEST(NatsChannelOpen, ProblemsNameTheFieldOrFile) {
  auto base = [] {
    nats_channel_options o;
    o.servers = {"nats://127.0.0.1:4222"};
    return o;
  };
  struct row {
    std::function<void(nats_channel_options&)> change;
    std::string names;
  };
  const std::vector<row> rows = {
      {[](auto& o) { o.servers.clear(); }, "servers"},
      {[](auto& o) { o.servers = {"http://x:1"}; }, "servers[0] 'http://x:1'"},
      {[](auto& o) { o.servers = {"nats://"}; }, "servers[0]"},
      {[](auto& o) {
         o.servers = {"nats://a:1", "nats://b:1,nats://c:1"};
       },
       "servers[1]"},
      {[](auto& o) { o.servers = {"tls://a:1"}; }, "needs ca_file"},
      {[](auto& o) { o.nkey_public = "UABC"; }, "both or neither"},
      {[](auto& o) { o.nkey_seed_file = "/x"; }, "both or neither"},
      {[](auto& o) {
         o.nkey_public = "UABC";
         o.nkey_seed_file = "/x";
       },
       "nkey_public: not a user public NKey"},
      {[](auto& o) { o.cert_file = "/c"; }, "cert_file and key_file"},
      {[](auto& o) {
         o.cert_file = "/c";
         o.key_file = "/k";
       },
       "cert_file: a client certificate needs TLS"},
      {[](auto& o) { o.expected_hostname = "h"; }, "expected_hostname"},
      {[](auto& o) { o.subscribe_subject = "a..b"; }, "subscribe_subject"},
      {[](auto& o) { o.subscribe_subject = "a.>.b"; }, "subscribe_subject"},
      {[](auto& o) { o.subscribe_subject = "a.b*"; }, "subscribe_subject"},
      {[](auto& o) { o.publish_queue = 0; }, "publish_queue"},
      {[](auto& o) { o.connect_timeout = 0ms; }, "connect_timeout"},
      {[](auto& o) { o.ping_interval = 0ms; }, "ping_interval"},
      {[](auto& o) { o.reconnect_wait = -1ms; }, "reconnect_wait"},
      {[](auto& o) { o.write_deadline = 0ms; }, "write_deadline"},
      {[](auto& o) { o.max_pings_out = 0; }, "max_pings_out"},
      {[](auto& o) { o.pending_msgs = 0; }, "pending_msgs"},
      {[](auto& o) { o.pending_bytes = 0; }, "pending_bytes"},
      {[](auto& o) { o.max_payload = 0; }, "max_payload"},
      {[](auto& o) { o.ca_file = "/nonexistent/ca.pem"; },
       "ca_file /nonexistent/ca.pem: cannot be read"},
  };
  EXPECT_FALSE(base().validate());
  for (const auto& r : rows) {
    auto o = base();
    r.change(o);
    auto ch = nats_channel::open(o, {}, {});
    ASSERT_FALSE(ch) << "accepted; expected a problem naming " << r.names;
    EXPECT_NE(ch.error().what.find(r.names), std::string::npos)
        << ch.error().what;
    EXPECT_EQ(ch.error().what.rfind("nats channel: ", 0), 0u)
        << ch.error().what;
  }
}

TEST(NatsChannelOpen, TheSeedFileMustHoldTheSeedOfThePublicKey) {
  georoute::testing::test_pki dir; // a temp directory that cleans up
  auto k1 = generate_user_nkey();
  auto k2 = generate_user_nkey();
  ASSERT_TRUE(k1 && k2);
  auto seed1 = dir.dir() + "/1.nk";
  ASSERT_FALSE(write_nkey_seed_file(seed1, k1->seed));
  auto empty = dir.dir() + "/empty.nk";
  std::ofstream{empty} << "no seed here\n";
  nats_channel_options o;
  o.servers = {"nats://127.0.0.1:4222"};
  o.nkey_public = k2->public_key;
  o.nkey_seed_file = seed1;
  auto ch = nats_channel::open(o, {}, {});
  ASSERT_FALSE(ch);
  EXPECT_NE(ch.error().what.find("holds the seed of another key"),
            std::string::npos)
      << ch.error().what;
  o.nkey_seed_file = empty;
  ch = nats_channel::open(o, {}, {});
  ASSERT_FALSE(ch);
  EXPECT_NE(ch.error().what.find("no seed"), std::string::npos)
      << ch.error().what;
  // And the seed itself never shows in a problem.
  EXPECT_EQ(ch.error().what.find(k1->seed), std::string::npos);
}

} // namespace
} // namespace georoute::nats_channel_test
