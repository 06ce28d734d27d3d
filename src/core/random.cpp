// The state of the generator behind the random ops (opgraph/core/random.h):
// a seed and the next free counter, shared by every call in the process.
#include "opgraph/core/random.h"

#include <atomic>

namespace opgraph {
namespace {

// PyTorch's default seed, for a process that never seeds.
constexpr uint64_t kDefaultSeed = 67280421310721;

std::atomic<uint64_t> seed_state{kDefaultSeed};
std::atomic<uint64_t> offset_state{0};

}  // namespace

void manual_seed(uint64_t seed) {
  seed_state.store(seed);
  offset_state.store(0);
}

RandomBlock reserve_random(uint64_t count) { return {seed_state.load(), offset_state.fetch_add(count)}; }

}  // namespace opgraph
