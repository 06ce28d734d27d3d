// The generator behind opgraph's random ops (rand, randn, randperm,
// native_dropout). Each call of an op takes the next block of a counter-based
// stream: the value of element i depends only on the seed and its counter,
// so results after manual_seed are the same whatever the thread count.
#pragma once

#include <cstdint>

namespace opgraph {

// Restarts the stream from `seed`, as torch.manual_seed does. A process that
// never calls it starts from a fixed seed.
void manual_seed(uint64_t seed);

// The seed and first counter of `count` counters reserved for one call.
struct RandomBlock {
  uint64_t seed, offset;
};
RandomBlock reserve_random(uint64_t count);

}  // namespace opgraph
