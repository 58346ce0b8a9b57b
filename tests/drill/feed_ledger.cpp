#include "tests/drill/feed_ledger.hpp"

#include <nlohmann/json.hpp>

namespace georoute::drill {

namespace {

using json = nlohmann::json;

std::string key_of(const std::string& id, const std::string& pk) {
  return id + "\n" + pk;
}

// A partition key value as the drill writes it: a string's own text, any
// other JSON value as its JSON text.
std::optional<std::string> pk_text(const json& doc, const std::string& prop) {
  auto it = doc.find(prop);
  if (it == doc.end() || it->is_null()) return std::nullopt;
  return it->is_string() ? it->get<std::string>() : it->dump();
}

// `_lsn` as a number, or as a number in a string.
std::optional<int64_t> lsn_of(const json& doc) {
  auto it = doc.find("_lsn");
  if (it == doc.end()) return std::nullopt;
  if (it->is_number_integer()) return it->get<int64_t>();
  if (it->is_string()) {
    const auto& s = it->get_ref<const std::string&>();
    if (s.empty() || s.size() > 18 ||
        s.find_first_not_of("0123456789") != std::string::npos)
      return std::nullopt;
    return std::stoll(s);
  }
  return std::nullopt;
}

std::string excerpt(const json& doc) {
  auto s = doc.dump(-1, ' ', false, json::error_handler_t::replace);
  return s.size() <= 120 ? s : s.substr(0, 117) + "...";
}

std::string describe(const feed_item& d) {
  return d.id + " (pk " + d.pk + ") at _lsn " + std::to_string(d.lsn);
}

size_t heap_of(const std::string& s) {
  return s.capacity() > 15 ? s.capacity() + 1 : 0;
}

} // namespace

parsed_page parse_feed_page(const std::string& documents,
                            const std::string& pk_property) {
  parsed_page out;
  auto page = json::parse(documents, nullptr, false);
  if (!page.is_array()) {
    out.malformed = 1;
    out.malformed_example =
        "the page is not a JSON array: " + documents.substr(0, 120);
    return out;
  }
  out.items.reserve(page.size());
  for (const auto& doc : page) {
    std::optional<std::string> pk;
    std::optional<int64_t> lsn;
    if (doc.is_object()) {
      pk = pk_text(doc, pk_property);
      lsn = lsn_of(doc);
    }
    auto id = doc.is_object() ? doc.find("id") : doc.end();
    auto etag = doc.is_object() ? doc.find("_etag") : doc.end();
    if (!doc.is_object() || id == doc.end() || !id->is_string() || !pk ||
        !lsn || etag == doc.end() || !etag->is_string()) {
      if (out.malformed++ == 0) out.malformed_example = excerpt(doc);
      continue;
    }
    out.items.push_back(
        {id->get<std::string>(), *pk, *lsn, etag->get<std::string>()});
  }
  return out;
}

feed_effect feed_ledger::apply(const std::vector<feed_item>& items) {
  feed_effect e;
  for (const auto& d : items) {
    auto key = key_of(d.id, d.pk);
    auto doc = docs_.find(key);
    if (doc != docs_.end() && d.lsn == doc->second.lsn) {
      ++e.duplicates;
      if (counts_.duplicates + e.duplicates == 1)
        counts_.duplicate_example = describe(d) + " again";
      continue;
    }
    if (doc != docs_.end() && d.lsn < doc->second.lsn) {
      ++e.order_violations;
      if (counts_.order_violations + e.order_violations == 1)
        counts_.order_example = describe(d) + " after its own _lsn " +
                                std::to_string(doc->second.lsn);
      continue;
    }
    auto [k, fresh_key] = keys_.try_emplace(d.pk);
    if (fresh_key) string_bytes_ += heap_of(k->first);
    if (!fresh_key && d.lsn < k->second.lsn) {
      ++e.order_violations;
      if (counts_.order_violations + e.order_violations == 1)
        counts_.order_example = describe(d) + " after _lsn " +
                                std::to_string(k->second.lsn) +
                                " of the same partition key";
    }
    if (fresh_key || d.lsn > k->second.lsn) k->second.lsn = d.lsn;
    if (doc == docs_.end()) {
      doc = docs_.emplace(std::move(key), version{}).first;
      string_bytes_ += heap_of(doc->first);
    } else {
      string_bytes_ -= heap_of(doc->second.etag);
    }
    doc->second.lsn = d.lsn;
    doc->second.etag = d.etag;
    string_bytes_ += heap_of(doc->second.etag);
    ++e.applied;
  }
  counts_.documents += e.applied;
  counts_.duplicates += e.duplicates;
  counts_.order_violations += e.order_violations;
  return e;
}

feed_effect feed_ledger::apply_page(const std::string& documents,
                                    const std::string& pk_property) {
  auto page = parse_feed_page(documents, pk_property);
  if (page.malformed > 0 && counts_.malformed == 0)
    counts_.malformed_example = page.malformed_example;
  counts_.malformed += page.malformed;
  ++counts_.pages;
  if (!page.items.empty() || page.malformed > 0) ++counts_.pages_with_documents;
  return apply(page.items);
}

const feed_ledger::version* feed_ledger::find(const std::string& id,
                                              const std::string& pk) const {
  auto it = docs_.find(key_of(id, pk));
  return it == docs_.end() ? nullptr : &it->second;
}

size_t feed_ledger::bytes_held() const {
  // A node of an unordered_map: the value, the cached hash, the next
  // pointer; and one bucket pointer per bucket.
  constexpr size_t node_extra = 2 * sizeof(void*);
  return docs_.size() *
             (sizeof(std::pair<const std::string, version>) + node_extra) +
         keys_.size() *
             (sizeof(std::pair<const std::string, key_state>) + node_extra) +
         (docs_.bucket_count() + keys_.bucket_count()) * sizeof(void*) +
         string_bytes_;
}

std::optional<std::vector<final_document>>
parse_read_feed_page(const std::string& body, std::string& problem,
                     const std::string& pk_property) {
  auto page = json::parse(body, nullptr, false);
  auto docs = page.is_object() ? page.find("Documents") : page.end();
  if (!page.is_object() || docs == page.end() || !docs->is_array()) {
    problem = "not a read-feed page: " + body.substr(0, 120);
    return std::nullopt;
  }
  std::vector<final_document> out;
  out.reserve(docs->size());
  for (const auto& doc : *docs) {
    auto pk = doc.is_object() ? pk_text(doc, pk_property) : std::nullopt;
    auto id = doc.is_object() ? doc.find("id") : doc.end();
    auto etag = doc.is_object() ? doc.find("_etag") : doc.end();
    if (!doc.is_object() || id == doc.end() || !id->is_string() || !pk ||
        etag == doc.end() || !etag->is_string()) {
      problem = "a document without id, " + pk_property +
                " or _etag: " + excerpt(doc);
      return std::nullopt;
    }
    out.push_back({id->get<std::string>(), *pk, etag->get<std::string>()});
  }
  return out;
}

feed_verdict judge_feed(const feed_ledger& ledger,
                        const std::vector<final_document>& final_state,
                        const std::set<std::string>& acknowledged) {
  feed_verdict v;
  v.acknowledged = acknowledged.size();
  for (const auto& key : acknowledged) {
    if (ledger.documents().count(key) != 0) continue;
    if (v.acknowledged_missing++ == 0) {
      auto nl = key.find('\n');
      v.acknowledged_example =
          key.substr(0, nl) +
          (nl == std::string::npos ? "" : " (pk " + key.substr(nl + 1) + ")");
    }
  }
  v.final_documents = final_state.size();
  std::set<std::string> held;
  for (const auto& d : final_state) {
    held.insert(key_of(d.id, d.pk));
    const auto* got = ledger.find(d.id, d.pk);
    if (got != nullptr && got->etag == d.etag) continue;
    if (got == nullptr)
      ++v.final_never_seen;
    else
      ++v.final_stale;
    if (v.final_example.empty())
      v.final_example =
          d.id + " (pk " + d.pk + "): _etag now " + d.etag +
          (got == nullptr ? ", never in the feed"
                          : ", last applied " + got->etag + " at _lsn " +
                                std::to_string(got->lsn));
  }
  for (const auto& [key, ver] : ledger.documents()) {
    if (held.count(key) != 0) continue;
    if (v.phantoms++ == 0) {
      auto nl = key.find('\n');
      v.phantom_example =
          key.substr(0, nl) + " at _lsn " + std::to_string(ver.lsn);
    }
  }
  return v;
}

} // namespace georoute::drill
