// Fuzzes the x-ms-documentdb-partitionkey header parser and the EPK hashing
// behind it (actors/policy/epk.hpp). Invariants: never a crash; a problem has
// a message; at most max_pk_components components; the key written back as
// JSON parses to the same components; EPKs have the documented lengths and
// compare equal to themselves.

#include "georoute/actors/policy/epk.hpp"
#include "tests/fuzz/fuzz_check.hpp"

#include <cstring>
#include <nlohmann/json.hpp>

namespace {

using namespace georoute;

std::string to_json(const std::vector<pk_component>& key) {
  std::string out = "[";
  for (size_t i = 0; i < key.size(); ++i) {
    if (i) out += ',';
    const auto& c = key[i];
    if (auto* s = std::get_if<std::string>(&c))
      out += nlohmann::json(*s).dump();
    else if (auto* d = std::get_if<double>(&c))
      out += nlohmann::json(*d).dump();
    else if (auto* b = std::get_if<bool>(&c))
      out += *b ? "true" : "false";
    else if (std::holds_alternative<pk_null>(c))
      out += "null";
    else
      out += "{}";
  }
  return out + "]";
}

bool same_component(const pk_component& a, const pk_component& b) {
  if (a.index() != b.index()) return false;
  if (auto* x = std::get_if<double>(&a)) {
    double y = std::get<double>(b);
    return std::memcmp(x, &y, sizeof y) == 0 || *x == y;
  }
  return a == b;
}

} // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  auto text = fuzz::as_text(data, size);
  auto key = parse_partition_key_json(text);
  if (!key) {
    FUZZ_CHECK(!key.error().what.empty(), "a problem without a message");
    return 0;
  }
  FUZZ_CHECK(key->size() <= max_pk_components, "too many components");
  auto json = to_json(*key);
  auto again = parse_partition_key_json(json);
  FUZZ_CHECK(again.ok(), "written-back key does not parse: " + json);
  FUZZ_CHECK(again->size() == key->size(), "component count: " + json);
  for (size_t i = 0; i < key->size(); ++i)
    FUZZ_CHECK(same_component((*key)[i], (*again)[i]), "component: " + json);

  auto epk = epk_v2(*key);
  FUZZ_CHECK(key->empty() ? epk.empty() : epk.size() == 32, epk);
  FUZZ_CHECK(epk == epk_v2(*again), "EPK changed with the round trip");
  auto multi = epk_v2_multihash(*key);
  FUZZ_CHECK(multi.size() == 32 * key->size(), multi);
  for (char c : epk + multi)
    FUZZ_CHECK((c >= '0' && c <= '9') || (c >= 'A' && c <= 'F'), "hex digit");
  FUZZ_CHECK(epk_compare(epk, epk) == 0, "epk_compare(x, x) != 0");
  FUZZ_CHECK(epk_compare(epk_min, epk) <= 0, "below epk_min");
  FUZZ_CHECK(epk_less(epk, epk_max), "not below epk_max: " + epk);
  for (const auto& c : *key)
    (void)encode_for_hashing_v2(c);
  return 0;
}
