// Fuzzes the emulator's SQL parser (tests/emulator/sql.hpp), and behind it
// the checks, the evaluator and the query-plan generator: query text comes
// from the client in every query body. The input is the query text, then
// optionally a NUL byte and the `parameters` JSON. Invariants: never a crash
// or an escaped exception; a problem reads "Syntax error at position N: ..."
// or names what was wrong; a plan's rewritten query, with the ORDER BY filter
// placeholder replaced by `true` as the SDKs and the engine do, parses again.

#include "tests/emulator/sql.hpp"
#include "tests/fuzz/fuzz_check.hpp"
#include "georoute/transport/codecs.hpp"

#include <nlohmann/json.hpp>

namespace {

using namespace georoute;
using json = nlohmann::json;

const std::vector<json>& documents() {
  static const std::vector<json> docs = [] {
    std::vector<json> d;
    for (const char* text : {
             R"({"id":"a","pk":"p0","n":1,"s":"x","b":true,"t":[1,2,{"u":3}]})",
             R"({"id":"b","pk":"p1","n":2.5,"s":"y","o":{"k":"v","n":null}})",
             R"({"id":"c","pk":5,"n":-3,"s":"","b":false})",
             R"({"id":"d","pk":null,"s":"zz\u00e9","n":1e300})",
             R"({"id":"e","n":"1","t":[]})",
             R"({"id":"f","pk":"p0","n":0,"_rid":"AAAAAAAAAAABAAAAAAAAAA=="})",
         })
      d.push_back(json::parse(text));
    return d;
  }();
  return docs;
}

const json default_params = json::parse(
    R"([{"name":"@n","value":1},{"name":"@s","value":"x"},{"name":"@pk","value":"p0"}])");

partition_key_definition hash_pk() {
  partition_key_definition pk;
  pk.paths = {"/pk"};
  return pk;
}

partition_key_definition multi_pk() {
  partition_key_definition pk;
  pk.paths = {"/pk", "/s"};
  pk.kind = "MultiHash";
  return pk;
}

} // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  auto input = fuzz::as_text(data, size);
  auto nul = input.find('\0');
  auto text = input.substr(0, nul);
  json params = default_params;
  if (nul != std::string_view::npos) {
    auto ptext = input.substr(nul + 1);
    if (!transport::check_json_depth(ptext))
      params = json::parse(ptext.begin(), ptext.end(), nullptr, false);
    if (params.is_discarded()) params = default_params;
  }

  auto q = emulator::sql::parse(text);
  if (!q) {
    FUZZ_CHECK(!q.error().what.empty(), "a problem without a message");
    return 0;
  }
  const auto& query = **q;
  (void)emulator::sql::needs_query_plan(query);
  auto rows = emulator::sql::execute(query, documents(), params);
  if (!rows) FUZZ_CHECK(!rows.error().what.empty(), "an empty error");
  for (const auto& pk : {hash_pk(), multi_pk()}) {
    auto plan = emulator::sql::make_plan(query, std::string(text), pk, params);
    if (!plan) {
      FUZZ_CHECK(!plan.error().what.empty(), "an empty plan error");
      continue;
    }
    // What the gateway sends back must decode on the client side.
    auto wire = transport::encode_query_plan(*plan);
    auto decoded = transport::decode_query_plan(wire);
    FUZZ_CHECK(decoded.ok(),
               "the plan does not decode: " +
                   (decoded ? std::string() : decoded.error().what) + "\n" +
                   wire);
    auto rewritten = plan->info.rewritten_query;
    if (rewritten.empty()) continue;
    const std::string placeholder =
        "{documentdb-formattableorderbyquery-filter}";
    for (auto at = rewritten.find(placeholder); at != std::string::npos;
         at = rewritten.find(placeholder, at))
      rewritten.replace(at, placeholder.size(), "true");
    auto again = emulator::sql::parse(rewritten);
    FUZZ_CHECK(again.ok(), "the rewritten query does not parse: " +
                               (again ? std::string() : again.error().what) +
                               "\n" + rewritten);
    auto per_range = emulator::sql::execute(**again, documents(), params);
    if (!per_range)
      FUZZ_CHECK(!per_range.error().what.empty(), "an empty error");
  }
  return 0;
}
