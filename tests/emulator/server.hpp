#pragma once

// Internal to the emulator: the pieces that server.cpp (the Beast side) and
// admin.cpp (the JSON admin API, no Beast) share. Not part of emulator.hpp.

#include "tests/emulator/emulator.hpp"
#include "tests/emulator/http_types.hpp"

#include <optional>
#include <string>
#include <string_view>

namespace georoute::emulator {

/// The prefix of every admin request; served by the global endpoint only.
constexpr std::string_view admin_prefix = "/_emulator/";

/// Answers one request whose target starts with `admin_prefix`: a JSON
/// response, 400 `{"error": "..."}` naming the bad field, 404 for unknown
/// paths. Never throws. Runs on an io thread of `emu`.
http_response handle_admin(emulator& emu, const http_request& req);

/// Decodes %XX escapes (either hex case); `+` stays `+`. std::nullopt when an
/// escape is malformed.

} // namespace georoute::emulator
