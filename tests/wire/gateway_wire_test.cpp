// The classic gateway's encoding of every attempt kind: the method, the
// path, the exact headers, the body, and whether the client may send it
// again after a dropped connection. The table is the gateway's REST shape
// of each operation; a change to it is a change of what goes on the wire.

#include "georoute/transport/gateway_wire.hpp"

#include <gtest/gtest.h>
#include <string>
#include <utility>
#include <vector>

namespace georoute::transport {
namespace {

using headers = std::vector<std::pair<std::string, std::string>>;

struct wire_case {
  const char* name;
  attempt what;
  const char* method;
  const char* target;
  headers expected;
  resend_rule resend;
};

attempt doc(attempt_kind k) {
  attempt a;
  a.kind = k;
  a.endpoint = "http://127.0.0.1:1/";
  a.resource = "dbs/d/colls/c";
  a.partition_key_json = R"(["p0"])";
  a.resend_after_drop = reads_only(k);
  return a;
}

std::vector<wire_case> cases() {
  std::vector<wire_case> v;
  const std::pair<std::string, std::string> accept{"accept",
                                                   "application/json"};
  const std::pair<std::string, std::string> pk{"x-ms-documentdb-partitionkey",
                                               R"(["p0"])"};
  {
    auto a = doc(attempt_kind::create);
    a.body = R"({"id":"a"})";
    v.push_back({"create",
                 a,
                 "POST",
                 "/dbs/d/colls/c/docs",
                 {{"content-type", "application/json"}, accept, pk},
                 resend_rule::never});
  }
  {
    auto a = doc(attempt_kind::upsert);
    v.push_back({"upsert",
                 a,
                 "POST",
                 "/dbs/d/colls/c/docs",
                 {{"content-type", "application/json"},
                  {"x-ms-documentdb-is-upsert", "True"},
                  accept,
                  pk},
                 resend_rule::never});
  }
  {
    auto a = doc(attempt_kind::read);
    a.id = "a b/?";
    a.session_token = "0:1#5";
    a.consistency_level = "Session";
    a.hub_region_only = true;
    v.push_back({"read, its id encoded, session and hub headers",
                 a,
                 "GET",
                 "/dbs/d/colls/c/docs/a%20b%2F%3F",
                 {accept,
                  pk,
                  {"x-ms-consistency-level", "Session"},
                  {"x-ms-session-token", "0:1#5"},
                  {"x-ms-cosmos-hub-region-processing-only", "True"}},
                 resend_rule::allowed});
  }
  {
    auto a = doc(attempt_kind::replace);
    a.id = "a";
    a.if_match = "\"e1\"";
    v.push_back({"replace if match",
                 a,
                 "PUT",
                 "/dbs/d/colls/c/docs/a",
                 {{"content-type", "application/json"},
                  accept,
                  pk,
                  {"if-match", "\"e1\""}},
                 resend_rule::never});
  }
  {
    auto a = doc(attempt_kind::remove);
    a.id = "a";
    v.push_back({"remove",
                 a,
                 "DELETE",
                 "/dbs/d/colls/c/docs/a",
                 {accept, pk},
                 resend_rule::never});
  }
  {
    auto a = doc(attempt_kind::query);
    a.partition_key_json.clear();
    a.range_id = "3";
    a.max_item_count = 10;
    a.continuation = "ct";
    v.push_back({"query of one range",
                 a,
                 "POST",
                 "/dbs/d/colls/c/docs",
                 {{"content-type", "application/query+json"},
                  {"x-ms-documentdb-isquery", "True"},
                  {"x-ms-max-item-count", "10"},
                  {"x-ms-continuation", "ct"},
                  {"x-ms-documentdb-partitionkeyrangeid", "3"},
                  {"x-ms-documentdb-query-enablecrosspartition", "True"},
                  accept},
                 resend_rule::allowed});
  }
  {
    auto a = doc(attempt_kind::change_feed);
    a.partition_key_json.clear();
    a.range_id = "0";
    a.start_epk = "";
    a.end_epk = "80";
    a.if_none_match = "\"12\"";
    v.push_back({"change feed of an EPK part",
                 a,
                 "GET",
                 "/dbs/d/colls/c/docs",
                 {{"a-im", "Incremental Feed"},
                  {"x-ms-documentdb-partitionkeyrangeid", "0"},
                  {"x-ms-read-key-type", "EffectivePartitionKeyRange"},
                  {"x-ms-start-epk", ""},
                  {"x-ms-end-epk", "80"},
                  accept,
                  {"if-none-match", "\"12\""}},
                 resend_rule::allowed});
  }
  {
    auto a = doc(attempt_kind::patch);
    a.id = "a";
    v.push_back({"patch",
                 a,
                 "PATCH",
                 "/dbs/d/colls/c/docs/a",
                 {{"content-type", "application/json-patch+json"}, accept, pk},
                 resend_rule::never});
  }
  {
    auto a = doc(attempt_kind::batch);
    v.push_back({"batch",
                 a,
                 "POST",
                 "/dbs/d/colls/c/docs",
                 {{"content-type", "application/json"},
                  {"x-ms-cosmos-is-batch-request", "True"},
                  {"x-ms-cosmos-batch-atomic", "True"},
                  accept,
                  pk},
                 resend_rule::never});
  }
  {
    auto a = doc(attempt_kind::bulk);
    a.partition_key_json.clear();
    a.range_id = "2";
    v.push_back({"bulk",
                 a,
                 "POST",
                 "/dbs/d/colls/c/docs",
                 {{"content-type", "application/json"},
                  {"x-ms-cosmos-is-batch-request", "True"},
                  {"x-ms-cosmos-batch-atomic", "False"},
                  {"x-ms-cosmos-batch-continue-on-error", "True"},
                  {"x-ms-documentdb-partitionkeyrangeid", "2"},
                  accept},
                 resend_rule::never});
  }
  {
    attempt a;
    a.kind = attempt_kind::account_read;
    a.resend_after_drop = true;
    v.push_back(
        {"account read", a, "GET", "/", {accept}, resend_rule::allowed});
  }
  {
    attempt a;
    a.kind = attempt_kind::resource_read;
    a.resource = "/dbs/d/colls/c";
    a.resend_after_drop = true;
    v.push_back({"collection read",
                 a,
                 "GET",
                 "/dbs/d/colls/c",
                 {},
                 resend_rule::allowed});
  }
  {
    attempt a;
    a.kind = attempt_kind::pkranges_read;
    a.resource = "/dbs/wRUaAA==/colls/wRUaAK6VyWc=";
    a.rid_based = true;
    a.if_none_match = "\"7\"";
    a.resend_after_drop = true;
    v.push_back({"pkranges page",
                 a,
                 "GET",
                 "/dbs/wRUaAA==/colls/wRUaAK6VyWc=/pkranges",
                 {{"a-im", "Incremental Feed"},
                  {"x-ms-max-item-count", "-1"},
                  {"if-none-match", "\"7\""}},
                 resend_rule::allowed});
  }
  {
    attempt a;
    a.kind = attempt_kind::query_plan;
    a.resource = "dbs/d/colls/c";
    a.partition_key_json = R"(["p0"])";
    a.resend_after_drop = true;
    v.push_back(
        {"query plan",
         a,
         "POST",
         "/dbs/d/colls/c/docs",
         {{"content-type", "application/query+json"},
          {"x-ms-cosmos-is-query-plan-request", "True"},
          {"x-ms-cosmos-query-version", "1.0"},
          {"x-ms-cosmos-supported-query-features", supported_query_features},
          {"x-ms-documentdb-query-enablecrosspartition", "True"},
          pk},
         resend_rule::allowed});
  }
  {
    attempt a;
    a.kind = attempt_kind::raw;
    a.resource = "/dbs/d/colls/c?x=1";
    a.raw.method = "DELETE";
    a.raw.headers = {{"x-custom", "1"}};
    v.push_back({"raw, its query string kept",
                 a,
                 "DELETE",
                 "/dbs/d/colls/c?x=1",
                 {{"x-custom", "1"}},
                 resend_rule::never});
  }
  return v;
}

TEST(GatewayWire, EveryKind_MethodTargetHeadersAndResendRule) {
  for (auto& c : cases()) {
    SCOPED_TRACE(c.name);
    auto body = c.what.body;
    auto r = to_gateway_request(attempt{c.what});
    EXPECT_EQ(r.method, c.method);
    EXPECT_EQ(r.target, c.target);
    EXPECT_EQ(r.headers, c.expected);
    EXPECT_EQ(r.resend, c.resend);
    EXPECT_EQ(r.body, body);
    EXPECT_EQ(r.endpoint, c.what.endpoint);
    EXPECT_EQ(r.rid_based, c.what.rid_based);
  }
}

TEST(GatewayWire, TheAttemptDecidesResending_NotTheMethod) {
  // A query is a POST and reads; a create is a POST and writes. The bit
  // says which, whatever the method.
  auto query = doc(attempt_kind::query);
  query.resend_after_drop = false; // a planner may refuse it
  EXPECT_FALSE(resend_after_close(to_gateway_request(attempt{query}),
                                  send_progress::maybe_sent));
  auto create = doc(attempt_kind::create);
  create.resend_after_drop = true;
  EXPECT_TRUE(resend_after_close(to_gateway_request(attempt{create}),
                                 send_progress::maybe_sent));
  // What provably never left is always sent again.
  create.resend_after_drop = false;
  EXPECT_TRUE(resend_after_close(to_gateway_request(attempt{create}),
                                 send_progress::unsent));
}

TEST(GatewayWire, HandWrittenRequests_KeepTheMethodRule) {
  request get;
  get.method = "GET";
  EXPECT_TRUE(resend_after_close(get, send_progress::maybe_sent));
  request put;
  put.method = "PUT";
  EXPECT_FALSE(resend_after_close(put, send_progress::maybe_sent));
}

TEST(GatewayWire, TimeoutAndEndpointCarryOver) {
  auto a = doc(attempt_kind::read);
  a.id = "x";
  a.timeout = std::chrono::milliseconds{1500};
  auto r = to_gateway_request(std::move(a));
  EXPECT_EQ(r.timeout, std::chrono::milliseconds{1500});
  EXPECT_EQ(r.endpoint, "http://127.0.0.1:1/");
}

TEST(Attempt, ReadsOnly_AndDescribe) {
  EXPECT_TRUE(reads_only(attempt_kind::query_plan));
  EXPECT_TRUE(reads_only(attempt_kind::change_feed));
  EXPECT_FALSE(reads_only(attempt_kind::patch));
  EXPECT_FALSE(reads_only(attempt_kind::raw));
  auto a = doc(attempt_kind::read);
  a.id = "x";
  EXPECT_EQ(describe(a), "read of dbs/d/colls/c/docs/x");
  attempt plan;
  plan.kind = attempt_kind::query_plan;
  plan.resource = "dbs/d/colls/c";
  EXPECT_EQ(describe(plan), "query plan of dbs/d/colls/c");
}

} // namespace
} // namespace georoute::transport
