// SPDX-License-Identifier: MIT
/*
 * maia._maia_dist: hands torch.distributed the "maia" backend
 * (../process_group.cpp, in _maia_torch.so) as torch's own pybind type
 * c10d.Backend: a c10d Backend cannot go through torch.ops, so this is the
 * one Python extension in C++. maia/distributed.py registers it.
 */
#include <torch/csrc/utils/pybind.h>

#include "../process_group.h"

PYBIND11_MODULE(_maia_dist, m)
{
	m.def("new_backend",
	      [](const c10::intrusive_ptr<c10d::Store> &store, int rank, int size, double timeout_s) {
		      return maia_torch::new_process_group(
			      store, rank, size,
			      std::chrono::milliseconds(static_cast<int64_t>(timeout_s * 1000)));
	      },
	      pybind11::arg("store"), pybind11::arg("rank"), pybind11::arg("size"),
	      pybind11::arg("timeout_s"),
	      "The maia backend of rank `rank` of `size` processes (the communicator's id through `store`).");
}
