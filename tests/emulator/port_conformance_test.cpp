// One suite for every port: the same attempts, in the same situations, must
// come back as the same outcomes, whatever carries them. A port is what the
// engine's actors send through (transport/port.hpp); the cases are the
// contract the actors rely on: each attempt kind's status, the errors a
// gateway answers, and what a port says when a region refuses, drops the
// connection after the request went out, or never answers, and when the
// attempt itself cannot be sent.
//
// Ports under test:
// - "gateway_threads": the classic gateway's port over the HTTP/1.1 client
//   with an io thread of its own, to the emulator's servers on 127.0.0.1;
// - "gateway_loop": the same port on an io_loop driven by a thread of the
//   test (the engine loop's way of running the client);
// - "in_process": the test fake of the benches, without sockets: it answers
//   from the emulator's engine in the caller's thread and reports the
//   region's connection state as the contract says a port must.
// The binary protocol's port joins the list when it lands.

#include "georoute/transport/auth.hpp"
#include "georoute/transport/gateway_wire.hpp"
#include "georoute/transport/http_client.hpp"
#include "georoute/transport/io_loop.hpp"
#include "georoute/transport/port.hpp"
#include "georoute/transport/request_checks.hpp"
#include "georoute/transport/url.hpp"
#include "tests/emulator/emulator.hpp"
#include "tests/emulator/http_types.hpp"

#include <atomic>
#include <chrono>
#include <future>
#include <gtest/gtest.h>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <thread>

namespace georoute::emulator_testing {
namespace {

using namespace std::chrono_literals;
using emulator::region_state;
using json = nlohmann::json;
using transport::attempt;
using transport::attempt_kind;
using transport::failure;

// The test fake: the emulator's engine, in process. What the servers do to
// a connection (refuse, reset after the read, hold) it reports without
// one, as the outcome a port owes for it.
class in_process_port : public transport::port {
public:
  explicit in_process_port(emulator::emulator& emu) : emu_(emu) {
    auto key = transport::parse_master_key(emu.key());
    if (key) key_ = std::make_unique<transport::master_key>(std::move(*key));
  }

  void send(attempt a, completion done) override {
    transport::outcome o;
    o.endpoint = a.endpoint;
    auto region = region_of(a.endpoint);
    auto req = transport::to_gateway_request(std::move(a));
    if (!region) {
      o.error = failure::refused;
      o.error_detail = "nothing listens at " + o.endpoint;
      return done(std::move(o));
    }
    if (auto problem = transport::request_checks::request_problem(req);
        !problem.empty()) {
      o.error = failure::protocol;
      o.error_detail = "request not sent: " + problem;
      return done(std::move(o));
    }
    switch (emu_.get_region_state(*region)) {
    case region_state::offline_refuse:
      o.error = failure::refused;
      o.error_detail = "connection refused";
      return done(std::move(o));
    case region_state::offline_reset:
      o.error = failure::reset;
      o.error_detail = "connection reset";
      o.request_sent = true;
      return done(std::move(o));
    case region_state::hang:
      o.error = failure::timeout;
      o.error_detail = "no answer within the attempt's timeout";
      o.request_sent = true;
      return done(std::move(o));
    case region_state::online:
      break;
    }
    if (key_)
      transport::sign_request(req, *key_, std::chrono::system_clock::now(),
                              req.rid_based);
    auto res =
        emu_.control().handle(*region, emulator::from_client_request(req));
    done(emulator::to_outcome(res, o.endpoint));
  }

private:
  // "" for the global endpoint; nothing for an endpoint of no region.
  std::optional<std::string> region_of(const std::string& endpoint) const {
    if (endpoint == emu_.global_endpoint()) return std::string{};
    for (const auto& [name, url] : emu_.endpoints())
      if (url == endpoint) return name;
    return std::nullopt;
  }

  emulator::emulator& emu_;
  std::unique_ptr<transport::master_key> key_;
};

enum class port_under_test { gateway_threads, gateway_loop, in_process };

std::string name_of(const ::testing::TestParamInfo<port_under_test>& p) {
  switch (p.param) {
  case port_under_test::gateway_threads:
    return "gateway_threads";
  case port_under_test::gateway_loop:
    return "gateway_loop";
  case port_under_test::in_process:
    return "in_process";
  }
  return "unknown";
}

class PortConformance : public ::testing::TestWithParam<port_under_test> {
protected:
  void SetUp() override {
    emulator::emulator_options o;
    o.engine.regions = {"West US", "East US"};
    o.engine.initial_ranges = 2;
    auto started = emulator::emulator::start(o);
    ASSERT_TRUE(started) << started.error().what;
    emu = std::move(*started);
    switch (GetParam()) {
    case port_under_test::gateway_threads:
      client = std::make_shared<transport::http_client>(
          transport::http_client_options{});
      port = transport::make_gateway_port(client, emu->key());
      break;
    case port_under_test::gateway_loop: {
      loop = std::make_shared<transport::io_loop>();
      transport::http_client_options co;
      co.loop = loop;
      client = std::make_shared<transport::http_client>(co);
      port = transport::make_gateway_port(client, emu->key());
      driving = true;
      driver = std::thread{[this] {
        loop->become_driver();
        while (driving)
          loop->run_one_until(std::chrono::steady_clock::now() + 20ms);
        loop->stop_driving();
      }};
      break;
    }
    case port_under_test::in_process:
      port = std::make_shared<in_process_port>(*emu);
      break;
    }
    setup_collection();
  }

  void TearDown() override {
    port.reset();
    client.reset(); // in loop mode, its sockets close on the driver thread
    if (driver.joinable()) {
      driving = false;
      loop->post([] {});
      driver.join();
      // What the driver left queued runs here, as the engine loop does.
      loop->become_driver();
      loop->poll();
      loop->stop_driving();
    }
  }

  transport::outcome send(attempt a) {
    if (a.endpoint.empty()) a.endpoint = emu->endpoint("West US");
    std::promise<transport::outcome> p;
    auto f = p.get_future();
    port->send(std::move(a),
               [&p](transport::outcome o) { p.set_value(std::move(o)); });
    return f.get();
  }

  static attempt raw(std::string method, std::string path, std::string body) {
    attempt a;
    a.kind = attempt_kind::raw;
    a.raw.method = std::move(method);
    a.resource = std::move(path);
    a.body = std::move(body);
    if (!a.body.empty())
      a.raw.headers.emplace_back("content-type", "application/json");
    a.timeout = 5s;
    return a;
  }

  static attempt doc(attempt_kind k, const std::string& pk = "p0") {
    attempt a;
    a.kind = k;
    a.resource = "dbs/d/colls/c";
    a.partition_key_json = json::array({pk}).dump();
    a.resend_after_drop = transport::reads_only(k);
    a.timeout = 5s;
    return a;
  }

  static std::string doc_json(const std::string& id, int n = 0) {
    return json{{"id", id}, {"pk", "p0"}, {"n", n}}.dump();
  }

  void setup_collection() {
    auto db = send(raw("POST", "/dbs", R"({"id":"d"})"));
    ASSERT_EQ(db.status, 201) << db.error_detail << db.body;
    json spec{{"id", "c"},
              {"partitionKey",
               {{"paths", {"/pk"}}, {"kind", "Hash"}, {"version", 2}}}};
    auto coll = send(raw("POST", "/dbs/d/colls", spec.dump()));
    ASSERT_EQ(coll.status, 201) << coll.error_detail << coll.body;
    collection_rid = json::parse(coll.body).value("_rid", "");
    auto db_rid = json::parse(db.body).value("_rid", "");
    rid_path = "/dbs/" + db_rid + "/colls/" + collection_rid;
  }

  // Requests that reached `region`, whatever their answer.
  uint64_t arrivals(const std::string& region) {
    uint64_t n = 0;
    auto counters = emu->control().counters();
    for (const auto& [status, count] : counters[region])
      n += count;
    return n;
  }

  std::unique_ptr<emulator::emulator> emu;
  std::shared_ptr<transport::io_loop> loop;
  std::shared_ptr<transport::http_client> client;
  transport::port_ptr port;
  std::atomic<bool> driving{false};
  std::thread driver;
  std::string collection_rid;
  std::string rid_path;
};

TEST_P(PortConformance, AccountRead_AtTheGlobalEndpointAndARegion) {
  attempt a;
  a.kind = attempt_kind::account_read;
  a.endpoint = emu->global_endpoint();
  a.resend_after_drop = true;
  auto global = send(a);
  ASSERT_EQ(global.status, 200) << global.error_detail;
  EXPECT_TRUE(json::parse(global.body).contains("writableLocations"));
  a.endpoint = emu->endpoint("East US");
  auto regional = send(a);
  EXPECT_EQ(regional.status, 200) << regional.error_detail;
  EXPECT_EQ(regional.endpoint, emu->endpoint("East US"));
}

TEST_P(PortConformance, PointOperations_EachKindAndItsStatus) {
  auto create = doc(attempt_kind::create);
  create.body = doc_json("a");
  auto created = send(create);
  ASSERT_EQ(created.status, 201) << created.error_detail << created.body;
  EXPECT_FALSE(created.etag.empty());
  EXPECT_FALSE(created.session_token.empty());
  EXPECT_GT(created.request_charge, 0);

  auto read = doc(attempt_kind::read);
  read.id = "a";
  read.session_token = created.session_token;
  auto got = send(read);
  ASSERT_EQ(got.status, 200) << got.body;
  EXPECT_EQ(json::parse(got.body)["id"], "a");

  auto replace = doc(attempt_kind::replace);
  replace.id = "a";
  replace.body = doc_json("a", 1);
  replace.if_match = got.etag;
  auto replaced = send(replace);
  EXPECT_EQ(replaced.status, 200) << replaced.body;

  auto stale = replace;
  stale.if_match = got.etag; // the etag moved with the replace
  EXPECT_EQ(send(stale).status, 412);

  auto upsert = doc(attempt_kind::upsert);
  upsert.body = doc_json("b", 2);
  EXPECT_EQ(send(upsert).status, 201);
  upsert.body = doc_json("b", 3);
  EXPECT_EQ(send(upsert).status, 200);

  auto patch = doc(attempt_kind::patch);
  patch.id = "a";
  patch.body = R"({"operations":[{"op":"incr","path":"/n","value":5}]})";
  auto patched = send(patch);
  ASSERT_EQ(patched.status, 200) << patched.body;
  EXPECT_EQ(json::parse(patched.body)["n"], 6);

  auto remove = doc(attempt_kind::remove);
  remove.id = "a";
  EXPECT_EQ(send(remove).status, 204);
  EXPECT_EQ(send(read).status, 404);
  EXPECT_EQ(send(create).status, 201); // the id is free again
  EXPECT_EQ(send(create).status, 409);
}

TEST_P(PortConformance, QueryAndChangeFeed_PagesAndTheFeedsEnd) {
  for (int i = 0; i < 3; ++i) {
    auto c = doc(attempt_kind::create);
    c.body = doc_json("q" + std::to_string(i), i);
    ASSERT_EQ(send(c).status, 201);
  }
  auto q = doc(attempt_kind::query);
  q.body = R"({"query":"SELECT * FROM c WHERE c.n >= @n",)"
           R"("parameters":[{"name":"@n","value":1}]})";
  q.max_item_count = 1;
  auto page = send(q);
  ASSERT_EQ(page.status, 200) << page.body;
  EXPECT_EQ(json::parse(page.body)["Documents"].size(), 1u);
  ASSERT_FALSE(page.continuation.empty());
  q.continuation = page.continuation;
  auto next = send(q);
  ASSERT_EQ(next.status, 200) << next.body;
  EXPECT_EQ(json::parse(next.body)["Documents"].size(), 1u);

  auto feed = doc(attempt_kind::change_feed);
  auto changes = send(feed);
  ASSERT_EQ(changes.status, 200) << changes.body;
  EXPECT_EQ(json::parse(changes.body)["Documents"].size(), 3u);
  ASSERT_FALSE(changes.etag.empty());
  feed.if_none_match = changes.etag;
  EXPECT_EQ(send(feed).status, 304);
}

TEST_P(PortConformance, BatchAndBulk_AnswerTheirOperationsResults) {
  auto batch = doc(attempt_kind::batch);
  batch.body = json::array({{{"operationType", "Create"},
                             {"resourceBody", json::parse(doc_json("x1"))}},
                            {{"operationType", "Read"}, {"id", "x1"}}})
                   .dump();
  auto b = send(batch);
  ASSERT_EQ(b.status, 200) << b.body;
  auto results = json::parse(b.body);
  ASSERT_EQ(results.size(), 2u);
  EXPECT_EQ(results[0]["statusCode"], 201);

  auto pkranges = attempt{};
  pkranges.kind = attempt_kind::pkranges_read;
  pkranges.resource = rid_path;
  pkranges.rid_based = true;
  pkranges.resend_after_drop = true;
  auto ranges = send(pkranges);
  ASSERT_EQ(ranges.status, 200) << ranges.body;
  auto range_id = json::parse(ranges.body)["PartitionKeyRanges"][0]["id"]
                      .get<std::string>();

  auto bulk = doc(attempt_kind::bulk);
  bulk.partition_key_json.clear();
  bulk.range_id = range_id;
  bulk.body = json::array({{{"operationType", "Read"},
                            {"id", "none"},
                            {"partitionKey", R"(["p0"])"}}})
                  .dump();
  auto k = send(bulk);
  // Every operation answered, in one array (its own status inside).
  ASSERT_TRUE(k.status == 200 || k.status == 207) << k.status << k.body;
  EXPECT_TRUE(json::parse(k.body).is_array()) << k.body;
}

TEST_P(PortConformance, Metadata_CollectionRangesAndQueryPlan) {
  attempt by_name;
  by_name.kind = attempt_kind::resource_read;
  by_name.resource = "/dbs/d/colls/c";
  auto coll = send(by_name);
  ASSERT_EQ(coll.status, 200) << coll.body;
  EXPECT_EQ(json::parse(coll.body)["_rid"], collection_rid);

  attempt by_rid = by_name;
  by_rid.resource = rid_path;
  by_rid.rid_based = true;
  EXPECT_EQ(send(by_rid).status, 200);

  attempt ranges;
  ranges.kind = attempt_kind::pkranges_read;
  ranges.resource = rid_path;
  ranges.rid_based = true;
  auto first = send(ranges);
  ASSERT_EQ(first.status, 200) << first.body;
  EXPECT_EQ(json::parse(first.body)["PartitionKeyRanges"].size(), 2u);
  ranges.if_none_match = first.etag;
  EXPECT_EQ(send(ranges).status, 304);

  attempt plan;
  plan.kind = attempt_kind::query_plan;
  plan.resource = "dbs/d/colls/c";
  plan.body = R"({"query":"SELECT * FROM c ORDER BY c.n","parameters":[]})";
  auto p = send(plan);
  ASSERT_EQ(p.status, 200) << p.body;
  EXPECT_TRUE(json::parse(p.body).contains("queryInfo")) << p.body;
}

TEST_P(PortConformance, RegionRefuses_NothingWasSent) {
  ASSERT_TRUE(emu->set_region_state("West US", region_state::offline_refuse));
  auto create = doc(attempt_kind::create);
  create.body = doc_json("r");
  auto o = send(create);
  EXPECT_EQ(o.error, failure::refused) << o.error_detail;
  EXPECT_FALSE(o.request_sent);
  EXPECT_EQ(o.status, 0);
  EXPECT_EQ(o.endpoint, emu->endpoint("West US"));
}

TEST_P(PortConformance, DroppedAfterTheRequestWentOut_TheWriteMayBeApplied) {
  ASSERT_TRUE(emu->set_region_state("West US", region_state::offline_reset));
  auto create = doc(attempt_kind::create);
  create.body = doc_json("w");
  auto w = send(create);
  EXPECT_EQ(w.error, failure::reset) << w.error_detail;
  EXPECT_TRUE(w.request_sent);
  auto read = doc(attempt_kind::read);
  read.id = "w";
  auto r = send(read);
  EXPECT_EQ(r.error, failure::reset) << r.error_detail;
  EXPECT_TRUE(r.request_sent);
  ASSERT_TRUE(emu->set_region_state("West US", region_state::online));
  EXPECT_EQ(send(read).status, 404); // the reset came before any write
}

TEST_P(PortConformance, RegionHangs_TheAttemptsTimeoutEndsIt) {
  ASSERT_TRUE(emu->set_region_state("West US", region_state::hang));
  auto read = doc(attempt_kind::read);
  read.id = "h";
  read.timeout = 300ms;
  auto o = send(read);
  EXPECT_EQ(o.error, failure::timeout) << o.error_detail;
  EXPECT_TRUE(o.request_sent);
  EXPECT_EQ(o.status, 0);
  ASSERT_TRUE(emu->set_region_state("West US", region_state::online));
}

TEST_P(PortConformance, BadInput_RefusedBeforeAnythingIsSent) {
  auto before = arrivals("West US");
  auto read = doc(attempt_kind::read);
  read.id = "a";
  read.session_token = "0:1#5\r\nx-injected: 1";
  auto o = send(read);
  EXPECT_EQ(o.error, failure::protocol) << o.error_detail;
  EXPECT_NE(o.error_detail.find("x-ms-session-token"), std::string::npos)
      << o.error_detail;
  EXPECT_FALSE(o.request_sent);
  EXPECT_EQ(arrivals("West US"), before);
}

TEST_P(PortConformance, EndpointOfNoServer_IsRefusedOrUnparsable) {
  auto read = doc(attempt_kind::read);
  read.id = "a";
  read.endpoint = "http://127.0.0.1:1/";
  auto o = send(read);
  EXPECT_EQ(o.error, failure::refused) << o.error_detail;
  EXPECT_FALSE(o.request_sent);
}

INSTANTIATE_TEST_SUITE_P(Ports, PortConformance,
                         ::testing::Values(port_under_test::gateway_threads,
                                           port_under_test::gateway_loop,
                                           port_under_test::in_process),
                         name_of);

} // namespace
} // namespace georoute::emulator_testing
