#pragma once

// The drill's last check: every write an engine acknowledged is read back
// from the emulator itself. Only a definitive answer decides: 200 means the
// write is there, 404 means it is lost. Anything else (a timeout, a reset,
// 408, 429, 5xx) says nothing about the write, only about the read-back:
// under overload the read-back itself may time out, and calling that a loss
// would be a false alarm. Such reads are asked again, after a pause, for a
// bounded number of rounds; what stays undecided is reported as unverified,
// apart from the losses.

#include "georoute/transport/outcome.hpp"

#include <chrono>
#include <cstdint>
#include <functional>
#include <map>
#include <string>
#include <vector>

namespace georoute::drill {

enum class readback_verdict { found, missing, undecided };

/// What one read-back answer says about the write.
readback_verdict classify_readback(const transport::outcome& o);

/// The tally of a verification.
struct readback_result {
  uint64_t checked = 0;    ///< acknowledged writes read back
  uint64_t found = 0;      ///< 200
  uint64_t missing = 0;    ///< 404: lost
  uint64_t unverified = 0; ///< still undecided after the last round
  uint64_t rounds = 0;     ///< rounds sent (1 when the first one decided all)
  /// Found writes that carried a tracking id, and those whose stored
  /// document carries another one (somebody else's write: overwritten or
  /// duplicated).
  uint64_t tracked = 0;
  uint64_t foreign = 0;
  std::string foreign_example;    ///< "id: stored <tracking id>"
  std::string missing_example;    ///< "id: what came back"
  std::string unverified_example; ///< "id: what came back last"
};

/// Sends one round of requests and answers in the same order.
using send_round = std::function<std::vector<transport::outcome>(
    std::vector<transport::request>)>;

/// Reads back `reads` (one request per id, `ids` in the same order): the
/// first round sends all, each later round only the undecided ones, after
/// `pause`; at most `max_rounds` rounds.
/// `tracking` (empty, or one per id; "" for none): a found write's stored
/// document must carry that `_trackingId`.
readback_result verify_writes(const std::vector<std::string>& ids,
                              const std::vector<transport::request>& reads,
                              const send_round& send, int max_rounds,
                              std::chrono::milliseconds pause,
                              const std::vector<std::string>& tracking = {});

/// The two documents a transactional batch of the workload upserts (`a` and
/// `b`, one partition key) both carry the batch's own `batch` property: read
/// back, they must come from one batch, or be both absent (all or nothing).
enum class batch_pair_verdict {
  whole,     ///< both found, carrying the same batch
  absent,    ///< both 404: no batch of the pair was applied
  torn,      ///< one without the other, or from two batches
  undecided, ///< either answer decides nothing (ask again)
};

/// What the answers for a pair's documents say; `batch` (when not null)
/// gets the batch both carry when whole.
batch_pair_verdict classify_batch_pair(const transport::outcome& a,
                                       const transport::outcome& b,
                                       std::string* batch = nullptr);

/// The tally of the pairs' read-back.
struct batch_pair_result {
  uint64_t pairs = 0;
  uint64_t whole = 0;
  uint64_t absent = 0;
  uint64_t torn = 0;
  uint64_t undecided = 0; ///< still undecided after the last round
  uint64_t rounds = 0;
  std::string torn_example; ///< "pair: what each document said"
  std::string undecided_example;
  /// Per whole pair, the batch its documents carry.
  std::map<std::string, std::string> batch_of;
};

/// Reads back every pair (`pairs`, and two requests per pair in `reads`:
/// its `a` then its `b` document), in rounds like `verify_writes`.
batch_pair_result
verify_batch_pairs(const std::vector<std::string>& pairs,
                   const std::vector<transport::request>& reads,
                   const send_round& send, int max_rounds,
                   std::chrono::milliseconds pause);

/// "timeout connect to ..." or "503 {...}", short.
std::string describe_outcome_short(const transport::outcome& o);

} // namespace georoute::drill
