// SPDX-License-Identifier: MIT
/*
 * Mailbox (maia/hw/mbox.h): one command at a time, run on the worker.
 * Completion clears BUSY, publishes the result and raises MAIA_INT_MBOX_DONE.
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
	fw_mmu_set_context(sim, asid, root);
	/* a context starts (and ends) with its semaphores at 0; worker-owned, as is this */
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

void fw_mbox_run(struct maia_sim *sim)
{
	uint32_t arg[MAIA_MBOX_NARGS], resp[MAIA_MBOX_NARGS] = { 0 };
	uint32_t cmd, result, boot_status, fw_version;
	bool raise;

	pthread_mutex_lock(&sim->lock);
	cmd = sim->mbox_cmd;
	memcpy(arg, sim->mbox_arg, sizeof(arg));
	boot_status = sim->boot_status;
	fw_version = sim->fw_version;
	pthread_mutex_unlock(&sim->lock);

	if (boot_status != MAIA_BOOT_STATUS_READY) {
		fw_guest_error(sim, "maia: mailbox command 0x%x before firmware is ready", cmd);
		result = MAIA_MBOX_ENOTREADY;
	} else {
		switch (cmd) {
		case MAIA_MBOX_PING:
			resp[0] = ~arg[0];
			resp[1] = fw_version;
			result = MAIA_MBOX_OK;
			break;
		case MAIA_MBOX_SET_CONTEXT:
			result = mbox_set_context(sim, arg);
			break;
		case MAIA_MBOX_TLB_INVALIDATE:
			result = mbox_tlb_invalidate(sim, arg);
			break;
		case MAIA_MBOX_SET_POWER_CAP:
			if (!fw_pm_cap_valid(arg[0])) {
				fw_guest_error(sim, "maia: power cap %u mW outside %u..%u",
						 arg[0], FW_PM_CAP_MIN_MW, FW_PM_CAP_MAX_MW);
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

	pthread_mutex_lock(&sim->lock);
	sim->mbox_pending = false;
	if (__atomic_load_n(&sim->reset_req, __ATOMIC_ACQUIRE)) {
		pthread_mutex_unlock(&sim->lock);
		return;
	}
	if (cmd == MAIA_MBOX_SET_POWER_CAP && result == MAIA_MBOX_OK)
		sim->power_cap_mw = arg[0];
	memcpy(sim->mbox_resp, resp, sizeof(resp));
	sim->mbox_status = result & MAIA_MBOX_STATUS_RESULT_MASK;
	raise = fw_int_assert_locked(sim, MAIA_INT_MBOX_DONE);
	pthread_mutex_unlock(&sim->lock);
	fw_trace(sim, "mailbox: command 0x%x result %u", cmd, result);
	if (raise)
		fw_raise(sim, MAIA_VEC_EVENT);
}
