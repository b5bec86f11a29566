// SPDX-License-Identifier: MIT
/*
 * The fault queue (maia/hw/regs.h MAIA_REG_FAULTQ_*, revision 1.7,
 * Documentation/hw/registers.rst "Fault queue"): every MMU fault as a
 * struct maia_fault_entry in a ring of host memory, beside the one latched
 * FAULT_INFO record, so that faults close together each keep their own.
 *
 * State in struct fw_faultq (sim->faultq), under sim->lock.
 */
#include <stddef.h>
#include <string.h>

#include "fw_internal.h"

bool fw_faultq_is_reg(uint32_t offset)
{
	return offset >= MAIA_REG_FAULTQ_BASE_LO && offset <= MAIA_REG_FAULTQ_OVERFLOWS;
}

bool fw_faultq_reg_read_locked(struct maia_sim *sim, uint32_t offset, uint32_t *val)
{
	const struct fw_faultq *fq = &sim->faultq;

	switch (offset) {
	case MAIA_REG_FAULTQ_BASE_LO:	*val = (uint32_t)fq->base; break;
	case MAIA_REG_FAULTQ_BASE_HI:	*val = (uint32_t)(fq->base >> 32); break;
	case MAIA_REG_FAULTQ_SIZE:	*val = fq->size; break;
	case MAIA_REG_FAULTQ_PROD:	*val = fq->prod; break;
	case MAIA_REG_FAULTQ_CONS:	*val = fq->cons; break;
	case MAIA_REG_FAULTQ_OVERFLOWS:	*val = fq->overflows; break;
	default:
		return false;
	}
	return true;
}

void fw_faultq_reg_write_locked(struct maia_sim *sim, uint32_t offset, uint32_t value)
{
	struct fw_faultq *fq = &sim->faultq;

	switch (offset) {
	case MAIA_REG_FAULTQ_BASE_LO:
		fq->base = (fq->base & ~0xffffffffull) | value;
		break;
	case MAIA_REG_FAULTQ_BASE_HI:
		fq->base = (fq->base & 0xffffffffull) | ((uint64_t)value << 32);
		break;
	case MAIA_REG_FAULTQ_SIZE:
		fq->prod = fq->cons = fq->overflows = 0;
		fq->size = 0;
		if (!value)
			break;
		if (value > MAIA_FAULTQ_MAX_ENTRIES || (value & (value - 1)) ||
		    fq->base % MAIA_FAULTQ_ALIGN) {
			fw_guest_error(sim, "maia: fault queue of %u entries at 0x%llx refused: the size must be a power of two <= %u, the base %u-byte aligned; queue off",
				       value, (unsigned long long)fq->base,
				       MAIA_FAULTQ_MAX_ENTRIES, MAIA_FAULTQ_ALIGN);
			break;
		}
		fq->size = value;
		break;
	case MAIA_REG_FAULTQ_CONS:
		fq->cons = value;
		break;
	default:
		fw_guest_error(sim, "maia: fault queue register 0x%04x is read-only; write of 0x%08x ignored",
			       offset, value);
		break;
	}
}

void fw_faultq_reset_locked(struct maia_sim *sim)
{
	memset(&sim->faultq, 0, sizeof(sim->faultq));
}

/*
 * Queues the fault of job @job_id on queue @qi (address space @as). A full
 * queue, or a ring the device cannot write, counts an overflow.
 */
void fw_faultq_push_locked(struct maia_sim *sim, unsigned int qi, uint64_t job_id,
			   const struct fw_as *as)
{
	struct fw_faultq *fq = &sim->faultq;
	struct maia_fault_entry e = {
		.info = (as->asid & MAIA_FAULT_ASID_MASK) |
			((as->fault_access << MAIA_FAULT_ACCESS_SHIFT) & MAIA_FAULT_ACCESS_MASK) |
			((qi << MAIA_FAULT_QUEUE_SHIFT) & MAIA_FAULT_QUEUE_MASK),
		.addr = as->fault_va,
		.job_id = job_id,
	};
	uint64_t addr;

	if (!fq->size)
		return;
	if (fq->prod - fq->cons >= fq->size) {
		fq->overflows++;
		return;
	}
	addr = fq->base + (uint64_t)(fq->prod & (fq->size - 1)) * sizeof(e);
	if (sim->ops.dma_write(sim->opaque, addr, &e, sizeof(e))) {
		fw_guest_error(sim, "maia: fault queue entry write to 0x%llx failed; fault counted as an overflow",
			       (unsigned long long)addr);
		fq->overflows++;
		return;
	}
	/* The entry is visible before PROD counts it (and before the job's completion). */
	__atomic_thread_fence(__ATOMIC_SEQ_CST);
	fq->prod++;
}
