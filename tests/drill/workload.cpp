#include "tests/drill/workload.hpp"

#include "georoute/messages/error.hpp"
#include "georoute/messages/types.hpp"

#include <algorithm>
#include <caf/all.hpp>
#include <cctype>
#include <cmath>
#include <malloc.h>
#include <nlohmann/json.hpp>
#include <random>
#include <set>
#include <unordered_set>

namespace georoute::drill {

namespace {

// The caller's own messages: the next arrival, and the drill's stop.
struct caller_tick {};
struct caller_stop {};

} // namespace

} // namespace georoute::drill

CAF_ALLOW_UNSAFE_MESSAGE_TYPE(georoute::drill::caller_tick)
CAF_ALLOW_UNSAFE_MESSAGE_TYPE(georoute::drill::caller_stop)

namespace georoute::drill {

const char* to_string(op_type x) {
  switch (x) {
  case op_type::read:
    return "read";
  case op_type::write:
    return "write";
  case op_type::query:
    return "query";
  }
  return "?";
}

const char* to_string(op_result x) {
  switch (x) {
  case op_result::success:
    return "success";
  case op_result::failure:
    return "failure";
  case op_result::timeout:
    return "timeout";
  }
  return "?";
}

int64_t recorder::now_us() const {
  return std::chrono::duration_cast<std::chrono::microseconds>(clock::now() -
                                                               start_)
      .count();
}

namespace {

// What the allocator holds for the block at `p`: what it can use and the
// chunk's header. Counted as the soak's heap figure counts it (mallinfo2's
// chunk sizes): an estimate from capacities alone left out ~a fifth of each
// kept record, and that fifth rose with the failed writes of a long soak.
size_t block_bytes(const void* p) {
  if (p == nullptr) return 0;
  return malloc_usable_size(const_cast<void*>(p)) + sizeof(size_t);
}

size_t heap_of(const std::string& s) {
  // Short strings live inside the object (libstdc++: up to 15 characters).
  return s.capacity() > 15 ? block_bytes(s.data()) : 0;
}

template <class T>
size_t heap_of(const std::vector<T>& v) {
  return v.capacity() > 0 ? block_bytes(v.data()) : 0;
}

// What one kept operation holds on the heap beyond its own object.
size_t heap_bytes_of(const op_record& op) {
  size_t n = heap_of(op.region) + heap_of(op.range_id) + heap_of(op.error) +
             heap_of(op.written_id) + heap_of(op.tracking_id) +
             heap_of(op.batch_pair) + heap_of(op.batch_id) +
             heap_of(op.attempted) + heap_of(op.outcomes);
  for (const auto& a : op.attempted)
    n += heap_of(a);
  for (const auto& o : op.outcomes)
    n += heap_of(o.retry_reason) + heap_of(o.endpoint) + heap_of(o.failure);
  return n;
}

} // namespace

void recorder::add(op_record r) {
  switch (r.result) {
  case op_result::success:
    ++ok;
    break;
  case op_result::failure:
    ++failed;
    break;
  case op_result::timeout:
    ++timed_out;
    break;
  }
  std::lock_guard<std::mutex> guard{mtx_};
  if (leak_per_op_ > 0) {
    leaked_.push_back(std::make_unique<char[]>(leak_per_op_));
    // Touched, so that the pages count as resident.
    std::fill_n(leaked_.back().get(), leak_per_op_, char{1});
  }
  bool plain = r.result == op_result::success && r.region != "(global)" &&
               r.duplicates == 0 && r.missing == 0;
  // A failed write is judged one by one (may it have been applied?); a
  // timeout or another failure only counts, by second and by its text.
  bool judged_alone = r.result == op_result::failure &&
                      r.type == op_type::write && !fold_failed_writes_;
  // The first failed reads and queries too: the report describes them.
  if (r.result == op_result::failure && r.type != op_type::write &&
      !fold_failed_writes_ && other_failures_kept_ < kept_other_failures) {
    ++other_failures_kept_;
    judged_alone = true;
  }
  bool keep = r.result == op_result::success ? !plain : judged_alone;
  if (fold_ && !r.batch_pair.empty()) folded_.batch_pairs.insert(r.batch_pair);
  if (!fold_ || keep) {
    kept_bytes_ += heap_bytes_of(r);
    ops_.push_back(std::move(r));
    return;
  }
  auto& f = folded_;
  auto second = static_cast<size_t>(std::max<int64_t>(r.end_us, 0) / 1000000);
  if (f.per_second.size() <= second) f.per_second.resize(second + 1);
  ++f.per_second[second][static_cast<size_t>(r.result)];
  if (r.result == op_result::timeout) {
    ++f.timeouts[r.type];
    return;
  }
  if (r.result == op_result::failure) {
    ++f.failures[r.type];
    auto key = failure_group_key(r.type, r.error);
    auto g = f.failure_texts.find(key);
    if (g == f.failure_texts.end() &&
        f.failure_texts.size() >= folded_ops::max_groups) {
      ++f.other_texts;
    } else {
      auto& group = f.failure_texts[key];
      if (group.count++ == 0) group.example = r.error.substr(0, 300);
    }
    if (r.error.size() < folded_ops::unclear_below && f.unclear++ == 0)
      f.unclear_example = r.error;
    if (f.first_failure_us < 0 || r.end_us < f.first_failure_us) {
      f.first_failure_us = r.end_us;
      f.first_failure = r.error.substr(0, 400);
    }
    return;
  }
  ++f.successes[r.type];
  ++f.served_by[r.region];
  f.latency.add(r.end_us - r.start_us);
  if (!r.written_id.empty()) {
    // The stored document is the last acknowledged write's (a caller
    // writes its ids one at a time; upserts reuse them).
    if (!r.tracking_id.empty()) {
      auto& last = f.last_tracking[r.written_id];
      if (r.end_us >= last.first) last = {r.end_us, r.tracking_id};
    }
    f.written_ids.insert(std::move(r.written_id));
  }
  if (r.type == op_type::query) ++f.complete_queries;
}

std::vector<op_record> recorder::all() const {
  std::lock_guard<std::mutex> guard{mtx_};
  return ops_;
}

folded_ops recorder::folded() const {
  std::lock_guard<std::mutex> guard{mtx_};
  return folded_;
}

size_t recorder::bytes_held() const {
  std::lock_guard<std::mutex> guard{mtx_};
  // Kept operations are counted as they are added (`kept_bytes_`): a walk
  // over them here would hold the lock every caller takes, once a sample.
  // The deliberate leak is left out: it stands for a leak anywhere else.
  size_t texts = 0;
  for (const auto& [key, g] : folded_.failure_texts)
    texts += 96 + key.capacity() + g.example.capacity(); // node and strings
  return kept_bytes_ + heap_of(ops_) +
         folded_.per_second.capacity() * sizeof(folded_.per_second[0]) +
         folded_.written_ids.size() * 96 + // a set node and a short string
         folded_.last_tracking.size() * 160 + folded_.batch_pairs.size() * 96 +
         texts;
}

std::string failure_group_key(op_type type, const std::string& error) {
  std::string key = std::string{to_string(type)} + ": ";
  for (char ch : error.substr(0, 160)) {
    bool digit = std::isdigit(static_cast<unsigned char>(ch)) != 0;
    if (digit && key.back() == '#') continue;
    key += digit ? '#' : ch;
  }
  return key;
}

namespace {

// Bucket k holds [1.01^k, 1.01^(k+1)) microseconds; 0 and below go to -1.
int32_t bucket_of(int64_t us) {
  if (us <= 0) return -1;
  return static_cast<int32_t>(
      std::floor(std::log(static_cast<double>(us)) / std::log(1.01)));
}

} // namespace

void latency_histogram::add(int64_t us) {
  ++buckets_[bucket_of(us)];
  ++count_;
}

double latency_histogram::percentile_ms(double p) const {
  if (count_ == 0) return 0;
  auto rank = static_cast<uint64_t>(p * static_cast<double>(count_ - 1) + 0.5);
  uint64_t seen = 0;
  for (const auto& [k, n] : buckets_) {
    seen += n;
    if (seen > rank)
      // The bucket's geometric middle: within 0.5 % of any value in it.
      return k < 0 ? 0.0 : std::pow(1.01, k + 0.5) / 1000.0;
  }
  return std::pow(1.01, buckets_.rbegin()->first + 0.5) / 1000.0;
}

std::string seed_query() {
  return nlohmann::json{{"query", "SELECT c.id FROM c WHERE c.seed = true"}}
      .dump();
}

namespace {

struct caller_state {
  caller_setup cfg;
  std::mt19937_64 rng;
  uint64_t next_write = 0; ///< plain writes sent
  uint64_t next_batch = 0; ///< batches sent (their pair and their id)
  uint64_t next_patch = 0; ///< patches sent (the value they set)
  /// The last document this caller wrote with a plain write and was told
  /// so ("id\npk"): what its patches change.
  std::string last_written;
  int64_t in_flight = 0;
  bool stopping = false;
  static inline const char* name = "georoute.drill.caller";
};

using caller_ptr = caf::stateful_actor<caller_state>*;

std::string label_of(const caller_setup& cfg, const attempt_record& a) {
  if (!cfg.global_endpoint.empty() && a.endpoint == cfg.global_endpoint)
    return "(global)";
  return a.region.empty() ? a.endpoint : a.region;
}

void take_diagnostics(const caller_setup& cfg, const diagnostics& d,
                      op_record& r) {
  const attempt_record* winner = nullptr;
  r.range_id = d.range_id;
  for (const auto& a : d.attempts) {
    r.attempted.push_back(label_of(cfg, a));
    r.outcomes.push_back({a.status, a.substatus, r.start_us + a.started_us,
                          r.start_us + a.started_us + a.elapsed_us,
                          a.retry_reason, a.endpoint, a.failure, a.connection,
                          a.connection_served, a.queued_us, a.connect_us,
                          a.write_us, a.wait_us});
    if (a.arm > 0) r.hedged = true;
    if (a.winner) winner = &a;
  }
  // With hedging the last attempt listed may be a losing arm: the winner
  // served the operation.
  if (winner) {
    r.region = label_of(cfg, *winner);
    r.hedge_won = winner->arm > 0;
  } else if (!r.attempted.empty()) {
    r.region = r.attempted.back();
  }
}

// The operation ended: record it, and quit if the caller was told to stop
// and nothing is left in flight.
void finish(caller_ptr self, op_record r) {
  auto& st = self->state;
  r.end_us = st.cfg.rec->now_us();
  st.cfg.rec->add(std::move(r));
  --st.cfg.rec->outstanding;
  if (--st.in_flight == 0 && st.stopping) self->quit();
}

void fail(caller_ptr self, op_record r, const caf::error& e) {
  if (e == caf::sec::request_timeout) {
    r.result = op_result::timeout;
    r.region.clear();
  } else {
    r.result = op_result::failure;
    // The engine's errors say what and where; anything else (CAF's
    // request_receiver_down, say) by CAF's name for it.
    r.error = e.category() == error_category
                  ? std::string{to_string(code_of(e))} + ": " + context_of(e)
                  : "caf: " + caf::to_string(e);
    r.error_code = code_of(e);
    if (const auto* d = diagnostics_of(e))
      take_diagnostics(self->state.cfg, *d, r);
  }
  finish(self, std::move(r));
}

// The router to ask now: the engine's current one when the caller follows
// restarts (as an application holding the engine does), else the fixed one.
router_actor router_of(const caller_setup& cfg) {
  return cfg.current_router ? cfg.current_router() : cfg.router;
}

// `left`: what remains of the operation's deadline (a query's later pages
// have less than the first).
data_request base_request(const caller_setup& cfg, data_op op,
                          std::chrono::milliseconds left) {
  data_request req;
  req.op = op;
  req.collection_link = cfg.collection_link;
  req.options.excluded_regions = cfg.excluded_regions;
  if (cfg.budget_is_deadline) req.options.budget = left;
  return req;
}

void issue_read(caller_ptr self, op_record r) {
  auto& st = self->state;
  const auto& docs = st.cfg.seeds->docs;
  const auto& [id, pk] = docs[st.rng() % docs.size()];
  auto req = base_request(st.cfg, data_op::read, st.cfg.deadline);
  req.id = id;
  req.options.partition_key_json = nlohmann::json::array({pk}).dump();
  self->request(router_of(st.cfg), st.cfg.deadline, route_atom_v,
                std::move(req))
      .then(
          [=](data_response& resp) mutable {
            take_diagnostics(self->state.cfg, resp.diag, r);
            finish(self, std::move(r));
          },
          [=](caf::error& e) mutable { fail(self, std::move(r), e); });
}

// The tracking id a write's answer carries ("" when none).
std::string tracking_id_in(const std::string& body) {
  auto doc = nlohmann::json::parse(body, nullptr, false);
  if (doc.is_object() && doc.contains("_trackingId") &&
      doc["_trackingId"].is_string())
    return doc["_trackingId"].get<std::string>();
  return {};
}

void issue_write(caller_ptr self, op_record r) {
  auto& st = self->state;
  auto n = st.next_write++;
  auto upsert = st.cfg.write_ids > 0;
  if (upsert) n %= st.cfg.write_ids;
  auto id = st.cfg.tag + "-w" + std::to_string(st.cfg.index) + "-" +
            std::to_string(n);
  // An upserted id keeps its partition key.
  auto pk = "p" + std::to_string(upsert ? (st.cfg.index * 31 + n) % 40
                                        : st.rng() % 40);
  auto req = base_request(st.cfg, upsert ? data_op::upsert : data_op::create,
                          st.cfg.deadline);
  req.body =
      nlohmann::json{
          {"id", id}, {"pk", pk}, {"kind", "w"}, {"site", st.cfg.site}}
          .dump();
  req.options.partition_key_json = nlohmann::json::array({pk}).dump();
  self->request(router_of(st.cfg), st.cfg.deadline, route_atom_v,
                std::move(req))
      .then(
          [=](data_response& resp) mutable {
            take_diagnostics(self->state.cfg, resp.diag, r);
            r.written_id = id + "\n" + pk;
            self->state.last_written = r.written_id;
            // With write retries on, the stored document must carry this
            // write's own tracking id (checked at the read-back).
            r.tracking_id = tracking_id_in(resp.body);
            finish(self, std::move(r));
          },
          [=](caf::error& e) mutable { fail(self, std::move(r), e); });
}

// A transactional batch of two upserts on one partition key: the caller's
// pair n (bounded like its writes), both documents carrying the batch's own
// id as `batch`. Acknowledged once committed; the first document is what
// the read-back checks, and the pair is read back whole (all or nothing).
void issue_batch(caller_ptr self, op_record r) {
  auto& st = self->state;
  auto seq = st.next_batch++;
  auto n = st.cfg.batch_ids > 0 ? seq % st.cfg.batch_ids : seq;
  auto id = st.cfg.tag + "-b" + std::to_string(st.cfg.index) + "-" +
            std::to_string(n);
  auto pk = "p" + std::to_string((st.cfg.index * 31 + n) % 40);
  auto batch_id = st.cfg.tag + "-c" + std::to_string(st.cfg.index) + "-" +
                  std::to_string(seq);
  r.batch_pair = id + "\n" + pk;
  r.batch_id = batch_id;
  batch_request b;
  b.collection_link = st.cfg.collection_link;
  b.partition_key_json = nlohmann::json::array({pk}).dump();
  b.options.excluded_regions = st.cfg.excluded_regions;
  if (st.cfg.budget_is_deadline) b.options.budget = st.cfg.deadline;
  for (const char* part : {"a", "b"}) {
    batch_operation o;
    o.kind = batch_op_kind::upsert;
    o.body = nlohmann::json{{"id", id + part},
                            {"pk", pk},
                            {"kind", "batch"},
                            {"batch", batch_id},
                            {"site", st.cfg.site}}
                 .dump();
    b.operations.push_back(std::move(o));
  }
  self->request(router_of(st.cfg), st.cfg.deadline, route_atom_v, std::move(b))
      .then(
          [=](batch_response& resp) mutable {
            take_diagnostics(self->state.cfg, resp.diag, r);
            if (!resp.committed()) {
              r.result = op_result::failure;
              r.error = "batch answered " + std::to_string(resp.status) +
                        ": not applied (" +
                        (resp.results.empty()
                             ? std::string{"no results"}
                             : std::to_string(resp.results.front().status)) +
                        ")";
              finish(self, std::move(r));
              return;
            }
            // Not patched later: a batch's upserts carry no tracking id,
            // and the read-back would take a patch's for the document's.
            r.written_id = id + "a\n" + pk;
            finish(self, std::move(r));
          },
          [=](caf::error& e) mutable { fail(self, std::move(r), e); });
}

// A patch of the last document this caller wrote: sets its "touched"
// field. Acknowledged like a write (the document is read back).
void issue_patch(caller_ptr self, op_record r) {
  auto& st = self->state;
  auto at = st.last_written.find('\n');
  auto id = st.last_written.substr(0, at);
  auto pk = st.last_written.substr(at + 1);
  auto req = base_request(st.cfg, data_op::patch, st.cfg.deadline);
  req.id = id;
  req.body =
      nlohmann::json::array(
          {{{"op", "set"}, {"path", "/touched"}, {"value", st.next_patch++}}})
          .dump();
  req.options.partition_key_json = nlohmann::json::array({pk}).dump();
  self->request(router_of(st.cfg), st.cfg.deadline, route_atom_v,
                std::move(req))
      .then(
          [=](data_response& resp) mutable {
            take_diagnostics(self->state.cfg, resp.diag, r);
            r.written_id = id + "\n" + pk;
            // A tracked patch stores its own tracking id.
            r.tracking_id = tracking_id_in(resp.body);
            finish(self, std::move(r));
          },
          [=](caf::error& e) mutable { fail(self, std::move(r), e); });
}

// What a cross-partition query collected so far.
struct query_progress {
  std::vector<std::string> ids;
  std::vector<std::string> attempted;
};

void query_page(caller_ptr self, op_record r,
                std::shared_ptr<query_progress> got, std::string continuation,
                recorder::clock::time_point deadline) {
  auto& st = self->state;
  auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
      deadline - recorder::clock::now());
  if (left.count() <= 0) {
    r.attempted = got->attempted;
    fail(self, std::move(r), caf::make_error(caf::sec::request_timeout));
    return;
  }
  auto req = base_request(st.cfg, data_op::query, left);
  req.body = seed_query();
  req.options.continuation = std::move(continuation);
  self->request(router_of(st.cfg), left, route_atom_v, std::move(req))
      .then(
          [=](data_response& resp) mutable {
            for (const auto& a : resp.diag.attempts)
              got->attempted.push_back(label_of(self->state.cfg, a));
            auto body = nlohmann::json::parse(resp.body, nullptr, false);
            if (body.is_discarded() || !body.contains("Documents") ||
                !body["Documents"].is_array()) {
              r.result = op_result::failure;
              r.error = "query page is not a Documents array: " +
                        resp.body.substr(0, 200);
              finish(self, std::move(r));
              return;
            }
            for (const auto& d : body["Documents"])
              if (d.contains("id") && d["id"].is_string())
                got->ids.push_back(d["id"].get<std::string>());
            if (!resp.continuation.empty()) {
              query_page(self, std::move(r), got, resp.continuation, deadline);
              return;
            }
            // Complete: compare with the seed set.
            std::unordered_set<std::string> seen;
            for (const auto& id : got->ids)
              if (!seen.insert(id).second) ++r.duplicates;
            for (const auto& [id, pk] : self->state.cfg.seeds->docs)
              if (seen.count(id) == 0) ++r.missing;
            r.rows = got->ids.size();
            r.attempted = got->attempted;
            if (!r.attempted.empty()) r.region = r.attempted.back();
            finish(self, std::move(r));
          },
          [=](caf::error& e) mutable {
            if (const auto* d = diagnostics_of(e))
              for (const auto& a : d->attempts)
                got->attempted.push_back(label_of(self->state.cfg, a));
            r.attempted = got->attempted;
            fail(self, std::move(r), e);
          });
}

void issue(caller_ptr self) {
  auto& st = self->state;
  op_record r;
  r.site = st.cfg.site;
  r.start_us = st.cfg.rec->now_us();
  auto dice = static_cast<uint32_t>(st.rng() % 100);
  ++st.in_flight;
  ++st.cfg.rec->outstanding;
  if (dice < st.cfg.mix.query_pct) {
    r.type = op_type::query;
    query_page(self, std::move(r), std::make_shared<query_progress>(), {},
               recorder::clock::now() + st.cfg.deadline);
  } else if (dice < st.cfg.mix.query_pct + st.cfg.mix.write_pct) {
    r.type = op_type::write;
    auto kind = static_cast<uint32_t>(st.rng() % 100);
    const auto& m = st.cfg.mix;
    if (kind < m.batch_pct_of_writes)
      issue_batch(self, std::move(r));
    else if (kind < m.batch_pct_of_writes + m.patch_pct_of_writes &&
             !st.last_written.empty())
      issue_patch(self, std::move(r));
    else
      issue_write(self, std::move(r));
  } else {
    r.type = op_type::read;
    issue_read(self, std::move(r));
  }
}

// Poisson arrivals: exponential gaps with mean 1/rate.
caf::timespan next_gap(caller_state& st) {
  std::exponential_distribution<double> gap{st.cfg.rate};
  auto s = std::min(gap(st.rng), 10.0);
  return std::chrono::duration_cast<caf::timespan>(
      std::chrono::duration<double>{s});
}

caf::behavior caller(caller_ptr self, caller_setup setup) {
  self->state.cfg = std::move(setup);
  self->state.rng.seed(self->state.cfg.seed);
  self->delayed_send(self, next_gap(self->state), caller_tick{});
  return {
      [=](caller_tick) {
        auto& st = self->state;
        if (st.stopping) return;
        issue(self);
        self->delayed_send(self, next_gap(st), caller_tick{});
      },
      [=](caller_stop) {
        auto& st = self->state;
        st.stopping = true;
        if (st.in_flight == 0) self->quit();
      },
  };
}

} // namespace

caf::actor spawn_caller(caf::actor_system& sys, caller_setup setup) {
  return sys.spawn(caller, std::move(setup));
}

void stop_caller(const caf::actor& caller) {
  caf::anon_send(caller, caller_stop{});
}

} // namespace georoute::drill
