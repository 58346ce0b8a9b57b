// timeout_cancels (actors/timeout_cancels.hpp): an actor that answers through
// it takes its callers' request timeouts out of CAF's clock, 16 at a time on
// CAF's own clock. On the deterministic test coordinator, whose clock keeps
// every timeout until it fires or is cancelled, and no time passes.

#include "georoute/actors/timeout_cancels.hpp"
#include "tests/actors/actor_fixture.hpp"

#include <memory>

namespace georoute::test {
namespace {

using namespace std::chrono_literals;

struct responder_state {
  timeout_cancels cancels;
};

caf::behavior responder(caf::stateful_actor<responder_state>* self) {
  self->state.cancels = timeout_cancels{self->home_system()};
  return {[self](int32_t x) -> caf::result<int32_t> {
    auto rp = self->make_response_promise();
    self->state.cancels.answer(self, rp, x);
    return rp;
  }};
}

class TimeoutCancels : public testing::Test {
protected:
  test_config cfg;
  caf::actor_system sys{cfg};
  caf::scheduler::test_coordinator& sched =
      dynamic_cast<caf::scheduler::test_coordinator&>(sys.scheduler());

  void TearDown() override { stop_all(); }

  void stop_all() {
    for (auto& a : actors)
      caf::anon_send_exit(a, caf::exit_reason::user_shutdown);
    actors.clear();
    sched.run();
  }

  /// `n` requests from one caller, each with a 10 s timeout, all answered;
  /// the request timeouts the clock still holds. The caller stays alive: an
  /// actor that ends takes its timeouts with it.
  size_t timeouts_left(int n, int& answered) {
    auto count = std::make_shared<int>(0);
    auto to = sys.spawn(responder);
    auto caller = sys.spawn([=](caf::event_based_actor* self) {
      for (int32_t i = 0; i < n; ++i)
        self->request(to, 10s, i).then([=](int32_t) { ++*count; });
      return caf::behavior{[](caf::ok_atom) {}};
    });
    actors.push_back(to);
    actors.push_back(caller);
    sched.run();
    answered = *count;
    return sched.clock().schedule().size();
  }

  std::vector<caf::actor> actors;
};

TEST_F(TimeoutCancels, AnsweredRequests_TheirTimeoutsLeaveTheClockInBatches) {
  struct row {
    int requests;
    size_t left; // the answers short of a full batch keep their timeouts
  };
  for (auto [requests, left] :
       {row{1, 1}, row{15, 15}, row{16, 0}, row{17, 1}, row{40, 8}}) {
    int answered = 0;
    EXPECT_EQ(timeouts_left(requests, answered), left)
        << requests << " requests";
    EXPECT_EQ(answered, requests);
    stop_all();
  }
}

} // namespace
} // namespace georoute::test
