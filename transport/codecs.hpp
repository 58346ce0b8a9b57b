#pragma once

// JSON codecs for the gateway resources the engine reads (gateway protocol
// A3-A9) and the emulator serves. Decoders never throw: malformed, truncated,
// hostile or wrongly typed input is a `problem` whose message starts with the
// field path, e.g. "writableLocations[1].databaseAccountEndpoint: expected
// string, got number". Documents nested deeper than `max_json_depth` are
// rejected before they are parsed. Encoders produce the full shapes the SDKs
// expect, including the fields the engine ignores.

#include "georoute/actors/policy/model.hpp"
#include "georoute/actors/policy/result.hpp"

#include <optional>
#include <string>
#include <string_view>

namespace georoute::transport {

/// The deepest array/object nesting a decoder accepts.
constexpr int max_json_depth = 64;

/// A problem if `text` nests arrays/objects deeper than `max_json_depth`
/// (brackets counted outside strings), checked before any parser recurses.
std::optional<problem> check_json_depth(std::string_view text);

/// `GET /`. Endpoints must be absolute http(s) URLs and names non-empty;
/// `enableMultipleWriteLocations` may be a bool or "true"/"false"; a missing
/// location list is empty; the consistency level defaults to Session.
result<database_account> decode_database_account(std::string_view body);

/// `GET /dbs/{db}/colls/{coll}`. A missing `partitionKey.version` means 1 and
/// a missing `kind` means Hash (the service's defaults for old containers).
result<collection_info> decode_collection(std::string_view body);

/// One `GET .../pkranges` page; `etag` is the response's `etag` header.
/// Bounds must be upper-case hex ("" allowed as a minimum) with min < max
/// in EPK order (`epk_compare`: "" == "00", so ["", "00") is rejected).
result<pkranges_page> decode_pkranges(std::string_view body,
                                      std::string_view etag);

/// A query-plan response (A8). `top`/`offset`/`limit` null or absent -> -1.
result<query_plan> decode_query_plan(std::string_view body);

/// An error body (A9). `additionalErrorInfo` is kept as JSON text whether
/// the service sent it as a string or as an object.
result<error_body> decode_error_body(std::string_view body);

/// The account as the emulator serves it (A3 shape).
std::string encode_database_account(const database_account& account);

/// The collection as the emulator serves it (A4 shape).
std::string encode_collection(const collection_info& collection);

/// A pkranges page body (A5 shape); the etag travels as a header, not here.
std::string encode_pkranges(const pkranges_page& page);

/// A query plan body (A8 shape).
std::string encode_query_plan(const query_plan& plan);

/// `{"code":..,"message":..[,"additionalErrorInfo":"<json text>"]}`.
std::string encode_error_body(const error_body& error);

} // namespace georoute::transport
