#include "georoute/transport/auth.hpp"

#include "georoute/transport/url.hpp"

#include <algorithm>
#include <array>
#include <ctime>
#include <mutex>
#include <openssl/core_names.h>
#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <openssl/hmac.h>
#include <openssl/params.h>

namespace georoute::transport {

namespace {

constexpr char b64_alphabet[] =
    "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";

constexpr std::array<const char*, 7> day_names = {"Sun", "Mon", "Tue", "Wed",
                                                  "Thu", "Fri", "Sat"};
constexpr std::array<const char*, 12> month_names = {
    "Jan", "Feb", "Mar", "Apr", "May", "Jun",
    "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"};

char ascii_lower(char c) {
  return (c >= 'A' && c <= 'Z') ? static_cast<char>(c - 'A' + 'a') : c;
}

std::string lower(std::string_view s) {
  std::string r(s);
  std::transform(r.begin(), r.end(), r.begin(), ascii_lower);
  return r;
}

void append_lower(std::string& out, std::string_view s) {
  for (char c : s)
    out += ascii_lower(c);
}

bool iequals(std::string_view x, std::string_view y) {
  return x.size() == y.size() &&
         std::equal(x.begin(), x.end(), y.begin(), [](char a, char b) {
           return ascii_lower(a) == ascii_lower(b);
         });
}

// Lenient path-segment decoding: invalid escapes stay as written.
std::string percent_decode_lenient(std::string_view s) {
  std::string r;
  r.reserve(s.size());
  for (size_t i = 0; i < s.size(); ++i) {
    if (s[i] == '%' && i + 2 < s.size()) {
      int hi = hex_digit_value(s[i + 1]);
      int lo = hex_digit_value(s[i + 2]);
      if (hi >= 0 && lo >= 0) {
        r += static_cast<char>(hi * 16 + lo);
        i += 2;
        continue;
      }
    }
    r += s[i];
  }
  return r;
}

std::vector<unsigned char> hmac_sha256(const master_key& key,
                                       std::string_view msg) {
  static const unsigned char no_key = 0;
  const auto& k = key.bytes();
  std::vector<unsigned char> out(EVP_MAX_MD_SIZE);
  unsigned int len = 0;
  auto* res = HMAC(EVP_sha256(), k.empty() ? &no_key : k.data(),
                   static_cast<int>(k.size()),
                   reinterpret_cast<const unsigned char*>(msg.data()),
                   msg.size(), out.data(), &len);
  if (res == nullptr) return {};
  out.resize(len);
  return out;
}

std::string two_digits(int v) {
  std::string r(2, '0');
  r[0] = static_cast<char>('0' + (v / 10) % 10);
  r[1] = static_cast<char>('0' + v % 10);
  return r;
}

// Days since 1970-01-01 of a proleptic Gregorian date (H. Hinnant's
// days_from_civil): pure arithmetic, no timegm, no TZ environment.
int64_t days_from_civil(int64_t y, unsigned m, unsigned d) {
  y -= m <= 2;
  const int64_t era = (y >= 0 ? y : y - 399) / 400;
  const auto yoe = static_cast<unsigned>(y - era * 400);
  const unsigned doy = (153 * (m > 2 ? m - 3 : m + 9) + 2) / 5 + d - 1;
  const unsigned doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
  return era * 146097 + static_cast<int64_t>(doe) - 719468;
}

bool leap_year(int y) {
  return (y % 4 == 0 && y % 100 != 0) || y % 400 == 0;
}

int days_in_month(int y, int m) {
  static constexpr int days[] = {31, 28, 31, 30, 31, 30,
                                 31, 31, 30, 31, 30, 31};
  return m == 2 && leap_year(y) ? 29 : days[m - 1];
}

// Reads exactly `n` digits at `pos`.
bool read_digits(std::string_view s, size_t pos, size_t n, int& out) {
  if (pos + n > s.size()) return false;
  out = 0;
  for (size_t i = 0; i < n; ++i) {
    char c = s[pos + i];
    if (c < '0' || c > '9') return false;
    out = out * 10 + (c - '0');
  }
  return true;
}

template <size_t N>
int index_of(const std::array<const char*, N>& names, std::string_view s) {
  for (size_t i = 0; i < N; ++i)
    if (iequals(names[i], s)) return static_cast<int>(i);
  return -1;
}

auth_check deny(auth_verdict v, std::string reason) {
  return auth_check{v, std::move(reason)};
}

} // namespace

master_key::~master_key() {
  if (!bytes_.empty()) OPENSSL_cleanse(bytes_.data(), bytes_.size());
}

std::string base64_encode(const unsigned char* data, size_t size) {
  std::string r;
  r.reserve((size + 2) / 3 * 4);
  size_t i = 0;
  for (; i + 3 <= size; i += 3) {
    uint32_t v =
        (uint32_t{data[i]} << 16) | (uint32_t{data[i + 1]} << 8) | data[i + 2];
    r += b64_alphabet[(v >> 18) & 63];
    r += b64_alphabet[(v >> 12) & 63];
    r += b64_alphabet[(v >> 6) & 63];
    r += b64_alphabet[v & 63];
  }
  if (size - i == 1) {
    uint32_t v = uint32_t{data[i]} << 16;
    r += b64_alphabet[(v >> 18) & 63];
    r += b64_alphabet[(v >> 12) & 63];
    r += "==";
  } else if (size - i == 2) {
    uint32_t v = (uint32_t{data[i]} << 16) | (uint32_t{data[i + 1]} << 8);
    r += b64_alphabet[(v >> 18) & 63];
    r += b64_alphabet[(v >> 12) & 63];
    r += b64_alphabet[(v >> 6) & 63];
    r += '=';
  }
  return r;
}

std::optional<std::vector<unsigned char>> base64_decode(std::string_view text) {
  // Padding is optional, but when present it must complete the last quantum.
  size_t pad = 0;
  while (!text.empty() && text.back() == '=' && pad < 2) {
    text.remove_suffix(1);
    ++pad;
  }
  if (text.size() % 4 == 1) return std::nullopt;
  if (pad > 0 && (text.size() + pad) % 4 != 0) return std::nullopt;
  std::vector<unsigned char> out;
  out.reserve(text.size() * 3 / 4);
  uint32_t acc = 0;
  int bits = 0;
  for (char c : text) {
    const char* p = std::char_traits<char>::find(b64_alphabet, 64, c);
    if (p == nullptr) return std::nullopt;
    acc = (acc << 6) | static_cast<uint32_t>(p - b64_alphabet);
    bits += 6;
    if (bits >= 8) {
      bits -= 8;
      out.push_back(static_cast<unsigned char>((acc >> bits) & 0xFF));
    }
  }
  // The bits left over must be zero, or the text is not canonical base64.
  if (bits > 0 && (acc & ((1u << bits) - 1)) != 0) return std::nullopt;
  return out;
}

result<master_key> parse_master_key(std::string_view base64) {
  auto is_space = [](char c) {
    return c == ' ' || c == '\t' || c == '\r' || c == '\n';
  };
  while (!base64.empty() && is_space(base64.front()))
    base64.remove_prefix(1);
  while (!base64.empty() && is_space(base64.back()))
    base64.remove_suffix(1);
  if (base64.empty()) return problem{"account key is empty"};
  auto bytes = base64_decode(base64);
  if (!bytes)
    return problem{"account key is not valid base64 (" +
                   std::to_string(base64.size()) +
                   " characters; expected the standard alphabet "
                   "A-Z a-z 0-9 + / with '=' padding)"};
  if (bytes->empty()) return problem{"account key decodes to zero bytes"};
  return master_key{std::move(*bytes)};
}

resource_ref resource_for_path(std::string_view path, bool rid_based) {
  path = path.substr(0, path.find('?'));
  while (!path.empty() && path.front() == '/')
    path.remove_prefix(1);
  while (!path.empty() && path.back() == '/')
    path.remove_suffix(1);
  if (path.empty()) return {};
  std::vector<std::string> segments;
  size_t pos = 0;
  for (;;) {
    auto slash = path.find('/', pos);
    segments.push_back(percent_decode_lenient(path.substr(
        pos, slash == std::string_view::npos ? slash : slash - pos)));
    if (slash == std::string_view::npos) break;
    pos = slash + 1;
  }
  auto n = segments.size();
  bool even = n % 2 == 0;
  resource_ref r;
  r.type = even ? segments[n - 2] : segments[n - 1];
  size_t link_segments = even ? n : n - 1;
  if (rid_based) {
    if (link_segments > 0) r.link = lower(segments[link_segments - 1]);
    return r;
  }
  for (size_t i = 0; i < link_segments; ++i) {
    if (i > 0) r.link += '/';
    r.link += segments[i];
  }
  return r;
}

std::string string_to_sign(std::string_view verb, std::string_view type,
                           std::string_view link, std::string_view x_ms_date) {
  std::string r;
  r.reserve(verb.size() + type.size() + link.size() + x_ms_date.size() + 5);
  r += lower(verb);
  r += '\n';
  r += lower(type);
  r += '\n';
  r += link;
  r += '\n';
  r += lower(x_ms_date);
  r += "\n\n";
  return r;
}

std::string signature(const master_key& key, std::string_view to_sign) {
  auto mac = hmac_sha256(key, to_sign);
  return base64_encode(mac.data(), mac.size());
}

std::string uri_component_encode(std::string_view text) {
  static constexpr char hex[] = "0123456789ABCDEF";
  std::string r;
  r.reserve(text.size() * 3);
  for (char ch : text) {
    auto c = static_cast<unsigned char>(ch);
    bool keep = (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') ||
                (c >= '0' && c <= '9') || c == '-' || c == '_' || c == '.' ||
                c == '!' || c == '~' || c == '*' || c == '\'' || c == '(' ||
                c == ')';
    if (keep) {
      r += ch;
    } else {
      r += '%';
      r += hex[c >> 4];
      r += hex[c & 15];
    }
  }
  return r;
}

std::string authorization_header(const master_key& key, std::string_view verb,
                                 std::string_view type, std::string_view link,
                                 std::string_view x_ms_date) {
  auto sig = signature(key, string_to_sign(verb, type, link, x_ms_date));
  return uri_component_encode("type=master&ver=1.0&sig=" + sig);
}

std::string rfc1123_date(std::chrono::system_clock::time_point t) {
  std::time_t secs = std::chrono::system_clock::to_time_t(t);
  std::tm tm{};
  if (gmtime_r(&secs, &tm) == nullptr || tm.tm_year + 1900 > 9999 ||
      tm.tm_year + 1900 < 0)
    return "Thu, 01 Jan 1970 00:00:00 GMT";
  std::string r = day_names[static_cast<size_t>(tm.tm_wday) % 7];
  r += ", ";
  r += two_digits(tm.tm_mday);
  r += ' ';
  r += month_names[static_cast<size_t>(tm.tm_mon) % 12];
  r += ' ';
  int year = tm.tm_year + 1900;
  r += two_digits(year / 100);
  r += two_digits(year % 100);
  r += ' ';
  r += two_digits(tm.tm_hour);
  r += ':';
  r += two_digits(tm.tm_min);
  r += ':';
  r += two_digits(tm.tm_sec);
  r += " GMT";
  return r;
}

std::optional<std::chrono::system_clock::time_point>
parse_rfc1123(std::string_view s) {
  // "Sun, 29 Nov 2026 18:59:20 GMT"; the day may have one or two digits.
  if (s.size() < 4 || s.substr(3, 2) != ", ") return std::nullopt;
  int wday = index_of(day_names, s.substr(0, 3));
  if (wday < 0) return std::nullopt;
  size_t pos = 5;
  int day = 0;
  size_t day_len = (pos + 1 < s.size() && s[pos + 1] == ' ') ? 1 : 2;
  if (!read_digits(s, pos, day_len, day)) return std::nullopt;
  pos += day_len;
  if (pos + 1 + 3 + 1 > s.size() || s[pos] != ' ' || s[pos + 4] != ' ')
    return std::nullopt;
  int month = index_of(month_names, s.substr(pos + 1, 3)) + 1;
  if (month == 0) return std::nullopt;
  pos += 5;
  int year = 0;
  int hour = 0;
  int minute = 0;
  int second = 0;
  if (!read_digits(s, pos, 4, year) || s.size() != pos + 4 + 9 + 4 ||
      s[pos + 4] != ' ' || !read_digits(s, pos + 5, 2, hour) ||
      s[pos + 7] != ':' || !read_digits(s, pos + 8, 2, minute) ||
      s[pos + 10] != ':' || !read_digits(s, pos + 11, 2, second) ||
      !iequals(s.substr(pos + 13), " GMT"))
    return std::nullopt;
  if (day < 1 || day > days_in_month(year, month) || hour > 23 || minute > 59 ||
      second > 59)
    return std::nullopt;
  auto days = days_from_civil(year, static_cast<unsigned>(month),
                              static_cast<unsigned>(day));
  // 1970-01-01 was a Thursday (index 4).
  if (((days % 7 + 7 + 4) % 7) != wday) return std::nullopt;
  auto since_epoch =
      std::chrono::seconds{days * 86400 + hour * 3600 + minute * 60 + second};
  // system_clock counts nanoseconds in 64 bits (years 1678..2262 with
  // libstdc++): a date outside that range cannot be represented.
  using clock_duration = std::chrono::system_clock::duration;
  constexpr auto max_seconds =
      std::chrono::duration_cast<std::chrono::seconds>(clock_duration::max());
  constexpr auto min_seconds =
      std::chrono::duration_cast<std::chrono::seconds>(clock_duration::min());
  if (since_epoch >= max_seconds || since_epoch <= min_seconds)
    return std::nullopt;
  return std::chrono::system_clock::time_point{
      std::chrono::duration_cast<std::chrono::system_clock::duration>(
          since_epoch)};
}

void sign_request(request& req, const master_key& key,
                  std::chrono::system_clock::time_point now, bool rid_based) {
  auto& hs = req.headers;
  hs.erase(std::remove_if(hs.begin(), hs.end(),
                          [](const auto& h) {
                            return iequals(h.first, "x-ms-date") ||
                                   iequals(h.first, "x-ms-version") ||
                                   iequals(h.first, "authorization");
                          }),
           hs.end());
  auto date = rfc1123_date(now);
  auto res = resource_for_path(req.target, rid_based);
  auto auth = authorization_header(key, req.method, res.type, res.link, date);
  hs.emplace_back("x-ms-date", date);
  hs.emplace_back("x-ms-version", std::string(api_version));
  hs.emplace_back("authorization", std::move(auth));
}

// -- hmac_signer
// ---------------------------------------------------------------

namespace {

// The signed type and link of a request path, as views into the path, for
// the common case of a path without %-escapes (resource_for_path decodes
// segments, which needs copies). Nothing when the path has an escape.
struct resource_view {
  std::string_view type;
  std::string_view link;
};

std::optional<resource_view> resource_view_for(std::string_view path,
                                               bool rid_based) {
  path = path.substr(0, path.find('?'));
  while (!path.empty() && path.front() == '/')
    path.remove_prefix(1);
  while (!path.empty() && path.back() == '/')
    path.remove_suffix(1);
  if (path.find('%') != std::string_view::npos) return std::nullopt;
  if (path.empty()) return resource_view{};
  auto segments =
      static_cast<size_t>(std::count(path.begin(), path.end(), '/')) + 1;
  auto last_slash = path.rfind('/');
  auto last =
      last_slash == std::string_view::npos ? path : path.substr(last_slash + 1);
  auto before_last = last_slash == std::string_view::npos
                         ? std::string_view{}
                         : path.substr(0, last_slash);
  resource_view r;
  std::string_view link;
  if (segments % 2 == 0) {
    auto slash = before_last.rfind('/');
    r.type = slash == std::string_view::npos ? before_last
                                             : before_last.substr(slash + 1);
    link = path;
  } else {
    r.type = last;
    link = before_last;
  }
  if (rid_based) {
    auto slash = link.rfind('/');
    link = slash == std::string_view::npos ? link : link.substr(slash + 1);
  }
  r.link = link;
  return r;
}

} // namespace

struct hmac_signer::impl {
  std::mutex mtx;
  EVP_MAC* mac = nullptr;
  EVP_MAC_CTX* ctx = nullptr;
  std::string error;
  // Reused between signings (under mtx).
  std::string to_sign;
  std::time_t date_second = -1;
  std::string date;

  ~impl() {
    EVP_MAC_CTX_free(ctx);
    EVP_MAC_free(mac);
  }

  // HMAC of `msg` into `out` (32 bytes); false if OpenSSL failed.
  bool mac_of(std::string_view msg, unsigned char* out) {
    if (ctx == nullptr) return false;
    size_t len = 0;
    // A null key re-initialises the context with the key it was given.
    return EVP_MAC_init(ctx, nullptr, 0, nullptr) == 1 &&
           EVP_MAC_update(ctx,
                          reinterpret_cast<const unsigned char*>(msg.data()),
                          msg.size()) == 1 &&
           EVP_MAC_final(ctx, out, &len, 32) == 1 && len == 32;
  }

  const std::string& date_of(std::chrono::system_clock::time_point now) {
    auto second = std::chrono::system_clock::to_time_t(now);
    if (second != date_second) {
      date = rfc1123_date(now);
      date_second = second;
    }
    return date;
  }
};

hmac_signer::hmac_signer(const master_key& key) : impl_(new impl) {
  static const unsigned char no_key = 0;
  const auto& k = key.bytes();
  impl_->mac = EVP_MAC_fetch(nullptr, "HMAC", nullptr);
  if (impl_->mac != nullptr) impl_->ctx = EVP_MAC_CTX_new(impl_->mac);
  if (impl_->ctx == nullptr) {
    impl_->error = "OpenSSL has no HMAC implementation";
    return;
  }
  char digest[] = "SHA256";
  OSSL_PARAM params[] = {
      OSSL_PARAM_construct_utf8_string(OSSL_MAC_PARAM_DIGEST, digest, 0),
      OSSL_PARAM_construct_end()};
  if (EVP_MAC_init(impl_->ctx, k.empty() ? &no_key : k.data(), k.size(),
                   params) != 1) {
    EVP_MAC_CTX_free(impl_->ctx);
    impl_->ctx = nullptr;
    impl_->error = "OpenSSL refused the key for HMAC-SHA256";
  }
}

hmac_signer::~hmac_signer() = default;

const std::string& hmac_signer::error() const {
  return impl_->error;
}

std::string hmac_signer::signature(std::string_view to_sign) {
  unsigned char mac[32];
  std::lock_guard<std::mutex> guard{impl_->mtx};
  if (!impl_->mac_of(to_sign, mac)) return {};
  return base64_encode(mac, sizeof(mac));
}

void hmac_signer::sign(request& req, std::chrono::system_clock::time_point now,
                       bool rid_based) {
  auto& hs = req.headers;
  hs.erase(std::remove_if(hs.begin(), hs.end(),
                          [](const auto& h) {
                            return iequals(h.first, "x-ms-date") ||
                                   iequals(h.first, "x-ms-version") ||
                                   iequals(h.first, "authorization");
                          }),
           hs.end());
  std::string auth;
  std::string date;
  {
    std::lock_guard<std::mutex> guard{impl_->mtx};
    if (impl_->ctx == nullptr) return;
    date = impl_->date_of(now);
    auto& ts = impl_->to_sign;
    ts.clear();
    append_lower(ts, req.method);
    ts += '\n';
    if (auto view = resource_view_for(req.target, rid_based)) {
      append_lower(ts, view->type);
      ts += '\n';
      if (rid_based)
        append_lower(ts, view->link);
      else
        ts += view->link;
    } else {
      auto res = resource_for_path(req.target, rid_based);
      append_lower(ts, res.type);
      ts += '\n';
      ts += res.link;
    }
    ts += '\n';
    append_lower(ts, date);
    ts += "\n\n";
    unsigned char mac[32];
    if (!impl_->mac_of(ts, mac)) return;
    // uri_component_encode("type=master&ver=1.0&sig=" + base64(mac)), built
    // in place: of the base64 alphabet only '+', '/' and '=' are escaped.
    static constexpr std::string_view prefix =
        "type%3Dmaster%26ver%3D1.0%26sig%3D";
    auth.reserve(prefix.size() + 44 * 3);
    auth += prefix;
    for (char c : base64_encode(mac, sizeof(mac))) {
      if (c == '+')
        auth += "%2B";
      else if (c == '/')
        auth += "%2F";
      else if (c == '=')
        auth += "%3D";
      else
        auth += c;
    }
  }
  hs.reserve(hs.size() + 3);
  hs.emplace_back("x-ms-date", std::move(date));
  hs.emplace_back("x-ms-version", std::string(api_version));
  hs.emplace_back("authorization", std::move(auth));
}

const char* to_string(auth_verdict x) {
  switch (x) {
  case auth_verdict::ok:
    return "ok";
  case auth_verdict::unauthorized:
    return "unauthorized";
  case auth_verdict::forbidden:
    return "forbidden";
  }
  return "unknown";
}

auth_check verify_authorization(const master_key& key, std::string_view verb,
                                std::string_view path,
                                std::string_view authorization_header_value,
                                std::string_view x_ms_date,
                                std::chrono::system_clock::time_point now,
                                bool rid_based) {
  using v = auth_verdict;
  if (authorization_header_value.empty())
    return deny(v::unauthorized, "missing authorization header");
  auto decoded = percent_decode(authorization_header_value);
  if (!decoded)
    return deny(v::unauthorized,
                "authorization header has an invalid %-escape");
  std::optional<std::string_view> type, ver, sig;
  std::string_view rest = *decoded;
  while (!rest.empty()) {
    auto amp = rest.find('&');
    auto pair = rest.substr(0, amp);
    rest = amp == std::string_view::npos ? std::string_view{}
                                         : rest.substr(amp + 1);
    auto eq = pair.find('=');
    if (eq == std::string_view::npos)
      return deny(v::unauthorized,
                  "authorization header is not type=master&ver=1.0&sig=...");
    auto name = pair.substr(0, eq);
    auto value = pair.substr(eq + 1);
    auto* slot = name == "type"  ? &type
                 : name == "ver" ? &ver
                 : name == "sig" ? &sig
                                 : nullptr;
    if (slot == nullptr)
      continue; // unknown fields are ignored, as the gateway does
    if (*slot)
      return deny(v::unauthorized,
                  "authorization header repeats '" + std::string(name) + "'");
    *slot = value;
  }
  if (!type || !iequals(*type, "master"))
    return deny(v::unauthorized, "authorization type is not 'master'");
  if (!ver || *ver != "1.0")
    return deny(v::unauthorized, "authorization version is not '1.0'");
  if (!sig || sig->empty())
    return deny(v::unauthorized, "authorization header has no signature");
  auto presented = base64_decode(*sig);
  if (!presented || presented->size() != 32)
    return deny(v::unauthorized,
                "signature is not a base64 HMAC-SHA256 (32 bytes)");
  if (x_ms_date.empty())
    return deny(v::unauthorized, "missing x-ms-date header");
  auto date = parse_rfc1123(x_ms_date);
  if (!date)
    return deny(v::unauthorized, "x-ms-date is not an RFC 1123 date like "
                                 "'Sun, 29 Nov 2026 18:59:20 GMT'");
  auto res = resource_for_path(path, rid_based);
  auto expected =
      hmac_sha256(key, string_to_sign(verb, res.type, res.link, x_ms_date));
  if (expected.size() != presented->size() ||
      CRYPTO_memcmp(expected.data(), presented->data(), expected.size()) != 0)
    return deny(v::unauthorized, "signature mismatch for " + lower(verb) +
                                     " type '" + lower(res.type) + "' link '" +
                                     res.link +
                                     "' (wrong key or altered request)");
  auto skew = *date > now ? *date - now : now - *date;
  if (skew > allowed_clock_skew)
    return deny(v::forbidden,
                "x-ms-date is " +
                    std::to_string(
                        std::chrono::duration_cast<std::chrono::seconds>(skew)
                            .count()) +
                    " s away from the server clock (allowed: " +
                    std::to_string(allowed_clock_skew.count()) + " min)");
  return auth_check{v::ok, {}};
}

} // namespace georoute::transport
