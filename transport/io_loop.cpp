#include "georoute/transport/io_loop.hpp"

#include "georoute/transport/io_loop_asio.hpp"

#include <boost/asio/post.hpp>
#include <utility>

namespace georoute::transport {

io_loop::io_loop() : impl_(std::make_unique<impl>()) {}

io_loop::~io_loop() = default;

bool io_loop::on_loop_thread() const noexcept {
  return impl_->driver.load(std::memory_order_relaxed) ==
         std::this_thread::get_id();
}

void io_loop::become_driver() {
  impl_->driver_mtx.lock();
  impl_->driver.store(std::this_thread::get_id());
}

bool io_loop::try_become_driver() {
  if (!impl_->driver_mtx.try_lock()) return false;
  impl_->driver.store(std::this_thread::get_id());
  return true;
}

void io_loop::stop_driving() {
  impl_->driver.store(std::thread::id{});
  impl_->driver_mtx.unlock();
}

size_t io_loop::poll() {
  // A previous run may have left the context stopped (it never is here: the
  // work guard keeps it from running out of work), restart is cheap.
  if (impl_->ioc.stopped()) impl_->ioc.restart();
  return impl_->ioc.poll();
}

size_t io_loop::run_one_until(time_point until) {
  if (impl_->ioc.stopped()) impl_->ioc.restart();
  return impl_->ioc.run_one_until(until);
}

size_t io_loop::run_one() {
  if (impl_->ioc.stopped()) impl_->ioc.restart();
  return impl_->ioc.run_one();
}

void io_loop::post(std::function<void()> f) {
  boost::asio::post(impl_->ioc, std::move(f));
}

} // namespace georoute::transport
