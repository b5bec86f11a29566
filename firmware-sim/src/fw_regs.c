// SPDX-License-Identifier: MIT
/*
 * BAR0 register file: decodes MMIO accesses, updates register state under
 * sim->lock and hands anything slow (boot, mailbox, jobs) to the worker.
 * Guest mistakes are reported through guest_error and otherwise ignored.
 */
#include "fw_internal.h"
#include "maia/hw/dtype.h"

#define FW_CAPS	(MAIA_CAP_MMU | MAIA_CAP_SEMAPHORES | MAIA_CAP_TENSOR | MAIA_CAP_FLR | \
			 MAIA_CAP_TELEMETRY)
#define FW_DTYPES_ALL	((1u << MAIA_DTYPE_COUNT) - 1u)

/* What to do once sim->lock is dropped. */
struct mmio_effects {
	bool raise_event;
	bool reset;
	int shadow_queue;		/* -1: none */
	bool shadow_enabled;
};

static bool is_queue_reg(const struct maia_sim *sim, uint32_t offset,
			 unsigned int *q, uint32_t *reg)
{
	uint32_t end = MAIA_REG_QUEUE_BASE + MAIA_REG_QUEUE_STRIDE * sim->cfg.num_queues;

	if (offset < MAIA_REG_QUEUE_BASE || offset >= end)
		return false;
	*q = (offset - MAIA_REG_QUEUE_BASE) / MAIA_REG_QUEUE_STRIDE;
	*reg = (offset - MAIA_REG_QUEUE_BASE) % MAIA_REG_QUEUE_STRIDE;
	return true;
}

static bool is_doorbell(const struct maia_sim *sim, uint32_t offset, unsigned int *q)
{
	if (offset < MAIA_REG_DOORBELL_BASE ||
	    offset >= MAIA_REG_DOORBELL(sim->cfg.num_queues))
		return false;
	*q = (offset - MAIA_REG_DOORBELL_BASE) / 4u;
	return true;
}

static bool queue_reg_read(struct maia_sim *sim, unsigned int qi, uint32_t reg,
			   uint32_t *val)
{
	const struct fw_queue *q = &sim->queues[qi];

	switch (reg) {
	case MAIA_Q_SQ_LO:	*val = (uint32_t)q->sq; break;
	case MAIA_Q_SQ_HI:	*val = (uint32_t)(q->sq >> 32); break;
	case MAIA_Q_CQ_LO:	*val = (uint32_t)q->cq; break;
	case MAIA_Q_CQ_HI:	*val = (uint32_t)(q->cq >> 32); break;
	case MAIA_Q_SIZE:	*val = q->size; break;
	case MAIA_Q_CTRL:	*val = q->ctrl; break;
	case MAIA_Q_HEAD:	*val = q->head; break;
	case MAIA_Q_TAIL:	*val = q->tail; break;
	case MAIA_Q_STATUS:
		*val = q->status;
		/* A disable or reset since (gen moved) dropped the job. */
		if (q->fabric_wait && q->fabric_wait_gen == q->gen)
			*val |= MAIA_Q_STATUS_FABRIC_WAIT;
		break;
	case MAIA_Q_COMPLETED:	*val = q->completed; break;
	case MAIA_Q_FETCHED:	*val = q->fetched; break;
	case MAIA_Q_SHADOW_LO:	*val = (uint32_t)q->shadow; break;
	case MAIA_Q_SHADOW_HI:	*val = (uint32_t)(q->shadow >> 32); break;
	case MAIA_Q_ASID:	*val = q->asid_bind; break;
	case MAIA_Q_IRQ:	*val = q->irq; break;
	case MAIA_Q_FABRIC_WAITS: *val = q->fabric_waits; break;
	default:
		return false;
	}
	return true;
}

uint32_t maia_sim_mmio_read(struct maia_sim *sim, uint32_t offset)
{
	const struct maia_sim_config *cfg = &sim->cfg;
	uint32_t val = 0;
	unsigned int q;
	uint32_t reg;
	bool ok = true;

	if (offset & 3u) {
		fw_guest_error(sim, "maia: unaligned register read at 0x%04x", offset);
		return 0;
	}
	pthread_mutex_lock(&sim->lock);
	switch (offset) {
	case MAIA_REG_ID:		val = MAIA_ID_MAGIC; break;
	case MAIA_REG_REVISION:		val = MAIA_HW_REVISION; break;
	case MAIA_REG_CAPS:
		val = FW_CAPS | (fw_fabric_ports(sim) ? MAIA_CAP_FABRIC : 0);
		break;
	case MAIA_REG_DTYPES:		val = FW_DTYPES_ALL; break;
	case MAIA_REG_TOPOLOGY:
		val = (cfg->clusters & MAIA_TOPOLOGY_CLUSTERS_MASK) |
		      ((cfg->tiles_per_cluster << MAIA_TOPOLOGY_TILES_SHIFT) &
		       MAIA_TOPOLOGY_TILES_MASK);
		break;
	case MAIA_REG_NUM_QUEUES:	val = cfg->num_queues; break;
	case MAIA_REG_HBM_SIZE_LO:	val = (uint32_t)cfg->hbm_size; break;
	case MAIA_REG_HBM_SIZE_HI:	val = (uint32_t)(cfg->hbm_size >> 32); break;
	case MAIA_REG_SRAM_KIB:		val = cfg->sram_kib; break;
	case MAIA_REG_MSIX_VECTORS:	val = MAIA_NUM_VECTORS(cfg->num_queues); break;
	case MAIA_REG_RESET:		val = 0; break;	/* write-only */
	case MAIA_REG_SCRATCH:		val = sim->scratch; break;
	case MAIA_REG_BOOT_STATUS:	val = sim->boot.status; break;
	case MAIA_REG_BOOT_ERROR:	val = sim->boot.error; break;
	case MAIA_REG_BOOT_ADDR_LO:	val = (uint32_t)sim->boot.addr; break;
	case MAIA_REG_BOOT_ADDR_HI:	val = (uint32_t)(sim->boot.addr >> 32); break;
	case MAIA_REG_BOOT_SIZE:	val = sim->boot.size; break;
	case MAIA_REG_BOOT_CTRL:	val = 0; break;	/* write-only */
	case MAIA_REG_FW_VERSION:	val = sim->boot.fw_version; break;
	case MAIA_REG_FW_ABI:		val = sim->boot.fw_abi; break;
	case MAIA_REG_TIME_LO: {
		uint64_t now = fw_now_ns(sim);

		sim->time_hi_latch = (uint32_t)(now >> 32);
		val = (uint32_t)now;
		break;
	}
	case MAIA_REG_TIME_HI:		val = sim->time_hi_latch; break;
	case MAIA_REG_FW_HEARTBEAT:	val = fw_heartbeat_locked(sim); break;
	case MAIA_REG_DEBUG_INJECT:	val = 0; break;	/* write-only */
	case MAIA_REG_INT_STATUS:	val = sim->irq.status; break;
	case MAIA_REG_INT_MASK:		val = sim->irq.mask; break;
	case MAIA_REG_FAULT_INFO:	val = sim->fault.info; break;
	case MAIA_REG_FAULT_ADDR_LO:	val = (uint32_t)sim->fault.addr; break;
	case MAIA_REG_FAULT_ADDR_HI:	val = (uint32_t)(sim->fault.addr >> 32); break;
	case MAIA_REG_DEBUG_INJECT_ADDR_LO: val = (uint32_t)sim->inject_addr; break;
	case MAIA_REG_DEBUG_INJECT_ADDR_HI: val = (uint32_t)(sim->inject_addr >> 32); break;
	case MAIA_REG_ECC_CE_COUNT:	val = fw_ecc_count_locked(sim, false); break;
	case MAIA_REG_ECC_UE_COUNT:	val = fw_ecc_count_locked(sim, true); break;
	case MAIA_REG_ECC_INFO:		val = sim->ecc_rec.info; break;
	case MAIA_REG_ECC_ADDR_LO:	val = (uint32_t)sim->ecc_rec.addr; break;
	case MAIA_REG_ECC_ADDR_HI:	val = (uint32_t)(sim->ecc_rec.addr >> 32); break;
	case MAIA_REG_MBOX_CMD:		val = sim->mbox.cmd; break;
	case MAIA_REG_MBOX_STATUS:	val = sim->mbox.status; break;
	case MAIA_REG_MBOX_ARG(0):
	case MAIA_REG_MBOX_ARG(1):
	case MAIA_REG_MBOX_ARG(2):
	case MAIA_REG_MBOX_ARG(3):
		val = sim->mbox.arg[(offset - MAIA_REG_MBOX_ARG(0)) / 4u];
		break;
	case MAIA_REG_MBOX_RESP(0):
	case MAIA_REG_MBOX_RESP(1):
	case MAIA_REG_MBOX_RESP(2):
	case MAIA_REG_MBOX_RESP(3):
		val = sim->mbox.resp[(offset - MAIA_REG_MBOX_RESP(0)) / 4u];
		break;
	default:
		if (is_queue_reg(sim, offset, &q, &reg))
			ok = queue_reg_read(sim, q, reg, &val);
		else if (is_doorbell(sim, offset, &q))
			val = sim->queues[q].tail;
		else if (fw_faultq_is_reg(offset))
			ok = fw_faultq_reg_read_locked(sim, offset, &val);
		else if (fw_telem_is_reg(offset))
			ok = fw_telem_read_locked(sim, offset, &val);
		else if (fw_model_is_reg(offset))
			ok = fw_model_reg_read(&sim->chip, offset, &val);
		else if (fw_fabric_is_reg(offset))
			ok = fw_fabric_reg_read_locked(sim, offset, &val);
		else
			ok = false;
		break;
	}
	fw_telem_unlock_and_raise(sim);
	if (!ok)
		fw_guest_error(sim, "maia: read of unmapped register 0x%04x", offset);
	return val;
}

static void read_only(struct maia_sim *sim, uint32_t offset, uint32_t value)
{
	fw_guest_error(sim, "maia: write 0x%08x to read-only register 0x%04x ignored",
			 value, offset);
}

static void boot_start_locked(struct maia_sim *sim, struct mmio_effects *fx)
{
	switch (sim->boot.status) {
	case MAIA_BOOT_STATUS_WAIT_FW:
		sim->boot.status = MAIA_BOOT_STATUS_LOADING;
		sim->boot.error = MAIA_BOOT_OK;
		sim->boot.pending = true;
		fw_kick_worker_locked(sim);
		break;
	case MAIA_BOOT_STATUS_FAILED:
		fw_guest_error(sim, "maia: boot START after a failed boot; reset the device first");
		sim->boot.error = MAIA_BOOT_ERR_STATE;
		fx->raise_event |= fw_int_assert_locked(sim, MAIA_INT_BOOT_DONE);
		break;
	default:
		fw_guest_error(sim, "maia: boot START while firmware is %s; ignored",
				 sim->boot.status == MAIA_BOOT_STATUS_READY ? "running" : "loading");
		break;
	}
}

static void mbox_cmd_locked(struct maia_sim *sim, uint32_t value, struct mmio_effects *fx)
{
	if (sim->mbox.status & MAIA_MBOX_STATUS_BUSY) {
		fw_guest_error(sim, "maia: mailbox command 0x%x while busy with 0x%x; ignored",
				 value, sim->mbox.cmd);
		return;
	}
	sim->mbox.cmd = value;
	sim->mbox.status = MAIA_MBOX_STATUS_BUSY;
	if (fw_mbox_exec_locked(sim))
		fx->raise_event = true;
}

static bool queue_config_valid(const struct fw_queue *q)
{
	return q->size >= MAIA_QUEUE_MIN_ENTRIES && q->size <= MAIA_QUEUE_MAX_ENTRIES &&
	       (q->size & (q->size - 1)) == 0 &&
	       q->sq && q->cq && !(q->sq & 7u) && !(q->cq & 7u);
}

static void queue_ctrl_locked(struct maia_sim *sim, unsigned int qi, uint32_t value,
			      struct mmio_effects *fx)
{
	struct fw_queue *q = &sim->queues[qi];
	uint32_t prio = (value & MAIA_Q_CTRL_PRIO_MASK) >> MAIA_Q_CTRL_PRIO_SHIFT;
	bool enable = value & MAIA_Q_CTRL_ENABLE;

	if (value & ~(MAIA_Q_CTRL_ENABLE | MAIA_Q_CTRL_PRIO_MASK)) {
		fw_guest_error(sim, "maia: queue %u CTRL 0x%08x has undefined bits; ignored",
				 qi, value);
		return;
	}
	if (prio > MAIA_QUEUE_PRIO_HIGH) {
		fw_guest_error(sim, "maia: queue %u priority %u out of range; ignored", qi, prio);
		return;
	}
	if (enable && !q->enabled) {
		q->status = 0;
		if (!queue_config_valid(q)) {
			fw_guest_error(sim,
					 "maia: queue %u enabled with bad config (sq 0x%llx cq 0x%llx size %u)",
					 qi, (unsigned long long)q->sq,
					 (unsigned long long)q->cq, q->size);
			q->status = MAIA_Q_STATUS_ERR_CONFIG;
			q->ctrl = value & ~MAIA_Q_CTRL_ENABLE;
			fx->raise_event |= fw_int_assert_locked(sim, MAIA_INT_QUEUE_ERROR);
			return;
		}
		q->head = 0;
		q->tail = 0;
		q->completed = 0;
		q->fetched = 0;
		q->fabric_waits = 0;
		q->waiting = false;
		q->enabled = true;
		__atomic_add_fetch(&q->gen, 1, __ATOMIC_RELEASE);
		fw_trace(sim, "queue %u enabled, %u entries, priority %u", qi, q->size, prio);
	} else if (!enable && q->enabled) {
		q->enabled = false;
		__atomic_add_fetch(&q->gen, 1, __ATOMIC_RELEASE);
		fw_kick_worker_locked(sim);	/* drop its in-flight job */
		/*
		 * Revision 1.3: the write completes once no job of the queue
		 * runs (it stops at its next chunk), so the host may free what
		 * the job used. Reset waits for the worker the same way.
		 */
		while (sim->running_queue == (int)qi)
			pthread_cond_wait(&sim->idle_cond, &sim->lock);
		fw_trace(sim, "queue %u disabled", qi);
	}
	q->ctrl = value;
	fw_kick_worker_locked(sim);		/* priority may have changed */
}

static void set_shadow_locked(struct maia_sim *sim, unsigned int qi, uint64_t shadow,
			      struct mmio_effects *fx)
{
	struct fw_queue *q = &sim->queues[qi];
	bool was = q->shadow != 0;

	if (shadow & 3u) {
		fw_guest_error(sim, "maia: queue %u shadow tail address 0x%llx not 4-byte aligned; ignored",
				 qi, (unsigned long long)shadow);
		return;
	}
	q->shadow = shadow;
	if (was != (shadow != 0)) {
		fx->shadow_queue = (int)qi;
		fx->shadow_enabled = shadow != 0;
	}
	/* Read only on the next doorbell: LO and HI are two separate writes. */
}

/* MAIA_Q_ASID: like the ring addresses, only while the queue is disabled. */
static void set_asid_bind_locked(struct maia_sim *sim, unsigned int qi, uint32_t value)
{
	struct fw_queue *q = &sim->queues[qi];

	if (q->enabled) {
		fw_guest_error(sim, "maia: queue %u ASID written while enabled; ignored", qi);
		return;
	}
	if ((value & ~(MAIA_Q_ASID_MASK | MAIA_Q_ASID_BOUND)) ||
	    (value & MAIA_Q_ASID_MASK) >= MAIA_MAX_ASIDS) {
		fw_guest_error(sim, "maia: queue %u ASID 0x%08x has undefined bits or no such asid; ignored",
				 qi, value);
		return;
	}
	q->asid_bind = value;
}

static void queue_reg_write(struct maia_sim *sim, unsigned int qi, uint32_t reg,
			    uint32_t value, struct mmio_effects *fx)
{
	struct fw_queue *q = &sim->queues[qi];
	uint64_t *addr = NULL;
	bool hi = false;

	switch (reg) {
	case MAIA_Q_SQ_LO: addr = &q->sq; break;
	case MAIA_Q_SQ_HI: addr = &q->sq; hi = true; break;
	case MAIA_Q_CQ_LO: addr = &q->cq; break;
	case MAIA_Q_CQ_HI: addr = &q->cq; hi = true; break;
	case MAIA_Q_SIZE:
		if (q->enabled) {
			fw_guest_error(sim, "maia: queue %u SIZE written while enabled; ignored", qi);
			return;
		}
		q->size = value;
		return;
	case MAIA_Q_CTRL:
		queue_ctrl_locked(sim, qi, value, fx);
		return;
	case MAIA_Q_SHADOW_LO:
		set_shadow_locked(sim, qi, (q->shadow & ~0xffffffffull) | value, fx);
		return;
	case MAIA_Q_SHADOW_HI:
		set_shadow_locked(sim, qi, (q->shadow & 0xffffffffull) | ((uint64_t)value << 32), fx);
		return;
	case MAIA_Q_ASID:
		set_asid_bind_locked(sim, qi, value);
		return;
	case MAIA_Q_IRQ:
		if (value & ~(MAIA_Q_IRQ_ON_ARM | MAIA_Q_IRQ_ARMED)) {
			fw_guest_error(sim, "maia: queue %u IRQ 0x%08x has undefined bits; ignored",
					 qi, value);
			return;
		}
		q->irq = value;
		return;
	case MAIA_Q_HEAD:
	case MAIA_Q_TAIL:
	case MAIA_Q_STATUS:
	case MAIA_Q_COMPLETED:
	case MAIA_Q_FETCHED:
		read_only(sim, MAIA_REG_Q(qi, reg), value);
		return;
	default:
		fw_guest_error(sim, "maia: write 0x%08x to unmapped register 0x%04x ignored",
				 value, MAIA_REG_Q(qi, reg));
		return;
	}
	if (q->enabled) {
		fw_guest_error(sim, "maia: queue %u ring address written while enabled; ignored", qi);
		return;
	}
	if (hi)
		*addr = (*addr & 0xffffffffull) | ((uint64_t)value << 32);
	else
		*addr = (*addr & ~0xffffffffull) | value;
}

static void doorbell_locked(struct maia_sim *sim, unsigned int qi, uint32_t tail,
			    bool use_value, struct mmio_effects *fx)
{
	struct fw_queue *q = &sim->queues[qi];

	if (sim->boot.status != MAIA_BOOT_STATUS_READY) {
		fw_guest_error(sim, "maia: doorbell on queue %u before firmware is ready; ignored", qi);
		return;
	}
	if (!q->enabled) {
		fw_guest_error(sim, "maia: doorbell on disabled queue %u; ignored", qi);
		return;
	}
	if (q->shadow) {
		q->kicked = true;
		fw_kick_worker_locked(sim);
		return;
	}
	if (!use_value) {
		fw_guest_error(sim, "maia: doorbell kick on queue %u without a shadow tail; ignored", qi);
		return;
	}
	if (tail >= q->size) {
		fw_guest_error(sim, "maia: queue %u doorbell %u out of range (size %u)",
				 qi, tail, q->size);
		q->status |= MAIA_Q_STATUS_ERR_DOORBELL;
		fx->raise_event |= fw_int_assert_locked(sim, MAIA_INT_QUEUE_ERROR);
		return;
	}
	q->tail = tail;
	/* Behind a job parked on the fabric: whoever resumes it runs this one. */
	if (fw_sched_queue_parked_locked(sim, qi))
		return;
	fw_kick_worker_locked(sim);
}

static void apply_effects(struct maia_sim *sim, const struct mmio_effects *fx)
{
	if (fx->raise_event)
		fw_raise(sim, MAIA_VEC_EVENT);
	if (fx->shadow_queue >= 0 && sim->ops.shadow_changed)
		sim->ops.shadow_changed(sim->opaque, (unsigned int)fx->shadow_queue,
					fx->shadow_enabled);
	if (fx->reset)
		maia_sim_reset(sim);
}

static void int_mask_locked(struct maia_sim *sim, uint32_t value, struct mmio_effects *fx)
{
	uint32_t unmasked;

	if (value & ~MAIA_INT_ALL)
		fw_guest_error(sim, "maia: INT_MASK 0x%08x has undefined bits; they are ignored",
				 value);
	unmasked = sim->irq.mask & ~value;
	sim->irq.mask = value & MAIA_INT_ALL;
	/* A pending cause that becomes unmasked interrupts now. */
	if (sim->irq.status & unmasked)
		fx->raise_event = true;
}

static void debug_inject_locked(struct maia_sim *sim, uint32_t value, struct mmio_effects *fx)
{
	unsigned int what = value & MAIA_INJECT_WHAT_MASK;
	unsigned int queue = (value & MAIA_INJECT_QUEUE_MASK) >> MAIA_INJECT_QUEUE_SHIFT;
	bool raise;

	if (what == MAIA_INJECT_ECC_CE || what == MAIA_INJECT_ECC_UE) {
		if (queue || value & ~(MAIA_INJECT_WHAT_MASK | MAIA_INJECT_QUEUE_MASK) ||
		    fw_ecc_inject_locked(sim, what, sim->inject_addr, &raise))
			fw_guest_error(sim, "maia: DEBUG_INJECT 0x%08x at HBM 0x%llx: bad address or error table full; ignored",
				       value, (unsigned long long)sim->inject_addr);
		else
			fx->raise_event |= raise;
		return;
	}
	if (fw_inject_locked(sim, what, queue))
		fw_guest_error(sim, "maia: DEBUG_INJECT 0x%08x: unknown error, queue or state; ignored",
			       value);
	else
		fw_kick_worker_locked(sim);
}

/* ---- the global registers' writes, by table ---- */

typedef void (*reg_write_fn)(struct maia_sim *sim, uint32_t offset, uint32_t value,
			     struct mmio_effects *fx);

static void write_reset(struct maia_sim *sim, uint32_t offset, uint32_t value,
			struct mmio_effects *fx)
{
	(void)offset;
	if (value == MAIA_RESET_MAGIC)
		fx->reset = true;
	else
		fw_guest_error(sim, "maia: RESET written with 0x%08x, not the magic 0x%08x; ignored",
			       value, MAIA_RESET_MAGIC);
}

static void write_scratch(struct maia_sim *sim, uint32_t offset, uint32_t value,
			  struct mmio_effects *fx)
{
	(void)offset;
	(void)fx;
	sim->scratch = value;
}

static void write_debug_inject(struct maia_sim *sim, uint32_t offset, uint32_t value,
			       struct mmio_effects *fx)
{
	(void)offset;
	debug_inject_locked(sim, value, fx);
}

static void write_inject_addr(struct maia_sim *sim, uint32_t offset, uint32_t value,
			      struct mmio_effects *fx)
{
	(void)fx;
	if (offset == MAIA_REG_DEBUG_INJECT_ADDR_LO)
		sim->inject_addr = (sim->inject_addr & ~0xffffffffull) | value;
	else
		sim->inject_addr = (sim->inject_addr & 0xffffffffull) | ((uint64_t)value << 32);
}

static void write_boot_param(struct maia_sim *sim, uint32_t offset, uint32_t value,
			     struct mmio_effects *fx)
{
	(void)fx;
	if (sim->boot.status == MAIA_BOOT_STATUS_LOADING)
		fw_guest_error(sim, "maia: boot register 0x%04x written while loading; ignored",
			       offset);
	else if (offset == MAIA_REG_BOOT_ADDR_LO)
		sim->boot.addr = (sim->boot.addr & ~0xffffffffull) | value;
	else if (offset == MAIA_REG_BOOT_ADDR_HI)
		sim->boot.addr = (sim->boot.addr & 0xffffffffull) | ((uint64_t)value << 32);
	else
		sim->boot.size = value;
}

static void write_boot_ctrl(struct maia_sim *sim, uint32_t offset, uint32_t value,
			    struct mmio_effects *fx)
{
	(void)offset;
	if (value == MAIA_BOOT_CTRL_START)
		boot_start_locked(sim, fx);
	else
		fw_guest_error(sim, "maia: BOOT_CTRL written with 0x%08x; only START (1) is defined",
			       value);
}

static void write_int_status(struct maia_sim *sim, uint32_t offset, uint32_t value,
			     struct mmio_effects *fx)
{
	(void)offset;
	if (value & ~MAIA_INT_ALL)
		fw_guest_error(sim, "maia: INT_STATUS clear 0x%08x has undefined bits", value);
	sim->irq.status &= ~value;
	/* The next poisoned page not yet reported takes the free record. */
	if (value & MAIA_INT_HBM_ECC)
		fx->raise_event |= fw_ecc_latch_next_locked(sim);
}

static void write_int_mask(struct maia_sim *sim, uint32_t offset, uint32_t value,
			   struct mmio_effects *fx)
{
	(void)offset;
	int_mask_locked(sim, value, fx);
}

static void write_mbox_cmd(struct maia_sim *sim, uint32_t offset, uint32_t value,
			   struct mmio_effects *fx)
{
	(void)offset;
	mbox_cmd_locked(sim, value, fx);
}

static void write_mbox_arg(struct maia_sim *sim, uint32_t offset, uint32_t value,
			   struct mmio_effects *fx)
{
	(void)fx;
	if (sim->mbox.status & MAIA_MBOX_STATUS_BUSY)
		fw_guest_error(sim, "maia: mailbox argument written while busy; ignored");
	else
		sim->mbox.arg[(offset - MAIA_REG_MBOX_ARG(0)) / 4u] = value;
}

/* A global register (0x000 - 0x0ff): read-only, or what a write does. */
struct reg_entry {
	bool read_only;
	reg_write_fn write;
};

#define RO(off)		[(off) / 4u] = { .read_only = true }
#define RW(off, fn)	[(off) / 4u] = { .write = (fn) }

/* Offsets not here (and not the fault queue's) are unmapped. */
static const struct reg_entry global_regs[MAIA_REG_TELEMETRY_BASE / 4u] = {
	RO(MAIA_REG_ID), RO(MAIA_REG_REVISION), RO(MAIA_REG_CAPS), RO(MAIA_REG_DTYPES),
	RO(MAIA_REG_TOPOLOGY), RO(MAIA_REG_NUM_QUEUES), RO(MAIA_REG_HBM_SIZE_LO),
	RO(MAIA_REG_HBM_SIZE_HI), RO(MAIA_REG_SRAM_KIB), RO(MAIA_REG_MSIX_VECTORS),
	RW(MAIA_REG_RESET, write_reset),
	RW(MAIA_REG_SCRATCH, write_scratch),
	RW(MAIA_REG_DEBUG_INJECT, write_debug_inject),
	RO(MAIA_REG_BOOT_STATUS), RO(MAIA_REG_BOOT_ERROR),
	RW(MAIA_REG_BOOT_ADDR_LO, write_boot_param),
	RW(MAIA_REG_BOOT_ADDR_HI, write_boot_param),
	RW(MAIA_REG_BOOT_SIZE, write_boot_param),
	RW(MAIA_REG_BOOT_CTRL, write_boot_ctrl),
	RO(MAIA_REG_FW_VERSION), RO(MAIA_REG_FW_ABI), RO(MAIA_REG_TIME_LO), RO(MAIA_REG_TIME_HI),
	RO(MAIA_REG_FW_HEARTBEAT),
	RW(MAIA_REG_DEBUG_INJECT_ADDR_LO, write_inject_addr),
	RW(MAIA_REG_DEBUG_INJECT_ADDR_HI, write_inject_addr),
	RW(MAIA_REG_INT_STATUS, write_int_status),
	RW(MAIA_REG_INT_MASK, write_int_mask),
	RO(MAIA_REG_ECC_CE_COUNT), RO(MAIA_REG_ECC_UE_COUNT),
	RO(MAIA_REG_FAULT_INFO), RO(MAIA_REG_FAULT_ADDR_LO), RO(MAIA_REG_FAULT_ADDR_HI),
	RO(MAIA_REG_ECC_INFO), RO(MAIA_REG_ECC_ADDR_LO), RO(MAIA_REG_ECC_ADDR_HI),
	RW(MAIA_REG_MBOX_CMD, write_mbox_cmd),
	RO(MAIA_REG_MBOX_STATUS),
	RW(MAIA_REG_MBOX_ARG(0), write_mbox_arg), RW(MAIA_REG_MBOX_ARG(1), write_mbox_arg),
	RW(MAIA_REG_MBOX_ARG(2), write_mbox_arg), RW(MAIA_REG_MBOX_ARG(3), write_mbox_arg),
	RO(MAIA_REG_MBOX_RESP(0)), RO(MAIA_REG_MBOX_RESP(1)), RO(MAIA_REG_MBOX_RESP(2)),
	RO(MAIA_REG_MBOX_RESP(3)),
};

#undef RO
#undef RW

void maia_sim_mmio_write(struct maia_sim *sim, uint32_t offset, uint32_t value)
{
	struct mmio_effects fx = { .shadow_queue = -1 };
	const struct reg_entry *e = NULL;
	bool run_inline = false;
	unsigned int q;
	uint32_t reg;

	if (offset & 3u) {
		fw_guest_error(sim, "maia: unaligned register write at 0x%04x", offset);
		return;
	}
	if (offset < MAIA_REG_TELEMETRY_BASE)
		e = &global_regs[offset / 4u];
	pthread_mutex_lock(&sim->lock);
	if (e && e->write) {
		e->write(sim, offset, value, &fx);
	} else if (e && e->read_only) {
		read_only(sim, offset, value);
	} else if (is_queue_reg(sim, offset, &q, &reg)) {
		queue_reg_write(sim, q, reg, value, &fx);
	} else if (is_doorbell(sim, offset, &q)) {
		run_inline = fw_sched_inline_begin_locked(sim);
		doorbell_locked(sim, q, value, true, &fx);
	} else if (fw_faultq_is_reg(offset)) {
		fw_faultq_reg_write_locked(sim, offset, value);
	} else if (fw_telem_is_reg(offset) ||
		   (fw_model_is_reg(offset) && fw_model_reg_read(&sim->chip, offset, &(uint32_t){ 0 }))) {
		read_only(sim, offset, value);
	} else if (fw_fabric_is_reg(offset) && fw_fabric_reg_write_locked(sim, offset, value)) {
		/* a failover threshold */
	} else if (fw_fabric_is_reg(offset) &&
		   fw_fabric_reg_read_locked(sim, offset, &(uint32_t){ 0 })) {
		read_only(sim, offset, value);
	} else {
		fw_guest_error(sim, "maia: write 0x%08x to unmapped register 0x%04x ignored",
			       value, offset);
	}
	pthread_mutex_unlock(&sim->lock);
	apply_effects(sim, &fx);
	if (run_inline)
		fw_sched_inline_run(sim);
}

/*
 * BAR1 doorbell pages (revision 1.3): the doorbell of page q acts as
 * MAIA_REG_DOORBELL(q), inline fast path included; the rest reads as 0.
 */
static bool is_udb_doorbell(struct maia_sim *sim, const char *dir, uint32_t offset,
			    unsigned int *q)
{
	if ((offset & 3u) || offset / MAIA_UDB_PAGE_SIZE >= sim->cfg.num_queues ||
	    offset % MAIA_UDB_PAGE_SIZE != MAIA_UDB_DOORBELL) {
		fw_guest_error(sim, "maia: doorbell page %s at 0x%05x ignored: not a doorbell",
				 dir, offset);
		return false;
	}
	*q = offset / MAIA_UDB_PAGE_SIZE;
	return true;
}

uint32_t maia_sim_udb_read(struct maia_sim *sim, uint32_t offset)
{
	unsigned int q;

	is_udb_doorbell(sim, "read", offset, &q);
	return 0;
}

void maia_sim_udb_write(struct maia_sim *sim, uint32_t offset, uint32_t value)
{
	struct mmio_effects fx = { .shadow_queue = -1 };
	bool run_inline;
	unsigned int q;

	if (!is_udb_doorbell(sim, "write", offset, &q))
		return;
	pthread_mutex_lock(&sim->lock);
	run_inline = fw_sched_inline_begin_locked(sim);
	doorbell_locked(sim, q, value, true, &fx);
	pthread_mutex_unlock(&sim->lock);
	apply_effects(sim, &fx);
	if (run_inline)
		fw_sched_inline_run(sim);
}

void maia_sim_doorbell(struct maia_sim *sim, unsigned int queue, uint32_t tail)
{
	struct mmio_effects fx = { .shadow_queue = -1 };

	if (queue >= sim->cfg.num_queues) {
		fw_guest_error(sim, "maia: doorbell on nonexistent queue %u", queue);
		return;
	}
	pthread_mutex_lock(&sim->lock);
	doorbell_locked(sim, queue, tail, true, &fx);
	pthread_mutex_unlock(&sim->lock);
	apply_effects(sim, &fx);
}

void maia_sim_doorbell_kick(struct maia_sim *sim, unsigned int queue)
{
	struct mmio_effects fx = { .shadow_queue = -1 };

	if (queue >= sim->cfg.num_queues) {
		fw_guest_error(sim, "maia: doorbell kick on nonexistent queue %u", queue);
		return;
	}
	pthread_mutex_lock(&sim->lock);
	doorbell_locked(sim, queue, 0, false, &fx);
	pthread_mutex_unlock(&sim->lock);
	apply_effects(sim, &fx);
}
