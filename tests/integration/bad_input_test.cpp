// The bad-input table (issue 11, item 4): hostile or broken input from the
// gateway (malformed, truncated, oversized, wrongly typed bodies; accounts
// with unknown regions or no regions; pkranges feeds with a gap or an
// overlap; 401 and 403 answers) and from the user (settings, a wrong key)
// gives the caller of the engine an error with an exact code and a text
// that names what was wrong, crashes nothing and loses nothing: once the
// fault is lifted the same engine serves, every acknowledged write is in
// the emulator and nothing unacknowledged was reported as a success.
//
// Each test is one row of the bad-input table in tests/integration/README.md;
// the decoders' own unit tests are named there too.

#include "georoute/transport/codecs.hpp"
#include "tests/integration/engine_fixture.hpp"

#include <nlohmann/json.hpp>

namespace {

using namespace georoute;
using namespace georoute::test;
using namespace std::chrono_literals;
using json = nlohmann::json;

/// The response body limit of the engine under test: the account, the
/// collection, the pkranges pages and the documents of these tests fit.
constexpr size_t body_limit = 4096;

class BadInput : public engine_test {
protected:
  void configure() override {
    settings.http.response_body_limit = body_limit;
    // No row here is about timeouts: steps long enough for a loaded
    // machine, so that only the injected input can fail a request.
    timeout_ladder ladder{{2s, 0ms}, {2s, 0ms}};
    settings.http.ladders.hot_path = ladder;
    settings.http.ladders.default_ladder = ladder;
    settings.http.ladders.partition_failover = ladder;
  }

  caf::expected<data_response> route(data_request r,
                                     caf::timespan timeout = 10s) {
    return ask<data_response>(eng->router(), timeout, route_atom_v,
                              std::move(r));
  }

  caf::expected<data_response> read(const std::string& id) {
    return route(point(data_op::read, id));
  }

  /// A normal write and read through the engine: it serves.
  void expect_serves(const std::string& id) {
    auto w = route(point(data_op::upsert, id));
    ASSERT_TRUE(w) << sys->render(w.error());
    auto r = read(id);
    ASSERT_TRUE(r) << sys->render(r.error());
    EXPECT_EQ(json::parse(r->body)["id"], id);
    EXPECT_EQ(stored(id), 200);
  }

  /// The status of document `id` in the emulator itself (West US, the write
  /// region), past the engine: 200 if stored, 404 if not. Call it only with
  /// no fault in force (faults apply here too).
  int stored(const std::string& id, const std::string& pk = "p0") {
    transport::request r;
    r.method = "GET";
    r.target = "/dbs/d/colls/c/docs/" + id;
    r.headers = {{"x-ms-documentdb-partitionkey", "[\"" + pk + "\"]"}};
    auto key = transport::parse_master_key(emu->key());
    EXPECT_TRUE(key);
    transport::sign_request(r, *key, std::chrono::system_clock::now());
    emulator::http_request h;
    h.method = r.method;
    h.target = r.target;
    for (auto& [name, value] : r.headers) {
      std::string lower = name;
      for (auto& c : lower)
        c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
      h.headers[lower] = value;
    }
    return emu->control().handle("West US", h).status;
  }

  /// A fault answering `status` with exactly `body` to requests of
  /// `operation` whose path contains `path` (any region).
  uint64_t
  bad_body(const std::string& operation, const std::string& path,
           std::string body, int status = 200,
           std::vector<std::pair<std::string, std::string>> headers = {},
           int64_t count = -1) {
    emulator::fault_rule f;
    f.operation = operation;
    f.path_contains = path;
    f.status = status;
    f.body = std::move(body);
    f.headers = std::move(headers);
    f.count = count;
    return emu->control().add_fault(f);
  }

  caf::expected<database_account> refresh_account() {
    return ask<database_account>(eng->endpoints(), 5s, refresh_atom_v, true);
  }

  std::string read_endpoint() {
    auto r =
        ask<resolution>(eng->locations(), 5s, resolve_atom_v, resolve_input{});
    return r ? r->endpoint : std::string{"?"};
  }

  /// The account as the emulator serves it, with `edit` applied.
  std::string account_with(const std::function<void(json&)>& edit) {
    auto a = json::parse(emu->control().account_json());
    edit(a);
    return a.dump();
  }

  std::string collection_rid() {
    auto c = read_collection();
    EXPECT_TRUE(c) << sys->render(c.error());
    return c ? c->rid : std::string{};
  }

  static std::string text_of(const caf::error& e) { return context_of(e); }
};

#define EXPECT_CONTAINS(text, part)                                            \
  EXPECT_NE(std::string{text}.find(part), std::string::npos)                   \
      << "\"" << (part) << "\" not in: " << (text)

// -- malformed JSON in a 200 -----------------------------------------------

TEST_F(BadInput, MalformedJson_DocumentRead_ProtocolViolation_ThenServes) {
  ASSERT_TRUE(route(point(data_op::create, "doc1")));
  bad_body("read", "/docs/doc1", R"({"id":"doc1","pk":)");
  auto r = read("doc1");
  ASSERT_FALSE(r) << "a 200 with a broken body was reported as a success: "
                  << r->body;
  EXPECT_EQ(code_of(r.error()), errc::protocol_violation);
  EXPECT_CONTAINS(text_of(r.error()), "200 from West US");
  EXPECT_CONTAINS(text_of(r.error()), "not valid JSON");
  EXPECT_CONTAINS(text_of(r.error()), "read of dbs/d/colls/c/docs/doc1");
  emu->control().clear_faults();
  auto again = read("doc1");
  ASSERT_TRUE(again) << sys->render(again.error());
  EXPECT_EQ(json::parse(again->body)["id"], "doc1");
  expect_serves("after");
}

TEST_F(BadInput, MalformedJson_WriteAnswer_ErrorNotSuccess_NothingLost) {
  ASSERT_TRUE(route(point(data_op::create, "acked")));
  // The 201 is answered by the fault, not served: the write is not applied.
  bad_body("write", "/docs", "{\"id\":\"doc2\",", 201);
  auto w = route(point(data_op::create, "doc2"));
  ASSERT_FALSE(w) << "a 201 with a broken body was reported as a success";
  EXPECT_EQ(code_of(w.error()), errc::outcome_unknown);
  EXPECT_CONTAINS(text_of(w.error()), "not valid JSON");
  EXPECT_CONTAINS(text_of(w.error()), outcome_unknown_advice);
  emu->control().clear_faults();
  EXPECT_EQ(stored("acked"), 200); // acknowledged: kept
  EXPECT_EQ(stored("doc2"), 404);  // never applied, never acknowledged
  expect_serves("doc2");
}

TEST_F(BadInput, MalformedJson_AccountRead_KeepsTheLastGoodTopology) {
  auto before = read_endpoint();
  ASSERT_EQ(before, emu->endpoint("West US"));
  bad_body("account", "", "{\"id\":\"georoute-emulator\",\"writableLoc");
  auto a = refresh_account();
  ASSERT_FALSE(a);
  EXPECT_EQ(code_of(a.error()), errc::protocol_violation);
  EXPECT_CONTAINS(text_of(a.error()), "account read from");
  EXPECT_CONTAINS(text_of(a.error()), "JSON");
  // The last good account stays: requests still go to the regions.
  EXPECT_EQ(read_endpoint(), before);
  ASSERT_TRUE(route(point(data_op::upsert, "during")));
  emu->control().clear_faults();
  EXPECT_TRUE(refresh_account());
  expect_serves("after");
}

// -- truncated body ----------------------------------------------------------

TEST_F(BadInput, TruncatedBody_ReadEverywhere_ConnectionReset_ThenServes) {
  ASSERT_TRUE(route(point(data_op::create, "doc1")));
  emulator::fault_rule f;
  f.operation = "read";
  f.path_contains = "/docs/doc1";
  f.truncate = true;
  emu->control().add_fault(f);
  auto r = read("doc1");
  ASSERT_FALSE(r);
  EXPECT_EQ(code_of(r.error()), errc::connection_reset);
  EXPECT_CONTAINS(text_of(r.error()), "truncated");
  EXPECT_CONTAINS(text_of(r.error()), "read of dbs/d/colls/c/docs/doc1");
  emu->control().clear_faults();
  auto again = read("doc1");
  ASSERT_TRUE(again) << sys->render(again.error());
  expect_serves("after");
}

TEST_F(BadInput, TruncatedBody_OneRegion_ReadFailsOver) {
  ASSERT_TRUE(route(point(data_op::create, "doc1")));
  emulator::fault_rule f;
  f.region = "West US";
  f.operation = "read";
  f.truncate = true;
  emu->control().add_fault(f);
  auto r = read("doc1");
  ASSERT_TRUE(r) << sys->render(r.error());
  ASSERT_EQ(r->diag.attempts.size(), 2u);
  EXPECT_EQ(r->diag.attempts[0].failure, "reset");
  EXPECT_EQ(r->diag.attempts[1].region, "East US");
  EXPECT_EQ(json::parse(r->body)["id"], "doc1");
}

TEST_F(BadInput, TruncatedBody_WriteApplied_NoUnacknowledgedSuccessNoLoss) {
  ASSERT_TRUE(route(point(data_op::create, "acked")));
  // The write is applied, its 201 cut on the way back.
  emulator::fault_rule f;
  f.operation = "write";
  f.truncate = true;
  f.count = 1;
  emu->control().add_fault(f);
  auto w = route(point(data_op::create, "doc2"));
  emu->control().clear_faults();
  // Whatever the engine answered, it must not be a lie: a success means
  // the document is there.
  if (w) {
    EXPECT_EQ(stored("doc2"), 200);
  } else {
    EXPECT_NE(code_of(w.error()), errc::none) << sys->render(w.error());
    EXPECT_FALSE(text_of(w.error()).empty());
  }
  EXPECT_EQ(stored("acked"), 200);
  // An upsert is idempotent: cut the same way, it ends stored.
  f.count = 1;
  emu->control().add_fault(f);
  auto u = route(point(data_op::upsert, "doc3"));
  emu->control().clear_faults();
  if (u) {
    EXPECT_EQ(stored("doc3"), 200);
  }
  expect_serves("after");
}

// -- oversized body ----------------------------------------------------------

TEST_F(BadInput, OversizedBody_BodyTooLarge_NamesTheLimit_ThenServes) {
  ASSERT_TRUE(route(point(data_op::create, "doc1")));
  json big{
      {"id", "doc1"}, {"pk", "p0"}, {"pad", std::string(2 * body_limit, 'x')}};
  bad_body("read", "/docs/doc1", big.dump());
  auto r = read("doc1");
  ASSERT_FALSE(r);
  EXPECT_EQ(code_of(r.error()), errc::body_too_large);
  EXPECT_CONTAINS(text_of(r.error()),
                  "exceeds the limit of " + std::to_string(body_limit));
  emu->control().clear_faults();
  ASSERT_TRUE(read("doc1"));
  expect_serves("after");
}

// -- wrong JSON types --------------------------------------------------------

TEST_F(BadInput, WrongType_CollectionIdIsANumber_ProtocolViolation) {
  // No data operation ran yet: the collection is not cached.
  auto coll = json::parse(transport::encode_collection([] {
    collection_info c;
    c.id = "c";
    c.rid = "AAAAAA==";
    c.partition_key.paths = {"/pk"};
    return c;
  }()));
  coll["id"] = 5;
  bad_body("read", "/colls/c", coll.dump());
  auto r = read("doc1");
  ASSERT_FALSE(r);
  EXPECT_EQ(code_of(r.error()), errc::protocol_violation);
  EXPECT_CONTAINS(text_of(r.error()), "resolving the collection");
  EXPECT_CONTAINS(text_of(r.error()), "id: expected string");
  emu->control().clear_faults();
  expect_serves("after");
}

TEST_F(BadInput, WrongType_WritableLocationsIsAString_KeepsTopology) {
  auto before = read_endpoint();
  bad_body("account", "",
           account_with([](json& a) { a["writableLocations"] = "West US"; }));
  auto a = refresh_account();
  ASSERT_FALSE(a);
  EXPECT_EQ(code_of(a.error()), errc::protocol_violation);
  EXPECT_CONTAINS(text_of(a.error()), "writableLocations");
  EXPECT_EQ(read_endpoint(), before);
  emu->control().clear_faults();
  EXPECT_TRUE(refresh_account());
  expect_serves("after");
}

// -- unknown regions ---------------------------------------------------------

TEST_F(BadInput, UnknownRegionInAccount_Accepted_PreferredStillServe) {
  // The account lists a region nobody prefers (at East US's address).
  auto east = emu->endpoint("East US");
  bad_body("account", "", account_with([&](json& a) {
             a["readableLocations"].push_back(
                 {{"name", "Atlantis"}, {"databaseAccountEndpoint", east}});
           }));
  auto a = refresh_account();
  ASSERT_TRUE(a) << sys->render(a.error());
  EXPECT_EQ(a->readable.back().name, "Atlantis");
  ASSERT_TRUE(route(point(data_op::create, "doc1")));
  auto r = read("doc1");
  ASSERT_TRUE(r) << sys->render(r.error());
  EXPECT_EQ(r->diag.attempts.back().region, "West US");
  emu->control().clear_faults();
  EXPECT_TRUE(refresh_account());
  expect_serves("after");
}

class BadPreference : public BadInput {
protected:
  void configure() override {
    BadInput::configure();
    settings.location.preferred_regions = {"Mars", "East US", "West US"};
  }
};

TEST_F(BadPreference, PreferredRegionTheAccountLacks_Skipped) {
  ASSERT_TRUE(route(point(data_op::create, "doc1")));
  auto r = read("doc1");
  ASSERT_TRUE(r) << sys->render(r.error());
  ASSERT_EQ(r->diag.attempts.size(), 1u);
  EXPECT_EQ(r->diag.attempts[0].region, "East US");
  expect_serves("after");
}

// -- empty location lists ----------------------------------------------------

// An account read that lists no region, after one that did, is refused:
// taking it would send every request to the region-agnostic account
// endpoint. The last topology stays and keeps serving.
TEST_F(BadInput, EmptyLocationLists_Refused_LastTopologyServes) {
  ASSERT_TRUE(route(point(data_op::create, "doc1")));
  auto before = read_endpoint();
  ASSERT_EQ(before, emu->endpoint("West US"));
  bad_body("account", "", account_with([](json& a) {
             a["writableLocations"] = json::array();
             a["readableLocations"] = json::array();
           }));
  auto a = refresh_account();
  ASSERT_FALSE(a);
  EXPECT_EQ(code_of(a.error()), errc::protocol_violation);
  EXPECT_CONTAINS(text_of(a.error()), "writableLocations is empty");
  EXPECT_CONTAINS(text_of(a.error()), "last topology is kept");
  EXPECT_EQ(read_endpoint(), before);
  auto r = read("doc1");
  ASSERT_TRUE(r) << sys->render(r.error());
  ASSERT_TRUE(route(point(data_op::upsert, "during")));
  emu->control().clear_faults();
  EXPECT_TRUE(refresh_account());
  EXPECT_EQ(stored("during"), 200);
  expect_serves("after");
}

// -- pkranges with a gap or an overlap --------------------------------------

class BadRanges : public BadInput {
protected:
  // One page with `ranges`, then the feed's 304 (the etag is the emulator's
  // current one, so its incremental feed answers "nothing new").
  void serve_ranges(std::vector<partition_key_range> ranges) {
    pkranges_page page;
    page.rid = collection_rid();
    page.ranges = std::move(ranges);
    bad_body("feed", "/pkranges", transport::encode_pkranges(page), 200,
             {{"etag", "\"1\""}}, 1);
  }

  static partition_key_range range(std::string id, std::string min,
                                   std::string max) {
    partition_key_range r;
    r.id = std::move(id);
    r.min_inclusive = std::move(min);
    r.max_exclusive = std::move(max);
    return r;
  }

  void expect_routing_map_error(const char* what) {
    auto r = read("doc1");
    ASSERT_FALSE(r);
    EXPECT_EQ(code_of(r.error()), errc::protocol_violation);
    EXPECT_CONTAINS(text_of(r.error()), "resolving the partition range");
    EXPECT_CONTAINS(text_of(r.error()), "do not form a complete routing map");
    EXPECT_CONTAINS(text_of(r.error()), what);
    emu->control().clear_faults();
    expect_serves("after");
  }
};

TEST_F(BadRanges, PkrangesWithAGap_ProtocolViolation_ThenServes) {
  serve_ranges({range("0", "", "3F"), range("1", "7F", "FF")});
  expect_routing_map_error("gap between");
}

TEST_F(BadRanges, PkrangesWithAnOverlap_ProtocolViolation_ThenServes) {
  serve_ranges({range("0", "", "8F"), range("1", "7F", "FF")});
  expect_routing_map_error("overlap");
}

// -- invalid settings --------------------------------------------------------

TEST_F(BadInput, InvalidSettings_EngineStart_ValidationErrorNamingTheKey) {
  struct row {
    std::function<void(config::settings&)> edit;
    const char* names;
  };
  std::vector<row> rows{
      {[](config::settings& s) { s.account_endpoint = "not a url"; },
       "georoute.account-endpoint"},
      {[](config::settings& s) {
         s.account_key = config::secret{"not base64 !"};
       },
       "account key"},
      {[](config::settings& s) { s.http.ladders.hot_path = {}; },
       "georoute.http.ladder-hot-path"},
  };
  for (const auto& x : rows) {
    auto bad = settings;
    x.edit(bad);
    auto e = engine::start(*sys, bad);
    ASSERT_FALSE(e) << x.names << ": engine started";
    EXPECT_EQ(code_of(e.error()), errc::validation_error);
    EXPECT_CONTAINS(text_of(e.error()), x.names);
    // The key itself never appears in the error.
    EXPECT_EQ(text_of(e.error()).find(emu->key()), std::string::npos);
  }
  // The engine that was started with good settings serves.
  expect_serves("after");
}

// -- a wrong key: 401
// ----------------------------------------------------------

TEST_F(BadInput, WrongKey_Unauthorized_NamesTheKey_RightKeyServes) {
  auto bad = settings;
  bad.account_key = config::secret{
      "dGhpcyBpcyBub3QgdGhlIGtleSBvZiB0aGUgZW11bGF0b3IgYXQgYWxsIQ=="};
  engine_options eo;
  eo.sweep_after = 500ms;
  auto wrong = engine::start(*sys, bad, eo);
  ASSERT_TRUE(wrong) << sys->render(wrong.error());
  auto a = ask<database_account>(wrong->endpoints(), 5s, refresh_atom_v, true);
  ASSERT_FALSE(a);
  EXPECT_EQ(code_of(a.error()), errc::unauthorized);
  EXPECT_CONTAINS(text_of(a.error()), "401");
  EXPECT_CONTAINS(text_of(a.error()), "GEOROUTE_ACCOUNT_KEY");
  auto w = ask<data_response>(wrong->router(), 10s, route_atom_v,
                              point(data_op::create, "doc1"));
  ASSERT_FALSE(w);
  EXPECT_EQ(code_of(w.error()), errc::unauthorized);
  EXPECT_CONTAINS(text_of(w.error()), "401");
  EXPECT_CONTAINS(text_of(w.error()), "key");
  wrong->stop();
  EXPECT_EQ(stored("doc1"), 404); // refused, never applied
  // The engine with the right key serves.
  expect_serves("doc1");
}

// Issue 11, item 6: neither the right key nor a wrong one shows in what the
// engine hands its callers: responses with their diagnostics, errors (the
// text as rendered) and the diagnostics attached to them. Any 12-character
// window of a key counts.
TEST_F(BadInput, ResponsesErrorsAndDiagnostics_ShowNoKey) {
  const std::string right = emu->key();
  const std::string wrong_key =
      "dGhpcyBpcyBub3QgdGhlIGtleSBvZiB0aGUgZW11bGF0b3IgYXQgYWxsIQ==";
  std::vector<std::pair<std::string, std::string>> seen; // (what, text)
  auto keep_error = [&](const std::string& what, const caf::error& e) {
    seen.emplace_back(what + " (error)", sys->render(e));
    if (const auto* d = diagnostics_of(e))
      seen.emplace_back(what + " (diagnostics)", caf::deep_to_string(*d));
  };
  auto keep = [&](const std::string& what,
                  const caf::expected<data_response>& r) {
    if (r)
      seen.emplace_back(what, caf::deep_to_string(*r));
    else
      keep_error(what, r.error());
  };
  keep("create", route(point(data_op::create, "doc1")));
  keep("read", read("doc1"));
  keep("read of a missing document", read("missing"));
  if (auto acc = refresh_account())
    seen.emplace_back("account refresh", caf::deep_to_string(*acc));
  else
    keep_error("account refresh", acc.error());
  auto bad = settings;
  bad.account_key = config::secret{wrong_key};
  engine_options eo;
  eo.sweep_after = 500ms;
  auto wrong = engine::start(*sys, bad, eo);
  ASSERT_TRUE(wrong) << sys->render(wrong.error());
  keep("create with a wrong key",
       ask<data_response>(wrong->router(), 10s, route_atom_v,
                          point(data_op::create, "doc2")));
  auto a = ask<database_account>(wrong->endpoints(), 5s, refresh_atom_v, true);
  ASSERT_FALSE(a);
  keep_error("account read with a wrong key", a.error());
  wrong->stop();
  ASSERT_GE(seen.size(), 6u);
  for (const auto& [what, text] : seen)
    for (const auto& k : {right, wrong_key})
      for (size_t i = 0; i + 12 <= k.size(); ++i)
        ASSERT_EQ(text.find(k.substr(i, 12)), std::string::npos)
            << what << " shows key characters " << i << ".." << i + 12 << ": "
            << text;
}

// -- clock skew: 403
// -----------------------------------------------------------

TEST_F(BadInput, ClockSkew_Forbidden_NamesTheClock_ThenServes) {
  ASSERT_TRUE(route(point(data_op::create, "acked")));
  emu->control().set_clock_offset(20min);
  auto r = read("acked");
  ASSERT_FALSE(r);
  EXPECT_EQ(code_of(r.error()), errc::forbidden);
  EXPECT_CONTAINS(text_of(r.error()), "403");
  EXPECT_CONTAINS(text_of(r.error()), "clock");
  auto w = route(point(data_op::create, "doc2"));
  ASSERT_FALSE(w);
  EXPECT_EQ(code_of(w.error()), errc::forbidden);
  auto a = refresh_account();
  ASSERT_FALSE(a);
  EXPECT_EQ(code_of(a.error()), errc::forbidden);
  EXPECT_CONTAINS(text_of(a.error()), "clock");
  emu->control().set_clock_offset(0ms);
  EXPECT_EQ(stored("acked"), 200);
  EXPECT_EQ(stored("doc2"), 404);
  expect_serves("doc2");
}

} // namespace
