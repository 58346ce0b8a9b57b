// Fuzzes the emulator's request router, emulator::engine::handle: every byte
// of an HTTP request a client sends, after the server has split it into
// method, target, headers and body. Auth is off (verify_auth=false) so that
// the fuzzer gets past the signature check, and every input starts from a
// fresh engine with database "d", collection "c" (partitioned on /pk, two
// ranges) and a few documents, so deep paths are reachable and runs are
// reproducible.
//
// Input: up to 4 requests separated by a line "====". Each request is
//
//   METHOD TARGET
//   name: value            (headers; names are lower-cased like the server)
//   :region: East US       (optional: the region that receives it; default
//                           West US; "-" = the global endpoint)
//
//   body
//
// Invariants: never a crash or an escaped exception; a status in 100..599;
// an error body (status >= 400) decodes with decode_error_body; a 200 to
// GET /, to a collection read, to a pkranges read or to a query-plan request
// decodes with the codec the engine reads it with; a session token header
// parses. The emulator must serve what georoute can decode.

#include "georoute/actors/policy/session_token.hpp"
#include "tests/emulator/engine.hpp"
#include "tests/fuzz/fuzz_check.hpp"
#include "georoute/transport/codecs.hpp"

#include <cctype>
#include <chrono>
#include <regex>
#include <string>
#include <vector>

namespace {

using namespace georoute;
using namespace georoute::emulator;

const engine::clock::time_point t0 =
    engine::clock::time_point{} + std::chrono::seconds{1'900'000'000};

std::string lower(std::string s) {
  for (auto& c : s)
    c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return s;
}

std::string_view trim(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t'))
    s.remove_prefix(1);
  while (!s.empty() &&
         (s.back() == ' ' || s.back() == '\t' || s.back() == '\r'))
    s.remove_suffix(1);
  return s;
}

struct fuzz_request {
  std::string region = "West US";
  http_request req;
};

// Splits one request (see the file comment). Never fails: missing parts are
// empty.
fuzz_request parse_request(std::string_view text) {
  fuzz_request out;
  auto next_line = [&text]() {
    auto nl = text.find('\n');
    auto line = text.substr(0, nl);
    text =
        nl == std::string_view::npos ? std::string_view{} : text.substr(nl + 1);
    return trim(line);
  };
  auto first = next_line();
  auto sp = first.find(' ');
  out.req.method = std::string(first.substr(0, sp));
  if (sp != std::string_view::npos)
    out.req.target = std::string(trim(first.substr(sp + 1)));
  while (!text.empty()) {
    auto line = next_line();
    if (line.empty()) break;
    if (line.substr(0, 8) == ":region:") {
      out.region = std::string(trim(line.substr(8)));
      continue;
    }
    auto colon = line.find(':');
    auto name = lower(std::string(trim(line.substr(0, colon))));
    std::string value;
    if (colon != std::string_view::npos)
      value = std::string(trim(line.substr(colon + 1)));
    out.req.headers[name] = value;
  }
  out.req.body = std::string(text);
  return out;
}

std::vector<fuzz_request> split(std::string_view text) {
  std::vector<fuzz_request> out;
  const std::string_view sep = "\n====\n";
  while (out.size() < 4) {
    auto at = text.find(sep);
    out.push_back(parse_request(text.substr(0, at)));
    if (at == std::string_view::npos) break;
    text = text.substr(at + sep.size());
  }
  return out;
}

http_request json_request(std::string method, std::string target,
                          std::string body, std::string pk = {}) {
  http_request r;
  r.method = std::move(method);
  r.target = std::move(target);
  r.body = std::move(body);
  r.headers["content-type"] = "application/json";
  if (!pk.empty()) r.headers["x-ms-documentdb-partitionkey"] = pk;
  return r;
}

std::unique_ptr<engine> fresh_engine() {
  engine_options o;
  o.verify_auth = false;
  auto eng = std::make_unique<engine>(o);
  eng->set_endpoints({{"West US", "http://127.0.0.1:4301/"},
                      {"East US", "http://127.0.0.1:4302/"},
                      {"North Europe", "http://127.0.0.1:4303/"}});
  auto must = [&](const http_request& r) {
    auto res = eng->handle("West US", r, t0);
    FUZZ_CHECK(res.status == 201, "setup " + r.target + ": " + res.body);
  };
  must(json_request("POST", "/dbs", R"({"id":"d"})"));
  must(json_request(
      "POST", "/dbs/d/colls",
      R"({"id":"c","partitionKey":{"paths":["/pk"],"kind":"Hash","version":2}})"));
  must(json_request("POST", "/dbs/d/colls/c/docs",
                    R"({"id":"a","pk":"p0","n":1,"s":"x"})", R"(["p0"])"));
  must(json_request("POST", "/dbs/d/colls/c/docs",
                    R"({"id":"b","pk":"p1","n":2,"t":[1,{"u":null}]})",
                    R"(["p1"])"));
  must(json_request("POST", "/dbs/d/colls/c/docs", R"({"id":"c","pk":5,"n":3})",
                    R"([5])"));
  return eng;
}

std::string path_of(const std::string& target) {
  return target.substr(0, target.find('?'));
}

void check_response(const fuzz_request& in, const http_response& res) {
  const auto& req = in.req;
  FUZZ_CHECK(res.status >= 100 && res.status <= 599,
             "status " + std::to_string(res.status));
  if (res.status >= 400 && !res.body.empty()) {
    auto e = transport::decode_error_body(res.body);
    FUZZ_CHECK(e.ok(), "undecodable error body (" + std::to_string(res.status) +
                           "): " + (e ? std::string() : e.error().what) + "\n" +
                           res.body);
  }
  auto token = res.get("x-ms-session-token");
  if (!token.empty()) {
    auto t = parse_session_header(token);
    FUZZ_CHECK(t.ok(), "session token " + token);
  }
  if (res.status != 200) return;
  static const std::regex coll_path(R"(/dbs/[^/]+/colls/[^/]+/?)");
  static const std::regex pkranges_path(R"(/dbs/[^/]+/colls/[^/]+/pkranges/?)");
  auto path = path_of(req.target);
  if (req.method == "GET" && (path == "/" || path.empty())) {
    auto a = transport::decode_database_account(res.body);
    FUZZ_CHECK(a.ok(), "account: " + (a ? std::string() : a.error().what) +
                           "\n" + res.body);
  } else if (req.method == "GET" && std::regex_match(path, coll_path)) {
    auto c = transport::decode_collection(res.body);
    FUZZ_CHECK(c.ok(), "collection: " + (c ? std::string() : c.error().what) +
                           "\n" + res.body);
  } else if (req.method == "GET" && std::regex_match(path, pkranges_path)) {
    auto p = transport::decode_pkranges(res.body, res.get("etag"));
    FUZZ_CHECK(p.ok(), "pkranges: " + (p ? std::string() : p.error().what) +
                           "\n" + res.body);
  } else if (req.method == "POST" &&
             lower(req.header("x-ms-cosmos-is-query-plan-request")) == "true") {
    auto q = transport::decode_query_plan(res.body);
    FUZZ_CHECK(q.ok(), "query plan: " + (q ? std::string() : q.error().what) +
                           "\n" + res.body);
  }
}

} // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  auto requests = split(fuzz::as_text(data, size));
  auto eng = fresh_engine();
  auto now = t0;
  for (const auto& r : requests) {
    now += std::chrono::milliseconds{250};
    auto region = r.region == "-" ? std::string() : r.region;
    auto res = eng->handle(region, r.req, now);
    check_response(r, res);
  }
  return 0;
}
