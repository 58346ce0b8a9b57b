#pragma once

// Internal to the emulator: the pieces that server.cpp (the Beast side) and
// admin.cpp (the JSON admin API, no Beast) share. Not part of emulator.hpp.

#include "tests/emulator/emulator.hpp"
#include "tests/emulator/http_types.hpp"

#include <algorithm>
#include <chrono>
#include <nlohmann/json.hpp>
#include <optional>
#include <random>
#include <string>
#include <string_view>
#include <vector>

namespace georoute::emulator {

/// The prefix of every admin request; served by the global endpoint only.
constexpr std::string_view admin_prefix = "/_emulator/";

/// Answers one request whose target starts with `admin_prefix`: a JSON
/// response, 400 `{"error": "..."}` naming the bad field, 404 for unknown
/// paths. Never throws. Runs on an io thread of `emu`.
http_response handle_admin(emulator& emu, const http_request& req);

/// The admin paths of batch and bulk requests (admin_bulk.cpp): the answer,
/// or std::nullopt when `parts` (the decoded path after /_emulator/) is not
/// one of them.
std::optional<http_response>
handle_bulk_admin(engine& eng, const std::vector<std::string>& parts,
                  const http_request& req);

/// The bulk knobs for GET /_emulator/state: the response cap and the ops
/// budgets.
nlohmann::json bulk_state_json(engine& eng);

/// `latency` moved by a uniform draw from [-jitter, +jitter], never below 0.
inline std::chrono::milliseconds jittered(std::chrono::milliseconds latency,
                                          std::chrono::milliseconds jitter,
                                          std::mt19937_64& rng) {
  if (jitter.count() <= 0) return latency;
  std::uniform_int_distribution<int64_t> draw(-jitter.count(), jitter.count());
  return std::max(std::chrono::milliseconds{0},
                  latency + std::chrono::milliseconds{draw(rng)});
}

} // namespace georoute::emulator
