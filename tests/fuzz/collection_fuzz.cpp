// Fuzzes transport::decode_collection (gateway bytes off the network): it must
// never crash or throw, a failure must say what was wrong, and an accepted
// value must survive encode_collection -> decode_collection unchanged (the
// emulator serves what the engine reads).

#include "tests/fuzz/fuzz_check.hpp"
#include "georoute/transport/codecs.hpp"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace georoute;
  auto text = fuzz::as_text(data, size);
  auto depth = transport::check_json_depth(text);
  auto decoded = transport::decode_collection(text);
  if (depth) FUZZ_CHECK(!decoded, "accepted a document that is too deep");
  if (!decoded) {
    FUZZ_CHECK(!decoded.error().what.empty(), "a problem without a message");
    return 0;
  }
  const auto& pk = decoded->partition_key;
  FUZZ_CHECK(!pk.paths.empty() && pk.paths.size() <= 3, "paths count");
  FUZZ_CHECK(pk.version == 1 || pk.version == 2, "pk version");
  FUZZ_CHECK(!decoded->id.empty() && !decoded->rid.empty(), "empty id or rid");
  auto wire = transport::encode_collection(*decoded);
  auto again = transport::decode_collection(wire);
  FUZZ_CHECK(again.ok(), "re-decoding the encoding failed: " +
                             (again ? std::string() : again.error().what) +
                             "\n" + wire);
  FUZZ_CHECK(fuzz::same(*decoded, *again),
             "round trip changed the value: " + wire);
  FUZZ_CHECK(transport::encode_collection(*again) == wire,
             "encoding is not stable: " + wire);
  return 0;
}
