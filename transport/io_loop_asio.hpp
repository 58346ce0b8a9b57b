#pragma once

// Transport-internal: the io_context behind `io_loop`. Only translation units
// that already include Asio include this header.

#include "transport/io_loop.hpp"

#include <atomic>
#include <boost/asio/executor_work_guard.hpp>
#include <boost/asio/io_context.hpp>
#include <mutex>
#include <thread>

namespace georoute::transport {

struct io_loop::impl {
  boost::asio::io_context ioc{1}; // one thread runs it: Asio may skip locks
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
