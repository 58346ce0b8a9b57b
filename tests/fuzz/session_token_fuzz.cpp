// Fuzzes the x-ms-session-token parser (actors/policy/session_token.hpp), a
// header every gateway response carries. The input is up to two header values
// separated by a newline. Invariants: never a crash; a problem has a message;
// render -> parse gives the same tokens; merge is commutative and its result
// covers both inputs (the rule the session container relies on).

#include "georoute/actors/policy/session_token.hpp"
#include "tests/fuzz/fuzz_check.hpp"

namespace {

using namespace georoute;

void check_set(const session_token_set& set) {
  auto text = render(set);
  auto again = parse_session_header(text);
  FUZZ_CHECK(again.ok(), "rendered header does not parse: " + text);
  FUZZ_CHECK(*again == set, "render/parse changed the tokens: " + text);
  for (const auto& [range, token] : set) {
    FUZZ_CHECK(!range.empty(), "empty range id");
    auto one = parse_vector_token(render(token));
    FUZZ_CHECK(one.ok() && *one == token, "token round trip: " + render(token));
    FUZZ_CHECK(merge(token, token) == token, "merge is not idempotent");
  }
}

} // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  auto text = fuzz::as_text(data, size);
  auto nl = text.find('\n');
  auto first = text.substr(0, nl);
  auto second =
      nl == std::string_view::npos ? std::string_view{} : text.substr(nl + 1);

  auto token = parse_vector_token(first);
  if (!token) {
    FUZZ_CHECK(!token.error().what.empty(), "a problem without a message");
  } else {
    auto again = parse_vector_token(render(*token));
    FUZZ_CHECK(again.ok() && *again == *token,
               "token round trip: " + render(*token));
  }

  auto a = parse_session_header(first);
  auto b = parse_session_header(second);
  if (!a) FUZZ_CHECK(!a.error().what.empty(), "a problem without a message");
  if (a) check_set(*a);
  if (b) check_set(*b);
  if (a && b) {
    auto ab = *a;
    merge_into(ab, *b);
    auto ba = *b;
    merge_into(ba, *a);
    FUZZ_CHECK(ab == ba, "merge_into is not commutative: " + render(ab) +
                             " vs " + render(ba));
    check_set(ab);
    for (const auto* side : {&*a, &*b})
      for (const auto& [range, t] : *side) {
        auto it = ab.find(range);
        FUZZ_CHECK(it != ab.end(), "merge lost range " + range);
        FUZZ_CHECK(covers(it->second, t), "merge of range " + range + " (" +
                                              render(it->second) +
                                              ") does not cover " + render(t));
      }
  }
  return 0;
}
