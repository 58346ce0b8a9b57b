#include "tests/bench/engine_port.hpp"

#include "georoute/transport/auth.hpp"
#include "georoute/transport/gateway_wire.hpp"

#include <chrono>

namespace georoute::bench {

void port_counts::reset() {
  account = 0;
  collection_reads = 0;
  pkranges_reads = 0;
  pkranges_not_modified = 0;
  documents = 0;
  other = 0;
}

bool port_counts::count(const transport::attempt& a) {
  using k = transport::attempt_kind;
  switch (a.kind) {
  case k::account_read:
    ++account;
    break;
  case k::pkranges_read:
    ++pkranges_reads;
    return true;
  case k::resource_read:
    ++collection_reads;
    break;
  case k::query_plan:
  case k::raw:
    ++other;
    break;
  default:
    ++documents;
    break;
  }
  return false;
}

void counting_port::send(transport::attempt req, completion done) {
  if (!counts_.count(req)) return inner_->send(std::move(req), std::move(done));
  inner_->send(std::move(req),
               [this, done = std::move(done)](transport::outcome o) {
                 if (o.status == 304) ++counts_.pkranges_not_modified;
                 done(std::move(o));
               });
}

engine_port::engine_port(emulator::engine& engine, std::string global_endpoint,
                         std::map<std::string, std::string> endpoints,
                         const std::string& key, bool sign,
                         bool cache_documents)
    : engine_(engine), global_(std::move(global_endpoint)),
      cache_documents_(cache_documents) {
  for (const auto& [region, url] : endpoints)
    region_by_endpoint_[url] = region;
  if (sign) {
    auto parsed = transport::parse_master_key(key);
    if (parsed)
      key_ = std::make_shared<transport::master_key>(std::move(*parsed));
  }
}

void engine_port::send(transport::attempt a, completion done) {
  auto req = transport::to_gateway_request(std::move(a));
  if (key_)
    transport::sign_request(req, *key_, std::chrono::system_clock::now(),
                            req.rid_based);
  bool cacheable = cache_documents_ && req.method == "GET" &&
                   req.target.find("/docs/") != std::string::npos;
  std::string cache_key;
  if (cacheable) {
    cache_key = req.endpoint + req.target;
    std::lock_guard<std::mutex> guard{mtx_};
    auto i = documents_.find(cache_key);
    if (i != documents_.end()) {
      ++replayed_;
      auto o = i->second;
      done(std::move(o));
      return;
    }
  }
  std::string region;
  if (req.endpoint != global_) {
    auto i = region_by_endpoint_.find(req.endpoint);
    if (i == region_by_endpoint_.end()) {
      transport::outcome o;
      o.error = transport::failure::refused;
      o.error_detail = "no region at " + req.endpoint;
      o.endpoint = req.endpoint;
      done(std::move(o));
      return;
    }
    region = i->second;
  }
  auto o = emulator::to_outcome(
      engine_.handle(region, emulator::from_client_request(req)), req.endpoint);
  if (cacheable && o.status == 200) {
    std::lock_guard<std::mutex> guard{mtx_};
    documents_.emplace(cache_key, o);
  }
  done(std::move(o));
}

} // namespace georoute::bench
