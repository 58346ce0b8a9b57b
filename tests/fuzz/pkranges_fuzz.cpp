// Fuzzes transport::decode_pkranges (gateway bytes off the network): it must
// never crash or throw, a failure must say what was wrong, and an accepted
// value must survive encode_pkranges -> decode_pkranges unchanged (the emulator
// serves what the engine reads).

#include "georoute/actors/policy/epk.hpp"
#include "tests/fuzz/fuzz_check.hpp"
#include "georoute/transport/codecs.hpp"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace georoute;
  auto text = fuzz::as_text(data, size);
  auto depth = transport::check_json_depth(text);
  auto decoded = transport::decode_pkranges(
      text, "\"00000000-0000-0000-0000-000000000042\"");
  if (depth) FUZZ_CHECK(!decoded, "accepted a document that is too deep");
  if (!decoded) {
    FUZZ_CHECK(!decoded.error().what.empty(), "a problem without a message");
    return 0;
  }
  for (const auto& r : decoded->ranges) {
    FUZZ_CHECK(!r.id.empty(), "empty range id");
    FUZZ_CHECK(georoute::epk_less(r.min_inclusive, r.max_exclusive),
               "accepted min >= max: " + r.min_inclusive + " " +
                   r.max_exclusive);
  }
  auto wire = transport::encode_pkranges(*decoded);
  auto again = transport::decode_pkranges(
      wire, "\"00000000-0000-0000-0000-000000000042\"");
  FUZZ_CHECK(again.ok(), "re-decoding the encoding failed: " +
                             (again ? std::string() : again.error().what) +
                             "\n" + wire);
  FUZZ_CHECK(fuzz::same(*decoded, *again),
             "round trip changed the value: " + wire);
  FUZZ_CHECK(transport::encode_pkranges(*again) == wire,
             "encoding is not stable: " + wire);
  return 0;
}
