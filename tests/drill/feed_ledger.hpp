#pragma once

// What the drill's change-feed consumer applied, and how that is judged
// against the collection once the run is over. Pure (nlohmann/json only):
// the consumer actor (feed_consumer.hpp) feeds it pages, the tests feed it
// made-up ones.
//
// The consumer stands in for an application that keeps a copy of the
// collection up to date from the feed. Per document it keeps the newest
// version it applied (`_lsn`, `_etag`); per partition key the newest `_lsn`
// it applied. That is all it needs to judge the feed, and it is bounded by
// the number of documents, not by the length of the run.
//
// Applying one document of a page:
// - the same document at the `_lsn` it already has: a duplicate (a page
//   applied twice, say after a resume from a continuation that was behind);
// - the same document at a lower `_lsn`: an order violation (it went back);
// - a document whose `_lsn` is below the last one applied for its partition
//   key: an order violation (the feed is ordered per partition key). Two
//   documents of one key may share an `_lsn` (one transaction, one change),
//   so an equal `_lsn` of another document is not one.
// Neither a duplicate nor a document that went back replaces what the ledger
// holds; a document out of order in its key is applied (an application
// would) and counted.

#include <cstdint>
#include <optional>
#include <set>
#include <string>
#include <unordered_map>
#include <vector>

namespace georoute::drill {

/// One document of a change-feed page, as the consumer applies it.
struct feed_item {
  std::string id;
  std::string pk; ///< the partition key property's value (a string's text)
  int64_t lsn = 0;
  std::string etag;
};

/// The documents of a page, and those that could not be applied.
struct parsed_page {
  std::vector<feed_item> items;
  /// Not an object with a string `id`, a partition key, an integer `_lsn`
  /// (or one in a string) and a string `_etag`; or the page is not an array.
  uint64_t malformed = 0;
  std::string malformed_example;
};

/// Reads a page's documents (JSON array text); the partition key is the
/// property `pk_property` (the drill's collection: "pk").
parsed_page parse_feed_page(const std::string& documents,
                            const std::string& pk_property = "pk");

/// What applying some documents did.
struct feed_effect {
  uint64_t applied = 0;
  uint64_t duplicates = 0;
  uint64_t order_violations = 0;
};

/// Everything applied so far, counted.
struct feed_counts {
  uint64_t pages = 0; ///< pages applied, the caught-up (empty) ones too
  uint64_t pages_with_documents = 0;
  uint64_t documents = 0; ///< documents applied
  uint64_t duplicates = 0;
  uint64_t order_violations = 0;
  uint64_t malformed = 0;
  /// The first of each, described ("S7-w3-12 (pk p7) at _lsn 412 again").
  std::string duplicate_example;
  std::string order_example;
  std::string malformed_example;
};

/// The documents a consumer applied (see the file comment).
class feed_ledger {
public:
  /// The newest version of a document the ledger applied.
  struct version {
    int64_t lsn = 0;
    std::string etag;
  };

  /// Applies `items` in their order.
  feed_effect apply(const std::vector<feed_item>& items);
  /// Parses and applies one page (its documents' JSON array) and counts it.
  feed_effect apply_page(const std::string& documents,
                         const std::string& pk_property = "pk");

  const feed_counts& counts() const { return counts_; }
  /// The newest applied version of the document `id` in partition `pk`.
  const version* find(const std::string& id, const std::string& pk) const;
  /// Documents ("id\npk") with their newest applied version.
  const std::unordered_map<std::string, version>& documents() const {
    return docs_;
  }
  /// About how many heap bytes the ledger holds.
  size_t bytes_held() const;

private:
  struct key_state {
    int64_t lsn = 0;
  };
  std::unordered_map<std::string, version> docs_;
  std::unordered_map<std::string, key_state> keys_;
  feed_counts counts_;
  size_t string_bytes_ = 0;
};

/// A document of the collection at the end, from a plain read feed.
struct final_document {
  std::string id;
  std::string pk;
  std::string etag;
};

/// Reads one page of a plain read feed (`{"Documents": [...]}`); a problem
/// text when the body is not one or a document lacks `id`, the partition
/// key or `_etag`.
std::optional<std::vector<final_document>>
parse_read_feed_page(const std::string& body, std::string& problem,
                     const std::string& pk_property = "pk");

/// The ledger against the collection's final state.
struct feed_verdict {
  /// Acknowledged writes ("id\npk"), and those whose document never
  /// appeared in the feed.
  uint64_t acknowledged = 0;
  uint64_t acknowledged_missing = 0;
  std::string acknowledged_example;
  /// The documents the collection holds at the end; those the ledger never
  /// applied at all, and those whose final version (`_etag`) it did not
  /// apply (it holds an older one).
  uint64_t final_documents = 0;
  uint64_t final_never_seen = 0;
  uint64_t final_stale = 0;
  std::string final_example;
  /// Documents applied that the collection does not hold (the drill
  /// deletes nothing, so there should be none; reported, not judged).
  uint64_t phantoms = 0;
  std::string phantom_example;
};

/// Compares: every acknowledged write's document appeared in the feed, and
/// every document's final version was applied.
feed_verdict judge_feed(const feed_ledger& ledger,
                        const std::vector<final_document>& final_state,
                        const std::set<std::string>& acknowledged);

} // namespace georoute::drill
