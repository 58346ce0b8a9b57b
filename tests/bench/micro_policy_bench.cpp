// georoute_micro_bench, the pure parts of a request's path: endpoint
// resolution from a location snapshot, EPK hashing, routing-map lookup over
// 1k and 100k ranges, session-token merge and request signing. Each runs on
// one thread; Google Benchmark's CPU column is the cost per operation.

#include "georoute/actors/policy/epk.hpp"
#include "georoute/actors/policy/location_table.hpp"
#include "georoute/actors/policy/routing_map.hpp"
#include "georoute/actors/policy/session_container.hpp"
#include "georoute/actors/policy/session_token.hpp"
#include "georoute/actors/router_wire.hpp"
#include "tests/emulator/engine.hpp"
#include "georoute/transport/auth.hpp"

#include <benchmark/benchmark.h>
#include <cstdio>
#include <random>

namespace {

using namespace georoute;

location_table three_regions() {
  location_table_options o;
  o.default_endpoint = "http://127.0.0.1:4300/";
  o.preferred_regions = {"West US", "East US", "North Europe"};
  location_table t{o};
  database_account a;
  a.id = "bench";
  a.writable = {{"West US", "http://127.0.0.1:4301/"}};
  a.readable = {{"West US", "http://127.0.0.1:4301/"},
                {"East US", "http://127.0.0.1:4302/"},
                {"North Europe", "http://127.0.0.1:4303/"}};
  return t.with_account(a, policy_clock::now());
}

void BM_ResolveEndpoint_Read(benchmark::State& state) {
  auto t = three_regions();
  resolve_input in;
  auto now = policy_clock::now();
  for (auto _ : state)
    benchmark::DoNotOptimize(t.resolve(in, now));
}
BENCHMARK(BM_ResolveEndpoint_Read);

void BM_ResolveEndpoint_ReadFirstRegionMarked(benchmark::State& state) {
  auto now = policy_clock::now();
  auto t = three_regions().with_mark("http://127.0.0.1:4301/", true, true, now);
  resolve_input in;
  for (auto _ : state)
    benchmark::DoNotOptimize(t.resolve(in, now));
}
BENCHMARK(BM_ResolveEndpoint_ReadFirstRegionMarked);

void BM_ResolveEndpoint_Write(benchmark::State& state) {
  auto t = three_regions();
  resolve_input in;
  in.op = op_kind::write;
  auto now = policy_clock::now();
  for (auto _ : state)
    benchmark::DoNotOptimize(t.resolve(in, now));
}
BENCHMARK(BM_ResolveEndpoint_Write);

void BM_EpkHash_String(benchmark::State& state) {
  std::vector<pk_component> key{std::string{"customer-000042"}};
  for (auto _ : state)
    benchmark::DoNotOptimize(epk_v2(key));
}
BENCHMARK(BM_EpkHash_String);

// What the router does per request: parse the header text, then hash.
void BM_EpkHash_ParseAndHash(benchmark::State& state) {
  std::string header = R"(["customer-000042"])";
  for (auto _ : state) {
    auto key = parse_partition_key_json(header);
    benchmark::DoNotOptimize(epk_v2(*key));
  }
}
BENCHMARK(BM_EpkHash_ParseAndHash);

void BM_EpkHash_MultiHash3(benchmark::State& state) {
  std::vector<pk_component> key{std::string{"tenant-7"}, std::string{"user-42"},
                                1234.0};
  for (auto _ : state)
    benchmark::DoNotOptimize(epk_v2_multihash(key));
}
BENCHMARK(BM_EpkHash_MultiHash3);

/// `n` ranges tiling ["", "FF") at evenly spaced 16-hex-digit boundaries.
routing_map make_map(size_t n) {
  std::vector<partition_key_range> ranges;
  std::string prev;
  const uint64_t span = 0xFE00000000000000ull / n;
  for (size_t i = 0; i < n; ++i) {
    partition_key_range r;
    r.id = std::to_string(i);
    r.min_inclusive = prev;
    if (i + 1 == n) {
      r.max_exclusive = "FF";
    } else {
      char buf[17];
      std::snprintf(buf, sizeof buf, "%016llX",
                    static_cast<unsigned long long>(span * (i + 1)));
      r.max_exclusive = buf;
    }
    prev = r.max_exclusive;
    ranges.push_back(std::move(r));
  }
  auto m = routing_map::create_complete(std::move(ranges), "1");
  if (!m) std::abort();
  return std::move(*m);
}

void BM_RoutingMapLookup(benchmark::State& state) {
  auto map = make_map(static_cast<size_t>(state.range(0)));
  std::vector<std::string> keys;
  std::mt19937_64 rng{42};
  for (int i = 0; i < 4096; ++i)
    keys.push_back(epk_v2({std::string{"k"} + std::to_string(rng())}));
  size_t i = 0;
  for (auto _ : state) {
    benchmark::DoNotOptimize(map.range_by_epk(keys[i]));
    i = (i + 1) & 4095;
  }
}
BENCHMARK(BM_RoutingMapLookup)->Arg(1000)->Arg(100000);

void BM_SessionToken_ParseAndMerge(benchmark::State& state) {
  std::string a = "1#1000#1=20#2=30#3=40";
  std::string b = "1#999#1=25#2=28#3=41";
  for (auto _ : state) {
    auto x = parse_vector_token(a);
    auto y = parse_vector_token(b);
    benchmark::DoNotOptimize(merge(*x, *y));
  }
}
BENCHMARK(BM_SessionToken_ParseAndMerge);

// What the router does after each response and before each read: capture
// the response's header into the container, then build the read's header.
void BM_SessionContainer_CaptureAndHeader(benchmark::State& state) {
  session_container c{1024};
  const std::string rid = "AbCdEfGhIjk=";
  const std::string name = "dbs/bench/colls/c";
  int64_t lsn = 1;
  std::vector<std::string> no_parents;
  for (auto _ : state) {
    auto header = "0:1#" + std::to_string(++lsn);
    c.capture(rid, name, header);
    benchmark::DoNotOptimize(c.header_for(rid, "0", no_parents));
  }
}
BENCHMARK(BM_SessionContainer_CaptureAndHeader);

// A point read as the router hands it to the port, before signing.
transport::request unsigned_point_read() {
  transport::request r;
  r.method = "GET";
  r.endpoint = "http://127.0.0.1:4301/";
  r.target = "/dbs/bench/colls/c/docs/x";
  r.headers = {{"x-ms-documentdb-partitionkey", R"(["p"])"},
               {"accept", "application/json"}};
  return r;
}

void BM_SignRequest(benchmark::State& state) {
  auto key = transport::parse_master_key(emulator::default_master_key);
  auto r = unsigned_point_read();
  auto now = std::chrono::system_clock::now();
  for (auto _ : state) {
    auto copy = r;
    transport::sign_request(copy, *key, now);
    benchmark::DoNotOptimize(copy);
  }
}
BENCHMARK(BM_SignRequest);

// What the router does per send: the keyed signer, on a request that already
// carries the headers of the previous signing (they are replaced).
void BM_HmacSigner_Sign(benchmark::State& state) {
  auto key = transport::parse_master_key(emulator::default_master_key);
  transport::hmac_signer signer{*key};
  auto r = unsigned_point_read();
  auto now = std::chrono::system_clock::now();
  for (auto _ : state) {
    signer.sign(r, now);
    benchmark::DoNotOptimize(r);
  }
}
BENCHMARK(BM_HmacSigner_Sign);

// The MAC alone: base64(HMAC-SHA256(key, a point read's string to sign)).
void BM_HmacSigner_Signature(benchmark::State& state) {
  auto key = transport::parse_master_key(emulator::default_master_key);
  transport::hmac_signer signer{*key};
  std::string to_sign = "get\ndocs\ndbs/bench/colls/c/docs/x\n"
                        "thu, 03 dec 2026 12:00:00 gmt\n\n";
  for (auto _ : state)
    benchmark::DoNotOptimize(signer.signature(to_sign));
}
BENCHMARK(BM_HmacSigner_Signature);

// The router's check of every successful body (success_body_problem: one
// json::accept pass). Arg: the number of documents in the body, each about
// 120 bytes; 1 is a point read, 100 a full query page.
void BM_SuccessBodyCheck(benchmark::State& state) {
  std::string docs;
  for (int64_t i = 0; i < state.range(0); ++i) {
    if (i > 0) docs += ",";
    docs += R"({"id":"doc-)" + std::to_string(i) + R"(","pk":"p7","n":)" +
            std::to_string(i * 31) +
            R"(,"tags":["a","b"],"_rid":"AbCdEfGhIjk=","_etag":"\"0000\""})";
  }
  transport::outcome o;
  o.status = 200;
  o.body = state.range(0) == 1
               ? docs
               : R"({"_rid":"x","Documents":[)" + docs + R"(],"_count":)" +
                     std::to_string(state.range(0)) + "}";
  for (auto _ : state)
    benchmark::DoNotOptimize(success_body_problem(data_op::read, o));
  state.SetBytesProcessed(state.iterations() *
                          static_cast<int64_t>(o.body.size()));
}
BENCHMARK(BM_SuccessBodyCheck)->Arg(1)->Arg(100);

} // namespace
