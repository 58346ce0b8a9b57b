#pragma once

// A value or a problem description, for the pure layers that cannot use
// `caf::expected` (they link no CAF). A problem names what was wrong, e.g.
// "writableLocations[1].databaseAccountEndpoint: expected a string".

#include <string>
#include <utility>
#include <variant>

namespace georoute {

/// What went wrong, in words that name the offending field or value.
struct problem {
  std::string what;
};

/// Either a `T` or a `problem`. Never throws on access through `get_if`-style
/// helpers; `value()` and `error()` require the matching state.
template <class T>
class result {
public:
  result(T value) : v_(std::move(value)) {}
  result(problem p) : v_(std::move(p)) {}

  explicit operator bool() const { return v_.index() == 0; }
  bool ok() const { return v_.index() == 0; }

  T& value() & { return std::get<0>(v_); }
  const T& value() const& { return std::get<0>(v_); }
  T&& value() && { return std::get<0>(std::move(v_)); }
  T* operator->() { return &std::get<0>(v_); }
  const T* operator->() const { return &std::get<0>(v_); }
  T& operator*() & { return std::get<0>(v_); }
  const T& operator*() const& { return std::get<0>(v_); }

  const problem& error() const { return std::get<1>(v_); }

private:
  std::variant<T, problem> v_;
};

} // namespace georoute
