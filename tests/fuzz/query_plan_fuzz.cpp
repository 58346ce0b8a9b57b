// Fuzzes transport::decode_query_plan (gateway bytes off the network): it must
// never crash or throw, a failure must say what was wrong, and an accepted
// value must survive encode_query_plan -> decode_query_plan unchanged (the
// emulator serves what the engine reads).

#include "georoute/actors/policy/epk.hpp"
#include "tests/fuzz/fuzz_check.hpp"
#include "georoute/transport/codecs.hpp"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace georoute;
  auto text = fuzz::as_text(data, size);
  auto depth = transport::check_json_depth(text);
  auto decoded = transport::decode_query_plan(text);
  if (depth) FUZZ_CHECK(!decoded, "accepted a document that is too deep");
  if (!decoded) {
    FUZZ_CHECK(!decoded.error().what.empty(), "a problem without a message");
    return 0;
  }
  const auto& qi = decoded->info;
  FUZZ_CHECK(qi.top >= -1 && qi.offset >= -1 && qi.limit >= -1, "counts");
  FUZZ_CHECK(qi.order_by_expressions.empty() ||
                 qi.order_by_expressions.size() == qi.order_by.size(),
             "orderBy sizes");
  for (const auto& r : decoded->query_ranges)
    FUZZ_CHECK(georoute::epk_compare(r.min, r.max) <= 0,
               "accepted min > max: " + r.min + " " + r.max);
  auto wire = transport::encode_query_plan(*decoded);
  auto again = transport::decode_query_plan(wire);
  FUZZ_CHECK(again.ok(), "re-decoding the encoding failed: " +
                             (again ? std::string() : again.error().what) +
                             "\n" + wire);
  FUZZ_CHECK(fuzz::same(*decoded, *again),
             "round trip changed the value: " + wire);
  FUZZ_CHECK(transport::encode_query_plan(*again) == wire,
             "encoding is not stable: " + wire);
  return 0;
}
