/* SPDX-License-Identifier: MIT */
/*
 * Test harness for firmware-sim: a device with malloc'd HBM, a fake host
 * memory at HOST_BASE, interrupt and guest-error recording, and helpers to
 * boot, use the mailbox, set up queues, submit jobs and build page tables.
 * The helpers poke registers exactly as a driver would.
 */
#ifndef FWSIM_HARNESS_H
#define FWSIM_HARNESS_H

#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "maia/hw/boot.h"
#include "maia/hw/cmd.h"
#include "maia/hw/fabric.h"
#include "maia/hw/mbox.h"
#include "maia/hw/mmu.h"
#include "maia/hw/queue.h"
#include "maia/hw/regs.h"
#include "maia/sim.h"


#define HOST_BASE	0x100000000ull	/* bus address of fake host memory */
#define ENV_MAX_VEC	MAIA_NUM_VECTORS(MAIA_MAX_QUEUES)

struct env {
	struct maia_sim *sim;
	uint8_t *hbm;
	uint64_t hbm_size;
	uint8_t *host;
	uint64_t host_size;
	uint64_t host_next;		/* bump allocator (bus address) */
	uint64_t hbm_next;		/* bump allocator (HBM offset) */
	unsigned int num_queues;

	pthread_mutex_t lock;		/* protects the fields below */
	pthread_cond_t cond;
	unsigned int irqs[ENV_MAX_VEC];
	unsigned int guest_errors;
	char last_error[256];
	unsigned int shadow_events;
	int shadow_queue;
	bool shadow_enabled;
	uint64_t dma_fail_addr;		/* DMA touching this page fails (0 = none) */
	/* A DMA read of gate_addr waits while gate_closed (gate_close()). */
	uint64_t gate_addr;
	bool gate_closed, gate_hit;

	/*
	 * Called by every raise_irq, in the raising thread, after the count and
	 * outside lock (NULL: none; set with __atomic_store_n): a test steps in
	 * where the device calls out.
	 */
	void (*irq_hook)(struct env *e, unsigned int vector);
	/* Fabric ports (env_init_fabric()): frames out of port go to fabric_tx. */
	int (*fabric_tx)(void *opaque, unsigned int port, const void *frame, size_t len);
	/* Set (env_fabric_tx_lend): DATA frames are lent (maia_sim_ops.fabric_tx_lend). */
	int (*fabric_tx_lend)(void *opaque, unsigned int port, const void *frame, size_t len);
	/* Set (env_fabric_direct_ports): maia_sim_ops.fabric_direct_ports. */
	uint32_t (*fabric_direct_ports)(void *opaque);
	void *fabric_opaque;
};

struct tq {
	unsigned int qi;
	uint64_t sq, cq;		/* bus addresses */
	uint32_t size, tail;
};

/* A command buffer being built. */
struct cmdbuf {
	uint8_t buf[65536];
	uint32_t len;
};

int env_init(struct env *e, unsigned int num_queues, uint64_t hbm_size, uint64_t host_size);
/* A device with fabric ports whose frames go to tx(opaque, port, frame, len). */
int env_init_fabric(struct env *e, unsigned int num_queues, uint64_t hbm_size,
		    uint64_t host_size, unsigned int ports, uint64_t serial,
		    int (*tx)(void *opaque, unsigned int port, const void *frame, size_t len),
		    void *opaque);
void env_fini(struct env *e);
/* maia_sim_config.fabric_window of the devices env_init_fabric() makes next (0: default). */
extern unsigned int env_fabric_window;
/* maia_sim_config.fabric_drop_ppm of every port of the next env_init_fabric() (0: none). */
extern uint32_t env_fabric_drop_ppm;
/* maia_sim_config.fabric_lat_ns of the next env_init_fabric() (0: none). */
extern uint32_t env_fabric_lat_ns[MAIA_FABRIC_MAX_PORTS];
/* ops.fabric_tx_lend of the devices env_init_fabric() makes next (NULL: none). */
extern int (*env_fabric_tx_lend)(void *opaque, unsigned int port, const void *frame, size_t len);
/* ops.fabric_direct_ports of the devices env_init_fabric() makes next (NULL: none). */
extern uint32_t (*env_fabric_direct_ports)(void *opaque);

void *host_ptr(struct env *e, uint64_t bus);
uint64_t host_alloc(struct env *e, uint64_t size, uint64_t align);
uint64_t hbm_alloc(struct env *e, uint64_t size, uint64_t align);

/*
 * Holds the device worker: its next DMA read of @addr (a command buffer,
 * say) blocks until gate_open(). gate_wait_hit() returns once the worker is
 * blocked there, so the test can set things up while the device stands
 * still, however slowly the test itself runs.
 */
void gate_close(struct env *e, uint64_t addr);
void gate_wait_hit(struct env *e);
void gate_open(struct env *e);

uint32_t rd(struct env *e, uint32_t off);
void wr(struct env *e, uint32_t off, uint32_t val);
unsigned int irq_count(struct env *e, unsigned int vector);
unsigned int guest_errors(struct env *e);
/* Waits until vector has fired at least n times in total. */
bool wait_irq(struct env *e, unsigned int vector, unsigned int n, unsigned int timeout_ms);

/* Path of a firmware image built by firmware-sim/Makefile. */
const char *fw_path(const char *name);
/* Hands the device an image in memory and starts the boot, without waiting. */
void boot_start(struct env *e, const void *img, size_t len);
/* Boots from an image in memory / a file; returns BOOT_STATUS after the boot. */
uint32_t boot_image(struct env *e, const void *img, size_t len);
uint32_t boot_file(struct env *e, const char *name);
/* Boots the real v1 image; aborts the test program if that fails. */
void boot_or_die(struct env *e);

/* Runs a mailbox command; returns the result, fills resp (may be NULL). */
uint32_t mbox(struct env *e, uint32_t cmd, uint32_t a0, uint32_t a1, uint32_t a2,
	      uint32_t *resp);
/* The same with arg3. */
uint32_t mbox4(struct env *e, uint32_t cmd, uint32_t a0, uint32_t a1, uint32_t a2,
	       uint32_t a3, uint32_t *resp);

void queue_setup(struct env *e, struct tq *q, unsigned int qi, uint32_t size, unsigned int prio);
/* Writes an entry at the tail; ring=true also rings the doorbell. Returns the slot. */
uint32_t queue_push(struct env *e, struct tq *q, uint64_t cmdbuf, uint32_t size,
		    uint16_t asid, uint16_t flags, uint64_t job_id, bool ring);
struct maia_cq_entry *cqe_at(struct env *e, struct tq *q, uint32_t slot);

void cb_init(struct cmdbuf *cb);
void cb_add(struct cmdbuf *cb, const void *cmd, uint32_t size);
/* Copies the command buffer to host memory and returns its bus address. */
uint64_t cb_to_host(struct env *e, const struct cmdbuf *cb);
/* Submits cb (in host memory, ASID 0) on q, drains, returns the CQ entry. */
struct maia_cq_entry run_cb(struct env *e, struct tq *q, const struct cmdbuf *cb);

/* Command builders. */
void cmd_copy(struct cmdbuf *cb, uint64_t src, uint64_t dst, uint64_t width, uint32_t height,
	      uint64_t src_stride, uint64_t dst_stride);
void cmd_fill(struct cmdbuf *cb, uint64_t dst, uint64_t size, uint32_t pattern);
void cmd_fence(struct cmdbuf *cb, uint64_t addr, uint64_t value);
void cmd_timestamp(struct cmdbuf *cb, uint64_t addr);
void cmd_sem_signal(struct cmdbuf *cb, uint32_t index, uint32_t value);
void cmd_sem_wait(struct cmdbuf *cb, uint32_t index, uint32_t value, uint32_t timeout_us);

/* Page tables, written by the test itself (not by the device code). */
uint64_t pt_new_root(struct env *e);
void pt_map(struct env *e, uint64_t root, uint64_t va, uint64_t pa, uint64_t flags, bool huge);

/* Independent bitwise CRC-32 reference. */
uint32_t ref_crc32(const void *buf, size_t len);

/* Deterministic pseudo-random bytes. */
void fill_random(void *buf, size_t len, uint32_t seed);

#endif /* FWSIM_HARNESS_H */
