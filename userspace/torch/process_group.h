// SPDX-License-Identifier: MIT
/* torch.distributed's "maia" backend (process_group.cpp), for its Python binding. */
#pragma once

#include <torch/csrc/distributed/c10d/Backend.hpp>
#include <torch/csrc/distributed/c10d/Store.hpp>

#include <chrono>

namespace maia_torch {

/* Rank rank of size processes, one device each; the communicator's id goes through store. */
__attribute__((visibility("default")))
c10::intrusive_ptr<c10d::Backend> new_process_group(const c10::intrusive_ptr<c10d::Store> &store,
						    int rank, int size,
						    std::chrono::milliseconds timeout);

} // namespace maia_torch
