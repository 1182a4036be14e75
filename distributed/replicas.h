// Replicas: making the ranks of a data-parallel run start from the same state.
//   broadcast_module(model, group)    rank 0's parameters and buffers into every rank's model,
//                                     after checking that every rank built the same model (the
//                                     names, shapes and dtypes; an Error naming the first
//                                     difference otherwise)
//   broadcast_seed(seed, group)       rank 0's seed (the generators derived from it then agree)
//   mean_over_ranks(values, group)    the mean over the ranks of each number (metrics)
//
// Deliberately does not: broadcast optimizer state (a resumed run's ranks each read the same
// checkpoint; docs/distributed.md).
#pragma once

#include <cstdint>
#include <vector>

#include "distributed/process_group.h"
#include "nn/module.h"

namespace posgrad::distributed {

void broadcast_module(Module& model, ProcessGroup& group);
uint64_t broadcast_seed(uint64_t seed, ProcessGroup& group);
std::vector<double> mean_over_ranks(std::vector<double> values, ProcessGroup& group);

}  // namespace posgrad::distributed
