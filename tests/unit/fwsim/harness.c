// SPDX-License-Identifier: MIT
/* firmware-sim test harness; see harness.h. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "harness.h"

#ifndef MAIA_FW_DIR
#define MAIA_FW_DIR "../../build/firmware-sim/firmware/maia"
#endif

static bool dma_ok(struct env *e, uint64_t addr, size_t len)
{
	uint64_t fail;

	if (addr < HOST_BASE || addr - HOST_BASE > e->host_size ||
	    len > e->host_size - (addr - HOST_BASE))
		return false;
	pthread_mutex_lock(&e->lock);
	fail = e->dma_fail_addr;
	pthread_mutex_unlock(&e->lock);
	if (fail && addr < (fail | 0xfff) + 1 && addr + len > (fail & ~0xfffull))
		return false;
	return true;
}

static int env_dma_read(void *opaque, uint64_t addr, void *buf, size_t len)
{
	struct env *e = opaque;

	pthread_mutex_lock(&e->lock);
	while (e->gate_closed && addr <= e->gate_addr && e->gate_addr < addr + len) {
		e->gate_hit = true;
		pthread_cond_broadcast(&e->cond);
		pthread_cond_wait(&e->cond, &e->lock);
	}
	pthread_mutex_unlock(&e->lock);
	if (!dma_ok(e, addr, len))
		return -1;
	memcpy(buf, e->host + (addr - HOST_BASE), len);
	return 0;
}

void gate_close(struct env *e, uint64_t addr)
{
	pthread_mutex_lock(&e->lock);
	e->gate_addr = addr;
	e->gate_closed = true;
	e->gate_hit = false;
	pthread_mutex_unlock(&e->lock);
}

void gate_wait_hit(struct env *e)
{
	pthread_mutex_lock(&e->lock);
	while (!e->gate_hit)
		pthread_cond_wait(&e->cond, &e->lock);
	pthread_mutex_unlock(&e->lock);
}

void gate_open(struct env *e)
{
	pthread_mutex_lock(&e->lock);
	e->gate_closed = false;
	pthread_cond_broadcast(&e->cond);
	pthread_mutex_unlock(&e->lock);
}

static int env_dma_write(void *opaque, uint64_t addr, const void *buf, size_t len)
{
	struct env *e = opaque;

	if (!dma_ok(e, addr, len))
		return -1;
	memcpy(e->host + (addr - HOST_BASE), buf, len);
	return 0;
}

static void env_raise(void *opaque, unsigned int vector)
{
	void (*hook)(struct env *e, unsigned int vector);
	struct env *e = opaque;

	pthread_mutex_lock(&e->lock);
	if (vector < ENV_MAX_VEC)
		e->irqs[vector]++;
	pthread_cond_broadcast(&e->cond);
	pthread_mutex_unlock(&e->lock);
	hook = __atomic_load_n(&e->irq_hook, __ATOMIC_ACQUIRE);
	if (hook)
		hook(e, vector);
}

static void env_guest_error(void *opaque, const char *msg)
{
	struct env *e = opaque;

	pthread_mutex_lock(&e->lock);
	e->guest_errors++;
	snprintf(e->last_error, sizeof(e->last_error), "%s", msg);
	pthread_mutex_unlock(&e->lock);
	if (getenv("FWSIM_VERBOSE"))
		printf("# guest error: %s\n", msg);
}

/* FWSIM_TRACE set: trace messages printed. Read when a device is made. */
static bool env_tracing;

static void env_trace(void *opaque, const char *msg)
{
	(void)opaque;
	if (__atomic_load_n(&env_tracing, __ATOMIC_RELAXED))
		printf("# trace: %s\n", msg);
}

static bool env_trace_enabled(void *opaque)
{
	(void)opaque;
	return __atomic_load_n(&env_tracing, __ATOMIC_RELAXED);
}

static void env_shadow_changed(void *opaque, unsigned int queue, bool enabled)
{
	struct env *e = opaque;

	pthread_mutex_lock(&e->lock);
	e->shadow_events++;
	e->shadow_queue = (int)queue;
	e->shadow_enabled = enabled;
	pthread_mutex_unlock(&e->lock);
}

/* On the device's fabric thread. */
static int env_fabric_tx(void *opaque, unsigned int port, const void *frame, size_t len)
{
	struct env *e = opaque;

	return e->fabric_tx ? e->fabric_tx(e->fabric_opaque, port, frame, len) : -1;
}

/* On the device's fabric thread: frame is lent (maia_sim_fabric_frame_put()). */
static int env_tx_lend(void *opaque, unsigned int port, const void *frame, size_t len)
{
	struct env *e = opaque;

	return e->fabric_tx_lend(e->fabric_opaque, port, frame, len);
}

/* Asked by a doorbell writer with no library lock held. */
static uint32_t env_direct_ports(void *opaque)
{
	struct env *e = opaque;

	return e->fabric_direct_ports(e->fabric_opaque);
}

static const struct maia_sim_ops env_ops = {
	.dma_read = env_dma_read,
	.dma_write = env_dma_write,
	.raise_irq = env_raise,
	.guest_error = env_guest_error,
	.trace = env_trace,
	.trace_enabled = env_trace_enabled,
	.shadow_changed = env_shadow_changed,
	.fabric_tx = env_fabric_tx,
};

int env_init(struct env *e, unsigned int num_queues, uint64_t hbm_size, uint64_t host_size)
{
	return env_init_fabric(e, num_queues, hbm_size, host_size, 0, 0, NULL, NULL);
}

unsigned int env_fabric_window;
uint32_t env_fabric_drop_ppm;
uint32_t env_fabric_lat_ns[MAIA_FABRIC_MAX_PORTS];
int (*env_fabric_tx_lend)(void *opaque, unsigned int port, const void *frame, size_t len);
uint32_t (*env_fabric_direct_ports)(void *opaque);

int env_init_fabric(struct env *e, unsigned int num_queues, uint64_t hbm_size,
		    uint64_t host_size, unsigned int ports, uint64_t serial,
		    int (*tx)(void *opaque, unsigned int port, const void *frame, size_t len),
		    void *opaque)
{
	struct maia_sim_config cfg;
	struct maia_sim_ops ops;

	memset(e, 0, sizeof(*e));
	e->hbm = calloc(1, hbm_size);
	e->host = calloc(1, host_size);
	if (!e->hbm || !e->host)
		return -ENOMEM;
	e->hbm_size = hbm_size;
	e->host_size = host_size;
	e->host_next = HOST_BASE;
	e->hbm_next = MAIA_PAGE_SIZE;	/* root 0 means "no context": keep page 0 free */
	e->num_queues = num_queues;
	e->shadow_queue = -1;
	e->fabric_tx = tx;
	e->fabric_tx_lend = env_fabric_tx_lend;
	e->fabric_direct_ports = env_fabric_direct_ports;
	e->fabric_opaque = opaque;
	pthread_mutex_init(&e->lock, NULL);
	pthread_cond_init(&e->cond, NULL);
	/* Other devices' threads may be reading it. */
	__atomic_store_n(&env_tracing, getenv("FWSIM_TRACE") != NULL, __ATOMIC_RELAXED);
	maia_sim_config_defaults(&cfg);
	cfg.hbm = e->hbm;
	cfg.hbm_size = hbm_size;
	cfg.num_queues = num_queues;
	cfg.worker_threads = 2;
	cfg.fabric_ports = ports;
	cfg.serial = serial;
	cfg.fabric_window = env_fabric_window;
	for (unsigned int p = 0; p < MAIA_FABRIC_MAX_PORTS; p++)
		cfg.fabric_drop_ppm[p] = env_fabric_drop_ppm;
	memcpy(cfg.fabric_lat_ns, env_fabric_lat_ns, sizeof(cfg.fabric_lat_ns));
	ops = env_ops;
	if (e->fabric_tx_lend)
		ops.fabric_tx_lend = env_tx_lend;
	if (e->fabric_direct_ports)
		ops.fabric_direct_ports = env_direct_ports;
	e->sim = maia_sim_create(&cfg, &ops, e);	/* it keeps a copy of ops */
	if (!e->sim) {
		int err = -errno;

		env_fini(e);		/* a refused device leaves nothing behind */
		return err;
	}
	return 0;
}

void env_fini(struct env *e)
{
	maia_sim_destroy(e->sim);
	pthread_cond_destroy(&e->cond);
	pthread_mutex_destroy(&e->lock);
	free(e->hbm);
	free(e->host);
}

void *host_ptr(struct env *e, uint64_t bus)
{
	if (bus < HOST_BASE || bus - HOST_BASE >= e->host_size) {
		fprintf(stderr, "host_ptr: 0x%llx outside host memory\n", (unsigned long long)bus);
		abort();
	}
	return e->host + (bus - HOST_BASE);
}

uint64_t host_alloc(struct env *e, uint64_t size, uint64_t align)
{
	uint64_t a = (e->host_next + align - 1) & ~(align - 1);

	if (a + size > HOST_BASE + e->host_size) {
		fprintf(stderr, "host_alloc: out of fake host memory\n");
		abort();
	}
	e->host_next = a + size;
	memset(host_ptr(e, a), 0, size);
	return a;
}

uint64_t hbm_alloc(struct env *e, uint64_t size, uint64_t align)
{
	uint64_t a = (e->hbm_next + align - 1) & ~(align - 1);

	if (a + size > e->hbm_size) {
		fprintf(stderr, "hbm_alloc: out of HBM\n");
		abort();
	}
	e->hbm_next = a + size;
	memset(e->hbm + a, 0, size);
	return a;
}

uint32_t rd(struct env *e, uint32_t off)
{
	return maia_sim_mmio_read(e->sim, off);
}

void wr(struct env *e, uint32_t off, uint32_t val)
{
	maia_sim_mmio_write(e->sim, off, val);
}

unsigned int irq_count(struct env *e, unsigned int vector)
{
	unsigned int n;

	pthread_mutex_lock(&e->lock);
	n = e->irqs[vector];
	pthread_mutex_unlock(&e->lock);
	return n;
}

unsigned int guest_errors(struct env *e)
{
	unsigned int n;

	pthread_mutex_lock(&e->lock);
	n = e->guest_errors;
	pthread_mutex_unlock(&e->lock);
	return n;
}

bool wait_irq(struct env *e, unsigned int vector, unsigned int n, unsigned int timeout_ms)
{
	struct timespec ts;
	bool ok;

	clock_gettime(CLOCK_REALTIME, &ts);
	ts.tv_sec += timeout_ms / 1000;
	ts.tv_nsec += (long)(timeout_ms % 1000) * 1000000L;
	if (ts.tv_nsec >= 1000000000L) {
		ts.tv_sec++;
		ts.tv_nsec -= 1000000000L;
	}
	pthread_mutex_lock(&e->lock);
	while (e->irqs[vector] < n)
		if (pthread_cond_timedwait(&e->cond, &e->lock, &ts))
			break;
	ok = e->irqs[vector] >= n;
	pthread_mutex_unlock(&e->lock);
	return ok;
}

const char *fw_path(const char *name)
{
	static char path[4096];
	const char *dir = getenv("MAIA_FW_DIR");

	snprintf(path, sizeof(path), "%s/%s", dir ? dir : MAIA_FW_DIR, name);
	return path;
}

void boot_start(struct env *e, const void *img, size_t len)
{
	uint64_t addr = host_alloc(e, len ? len : 1, 4096);

	memcpy(host_ptr(e, addr), img, len);
	wr(e, MAIA_REG_BOOT_ADDR_LO, (uint32_t)addr);
	wr(e, MAIA_REG_BOOT_ADDR_HI, (uint32_t)(addr >> 32));
	wr(e, MAIA_REG_BOOT_SIZE, (uint32_t)len);
	wr(e, MAIA_REG_BOOT_CTRL, MAIA_BOOT_CTRL_START);
}

uint32_t boot_image(struct env *e, const void *img, size_t len)
{
	boot_start(e, img, len);
	maia_sim_drain(e->sim);
	return rd(e, MAIA_REG_BOOT_STATUS);
}

uint32_t boot_file(struct env *e, const char *name)
{
	const char *path = fw_path(name);
	FILE *f = fopen(path, "rb");
	static uint8_t img[MAIA_FW_MAX_SIZE];
	size_t len;

	if (!f) {
		fprintf(stderr, "cannot open %s (build firmware-sim first)\n", path);
		exit(2);
	}
	len = fread(img, 1, sizeof(img), f);
	fclose(f);
	return boot_image(e, img, len);
}

void boot_or_die(struct env *e)
{
	if (boot_file(e, "maia_fw_v1.bin") != MAIA_BOOT_STATUS_READY) {
		fprintf(stderr, "boot failed: error %u\n", rd(e, MAIA_REG_BOOT_ERROR));
		exit(2);
	}
}

uint32_t mbox(struct env *e, uint32_t cmd, uint32_t a0, uint32_t a1, uint32_t a2,
	      uint32_t *resp)
{
	return mbox4(e, cmd, a0, a1, a2, 0, resp);
}

uint32_t mbox4(struct env *e, uint32_t cmd, uint32_t a0, uint32_t a1, uint32_t a2,
	       uint32_t a3, uint32_t *resp)
{
	uint32_t st;

	wr(e, MAIA_REG_MBOX_ARG(0), a0);
	wr(e, MAIA_REG_MBOX_ARG(1), a1);
	wr(e, MAIA_REG_MBOX_ARG(2), a2);
	wr(e, MAIA_REG_MBOX_ARG(3), a3);
	wr(e, MAIA_REG_MBOX_CMD, cmd);
	maia_sim_drain(e->sim);
	st = rd(e, MAIA_REG_MBOX_STATUS);
	if (resp)
		for (unsigned int i = 0; i < MAIA_MBOX_NARGS; i++)
			resp[i] = rd(e, MAIA_REG_MBOX_RESP(i));
	wr(e, MAIA_REG_INT_STATUS, MAIA_INT_MBOX_DONE);
	if (st & MAIA_MBOX_STATUS_BUSY)
		return 0xffffffffu;
	return st & MAIA_MBOX_STATUS_RESULT_MASK;
}

void queue_setup(struct env *e, struct tq *q, unsigned int qi, uint32_t size, unsigned int prio)
{
	q->qi = qi;
	q->size = size;
	q->tail = 0;
	q->sq = host_alloc(e, (uint64_t)size * sizeof(struct maia_sq_entry), 4096);
	q->cq = host_alloc(e, (uint64_t)size * sizeof(struct maia_cq_entry), 4096);
	wr(e, MAIA_REG_Q(qi, MAIA_Q_SQ_LO), (uint32_t)q->sq);
	wr(e, MAIA_REG_Q(qi, MAIA_Q_SQ_HI), (uint32_t)(q->sq >> 32));
	wr(e, MAIA_REG_Q(qi, MAIA_Q_CQ_LO), (uint32_t)q->cq);
	wr(e, MAIA_REG_Q(qi, MAIA_Q_CQ_HI), (uint32_t)(q->cq >> 32));
	wr(e, MAIA_REG_Q(qi, MAIA_Q_SIZE), size);
	wr(e, MAIA_REG_Q(qi, MAIA_Q_CTRL), MAIA_Q_CTRL_ENABLE | (prio << MAIA_Q_CTRL_PRIO_SHIFT));
}

uint32_t queue_push(struct env *e, struct tq *q, uint64_t cmdbuf, uint32_t size,
		    uint16_t asid, uint16_t flags, uint64_t job_id, bool ring)
{
	struct maia_sq_entry sqe = {
		.cmdbuf_addr = cmdbuf,
		.cmdbuf_size = size,
		.asid = asid,
		.flags = flags,
		.job_id = job_id,
	};
	uint32_t slot = q->tail;

	memcpy(host_ptr(e, q->sq + slot * sizeof(sqe)), &sqe, sizeof(sqe));
	memset(cqe_at(e, q, slot), 0, sizeof(struct maia_cq_entry));
	q->tail = (q->tail + 1) % q->size;
	if (ring)
		wr(e, MAIA_REG_DOORBELL(q->qi), q->tail);
	return slot;
}

struct maia_cq_entry *cqe_at(struct env *e, struct tq *q, uint32_t slot)
{
	return host_ptr(e, q->cq + slot * sizeof(struct maia_cq_entry));
}

void cb_init(struct cmdbuf *cb)
{
	cb->len = 0;
}

void cb_add(struct cmdbuf *cb, const void *cmd, uint32_t size)
{
	if (cb->len + size > sizeof(cb->buf)) {
		fprintf(stderr, "cb_add: command buffer full\n");
		abort();
	}
	memcpy(cb->buf + cb->len, cmd, size);
	cb->len += size;
}

uint64_t cb_to_host(struct env *e, const struct cmdbuf *cb)
{
	uint64_t a = host_alloc(e, cb->len ? cb->len : 8, 64);

	memcpy(host_ptr(e, a), cb->buf, cb->len);
	return a;
}

struct maia_cq_entry run_cb(struct env *e, struct tq *q, const struct cmdbuf *cb)
{
	static uint64_t next_id = 0x1000;
	uint32_t slot = queue_push(e, q, cb_to_host(e, cb), cb->len, 0, 0, next_id++, true);

	maia_sim_drain(e->sim);
	return *cqe_at(e, q, slot);
}

void cmd_copy(struct cmdbuf *cb, uint64_t src, uint64_t dst, uint64_t width, uint32_t height,
	      uint64_t src_stride, uint64_t dst_stride)
{
	struct maia_cmd_dma_copy c = {
		.hdr = { .opcode = MAIA_OP_DMA_COPY, .size = sizeof(c) },
		.src = src, .dst = dst, .width = width, .height = height,
		.src_stride = src_stride, .dst_stride = dst_stride,
	};

	cb_add(cb, &c, sizeof(c));
}

void cmd_fill(struct cmdbuf *cb, uint64_t dst, uint64_t size, uint32_t pattern)
{
	struct maia_cmd_fill c = {
		.hdr = { .opcode = MAIA_OP_FILL, .size = sizeof(c) },
		.dst = dst, .size = size, .pattern = pattern,
	};

	cb_add(cb, &c, sizeof(c));
}

void cmd_fence(struct cmdbuf *cb, uint64_t addr, uint64_t value)
{
	struct maia_cmd_fence_write c = {
		.hdr = { .opcode = MAIA_OP_FENCE_WRITE, .size = sizeof(c) },
		.addr = addr, .value = value,
	};

	cb_add(cb, &c, sizeof(c));
}

void cmd_timestamp(struct cmdbuf *cb, uint64_t addr)
{
	struct maia_cmd_timestamp c = {
		.hdr = { .opcode = MAIA_OP_TIMESTAMP, .size = sizeof(c) },
		.addr = addr,
	};

	cb_add(cb, &c, sizeof(c));
}

void cmd_sem_signal(struct cmdbuf *cb, uint32_t index, uint32_t value)
{
	struct maia_cmd_sem_signal c = {
		.hdr = { .opcode = MAIA_OP_SEM_SIGNAL, .size = sizeof(c) },
		.index = index, .value = value,
	};

	cb_add(cb, &c, sizeof(c));
}

void cmd_sem_wait(struct cmdbuf *cb, uint32_t index, uint32_t value, uint32_t timeout_us)
{
	struct maia_cmd_sem_wait c = {
		.hdr = { .opcode = MAIA_OP_SEM_WAIT, .size = sizeof(c) },
		.index = index, .value = value, .timeout_us = timeout_us,
	};

	cb_add(cb, &c, sizeof(c));
}

uint64_t pt_new_root(struct env *e)
{
	return hbm_alloc(e, MAIA_PAGE_SIZE, MAIA_PAGE_SIZE);
}

static uint64_t *pt_entry(struct env *e, uint64_t table, unsigned int index)
{
	return (uint64_t *)(e->hbm + table + 8ull * index);
}

void pt_map(struct env *e, uint64_t root, uint64_t va, uint64_t pa, uint64_t flags, bool huge)
{
	unsigned int leaf_level = huge ? 2 : 3;
	uint64_t table = root;

	for (unsigned int level = 0; level < leaf_level; level++) {
		unsigned int idx = (unsigned int)((va >> (39 - 9 * level)) & 0x1ff);
		uint64_t *pte = pt_entry(e, table, idx);

		if (!(*pte & MAIA_PTE_VALID))
			*pte = hbm_alloc(e, MAIA_PAGE_SIZE, MAIA_PAGE_SIZE) | MAIA_PTE_VALID;
		table = *pte & MAIA_PTE_ADDR_MASK;
	}
	*pt_entry(e, table, (unsigned int)((va >> (39 - 9 * leaf_level)) & 0x1ff)) =
		pa | flags | MAIA_PTE_VALID | (huge ? MAIA_PTE_HUGE : 0);
}

uint32_t ref_crc32(const void *buf, size_t len)
{
	const uint8_t *p = buf;
	uint32_t crc = 0xffffffffu;

	for (size_t i = 0; i < len; i++) {
		crc ^= p[i];
		for (int k = 0; k < 8; k++)
			crc = (crc >> 1) ^ (0xedb88320u & (0u - (crc & 1u)));
	}
	return ~crc;
}

void fill_random(void *buf, size_t len, uint32_t seed)
{
	uint8_t *p = buf;
	uint32_t x = seed ? seed : 1;

	for (size_t i = 0; i < len; i++) {
		x ^= x << 13;
		x ^= x >> 17;
		x ^= x << 5;
		p[i] = (uint8_t)x;
	}
}
