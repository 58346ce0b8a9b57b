// The emulator's network side: servers per region, socket faults, latency,
// keep-alive and the admin API, exercised over loopback with the project's
// transport::http_client (plus raw POSIX sockets where the client would hide
// what is tested). Every server binds 127.0.0.1 port 0.

#include "tests/emulator/emulator.hpp"
#include "tests/emulator/emulator_main.hpp"
#include "transport/auth.hpp"
#include "transport/http_client.hpp"
#include "transport/url.hpp"

#include <arpa/inet.h>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <future>
#include <gtest/gtest.h>
#include <memory>
#include <mutex>
#include <netinet/in.h>
#include <nlohmann/json.hpp>
#include <set>
#include <string>
#include <sys/socket.h>
#include <thread>
#include <unistd.h>
#include <variant>
#include <vector>

namespace {

using namespace georoute;
using namespace std::chrono_literals;
using emulator::region_state;
using json = nlohmann::json;
using transport::failure;
using steady = std::chrono::steady_clock;

const std::vector<std::string> three_regions{"West US", "East US",
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

json parse(const transport::outcome& o) {
  auto j = json::parse(o.body, nullptr, false);
  EXPECT_FALSE(j.is_discarded()) << o.body;
  return j;
}

uint16_t port_of(const std::string& endpoint) {
  auto u = transport::parse_url(endpoint);
  auto* p = std::get_if<transport::url>(&u);
  EXPECT_NE(p, nullptr) << endpoint;
  return p ? p->port : 0;
}

/// A raw HTTP/1.1 exchange over a POSIX socket: sends `text`, reads until
/// the server closes (or 2 s pass). Returns what arrived.
std::string raw_exchange(const std::string& endpoint, const std::string& text) {
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

// -- servers ------------------------------------------------------------------

TEST_F(EmulatorServer, Start_ThreeRegions_DistinctLoopbackPorts) {
  auto eps = emu->endpoints();
  ASSERT_EQ(eps.size(), 3u);
  std::set<std::string> distinct{emu->global_endpoint()};
  for (const auto& name : three_regions) {
    auto ep = emu->endpoint(name);
    EXPECT_EQ(eps[name], ep);
    EXPECT_EQ(ep.rfind("http://127.0.0.1:", 0), 0u) << ep;
    EXPECT_NE(ep, "http://127.0.0.1:0/");
    distinct.insert(ep);
  }
  EXPECT_EQ(distinct.size(), 4u);
  EXPECT_EQ(emu->endpoint("Mars"), "");
}

TEST_F(EmulatorServer, GlobalEndpoint_GetAccount_ListsRegionEndpoints) {
  auto o = send("GET", emu->global_endpoint(), "/");
  ASSERT_EQ(o.error, failure::none) << o.error_detail;
  ASSERT_EQ(o.status, 200) << o.body;
  auto j = parse(o);
  ASSERT_TRUE(j["readableLocations"].is_array()) << o.body;
  ASSERT_EQ(j["readableLocations"].size(), 3u) << o.body;
  for (size_t i = 0; i < 3; ++i) {
    EXPECT_EQ(j["readableLocations"][i]["name"], three_regions[i]);
    EXPECT_EQ(j["readableLocations"][i]["databaseAccountEndpoint"],
              emu->endpoint(three_regions[i]));
  }
  ASSERT_FALSE(j["writableLocations"].empty());
  EXPECT_EQ(j["writableLocations"][0]["databaseAccountEndpoint"], west());
}

TEST_F(EmulatorServer, RegionalEndpoint_SignedCreateThenRead_ReturnsDocument) {
  create_collection();
  std::vector<std::pair<std::string, std::string>> pk{
      {"x-ms-documentdb-partitionkey", R"(["p1"])"}};
  auto created = send("POST", west(), "/dbs/d/colls/c/docs",
                      R"({"id":"doc1","pk":"p1","n":42})", pk);
  ASSERT_EQ(created.status, 201) << created.error_detail << created.body;
  auto read = send("GET", west(), "/dbs/d/colls/c/docs/doc1", {}, pk);
  ASSERT_EQ(read.status, 200) << read.error_detail << read.body;
  auto j = parse(read);
  EXPECT_EQ(j["id"], "doc1");
  EXPECT_EQ(j["n"], 42);
  EXPECT_FALSE(read.etag.empty());
}

TEST_F(EmulatorServer, BadSignature_Unauthorized) {
  transport::request r;
  r.endpoint = west();
  r.target = "/";
  auto wrong = transport::parse_master_key("AAAAAAAAAAAAAAAAAAAAAA==");
  ASSERT_TRUE(wrong);
  transport::sign_request(r, *wrong, std::chrono::system_clock::now());
  std::promise<transport::outcome> p;
  client->send(r, [&p](transport::outcome o) { p.set_value(std::move(o)); });
  EXPECT_EQ(p.get_future().get().status, 401);
}

TEST_F(EmulatorServer, KeepAlive_SeveralRequests_OneAcceptedConnection) {
  auto fresh = make_client();
  for (int i = 0; i < 5; ++i) {
    auto o =
        send("GET", emu->endpoint("East US"), "/", {}, {}, 5s, fresh.get());
    ASSERT_EQ(o.status, 200) << o.error_detail;
  }
  EXPECT_EQ(emu->accepted_connections("East US"), 1u);
  EXPECT_EQ(fresh->stats().connections_opened, 1u);
}

TEST_F(EmulatorServer, ConnectionClose_Honoured_ServerClosesAfterResponse) {
  auto reply = raw_exchange(west(), "GET / HTTP/1.1\r\nHost: x\r\n"
                                    "Connection: close\r\n\r\n");
  // Unsigned, so 401, but answered with Content-Length, Date, close, and the
  // server closed the socket (recv returned 0 before the 2 s timeout).
  EXPECT_EQ(reply.rfind("HTTP/1.1 401", 0), 0u) << reply;
  EXPECT_NE(reply.find("Content-Length:"), std::string::npos) << reply;
  EXPECT_NE(reply.find("Date:"), std::string::npos) << reply;
  EXPECT_NE(reply.find("Connection: close"), std::string::npos) << reply;
}

TEST_F(EmulatorServer, MalformedRequest_Answered400AndClosed) {
  auto reply = raw_exchange(west(), "NOT HTTP AT ALL\r\n\r\n");
  EXPECT_EQ(reply.rfind("HTTP/1.1 400", 0), 0u) << reply;
}

// -- region states ------------------------------------------------------------

TEST_F(EmulatorServer, OfflineRefuse_ConnectRefused_OnlineAgainSamePort) {
  auto ep = emu->endpoint("East US");
  ASSERT_EQ(send("GET", ep, "/").status, 200); // a kept-alive connection
  ASSERT_TRUE(emu->set_region_state("East US", region_state::offline_refuse));
  EXPECT_EQ(emu->get_region_state("East US"), region_state::offline_refuse);
  auto refused = send("GET", ep, "/");
  EXPECT_EQ(refused.error, failure::refused) << refused.error_detail;
  auto fresh = make_client();
  EXPECT_EQ(send("GET", ep, "/", {}, {}, 5s, fresh.get()).error,
            failure::refused);

  ASSERT_TRUE(emu->set_region_state("East US", region_state::online));
  EXPECT_EQ(emu->endpoint("East US"), ep);
  auto back = send("GET", ep, "/");
  EXPECT_EQ(back.error, failure::none) << back.error_detail;
  EXPECT_EQ(back.status, 200);
}

TEST_F(EmulatorServer, OfflineReset_ConnectionReset) {
  ASSERT_TRUE(emu->set_region_state("West US", region_state::offline_reset));
  auto before = emu->accepted_connections("West US");
  auto o = send("GET", west(), "/");
  EXPECT_EQ(o.error, failure::reset) << o.error_detail;
  EXPECT_EQ(o.status, 0);
  EXPECT_GT(emu->accepted_connections("West US"), before);
  ASSERT_TRUE(emu->set_region_state("West US", region_state::online));
  EXPECT_EQ(send("GET", west(), "/").status, 200);
}

TEST_F(EmulatorServer, Hang_ClientTimesOut_OnlineAgainAnswers) {
  ASSERT_TRUE(emu->set_region_state("North Europe", region_state::hang));
  auto ep = emu->endpoint("North Europe");
  auto t0 = steady::now();
  auto o = send("GET", ep, "/", {}, {}, 300ms);
  auto elapsed = steady::now() - t0;
  EXPECT_EQ(o.error, failure::timeout) << o.error_detail;
  EXPECT_GE(elapsed, 250ms);
  ASSERT_TRUE(emu->set_region_state("North Europe", region_state::online));
  EXPECT_EQ(send("GET", ep, "/").status, 200);
}

TEST_F(EmulatorServer, Latency_ResponseTakesAtLeastTheLatency) {
  auto ep = emu->endpoint("North Europe");
  ASSERT_EQ(send("GET", ep, "/").status, 200); // connect outside the timing
  ASSERT_TRUE(emu->set_latency("North Europe", 200ms));
  EXPECT_EQ(emu->get_latency("North Europe"), 200ms);
  auto t0 = steady::now();
  auto o = send("GET", ep, "/");
  auto elapsed = steady::now() - t0;
  EXPECT_EQ(o.status, 200) << o.error_detail;
  EXPECT_GE(elapsed, 190ms);
}

TEST_F(EmulatorServer, UnknownRegion_StateAndLatency_Problem) {
  auto s = emu->set_region_state("Mars", region_state::hang);
  ASSERT_FALSE(s);
  EXPECT_NE(s.error().what.find("Mars"), std::string::npos);
  EXPECT_FALSE(emu->set_latency("Mars", 5ms));
  EXPECT_FALSE(emu->set_latency("West US", -5ms));
}

TEST(EmulatorStart, BadOptions_Problem) {
  emulator::emulator_options o;
  o.region_ports = {0};
  auto r = emulator::emulator::start(o);
  ASSERT_FALSE(r);
  EXPECT_NE(r.error().what.find("region_ports"), std::string::npos);
  o.region_ports.clear();
  o.engine.regions = {"A", "A"};
  EXPECT_FALSE(emulator::emulator::start(o));
}

TEST(EmulatorStart, PortInUse_ProblemNamesPort) {
  auto first = emulator::emulator::start({});
  ASSERT_TRUE(first);
  auto port = port_of((*first)->endpoint("West US"));
  emulator::emulator_options o;
  o.region_ports = {port, 0, 0};
  auto second = emulator::emulator::start(o);
  ASSERT_FALSE(second);
  EXPECT_NE(second.error().what.find(std::to_string(port)), std::string::npos)
      << second.error().what;
}

TEST_F(EmulatorServer, Destroy_WithHungAndDelayedRequests_ClosesThem) {
  ASSERT_TRUE(emu->set_region_state("West US", region_state::hang));
  ASSERT_TRUE(emu->set_latency("East US", 30s));
  auto sent = [&](const std::string& region) {
    auto p = std::make_shared<std::promise<transport::outcome>>();
    transport::request r;
    r.endpoint = emu->endpoint(region);
    r.timeout = 30s;
    transport::sign_request(r, *key, std::chrono::system_clock::now());
    client->send(r, [p](transport::outcome o) { p->set_value(std::move(o)); });
    return p->get_future();
  };
  auto hung = sent("West US");
  auto delayed = sent("East US");
  // Both requests have reached the server once both connections exist.
  for (int i = 0; i < 200 && (emu->accepted_connections("West US") == 0 ||
                              emu->accepted_connections("East US") == 0);
       ++i)
    std::this_thread::sleep_for(5ms);
  std::this_thread::sleep_for(50ms);
  emu.reset();
  // Closed by the shutdown, long before the 30 s client deadline.
  ASSERT_EQ(hung.wait_for(10s), std::future_status::ready);
  ASSERT_EQ(delayed.wait_for(10s), std::future_status::ready);
  auto h = hung.get();
  auto d = delayed.get();
  EXPECT_NE(h.error, failure::none);
  EXPECT_NE(h.error, failure::timeout) << h.error_detail;
  EXPECT_NE(d.error, failure::none);
  EXPECT_NE(d.error, failure::timeout) << d.error_detail;
}

TEST(EmulatorThreads, TwoIoThreads_ConcurrentRequestsAndStateFlips) {
  emulator::emulator_options o;
  o.io_threads = 2;
  auto started = emulator::emulator::start(o);
  ASSERT_TRUE(started) << started.error().what;
  auto& emu = **started;
  auto key = transport::parse_master_key(emu.key());
  ASSERT_TRUE(key);
  // Declared before the client: its destructor may still run callbacks.
  std::atomic<int> ok{0};
  std::atomic<int> failed{0};
  std::atomic<int> pending{0};
  std::mutex mtx;
  std::condition_variable cv;
  transport::http_client_options co;
  co.max_connections_per_endpoint = 8;
  co.io_threads = 2;
  transport::http_client client{co};
  auto fire = [&](const std::string& ep) {
    transport::request r;
    r.endpoint = ep;
    r.timeout = 2s;
    transport::sign_request(r, *key, std::chrono::system_clock::now());
    ++pending;
    client.send(r, [&](transport::outcome out) {
      (out.status == 200 ? ok : failed)++;
      std::lock_guard<std::mutex> guard{mtx};
      if (--pending == 0) cv.notify_all();
    });
  };
  for (int round = 0; round < 20; ++round) {
    for (int i = 0; i < 8; ++i) {
      fire(emu.endpoint("West US"));
      fire(emu.endpoint("East US"));
    }
    auto s =
        round % 2 == 0 ? region_state::offline_refuse : region_state::online;
    ASSERT_TRUE(emu.set_region_state("East US", s));
    ASSERT_TRUE(emu.set_region_state("North Europe", s));
  }
  {
    std::unique_lock<std::mutex> guard{mtx};
    ASSERT_TRUE(cv.wait_for(guard, 30s, [&] { return pending == 0; }));
  }
  EXPECT_EQ(ok + failed, 20 * 16);
  EXPECT_GE(ok, 20 * 8); // every West US request succeeds
  ASSERT_EQ(emu.get_region_state("East US"), region_state::online);
  transport::request r;
  r.endpoint = emu.endpoint("East US");
  transport::sign_request(r, *key, std::chrono::system_clock::now());
  std::promise<transport::outcome> p;
  client.send(r, [&p](transport::outcome out) { p.set_value(std::move(out)); });
  EXPECT_EQ(p.get_future().get().status, 200);
}

// -- admin API
// -----------------------------------------------------------------

TEST_F(EmulatorServer, Admin_State_ListsRegions) {
  auto o = admin("GET", "state");
  ASSERT_EQ(o.status, 200) << o.error_detail << o.body;
  auto j = parse(o);
  ASSERT_EQ(j["regions"].size(), 3u) << o.body;
  EXPECT_EQ(j["regions"][2]["name"], "North Europe");
  EXPECT_EQ(j["regions"][2]["endpoint"], emu->endpoint("North Europe"));
  EXPECT_EQ(j["regions"][2]["state"], "online");
  EXPECT_EQ(j["regions"][2]["latency_ms"], 0);
  EXPECT_EQ(j["write_regions"][0], "West US");
  EXPECT_EQ(j["multi_write"], false);
  EXPECT_EQ(j["replication_lag_ms"], 0);
}

TEST_F(EmulatorServer, Admin_WriteRegions_AccountShowsNewOrder) {
  auto o = admin("POST", "write-regions",
                 R"({"order":["East US","West US","North Europe"]})");
  ASSERT_EQ(o.status, 200) << o.body;
  auto account = parse(send("GET", emu->global_endpoint(), "/"));
  ASSERT_FALSE(account["writableLocations"].empty());
  EXPECT_EQ(account["writableLocations"][0]["name"], "East US");
  EXPECT_EQ(account["writableLocations"][0]["databaseAccountEndpoint"],
            emu->endpoint("East US"));
  EXPECT_EQ(parse(admin("GET", "state"))["write_regions"][0], "East US");

  auto unknown = admin("POST", "write-regions", R"({"order":["Mars"]})");
  EXPECT_EQ(unknown.status, 400);
  EXPECT_NE(parse(unknown)["error"].get<std::string>().find("order"),
            std::string::npos);
}

TEST_F(EmulatorServer, Admin_RegionStateAndLatency_UrlEncodedName) {
  auto o = admin("POST", "regions/North%20Europe/latency", R"({"ms":7})");
  ASSERT_EQ(o.status, 200) << o.body;
  EXPECT_EQ(emu->get_latency("North Europe"), 7ms);
  o = admin("POST", "regions/East%20US/state", R"({"state":"offline_refuse"})");
  ASSERT_EQ(o.status, 200) << o.body;
  EXPECT_EQ(send("GET", emu->endpoint("East US"), "/").error, failure::refused);
  auto state = parse(admin("GET", "state"));
  EXPECT_EQ(state["regions"][1]["state"], "offline_refuse");
  EXPECT_EQ(state["regions"][2]["latency_ms"], 7);
  o = admin("POST", "regions/East%20US/state", R"({"state":"online"})");
  ASSERT_EQ(o.status, 200) << o.body;
  EXPECT_EQ(send("GET", emu->endpoint("East US"), "/").status, 200);
}

TEST_F(EmulatorServer, Admin_BadRequests_400NamingTheField) {
  auto error_of = [&](const transport::outcome& o) {
    EXPECT_EQ(o.status, 400) << o.body;
    return parse(o).value("error", std::string{});
  };
  EXPECT_NE(
      error_of(admin("POST", "regions/Mars/state", R"({"state":"online"})"))
          .find("Mars"),
      std::string::npos);
  EXPECT_NE(error_of(admin("POST", "regions/West%20US/state",
                           R"({"state":"sleepy"})"))
                .find("state"),
            std::string::npos);
  EXPECT_NE(
      error_of(admin("POST", "regions/West%20US/latency", R"({"ms":"fast"})"))
          .find("ms"),
      std::string::npos);
  EXPECT_NE(error_of(admin("POST", "multi-write", "{not json")).find("body"),
            std::string::npos);
  EXPECT_NE(
      error_of(admin("POST", "faults", R"({"status":42})")).find("status"),
      std::string::npos);
  EXPECT_NE(
      error_of(admin("POST", "faults", R"({"colour":"red"})")).find("colour"),
      std::string::npos);
  EXPECT_EQ(admin("GET", "nothing-here").status, 404);
  EXPECT_EQ(admin("GET", "faults").status, 405);
}

TEST_F(EmulatorServer, Admin_MultiWriteAndReplicationLag_ShownInState) {
  ASSERT_EQ(admin("POST", "multi-write", R"({"enabled":true})").status, 200);
  ASSERT_EQ(admin("POST", "replication-lag", R"({"ms":250})").status, 200);
  auto state = parse(admin("GET", "state"));
  EXPECT_EQ(state["multi_write"], true);
  EXPECT_EQ(state["replication_lag_ms"], 250);
  auto account = parse(send("GET", emu->global_endpoint(), "/"));
  EXPECT_EQ(account["writableLocations"].size(), 3u);
}

TEST_F(EmulatorServer, Admin_Fault_InjectedThenDeleted) {
  auto added = admin("POST", "faults",
                     R"({"region":"West US","method":"GET","status":503,)"
                     R"("substatus":21008,"retry_after_ms":10})");
  ASSERT_EQ(added.status, 200) << added.body;
  auto id = parse(added)["id"].get<uint64_t>();
  auto failed = send("GET", west(), "/");
  EXPECT_EQ(failed.status, 503) << failed.body;
  EXPECT_EQ(failed.substatus, 21008);
  EXPECT_EQ(failed.retry_after_ms, 10);
  EXPECT_EQ(send("GET", emu->endpoint("East US"), "/").status, 200);

  ASSERT_EQ(admin("DELETE", "faults/" + std::to_string(id)).status, 200);
  EXPECT_EQ(send("GET", west(), "/").status, 200);

  ASSERT_EQ(admin("POST", "faults", R"({"status":429,"count":1})").status, 200);
  ASSERT_EQ(admin("DELETE", "faults").status, 200);
  EXPECT_EQ(send("GET", west(), "/").status, 200);
}

TEST_F(EmulatorServer, Admin_Split_ChildrenInPkranges) {
  create_collection();
  auto o = admin("POST", "split", R"({"db":"d","coll":"c","range":"0"})");
  ASSERT_EQ(o.status, 200) << o.body;
  auto children = parse(o)["children"];
  ASSERT_EQ(children.size(), 2u) << o.body;
  auto ranges = send("GET", west(), "/dbs/d/colls/c/pkranges");
  ASSERT_EQ(ranges.status, 200) << ranges.body;
  std::set<std::string> ids;
  auto listed = parse(ranges); // a named value: range-for over a temporary's
                               // member would dangle
  for (const auto& r : listed["PartitionKeyRanges"])
    ids.insert(r["id"].get<std::string>());
  for (const auto& c : children)
    EXPECT_EQ(ids.count(c.get<std::string>()), 1u) << ranges.body;

  auto bad = admin("POST", "split", R"({"db":"d","coll":"nope","range":"0"})");
  EXPECT_EQ(bad.status, 400) << bad.body;
}

TEST_F(EmulatorServer, Admin_Counters_CountPerRegionAndStatus_Reset) {
  ASSERT_EQ(admin("POST", "counters/reset").status, 200);
  ASSERT_EQ(send("GET", west(), "/").status, 200);
  ASSERT_EQ(send("GET", west(), "/").status, 200);
  ASSERT_EQ(send("GET", west(), "/dbs/none").status, 404);
  auto counters = parse(admin("GET", "counters"));
  EXPECT_EQ(counters["West US"]["200"], 2) << counters.dump();
  EXPECT_EQ(counters["West US"]["404"], 1) << counters.dump();
  ASSERT_EQ(admin("POST", "counters/reset").status, 200);
  counters = parse(admin("GET", "counters"));
  EXPECT_FALSE(counters.contains("West US") &&
               counters["West US"].value("200", 0) > 0)
      << counters.dump();
}

TEST_F(EmulatorServer, Admin_RemoveRestore_AccountListsFollow) {
  ASSERT_EQ(admin("POST", "regions/East%20US/remove").status, 200);
  auto account = parse(send("GET", emu->global_endpoint(), "/"));
  EXPECT_EQ(account["readableLocations"].size(), 2u);
  EXPECT_EQ(parse(admin("GET", "state"))["regions"][1]["removed"], true);
  ASSERT_EQ(admin("POST", "regions/East%20US/restore").status, 200);
  account = parse(send("GET", emu->global_endpoint(), "/"));
  EXPECT_EQ(account["readableLocations"].size(), 3u);
}

TEST_F(EmulatorServer, Admin_OnRegionalEndpoint_NotServed) {
  auto o = send("GET", west(), "/_emulator/state");
  EXPECT_NE(o.status, 200);
  EXPECT_EQ(emu->get_region_state("West US"), region_state::online);
}

// -- the command's flags ------------------------------------------------------

TEST(EmulatorCommand, BadFlagsExit2_HelpExits0) {
  EXPECT_EQ(emulator::run_emulator_command({"--help"}), 0);
  EXPECT_EQ(emulator::run_emulator_command({"--bogus"}), 2);
  EXPECT_EQ(emulator::run_emulator_command({"--io-threads=0"}), 2);
  EXPECT_EQ(emulator::run_emulator_command({"--ports=1,2"}), 2);
  EXPECT_EQ(emulator::run_emulator_command({"--global-port=70000"}), 2);
  EXPECT_EQ(emulator::run_emulator_command({"--initial-ranges=x"}), 2);
  EXPECT_EQ(emulator::run_emulator_command({"--regions=A,,B"}), 2);
  EXPECT_EQ(emulator::run_emulator_command({"--account-id=localhost"}), 2);
  EXPECT_EQ(emulator::run_emulator_command({"--key=not base64!"}), 2);
}

} // namespace
