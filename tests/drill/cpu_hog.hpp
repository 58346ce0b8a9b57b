#pragma once

// A reproducible overload: busy threads in the drill's own process that
// compete for the cores with the engines, the callers and the emulator, at
// the same priority. `georoute drill --soak=... --cpu-hog=4` on 2 cores
// overloads the machine: the case where read-backs time out and every
// acknowledged write must still be verified, not counted as lost.

#include <atomic>
#include <cstdint>
#include <thread>
#include <vector>

namespace georoute::drill {

class cpu_hog {
public:
  explicit cpu_hog(uint32_t threads) {
    for (uint32_t i = 0; i < threads; ++i)
      threads_.emplace_back([this, i] {
        uint64_t x = 0x9e3779b97f4a7c15ULL + i;
        while (!stop_.load(std::memory_order_relaxed)) {
          for (int k = 0; k < 4096; ++k)
            x = x * 6364136223846793005ULL + 1442695040888963407ULL;
          sink_.fetch_xor(x, std::memory_order_relaxed);
        }
      });
  }
  ~cpu_hog() {
    stop_ = true;
    for (auto& t : threads_)
      t.join();
  }
  cpu_hog(const cpu_hog&) = delete;
  cpu_hog& operator=(const cpu_hog&) = delete;

  uint32_t threads() const { return static_cast<uint32_t>(threads_.size()); }

private:
  std::atomic<bool> stop_{false};
  std::atomic<uint64_t> sink_{0};
  std::vector<std::thread> threads_;
};

} // namespace georoute::drill
