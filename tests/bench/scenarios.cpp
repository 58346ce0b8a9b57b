#include "tests/bench/scenarios.hpp"

#include "georoute/transport/auth.hpp"
#include "georoute/transport/url.hpp"
#include "tests/bench/georoute_load.hpp"

#include <algorithm>
#include <nlohmann/json.hpp>
#include <thread>
#include <variant>

namespace georoute::bench {

using namespace std::chrono_literals;
using json = nlohmann::json;

namespace {

/// Load before the fault and after its end: 1 s, or the fault's length if
/// shorter (short smoke runs).
std::chrono::milliseconds settle(const options& o) {
  return std::min(std::chrono::milliseconds{1000}, to_ms(o.fault_seconds));
}

} // namespace

std::string set_up(child_emulator& emu, const options& o) {
  auto writer = emu.regions().at(regions[0]);
  auto expect = [](const transport::outcome& r, const std::string& what,
                   std::initializer_list<int> ok) -> std::string {
    if (r.error == transport::failure::none &&
        std::find(ok.begin(), ok.end(), r.status) != ok.end())
      return {};
    return what + ": " +
           (r.error != transport::failure::none
                ? std::string{transport::to_string(r.error)} + " " +
                      r.error_detail
                : std::to_string(r.status) + " " + r.body.substr(0, 200));
  };
  if (auto e = expect(emu.call("POST", writer, "/dbs", R"({"id":"bench"})"),
                      "create database", {201, 409});
      !e.empty())
    return e;
  std::vector<std::string> colls{coll};
  if (!o.skipped("feed") && o.feed_documents > 0) colls.push_back(feed_coll);
  const bool bulk = !o.skipped("bulk") && o.bulk_documents > 0;
  if (bulk) colls.insert(colls.end(), bulk_colls.begin(), bulk_colls.end());
  for (auto k : o.cold) {
    colls.push_back(cold_name("georoute", k));
    colls.push_back(cold_name("peer", k));
  }
  for (const auto& c : colls) {
    if (auto e = expect(
            emu.call("POST", writer, "/dbs/bench/colls",
                     R"({"id":")" + c +
                         R"(","partitionKey":{"paths":["/pk"],"kind":"Hash",)"
                         R"("version":2}})"),
            "create collection " + c, {201, 409});
        !e.empty())
      return e;
    if (c == feed_coll) continue; // filled by the drain's set-up
    if (std::find(bulk_colls.begin(), bulk_colls.end(), c) != bulk_colls.end())
      continue; // the bulk loads start empty
    if (auto e = expect(
            emu.call("POST", writer, "/dbs/bench/colls/" + c + "/docs",
                     R"({"id":"x","pk":"p","payload":"0123456789abcdef"})",
                     {{"x-ms-documentdb-partitionkey", R"(["p"])"},
                      {"x-ms-documentdb-is-upsert", "true"}}),
            "upsert into " + c, {200, 201});
        !e.empty())
      return e;
  }
  return {};
}

result<raw_request> raw_read(child_emulator& emu) {
  auto region_url = emu.regions().at(regions[0]);
  auto u = transport::parse_url(region_url);
  auto* parsed = std::get_if<transport::url>(&u);
  if (!parsed) return problem{"bad region URL " + region_url};
  transport::request r;
  r.method = "GET";
  r.endpoint = region_url;
  r.target = "/dbs/bench/colls/c/docs/x";
  r.headers = {{"x-ms-documentdb-partitionkey", R"(["p"])"},
               {"accept", "application/json"}};
  auto key = transport::parse_master_key(emu.key());
  if (!key) return key.error();
  transport::sign_request(r, *key, std::chrono::system_clock::now());
  raw_request out;
  out.host = parsed->host;
  out.port = parsed->port;
  out.target = r.target;
  out.headers = r.headers;
  return out;
}

std::vector<fault> faults(child_emulator& emu) {
  auto state = "regions/" + percent_encode(regions[0]) + "/state";
  auto set = [&emu, state](const char* s) {
    return [&emu, state, s] {
      return emu.admin("POST", state, json{{"state", s}}.dump());
    };
  };
  auto order = [&emu](std::vector<std::string> o) {
    return [&emu, o] {
      return emu.admin("POST", "write-regions", json{{"order", o}}.dump());
    };
  };
  return {
      {"region-hang", set("hang"), set("online"), false},
      {"region-refuse", set("offline_refuse"), set("online"), false},
      {"write-switch", order({regions[1], regions[2], regions[0]}),
       order(regions), true},
  };
}

failover_figures georoute_failover(child_emulator& emu, const fault& f,
                                   const options& o, size_t in_flight) {
  failover_figures out;
  out.scenario = f.name;
  out.client = "georoute";
  driver_options d;
  d.global_endpoint = emu.global_endpoint();
  d.key = emu.key();
  d.preferred_regions = regions;
  d.connections = in_flight;
  auto drv = georoute_driver::start(d);
  if (!drv) {
    out.skipped = drv.error().what;
    return out;
  }
  auto req = f.writes ? point_upsert(link, doc_id, doc_pk)
                      : point_read(link, doc_id, doc_pk);
  std::string err;
  if (!(*drv)->route_once(req, &err)) {
    out.skipped = "first operation failed: " + err;
    return out;
  }
  event_log log{in_flight};
  auto load = (*drv)->start_load(req, in_flight, log, 30s);
  std::this_thread::sleep_for(settle(o));
  if (auto r = f.start(); !r) {
    load->stop(60s);
    out.skipped = r.error().what;
    return out;
  }
  auto fault_us = log.now_us();
  std::this_thread::sleep_for(to_ms(o.fault_seconds));
  auto ended = f.end();
  auto restore_us = log.now_us();
  std::this_thread::sleep_for(settle(o));
  load->stop(60s);
  out = failover_of(log.take(), fault_us, restore_us);
  out.scenario = f.name;
  out.client = "georoute";
  if (!ended) out.note = "ending the fault failed: " + ended.error().what;
  return out;
}

failover_figures peer_failover(node_peer* peer, const std::string& why,
                               const fault& f, const options& o,
                               size_t in_flight) {
  failover_figures out;
  out.scenario = f.name;
  out.client = "peer";
  if (!peer) {
    out.skipped = why;
    return out;
  }
  auto r = peer->call({{"cmd", "failover"},
                       {"scenario", f.name},
                       {"inFlight", in_flight},
                       {"beforeMs", settle(o).count()},
                       {"faultMs", to_ms(o.fault_seconds).count()},
                       {"afterMs", settle(o).count()}},
                      to_ms(o.fault_seconds) + 120s);
  if (!r) {
    out.skipped = r.error().what;
    // The peer may have died between start and end: end the fault here.
    f.end();
    return out;
  }
  const auto& j = *r;
  out.ok = j.value("ok", uint64_t{0});
  out.failed = j.value("failed", uint64_t{0});
  out.slow = j.value("slow", uint64_t{0});
  out.fault_seconds = j.value("faultSeconds", 0.0);
  out.failover_ms = j.value("failoverMs", -1.0);
  out.max_latency_ms = j.value("maxLatencyMs", 0.0);
  return out;
}

cold_figures peer_cold(node_peer* peer, const std::string& why, size_t k) {
  cold_figures out;
  out.client = "peer";
  out.callers = k;
  if (!peer) {
    out.skipped = why;
    return out;
  }
  auto r = peer->call(
      {{"cmd", "cold"}, {"coll", cold_name("peer", k)}, {"callers", k}}, 120s);
  if (!r) {
    out.skipped = r.error().what;
    return out;
  }
  out.ok = r->value("ok", uint64_t{0});
  out.failed = r->value("failed", uint64_t{0});
  out.seconds = r->value("seconds", 0.0);
  out.collection_reads = r->value("collectionReads", uint64_t{0});
  out.pkranges_reads = r->value("pkrangesReads", uint64_t{0});
  out.document_reads = r->value("documentReads", uint64_t{0});
  out.other = r->value("otherRequests", uint64_t{0});
  return out;
}

bulk_figures peer_bulk(node_peer* peer, const std::string& why,
                       const std::string& coll, size_t count) {
  bulk_figures out;
  out.client = "peer";
  out.mode = "bulk";
  out.operations = count;
  if (!peer) {
    out.skipped = why;
    return out;
  }
  auto r =
      peer->call({{"cmd", "bulk"}, {"coll", coll}, {"count", count}}, 600s);
  if (!r) {
    out.error = r.error().what;
    return out;
  }
  out.ok = r->value("ok", uint64_t{0});
  out.seconds = r->value("seconds", 0.0);
  out.cpu_seconds = r->value("cpu", 0.0);
  out.finish();
  return out;
}

feed_figures peer_feed(node_peer* peer, const std::string& why,
                       const options& o, int round) {
  feed_figures out;
  out.client = "peer";
  out.round = round;
  if (!peer) {
    out.skipped = why;
    return out;
  }
  auto r = peer->call(
      {{"cmd", "feed"}, {"coll", feed_coll}, {"pageSize", o.feed_page}}, 600s);
  if (!r) {
    out.error = r.error().what;
    return out;
  }
  out.documents = r->value("documents", uint64_t{0});
  out.pages = r->value("pages", uint64_t{0});
  out.seconds = r->value("seconds", 0.0);
  out.cpu_seconds = r->value("cpu", 0.0);
  if (out.seconds > 0) out.documents_per_second = out.documents / out.seconds;
  if (out.documents > 0)
    out.cpu_us_per_document = out.cpu_seconds * 1e6 / out.documents;
  return out;
}

} // namespace georoute::bench
