// SPDX-License-Identifier: MIT
/*
 * Mailbox (maia/hw/mbox.h): the control processor's commands. Every one is
 * short and touches no host memory, so the device answers at once, from the
 * MMIO write that starts it, whatever its engines are running: a long job
 * never holds up SET_CONTEXT or TLB_INVALIDATE (it used to, when the worker
 * ran them between jobs, and opening the device then timed out). Completion
 * clears BUSY, publishes the result and raises MAIA_INT_MBOX_DONE. A crashed
 * firmware (MAIA_INJECT_FW_CRASH) leaves the command BUSY until reset.
 *
 * The commands change state the worker also reads: address-space roots and
 * TLBs under mmu_lock; semaphores of an ASID, which the host only resets
 * while no job of that ASID runs; fabric windows (fw_fabric_win.c) under
 * win_lock, which the fabric thread holds while it moves data through one.
 */
#include <string.h>

#include "fw_internal.h"

static uint32_t mbox_set_context(struct maia_sim *sim, const uint32_t *arg)
{
	uint64_t root = arg[1] | ((uint64_t)arg[2] << 32);
	unsigned int asid = arg[0];

	if (asid == MAIA_ASID_PHYS || asid >= MAIA_MAX_ASIDS) {
		fw_guest_error(sim, "maia: SET_CONTEXT asid %u outside 1..%u",
				 asid, MAIA_MAX_ASIDS - 1);
		return MAIA_MBOX_EINVAL;
	}
	if (root && ((root & (MAIA_PAGE_SIZE - 1)) || root > sim->cfg.hbm_size - MAIA_PAGE_SIZE)) {
		fw_guest_error(sim, "maia: SET_CONTEXT asid %u root 0x%llx not a page inside HBM",
				 asid, (unsigned long long)root);
		return MAIA_MBOX_EINVAL;
	}
	/* A context's windows end with it: nothing lands in its memory any more. */
	if (!root)
		fw_win_close_asid(sim, asid);
	fw_mmu_set_context(sim, asid, root);
	/*
	 * A context starts (and ends) with its semaphores at 0. The worker
	 * uses them without sim->lock while a job of this ASID runs; the host
	 * sets a context only when none does, so this does not race it (a
	 * host that breaks that rule races on plain integers, nothing worse).
	 */
	memset(sim->sems[asid], 0, sizeof(sim->sems[asid]));
	fw_trace(sim, "mmu: asid %u root 0x%llx", asid, (unsigned long long)root);
	return MAIA_MBOX_OK;
}

static uint32_t mbox_tlb_invalidate(struct maia_sim *sim, const uint32_t *arg)
{
	if (arg[0] != MAIA_ASID_ALL && arg[0] >= MAIA_MAX_ASIDS) {
		fw_guest_error(sim, "maia: TLB_INVALIDATE asid %u out of range", arg[0]);
		return MAIA_MBOX_EINVAL;
	}
	fw_mmu_invalidate(sim, arg[0]);
	return MAIA_MBOX_OK;
}

/*
 * Runs the command just written to MBOX_CMD. Called with sim->lock held;
 * returns whether MAIA_VEC_EVENT must be raised once it is dropped.
 */
bool fw_mbox_exec_locked(struct maia_sim *sim)
{
	uint32_t resp[MAIA_MBOX_NARGS] = { 0 };
	const uint32_t *arg = sim->mbox.arg;
	uint32_t cmd = sim->mbox.cmd, result;

	if (__atomic_load_n(&sim->fw_crashed, __ATOMIC_ACQUIRE)) {
		sim->mbox.status = MAIA_MBOX_STATUS_BUSY;	/* never answered */
		return false;
	}
	if (sim->boot.status != MAIA_BOOT_STATUS_READY) {
		fw_guest_error(sim, "maia: mailbox command 0x%x before firmware is ready", cmd);
		result = MAIA_MBOX_ENOTREADY;
	} else {
		switch (cmd) {
		case MAIA_MBOX_PING:
			resp[0] = ~arg[0];
			resp[1] = sim->boot.fw_version;
			result = MAIA_MBOX_OK;
			break;
		case MAIA_MBOX_SET_CONTEXT:
			result = mbox_set_context(sim, arg);
			break;
		case MAIA_MBOX_TLB_INVALIDATE:
			result = mbox_tlb_invalidate(sim, arg);
			break;
		case MAIA_MBOX_FABRIC_WINDOW_OPEN:
			result = fw_fabric_ports(sim) ? fw_win_open(sim, arg, &resp[0])
						       : MAIA_MBOX_EUNKNOWN;
			break;
		case MAIA_MBOX_FABRIC_WINDOW_CLOSE:
			result = fw_fabric_ports(sim) ? fw_win_close(sim, arg[0])
						       : MAIA_MBOX_EUNKNOWN;
			break;
		case MAIA_MBOX_SET_POWER_CAP:
			if (!fw_telem_cap_valid_locked(sim, arg[0])) {
				fw_guest_error(sim, "maia: power cap %u mW outside %u..%u",
						 arg[0], FW_PM_CAP_MIN_MW,
						 sim->telem.pm.p.cap_max_mw);
				result = MAIA_MBOX_EINVAL;
				break;
			}
			resp[0] = arg[0];
			result = MAIA_MBOX_OK;
			break;
		default:
			fw_guest_error(sim, "maia: unknown mailbox command 0x%x", cmd);
			result = MAIA_MBOX_EUNKNOWN;
			break;
		}
	}

	if (cmd == MAIA_MBOX_SET_POWER_CAP && result == MAIA_MBOX_OK)
		sim->power_cap_mw = arg[0];
	memcpy(sim->mbox.resp, resp, sizeof(resp));
	sim->mbox.status = result & MAIA_MBOX_STATUS_RESULT_MASK;
	fw_trace(sim, "mailbox: command 0x%x result %u", cmd, result);
	return fw_int_assert_locked(sim, MAIA_INT_MBOX_DONE);
}
