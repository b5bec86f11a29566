/* SPDX-License-Identifier: MIT */
/*
 * firmware-sim internals: the device state shared by the register file,
 * boot, mailbox, MMU, scheduler and command processor.
 *
 * Names: the kernel driver (driver/) has its own struct maia_queue,
 * maia_job, maia_mmu_*, maia_sched.c ..., so firmware-sim keeps the maia_
 * prefix for the two contracts it shares and nothing else:
 *   - the maia/hw/ headers, MAIA_*: the hardware ABI (driver, libmaia, QEMU, tests);
 *   - maia/sim.h maia_sim_* and struct maia_job_mem / maia_op_stats: the
 *     library API (QEMU glue, tests).
 * Everything internal to firmware-sim/src is fw_ (types, functions,
 * variables: struct fw_queue, struct fw_job, fw_mmu_set_context()) or FW_
 * (macros, enum constants), and the top-level files are fw_<part>.[ch]
 * (fw_sched.c, fw_mmu.c, this fw_internal.h). The tensor engine's files are
 * in src/tensor/ (no driver counterpart), its header is tensor/te.h, and its
 * names are fw_ too (fw_te_job is its parallel task set, not a queue job);
 * its entry points, fw_tensor_* in maia/engine.h, are the device's own,
 * which tests and benchmarks also drive directly (libmaia's maia_tensor_*
 * are the library's tensor descriptors, another layer).
 * Environment variables keep their MAIA_ names (MAIA_TE_ISA).
 *
 * Threads: the host thread (MMIO, doorbells, reset), one device worker
 * thread (jobs, boot) and, with fabric ports, one fabric thread (the links
 * and the transport above them, fw_fabric_port.c; any thread may queue a
 * received fabric frame). sim->lock guards the register-visible state; the
 * worker and the fabric thread drop it while they run work (DMA, jobs,
 * links). Callbacks that may take host locks (raise_irq, dma_*,
 * shadow_changed) are never called with sim->lock held; guest_error and
 * trace may be.
 */
#ifndef FWSIM_INTERNAL_H
#define FWSIM_INTERNAL_H

#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>

#include "maia/engine.h"
#include "maia/hw/boot.h"
#include "maia/hw/cmd.h"
#include "maia/hw/fabric.h"
#include "maia/hw/mbox.h"
#include "maia/hw/mmu.h"
#include "maia/hw/queue.h"
#include "maia/hw/regs.h"
#include "maia/sim.h"

#include "fw_host.h"
#include "fw_model.h"
#include "fw_telemetry.h"
#include "tvp/tvp.h"

#if !defined(__BYTE_ORDER__) || __BYTE_ORDER__ != __ORDER_LITTLE_ENDIAN__
#error "firmware-sim copies little-endian device structures directly"
#endif

#define FW_TLB_ENTRIES	16u
#define FW_IMAGE_NAME_MAX	64u
#define FW_BOUNCE_SIZE	(256u * 1024u)	/* DMA copy chunk */
#define FW_DEFAULT_QUANTUM_US	2000u
/*
 * Scheduler aging bound: a runnable queue passed over for this long is
 * served next whatever its priority (Documentation/hw/queues.rst).
 */
#define FW_DEFAULT_AGING_US	100000u
#define FW_MAX_POWER_CAP_MW	1000000u	/* 1 kW */

/* Parameters the firmware image sets (TLV records). */
struct fw_image_params {
	char name[FW_IMAGE_NAME_MAX];
	uint32_t clock_mhz;
	uint32_t tdp_w;
	uint64_t opcodes;		/* bit n: opcode n < 64 enabled */
	uint32_t quantum_us;		/* scheduler time slice */
	uint32_t aging_us;		/* scheduler aging bound */
	uint32_t selftest_ms;		/* boot delay before READY */
};

struct fw_tlb_entry {
	uint64_t va_base;		/* page-aligned VA; valid if size != 0 */
	uint64_t size;			/* page size, 0 = empty slot */
	uint64_t pte;			/* leaf entry */
};

/* One device address space (ASID != 0). */
struct fw_asid_ctx {
	uint64_t root;			/* HBM offset of the L0 table */
	bool enabled;
	unsigned int next_victim;	/* round-robin TLB replacement */
	struct fw_tlb_entry tlb[FW_TLB_ENTRIES];
};

enum fw_job_state {
	FW_JOB_IDLE,			/* no job fetched */
	FW_JOB_RUNNING,		/* fetched; runnable (may have yielded) */
	FW_JOB_SEM_WAIT,		/* parked on a semaphore */
	FW_JOB_FABRIC_WAIT,		/* parked on a fabric operation (job->fop) */
	FW_JOB_HUNG,			/* injected hang: only reset ends it */
};

/* The job in flight on a queue. Touched by the worker only (and by reset
 * while the worker is parked). */
struct fw_job {
	enum fw_job_state state;
	struct maia_sq_entry sqe;
	uint32_t index;			/* SQ/CQ slot */
	uint32_t offset;		/* next command in the buffer */
	uint64_t start_ns;		/* modeled (fw_timeline.c) */
	uint32_t sem_index;		/* FW_JOB_SEM_WAIT */
	uint32_t sem_value;
	uint64_t deadline_ns;		/* host time */
	uint64_t sem_model_end;		/* modeled time a wait times out at */
	struct fw_fop *fop;		/* FW_JOB_FABRIC_WAIT: the operation */
	uint32_t fop_cmd_size;		/* its command's size, skipped on success */
	uint16_t fop_opcode;		/* its command, for its modeled cost */
	uint64_t fop_bytes;		/* ... the bytes it moves over the fabric */
	unsigned int fop_hops;
	uint32_t fop_cable_ns;
	uint64_t gen;			/* queue generation it was fetched in */
	uint64_t cq;			/* CQ base, snapshot at fetch */
};

/* What the running command did, for its modeled cost (fw_timeline.c). */
struct fw_cmd_work {
	uint64_t host_bytes;		/* DMA over the host link */
	uint64_t hbm_read, hbm_write;	/* DMA to and from HBM */
	uint64_t dma_bytes;		/* the DMA engine moved */
	uint64_t flops, tensor_read, tensor_written;	/* a tensor command's */
	struct maia_op_mm mm;		/* its matrix multiply, if any */
	uint64_t fabric_bytes;		/* sent over the fabric */
	unsigned int fabric_hops;	/* links waited through */
	uint32_t fabric_cable_ns;	/* remote write, read: its port's fabric_lat_ns */
	uint64_t fabric_end_ns;		/* modeled end the operation reported; 0: none */
	struct fw_tvp_stats tvp;	/* a KERNEL command's */
};

/* The modeled clock (fw_timeline.c): worker-owned, monotonic, not reset. */
struct fw_timeline {
	uint64_t fetch_ns;		/* the last job fetch (any queue) done */
	uint64_t done_ns;		/* the last end of a job completed so far */
	struct fw_engines eng;		/* each engine is busy until */
	uint64_t queue_ns[MAIA_MAX_QUEUES];	/* a queue's last command ended */
	uint64_t acked_ns[MAIA_MAX_QUEUES];	/* its posted remote writes acknowledged */
	/* last signal; atomics: remote writes signal from the fabric thread */
	uint64_t sem_ns[MAIA_MAX_ASIDS][MAIA_NUM_SEMAPHORES];
};

/* A fabric window (fw_fabric_win.c): part of an address space the fabric may reach. */
struct fw_window {
	bool open;
	uint32_t gen;			/* key generation, 1..2^24-1; bumped by each close */
	unsigned int asid;
	unsigned int access;		/* MAIA_ACCESS_* the remote side may do */
	uint64_t va, size;
};

struct fw_fop;
struct fw_xport;

/* HBM ECC (fw_ecc.c): pages with an injected error. */
#define FW_ECC_MAX_PAGES	64u

struct fw_ecc_page {
	uint64_t page;			/* HBM offset, 4 KiB aligned */
	uint32_t ce_pending;		/* CEs the next read corrects */
	bool ue;			/* poisoned until reset */
	bool reported;			/* the UE record has named it */
};

struct fw_ecc {
	unsigned int n;			/* entries in use (also read atomically) */
	struct fw_ecc_page pages[FW_ECC_MAX_PAGES];
	uint32_t ce_count, ue_count;	/* since power-on */
};

/* The latched uncorrectable-ECC record (fw_ecc.c): one page at a time. */
struct fw_ecc_record {
	uint32_t info;
	uint64_t addr;
};

/* Boot registers and the image's identity (fw_boot.c, MAIA_REG_BOOT_*). */
struct fw_boot_regs {
	uint32_t status, error, size;
	uint64_t addr;
	bool pending;			/* a boot waits for the worker */
	uint32_t fw_version, fw_abi;	/* of the running image, once READY */
	uint64_t ready_ns;		/* device time the firmware became READY */
};

/* Event causes (MAIA_REG_INT_STATUS, MAIA_REG_INT_MASK). */
struct fw_irq_regs {
	uint32_t status, mask;
};

/* The latched MMU fault record (MAIA_REG_FAULT_*): the first since STATUS was cleared. */
struct fw_fault_record {
	uint32_t info;
	uint64_t addr;
};

/* Mailbox registers (fw_mbox.c, MAIA_REG_MBOX_*). */
struct fw_mbox_regs {
	uint32_t cmd, status;
	uint32_t arg[MAIA_MBOX_NARGS], resp[MAIA_MBOX_NARGS];
};

/* The fault queue's registers (fw_faultq.c, MAIA_REG_FAULTQ_*). */
struct fw_faultq {
	uint64_t base;			/* bus address of the ring */
	uint32_t size;			/* entries; 0: off */
	uint32_t prod, cons;		/* entries written, entries the host took */
	uint32_t overflows;		/* faults not queued since the SIZE write */
};

struct fw_queue {
	/* Registers, under sim->lock. */
	uint64_t sq, cq, shadow;
	uint32_t size, ctrl, head, tail, status, completed;
	uint32_t fetched;		/* MAIA_Q_FETCHED: entries started */
	uint32_t asid_bind;		/* MAIA_Q_ASID (1.3): BOUND | asid */
	uint32_t irq;			/* MAIA_Q_IRQ (1.3): ON_ARM | ARMED */
	bool enabled;			/* ENABLE accepted (config valid) */
	bool kicked;			/* shadow tail must be re-read */
	bool inject_hang, inject_fault;
	uint64_t gen;			/* bumped on every enable/disable */
	/*
	 * Aging: set when the scheduler passed over this runnable queue,
	 * cleared when it serves the queue or finds it not runnable.
	 */
	bool waiting;
	uint64_t waiting_since_ns;	/* device time of the first pass-over */
	/* MAIA_Q_STATUS_FABRIC_WAIT: job parked on a fabric operation (gen's) */
	bool fabric_wait;
	uint64_t fabric_wait_gen;
	uint32_t fabric_waits;		/* MAIA_Q_FABRIC_WAITS (1.4): waits begun */
	/* Worker-owned. */
	struct fw_job job;
};

struct maia_sim {
	struct maia_sim_config cfg;
	struct maia_sim_ops ops;
	void *opaque;
	struct fw_host host;		/* clock and threads, from ops */
	struct fw_tensor_engine *te;
	pthread_t worker;

	/*
	 * lock protects every register field below, the queues' register
	 * fields and the worker handshake flags. work_cond wakes the worker;
	 * idle_cond wakes host threads waiting in reset or drain.
	 */
	pthread_mutex_t lock;
	pthread_cond_t work_cond;
	pthread_cond_t idle_cond;
	bool stop;			/* destroy: worker exits */
	bool reset_req;			/* reset: worker parks (read atomically in long ops) */
	bool worker_busy;		/* worker is running work outside the lock */
	bool worker_idle;		/* nothing runnable and no timed waits */
	/*
	 * Doorbell fast path (maia_sim_set_inline_doorbell()): inline_doorbell
	 * enables it; inline_busy is set, under lock, while the doorbell
	 * writer's thread, or the fabric thread as a fabric operation ends
	 * (fw_sched_fabric_done_locked()), runs a job in place of the worker,
	 * which then must not run (its kicks are deferred to the end of the run).
	 * One thread at a time: fw_sched_inline_begin_locked() refuses while it
	 * is set.
	 */
	bool inline_doorbell;
	bool inline_busy;
	/* work_cond signals sent to the worker (fw_kick_worker_locked()); tests read it. */
	uint64_t worker_kicks;
	/*
	 * Queue whose job runs outside the lock (worker or inline path), or
	 * -1: disabling that queue waits for it (the 1.3 disable guarantee).
	 */
	int running_queue;

	/* The blocks' registers, all under lock. */
	uint32_t scratch;
	struct fw_boot_regs boot;	/* fw_boot.c */
	uint64_t time_base_ns;		/* host clock at reset (atomic) */
	uint32_t time_hi_latch;
	struct fw_irq_regs irq;		/* interrupt causes */
	struct fw_fault_record fault;	/* the latched MMU fault (fw_sched.c) */
	struct fw_faultq faultq;	/* fw_faultq.c */
	struct fw_mbox_regs mbox;	/* fw_mbox.c */
	/* Injected firmware crash: no mailbox, no jobs, heartbeat stopped (read atomically). */
	bool fw_crashed;
	uint32_t heartbeat_at_crash;
	uint32_t power_cap_mw;
	struct fw_queue queues[MAIA_MAX_QUEUES];
	unsigned int rr_next[4];	/* round-robin cursor per priority */

	/* Worker-owned (reset rewrites them while the worker is parked). */
	struct fw_image_params fw;
	/* Per address space; atomics: remote writes add to them from the fabric thread. */
	uint64_t sems[MAIA_MAX_ASIDS][MAIA_NUM_SEMAPHORES];
	uint8_t *bounce;		/* FW_BOUNCE_SIZE */
	uint8_t *cmd_buf;		/* current command, cmd_buf_size bytes */
	size_t cmd_buf_size;
	struct fw_cmd_work work;
	struct fw_chip chip;		/* the model's parameters, for cfg's tile layout */
	struct fw_timeline tl;

	/* Power controller and counters (fw_telemetry.c), under lock. */
	struct fw_telem telem;

	/* HBM ECC: the UE record and the injection address, under lock. */
	struct fw_ecc_record ecc_rec;	/* MAIA_REG_ECC_INFO, MAIA_REG_ECC_ADDR_* */
	uint64_t inject_addr;
	/* ecc_lock (inside lock) protects ecc: error table and counters. */
	pthread_mutex_t ecc_lock;
	struct fw_ecc ecc;

	/* mmu_lock protects ctx[] (roots and TLBs); engine threads may walk. */
	pthread_mutex_t mmu_lock;
	struct fw_asid_ctx ctx[MAIA_MAX_ASIDS];

	/* Fabric ports (fw_fabric_port.c); NULL when cfg.fabric_ports is 0. */
	struct fw_fabric *fab;
	/* The transport above them (fw_fabric_xport.c), created and freed with them. */
	struct fw_xport *xport;
	pthread_t fabric_thread;	/* runs the links and the transport */
	/*
	 * fab_cond (with lock) wakes the fabric thread. win_lock (inside lock,
	 * outside mmu_lock) protects win[]; the fabric thread holds it while it
	 * checks a key and moves the data, so a window closed under it sees no
	 * later access.
	 */
	pthread_cond_t fab_cond;
	pthread_mutex_t win_lock;
	struct fw_window win[MAIA_FABRIC_MAX_WINDOWS];
};

/* fw_sim.c */
void fw_guest_error(struct maia_sim *sim, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));
void fw_trace(struct maia_sim *sim, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));
uint64_t fw_now_ns(struct maia_sim *sim);
int fw_inject_locked(struct maia_sim *sim, unsigned int what, unsigned int queue);
uint32_t fw_heartbeat_locked(struct maia_sim *sim);
/* Set interrupt causes; returns true if MAIA_VEC_EVENT must be raised. */
bool fw_int_assert_locked(struct maia_sim *sim, uint32_t causes);
void fw_raise(struct maia_sim *sim, unsigned int vector);
void fw_kick_worker_locked(struct maia_sim *sim);
/* Parks the worker and fabric threads (reset_req set, both idle); lock not held. */
void fw_park_threads(struct maia_sim *sim);
void fw_reset_state_locked(struct maia_sim *sim);

/*
 * fw_fabric_port.c: the fabric ports' link engines and the fabric thread.
 * Every function is a no-op (false) when sim->fab is NULL.
 */
int fw_fabric_create(struct maia_sim *sim);		/* and start the thread */
void fw_fabric_stop(struct maia_sim *sim);		/* joins the thread (stop set) */
void fw_fabric_destroy(struct maia_sim *sim);
void fw_fabric_reset(struct maia_sim *sim);		/* worker and fabric parked */
bool fw_fabric_busy_locked(struct maia_sim *sim);
void fw_fabric_kick_locked(struct maia_sim *sim);
/*
 * The doorbell writer's run (fw_sched_inline_run()): sim's fabric thread
 * is not woken for what the run submits; at the end, the writer runs sim's
 * round itself if run_here and it may (no thread in one, links running),
 * else wakes the thread as the kick would have.
 */
void fw_fabric_defer_kicks(struct maia_sim *sim);
void fw_fabric_end_deferred(struct maia_sim *sim, bool run_here);

/* fw_fabric_win.c: the window table (maia/hw/fabric.h "Windows"). */
void fw_win_init(struct maia_sim *sim);
uint32_t fw_win_open(struct maia_sim *sim, const uint32_t *arg, uint32_t *key);
uint32_t fw_win_close(struct maia_sim *sim, uint32_t key);
void fw_win_close_asid(struct maia_sim *sim, unsigned int asid);
void fw_win_close_all(struct maia_sim *sim);
/*
 * A remote access through window `key` at `offset`: write len bytes from
 * buf (then, if sem, sems[asid][sem_index] += sem_value) or read len bytes
 * into buf. Returns MAIA_FABRIC_RESP_*; *sem_done tells a semaphore moved.
 */
unsigned int fw_win_write(struct maia_sim *sim, uint32_t key, uint64_t offset, const void *buf,
			  uint32_t len, bool sem, uint32_t sem_index, uint32_t sem_value,
			  uint64_t model_ns, bool *sem_done);
unsigned int fw_win_read(struct maia_sim *sim, uint32_t key, uint64_t offset, void *buf,
			 uint32_t len);
unsigned int fw_fabric_ports(const struct maia_sim *sim);
uint64_t fw_fabric_serial(const struct maia_sim *sim);
uint32_t fw_fabric_link_events_locked(const struct maia_sim *sim);
/* The published snapshot of port (NULL if none); valid while sim->lock is held. */
const struct maia_sim_fabric_port_info *fw_fabric_info_locked(const struct maia_sim *sim,
							      unsigned int port);

/* The failover threshold register at offset (MAIA_REG_FABRIC_FO_*); NULL: none. */
uint32_t *fw_fabric_fo_threshold_locked(struct maia_sim *sim, uint32_t offset);

/*
 * fw_fabric_regs.c: the BAR0 fabric block, under sim->lock. Read-only but
 * for the failover thresholds: a write returns whether it was one.
 */
bool fw_fabric_is_reg(uint32_t offset);
bool fw_fabric_reg_read_locked(struct maia_sim *sim, uint32_t offset, uint32_t *val);
bool fw_fabric_reg_write_locked(struct maia_sim *sim, uint32_t offset, uint32_t value);

/* fw_boot.c: runs on the worker. */
void fw_boot_run(struct maia_sim *sim);
void fw_image_params_defaults(struct fw_image_params *fw);

/* fw_mbox.c: runs on the worker. */
bool fw_mbox_exec_locked(struct maia_sim *sim);

/* fw_mmu.c */
struct fw_as {
	struct maia_sim *sim;
	unsigned int asid;
	/* First fault of the job, for FAULT_INFO/FAULT_ADDR. */
	bool faulted;
	uint64_t fault_va;
	unsigned int fault_access;	/* MAIA_ACCESS_* */
	/* First poisoned HBM page the job read (MAIA_STATUS_HBM_ECC). */
	bool ecc_hit;
	uint64_t ecc_page;
};
/* A contiguous piece of an address space: host bus range or HBM pointer. */
struct fw_seg {
	bool sysmem;
	uint64_t pa;			/* bus address if sysmem */
	uint8_t *hbm;			/* direct pointer if not */
	uint64_t avail;			/* bytes contiguous from va */
};
void fw_as_init(struct fw_as *as, struct maia_sim *sim, unsigned int asid);
int fw_as_segment(struct fw_as *as, uint64_t va, unsigned int access, uint64_t len,
		  struct fw_seg *seg);
int fw_as_read(struct fw_as *as, uint64_t va, void *buf, size_t len);
int fw_as_write(struct fw_as *as, uint64_t va, const void *buf, size_t len);
void fw_as_job_mem(struct fw_as *as, struct maia_job_mem *mem);
bool fw_asid_usable(struct maia_sim *sim, unsigned int asid);
int fw_mmu_set_context(struct maia_sim *sim, unsigned int asid, uint64_t root);
void fw_mmu_invalidate(struct maia_sim *sim, unsigned int asid);
void fw_mmu_reset(struct maia_sim *sim);

/* fw_ecc.c */
int fw_ecc_inject_locked(struct maia_sim *sim, unsigned int what, uint64_t addr, bool *raise);
bool fw_ecc_latch_next_locked(struct maia_sim *sim);
int fw_ecc_check_read(struct maia_sim *sim, uint64_t pa, uint64_t *len, uint64_t *bad);
bool fw_ecc_job_hit_locked(struct maia_sim *sim, unsigned int asid, unsigned int qi,
			   uint64_t page);
uint32_t fw_ecc_count_locked(struct maia_sim *sim, bool ue);
void fw_ecc_reset_locked(struct maia_sim *sim);

/* fw_faultq.c: the fault queue, under sim->lock */
bool fw_faultq_is_reg(uint32_t offset);
bool fw_faultq_reg_read_locked(struct maia_sim *sim, uint32_t offset, uint32_t *val);
void fw_faultq_reg_write_locked(struct maia_sim *sim, uint32_t offset, uint32_t value);
void fw_faultq_reset_locked(struct maia_sim *sim);
void fw_faultq_push_locked(struct maia_sim *sim, unsigned int qi, uint64_t job_id,
			   const struct fw_as *as);

/* Semaphores: the worker and the fabric thread (remote increments) share them. */
bool fw_sem_add(uint64_t *sem, uint64_t value);		/* false on overflow */
bool fw_sem_take(uint64_t *sem, uint64_t value);	/* false if below value */

/* fw_cmd.c: runs a job's commands on the worker. */
enum fw_run_result {
	FW_RUN_DONE,		/* *status and *error_offset are final */
	FW_RUN_PARKED,	/* waiting on a semaphore or a fabric operation */
	FW_RUN_YIELD,		/* quantum used up; runnable */
	FW_RUN_STOPPED,	/* reset or queue disable: job abandoned */
};
enum fw_run_result fw_cmd_run(struct maia_sim *sim, unsigned int qi,
				  struct fw_job *job, struct fw_as *as,
				  uint32_t *status, uint32_t *error_offset);

/* fw_timeline.c: the modeled clock; worker only. */
uint64_t fw_tl_queue_now(struct maia_sim *sim, unsigned int qi);
/* A job starts on queue qi: returns its modeled start. */
uint64_t fw_tl_job_start(struct maia_sim *sim, unsigned int qi);
/* The job on queue qi completes: its end_ns. */
uint64_t fw_tl_job_done(struct maia_sim *sim, unsigned int qi);
/* Queue qi's next command starts no earlier than t. */
void fw_tl_after(struct maia_sim *sim, unsigned int qi, uint64_t t);
void fw_tl_sem_signal(struct maia_sim *sim, unsigned int qi, unsigned int asid,
		      unsigned int index);
/* A signal at modeled time t from anywhere (a remote write: the fabric thread). */
void fw_tl_sem_signal_at(struct maia_sim *sim, unsigned int asid, unsigned int index,
			 uint64_t t);
/* A wait on the semaphore succeeded: after its last signal. */
void fw_tl_sem_taken(struct maia_sim *sim, unsigned int qi, unsigned int asid,
		     unsigned int index);
/*
 * Around one command: begin clears sim->work, which the command fills, and
 * holds the queue for its posted writes unless opcode may pass them.
 */
void fw_tl_cmd_begin(struct maia_sim *sim, unsigned int qi, uint16_t opcode);
void fw_tl_dma_chunk(struct maia_sim *sim, uint64_t n, bool src_hbm, bool dst_hbm);
void fw_tl_collective_work(struct maia_sim *sim, const struct maia_cmd_collective *c);
/* The command ran with status: lays it out in modeled time, returns its end. */
/* The modeled time the command would start at: its queue and engine ready. */
uint64_t fw_tl_cmd_start(struct maia_sim *sim, unsigned int qi, uint16_t opcode);
uint64_t fw_tl_cmd_end(struct maia_sim *sim, unsigned int qi, uint16_t opcode, int status);

/* fw_sched.c */
void *fw_worker_main(void *arg);
void fw_sched_abort_inflight(struct maia_sim *sim);
void fw_sched_release_fops(struct maia_sim *sim);
bool fw_sched_inline_begin_locked(struct maia_sim *sim);
void fw_sched_inline_run(struct maia_sim *sim);
/* The fabric thread: an operation ended; its job goes on (fw_sched.c). */
void fw_sched_fabric_done_locked(struct maia_sim *sim);
bool fw_sched_queue_parked_locked(struct maia_sim *sim, unsigned int qi);
uint64_t fw_sched_worker_kicks(struct maia_sim *sim);
bool fw_job_should_stop(struct maia_sim *sim, unsigned int qi,
			  const struct fw_job *job);

#endif /* FWSIM_INTERNAL_H */
