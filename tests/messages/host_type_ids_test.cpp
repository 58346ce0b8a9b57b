// A host program's own CAF type-ID block next to georoute's (issue 21, item
// 4): the host starts its block where georoute's ends
// (messages/types.hpp), registers both, and its actors exchange host
// messages and georoute messages in one actor system; a message holding
// both kinds survives CAF's serializer, which looks every element up by its
// registered type. A host block that started at caf::first_custom_type_id,
// as CAF's examples do, would not compile next to georoute's: both would
// define caf::type_by_id for the same IDs.

#include "georoute/messages/interfaces.hpp"
#include "georoute/messages/types.hpp"

#include <caf/all.hpp>
#include <gtest/gtest.h>

namespace host_app {

// What a host's own actors send each other.
struct order {
  std::string item;
  int32_t quantity = 0;
};

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, order& x) {
  return f(caf::meta::type_name("host_app::order"), x.item, x.quantity);
}

inline bool operator==(const order& x, const order& y) {
  return x.item == y.item && x.quantity == y.quantity;
}

} // namespace host_app

CAF_BEGIN_TYPE_ID_BLOCK(embedding_host, caf::id_block::georoute::end)
CAF_ADD_TYPE_ID(embedding_host, (host_app::order))
CAF_END_TYPE_ID_BLOCK(embedding_host)

static_assert(caf::id_block::embedding_host::begin ==
                  caf::id_block::georoute_last_type_id + 1,
              "the host's block starts right after georoute's");
static_assert(caf::type_id<host_app::order>::value >
                  caf::type_id<georoute::query_plan_stats>::value,
              "no host ID inside georoute's block");

namespace {

using namespace georoute;
using namespace std::chrono_literals;

struct host_config : caf::actor_system_config {
  host_config() {
    register_types(*this);
    add_message_types<caf::id_block::embedding_host>();
    set("scheduler.max-threads", 1);
  }
};

// A host actor that speaks both: it confirms host orders and echoes a
// georoute region mark.
caf::behavior desk(caf::event_based_actor*) {
  return {
      [](host_app::order o) {
        ++o.quantity;
        return o;
      },
      [](mark_atom, region_mark m) { return m; },
  };
}

TEST(HostTypeIds, AHostBlockAfterGeoroutes_BothKindsOfMessageTravel) {
  host_config cfg;
  caf::actor_system sys{cfg};
  auto d = sys.spawn(desk);
  caf::scoped_actor self{sys};

  host_app::order sent{"tea", 2};
  std::optional<host_app::order> confirmed;
  self->request(d, 5s, sent)
      .receive([&](host_app::order& o) { confirmed = o; },
               [&](caf::error& e) { FAIL() << sys.render(e); });
  ASSERT_TRUE(confirmed);
  EXPECT_EQ(*confirmed, (host_app::order{"tea", 3}));

  region_mark mark{"http://127.0.0.1:1/", true, false};
  std::optional<region_mark> echoed;
  self->request(d, 5s, mark_atom_v, mark)
      .receive([&](region_mark& m) { echoed = m; },
               [&](caf::error& e) { FAIL() << sys.render(e); });
  ASSERT_TRUE(echoed);
  EXPECT_EQ(echoed->endpoint, mark.endpoint);

  // Both registered in one system: a message with one of each serializes
  // and comes back whole.
  auto msg = caf::make_message(sent, mark);
  std::vector<char> buf;
  caf::binary_serializer sink{sys, buf};
  ASSERT_FALSE(sink(msg)) << "a host or georoute type is not registered";
  caf::message back;
  caf::binary_deserializer source{sys, buf};
  ASSERT_FALSE(source(back));
  ASSERT_TRUE((back.match_elements<host_app::order, region_mark>()));
  EXPECT_EQ(back.get_as<host_app::order>(0), sent);
  EXPECT_EQ(back.get_as<region_mark>(1).endpoint, mark.endpoint);
  caf::anon_send_exit(d, caf::exit_reason::user_shutdown);
}

} // namespace
