#include "tests/emulator/http_types.hpp"

#include <algorithm>
#include <cctype>

namespace georoute::emulator {

namespace {

bool iequals(const std::string& x, const std::string& y) {
  return x.size() == y.size() &&
         std::equal(x.begin(), x.end(), y.begin(), [](char a, char b) {
           return std::tolower(static_cast<unsigned char>(a)) ==
                  std::tolower(static_cast<unsigned char>(b));
         });
}

} // namespace

const std::string& http_request::header(const std::string& name) const {
  static const std::string empty;
  auto i = headers.find(name);
  return i == headers.end() ? empty : i->second;
}

void http_response::set(const std::string& name, std::string value) {
  for (auto& [key, val] : headers) {
    if (iequals(key, name)) {
      val = std::move(value);
      return;
    }
  }
  headers.emplace_back(name, std::move(value));
}

std::string http_response::get(const std::string& name) const {
  for (const auto& [key, val] : headers)
    if (iequals(key, name)) return val;
  return {};
}

} // namespace georoute::emulator
