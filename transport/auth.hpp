#pragma once

// Master-key authorization (gateway protocol A1), for the client that signs
// and for the emulator that checks. Uses OpenSSL libcrypto for HMAC-SHA256 and
// the constant-time compare; no Beast, no CAF.
//
//   string to sign = verb\n type\n link\n x-ms-date\n \n   (all but the link
//                    lower-cased; the 5th line is empty because x-ms-date is
//                    always sent)
//   sig            = base64(HMAC-SHA256(base64decode(key), string to sign))
//   authorization  = encodeURIComponent("type=master&ver=1.0&sig=" + sig)
//
// The key is a secret: no function here puts it, or anything derived from it
// other than a request's own signature, into a message.

#include "georoute/actors/policy/result.hpp"
#include "georoute/transport/outcome.hpp"

#include <chrono>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace georoute::transport {

/// The `x-ms-version` this client speaks (what the JS SDK 4.x sends).
constexpr std::string_view api_version = "2020-07-15";

/// A decoded account key. Wiped on destruction; has no printing operator.
class master_key {
public:
  explicit master_key(std::vector<unsigned char> bytes)
      : bytes_(std::move(bytes)) {}
  master_key(const master_key&) = default;
  master_key(master_key&&) = default;
  master_key& operator=(const master_key&) = default;
  master_key& operator=(master_key&&) = default;
  ~master_key();

  const std::vector<unsigned char>& bytes() const { return bytes_; }

private:
  std::vector<unsigned char> bytes_;
};

/// Decodes a base64 account key (surrounding whitespace ignored). Empty input
/// or invalid base64 is a problem; the message never quotes the key.
result<master_key> parse_master_key(std::string_view base64);

/// Standard base64 with '=' padding.
std::string base64_encode(const unsigned char* data, size_t size);

/// Strict standard base64: padding optional, no whitespace, no other
/// alphabet. std::nullopt when invalid.
std::optional<std::vector<unsigned char>> base64_decode(std::string_view text);

/// The resourceType / resourceLink pair that a request path is signed with.
struct resource_ref {
  std::string type; ///< "colls", "docs", "" for the account
  std::string link; ///< "dbs/d/colls/c", "" for the account
};

/// Derives the signed resource from a request path (query string ignored,
/// leading and trailing '/' stripped, each segment percent-decoded so that
/// `/docs/a%20b` signs as `docs/a b`, the id the SDKs sign):
/// - ""                    -> type "", link ""
/// - even segment count    -> type = second-to-last segment, link = path
/// - odd segment count     -> type = last segment, link = parent path
/// With `rid_based`, the link is reduced to the addressed resource's own RID
/// (the last id segment) and lower-cased, as .NET signs RID-based requests:
/// `/dbs/{dbRid}/colls/{collRid}/pkranges` -> type "pkranges", link
/// lower(collRid).
resource_ref resource_for_path(std::string_view path, bool rid_based = false);

/// `verb\ntype\nlink\ndate\n\n` with verb, type and date lower-cased.
std::string string_to_sign(std::string_view verb, std::string_view type,
                           std::string_view link, std::string_view x_ms_date);

/// base64(HMAC-SHA256(key, string_to_sign)).
std::string signature(const master_key& key, std::string_view string_to_sign);

/// JS `encodeURIComponent`: every byte except A-Z a-z 0-9 - _ . ! ~ * ' ( )
/// becomes %XX with upper-case hex.
std::string uri_component_encode(std::string_view text);

/// The value of the `authorization` header, e.g.
/// `type%3Dmaster%26ver%3D1.0%26sig%3D...`.
std::string authorization_header(const master_key& key, std::string_view verb,
                                 std::string_view type, std::string_view link,
                                 std::string_view x_ms_date);

/// RFC 1123 in GMT, e.g. `Sun, 29 Nov 2026 18:59:20 GMT`. Locale-independent.
std::string rfc1123_date(std::chrono::system_clock::time_point t);

/// Parses `Sun, 29 Nov 2026 18:59:20 GMT` (day and month names in any case;
/// the weekday must match the date). std::nullopt when malformed.
std::optional<std::chrono::system_clock::time_point>
parse_rfc1123(std::string_view text);

/// Signs `req` at `now`: replaces any `x-ms-date`, `x-ms-version` and
/// `authorization` headers (names compared case-insensitively) with fresh
/// ones. Type and link come from the path of `req.target`.
void sign_request(request& req, const master_key& key,
                  std::chrono::system_clock::time_point now,
                  bool rid_based = false);

/// Signs requests with one account key, keeping what can be kept between
/// requests: the HMAC-SHA256 context keyed once (OpenSSL re-initialises it
/// from the precomputed inner and outer pads, instead of hashing the key
/// again for every request), the `x-ms-date` text of the current second, and
/// the buffers the string to sign and the signature are built in. One lock
/// around a signing: safe from any thread, and uncontended when one router
/// signs. Produces exactly what `sign_request(req, key, ...)` produces.
class hmac_signer {
public:
  /// Keys a context with `key`. A key OpenSSL refuses leaves the signer
  /// unusable: `error()` says why and `sign` adds no header.
  explicit hmac_signer(const master_key& key);
  ~hmac_signer();
  hmac_signer(const hmac_signer&) = delete;
  hmac_signer& operator=(const hmac_signer&) = delete;

  /// Empty when the signer works, else why not (never quotes the key).
  const std::string& error() const;

  /// base64(HMAC-SHA256(key, to_sign)).
  std::string signature(std::string_view to_sign);

  /// As `sign_request`.
  void sign(request& req, std::chrono::system_clock::time_point now,
            bool rid_based = false);

private:
  struct impl;
  std::unique_ptr<impl> impl_;
};

/// The emulator's verdict on a request's authorization.
enum class auth_verdict {
  ok,
  unauthorized, ///< 401: missing/malformed header or date, bad MAC
  forbidden,    ///< 403: date outside the allowed window
};

/// Stable lower-case name, e.g. "unauthorized".
const char* to_string(auth_verdict x);

/// A verdict and, when not ok, why (never quotes the key).
struct auth_check {
  auth_verdict verdict = auth_verdict::unauthorized;
  std::string reason;
};

/// How far `x-ms-date` may be from the server's clock.
constexpr std::chrono::minutes allowed_clock_skew{15};

/// Checks a request as the gateway does. The header is URL-decoded with
/// either hex case and must read `type=master&ver=1.0&sig=<base64>`. The MAC
/// is checked first (constant time), then the date window.
auth_check verify_authorization(const master_key& key, std::string_view verb,
                                std::string_view path,
                                std::string_view authorization_header_value,
                                std::string_view x_ms_date,
                                std::chrono::system_clock::time_point now,
                                bool rid_based = false);

} // namespace georoute::transport
