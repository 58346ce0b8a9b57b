#pragma once

// georoute's version, in one place: CMake's `project(georoute VERSION ...)`
// (passed to transport/version.cpp alone as GEOROUTE_VERSION).

#include <string_view>

namespace georoute::transport {

/// The version, e.g. "0.1.0".
std::string_view version();

/// The `User-Agent` of every request the HTTP client sends:
/// "georoute/<version>", e.g. "georoute/0.1.0". A constant: sending it
/// builds no string.
std::string_view user_agent();

} // namespace georoute::transport
