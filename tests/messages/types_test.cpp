// The message contract: every payload registered, errors render with context,
// payloads survive CAF's binary serializer (they can cross the network).

#include "georoute/messages/error.hpp"
#include "georoute/messages/interfaces.hpp"
#include "georoute/messages/types.hpp"

#include <caf/all.hpp>
#include <gtest/gtest.h>

namespace {

using namespace georoute;

struct test_config : caf::actor_system_config {
  test_config() {
    register_types(*this);
    set("scheduler.policy", caf::atom("testing"));
  }
};

template <class T>
T round_trip(caf::actor_system& sys, const T& x) {
  std::vector<char> buf;
  caf::binary_serializer sink{sys, buf};
  auto copy = x;
  if (auto err = sink(copy))
    ADD_FAILURE() << "serialize failed: " << sys.render(err);
  T y;
  caf::binary_deserializer source{sys, buf};
  if (auto err = source(y))
    ADD_FAILURE() << "deserialize failed: " << sys.render(err);
  return y;
}

TEST(Messages, Outcome_RoundTrip_KeepsEveryField) {
  test_config cfg;
  caf::actor_system sys{cfg};
  transport::outcome o;
  o.error = transport::failure::timeout;
  o.error_detail = "read: timed out";
  o.status = 503;
  o.substatus = 20003;
  o.session_token = "0:-1#12";
  o.retry_after_ms = 150;
  o.continuation = "c1";
  o.etag = "\"7\"";
  o.content_path = "wRUaAK6VyWc=";
  o.activity_id = "a-1";
  o.request_charge = 2.5;
  o.body = "{}";
  o.endpoint = "http://127.0.0.1:1/";
  auto r = round_trip(sys, o);
  EXPECT_EQ(r.error, o.error);
  EXPECT_EQ(r.error_detail, o.error_detail);
  EXPECT_EQ(r.status, 503);
  EXPECT_EQ(r.substatus, 20003);
  EXPECT_EQ(r.session_token, o.session_token);
  EXPECT_EQ(r.retry_after_ms, 150);
  EXPECT_EQ(r.continuation, "c1");
  EXPECT_EQ(r.etag, o.etag);
  EXPECT_EQ(r.content_path, o.content_path);
  EXPECT_EQ(r.activity_id, "a-1");
  EXPECT_DOUBLE_EQ(r.request_charge, 2.5);
  EXPECT_EQ(r.body, "{}");
  EXPECT_EQ(r.endpoint, o.endpoint);
}

TEST(Messages, Account_RoundTrip_KeepsRegionsInOrder) {
  test_config cfg;
  caf::actor_system sys{cfg};
  database_account a;
  a.id = "acct";
  a.writable = {{"West US", "http://127.0.0.1:1/"}};
  a.readable = {{"West US", "http://127.0.0.1:1/"},
                {"East US", "http://127.0.0.1:2/"}};
  a.enable_multiple_write_locations = true;
  auto r = round_trip(sys, a);
  ASSERT_EQ(r.readable.size(), 2u);
  EXPECT_EQ(r.readable[1].name, "East US");
  EXPECT_EQ(r.writable[0].endpoint, "http://127.0.0.1:1/");
  EXPECT_TRUE(r.enable_multiple_write_locations);
}

TEST(Messages, MetadataRequest_RoundTrip_KeepsKindAndAttempt) {
  test_config cfg;
  caf::actor_system sys{cfg};
  metadata_request m;
  m.what.kind = transport::attempt_kind::raw;
  m.what.resource = "/dbs/d/colls/c/docs";
  m.what.raw.method = "POST";
  m.what.raw.headers = {{"x-ms-cosmos-is-query-plan-request", "True"}};
  m.what.partition_key_json = R"(["p0"])";
  m.what.timeout = std::chrono::milliseconds{1234};
  m.what.resend_after_drop = true;
  m.kind = request_kind::query_plan;
  m.op = op_kind::read;
  auto r = round_trip(sys, m);
  EXPECT_EQ(r.kind, request_kind::query_plan);
  EXPECT_EQ(r.what.kind, transport::attempt_kind::raw);
  EXPECT_EQ(r.what.resource, "/dbs/d/colls/c/docs");
  EXPECT_EQ(r.what.raw.method, "POST");
  ASSERT_EQ(r.what.raw.headers.size(), 1u);
  EXPECT_EQ(r.what.raw.headers[0].second, "True");
  EXPECT_EQ(r.what.partition_key_json, R"(["p0"])");
  EXPECT_EQ(r.what.timeout, std::chrono::milliseconds{1234});
  EXPECT_TRUE(r.what.resend_after_drop);
}

TEST(Messages, TypeIds_AreRegistered_UnderTheirNames) {
  EXPECT_STREQ(caf::type_name<transport::outcome>::value,
               "georoute::transport::outcome");
  EXPECT_EQ(caf::type_id<transport::request>::value, caf::first_custom_type_id);
  EXPECT_GT(caf::id_block::georoute::end, caf::id_block::georoute::begin);
}

TEST(Errors, Render_IncludesCodeAndContext) {
  test_config cfg;
  caf::actor_system sys{cfg};
  auto err = make_error(errc::service_unavailable,
                        "503 from East US after 7 attempts");
  EXPECT_EQ(sys.render(err),
            "georoute.service_unavailable: 503 from East US after 7 attempts");
  EXPECT_EQ(code_of(err), errc::service_unavailable);
  EXPECT_EQ(context_of(err), "503 from East US after 7 attempts");
  EXPECT_EQ(code_of(caf::make_error(caf::sec::request_timeout)), errc::none);
}

TEST(Errors, ClassifyStatus_MapsEverySubstatusClass) {
  struct row {
    int status, sub;
    errc expected;
  };
  const row rows[] = {
      {200, 0, errc::none},
      {201, 0, errc::none},
      {304, 0, errc::none},
      {400, 1004, errc::bad_request},
      {401, 0, errc::unauthorized},
      {403, 3, errc::write_forbidden},
      {403, 1008, errc::account_not_found},
      {403, 0, errc::forbidden},
      {404, 0, errc::not_found},
      {404, 1002, errc::read_session_unavailable},
      {408, 0, errc::request_timeout},
      {409, 0, errc::conflict},
      {410, 1002, errc::partition_range_gone},
      {410, 1007, errc::partition_range_gone},
      {410, 1008, errc::partition_range_gone},
      {410, 1022, errc::lease_not_found},
      {410, 1000, errc::gone},
      {412, 0, errc::precondition_failed},
      {429, 3200, errc::throttled},
      {500, 0, errc::internal_server_error},
      {503, 20003, errc::service_unavailable},
      {418, 0, errc::unexpected_status},
  };
  for (const auto& r : rows)
    EXPECT_EQ(classify_status(r.status, r.sub), r.expected)
        << r.status << "/" << r.sub;
}

} // namespace

namespace {

TEST(Errors, ClassifyOutcome_TransportKindsThenStatus) {
  using georoute::errc;
  using georoute::transport::failure;
  struct row {
    failure f;
    int status;
    errc expected;
  };
  const row rows[] = {
      {failure::refused, 0, errc::connection_refused},
      {failure::reset, 0, errc::connection_reset},
      {failure::timeout, 0, errc::transport_timeout},
      {failure::dns, 0, errc::dns_failure},
      {failure::tls, 0, errc::tls_failure},
      {failure::protocol, 0, errc::protocol_error},
      {failure::body_too_large, 0, errc::body_too_large},
      {failure::none, 503, errc::service_unavailable},
      {failure::none, 200, errc::none},
  };
  for (const auto& r : rows) {
    georoute::transport::outcome o;
    o.error = r.f;
    o.status = r.status;
    EXPECT_EQ(georoute::classify_outcome(o), r.expected)
        << georoute::transport::to_string(r.f) << " " << r.status;
  }
}

} // namespace
