#include "georoute/actors/policy/session_token.hpp"

#include <algorithm>
#include <charconv>
#include <system_error>

namespace georoute {

namespace {

// Hostile headers can be long or binary: quote at most this many bytes and
// replace anything unprintable, so a problem message stays one short line.
constexpr size_t max_quoted = 48;

std::string quote(std::string_view text) {
  std::string r = "'";
  for (size_t i = 0; i < text.size() && i < max_quoted; ++i) {
    auto c = static_cast<unsigned char>(text[i]);
    r += (c >= 0x20 && c < 0x7f) ? static_cast<char>(c) : '?';
  }
  if (text.size() > max_quoted) r += "...";
  r += "'";
  return r;
}

// Parses a whole decimal integer; `what` names the field in the problem.
result<int64_t> parse_int(std::string_view text, const char* what,
                          bool allow_negative) {
  if (text.empty()) return problem{std::string(what) + " is empty"};
  int64_t value = 0;
  auto [ptr, ec] =
      std::from_chars(text.data(), text.data() + text.size(), value);
  if (ec == std::errc::result_out_of_range)
    return problem{std::string(what) + " " + quote(text) +
                   " does not fit in 64 bits"};
  if (ec != std::errc{} || ptr != text.data() + text.size())
    return problem{std::string(what) + " " + quote(text) +
                   " is not a decimal integer"};
  if (!allow_negative && value < 0)
    return problem{std::string(what) + " " + quote(text) + " is negative"};
  return value;
}

bool is_decimal(const std::string& s) {
  return !s.empty() && std::all_of(s.begin(), s.end(), [](unsigned char c) {
    return c >= '0' && c <= '9';
  });
}

bool valid_range_id(std::string_view id) {
  return !id.empty() && std::all_of(id.begin(), id.end(), [](unsigned char c) {
    return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'z') ||
           (c >= 'A' && c <= 'Z') || c == '-' || c == '_';
  });
}

std::string_view trim(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t'))
    s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t'))
    s.remove_suffix(1);
  return s;
}

} // namespace

result<vector_session_token> parse_vector_token(std::string_view text) {
  if (text.empty()) return problem{"session token is empty"};
  auto hash = text.find('#');
  if (hash == std::string_view::npos)
    return problem{"session token " + quote(text) +
                   " has no '#': only the vector form "
                   "{version}#{globalLsn}[#{region}={lsn}...] is accepted"};
  vector_session_token token;
  // The version is -1 on tokens the gateway mints before the first write, so
  // negative versions are accepted; LSNs and region ids never are.
  auto version = parse_int(text.substr(0, hash), "version", true);
  if (!version)
    return problem{"session token " + quote(text) + ": " +
                   version.error().what};
  token.version = *version;
  auto rest = text.substr(hash + 1);
  auto next = rest.find('#');
  auto global = parse_int(rest.substr(0, next), "global LSN", false);
  if (!global)
    return problem{"session token " + quote(text) + ": " + global.error().what};
  token.global_lsn = *global;
  while (next != std::string_view::npos) {
    rest = rest.substr(next + 1);
    next = rest.find('#');
    auto region = rest.substr(0, next);
    auto eq = region.find('=');
    if (eq == std::string_view::npos)
      return problem{"session token " + quote(text) + ": region entry " +
                     quote(region) + " is not {regionId}={localLsn}"};
    auto id = parse_int(region.substr(0, eq), "region id", false);
    if (!id)
      return problem{"session token " + quote(text) + ": " + id.error().what};
    auto lsn = parse_int(region.substr(eq + 1), "local LSN", false);
    if (!lsn)
      return problem{"session token " + quote(text) + ": " + lsn.error().what};
    if (!token.local_lsns.emplace(*id, *lsn).second)
      return problem{"session token " + quote(text) + ": region " +
                     std::to_string(*id) + " appears twice"};
  }
  return token;
}

std::string render(const vector_session_token& token) {
  std::string r =
      std::to_string(token.version) + "#" + std::to_string(token.global_lsn);
  for (const auto& [region, lsn] : token.local_lsns)
    r += "#" + std::to_string(region) + "=" + std::to_string(lsn);
  return r;
}

vector_session_token merge(const vector_session_token& a,
                           const vector_session_token& b) {
  const auto& high = a.version >= b.version ? a : b;
  const auto& low = a.version >= b.version ? b : a;
  vector_session_token r;
  r.version = high.version;
  r.global_lsn = std::max(a.global_lsn, b.global_lsn);
  r.local_lsns = high.local_lsns;
  for (const auto& [region, lsn] : low.local_lsns) {
    auto i = r.local_lsns.find(region);
    if (i != r.local_lsns.end())
      i->second = std::max(i->second, lsn);
    else if (a.version == b.version)
      r.local_lsns.emplace(region, lsn);
  }
  return r;
}

bool covers(const vector_session_token& seen,
            const vector_session_token& required) {
  if (seen.version < required.version || seen.global_lsn < required.global_lsn)
    return false;
  for (const auto& [region, lsn] : required.local_lsns) {
    auto i = seen.local_lsns.find(region);
    if (i != seen.local_lsns.end() && i->second < lsn) return false;
  }
  return true;
}

bool range_id_less::operator()(const std::string& x,
                               const std::string& y) const {
  bool xd = is_decimal(x);
  bool yd = is_decimal(y);
  if (xd && yd) {
    // Compare by value without converting (ids may exceed 64 bits): strip
    // leading zeros, then the shorter number is smaller. Ties ("01" vs "1")
    // fall back to the text so that distinct spellings stay distinct keys.
    auto strip = [](const std::string& s) {
      auto nz = s.find_first_not_of('0');
      return nz == std::string::npos ? std::string_view{}
                                     : std::string_view{s}.substr(nz);
    };
    auto sx = strip(x);
    auto sy = strip(y);
    if (sx.size() != sy.size()) return sx.size() < sy.size();
    if (sx != sy) return sx < sy;
    return x < y;
  }
  if (xd != yd) return xd;
  return x < y;
}

result<session_token_set> parse_session_header(std::string_view text) {
  if (trim(text).empty()) return problem{"session token header is empty"};
  session_token_set tokens;
  size_t pos = 0;
  for (int index = 1;; ++index) {
    auto comma = text.find(',', pos);
    auto raw = text.substr(pos, comma == std::string_view::npos
                                    ? std::string_view::npos
                                    : comma - pos);
    auto where = "session token entry " + std::to_string(index) +
                 " at offset " + std::to_string(pos) + " ";
    auto entry = trim(raw);
    if (entry.empty()) return problem{where + "is empty"};
    auto colon = entry.find(':');
    if (colon == std::string_view::npos)
      return problem{where + quote(entry) +
                     ": missing ':' between range id and token"};
    auto id = entry.substr(0, colon);
    if (!valid_range_id(id))
      return problem{where + quote(entry) + ": range id " + quote(id) +
                     " is empty or has characters other than "
                     "letters, digits, '-' and '_'"};
    auto token = parse_vector_token(entry.substr(colon + 1));
    if (!token)
      return problem{where + quote(entry) + ": " + token.error().what};
    auto [it, fresh] = tokens.emplace(std::string(id), *token);
    if (!fresh) it->second = merge(it->second, *token);
    if (comma == std::string_view::npos) break;
    pos = comma + 1;
  }
  return tokens;
}

void merge_into(session_token_set& into, const session_token_set& from) {
  for (const auto& [id, token] : from) {
    auto [it, fresh] = into.emplace(id, token);
    if (!fresh) it->second = merge(it->second, token);
  }
}

std::string render(const session_token_set& tokens) {
  std::string r;
  for (const auto& [id, token] : tokens) {
    if (!r.empty()) r += ',';
    r += id + ":" + render(token);
  }
  return r;
}

} // namespace georoute
