#include "georoute/actors/policy/query_continuation.hpp"

#include "georoute/actors/policy/fnv.hpp"

#include <algorithm>
#include <charconv>
#include <cstdio>
#include <limits>
#include <utility>

namespace georoute {

using nlohmann::json;

namespace {

constexpr std::string_view base64url =
    "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";

std::optional<uint64_t> parse_hex(const std::string& text) {
  uint64_t v = 0;
  if (text.empty() || text.size() > 16) return std::nullopt;
  auto [ptr, ec] =
      std::from_chars(text.data(), text.data() + text.size(), v, 16);
  if (ec != std::errc{} || ptr != text.data() + text.size())
    return std::nullopt;
  return v;
}

const json* member(const json& object, const char* key) {
  auto it = object.find(key);
  return it == object.end() ? nullptr : &*it;
}

// -- the coded set of hashes
// ----------------------------------------------------

/// Low bits written as they are for `count` values (count >= 1): 64 minus
/// the bit width of count, so the gaps' high parts average about 1.
int rice_bits(size_t count) {
  int width = 0;
  for (auto n = static_cast<uint64_t>(count); n != 0; n >>= 1)
    ++width;
  return 64 - width;
}

class bit_writer {
public:
  void put(bool bit) {
    acc_ = (acc_ << 1) | (bit ? 1u : 0u);
    if (++used_ == 6) flush();
  }
  void put(uint64_t value, int bits) {
    for (int i = bits - 1; i >= 0; --i)
      put(((value >> i) & 1) != 0);
  }
  std::string finish() {
    if (used_ > 0) {
      acc_ <<= 6 - used_;
      flush();
    }
    return std::move(out_);
  }

private:
  void flush() {
    out_ += base64url[acc_];
    acc_ = 0;
    used_ = 0;
  }

  std::string out_;
  unsigned acc_ = 0;
  int used_ = 0;
};

class bit_reader {
public:
  explicit bit_reader(std::vector<uint8_t> sextets)
      : sextets_(std::move(sextets)) {}

  size_t left() const { return sextets_.size() * 6 - at_; }
  bool get() {
    auto s = sextets_[at_ / 6];
    bool bit = ((s >> (5 - at_ % 6)) & 1) != 0;
    ++at_;
    return bit;
  }

private:
  std::vector<uint8_t> sextets_;
  size_t at_ = 0;
};

uint64_t checksum(uint64_t query_hash, int64_t position,
                  const std::vector<uint64_t>& hashes) {
  auto h = fnv1a64_u64(query_hash, fnv1a64_basis);
  h = fnv1a64_u64(static_cast<uint64_t>(position), h);
  for (auto v : hashes)
    h = fnv1a64_u64(v, h);
  return h;
}

} // namespace

std::string hash_hex(uint64_t value) {
  char buf[17];
  std::snprintf(buf, sizeof buf, "%016llx",
                static_cast<unsigned long long>(value));
  return buf;
}

size_t distinct_set_max_chars(size_t count) {
  if (count == 0) return 0;
  int k = rice_bits(count);
  uint64_t bits = static_cast<uint64_t>(count) * static_cast<uint64_t>(k + 1) +
                  (uint64_t{1} << (64 - k)) - 1;
  return static_cast<size_t>((bits + 5) / 6);
}

std::string encode_hash_set(std::vector<uint64_t> hashes) {
  std::sort(hashes.begin(), hashes.end());
  hashes.erase(std::unique(hashes.begin(), hashes.end()), hashes.end());
  if (hashes.empty()) return {};
  int k = rice_bits(hashes.size());
  uint64_t low = (uint64_t{1} << k) - 1;
  bit_writer w;
  for (size_t i = 0; i < hashes.size(); ++i) {
    uint64_t gap = i == 0 ? hashes[0] : hashes[i] - hashes[i - 1] - 1;
    for (uint64_t q = gap >> k; q > 0; --q)
      w.put(true);
    w.put(false);
    w.put(gap & low, k);
  }
  return w.finish();
}

result<std::vector<uint64_t>> decode_hash_set(std::string_view text,
                                              size_t count) {
  if (count > max_distinct_carried)
    return problem{std::to_string(count) + " values: a continuation carries " +
                   "at most " + std::to_string(max_distinct_carried)};
  if (count == 0) {
    if (!text.empty()) return problem{"characters for an empty set"};
    return std::vector<uint64_t>{};
  }
  auto longest = distinct_set_max_chars(count);
  if (text.size() > longest)
    return problem{std::to_string(text.size()) + " characters, more than " +
                   std::to_string(count) + " values ever take (" +
                   std::to_string(longest) + ")"};
  std::vector<uint8_t> sextets;
  sextets.reserve(text.size());
  for (size_t i = 0; i < text.size(); ++i) {
    auto at = base64url.find(text[i]);
    if (at == std::string_view::npos)
      return problem{"character " + std::to_string(i) + " ('" +
                     std::string(1, text[i]) + "') is not base64url"};
    sextets.push_back(static_cast<uint8_t>(at));
  }
  bit_reader r{std::move(sextets)};
  int k = rice_bits(count);
  uint64_t max_high = (uint64_t{1} << (64 - k)) - 1;
  std::vector<uint64_t> out;
  out.reserve(count);
  for (size_t i = 0; i < count; ++i) {
    auto ends = [&] {
      return problem{"the text ends inside value " + std::to_string(i) +
                     " of " + std::to_string(count)};
    };
    uint64_t high = 0;
    for (;;) {
      if (r.left() == 0) return ends();
      if (!r.get()) break;
      if (++high > max_high)
        return problem{"value " + std::to_string(i) + " is past 2^64"};
    }
    if (r.left() < static_cast<size_t>(k)) return ends();
    uint64_t gap = high << k;
    for (int b = k - 1; b >= 0; --b)
      gap |= uint64_t{r.get()} << b;
    uint64_t value = gap;
    if (i > 0) {
      uint64_t prev = out.back();
      if (prev == std::numeric_limits<uint64_t>::max() ||
          gap > std::numeric_limits<uint64_t>::max() - prev - 1)
        return problem{"value " + std::to_string(i) + " is past 2^64"};
      value = prev + 1 + gap;
    }
    out.push_back(value);
  }
  if (r.left() >= 6)
    return problem{std::to_string(r.left() / 6) +
                   " characters after the last value"};
  while (r.left() > 0)
    if (r.get())
      return problem{"the unused bits after the last value are not 0"};
  return out;
}

// -- the token
// -----------------------------------------------------------------

std::string encode_continuation(const query_continuation& c) {
  json doc = {{"v", 1}, {"q", hash_hex(c.query_hash)}, {"pos", c.position}};
  json ranges = json::array();
  for (const auto& r : c.ranges) {
    json o = {{"id", r.range.id},
              {"min", r.range.min},
              {"max", r.range.max},
              {"token", r.token ? json(*r.token) : json(nullptr)}};
    if (r.done) o["done"] = true;
    if (!r.skip.empty()) {
      json skip = json::array();
      for (auto h : r.skip)
        skip.push_back(hash_hex(h));
      o["skip"] = std::move(skip);
    }
    ranges.push_back(std::move(o));
  }
  doc["ranges"] = std::move(ranges);
  if (!c.order_by_items.is_null())
    doc["order"] = {{"items", c.order_by_items}, {"rid", c.rid}};
  if (c.last_distinct) doc["distinct"] = *c.last_distinct;
  if (!c.distinct_seen.empty()) {
    auto seen = c.distinct_seen;
    std::sort(seen.begin(), seen.end());
    seen.erase(std::unique(seen.begin(), seen.end()), seen.end());
    doc["seen"] = {{"n", seen.size()},
                   {"data", encode_hash_set(seen)},
                   {"sum", hash_hex(checksum(c.query_hash, c.position, seen))}};
  }
  const auto& a = c.aggregate;
  if (a.undefined || a.sum != 0 || a.count != 0 || a.best) {
    json agg = {{"undefined", a.undefined}, {"sum", a.sum}, {"count", a.count}};
    if (a.best) agg["best"] = *a.best;
    doc["agg"] = std::move(agg);
  }
  return doc.dump(-1, ' ', true, json::error_handler_t::replace);
}

namespace {

std::optional<problem> decode_seen(const json& seen, query_continuation& c) {
  auto bad = [](const std::string& what) {
    return problem{"continuation: seen" + what};
  };
  if (!seen.is_object())
    return bad(": expected an object {\"n\", \"data\", \"sum\"}");
  const json* n = member(seen, "n");
  if (n == nullptr || !n->is_number_integer() || n->get<int64_t>() < 1 ||
      n->get<int64_t>() > static_cast<int64_t>(max_distinct_carried))
    return bad(".n: expected the number of values, 1 to " +
               std::to_string(max_distinct_carried) + ", got " +
               (n ? n->dump() : std::string("(missing)")));
  const json* data = member(seen, "data");
  if (data == nullptr || !data->is_string())
    return bad(".data: expected a string");
  const json* sum = member(seen, "sum");
  std::optional<uint64_t> expected;
  if (sum != nullptr && sum->is_string())
    expected = parse_hex(sum->get<std::string>());
  if (!expected)
    return bad(".sum: expected the set's checksum as 1-16 hex digits");
  auto set =
      decode_hash_set(data->get_ref<const std::string&>(), n->get<size_t>());
  if (!set) return bad(".data: " + set.error().what);
  if (checksum(c.query_hash, c.position, *set) != *expected)
    return bad(": the set of values already returned fails its checksum "
               "(the token was altered, or its set comes from another "
               "token)");
  c.distinct_seen = std::move(*set);
  return std::nullopt;
}

} // namespace

result<query_continuation> decode_continuation(std::string_view text) {
  auto bad = [](const std::string& what) {
    return problem{"continuation: " + what};
  };
  if (text.empty()) return bad("empty");
  auto doc = json::parse(text.begin(), text.end(), nullptr, false);
  if (doc.is_discarded()) return bad("not JSON");
  if (!doc.is_object())
    return bad(std::string("expected an object, got ") + doc.type_name());
  const json* v = member(doc, "v");
  if (v == nullptr || !v->is_number_integer() || v->get<int64_t>() != 1)
    return bad("v: version " + (v ? v->dump() : std::string("(missing)")) +
               " is not supported (expected 1)");
  query_continuation c;
  const json* q = member(doc, "q");
  std::optional<uint64_t> qh;
  if (q != nullptr && q->is_string()) qh = parse_hex(q->get<std::string>());
  if (!qh) return bad("q: expected the query hash as 1-16 hex digits");
  c.query_hash = *qh;
  const json* pos = member(doc, "pos");
  if (pos == nullptr || !pos->is_number_integer() || pos->get<int64_t>() < 0)
    return bad("pos: expected a non-negative integer");
  c.position = pos->get<int64_t>();
  const json* ranges = member(doc, "ranges");
  if (ranges == nullptr || !ranges->is_array() || ranges->empty())
    return bad("ranges: expected a non-empty array");
  for (size_t i = 0; i < ranges->size(); ++i) {
    const json& o = (*ranges)[i];
    auto at = "ranges[" + std::to_string(i) + "]";
    if (!o.is_object()) return bad(at + ": expected an object");
    range_resume r;
    for (auto [key, field] :
         {std::pair{"id", &r.range.id}, std::pair{"min", &r.range.min},
          std::pair{"max", &r.range.max}}) {
      const json* f = member(o, key);
      if (f == nullptr || !f->is_string())
        return bad(at + "." + key + ": expected a string");
      *field = f->get<std::string>();
    }
    const json* token = member(o, "token");
    if (token != nullptr && !token->is_null() && !token->is_string())
      return bad(at + ".token: expected a string or null");
    if (token != nullptr && token->is_string())
      r.token = token->get<std::string>();
    const json* done = member(o, "done");
    if (done != nullptr && !done->is_boolean())
      return bad(at + ".done: expected true or false");
    r.done = done != nullptr && done->get<bool>();
    if (const json* skip = member(o, "skip")) {
      if (!skip->is_array()) return bad(at + ".skip: expected an array");
      for (size_t k = 0; k < skip->size(); ++k) {
        const json& h = (*skip)[k];
        auto parsed = h.is_string() ? parse_hex(h.get<std::string>())
                                    : std::optional<uint64_t>{};
        if (!parsed)
          return bad(at + ".skip[" + std::to_string(k) +
                     "]: expected a row hash as 1-16 hex digits");
        r.skip.push_back(*parsed);
      }
    }
    c.ranges.push_back(std::move(r));
  }
  if (const json* order = member(doc, "order")) {
    const json* items = order->is_object() ? member(*order, "items") : nullptr;
    if (items == nullptr || !items->is_array())
      return bad("order.items: expected an array");
    c.order_by_items = *items;
    const json* rid = member(*order, "rid");
    if (rid != nullptr && !rid->is_string())
      return bad("order.rid: expected a string");
    if (rid != nullptr) c.rid = rid->get<std::string>();
  }
  if (const json* d = member(doc, "distinct")) {
    if (!d->is_string()) return bad("distinct: expected a string");
    c.last_distinct = d->get<std::string>();
  }
  if (const json* seen = member(doc, "seen"))
    if (auto p = decode_seen(*seen, c)) return *p;
  if (const json* agg = member(doc, "agg")) {
    if (!agg->is_object()) return bad("agg: expected an object");
    const json* u = member(*agg, "undefined");
    const json* sum = member(*agg, "sum");
    const json* count = member(*agg, "count");
    if (u == nullptr || !u->is_boolean())
      return bad("agg.undefined: expected true or false");
    if (sum == nullptr || !sum->is_number())
      return bad("agg.sum: expected a number");
    if (count == nullptr || !count->is_number_integer() ||
        count->get<int64_t>() < 0)
      return bad("agg.count: expected a non-negative integer");
    c.aggregate.undefined = u->get<bool>();
    c.aggregate.sum = sum->get<double>();
    c.aggregate.count = count->get<int64_t>();
    if (const json* best = member(*agg, "best")) c.aggregate.best = *best;
  }
  return c;
}

} // namespace georoute
