// BPE merging as Hugging Face's tokenizers does it: repeatedly the pair of
// lowest rank, the leftmost of equals, over a linked list of symbols, with a
// heap of candidate pairs whose stale entries are skipped as they come up.
#include "llm/bpe.h"

#include <functional>
#include <queue>

#include "llm/unicode.h"
#include "opgraph/core/error.h"

namespace opgraph::llm {

BpeModel::BpeModel(Vocabulary vocabulary, const std::vector<std::pair<std::string, std::string>>& merges,
                   BpeOptions options, std::string_view source)
    : vocabulary_(std::move(vocabulary)), options_(options) {
  for (size_t rank = 0; rank < merges.size(); ++rank) {
    const auto& [left, right] = merges[rank];
    const std::optional<int32_t> left_id = find(left), right_id = find(right), result_id = find(left + right);
    OPGRAPH_CHECK(left_id && right_id && result_id, source, ": merge ", rank, " ('", left, "' '", right, "'): '",
                  !left_id    ? left
                  : !right_id ? right
                              : left + right,
                  "' is not in the vocabulary");
    merges_.emplace(pair_key(*left_id, *right_id), Merge{static_cast<int32_t>(rank), *result_id});
  }
}

std::optional<int32_t> BpeModel::find(std::string_view token) const {
  const auto it = vocabulary_.find(token);
  return it == vocabulary_.end() ? std::nullopt : std::optional<int32_t>(it->second);
}

void BpeModel::tokenize(std::string_view word, std::vector<int32_t>& ids) const {
  if (options_.ignore_merges) {
    if (const std::optional<int32_t> id = find(word)) {
      ids.push_back(*id);
      return;
    }
  }
  // A merged symbol keeps its left part's slot; `id` -1 marks a slot merged away.
  struct Symbol {
    int32_t id;
    int prev;
    int next;
  };
  std::vector<Symbol> symbols;
  for (size_t position = 0; position < word.size();) {
    const size_t length = read_utf8(word, position).length;
    std::optional<int32_t> id = find(word.substr(position, length));
    position += length;
    if (!id) {
      if (!options_.unknown_id) continue;
      if (options_.fuse_unknown && !symbols.empty() && symbols.back().id == *options_.unknown_id) continue;
      id = options_.unknown_id;
    }
    const int index = static_cast<int>(symbols.size());
    symbols.push_back({*id, index - 1, -1});
    if (index > 0) symbols[index - 1].next = index;
  }

  struct Candidate {
    int32_t rank;
    int position;
    int32_t result_id;
    bool operator>(const Candidate& other) const {
      return rank != other.rank ? rank > other.rank : position > other.position;
    }
  };
  std::priority_queue<Candidate, std::vector<Candidate>, std::greater<>> candidates;
  const auto add_candidate = [&](int position) {
    const int next = symbols[position].next;
    if (next < 0) return;
    const auto it = merges_.find(pair_key(symbols[position].id, symbols[next].id));
    if (it != merges_.end()) candidates.push({it->second.rank, position, it->second.result_id});
  };
  for (int i = 0; i < static_cast<int>(symbols.size()); ++i) add_candidate(i);

  while (!candidates.empty()) {
    const Candidate top = candidates.top();
    candidates.pop();
    Symbol& left = symbols[top.position];
    if (left.id < 0 || left.next < 0) continue;
    Symbol& right = symbols[left.next];
    const auto it = merges_.find(pair_key(left.id, right.id));
    if (it == merges_.end() || it->second.result_id != top.result_id) continue;
    left.id = top.result_id;
    right.id = -1;
    left.next = right.next;
    if (left.next >= 0) symbols[left.next].prev = top.position;
    if (left.prev >= 0) add_candidate(left.prev);
    add_candidate(top.position);
  }
  for (int i = symbols.empty() ? -1 : 0; i >= 0; i = symbols[i].next) ids.push_back(symbols[i].id);
}

}  // namespace opgraph::llm
