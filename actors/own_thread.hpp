#pragma once

// What the engine loop (actors/engine_loop.hpp) and a home thread
// (actors/home_thread.hpp) share: running CAF actors, and the io_loop's
// handlers, on a thread of georoute's own.

#include <caf/execution_unit.hpp>
#include <caf/resumable.hpp>
#include <cstddef>

namespace georoute::detail {

/// Runs `job` once on `unit`, as CAF's workers do: a job that wants to run
/// again keeps its reference and is handed to `requeue`; one that is done
/// or waits for a message gives its reference back. False when the job
/// told the thread to end (`shutdown_execution_unit`).
template <class Requeue>
bool resume_job(caf::resumable* job, caf::execution_unit* unit,
                size_t max_throughput, Requeue&& requeue) {
  switch (job->resume(unit, max_throughput)) {
  case caf::resumable::resume_later:
    requeue(job);
    break;
  case caf::resumable::done:
  case caf::resumable::awaiting_message:
    intrusive_ptr_release(job);
    break;
  case caf::resumable::shutdown_execution_unit:
    return false;
  }
  return true;
}

/// Runs `f`, a step of the io_loop that runs other code's handlers (the
/// HTTP client's are guarded, a throwing one is a bug there): the thread
/// survives it.
template <class F>
void guarded(F&& f) noexcept {
  try {
    f();
  } catch (...) {
  }
}

} // namespace georoute::detail
