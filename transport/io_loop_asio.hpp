#pragma once

// Transport-internal: the io_context behind `io_loop`. Only translation units
// that already include Asio include this header.

#include "georoute/transport/io_loop.hpp"

#include <atomic>
#include <boost/asio/executor_work_guard.hpp>
#include <boost/asio/io_context.hpp>
#include <mutex>
#include <thread>

namespace georoute::transport {

struct io_loop::impl {
  // One thread drives it at a time (the loop thread; at shutdown, whoever
  // becomes the driver after it), and every socket operation of the HTTP
  // client runs on that thread (other threads post to it). So the reactor
  // needs no lock per socket operation; posting from other threads and
  // registering descriptors and timers keep theirs.
  boost::asio::io_context ioc{BOOST_ASIO_CONCURRENCY_HINT_UNSAFE_IO};
  // The loop never runs out of work by itself: run_one blocks instead of
  // returning when nothing is pending.
  boost::asio::executor_work_guard<boost::asio::io_context::executor_type>
      guard{boost::asio::make_work_guard(ioc)};
  std::mutex driver_mtx;
  std::atomic<std::thread::id> driver{};
};

inline boost::asio::io_context& io_context_of(io_loop& loop) {
  return loop.internals().ioc;
}

} // namespace georoute::transport
