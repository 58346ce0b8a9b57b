#include "tests/bench/memory.hpp"

#include "tests/bench/engine_port.hpp"
#include "tests/bench/georoute_load.hpp"
#include "tests/emulator/engine.hpp"

#include <malloc.h>

namespace georoute::bench {

namespace {

emulator::http_response post(emulator::engine& e, const std::string& target,
                             std::string body) {
  emulator::http_request r;
  r.method = "POST";
  r.target = target;
  r.body = std::move(body);
  r.headers["content-type"] = "application/json";
  return e.handle("West US", r);
}

} // namespace

memory_figures measure_memory(size_t collections, size_t ranges) {
  memory_figures f;
  f.collections = collections;
  f.ranges_per_collection = ranges;
  auto t0 = steady::now();
  emulator::engine_options eo;
  eo.regions = {"West US"};
  eo.initial_ranges = ranges;
  eo.verify_auth = false;
  emulator::engine emu{eo};
  const std::string global = "http://127.0.0.1:9/";
  const std::map<std::string, std::string> endpoints{
      {"West US", "http://127.0.0.1:10/"}};
  emu.set_endpoints(endpoints);
  if (auto r = post(emu, "/dbs", R"({"id":"m"})"); r.status != 201) {
    f.skipped = "create database: " + std::to_string(r.status) + " " + r.body;
    return f;
  }
  std::vector<data_request> reads;
  reads.reserve(collections);
  for (size_t i = 0; i < collections; ++i) {
    auto id = "c" + std::to_string(i);
    auto r = post(emu, "/dbs/m/colls",
                  R"({"id":")" + id +
                      R"(","partitionKey":{"paths":["/pk"],"kind":"Hash",)"
                      R"("version":2}})");
    if (r.status != 201) {
      f.skipped = "create collection " + id + ": " + std::to_string(r.status);
      return f;
    }
    reads.push_back(point_read("dbs/m/colls/" + id, "x", "p"));
  }
  driver_options o;
  o.global_endpoint = global;
  o.key = emulator::default_master_key;
  o.preferred_regions = {"West US"};
  o.port = std::make_shared<engine_port>(emu, global, endpoints, o.key, false,
                                         false);
  auto d = georoute_driver::start(o);
  if (!d) {
    f.skipped = d.error().what;
    return f;
  }
  malloc_trim(0);
  f.rss_before = resident_bytes();
  // Each read misses both caches; the document does not exist, so the
  // answer is a 404 after the collection and its ranges were loaded.
  (*d)->route_many(reads, 256);
  malloc_trim(0);
  f.rss_after = resident_bytes();
  auto [colls, maps] = (*d)->cache_loads();
  f.collections_cached = colls;
  f.maps_cached = maps;
  auto held = static_cast<double>(maps) * static_cast<double>(ranges);
  if (held > 0 && f.rss_after > f.rss_before)
    f.bytes_per_range = static_cast<double>(f.rss_after - f.rss_before) / held;
  f.seconds = std::chrono::duration<double>(steady::now() - t0).count();
  return f;
}

} // namespace georoute::bench
