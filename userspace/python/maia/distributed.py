# SPDX-License-Identifier: MIT
"""maia.distributed: torch.distributed's "maia" backend (userspace/torch/process_group.cpp).

Importing it registers the backend for maia tensors, so that, one process per
device (torchrun, mpirun or forked processes, each on its own device)::

    import maia.distributed
    torch.maia.set_device(local_rank)
    torch.distributed.init_process_group("maia", ...)   # env://, a store, ...

runs all_reduce (sum, avg, max, min over float32 and bfloat16), all_gather,
reduce_scatter, broadcast and barrier on the devices through libmaia's
collective library, and DistributedDataParallel over it. The communicator is
made at the first collective, on the device of its tensor; its id goes from
rank 0 to the others through the process group's store. The ranks' devices
must be cabled as a ring in rank order (Documentation/collectives.rst). A
call returns once its collective is queued on the device, ahead of every
later op on it (host reads included); Work.wait() waits on the host and
raises libmaia's message if it failed (Documentation/python.rst).
"""
import torch
import torch.distributed as dist

import maia.torch  # noqa: F401  (the maia device and _maia_torch.so first)
from maia import _maia_dist

BACKEND = "maia"


def _create(store, rank, size, timeout):
    return _maia_dist.new_backend(store, rank, size, timeout.total_seconds())


# Once per interpreter: torch refuses a name registered twice.
if not hasattr(dist.Backend, BACKEND.upper()):
    dist.Backend.register_backend(BACKEND, _create, devices=[BACKEND])
