#include "tests/bench/engine_port.hpp"

#include "georoute/transport/auth.hpp"

#include <algorithm>
#include <cctype>
#include <chrono>
#include <cstdlib>
#include <vector>

namespace georoute::bench {

namespace {

std::string lower(std::string s) {
  std::transform(s.begin(), s.end(), s.begin(),
                 [](unsigned char c) { return std::tolower(c); });
  return s;
}

transport::outcome to_outcome(const emulator::http_response& res,
                              const std::string& endpoint) {
  transport::outcome o;
  o.status = res.status;
  o.endpoint = endpoint;
  o.body = res.body;
  for (const auto& [name, value] : res.headers) {
    auto n = lower(name);
    if (n == "x-ms-substatus")
      o.substatus = std::atoi(value.c_str());
    else if (n == "x-ms-session-token")
      o.session_token = value;
    else if (n == "x-ms-retry-after-ms")
      o.retry_after_ms = std::atoll(value.c_str());
    else if (n == "x-ms-continuation")
      o.continuation = value;
    else if (n == "etag")
      o.etag = value;
    else if (n == "x-ms-content-path")
      o.content_path = value;
    else if (n == "x-ms-activity-id")
      o.activity_id = value;
    else if (n == "x-ms-request-charge")
      o.request_charge = std::atof(value.c_str());
  }
  return o;
}

} // namespace

void port_counts::reset() {
  account = 0;
  collection_reads = 0;
  pkranges_reads = 0;
  pkranges_not_modified = 0;
  documents = 0;
  other = 0;
}

// Walks the path's segments in place: this runs on the measured path of
// every request of the bench's engine, so it allocates nothing.
bool port_counts::count(const transport::request& r) {
  std::string_view target = r.target;
  target = target.substr(0, target.find('?'));
  size_t n = 0;
  bool pkranges = false;
  bool docs = false;
  std::string_view first, third;
  for (size_t pos = 0; pos < target.size();) {
    auto slash = std::min(target.find('/', pos), target.size());
    if (slash > pos) {
      auto seg = target.substr(pos, slash - pos);
      pkranges = pkranges || seg == "pkranges";
      docs = docs || seg == "docs";
      if (n == 0) first = seg;
      if (n == 2) third = seg;
      ++n;
    }
    pos = slash + 1;
  }
  if (n == 0) {
    ++account;
  } else if (pkranges) {
    ++pkranges_reads;
    return true;
  } else if (docs)
    ++documents;
  else if (n == 4 && first == "dbs" && third == "colls" && r.method == "GET")
    ++collection_reads;
  else
    ++other;
  return false;
}

void counting_port::send(transport::request req, completion done) {
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

void engine_port::send(transport::request req, completion done) {
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
  emulator::http_request hr;
  hr.method = req.method;
  hr.target = req.target;
  hr.body = req.body;
  for (const auto& [name, value] : req.headers)
    hr.headers[lower(name)] = value;
  auto o = to_outcome(engine_.handle(region, hr), req.endpoint);
  if (cacheable && o.status == 200) {
    std::lock_guard<std::mutex> guard{mtx_};
    documents_.emplace(cache_key, o);
  }
  done(std::move(o));
}

} // namespace georoute::bench
