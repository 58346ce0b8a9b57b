// Fuzzes transport::decode_database_account (gateway bytes off the network): it
// must never crash or throw, a failure must say what was wrong, and an accepted
// value must survive encode_database_account -> decode_database_account
// unchanged (the emulator serves what the engine reads).

#include "tests/fuzz/fuzz_check.hpp"
#include "georoute/transport/codecs.hpp"
#include "georoute/transport/url.hpp"

#include <variant>

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace georoute;
  auto text = fuzz::as_text(data, size);
  auto depth = transport::check_json_depth(text);
  auto decoded = transport::decode_database_account(text);
  if (depth) FUZZ_CHECK(!decoded, "accepted a document that is too deep");
  if (!decoded) {
    FUZZ_CHECK(!decoded.error().what.empty(), "a problem without a message");
    return 0;
  }
  for (const auto* list : {&decoded->writable, &decoded->readable})
    for (const auto& r : *list)
      FUZZ_CHECK(std::holds_alternative<transport::url>(
                     transport::parse_url(r.endpoint)),
                 "accepted a bad endpoint: " + r.endpoint);
  auto wire = transport::encode_database_account(*decoded);
  auto again = transport::decode_database_account(wire);
  FUZZ_CHECK(again.ok(), "re-decoding the encoding failed: " +
                             (again ? std::string() : again.error().what) +
                             "\n" + wire);
  FUZZ_CHECK(fuzz::same(*decoded, *again),
             "round trip changed the value: " + wire);
  FUZZ_CHECK(transport::encode_database_account(*again) == wire,
             "encoding is not stable: " + wire);
  return 0;
}
