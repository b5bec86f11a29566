// SPDX-License-Identifier: MIT
/*
 * MAIA_OP_COLLECTIVE on real devices: 2, 3 and 4 struct maia_sim in one
 * process, booted with the real firmware image and cabled in a ring by
 * function calls (device i's port 0 to device i+1's port 1; each port's
 * fabric_tx calls the peer's maia_sim_fabric_rx()), one cable direction
 * losing 5% of frames (seeded) on the 3-device ring. The 3- and 4-device
 * rings pass DATA frames as QEMU's hubports do: lent by the sender
 * (fabric_tx_lend) and lent on to the receiver (maia_sim_fabric_rx_lent),
 * which gives each back exactly once. Every rank submits the same
 * collective as a job on its own device; the results are compared with the
 * CPU reference of coll_ref.c (FP32 bitwise), back to back on one
 * communicator. Then a rank whose send buffer is not there: it fails with
 * its own memory error, the others with FABRIC_TIMEOUT (never a hang), and
 * the next collective on the same devices works without a reset. Failover:
 * a cable of a ring of 2, 3 or 4 pulled before collectives, and one pulled
 * while an in-place all-reduce runs: every collective ends OK with the
 * reference's bits, over the other cable (2) or relayed round the ring
 * the other way (3, 4), and the failover counters say so. Some of it again
 * with the inline doorbell path on (QEMU's default), where the doorbell
 * writer starts a collective and the fabric thread completes its job: a
 * command after the collective in its job and the next job of its queue see
 * its result, and drain waits for it.
 *
 * Decisions are by events (a queue's interrupt after its completion entry,
 * port state); the only clock use is a hang guard of 60 s per wait.
 */
#define _GNU_SOURCE
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "coll_ref.h"
#include "harness.h"
#include "maia/hw/dtype.h"
#include "maia/hw/fabric.h"
#include "tap.h"
#include "../../../firmware-sim/src/fw_fabric.h"
#include "../../../firmware-sim/src/fw_fabric_xport.h"
#include "../../../firmware-sim/src/fw_internal.h"

#define MAX_DEV		4u
#define NPORTS		2u
#define SEND_PORT	0u
#define RECV_PORT	1u
#define HOST_SIZE	(64ull << 20)
#define HBM_SIZE	(4ull << 20)
#define HANG_GUARD_MS	60000u
#define BAD_BUS_ADDR	0x7000000000000ull	/* no host memory there */
/* A collective's own timeout where none is expected: no false alarm under load. */
#define LONG_TIMEOUT_MS	30000u

/* One direction of a cable. */
struct dir {
	pthread_mutex_t lock;		/* protects every field */
	pthread_cond_t cond;		/* hold, holding or sending changed */
	bool hold;			/* hold the sender at its next frame ... */
	bool holding;			/* ... held there, in fabric_tx, until cleared */
	struct env *to;			/* NULL: unplugged */
	unsigned int to_port;
	uint32_t loss_ppm;
	uint64_t rng;
	unsigned long lost;
	unsigned int flip_every;	/* every Nth frame with a payload: one bit flipped */
	unsigned long payload_frames, flipped;
	unsigned long carried;		/* frames handed to the receiving device */
	unsigned int sending;		/* frames being handed over, lock dropped */
	/* A copy of the last frame with a payload handed over (keep_last) ... */
	bool keep_last;
	uint8_t *last;
	size_t last_len;
	/* ... handed to its receiver again after each frame with a payload of this one. */
	struct dir *again;
};

struct node {
	struct env e;
	struct dir out[NPORTS];
	struct tq q[2];			/* queue 0; queue 1 for a second communicator */
};

static struct node nodes[MAX_DEV];
static unsigned int ndev;

static uint64_t rng = 0xc011ec7;
static uint32_t next_seq = 1;
static uint32_t trial_comm = 0xfab;	/* the comm_id prepare() gives */
static uint32_t dev0_send_lat_ns;	/* ring_up(): device 0's send port's extra latency */
static uint32_t dev1_recv_lat_ns;	/* ring_up(): device 1's receive port's extra latency */
static uint32_t all_lat_ns;		/* ring_up(): every port's extra latency */
static uint8_t trial_algo;		/* the algo prepare() gives */
static bool inline_db;			/* ring_up(): the doorbell fast path on */
/* ring_up(): maia_sim_ops.fabric_direct_ports's answer, or all ports if unset. */
static bool direct_set;
static uint32_t direct_mask;
/* Frames sent on a thread while it rang a doorbell (submit()). */
static __thread bool submitting;
static unsigned long tx_on_submit;

static uint64_t now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000u + (uint64_t)ts.tv_nsec / 1000000u;
}

/* DATA frames lent through cable_tx_lend, and given back (atomic). */
static unsigned long lent_out, lent_back;

static void lent_put(void *frame)
{
	maia_sim_fabric_frame_put(frame);
	__atomic_add_fetch(&lent_back, 1, __ATOMIC_RELAXED);
}

/*
 * Hands a frame to d's receiver with d->lock dropped (held on entry and
 * return): a thread in a round runs the receiver's round right there
 * (fw_fabric_port.c, "Rounds without a wake-up"), whose sends take other
 * directions' locks. No test lock nests, so ThreadSanitizer's lock-order
 * checking sees the library's own locks only. unplug_locked() waits for it.
 */
static void hand_over_locked(struct dir *d, const void *frame, size_t len, bool lent)
{
	struct maia_sim *sim = d->to->sim;
	unsigned int port = d->to_port;

	d->sending++;
	pthread_mutex_unlock(&d->lock);
	if (lent)
		maia_sim_fabric_rx_lent(sim, port, frame, len, lent_put, (void *)frame);
	else
		maia_sim_fabric_rx(sim, port, frame, len);
	pthread_mutex_lock(&d->lock);
	if (!--d->sending)
		pthread_cond_broadcast(&d->cond);
}

/* No frame reaches the receiver once this returns. */
static void unplug_locked(struct dir *d)
{
	d->to = NULL;
	while (d->sending)
		pthread_cond_wait(&d->cond, &d->lock);
}

/* On the sending device's fabric thread: a DATA frame, lent; it goes on lent. */
static int cable_tx_lend(void *opaque, unsigned int port, const void *frame, size_t len)
{
	struct node *n = opaque;
	struct dir *d = &n->out[port];
	bool lost = true;

	__atomic_add_fetch(&lent_out, 1, __ATOMIC_RELAXED);
	if (submitting)
		__atomic_add_fetch(&tx_on_submit, 1, __ATOMIC_RELAXED);
	pthread_mutex_lock(&d->lock);
	if (d->to) {
		d->rng = d->rng * 6364136223846793005ull + 1442695040888963407ull;
		lost = d->loss_ppm && (d->rng >> 33) % 1000000u < d->loss_ppm;
		if (lost)
			d->lost++;
		else
			hand_over_locked(d, frame, len, true);
		d->carried += !lost;
		d->payload_frames += !lost;
	}
	pthread_mutex_unlock(&d->lock);
	if (lost)
		lent_put((void *)frame);
	return 0;
}

/*
 * A copy of frame with one payload bit flipped (d->rng picks it), as a
 * noisy cable delivers it: only the CRC can tell.
 */
static void rx_flipped(struct dir *d, const void *frame, size_t len)
{
	uint8_t *bad = malloc(len);
	size_t bit = (d->rng >> 20) % ((len - MAIA_FABRIC_MIN_FRAME) * 8);

	memcpy(bad, frame, len);
	bad[MAIA_FABRIC_MIN_FRAME + bit / 8] ^= (uint8_t)(1u << (bit % 8));
	hand_over_locked(d, bad, len, false);
	free(bad);
	d->flipped++;
}

/*
 * e's kept frame (keep_last) to e's receiver again, a duplicate: on the
 * thread in the round of that receiver, which takes it into its queue and
 * does another pass for it (fw_fabric_port.c, fabric_round_locked()).
 */
static void hand_again(struct dir *e)
{
	uint8_t *frame;

	pthread_mutex_lock(&e->lock);
	frame = e->last;
	e->last = NULL;
	if (frame && e->to)
		hand_over_locked(e, frame, e->last_len, false);
	pthread_mutex_unlock(&e->lock);
	free(frame);
}

/* On the sending device's fabric thread. */
static int cable_tx(void *opaque, unsigned int port, const void *frame, size_t len)
{
	struct node *n = opaque;
	struct dir *d = &n->out[port];
	struct dir *again = NULL;
	int ret = -1;

	if (submitting)
		__atomic_add_fetch(&tx_on_submit, 1, __ATOMIC_RELAXED);
	pthread_mutex_lock(&d->lock);
	if (d->to && d->hold) {
		d->hold = false;
		d->holding = true;
		pthread_cond_broadcast(&d->cond);
		while (d->holding)
			pthread_cond_wait(&d->cond, &d->lock);
	}
	if (d->to) {
		ret = 0;
		d->rng = d->rng * 6364136223846793005ull + 1442695040888963407ull;
		if (len > MAIA_FABRIC_MIN_FRAME)
			d->payload_frames++;
		if (d->loss_ppm && (d->rng >> 33) % 1000000u < d->loss_ppm)
			d->lost++;
		else if (d->flip_every && len > MAIA_FABRIC_MIN_FRAME &&
			 d->payload_frames % d->flip_every == 0)
			rx_flipped(d, frame, len);
		else
			hand_over_locked(d, frame, len, false);
		d->carried++;
		if (d->keep_last && len > MAIA_FABRIC_MIN_FRAME) {
			free(d->last);
			d->last = malloc(len);
			memcpy(d->last, frame, len);
			d->last_len = len;
		}
		if (len > MAIA_FABRIC_MIN_FRAME)
			again = d->again;
	}
	pthread_mutex_unlock(&d->lock);
	if (again)
		hand_again(again);
	return ret;
}

static void plug(unsigned int a, unsigned int pa, unsigned int b, unsigned int pb)
{
	struct dir *d = &nodes[a].out[pa];

	pthread_mutex_lock(&d->lock);
	d->to = &nodes[b].e;
	d->to_port = pb;
	pthread_mutex_unlock(&d->lock);
}

static void plug_off(unsigned int a, unsigned int pa)
{
	struct dir *d = &nodes[a].out[pa];

	pthread_mutex_lock(&d->lock);
	unplug_locked(d);
	pthread_mutex_unlock(&d->lock);
}

static bool all_up(void)
{
	for (unsigned int i = 0; i < ndev; i++)
		for (unsigned int p = 0; p < NPORTS; p++) {
			struct maia_sim_fabric_port_info info;

			if (maia_sim_fabric_port_info(nodes[i].e.sim, p, &info) || !info.up)
				return false;
		}
	return true;
}

/* Asked by a doorbell writer: the ports the test calls direct. */
static uint32_t cable_direct_ports(void *opaque)
{
	(void)opaque;
	return __atomic_load_n(&direct_mask, __ATOMIC_RELAXED);
}

/*
 * n devices in a ring; loss_ppm on the direction device 0 -> device 1;
 * DATA frames lent through the cables if lend.
 */
static bool ring_up_lend(unsigned int n, uint32_t loss_ppm, bool lend)
{
	uint64_t t0 = now_ms();

	ndev = n;
	for (unsigned int i = 0; i < n; i++) {
		memset(&nodes[i], 0, sizeof(nodes[i]));
		for (unsigned int p = 0; p < NPORTS; p++) {
			pthread_mutex_init(&nodes[i].out[p].lock, NULL);
			pthread_cond_init(&nodes[i].out[p].cond, NULL);
			nodes[i].out[p].rng = 0x10ad + 7 * i + p;
		}
		env_fabric_tx_lend = lend ? cable_tx_lend : NULL;
		env_fabric_direct_ports = direct_set ? cable_direct_ports : NULL;
		env_fabric_lat_ns[RECV_PORT] = all_lat_ns + (i == 1 ? dev1_recv_lat_ns : 0);
		env_fabric_lat_ns[SEND_PORT] = all_lat_ns + (i == 0 ? dev0_send_lat_ns : 0);
		if (env_init_fabric(&nodes[i].e, 2, HBM_SIZE, HOST_SIZE, NPORTS,
				    0x4d41000000c0ull + i, cable_tx, &nodes[i]))
			return false;
		env_fabric_tx_lend = NULL;
		env_fabric_direct_ports = NULL;
		env_fabric_lat_ns[SEND_PORT] = 0;
		env_fabric_lat_ns[RECV_PORT] = 0;
		boot_or_die(&nodes[i].e);
		maia_sim_set_inline_doorbell(nodes[i].e.sim, inline_db);
		queue_setup(&nodes[i].e, &nodes[i].q[0], 0, 64, 0);
		queue_setup(&nodes[i].e, &nodes[i].q[1], 1, 64, 0);
	}
	nodes[0].out[SEND_PORT].loss_ppm = loss_ppm;
	for (unsigned int i = 0; i < n; i++) {
		unsigned int j = (i + 1) % n;

		plug(i, SEND_PORT, j, RECV_PORT);
		plug(j, RECV_PORT, i, SEND_PORT);
	}
	while (!all_up() && now_ms() - t0 < HANG_GUARD_MS)
		usleep(1000);
	return all_up();
}

static bool ring_up(unsigned int n, uint32_t loss_ppm)
{
	return ring_up_lend(n, loss_ppm, false);
}

static void ring_down(void)
{
	for (unsigned int i = 0; i < ndev; i++)
		for (unsigned int p = 0; p < NPORTS; p++) {
			pthread_mutex_lock(&nodes[i].out[p].lock);
			unplug_locked(&nodes[i].out[p]);
			free(nodes[i].out[p].last);
			nodes[i].out[p].last = NULL;
			pthread_mutex_unlock(&nodes[i].out[p].lock);
		}
	for (unsigned int i = 0; i < ndev; i++)
		env_fini(&nodes[i].e);
}

static const char *coll_name[] = { "?", "all-reduce", "all-gather", "reduce-scatter",
				   "broadcast", "all-to-all" };

struct outcome {
	uint32_t status[MAX_DEV];
	struct maia_coll_report report[MAX_DEV];
	long wrong;			/* elements that differ from the reference */
	bool hung;
	double secs;			/* first submission to last completion */
	uint64_t model_start[MAX_DEV], model_end[MAX_DEV];	/* completion entries */
};

/* One collective's commands and buffers on every rank, between its stages. */
struct trial {
	struct maia_cmd_collective k[MAX_DEV];
	uint8_t *in[MAX_DEV], *recv[MAX_DEV];
	uint32_t slot[MAX_DEV];
	uint64_t cb_bus[MAX_DEV], report_bus[MAX_DEV];
	unsigned int irqs[MAX_DEV];
	unsigned int es;
	unsigned int qi;		/* the queue every rank submits to */
	struct timespec t0;
};

/*
 * Builds the command of every rank; bad_rank (or -1) gets a send buffer that
 * is not there.
 */
static void prepare(struct trial *t, unsigned int coll, unsigned int dtype, unsigned int redop,
		    uint64_t count, uint32_t chunk, bool in_place, int bad_rank,
		    uint32_t timeout_ms)
{
	uint32_t seq = next_seq++;

	t->es = maia_dtype_size(dtype);
	t->qi = 0;
	for (unsigned int r = 0; r < ndev; r++) {
		struct env *e = &nodes[r].e;
		struct maia_cmd_collective *k = &t->k[r];
		struct cmdbuf cb;
		uint64_t sbus, rbus;
		size_t s, rv;

		*k = (struct maia_cmd_collective){
			.hdr = { .opcode = MAIA_OP_COLLECTIVE, .size = sizeof(*k),
				 .flags = MAIA_COLL_F_REACH },
			.coll = (uint8_t)coll, .redop = (uint8_t)redop, .dtype = (uint8_t)dtype,
			.send_port = SEND_PORT, .recv_port = RECV_PORT,
			.root = (uint16_t)(seq % ndev), .rank = (uint16_t)r,
			.nranks = (uint16_t)ndev, .comm_id = trial_comm, .seq = seq,
			.chunk_bytes = chunk, .timeout_ms = timeout_ms, .count = count,
			.algo = trial_algo,
		};
		ref_buf_sizes(k, &s, &rv);
		sbus = host_alloc(e, s ? s : 8, 64);
		rbus = in_place ? sbus : host_alloc(e, rv ? rv : 8, 64);
		ref_fill(host_ptr(e, sbus), s / t->es, dtype, &rng);
		t->in[r] = malloc(s ? s : 1);
		memcpy(t->in[r], host_ptr(e, sbus), s);
		if (!in_place)
			memset(host_ptr(e, rbus), 0xa5, rv);
		t->recv[r] = host_ptr(e, rbus);
		k->send_addr = (int)r == bad_rank ? BAD_BUS_ADDR : sbus;
		k->recv_addr = rbus;
		t->report_bus[r] = host_alloc(e, sizeof(struct maia_coll_report), 64);
		k->report_addr = t->report_bus[r];
		cb_init(&cb);
		cb_add(&cb, k, sizeof(*k));
		t->cb_bus[r] = cb_to_host(e, &cb);
	}
	clock_gettime(CLOCK_MONOTONIC, &t->t0);
}

static void submit(struct trial *t, unsigned int r)
{
	t->irqs[r] = irq_count(&nodes[r].e, MAIA_VEC_QUEUE(t->qi));
	submitting = true;
	t->slot[r] = queue_push(&nodes[r].e, &nodes[r].q[t->qi], t->cb_bus[r], sizeof(t->k[r]),
				0, 0, t->k[r].seq, true);
	submitting = false;
}

/* Waits for rank r's completion entry; its status and report go to o. */
static void collect(struct trial *t, unsigned int r, struct outcome *o)
{
	struct maia_cq_entry *c = cqe_at(&nodes[r].e, &nodes[r].q[t->qi], t->slot[r]);

	/* The queue's interrupt follows its completion entry (and orders it). */
	o->hung |= !wait_irq(&nodes[r].e, MAIA_VEC_QUEUE(t->qi), t->irqs[r] + 1, HANG_GUARD_MS) ||
		   !(c->flags & MAIA_CQE_VALID);
	o->status[r] = c->status;
	o->model_start[r] = c->start_ns;
	o->model_end[r] = c->end_ns;
	memcpy(&o->report[r], host_ptr(&nodes[r].e, t->report_bus[r]), sizeof(o->report[r]));
}

/* Compares every rank's result with the reference (check), frees the inputs. */
static void finish_trial(struct trial *t, struct outcome *o, bool check)
{
	struct timespec t1;

	clock_gettime(CLOCK_MONOTONIC, &t1);
	o->secs = (double)(t1.tv_sec - t->t0.tv_sec) + (double)(t1.tv_nsec - t->t0.tv_nsec) / 1e9;
	for (unsigned int r = 0; r < ndev && check; r++) {
		size_t s, rv;
		uint8_t *exp;

		ref_buf_sizes(&t->k[r], &s, &rv);
		exp = malloc(rv ? rv : 1);
		ref_expected(t->in, r, &t->k[r], exp);
		for (size_t i = 0; i < rv / t->es; i++)
			o->wrong += memcmp(exp + i * t->es, t->recv[r] + i * t->es, t->es) != 0;
		free(exp);
	}
	for (unsigned int r = 0; r < ndev; r++)
		free(t->in[r]);
}

/*
 * Every rank runs the command as a job; bad_rank (or -1) gets a send buffer
 * that is not there (-2: none, but a failure is expected: results not
 * compared). Waits for every completion entry.
 */
static struct outcome run(unsigned int coll, unsigned int dtype, unsigned int redop,
			  uint64_t count, uint32_t chunk, bool in_place, int bad_rank,
			  uint32_t timeout_ms)
{
	struct trial t;
	struct outcome o = { .wrong = 0 };

	prepare(&t, coll, dtype, redop, count, chunk, in_place, bad_rank, timeout_ms);
	for (unsigned int r = 0; r < ndev; r++)
		submit(&t, r);
	for (unsigned int r = 0; r < ndev; r++)
		collect(&t, r, &o);
	finish_trial(&t, &o, bad_rank == -1);
	return o;
}

static bool all_ok(const struct outcome *o)
{
	bool ok = !o->hung;

	for (unsigned int r = 0; r < ndev; r++)
		ok &= o->status[r] == MAIA_STATUS_OK;
	return ok;
}

static double secs(const struct timespec *a, const struct timespec *b)
{
	return (double)(b->tv_sec - a->tv_sec) + (double)(b->tv_nsec - a->tv_nsec) / 1e9;
}

/*
 * Figures only, nothing asserted (timing belongs to benchmarks): a 16 MiB
 * FP32 all-reduce over the ring, its busbw as nccl-tests defines it, beside
 * a memcpy of the same size in the same run.
 */
static void measure(unsigned int n)
{
	const uint64_t count = 4u << 20;
	struct timespec t0, t1;
	struct outcome o;
	uint8_t *a = malloc(count * 4), *b = malloc(count * 4);
	double t_ar, t_mc, algbw;
	struct maia_sim_fabric_port_info tx0[MAX_DEV], rx0[MAX_DEV];

	memset(a, 1, count * 4);
	memset(b, 2, count * 4);
	for (unsigned int i = 0; i < ndev; i++) {
		maia_sim_fabric_port_info(nodes[i].e.sim, SEND_PORT, &tx0[i]);
		maia_sim_fabric_port_info(nodes[i].e.sim, RECV_PORT, &rx0[i]);
	}
	clock_gettime(CLOCK_MONOTONIC, &t0);
	memcpy(b, a, count * 4);
	/* The copy happens here, not after the clock read. */
	__asm__ volatile("" : : "r"(b) : "memory");
	clock_gettime(CLOCK_MONOTONIC, &t1);
	t_mc = secs(&t0, &t1);
	o = run(MAIA_COLL_ALL_REDUCE, MAIA_DTYPE_FP32, MAIA_REDOP_SUM, count, 0, true, -1,
		LONG_TIMEOUT_MS);
	t_ar = o.secs;
	algbw = (double)count * 4 / t_ar / 1e9;
	tap_ok(all_ok(&o) && o.wrong == 0,
	       "%u devices: 16 MiB fp32 all-reduce: statuses %u %u ..., #wrong = %ld", n,
	       o.status[0], o.status[1], o.wrong);
	for (unsigned int i = 0; i < ndev && !all_ok(&o); i++)
		for (unsigned int p = 0; p < NPORTS; p++) {
			struct maia_sim_fabric_port_info info;

			maia_sim_fabric_port_info(nodes[i].e.sim, p, &info);
			printf("# device %u port %u: downs %llu (dead peer %llu), rx queue drops %llu, retransmits %llu\n",
			       i, p, (unsigned long long)info.link_downs,
			       (unsigned long long)info.dead_peer,
			       (unsigned long long)info.rx_queue_drops,
			       (unsigned long long)info.retransmits);
		}
	printf("# %u devices: 16 MiB all-reduce %.3f s, algbw %.3f GB/s, busbw %.3f GB/s; memcpy 16 MiB %.2f GB/s\n",
	       n, t_ar, algbw, algbw * 2 * (n - 1) / n, (double)count * 4 / t_mc / 1e9);
	/* What the links did for it. */
	for (unsigned int i = 0; i < ndev; i++) {
		struct maia_sim_fabric_port_info tx, rx;

		maia_sim_fabric_port_info(nodes[i].e.sim, SEND_PORT, &tx);
		maia_sim_fabric_port_info(nodes[i].e.sim, RECV_PORT, &rx);
		printf("#   device %u: sent %llu frames (%llu retransmits), received %llu frames (%llu rx queue drops)\n",
		       i, (unsigned long long)(tx.tx_frames - tx0[i].tx_frames),
		       (unsigned long long)(tx.retransmits - tx0[i].retransmits),
		       (unsigned long long)(rx.rx_frames - rx0[i].rx_frames),
		       (unsigned long long)(rx.rx_queue_drops - rx0[i].rx_queue_drops));
	}
	free(a);
	free(b);
}

/*
 * n devices in a ring, 8 collectives; loss_ppm frames lost, or every
 * flip_every-th frame with a payload corrupted, on the cable 0 -> 1.
 */
/* A 64-bit port counter register, read HI, LO, HI as a driver does. */
static uint64_t port_reg64(unsigned int dev, unsigned int port, uint32_t reg)
{
	struct env *e = &nodes[dev].e;
	uint32_t hi, lo, hi2;

	do {
		hi = rd(e, MAIA_REG_FPORT(port, reg) + 4);
		lo = rd(e, MAIA_REG_FPORT(port, reg));
		hi2 = rd(e, MAIA_REG_FPORT(port, reg) + 4);
	} while (hi != hi2);
	return (uint64_t)hi << 32 | lo;
}

/*
 * Selective retransmission on the lossy cable (device 0 port 0 to device
 * 1 port 1): the receiver named gaps in NAK frames and held what came
 * after them; the sender got the NAKs. The registers (hardware 1.6) give
 * the same counts as the engine's snapshot read around them.
 */
static void check_nak_counters(unsigned int n)
{
	struct maia_sim_fabric_port_info before, after, tx_end;
	uint64_t naks, held;

	maia_sim_fabric_port_info(nodes[1].e.sim, RECV_PORT, &before);
	naks = port_reg64(1, RECV_PORT, MAIA_FPORT_LINK_NAK_TX);
	held = port_reg64(1, RECV_PORT, MAIA_FPORT_RX_HELD);
	maia_sim_fabric_port_info(nodes[1].e.sim, RECV_PORT, &after);
	maia_sim_fabric_port_info(nodes[0].e.sim, SEND_PORT, &tx_end);
	tap_ok(before.link_nak_tx > 0 && before.rx_held > 0 && tx_end.link_nak_rx > 0,
	       "%u devices: the receiver of the lossy cable sent %llu NAKs and held %llu frames; "
	       "its sender received %llu NAKs", n, (unsigned long long)before.link_nak_tx,
	       (unsigned long long)before.rx_held, (unsigned long long)tx_end.link_nak_rx);
	tap_ok(naks >= before.link_nak_tx && naks <= after.link_nak_tx &&
	       held >= before.rx_held && held <= after.rx_held,
	       "%u devices: LINK_NAK_TX %llu and RX_HELD %llu registers agree with the snapshot",
	       n, (unsigned long long)naks, (unsigned long long)held);
}

static void test_ring(unsigned int n, uint32_t loss_ppm, bool lend, unsigned int flip_every)
{
	static const struct {
		unsigned int coll, dtype, redop;
		uint64_t count;
		uint32_t chunk;
		bool in_place;
	} t[] = {
		{ MAIA_COLL_ALL_REDUCE, MAIA_DTYPE_FP32, MAIA_REDOP_SUM, 300007, 0, false },
		{ MAIA_COLL_ALL_REDUCE, MAIA_DTYPE_BF16, MAIA_REDOP_SUM, 100003, 4096, true },
		{ MAIA_COLL_ALL_REDUCE, MAIA_DTYPE_FP32, MAIA_REDOP_MAX, 1, 0, false },
		{ MAIA_COLL_REDUCE_SCATTER, MAIA_DTYPE_BF16, MAIA_REDOP_MIN, 20011, 1024, false },
		{ MAIA_COLL_ALL_GATHER, MAIA_DTYPE_FP32, MAIA_REDOP_SUM, 30001, 0, false },
		{ MAIA_COLL_BROADCAST, MAIA_DTYPE_BF16, MAIA_REDOP_SUM, 70001, 8192, true },
		{ MAIA_COLL_ALL_TO_ALL, MAIA_DTYPE_FP32, MAIA_REDOP_SUM, 10007, 0, false },
		{ MAIA_COLL_ALL_REDUCE, MAIA_DTYPE_FP32, MAIA_REDOP_SUM, 0, 0, false },
	};
	unsigned long retx = 0, copies = 0;

	lent_out = lent_back = 0;
	if (!tap_ok(ring_up_lend(n, loss_ppm, lend), "%u devices cabled in a ring%s: every port UP",
		    n, lend ? " (DATA frames lent)" : ""))
		return;
	/* Under the cable's lock: its sender reads it from now on. */
	pthread_mutex_lock(&nodes[0].out[SEND_PORT].lock);
	nodes[0].out[SEND_PORT].flip_every = flip_every;
	pthread_mutex_unlock(&nodes[0].out[SEND_PORT].lock);
	for (unsigned int i = 0; i < sizeof(t) / sizeof(t[0]); i++) {
		struct outcome o = run(t[i].coll, t[i].dtype, t[i].redop, t[i].count, t[i].chunk,
				       t[i].in_place, -1, LONG_TIMEOUT_MS);

		tap_ok(all_ok(&o) && o.wrong == 0,
		       "%u devices%s: %s %s count %llu%s: every job OK, #wrong = %ld",
		       n, loss_ppm ? " (5% loss on one cable)" :
		       flip_every ? " (a bit flipped in some frames of one cable)" : "",
		       coll_name[t[i].coll],
		       t[i].dtype == MAIA_DTYPE_FP32 ? "fp32" : "bf16",
		       (unsigned long long)t[i].count, t[i].in_place ? " in place" : "", o.wrong);
	}
	if (loss_ppm) {
		struct maia_sim_fabric_port_info info;

		unsigned long lost;

		maia_sim_fabric_port_info(nodes[0].e.sim, SEND_PORT, &info);
		retx = info.retransmits;
		copies = info.tx_lend_copies;
		pthread_mutex_lock(&nodes[0].out[SEND_PORT].lock);
		lost = nodes[0].out[SEND_PORT].lost;
		pthread_mutex_unlock(&nodes[0].out[SEND_PORT].lock);
		tap_ok(retx > 0 && lost > 0,
		       "%u devices: %lu frames lost on the cable, %lu retransmitted", n, lost, retx);
		check_nak_counters(n);
	} else if (flip_every) {
		struct maia_sim_fabric_port_info info;
		struct dir *d = &nodes[0].out[SEND_PORT];
		unsigned long flipped, payload_frames;

		maia_sim_fabric_port_info(nodes[1].e.sim, RECV_PORT, &info);
		pthread_mutex_lock(&d->lock);
		flipped = d->flipped;
		payload_frames = d->payload_frames;
		d->flip_every = 0;
		pthread_mutex_unlock(&d->lock);
		tap_ok(flipped >= 2 && info.rx_dropped >= flipped,
		       "%u devices: %lu frames of %lu with a payload bit flipped on the cable, %llu "
		       "frames dropped by the receiver (CRC checked on a copied frame)",
		       n, flipped, payload_frames, (unsigned long long)info.rx_dropped);
		measure(n);
	} else {
		measure(n);
	}
	ring_down();
	/* Every device is gone: every frame it lent came back, once. */
	if (lend)
		tap_ok(lent_out > 0 && lent_back == lent_out,
		       "%u devices: %lu DATA frames lent through the cables, %lu given back "
		       "(%lu retransmissions copied: the frame was still lent)", n, lent_out,
		       lent_back, copies);
}

/*
 * A rank whose peer has not joined yet waits for the fabric, and says so in
 * MAIA_Q_STATUS (FABRIC_WAIT), which a driver's hang check must skip; the
 * bit goes once the collective is done.
 */
static uint32_t fabric_waits(unsigned int dev)
{
	return rd(&nodes[dev].e, MAIA_REG_Q(0, MAIA_Q_FABRIC_WAITS));
}

/* Until node r's queue qi has begun @want fabric waits and is waiting; false at the guard. */
static bool wait_parked(unsigned int r, unsigned int qi, uint32_t want)
{
	struct env *e = &nodes[r].e;
	uint64_t t_end = now_ms() + HANG_GUARD_MS;

	while (now_ms() < t_end) {
		if (rd(e, MAIA_REG_Q(qi, MAIA_Q_FABRIC_WAITS)) == want &&
		    (rd(e, MAIA_REG_Q(qi, MAIA_Q_STATUS)) & MAIA_Q_STATUS_FABRIC_WAIT))
			return true;
		usleep(1000);
	}
	return false;
}

/* The same for device 0's queue 0. */
static bool wait_fabric_waits(uint32_t want)
{
	return wait_parked(0, 0, want);
}

/*
 * MAIA_Q_FABRIC_WAITS (1.4): one job of two collectives on rank 0 waits
 * twice, and the count shows each wait as it begins, so that a driver can
 * tell a job that moves from one wait to the next from one stuck in a wait.
 */
static void test_fabric_waits_count(void)
{
	struct outcome oa = { .wrong = 0 }, ob = { .wrong = 0 };
	uint32_t w0 = fabric_waits(0), w1 = fabric_waits(1);
	struct trial a, b;
	struct cmdbuf cb;
	bool first, second;

	prepare(&a, MAIA_COLL_ALL_REDUCE, MAIA_DTYPE_FP32, MAIA_REDOP_SUM, 1000, 0, false, -1,
		LONG_TIMEOUT_MS);
	prepare(&b, MAIA_COLL_ALL_GATHER, MAIA_DTYPE_FP32, MAIA_REDOP_SUM, 300, 0, false, -1,
		LONG_TIMEOUT_MS);
	cb_init(&cb);
	cb_add(&cb, &a.k[0], sizeof(a.k[0]));
	cb_add(&cb, &b.k[0], sizeof(b.k[0]));
	a.irqs[0] = irq_count(&nodes[0].e, MAIA_VEC_QUEUE(a.qi));
	a.slot[0] = queue_push(&nodes[0].e, &nodes[0].q[a.qi], cb_to_host(&nodes[0].e, &cb),
			       cb.len, 0, 0, a.k[0].seq, true);
	first = wait_fabric_waits(w0 + 1);
	submit(&a, 1);
	collect(&a, 1, &oa);
	/* Rank 0's job goes on to its second collective and waits again. */
	second = wait_fabric_waits(w0 + 2);
	submit(&b, 1);
	collect(&b, 1, &ob);
	collect(&a, 0, &oa);
	ob.status[0] = oa.status[0];
	finish_trial(&a, &oa, true);
	finish_trial(&b, &ob, true);
	tap_ok(first && second && all_ok(&oa) && all_ok(&ob) && !oa.wrong && !ob.wrong &&
	       fabric_waits(0) == w0 + 2 && fabric_waits(1) == w1 + 2,
	       "one job of two collectives on rank 0: Q_FABRIC_WAITS %u -> +1 (%s), +2 (%s), both OK, #wrong %ld+%ld; rank 1's two jobs +%u",
	       w0, first ? "seen" : "not seen", second ? "seen" : "not seen", oa.wrong, ob.wrong,
	       fabric_waits(1) - w1);
}

static void test_fabric_wait_status(void)
{
	uint32_t st0 = 0, st1;
	struct outcome o = { .wrong = 0 };
	struct trial t;
	uint64_t t_end;

	if (!tap_ok(ring_up(2, 0), "2 devices cabled in a ring: every port UP"))
		return;
	prepare(&t, MAIA_COLL_ALL_REDUCE, MAIA_DTYPE_FP32, MAIA_REDOP_SUM, 1000, 0, false, -1,
		LONG_TIMEOUT_MS);
	submit(&t, 0);
	/* Until the worker parked rank 0's job (bounded by the hang guard). */
	t_end = now_ms() + HANG_GUARD_MS;
	while (!((st0 = rd(&nodes[0].e, MAIA_REG_Q(0, MAIA_Q_STATUS))) &
		 MAIA_Q_STATUS_FABRIC_WAIT) && now_ms() < t_end)
		usleep(1000);
	tap_ok(st0 == MAIA_Q_STATUS_FABRIC_WAIT, "rank 0 alone: Q_STATUS 0x%x is FABRIC_WAIT", st0);
	submit(&t, 1);
	for (unsigned int r = 0; r < 2; r++)
		collect(&t, r, &o);
	finish_trial(&t, &o, true);
	st0 = rd(&nodes[0].e, MAIA_REG_Q(0, MAIA_Q_STATUS));
	st1 = rd(&nodes[1].e, MAIA_REG_Q(0, MAIA_Q_STATUS));
	tap_ok(all_ok(&o) && o.wrong == 0 && !st0 && !st1,
	       "rank 1 joins: both OK, #wrong = %ld, Q_STATUS 0x%x 0x%x (the wait is over)",
	       o.wrong, st0, st1);
	test_fabric_waits_count();
	ring_down();
}

/* A rank fails on its own memory: the others time out, and the ring still works after. */
static void test_failure(unsigned int n)
{
	struct outcome o;
	bool ok;

	if (!tap_ok(ring_up(n, 0), "%u devices cabled in a ring: every port UP", n))
		return;
	o = run(MAIA_COLL_ALL_REDUCE, MAIA_DTYPE_FP32, MAIA_REDOP_SUM, 200003, 0, false, 1, 300);
	ok = !o.hung && o.status[1] != MAIA_STATUS_OK && o.status[1] != MAIA_STATUS_FABRIC_TIMEOUT;
	for (unsigned int r = 0; r < n; r++)
		if (r != 1)
			ok &= o.status[r] == MAIA_STATUS_FABRIC_TIMEOUT;
	tap_ok(ok, "%u devices, rank 1's send buffer missing: rank 1 fails with status %u, the others with FABRIC_TIMEOUT (%u), none hangs",
	       n, o.status[1], o.status[0]);
	/* Rank 2 waits for rank 1's first chunk: its report names that. */
	tap_ok(o.report[2].status == MAIA_STATUS_FABRIC_TIMEOUT && o.report[2].step == 0 &&
	       o.report[2].port == RECV_PORT && o.report[2].peer_rank == 1 &&
	       o.report[1].status == o.status[1],
	       "rank 2's report: status %u, step %u, port %u, peer rank %u; rank 1's: status %u",
	       o.report[2].status, o.report[2].step, o.report[2].port, o.report[2].peer_rank,
	       o.report[1].status);
	o = run(MAIA_COLL_ALL_REDUCE, MAIA_DTYPE_FP32, MAIA_REDOP_SUM, 50021, 0, false, -1,
		LONG_TIMEOUT_MS);
	tap_ok(all_ok(&o) && o.wrong == 0,
	       "%u devices: the next all-reduce on the same devices, no reset: every job OK, #wrong = %ld",
	       n, o.wrong);
	ring_down();
}

/*
 * Each device keeps its last collective operation and its engine's work
 * buffers for the next (fw_fop_ops.keep, fw_coll_reinit()): collectives of
 * alternating kinds, data types, reductions, algorithms (gather-reduce and
 * ring), chunk sizes and counts (a small one after a large one and the
 * reverse) on the same devices, a failed one (a rank's send buffer missing,
 * the others time out) and a lone rank's one (nranks 1 on device 0, which
 * the worker runs without the fabric) between them: each one's results are
 * the reference's bits, so nothing of the previous one (its size, rank
 * geometry, buffers, messages, a failure) reaches it. Under ASan the kept
 * operation is poisoned between collectives (FW_FABRIC_POISON()).
 */
static void test_kept_op(unsigned int n)
{
	static const struct {
		unsigned int coll, dtype, redop;
		uint64_t count;
		uint32_t chunk;
		bool in_place;
		uint8_t algo;
		int bad_rank;		/* -1: none; -3: a lone rank's collective */
	} t[] = {
		{ MAIA_COLL_ALL_REDUCE, MAIA_DTYPE_FP32, MAIA_REDOP_SUM, 2, 0, false,
		  MAIA_COLL_ALGO_AUTO, -1 },
		{ MAIA_COLL_ALL_REDUCE, MAIA_DTYPE_BF16, MAIA_REDOP_MAX, 70001, 1024, true,
		  MAIA_COLL_ALGO_RING, -1 },
		{ MAIA_COLL_ALL_REDUCE, MAIA_DTYPE_FP32, MAIA_REDOP_MIN, 3, 0, false,
		  MAIA_COLL_ALGO_RING, -1 },
		{ MAIA_COLL_ALL_REDUCE, MAIA_DTYPE_BF16, MAIA_REDOP_SUM, 5003, 0, false,
		  MAIA_COLL_ALGO_AUTO, -1 },
		{ MAIA_COLL_ALL_TO_ALL, MAIA_DTYPE_FP32, MAIA_REDOP_SUM, 1, 4, false,
		  MAIA_COLL_ALGO_AUTO, -1 },
		{ MAIA_COLL_ALL_REDUCE, MAIA_DTYPE_FP32, MAIA_REDOP_SUM, 40009, 0, false,
		  MAIA_COLL_ALGO_AUTO, 1 },
		{ MAIA_COLL_ALL_REDUCE, MAIA_DTYPE_FP32, MAIA_REDOP_SUM, 7, 0, false,
		  MAIA_COLL_ALGO_AUTO, -1 },
		{ MAIA_COLL_ALL_REDUCE, MAIA_DTYPE_FP32, MAIA_REDOP_SUM, 30011, 0, true,
		  MAIA_COLL_ALGO_AUTO, -3 },
		{ MAIA_COLL_BROADCAST, MAIA_DTYPE_BF16, MAIA_REDOP_SUM, 33333, 512, false,
		  MAIA_COLL_ALGO_AUTO, -1 },
		{ MAIA_COLL_REDUCE_SCATTER, MAIA_DTYPE_FP32, MAIA_REDOP_MAX, 1, 0, false,
		  MAIA_COLL_ALGO_AUTO, -1 },
		{ MAIA_COLL_ALL_GATHER, MAIA_DTYPE_BF16, MAIA_REDOP_SUM, 20011, 2048, false,
		  MAIA_COLL_ALGO_AUTO, -1 },
		{ MAIA_COLL_ALL_REDUCE, MAIA_DTYPE_FP32, MAIA_REDOP_SUM, 0, 0, false,
		  MAIA_COLL_ALGO_AUTO, -1 },
		{ MAIA_COLL_ALL_REDUCE, MAIA_DTYPE_BF16, MAIA_REDOP_SUM, 3001, 0, true,
		  MAIA_COLL_ALGO_AUTO, -1 },
	};
	unsigned int ranks = n;

	if (!tap_ok(ring_up(n, 0), "%u devices cabled in a ring: every port UP", n))
		return;
	for (unsigned int i = 0; i < sizeof(t) / sizeof(t[0]); i++) {
		struct outcome o;
		bool ok;

		trial_algo = t[i].algo;
		if (t[i].bad_rank == -3)
			ndev = 1;	/* device 0 alone: a communicator of 1 */
		o = run(t[i].coll, t[i].dtype, t[i].redop, t[i].count, t[i].chunk, t[i].in_place,
			t[i].bad_rank < -1 ? -1 : t[i].bad_rank,
			t[i].bad_rank >= 0 ? 300 : LONG_TIMEOUT_MS);
		ndev = ranks;
		trial_algo = MAIA_COLL_ALGO_AUTO;
		if (t[i].bad_rank >= 0) {
			ok = !o.hung && o.status[1] != MAIA_STATUS_OK;
			for (unsigned int r = 0; r < n; r++)
				if (r != 1)
					ok &= o.status[r] == MAIA_STATUS_FABRIC_TIMEOUT;
		} else {
			ok = all_ok(&o) && o.wrong == 0;
			if (t[i].bad_rank == -3)
				ok = !o.hung && o.status[0] == MAIA_STATUS_OK && o.wrong == 0;
		}
		tap_ok(ok, "%u devices, operation kept: %s %s count %llu%s%s: %s, #wrong = %ld", n,
		       coll_name[t[i].coll], t[i].dtype == MAIA_DTYPE_FP32 ? "fp32" : "bf16",
		       (unsigned long long)t[i].count, t[i].in_place ? " in place" : "",
		       t[i].bad_rank >= 0 ? ", rank 1's send buffer missing" :
		       t[i].bad_rank == -3 ? ", rank 0 alone" : "",
		       t[i].bad_rank >= 0 ? "rank 1 fails, the others time out" : "every job OK",
		       o.wrong);
	}
	ring_down();
}

static bool wait_port(unsigned int dev, unsigned int port, bool up)
{
	uint64_t t0 = now_ms();
	struct maia_sim_fabric_port_info info;

	do {
		if (!maia_sim_fabric_port_info(nodes[dev].e.sim, port, &info) && info.up == up)
			return true;
		usleep(1000);
	} while (now_ms() - t0 < HANG_GUARD_MS);
	return false;
}

/* Cable 0-1 back in: both ends UP again, and the next all-reduce is right. */
static void replug_and_run(void)
{
	struct outcome o;
	bool ok;

	plug(0, SEND_PORT, 1, RECV_PORT);
	plug(1, RECV_PORT, 0, SEND_PORT);
	ok = wait_port(0, SEND_PORT, true) && wait_port(1, RECV_PORT, true);
	o = run(MAIA_COLL_ALL_REDUCE, MAIA_DTYPE_FP32, MAIA_REDOP_SUM, 10007, 0, false, -1,
		LONG_TIMEOUT_MS);
	tap_ok(ok && all_ok(&o) && o.wrong == 0,
	       "cable plugged again: links UP, the next all-reduce OK, #wrong = %ld", o.wrong);
}

static struct maia_sim_fabric_port_info port_info(unsigned int dev, unsigned int port)
{
	struct maia_sim_fabric_port_info info;

	memset(&info, 0, sizeof(info));
	maia_sim_fabric_port_info(nodes[dev].e.sim, port, &info);
	return info;
}

/* What a port's failover decision saw, for a check's message. */
static const char *fo_evidence(unsigned int dev, unsigned int port, char *buf, size_t size)
{
	struct maia_sim_fabric_port_info i = port_info(dev, port);

	snprintf(buf, size, "rank %u port %u: state %#x, loss %u ppm, NAKs in %llu, retransmits %llu, link downs %llu, rx queue drops %llu",
		 dev, port, i.fo_state, i.loss_ppm, (unsigned long long)i.link_nak_rx,
		 (unsigned long long)i.retransmits, (unsigned long long)i.link_downs,
		 (unsigned long long)i.rx_queue_drops);
	return buf;
}

/*
 * Failover on a ring of n >= 3: the cable from rank 0 to rank 1 pulled,
 * both of its ends DOWN. Rank 0 sends over its receive port, relayed round
 * the ring the other way by ranks n-1 .. 2; rank 1 takes those chunks on
 * its send port. Every rank keeps its place in the ring, so every
 * collective, in both data types, in place or not, must equal the CPU
 * reference of the uncut ring bit for bit. Each collective is counted as a
 * failover at both ends of the cut, and the ranks between relayed.
 * Plugged again, the ring runs as cabled (no relay).
 */
static void test_failover_ring(unsigned int n)
{
	static const struct {
		unsigned int coll, dtype;
		uint64_t count;
		bool in_place;
	} t[] = {
		{ MAIA_COLL_ALL_REDUCE, MAIA_DTYPE_FP32, 50021, false },	/* the ring */
		{ MAIA_COLL_ALL_REDUCE, MAIA_DTYPE_BF16, 1001, false },	/* gather-reduce */
		{ MAIA_COLL_ALL_REDUCE, MAIA_DTYPE_BF16, 30011, true },
		{ MAIA_COLL_ALL_GATHER, MAIA_DTYPE_FP32, 5003, false },
		{ MAIA_COLL_REDUCE_SCATTER, MAIA_DTYPE_BF16, 3001, false },
		{ MAIA_COLL_BROADCAST, MAIA_DTYPE_FP32, 7001, true },
		{ MAIA_COLL_ALL_TO_ALL, MAIA_DTYPE_FP32, 2003, false },
	};
	const unsigned int nt = sizeof(t) / sizeof(t[0]);
	uint64_t relayed = 0, relayed0;
	bool ok;

	if (!tap_ok(ring_up(n, 0), "%u devices cabled in a ring: every port UP", n))
		return;
	plug_off(0, SEND_PORT);
	plug_off(1, RECV_PORT);
	ok = wait_port(0, SEND_PORT, false) && wait_port(1, RECV_PORT, false);
	tap_ok(ok, "%u devices, cable 0-1 pulled: both ends DOWN", n);
	for (unsigned int i = 0; i < nt; i++) {
		struct outcome o = run(t[i].coll, t[i].dtype, MAIA_REDOP_SUM, t[i].count, 0,
				       t[i].in_place, -1, LONG_TIMEOUT_MS);

		tap_ok(all_ok(&o) && o.wrong == 0,
		       "%u devices, cable 0-1 pulled: %s %s%s of %llu relayed round the other way: every job OK, #wrong = %ld",
		       n, coll_name[t[i].coll], t[i].dtype == MAIA_DTYPE_FP32 ? "FP32" : "BF16",
		       t[i].in_place ? " in place" : "", (unsigned long long)t[i].count, o.wrong);
	}
	for (unsigned int r = 2; r < n; r++)
		relayed += port_info(r, RECV_PORT).relayed;
	tap_ok(port_info(0, SEND_PORT).failovers == nt && port_info(1, RECV_PORT).failovers == nt &&
	       port_info(2, SEND_PORT).failovers == 0 && relayed > 0,
	       "failovers counted at the cut's ends: rank 0 send port %llu, rank 1 receive port %llu (want %u each), rank 2 none; ranks 2..%u relayed %llu chunks",
	       (unsigned long long)port_info(0, SEND_PORT).failovers,
	       (unsigned long long)port_info(1, RECV_PORT).failovers, nt, n - 1,
	       (unsigned long long)relayed);
	relayed0 = port_info(n - 1, RECV_PORT).relayed;
	replug_and_run();
	{
		char ev[256], ev1[256];

		/*
		 * The evidence is the failover counters, which count the route
		 * each collective took at both ends of the cable; the relayed
		 * counter may still move as the last cut collective's
		 * duplicates (re-sent chunks) drain round the ring.
		 */
		tap_ok(port_info(0, SEND_PORT).failovers == nt &&
		       port_info(1, RECV_PORT).failovers == nt,
		       "plugged again: no failover any more (rank 0 send port %llu, rank 1 receive port %llu, want %u; rank %u relayed %llu since; %s; %s)",
		       (unsigned long long)port_info(0, SEND_PORT).failovers,
		       (unsigned long long)port_info(1, RECV_PORT).failovers, nt, n - 1,
		       (unsigned long long)(port_info(n - 1, RECV_PORT).relayed - relayed0),
		       fo_evidence(0, SEND_PORT, ev, sizeof(ev)),
		       fo_evidence(1, RECV_PORT, ev1, sizeof(ev1)));
	}
	ring_down();
}

/*
 * Failover on a ring of two: the cable from rank 0's send port pulled, both
 * of its ends DOWN. The other cable joins the same two devices, so each
 * runs its collectives over that one both ways (the ring the other way
 * round, fw_fabric_coll_op.c): an all-reduce by the ring and one by
 * gather-reduce, in FP32 and BF16, and an all-gather, each against the CPU.
 * Plugged again, the ring runs as cabled.
 */
static void test_failover_two(void)
{
	struct outcome o;
	bool ok;

	if (!tap_ok(ring_up(2, 0), "2 devices cabled in a ring: every port UP"))
		return;
	plug_off(0, SEND_PORT);
	plug_off(1, RECV_PORT);
	ok = wait_port(0, SEND_PORT, false) && wait_port(1, RECV_PORT, false) &&
	     wait_port(0, RECV_PORT, true) && wait_port(1, SEND_PORT, true);
	tap_ok(ok, "ring of 2, cable 0-1 pulled: both its ends DOWN, the other cable UP");
	o = run(MAIA_COLL_ALL_REDUCE, MAIA_DTYPE_FP32, MAIA_REDOP_SUM, 10007, 0, false, -1,
		LONG_TIMEOUT_MS);
	tap_ok(all_ok(&o) && o.wrong == 0,
	       "failover: FP32 ring all-reduce over the other cable both ways: every job OK, #wrong = %ld",
	       o.wrong);
	o = run(MAIA_COLL_ALL_REDUCE, MAIA_DTYPE_BF16, MAIA_REDOP_SUM, 1001, 0, false, -1,
		LONG_TIMEOUT_MS);
	tap_ok(all_ok(&o) && o.wrong == 0,
	       "failover: BF16 gather-reduce all-reduce: every job OK, #wrong = %ld", o.wrong);
	o = run(MAIA_COLL_ALL_GATHER, MAIA_DTYPE_FP32, MAIA_REDOP_SUM, 5003, 0, false, -1,
		LONG_TIMEOUT_MS);
	tap_ok(all_ok(&o) && o.wrong == 0, "failover: all-gather: every job OK, #wrong = %ld",
	       o.wrong);
	replug_and_run();
	ring_down();
}

/*
 * Two cables of a ring of 4 pulled, 0-1 and 2-3: the ring falls into two
 * pieces, {1, 2} and {3, 0}. Each piece's rank whose send port is cut
 * relays round the other way; the relayed chunk finds no way on at the
 * piece's other end, which tells every rank of its piece. Every rank ends
 * the all-reduce with FABRIC_LINK, no timeout, and its report names exactly
 * the two ranks of the other piece. Plugged again, the ring works.
 */
static void test_two_cuts(void)
{
	static const uint32_t first[4] = { 1, 3, 3, 1 };
	struct outcome o;
	bool ok;

	if (!tap_ok(ring_up(4, 0), "4 devices cabled in a ring: every port UP"))
		return;
	plug_off(0, SEND_PORT);
	plug_off(1, RECV_PORT);
	plug_off(2, SEND_PORT);
	plug_off(3, RECV_PORT);
	ok = wait_port(0, SEND_PORT, false) && wait_port(1, RECV_PORT, false) &&
	     wait_port(2, SEND_PORT, false) && wait_port(3, RECV_PORT, false);
	tap_ok(ok, "cables 0-1 and 2-3 pulled: their ends DOWN");
	o = run(MAIA_COLL_ALL_REDUCE, MAIA_DTYPE_FP32, MAIA_REDOP_SUM, 50021, 0, false, -2,
		LONG_TIMEOUT_MS);
	ok = !o.hung;
	for (unsigned int r = 0; r < 4; r++)
		ok &= o.status[r] == MAIA_STATUS_FABRIC_LINK &&
		      o.report[r].status == MAIA_STATUS_FABRIC_LINK &&
		      o.report[r].unreachable_first == first[r] &&
		      o.report[r].unreachable_count == 2;
	tap_ok(ok, "all-reduce: every rank FABRIC_LINK (%u %u %u %u), unreachable: rank 0 %u+%u, rank 1 %u+%u, rank 2 %u+%u, rank 3 %u+%u (want 1+2, 3+2, 3+2, 1+2)",
	       o.status[0], o.status[1], o.status[2], o.status[3],
	       o.report[0].unreachable_first, o.report[0].unreachable_count,
	       o.report[1].unreachable_first, o.report[1].unreachable_count,
	       o.report[2].unreachable_first, o.report[2].unreachable_count,
	       o.report[3].unreachable_first, o.report[3].unreachable_count);
	tap_ok(port_info(3, SEND_PORT).relay_drops > 0 && port_info(1, SEND_PORT).relay_drops > 0,
	       "the pieces' ends could not relay: ranks 3 and 1 dropped %llu and %llu relayed chunks",
	       (unsigned long long)port_info(3, SEND_PORT).relay_drops,
	       (unsigned long long)port_info(1, SEND_PORT).relay_drops);
	plug(2, SEND_PORT, 3, RECV_PORT);
	plug(3, RECV_PORT, 2, SEND_PORT);
	ok = wait_port(2, SEND_PORT, true) && wait_port(3, RECV_PORT, true);
	o = run(MAIA_COLL_ALL_REDUCE, MAIA_DTYPE_FP32, MAIA_REDOP_SUM, 50021, 0, false, -1,
		LONG_TIMEOUT_MS);
	tap_ok(ok && all_ok(&o) && o.wrong == 0,
	       "cable 2-3 plugged again, 0-1 still cut: the all-reduce relays round the other way, #wrong = %ld",
	       o.wrong);
	replug_and_run();

	/*
	 * Rank 2 gone (both of its cables pulled, it runs nothing): the same
	 * two cuts around one rank. Ranks 0, 1 and 3 name rank 2 alone, also
	 * rank 1, which may have nothing left to send: its relayed probe finds
	 * the second cut.
	 */
	plug_off(1, SEND_PORT);
	plug_off(2, RECV_PORT);
	plug_off(2, SEND_PORT);
	plug_off(3, RECV_PORT);
	ok = wait_port(1, SEND_PORT, false) && wait_port(3, RECV_PORT, false);
	{
		struct trial t;

		o = (struct outcome){ .wrong = 0 };
		prepare(&t, MAIA_COLL_ALL_REDUCE, MAIA_DTYPE_FP32, MAIA_REDOP_SUM, 50021, 0, false,
			-2, LONG_TIMEOUT_MS);
		for (unsigned int r = 0; r < 4; r++)
			if (r != 2)
				submit(&t, r);
		for (unsigned int r = 0; r < 4; r++)
			if (r != 2)
				collect(&t, r, &o);
		finish_trial(&t, &o, false);
	}
	for (unsigned int r = 0; r < 4; r++)
		ok &= r == 2 || (!o.hung && o.status[r] == MAIA_STATUS_FABRIC_LINK &&
				 o.report[r].unreachable_first == 2 &&
				 o.report[r].unreachable_count == 1);
	tap_ok(ok, "rank 2 cut off: ranks 0, 1, 3 end FABRIC_LINK (%u %u %u) naming rank 2 alone out of reach (%u+%u, %u+%u, %u+%u)",
	       o.status[0], o.status[1], o.status[3], o.report[0].unreachable_first,
	       o.report[0].unreachable_count, o.report[1].unreachable_first,
	       o.report[1].unreachable_count, o.report[3].unreachable_first,
	       o.report[3].unreachable_count);
	ring_down();
}

/* Waits until dev's port's failover state has bits (a snapshot each fabric round). */
static bool wait_fo_state(unsigned int dev, unsigned int port, uint32_t bits)
{
	uint64_t t0 = now_ms();

	while ((port_info(dev, port).fo_state & bits) != bits) {
		if (now_ms() - t0 >= HANG_GUARD_MS)
			return false;
		usleep(1000);
	}
	return true;
}

/*
 * The failover thresholds, on a ring of 3 whose cables are all UP. Latency:
 * device 0's send port models a cable 10 us longer (fabric_lat_ns), over
 * the 5 us default: rank 0 sends round the other way from the first
 * collective on, and rank 1 follows when the relayed chunks reach its send
 * port; exact. With the threshold register at 0 (off) the ring runs as
 * cabled again. Loss: 5% of the frames from rank 0 to rank 1 lost (seeded);
 * once a window of MAIA_FABRIC_FO_LOSS_WINDOW frames measured it (0.01 %
 * default), the next collectives avoid that direction; exact.
 */
static void test_failover_threshold(void)
{
	struct maia_sim_fabric_port_info i0, i1;
	char ev[256], ev1[256];
	uint64_t relayed;
	struct outcome o;
	bool ok;

	dev0_send_lat_ns = 10000;
	ok = ring_up(3, 0);
	dev0_send_lat_ns = 0;
	if (!tap_ok(ok, "3 devices cabled in a ring, device 0's send port 10 us longer: every port UP"))
		return;
	ok = wait_fo_state(0, SEND_PORT, MAIA_FPORT_FO_LATENCY);
	i0 = port_info(0, SEND_PORT);
	tap_ok(ok && i0.lat_ns == 11000 && rd(&nodes[0].e, MAIA_REG_FABRIC_FO_LAT_NS) == 5000 &&
	       (rd(&nodes[0].e, MAIA_REG_FPORT_FO(SEND_PORT, MAIA_FPORT_FO_STATE)) &
		MAIA_FPORT_FO_LATENCY) &&
	       rd(&nodes[0].e, MAIA_REG_FPORT_Q(SEND_PORT, MAIA_FPORT_Q_LAT_NS)) == 11000 &&
	       !(port_info(0, RECV_PORT).fo_state & MAIA_FPORT_FO_LATENCY),
	       "rank 0's send port: modeled latency %u ns over the %u ns threshold (state %#x), its receive port not",
	       i0.lat_ns, rd(&nodes[0].e, MAIA_REG_FABRIC_FO_LAT_NS), i0.fo_state);
	o = run(MAIA_COLL_ALL_REDUCE, MAIA_DTYPE_FP32, MAIA_REDOP_SUM, 50021, 0, false, -1,
		LONG_TIMEOUT_MS);
	tap_ok(all_ok(&o) && o.wrong == 0, "latency over the threshold: all-reduce relayed round the other way, every job OK, #wrong = %ld",
	       o.wrong);
	o = run(MAIA_COLL_ALL_GATHER, MAIA_DTYPE_BF16, MAIA_REDOP_SUM, 5003, 0, false, -1,
		LONG_TIMEOUT_MS);
	i0 = port_info(0, SEND_PORT);
	i1 = port_info(1, RECV_PORT);
	relayed = port_info(2, RECV_PORT).relayed;
	tap_ok(all_ok(&o) && o.wrong == 0 && i0.failovers == 2 && i1.failovers == 2 && relayed > 0 &&
	       rd(&nodes[0].e, MAIA_REG_FPORT_FO(SEND_PORT, MAIA_FPORT_FO_FAILOVERS)) == 2,
	       "all-gather too (#wrong = %ld); failovers: rank 0's send port %llu (register %u), rank 1's receive port %llu (it followed); rank 2 relayed %llu",
	       o.wrong, (unsigned long long)i0.failovers,
	       rd(&nodes[0].e, MAIA_REG_FPORT_FO(SEND_PORT, MAIA_FPORT_FO_FAILOVERS)),
	       (unsigned long long)i1.failovers, (unsigned long long)relayed);
	wr(&nodes[0].e, MAIA_REG_FABRIC_FO_LAT_NS, 0);
	ok = rd(&nodes[0].e, MAIA_REG_FABRIC_FO_LAT_NS) == 0;
	while (ok && (port_info(0, SEND_PORT).fo_state & MAIA_FPORT_FO_LATENCY))
		usleep(1000);
	o = run(MAIA_COLL_ALL_REDUCE, MAIA_DTYPE_FP32, MAIA_REDOP_SUM, 50021, 0, false, -1,
		LONG_TIMEOUT_MS);
	/* As in test_failover_ring(): the failover counters are the evidence. */
	tap_ok(ok && all_ok(&o) && o.wrong == 0 && port_info(0, SEND_PORT).failovers == 2 &&
	       port_info(1, RECV_PORT).failovers == 2,
	       "threshold register written 0 (off): the all-reduce runs as cabled, #wrong = %ld, no failover more (%llu, %llu; relayed %llu since; %s; %s)",
	       o.wrong, (unsigned long long)port_info(0, SEND_PORT).failovers,
	       (unsigned long long)port_info(1, RECV_PORT).failovers,
	       (unsigned long long)(port_info(2, RECV_PORT).relayed - relayed),
	       fo_evidence(0, SEND_PORT, ev, sizeof(ev)), fo_evidence(1, RECV_PORT, ev1, sizeof(ev1)));
	ring_down();

	if (!tap_ok(ring_up(3, 50000), "3 devices cabled in a ring, 5%% of the frames 0 -> 1 lost"))
		return;
	o = run(MAIA_COLL_ALL_REDUCE, MAIA_DTYPE_FP32, MAIA_REDOP_SUM, 3u << 21, 4096, false, -1,
		LONG_TIMEOUT_MS);
	ok = all_ok(&o) && o.wrong == 0 && wait_fo_state(0, SEND_PORT, MAIA_FPORT_FO_LOSS);
	i0 = port_info(0, SEND_PORT);
	tap_ok(ok && i0.loss_ppm >= 100 && !(port_info(0, RECV_PORT).fo_state & MAIA_FPORT_FO_LOSS),
	       "a 24 MiB all-reduce in 4 KiB chunks (#wrong = %ld): rank 0's send port measured %u ppm lost, over the 100 ppm threshold; its receive port not",
	       o.wrong, i0.loss_ppm);
	o = run(MAIA_COLL_ALL_REDUCE, MAIA_DTYPE_BF16, MAIA_REDOP_SUM, 50021, 0, false, -1,
		LONG_TIMEOUT_MS);
	tap_ok(all_ok(&o) && o.wrong == 0 && port_info(0, SEND_PORT).failovers >= 1 &&
	       port_info(1, RECV_PORT).failovers >= 1 && port_info(2, RECV_PORT).relayed > 0,
	       "loss over the threshold: the next all-reduce avoids it (failovers %llu, %llu), every job OK, #wrong = %ld",
	       (unsigned long long)port_info(0, SEND_PORT).failovers,
	       (unsigned long long)port_info(1, RECV_PORT).failovers, o.wrong);
	ring_down();
}

/* Transport messages other than identities that port took from its peer. */
static uint64_t data_msgs(unsigned int dev, unsigned int port)
{
	struct maia_sim_fabric_port_info info;

	if (maia_sim_fabric_port_info(nodes[dev].e.sim, port, &info))
		return 0;
	return info.rx_msgs - info.ident_rx;
}

/* Waits until dev's port took at least n more such messages than base. */
static bool wait_data_msgs(unsigned int dev, unsigned int port, uint64_t base, uint64_t n)
{
	uint64_t t0 = now_ms();

	while (data_msgs(dev, port) - base < n) {
		if (now_ms() - t0 >= HANG_GUARD_MS)
			return false;
		usleep(1000);
	}
	return true;
}

/*
 * fw_xport_test_on_done(): each time a device's transport marks operations
 * done (their jobs may see it from then on), the failover registers of every
 * port, as a driver reads them (the published snapshot), against what the
 * transport counted. Called on the thread in the device's round, sim->lock
 * held.
 */
static unsigned long done_checks, done_unpublished;	/* atomic */
static pthread_mutex_t unpublished_lock = PTHREAD_MUTEX_INITIALIZER;
static char unpublished_first[192];	/* under unpublished_lock */

static void check_published(struct maia_sim *sim)
{
	for (unsigned int p = 0; p < NPORTS; p++) {
		struct fw_xport_failover fo;
		uint32_t failovers = 0, relayed = 0;

		fw_xport_failover_counters(sim, p, &fo);
		fw_fabric_reg_read_locked(sim, MAIA_REG_FPORT_FO(p, MAIA_FPORT_FO_FAILOVERS),
					  &failovers);
		fw_fabric_reg_read_locked(sim, MAIA_REG_FPORT_FO(p, MAIA_FPORT_FO_RELAYED),
					  &relayed);
		if (failovers == (uint32_t)fo.failovers && relayed == (uint32_t)fo.relayed)
			continue;
		if (__atomic_add_fetch(&done_unpublished, 1, __ATOMIC_RELAXED) == 1) {
			unsigned int dev = 0;

			while (dev < ndev && nodes[dev].e.sim != sim)
				dev++;
			pthread_mutex_lock(&unpublished_lock);
			snprintf(unpublished_first, sizeof(unpublished_first),
				 "device %u port %u: FAILOVERS %u, RELAYED %u read; %llu and %llu counted",
				 dev, p, failovers, relayed, (unsigned long long)fo.failovers,
				 (unsigned long long)fo.relayed);
			pthread_mutex_unlock(&unpublished_lock);
		}
	}
	__atomic_add_fetch(&done_checks, 1, __ATOMIC_RELAXED);
}

/*
 * A job that sees its collective done may read what the collective counted
 * (edc3c56): a round publishes the ports' snapshot before a sync hands
 * operations to their jobs, also the sync of a pass the round does because
 * it was kicked meanwhile. A ring of two, cable 0-1 pulled: each collective
 * goes over the other cable both ways, a failover at both of the cut's ends
 * counted as the collective starts. Rank 1 submits first; its chunk reaches
 * rank 0 (held there); then rank 0 submits, and its round starts the
 * collective (counted), takes the chunk held, sends its own and ends it in
 * the same pass. The cable hands rank 0 a duplicate of rank 1's chunk as
 * rank 0 sends (keep_last, again), in that pass: the round is kicked and
 * does another, whose sync hands the collective to its job. At every
 * hand-over on either device (check_published()) the failover registers
 * must equal the transport's counts; with the sync before the publish, every
 * collective's failover was a round late. count collectives.
 */
static void test_counted_before_done(unsigned int count)
{
	struct dir *d10 = &nodes[1].out[SEND_PORT], *d01 = &nodes[0].out[RECV_PORT];
	char first[sizeof(unpublished_first)];
	unsigned long checks, bad;
	unsigned int okays = 0, late = 0;
	bool ok;

	if (!tap_ok(ring_up(2, 0), "2 devices cabled in a ring: every port UP"))
		return;
	plug_off(0, SEND_PORT);
	plug_off(1, RECV_PORT);
	ok = wait_port(0, SEND_PORT, false) && wait_port(1, RECV_PORT, false);
	pthread_mutex_lock(&d10->lock);
	d10->keep_last = true;
	pthread_mutex_unlock(&d10->lock);
	pthread_mutex_lock(&d01->lock);
	d01->again = d10;
	pthread_mutex_unlock(&d01->lock);
	__atomic_store_n(&done_checks, 0, __ATOMIC_RELAXED);
	__atomic_store_n(&done_unpublished, 0, __ATOMIC_RELAXED);
	fw_xport_test_on_done(check_published);
	for (unsigned int i = 0; i < count && ok; i++) {
		struct outcome o = { .wrong = 0 };
		uint64_t msgs = data_msgs(0, RECV_PORT);
		struct trial t;

		prepare(&t, i % 2 ? MAIA_COLL_ALL_GATHER : MAIA_COLL_ALL_REDUCE, MAIA_DTYPE_FP32,
			MAIA_REDOP_SUM, 2 + i % 7, 0, false, -1, LONG_TIMEOUT_MS);
		submit(&t, 1);
		ok = wait_data_msgs(0, RECV_PORT, msgs, 1);
		submit(&t, 0);
		for (unsigned int r = 0; r < 2; r++)
			collect(&t, r, &o);
		finish_trial(&t, &o, true);
		okays += all_ok(&o) && o.wrong == 0;
		/* What a driver reads once it sees the completions. */
		late += rd(&nodes[0].e, MAIA_REG_FPORT_FO(SEND_PORT, MAIA_FPORT_FO_FAILOVERS)) !=
			i + 1 ||
			rd(&nodes[1].e, MAIA_REG_FPORT_FO(RECV_PORT, MAIA_FPORT_FO_FAILOVERS)) !=
			i + 1;
	}
	fw_xport_test_on_done(NULL);
	checks = __atomic_load_n(&done_checks, __ATOMIC_RELAXED);
	bad = __atomic_load_n(&done_unpublished, __ATOMIC_RELAXED);
	pthread_mutex_lock(&unpublished_lock);
	memcpy(first, unpublished_first, sizeof(first));
	unpublished_first[0] = '\0';
	pthread_mutex_unlock(&unpublished_lock);
	tap_ok(ok && okays == count && late == 0 && port_info(0, SEND_PORT).failovers == count &&
	       port_info(1, RECV_PORT).failovers == count,
	       "ring of 2, cable 0-1 pulled: %u small collectives (rank 1's chunk at rank 0 first) over the other cable, %u OK; failovers %llu and %llu, FAILOVERS registers behind after %u completions",
	       count, okays, (unsigned long long)port_info(0, SEND_PORT).failovers,
	       (unsigned long long)port_info(1, RECV_PORT).failovers, late);
	tap_ok(checks >= 2ul * count && bad == 0,
	       "at %lu hand-overs of done collectives to their jobs, the failover registers were behind the counts %lu times%s%s",
	       checks, bad, bad ? ": first " : "", bad ? first : "");
	ring_down();
}

/*
 * The cable between ranks 0 and 1 pulled while a 3-rank all-reduce runs:
 * rank 2 has not submitted it yet, so rank 1's chunks pile up at rank 2 (its
 * transport holds FW_XPORT_HELD_MAX, the event this waits for, then the
 * link refuses), rank 1 stops taking rank 0's, and rank 0's link queue to
 * rank 1 fills with chunks not acknowledged. The link going DOWN (dead
 * peer) hands those back: they go to rank 1 round the ring the other way
 * (through rank 2), the rest of rank 0's stream after them; rank 1 takes
 * its predecessor's chunks on its send port from then on and drops what it
 * already had. Then rank 2 runs its part: every rank ends OK with the
 * reference's bits, in place (nothing is sent twice from memory). The
 * next all-reduce runs on the backup route too.
 */
static void test_cable_pulled_mid_collective(void)
{
	const uint64_t count = 3 * 1048576;	/* 3 blocks of 4 MiB FP32 */
	struct outcome o = { .wrong = 0 };
	struct maia_sim_fabric_port_info i0, i1;
	struct trial t;
	uint64_t base, base1;
	bool ok;

	if (!tap_ok(ring_up(3, 0), "3 devices cabled in a ring: every port UP"))
		return;
	prepare(&t, MAIA_COLL_ALL_REDUCE, MAIA_DTYPE_FP32, MAIA_REDOP_SUM, count, 4096, true, -1,
		LONG_TIMEOUT_MS);
	base = data_msgs(2, RECV_PORT);
	base1 = data_msgs(1, RECV_PORT);
	submit(&t, 0);
	submit(&t, 1);
	/* Rank 1 then holds what it can of rank 0's 1024 chunks: less than them all. */
	ok = wait_data_msgs(2, RECV_PORT, base, 256) && wait_data_msgs(1, RECV_PORT, base1, 256);
	tap_ok(ok, "in-place all-reduce (4 KiB chunks) on ranks 0 and 1 only: rank 2 holds %llu of rank 1's chunks, rank 1 took %llu of rank 0's 1024",
	       (unsigned long long)(data_msgs(2, RECV_PORT) - base),
	       (unsigned long long)(data_msgs(1, RECV_PORT) - base1));
	plug_off(0, SEND_PORT);
	plug_off(1, RECV_PORT);
	ok = wait_port(0, SEND_PORT, false) && wait_port(1, RECV_PORT, false);
	tap_ok(ok, "cable 0-1 pulled mid-collective: both ends DOWN");
	submit(&t, 2);
	for (unsigned int r = 0; r < 3; r++)
		collect(&t, r, &o);
	finish_trial(&t, &o, true);
	i0 = port_info(0, SEND_PORT);
	i1 = port_info(1, RECV_PORT);
	tap_ok(all_ok(&o) && o.wrong == 0 && o.report[0].status == MAIA_STATUS_OK,
	       "the all-reduce went on round the other way: statuses %u %u %u, #wrong = %ld",
	       o.status[0], o.status[1], o.status[2], o.wrong);
	tap_ok(i0.failovers == 1 && i1.failovers == 1 && i0.resent > 0,
	       "counted: a failover at each end (%llu, %llu); rank 0 re-sent %llu chunks its link had not seen acknowledged",
	       (unsigned long long)i0.failovers, (unsigned long long)i1.failovers,
	       (unsigned long long)i0.resent);
	o = run(MAIA_COLL_ALL_REDUCE, MAIA_DTYPE_FP32, MAIA_REDOP_SUM, 50021, 0, false, -1,
		LONG_TIMEOUT_MS);
	tap_ok(all_ok(&o) && o.wrong == 0 && port_info(0, SEND_PORT).failovers == 2,
	       "the next all-reduce on the backup route: every job OK (%s, statuses %u %u %u), #wrong = %ld, failovers at rank 0's send port %llu (want 2)",
	       o.hung ? "hung" : "none hung", o.status[0], o.status[1], o.status[2], o.wrong,
	       (unsigned long long)port_info(0, SEND_PORT).failovers);
	replug_and_run();
	ring_down();
}

/*
 * Two communicators on one ring at once, each on its own queue of every
 * device: rank 1 starts B's all-reduce first and waits in it while A's
 * chunks from rank 0 reach it; then it runs A and the others B. Each
 * collective takes only its own chunks (A's on rank 1 were once taken as
 * stale by B, and A timed out), and both come out right: a ring all-reduce
 * and a gather-reduce one.
 */
static void test_two_communicators(void)
{
	struct outcome oa = { .wrong = 0 }, ob = { .wrong = 0 };
	struct trial a, b;
	uint64_t base;
	bool arrived;

	if (!tap_ok(ring_up(3, 0), "3 devices cabled in a ring: every port UP"))
		return;
	trial_comm = 0xa;
	prepare(&a, MAIA_COLL_ALL_REDUCE, MAIA_DTYPE_FP32, MAIA_REDOP_SUM, 100003, 0, false, -1,
		LONG_TIMEOUT_MS);
	trial_comm = 0xb;
	prepare(&b, MAIA_COLL_ALL_REDUCE, MAIA_DTYPE_BF16, MAIA_REDOP_MAX, 1001, 0, false, -1,
		LONG_TIMEOUT_MS);
	trial_comm = 0xfab;
	b.qi = 1;
	submit(&b, 1);
	base = data_msgs(1, RECV_PORT);
	submit(&a, 0);
	submit(&a, 2);
	arrived = wait_data_msgs(1, RECV_PORT, base, 1);
	submit(&a, 1);
	submit(&b, 0);
	submit(&b, 2);
	for (unsigned int r = 0; r < 3; r++) {
		collect(&a, r, &oa);
		collect(&b, r, &ob);
	}
	finish_trial(&a, &oa, true);
	finish_trial(&b, &ob, true);
	tap_ok(arrived && all_ok(&oa) && all_ok(&ob) && !oa.wrong && !ob.wrong,
	       "two communicators at once, B first on rank 1 while A's chunks arrive: A (ring, fp32) status %u/%u/%u #wrong %ld, B (gather-reduce, bf16 max) status %u/%u/%u #wrong %ld",
	       oa.status[0], oa.status[1], oa.status[2], oa.wrong, ob.status[0], ob.status[1],
	       ob.status[2], ob.wrong);
	ring_down();
}

/*
 * A communicator that fails and is given up must not block the ring: rank
 * 1's all-gather of 8 MiB in 4 KiB chunks fails at once (its send buffer is
 * not there) while rank 0 sends its 2,048 chunks until it times out. Rank 1
 * drops them as a failed collective's; held instead, 256 of them filled its
 * transport's list and every later message of the link waited behind the
 * refused one. Then another communicator's all-reduce runs at once.
 */
static void test_failed_leftovers(void)
{
	struct maia_sim_fabric_port_info before, after;
	struct outcome ox = { .wrong = 0 }, oy = { .wrong = 0 };
	struct trial x, y;

	if (!tap_ok(ring_up(2, 0), "2 devices cabled in a ring: every port UP"))
		return;
	maia_sim_fabric_port_info(nodes[1].e.sim, RECV_PORT, &before);
	trial_comm = 0xdead;
	/*
	 * Rank 0 sends until its timeout: 1 s, so that more than 256 chunks
	 * leave it on a loaded host too (under ThreadSanitizer 300 ms saw 64).
	 */
	prepare(&x, MAIA_COLL_ALL_GATHER, MAIA_DTYPE_FP32, MAIA_REDOP_SUM, 2u << 20, 4096, false, 1,
		1000);
	trial_comm = 0xfab;
	for (unsigned int r = 0; r < 2; r++)
		submit(&x, r);
	for (unsigned int r = 0; r < 2; r++)
		collect(&x, r, &ox);
	finish_trial(&x, &ox, false);
	maia_sim_fabric_port_info(nodes[1].e.sim, RECV_PORT, &after);
	tap_ok(!ox.hung && ox.status[0] == MAIA_STATUS_FABRIC_TIMEOUT &&
	       ox.status[1] != MAIA_STATUS_OK && after.rx_dropped - before.rx_dropped > 256,
	       "rank 1's all-gather fails (status %u), rank 0 times out (%u) after sending its "
	       "chunks: rank 1 dropped %llu of them", ox.status[1], ox.status[0],
	       (unsigned long long)(after.rx_dropped - before.rx_dropped));
	prepare(&y, MAIA_COLL_ALL_REDUCE, MAIA_DTYPE_FP32, MAIA_REDOP_SUM, 100003, 0, false, -1,
		LONG_TIMEOUT_MS);
	for (unsigned int r = 0; r < 2; r++)
		submit(&y, r);
	for (unsigned int r = 0; r < 2; r++)
		collect(&y, r, &oy);
	finish_trial(&y, &oy, true);
	tap_ok(all_ok(&oy) && !oy.wrong, "then another communicator's all-reduce: status %u/%u, "
	       "#wrong = %ld, in %.2f s", oy.status[0], oy.status[1], oy.wrong, oy.secs);
	ring_down();
}

/*
 * One id, two communicators on one device at once (two processes given the
 * same id): rank 0 of A runs on queue 0 and waits for rank 1; B, with the
 * same comm_id on queue 1 of the same device, is refused at once with
 * FABRIC_COMM_BUSY (and its report says so) instead of taking A's chunks or
 * timing out. A then completes, right; the refusal poisoned nothing, so the
 * id's next collective on queue 1 of both devices (one after the other is
 * allowed) runs too.
 */
static void test_comm_busy(void)
{
	struct outcome oa = { .wrong = 0 }, ob = { .wrong = 0 }, oc = { .wrong = 0 };
	struct trial a, b, c;
	uint64_t base;
	bool arrived;

	if (!tap_ok(ring_up(2, 0), "2 devices cabled in a ring: every port UP"))
		return;
	trial_comm = 0xc0;
	prepare(&a, MAIA_COLL_ALL_REDUCE, MAIA_DTYPE_FP32, MAIA_REDOP_SUM, 100003, 0, false, -1,
		LONG_TIMEOUT_MS);
	/* Short: without the check it would wait for a rank 1 that never comes. */
	prepare(&b, MAIA_COLL_ALL_REDUCE, MAIA_DTYPE_FP32, MAIA_REDOP_SUM, 1001, 0, false, -1,
		300);
	b.qi = 1;
	base = data_msgs(1, RECV_PORT);
	submit(&a, 0);
	arrived = wait_data_msgs(1, RECV_PORT, base, 1);
	submit(&b, 0);
	collect(&b, 0, &ob);
	tap_ok(arrived && !ob.hung && ob.status[0] == MAIA_STATUS_FABRIC_COMM_BUSY &&
	       ob.report[0].status == MAIA_STATUS_FABRIC_COMM_BUSY,
	       "comm 0xc0 running on queue 0 of rank 0: the same comm_id on its queue 1 is refused "
	       "with FABRIC_COMM_BUSY (status %u, report %u)", ob.status[0], ob.report[0].status);
	finish_trial(&b, &ob, false);
	submit(&a, 1);
	for (unsigned int r = 0; r < 2; r++)
		collect(&a, r, &oa);
	finish_trial(&a, &oa, true);
	prepare(&c, MAIA_COLL_ALL_REDUCE, MAIA_DTYPE_FP32, MAIA_REDOP_SUM, 4099, 0, false, -1,
		LONG_TIMEOUT_MS);
	c.qi = 1;
	for (unsigned int r = 0; r < 2; r++)
		submit(&c, r);
	for (unsigned int r = 0; r < 2; r++)
		collect(&c, r, &oc);
	finish_trial(&c, &oc, true);
	trial_comm = 0xfab;
	tap_ok(all_ok(&oa) && !oa.wrong && all_ok(&oc) && !oc.wrong,
	       "then A completes (status %u/%u, #wrong %ld), and the id's next collective on queue 1 "
	       "(status %u/%u, #wrong %ld)", oa.status[0], oa.status[1], oa.wrong, oc.status[0],
	       oc.status[1], oc.wrong);
	ring_down();
}

/*
 * Fabric rounds cut after every received frame (fw_fabric_round_rx_limit();
 * by default after half a keepalive period, so that a slow receiver still
 * ticks its links): the frames left wait for the next round, in order, and
 * nothing is lost or delivered twice. Lent frames on the 2-device ring.
 */
static void test_rounds_cut(void)
{
	struct maia_sim_fabric_port_info info;
	unsigned long long cut = 0;

	if (!tap_ok(ring_up_lend(2, 0, true), "2 devices cabled, rounds cut after every frame"))
		return;
	fw_fabric_round_rx_limit(1);
	for (unsigned int i = 0; i < 2; i++) {
		struct outcome o = run(i ? MAIA_COLL_ALL_GATHER : MAIA_COLL_ALL_REDUCE,
				       MAIA_DTYPE_FP32, MAIA_REDOP_SUM, i ? 30001 : 300007, 0,
				       false, -1, LONG_TIMEOUT_MS);

		tap_ok(all_ok(&o) && o.wrong == 0,
		       "rounds cut after every frame: %s fp32: every job OK, #wrong = %ld",
		       i ? "all-gather count 30001" : "all-reduce count 300007", o.wrong);
	}
	fw_fabric_round_rx_limit(0);
	for (unsigned int d = 0; d < 2; d++)
		for (unsigned int port = 0; port < NPORTS; port++) {
			maia_sim_fabric_port_info(nodes[d].e.sim, port, &info);
			cut += info.rx_cut;
		}
	/* Each all-reduce message is more than one frame: rounds had frames to leave. */
	tap_ok(cut > 0, "rounds cut after every frame: %llu rounds left frames for the next", cut);
	/*
	 * Every frame the cable carried was fed to the receiving link or
	 * counted as a queue drop: a frame a cut round lost would be resent,
	 * and go unseen by the results. Read when the receiver has caught up.
	 */
	for (unsigned int k = 0; k < 2 * NPORTS; k++) {
		unsigned int d = k / NPORTS, port = k % NPORTS;
		struct dir *cable = &nodes[d].out[port];
		uint64_t carried, seen, t_end = now_ms() + HANG_GUARD_MS;
		bool equal = false;

		do {
			maia_sim_fabric_port_info(cable->to->sim, cable->to_port, &info);
			seen = info.rx_frames + info.rx_queue_drops;
			pthread_mutex_lock(&cable->lock);
			carried = cable->carried;
			pthread_mutex_unlock(&cable->lock);
			equal = carried == seen;
			if (!equal)
				usleep(1000);
		} while (!equal && now_ms() < t_end);
		tap_ok(equal, "rounds cut: the cable from device %u port %u carried %llu frames, "
		       "its receiver took %llu (fed to its link or dropped at its queue)", d, port,
		       (unsigned long long)carried, (unsigned long long)seen);
	}
	ring_down();
}

/*
 * A late rank whose own memory fails while it takes what its peer sent
 * first (a guest crashed QEMU this way): rank 0's chunks wait, held, on
 * rank 1's receive port; rank 1 starts with a receive buffer or a report
 * address that is not there, fails on a held chunk, and drops the rest of
 * that collective's chunks while they are being offered. Rank 1 ends with
 * its own memory error, rank 0 is not left hanging, the dropped chunks are
 * counted, and the next collective on the same devices is exact. Each case
 * at two sizes: a ring all-reduce of 4 MiB (rank 1 fails on its first
 * chunk) and one of 4 KiB (rank 1 ends the whole collective on the held
 * chunks).
 */
static void test_late_rank_bad_memory(void)
{
	static const char *const what[] = { "receive buffer", "report address" };
	static const uint64_t counts[] = { 1u << 20, 1024 };

	if (!tap_ok(ring_up(2, 0), "2 devices cabled in a ring: every port UP"))
		return;
	for (unsigned int w = 0; w < 2; w++)
		for (unsigned int c = 0; c < 2; c++) {
			struct maia_sim_fabric_port_info before, after;
			struct outcome o = { .wrong = 0 };
			struct maia_cmd_collective *k1;
			struct trial t;
			uint64_t base;
			bool arrived;

			prepare(&t, MAIA_COLL_ALL_REDUCE, MAIA_DTYPE_FP32, MAIA_REDOP_SUM,
				counts[c], 0, false, -1, 2000);
			k1 = host_ptr(&nodes[1].e, t.cb_bus[1]);
			if (w)
				k1->report_addr = BAD_BUS_ADDR;
			else
				k1->recv_addr = BAD_BUS_ADDR;
			maia_sim_fabric_port_info(nodes[1].e.sim, RECV_PORT, &before);
			base = data_msgs(1, RECV_PORT);
			submit(&t, 0);
			arrived = wait_data_msgs(1, RECV_PORT, base, 1);
			submit(&t, 1);
			for (unsigned int r = 0; r < 2; r++)
				collect(&t, r, &o);
			finish_trial(&t, &o, false);
			maia_sim_fabric_port_info(nodes[1].e.sim, RECV_PORT, &after);
			tap_ok(arrived && !o.hung && o.status[1] != MAIA_STATUS_OK &&
			       o.status[1] != MAIA_STATUS_FABRIC_TIMEOUT &&
			       (o.status[0] == MAIA_STATUS_OK ||
				o.status[0] == MAIA_STATUS_FABRIC_TIMEOUT) &&
			       /* Failed on its first chunk: what came after is dropped. */
			       (w || c || after.rx_dropped > before.rx_dropped),
			       "count %llu, rank 1 late with its %s not there: rank 1 fails with "
			       "status %u, rank 0 ends with %u, none hangs; rank 1 dropped %llu "
			       "messages", (unsigned long long)counts[c], what[w], o.status[1],
			       o.status[0],
			       (unsigned long long)(after.rx_dropped - before.rx_dropped));
		}
	{
		struct outcome o = run(MAIA_COLL_ALL_REDUCE, MAIA_DTYPE_FP32, MAIA_REDOP_SUM,
				       100003, 0, false, -1, LONG_TIMEOUT_MS);

		tap_ok(all_ok(&o) && o.wrong == 0,
		       "then an all-reduce on the same devices, no reset: status %u/%u, #wrong = %ld",
		       o.status[0], o.status[1], o.wrong);
	}
	ring_down();
}

/*
 * Modeled time across devices (Documentation/hw/time-model.rst): on a fresh
 * ring of 4 the ranks start together, and an 8 MiB FP32 all-reduce takes the
 * ring's time on the Maia 100 link (50 GB/s a port, 1 us a hop), the same on
 * every rank and in a second run. Then rank 1 first copies 4 MiB from the
 * host (131 us at 32 GB/s): its messages leave that much later, and every
 * rank's collective waits for them in modeled time.
 */
static void test_modeled_time(void)
{
	const uint64_t count = 2u << 20, bytes = 4 * count, delay = 4194304ull * 1000 / 32000;
	const double link = 50.0;	/* GB/s */
	struct outcome o1, o2, o3 = { .wrong = 0 };
	bool same = true, near = true, after = true;
	uint64_t d1[MAX_DEV];
	struct trial t;
	struct cmdbuf cb;
	uint64_t src;

	if (!tap_ok(ring_up(4, 0), "modeled: a fresh ring of 4 is up"))
		return;
	o1 = run(MAIA_COLL_ALL_REDUCE, MAIA_DTYPE_FP32, MAIA_REDOP_SUM, count, 0, false, -1,
		 LONG_TIMEOUT_MS);
	o2 = run(MAIA_COLL_ALL_REDUCE, MAIA_DTYPE_FP32, MAIA_REDOP_SUM, count, 0, false, -1,
		 LONG_TIMEOUT_MS);
	for (unsigned int r = 0; r < 4; r++) {
		double busbw;

		d1[r] = o1.model_end[r] - o1.model_start[r];
		busbw = 2.0 * 3 / 4 * (double)bytes / (double)d1[r];
		same &= d1[r] == o2.model_end[r] - o2.model_start[r] && d1[r] == d1[0];
		near &= busbw > 0.85 * link && busbw <= link;
	}
	tap_ok(all_ok(&o1) && all_ok(&o2) && !o1.wrong && !o2.wrong && same,
	       "modeled: an 8 MiB all-reduce takes %llu ns on every rank, twice (ranks %llu %llu %llu %llu, then %llu %llu %llu %llu; statuses %u %u %u %u, %u %u %u %u; #wrong %ld, %ld)",
	       (unsigned long long)d1[0], (unsigned long long)d1[0], (unsigned long long)d1[1],
	       (unsigned long long)d1[2], (unsigned long long)d1[3],
	       (unsigned long long)(o2.model_end[0] - o2.model_start[0]),
	       (unsigned long long)(o2.model_end[1] - o2.model_start[1]),
	       (unsigned long long)(o2.model_end[2] - o2.model_start[2]),
	       (unsigned long long)(o2.model_end[3] - o2.model_start[3]),
	       o1.status[0], o1.status[1], o1.status[2], o1.status[3],
	       o2.status[0], o2.status[1], o2.status[2], o2.status[3], o1.wrong, o2.wrong);
	tap_ok(near, "modeled: its bus bandwidth is %.1f GB/s on a %.0f GB/s link",
	       2.0 * 3 / 4 * (double)bytes / (double)d1[0], link);

	/* Rank 1 starts its collective late by a host copy. */
	prepare(&t, MAIA_COLL_ALL_REDUCE, MAIA_DTYPE_FP32, MAIA_REDOP_SUM, count, 0, false, -1,
		LONG_TIMEOUT_MS);
	src = host_alloc(&nodes[1].e, 4u << 20, 4096);
	cb_init(&cb);
	cmd_copy(&cb, src, MAIA_PHYS_HBM, 4u << 20, 1, 0, 0);
	cb_add(&cb, &t.k[1], sizeof(t.k[1]));
	for (unsigned int r = 0; r < 4; r++) {
		t.irqs[r] = irq_count(&nodes[r].e, MAIA_VEC_QUEUE(t.qi));
		t.slot[r] = queue_push(&nodes[r].e, &nodes[r].q[t.qi],
				       r == 1 ? cb_to_host(&nodes[1].e, &cb) : t.cb_bus[r],
				       r == 1 ? cb.len : sizeof(t.k[r]), 0, 0, t.k[r].seq, true);
	}
	for (unsigned int r = 0; r < 4; r++)
		collect(&t, r, &o3);
	finish_trial(&t, &o3, true);
	/*
	 * Rank 1 sends its 6 blocks from its late start on; the others wait for
	 * its data, each as far as the ring makes it (rank 0 gets rank 1's last
	 * block two hops after it left, while rank 1 still forwards the others').
	 */
	after = o3.model_end[1] >= o3.model_start[1] + delay + d1[1] * 9 / 10;
	for (unsigned int r = 0; r < 4; r++)
		after &= o3.model_end[r] - o3.model_start[r] >= d1[r] + delay / 4;
	tap_ok(all_ok(&o3) && !o3.wrong && after,
	       "modeled: rank 1 late by %llu ns: the ranks end %llu, %llu, %llu, %llu ns after "
	       "their start (alone %llu)", (unsigned long long)delay,
	       (unsigned long long)(o3.model_end[0] - o3.model_start[0]),
	       (unsigned long long)(o3.model_end[1] - o3.model_start[1]),
	       (unsigned long long)(o3.model_end[2] - o3.model_start[2]),
	       (unsigned long long)(o3.model_end[3] - o3.model_start[3]),
	       (unsigned long long)d1[0]);
	ring_down();
}

/*
 * A longer cable in modeled time (time-model.rst, "Several devices"): a
 * ring of n whose every port has fabric_lat_ns = LAT against the same ring
 * with none. A 400-byte FP32 all-reduce by gather-reduce passes n - 1 hops,
 * each waiting for the one before; forced round the ring, 2 (n - 1) steps.
 * Each hop crosses one cable, whose latency counts once, so every rank's
 * modeled duration grows by exactly hops x LAT. (400 bytes: every hop's
 * bytes are a whole number of ns at 50 GB/s, so no rounding enters.)
 */
static void test_cable_latency(unsigned int n)
{
	const uint32_t lat = 2500;	/* 1 us + 2.5 us: under the 5 us failover threshold */
	static const uint8_t algos[2] = { MAIA_COLL_ALGO_AUTO, MAIA_COLL_ALGO_RING };
	const unsigned int hops[2] = { n - 1, 2 * (n - 1) };
	uint64_t d[2][2][MAX_DEV];	/* [with the cables][algo][rank] */
	bool ok = true, exact = true;

	for (unsigned int l = 0; l < 2; l++) {
		all_lat_ns = l ? lat : 0;
		ok &= ring_up(n, 0);
		all_lat_ns = 0;
		for (unsigned int a = 0; a < 2 && ok; a++) {
			struct outcome o;

			trial_algo = algos[a];
			o = run(MAIA_COLL_ALL_REDUCE, MAIA_DTYPE_FP32, MAIA_REDOP_SUM, 100, 0, false,
				-1, LONG_TIMEOUT_MS);
			trial_algo = MAIA_COLL_ALGO_AUTO;
			ok &= all_ok(&o) && !o.wrong;
			for (unsigned int r = 0; r < n; r++)
				d[l][a][r] = o.model_end[r] - o.model_start[r];
		}
		ring_down();
	}
	for (unsigned int a = 0; a < 2 && ok; a++)
		for (unsigned int r = 0; r < n; r++)
			exact &= d[1][a][r] - d[0][a][r] == (uint64_t)hops[a] * lat;
	tap_ok(ok && exact,
	       "modeled, %u ranks, every cable %u ns longer: gather-reduce %llu -> %llu ns (%u hops), "
	       "ring %llu -> %llu ns (%u steps) on rank 0; every rank grows by hops x %u ns",
	       n, lat, (unsigned long long)d[0][0][0], (unsigned long long)d[1][0][0], hops[0],
	       (unsigned long long)d[0][1][0], (unsigned long long)d[1][1][0], hops[1], lat);
}

/*
 * Inline path: rank 0 submits, in one go, a job of [all-reduce, FENCE_WRITE]
 * and a job that copies the all-reduce's result; rank 1 joins once rank 0
 * waits. The fence value and the copy are written after the collective's
 * result (the fence after, the copy in the next job), and drain returns.
 */
static void test_inline_order(void)
{
	const uint64_t count = 5003, fence_value = 0xfe11ce;
	struct outcome o = { .wrong = 0 };
	struct env *e = &nodes[0].e;
	struct maia_cmd_fence_write f = {
		.hdr = { .opcode = MAIA_OP_FENCE_WRITE, .size = sizeof(f) },
		.value = fence_value,
	};
	struct maia_cmd_dma_copy c = {
		.hdr = { .opcode = MAIA_OP_DMA_COPY, .size = sizeof(c) },
		.width = count * 4, .height = 1,
	};
	uint64_t fence_bus, copy_bus, cb1, cb2;
	struct cmdbuf cb;
	uint32_t slot2, irqs, w0;
	struct trial t;
	bool fence_ok, copy_ok, waited;

	if (!tap_ok(ring_up(2, 0), "2 devices, inline doorbells: every port UP"))
		return;
	prepare(&t, MAIA_COLL_ALL_REDUCE, MAIA_DTYPE_FP32, MAIA_REDOP_SUM, count, 0, false, -1,
		LONG_TIMEOUT_MS);
	fence_bus = host_alloc(e, 8, 64);
	copy_bus = host_alloc(e, count * 4, 64);
	memset(host_ptr(e, fence_bus), 0, 8);
	memset(host_ptr(e, copy_bus), 0x5a, count * 4);
	f.addr = fence_bus;
	c.src = t.k[0].recv_addr;
	c.dst = copy_bus;
	cb_init(&cb);
	cb_add(&cb, &t.k[0], sizeof(t.k[0]));
	cb_add(&cb, &f, sizeof(f));
	cb1 = cb_to_host(e, &cb);
	cb_init(&cb);
	cb_add(&cb, &c, sizeof(c));
	cb2 = cb_to_host(e, &cb);
	t.irqs[0] = irqs = irq_count(e, MAIA_VEC_QUEUE(0));
	w0 = fabric_waits(0);
	t.slot[0] = queue_push(e, &nodes[0].q[0], cb1, sizeof(t.k[0]) + sizeof(f), 0, 0, 1, true);
	slot2 = queue_push(e, &nodes[0].q[0], cb2, sizeof(c), 0, 0, 2, true);
	waited = wait_fabric_waits(w0 + 1);
	fence_ok = !*(volatile uint64_t *)host_ptr(e, fence_bus);
	submit(&t, 1);
	for (unsigned int r = 0; r < 2; r++)
		collect(&t, r, &o);
	o.hung |= !wait_irq(e, MAIA_VEC_QUEUE(0), irqs + 2, HANG_GUARD_MS) ||
		  !(cqe_at(e, &nodes[0].q[0], slot2)->flags & MAIA_CQE_VALID) ||
		  cqe_at(e, &nodes[0].q[0], slot2)->status != MAIA_STATUS_OK;
	maia_sim_drain(e->sim);
	maia_sim_drain(nodes[1].e.sim);
	fence_ok &= *(uint64_t *)host_ptr(e, fence_bus) == fence_value;
	copy_ok = !memcmp(host_ptr(e, copy_bus), t.recv[0], count * 4);
	finish_trial(&t, &o, true);
	tap_ok(waited && all_ok(&o) && !o.wrong && fence_ok && copy_ok,
	       "inline: rank 0's [all-reduce, fence] waited for rank 1 with the fence unwritten; "
	       "then OK (#wrong %ld), the fence %s, the next job's copy of the result %s, drained",
	       o.wrong, fence_ok ? "written" : "WRONG", copy_ok ? "equal" : "DIFFERENT");
	ring_down();
}

/*
 * Two devices up, rank 0's all-reduce submitted and waiting for rank 1
 * (*waited: it parked before the guard); false if the ring did not come up.
 */
static bool park_rank0_allreduce(const char *name, struct trial *t, bool *waited)
{
	uint32_t w0;

	if (!tap_ok(ring_up(2, 0), "%s (inline %s): 2 devices, every port UP", name,
		    inline_db ? "on" : "off"))
		return false;
	prepare(t, MAIA_COLL_ALL_REDUCE, MAIA_DTYPE_FP32, MAIA_REDOP_SUM, 2, 0, false, -1,
		LONG_TIMEOUT_MS);
	w0 = fabric_waits(0);
	submit(t, 0);
	*waited = wait_fabric_waits(w0 + 1);
	return true;
}

/*
 * Doorbells behind a parked job (issue 33): rank 0's all-reduce waits for
 * rank 1; PARKED_JOBS no-op jobs rung one by one on rank 0's queue behind
 * it wake rank 0's worker not once (fw_sched_worker_kicks(): the
 * job cannot run on until the operation ends, nor the jobs behind it) and
 * none completes while it waits. Rank 1 joins: the all-reduce and then the
 * no-ops complete, in order (slots, job ids, modeled times). With the
 * doorbell fast path on, the thread that ends the operation runs them on,
 * and the worker is never woken at all.
 */
#define PARKED_JOBS 8

static void test_parked_doorbells(void)
{
	struct env *e = &nodes[0].e;
	struct tq *q = &nodes[0].q[0];
	struct outcome o = { .wrong = 0 };
	uint32_t slot[PARKED_JOBS], irqs;
	uint64_t k0, k_rung, k_end, prev_end;
	bool waited, early = false, order = true;
	struct trial t;

	if (!park_rank0_allreduce("parked doorbells", &t, &waited))
		return;
	maia_sim_drain(nodes[1].e.sim);
	k0 = fw_sched_worker_kicks(e->sim);
	irqs = t.irqs[0];
	for (unsigned int i = 0; i < PARKED_JOBS; i++)
		slot[i] = queue_push(e, q, 0, 0, 0, MAIA_SQE_NOP, 0x9a00 + i, true);
	k_rung = fw_sched_worker_kicks(e->sim);
	for (unsigned int i = 0; i < PARKED_JOBS; i++)
		early |= !!(cqe_at(e, q, slot[i])->flags & MAIA_CQE_VALID);
	submit(&t, 1);
	for (unsigned int r = 0; r < 2; r++)
		collect(&t, r, &o);
	o.hung |= !wait_irq(e, MAIA_VEC_QUEUE(0), irqs + 1 + PARKED_JOBS, HANG_GUARD_MS);
	maia_sim_drain(e->sim);
	k_end = fw_sched_worker_kicks(e->sim);
	finish_trial(&t, &o, true);
	prev_end = o.model_end[0];
	for (unsigned int i = 0; i < PARKED_JOBS; i++) {
		const struct maia_cq_entry *c = cqe_at(e, q, slot[i]);

		order &= (c->flags & MAIA_CQE_VALID) && c->status == MAIA_STATUS_OK &&
			 c->job_id == 0x9a00 + i && c->start_ns >= prev_end;
		prev_end = c->end_ns;
	}
	tap_ok(waited && k_rung == k0 && !early && all_ok(&o) && !o.wrong && order &&
	       (!inline_db || k_end == k0),
	       "inline %s: %u jobs rung behind rank 0's parked all-reduce: worker kicks +%llu "
	       "(want 0), %s completed early; after rank 1 joined the all-reduce OK (#wrong %ld), "
	       "the jobs %s, worker kicks +%llu in all",
	       inline_db ? "on" : "off", PARKED_JOBS, (unsigned long long)(k_rung - k0),
	       early ? "some" : "none", o.wrong, order ? "OK in order" : "NOT OK IN ORDER",
	       (unsigned long long)(k_end - k0));
	ring_down();
}

/* Rank 1's submission from another thread (test_parked_race()). */
static void *join_rank1(void *arg)
{
	submit(arg, 1);
	return NULL;
}

/*
 * The race edge: a job rung on rank 0 while rank 1's submission resumes
 * rank 0's parked all-reduce, from another thread, with a varying head
 * start. Whichever way the doorbell and the resumption meet under sim->lock
 * (the operation not ended: the tail is left to the resuming thread; ended
 * or the job being run: the worker or that thread is kicked), the job
 * completes (the hang guard, not a time limit on the device).
 */
static void test_parked_race(void)
{
	unsigned int lost = 0, hung = 0, parked = 0;
	const unsigned int rounds = 60;
	long wrong = 0;

	if (!tap_ok(ring_up(2, 0), "parked race (inline %s): 2 devices, every port UP",
		    inline_db ? "on" : "off"))
		return;
	for (unsigned int i = 0; i < rounds; i++) {
		struct env *e = &nodes[0].e;
		struct tq *q = &nodes[0].q[0];
		struct outcome o = { .wrong = 0 };
		struct trial t;
		pthread_t th;
		uint32_t slot, w0 = fabric_waits(0), irqs;

		prepare(&t, MAIA_COLL_ALL_REDUCE, MAIA_DTYPE_FP32, MAIA_REDOP_SUM, 2, 0, false, -1,
			LONG_TIMEOUT_MS);
		submit(&t, 0);
		parked += wait_fabric_waits(w0 + 1);
		irqs = t.irqs[0];
		if (pthread_create(&th, NULL, join_rank1, &t)) {
			hung++;
			break;
		}
		/* 0 to about 60 us of head start for rank 1's join. */
		for (volatile unsigned int spin = 0; spin < (i % 12) * 500; spin++)
			;
		slot = queue_push(e, q, 0, 0, 0, MAIA_SQE_NOP, 0x9b00 + i, true);
		pthread_join(th, NULL);
		for (unsigned int r = 0; r < 2; r++)
			collect(&t, r, &o);
		lost += !wait_irq(e, MAIA_VEC_QUEUE(0), irqs + 2, HANG_GUARD_MS) ||
			!(cqe_at(e, q, slot)->flags & MAIA_CQE_VALID) ||
			cqe_at(e, q, slot)->status != MAIA_STATUS_OK;
		hung += !all_ok(&o);
		finish_trial(&t, &o, true);
		wrong += o.wrong;
		if (lost || hung)
			break;
	}
	tap_ok(!lost && !hung && !wrong && parked == rounds,
	       "inline %s: %u rounds of a job rung on rank 0 as rank 1's join resumes its parked "
	       "all-reduce: %u parked, %u jobs lost, %u all-reduces not OK, #wrong %ld",
	       inline_db ? "on" : "off", rounds, parked, lost, hung, wrong);
	ring_down();
}

/* test_parked_crash(): the next queue-0 interrupt crashes the device's firmware. */
static bool crash_armed;

static void crash_on_queue_irq(struct env *e, unsigned int vector)
{
	if (vector == MAIA_VEC_QUEUE(0) && __atomic_exchange_n(&crash_armed, false, __ATOMIC_ACQ_REL))
		maia_sim_inject(e->sim, MAIA_SIM_INJECT_FW_CRASH, 0);
}

/*
 * The firmware crashes as rank 0's parked all-reduce completes, with
 * PARKED_JOBS no-op jobs rung behind it (the interrupt of the all-reduce's
 * completion injects the crash, in the thread that resumed it). Crashed
 * firmware starts no job (maia_sim_inject()): MAIA_Q_FETCHED stays where it
 * was and none of the no-ops completes, whichever thread resumed the
 * all-reduce (the worker, or with the fast path on the thread that ended its
 * operation, which runs the jobs rung behind it on).
 */
static void test_parked_crash(void)
{
	struct env *e = &nodes[0].e;
	struct tq *q = &nodes[0].q[0];
	struct outcome o = { .wrong = 0 };
	uint32_t slot[PARKED_JOBS], f0, f1;
	bool waited, done = false;
	struct trial t;

	if (!park_rank0_allreduce("parked crash", &t, &waited))
		return;
	for (unsigned int i = 0; i < PARKED_JOBS; i++)
		slot[i] = queue_push(e, q, 0, 0, 0, MAIA_SQE_NOP, 0x9c00 + i, true);
	f0 = rd(e, MAIA_REG_Q(0, MAIA_Q_FETCHED));
	__atomic_store_n(&crash_armed, true, __ATOMIC_RELEASE);
	__atomic_store_n(&e->irq_hook, crash_on_queue_irq, __ATOMIC_RELEASE);
	submit(&t, 1);
	collect(&t, 0, &o);
	maia_sim_drain(e->sim);
	f1 = rd(e, MAIA_REG_Q(0, MAIA_Q_FETCHED));
	for (unsigned int i = 0; i < PARKED_JOBS; i++)
		done |= !!(cqe_at(e, q, slot[i])->flags & MAIA_CQE_VALID);
	__atomic_store_n(&e->irq_hook, NULL, __ATOMIC_RELEASE);
	finish_trial(&t, &o, false);
	tap_ok(waited && !o.hung && o.status[0] == MAIA_STATUS_OK &&
	       !__atomic_load_n(&crash_armed, __ATOMIC_ACQUIRE) && f1 == f0 && !done,
	       "inline %s: firmware crashed as rank 0's parked all-reduce completed (status %u) "
	       "with %u jobs rung behind it: jobs fetched after the crash %u (want 0), %s completed",
	       inline_db ? "on" : "off", o.status[0], PARKED_JOBS, f1 - f0,
	       done ? "some" : "none");
	ring_down();
}

/*
 * Jobs of one FENCE_WRITE each (a cheap command: the thread in the
 * worker's place runs it), rung on a queue: job i writes value[i], a
 * number the test draws, at fence[i]. The reference is the test's own
 * array; a job run twice shows in MAIA_Q_FETCHED and MAIA_Q_COMPLETED and
 * in the queue's interrupts, one out of order in the modeled times of its
 * completion entry.
 */
#define FENCE_JOBS_MAX	64u

struct fence_jobs {
	unsigned int n;
	uint32_t slot[FENCE_JOBS_MAX];
	uint64_t fence[FENCE_JOBS_MAX], value[FENCE_JOBS_MAX], id[FENCE_JOBS_MAX];
};

/* Rings n more such jobs on node r's queue qi (ids from id_base). */
static void push_fence_jobs(unsigned int r, unsigned int qi, struct fence_jobs *j,
			    unsigned int n, uint64_t id_base)
{
	struct env *e = &nodes[r].e;

	for (unsigned int i = 0; i < n && j->n < FENCE_JOBS_MAX; i++) {
		unsigned int k = j->n++;
		struct cmdbuf cb;

		j->fence[k] = host_alloc(e, 8, 64);
		memset(host_ptr(e, j->fence[k]), 0, 8);
		rng = rng * 6364136223846793005ull + 1442695040888963407ull;
		j->value[k] = rng | 1u;
		j->id[k] = id_base + k;
		cb_init(&cb);
		cmd_fence(&cb, j->fence[k], j->value[k]);
		j->slot[k] = queue_push(e, &nodes[r].q[qi], cb_to_host(e, &cb), cb.len, 0, 0,
					j->id[k], true);
	}
}

/* Jobs of j (from first) whose completion entry is there. */
static unsigned int fence_jobs_done(unsigned int r, unsigned int qi, const struct fence_jobs *j,
				    unsigned int first)
{
	unsigned int done = 0;

	for (unsigned int k = first; k < j->n; k++)
		done += !!(cqe_at(&nodes[r].e, &nodes[r].q[qi], j->slot[k])->flags &
			   MAIA_CQE_VALID);
	return done;
}

/*
 * Whether every job of j completed OK with its own id, each started (in
 * modeled time) after the one before it ended (*prev_end: the end of the
 * job before the first; updated), and its value landed.
 */
static bool fence_jobs_ok(unsigned int r, unsigned int qi, const struct fence_jobs *j,
			  uint64_t *prev_end)
{
	struct env *e = &nodes[r].e;
	bool ok = true;

	for (unsigned int k = 0; k < j->n; k++) {
		const struct maia_cq_entry *c = cqe_at(e, &nodes[r].q[qi], j->slot[k]);

		ok &= (c->flags & MAIA_CQE_VALID) && c->status == MAIA_STATUS_OK &&
		      c->job_id == j->id[k] && c->start_ns >= *prev_end &&
		      *(volatile uint64_t *)host_ptr(e, j->fence[k]) == j->value[k];
		*prev_end = c->end_ns;
	}
	return ok;
}

/* A queue's FETCHED and COMPLETED registers and its interrupts. */
struct qcount {
	uint32_t fetched, completed;
	unsigned int irqs;
};

static struct qcount qcount(unsigned int r, unsigned int qi)
{
	struct env *e = &nodes[r].e;

	return (struct qcount){
		.fetched = rd(e, MAIA_REG_Q(qi, MAIA_Q_FETCHED)),
		.completed = rd(e, MAIA_REG_Q(qi, MAIA_Q_COMPLETED)),
		.irqs = irq_count(e, MAIA_VEC_QUEUE(qi)),
	};
}

/*
 * Whether, since a, node r's queue qi fetched @fetched jobs and completed
 * @completed, each completion with one interrupt: no job ran twice.
 */
static bool qcount_since(unsigned int r, unsigned int qi, const struct qcount *a,
			 unsigned int fetched, unsigned int completed)
{
	struct qcount b = qcount(r, qi);

	return b.fetched - a->fetched == fetched && b.completed - a->completed == completed &&
	       b.irqs - a->irqs == completed;
}

/*
 * The thread of each queue-0 interrupt of device 0 in order (the thread
 * that wrote the completion before it), while resume_rec_on.
 */
#define RESUME_REC_MAX	128u
static bool resume_rec_on;
static unsigned int resume_rec_n;
static pthread_t resume_rec[RESUME_REC_MAX];

static void record_queue_irq(struct env *e, unsigned int vector)
{
	unsigned int i;

	if (e != &nodes[0].e || vector != MAIA_VEC_QUEUE(0) ||
	    !__atomic_load_n(&resume_rec_on, __ATOMIC_ACQUIRE))
		return;
	i = __atomic_fetch_add(&resume_rec_n, 1, __ATOMIC_ACQ_REL);
	if (i < RESUME_REC_MAX)
		resume_rec[i] = pthread_self();
}

/*
 * More jobs rung behind a parked job than the thread that resumes it runs
 * on (FW_SCHED_RESUME_TURNS in fw_sched.c): OVERFLOW_JOBS fence jobs rung
 * on rank 0's queue behind its parked all-reduce. None is fetched while it
 * waits; after rank 1 joins, the all-reduce is right and every job
 * completes exactly once, in queue order, its value written. With the
 * doorbell fast path on, the thread that resumed the all-reduce ran some
 * of them and handed the rest to the worker (the interrupts' threads:
 * neither none nor all by the resumer); off, the worker runs them all.
 */
#define OVERFLOW_JOBS	53u	/* 3 x 16 + 5 */

static void test_parked_overflow(void)
{
	struct env *e = &nodes[0].e;
	struct outcome o = { .wrong = 0 };
	struct fence_jobs j = { .n = 0 };
	unsigned int by_resumer = 0, n_rec, switches = 0;
	bool waited, early, order, once;
	struct qcount c0;
	uint64_t prev_end;
	uint32_t f_rung;
	struct trial t;

	if (!park_rank0_allreduce("parked overflow", &t, &waited))
		return;
	maia_sim_drain(nodes[1].e.sim);
	c0 = qcount(0, 0);
	push_fence_jobs(0, 0, &j, OVERFLOW_JOBS, 0x9d00);
	f_rung = rd(e, MAIA_REG_Q(0, MAIA_Q_FETCHED));
	early = fence_jobs_done(0, 0, &j, 0) || f_rung != c0.fetched;
	__atomic_store_n(&resume_rec_n, 0, __ATOMIC_RELEASE);
	__atomic_store_n(&resume_rec_on, true, __ATOMIC_RELEASE);
	__atomic_store_n(&e->irq_hook, record_queue_irq, __ATOMIC_RELEASE);
	submit(&t, 1);
	for (unsigned int r = 0; r < 2; r++)
		collect(&t, r, &o);
	o.hung |= !wait_irq(e, MAIA_VEC_QUEUE(0), c0.irqs + 1 + OVERFLOW_JOBS, HANG_GUARD_MS);
	maia_sim_drain(e->sim);
	__atomic_store_n(&e->irq_hook, NULL, __ATOMIC_RELEASE);
	__atomic_store_n(&resume_rec_on, false, __ATOMIC_RELEASE);
	finish_trial(&t, &o, true);
	prev_end = o.model_end[0];
	order = fence_jobs_ok(0, 0, &j, &prev_end);
	/* The all-reduce was fetched before c0; its completion is counted after. */
	once = qcount_since(0, 0, &c0, OVERFLOW_JOBS, OVERFLOW_JOBS + 1);
	n_rec = __atomic_load_n(&resume_rec_n, __ATOMIC_ACQUIRE);
	/* The resumer's completions come first, then the other thread's. */
	for (unsigned int i = 1; i < n_rec && i < RESUME_REC_MAX; i++) {
		switches += !pthread_equal(resume_rec[i], resume_rec[i - 1]);
		by_resumer += !switches;
	}
	tap_ok(waited && !early && all_ok(&o) && !o.wrong && order && once &&
	       n_rec == OVERFLOW_JOBS + 1 && switches <= 1 &&
	       (inline_db ? by_resumer >= 1 && by_resumer < OVERFLOW_JOBS :
			    by_resumer == OVERFLOW_JOBS),
	       "inline %s: %u jobs rung behind rank 0's parked all-reduce: %s fetched early; "
	       "after rank 1 joined the all-reduce OK (#wrong %ld), the jobs %s, %s; "
	       "the thread that completed the all-reduce completed %u of them, then %u hand-overs",
	       inline_db ? "on" : "off", OVERFLOW_JOBS, early ? "some" : "none", o.wrong,
	       order ? "OK in order, values right" : "NOT OK IN ORDER",
	       once ? "each fetched and completed once" : "NOT EXACTLY ONCE", by_resumer,
	       switches);
	ring_down();
}

/*
 * Two queues of one device with jobs rung behind parked collectives: rank
 * 0's all-reduce A parks on queue 0 and TWOQ_JOBS fence jobs are rung
 * behind it, each followed by one on queue 1, whose jobs all complete
 * while A waits (they do not wait for another queue's collective) and none
 * of queue 0's is fetched. Then all-reduce B (another communicator) parks
 * on queue 1 with TWOQ_JOBS more behind it, and TWOQ_MORE more go behind
 * A. Rank 1 joins B first: queue 1's jobs complete, queue 0's still wait;
 * then A: queue 0's complete. Both all-reduces right, every job exactly
 * once, in its queue's order, its value written.
 */
#define TWOQ_JOBS	20u
#define TWOQ_MORE	5u

static void test_parked_two_queues(void)
{
	struct env *e = &nodes[0].e;
	struct outcome oa = { .wrong = 0 }, ob = { .wrong = 0 };
	struct fence_jobs ja = { .n = 0 }, jb1 = { .n = 0 }, jb2 = { .n = 0 };
	uint32_t a_early, a_during_b;
	bool waited, b_waited, q1_free, b_done, order_a, order_b, once;
	struct qcount c0, c1;
	uint64_t end_a, end_b;
	uint32_t f_a;
	struct trial a, b;

	trial_comm = 0xa1;
	if (!park_rank0_allreduce("parked, two queues", &a, &waited)) {
		trial_comm = 0xfab;
		return;
	}
	trial_comm = 0xb1;
	prepare(&b, MAIA_COLL_ALL_REDUCE, MAIA_DTYPE_FP32, MAIA_REDOP_SUM, 3, 0, false, -1,
		LONG_TIMEOUT_MS);
	trial_comm = 0xfab;
	b.qi = 1;
	maia_sim_drain(nodes[1].e.sim);
	c0 = qcount(0, 0);
	c1 = qcount(0, 1);
	for (unsigned int i = 0; i < TWOQ_JOBS; i++) {
		push_fence_jobs(0, 0, &ja, 1, 0xa000);
		push_fence_jobs(0, 1, &jb1, 1, 0xb000);
	}
	q1_free = wait_irq(e, MAIA_VEC_QUEUE(1), c1.irqs + TWOQ_JOBS, HANG_GUARD_MS);
	f_a = rd(e, MAIA_REG_Q(0, MAIA_Q_FETCHED));
	/* Fetched counts every job of queue 0 that started, done or not. */
	a_early = f_a - c0.fetched;
	submit(&b, 0);
	b_waited = wait_parked(0, 1, 1);
	push_fence_jobs(0, 1, &jb2, TWOQ_JOBS, 0xb100);
	push_fence_jobs(0, 0, &ja, TWOQ_MORE, 0xa000);
	submit(&b, 1);
	for (unsigned int r = 0; r < 2; r++)
		collect(&b, r, &ob);
	b_done = wait_irq(e, MAIA_VEC_QUEUE(1), c1.irqs + 2 * TWOQ_JOBS + 1, HANG_GUARD_MS);
	/* Queue 0's jobs wait for A alone. */
	a_during_b = rd(e, MAIA_REG_Q(0, MAIA_Q_FETCHED)) - c0.fetched;
	submit(&a, 1);
	for (unsigned int r = 0; r < 2; r++)
		collect(&a, r, &oa);
	oa.hung |= !wait_irq(e, MAIA_VEC_QUEUE(0), c0.irqs + 1 + TWOQ_JOBS + TWOQ_MORE,
			     HANG_GUARD_MS);
	maia_sim_drain(e->sim);
	maia_sim_drain(nodes[1].e.sim);
	finish_trial(&a, &oa, true);
	finish_trial(&b, &ob, true);
	end_a = oa.model_end[0];
	order_a = fence_jobs_ok(0, 0, &ja, &end_a);
	end_b = 0;
	order_b = fence_jobs_ok(0, 1, &jb1, &end_b) && ob.model_start[0] >= end_b;
	end_b = ob.model_end[0];
	order_b &= fence_jobs_ok(0, 1, &jb2, &end_b);
	/* A was fetched before c0; B after c1. */
	once = qcount_since(0, 0, &c0, TWOQ_JOBS + TWOQ_MORE, TWOQ_JOBS + TWOQ_MORE + 1) &&
	       qcount_since(0, 1, &c1, 2 * TWOQ_JOBS + 1, 2 * TWOQ_JOBS + 1);
	tap_ok(waited && b_waited && q1_free && !a_early && b_done && !a_during_b &&
	       all_ok(&oa) && all_ok(&ob) && !oa.wrong && !ob.wrong && order_a && order_b && once,
	       "inline %s: rank 0's queue 1 ran its %u jobs while queue 0's all-reduce waited "
	       "(%u of queue 0's %u jobs behind it fetched, want 0); behind B on queue 1 %u more, "
	       "behind A %u more; B joined first (status %u, #wrong %ld): %u of queue 0's jobs "
	       "fetched (want 0); then A (status %u, #wrong %ld): queue 0's jobs %s, queue 1's "
	       "%s, %s",
	       inline_db ? "on" : "off", TWOQ_JOBS, a_early, TWOQ_JOBS, TWOQ_JOBS, TWOQ_MORE,
	       ob.status[0], ob.wrong, a_during_b, oa.status[0], oa.wrong,
	       order_a ? "OK in order" : "NOT OK IN ORDER",
	       order_b ? "OK in order" : "NOT OK IN ORDER",
	       once ? "each fetched and completed once" : "NOT EXACTLY ONCE");
	ring_down();
}

/*
 * The queue is destroyed (disabled), or the device reset, while
 * DESTROY_JOBS fence jobs wait behind rank 0's parked all-reduce. None of
 * them runs: no completion entry, no value written, MAIA_Q_FETCHED and the
 * queue's interrupts as they were; the all-reduce gets no entry (disabled:
 * the ring may be gone) or an ABORTED one (reset). Then the queue, set up
 * again (after a boot), runs a new all-reduce of both ranks with
 * DESTROY_JOBS jobs rung behind it: right, each job once, in order, and
 * still no value of the old jobs written.
 */
#define DESTROY_JOBS	20u

static void test_parked_destroy(bool reset)
{
	const char *what = reset ? "device reset" : "queue destroyed";
	struct env *e = &nodes[0].e;
	struct tq *q = &nodes[0].q[0];
	struct outcome o = { .wrong = 0 }, o2 = { .wrong = 0 };
	struct fence_jobs jd = { .n = 0 }, jn = { .n = 0 };
	const struct maia_cq_entry *c;
	bool waited, waited2, up = true, gone, order, once, old_clean = true;
	struct qcount c0;
	uint64_t prev_end;
	struct trial t, t2;

	if (!park_rank0_allreduce(reset ? "parked, device reset" : "parked, queue destroyed", &t,
				  &waited))
		return;
	c0 = qcount(0, 0);
	push_fence_jobs(0, 0, &jd, DESTROY_JOBS, 0x9e00);
	if (reset)
		wr(e, MAIA_REG_RESET, MAIA_RESET_MAGIC);
	else
		wr(e, MAIA_REG_Q(0, MAIA_Q_CTRL), 0);
	maia_sim_drain(e->sim);
	c = cqe_at(e, q, t.slot[0]);
	gone = !fence_jobs_done(0, 0, &jd, 0) &&
	       (reset ? (c->flags & MAIA_CQE_VALID) && c->status == MAIA_STATUS_ABORTED :
			!c->flags && qcount_since(0, 0, &c0, 0, 0));
	for (unsigned int k = 0; k < jd.n; k++)
		gone &= !*(volatile uint64_t *)host_ptr(e, jd.fence[k]);
	finish_trial(&t, &o, false);
	if (reset) {
		uint64_t t0 = now_ms();

		boot_or_die(e);
		maia_sim_set_inline_doorbell(e->sim, inline_db);
		while (!all_up() && now_ms() - t0 < HANG_GUARD_MS)
			usleep(1000);
		up = all_up();
	}
	queue_setup(e, q, 0, 64, 0);
	prepare(&t2, MAIA_COLL_ALL_REDUCE, MAIA_DTYPE_FP32, MAIA_REDOP_SUM, 2, 0, false, -1,
		LONG_TIMEOUT_MS);
	submit(&t2, 0);
	waited2 = wait_parked(0, 0, 1);
	c0 = qcount(0, 0);
	push_fence_jobs(0, 0, &jn, DESTROY_JOBS, 0x9f00);
	submit(&t2, 1);
	for (unsigned int r = 0; r < 2; r++)
		collect(&t2, r, &o2);
	o2.hung |= !wait_irq(e, MAIA_VEC_QUEUE(0), c0.irqs + 1 + DESTROY_JOBS, HANG_GUARD_MS);
	maia_sim_drain(e->sim);
	finish_trial(&t2, &o2, true);
	prev_end = o2.model_end[0];
	order = fence_jobs_ok(0, 0, &jn, &prev_end);
	once = qcount_since(0, 0, &c0, DESTROY_JOBS, DESTROY_JOBS + 1);
	for (unsigned int k = 0; k < jd.n; k++)
		old_clean &= !*(volatile uint64_t *)host_ptr(e, jd.fence[k]);
	tap_ok(waited && gone && up && waited2 && all_ok(&o2) && !o2.wrong && order && once &&
	       old_clean,
	       "inline %s, %s with %u jobs behind rank 0's parked all-reduce: %s (all-reduce "
	       "entry flags %u status %u); set up again, a new all-reduce OK (#wrong %ld) and %u "
	       "jobs behind it %s, %s; the old jobs' values %s",
	       inline_db ? "on" : "off", what, DESTROY_JOBS,
	       gone ? "none of them ran" : "SOME RAN or the entry is wrong", c->flags, c->status,
	       o2.wrong, DESTROY_JOBS, order ? "OK in order" : "NOT OK IN ORDER",
	       once ? "each fetched and completed once" : "NOT EXACTLY ONCE",
	       old_clean ? "never written" : "WRITTEN");
	ring_down();
}

/* Rounds of every device's run by another device's thread (fw_fabric_inline_rounds()). */
static uint64_t inline_rounds(void)
{
	uint64_t n = 0;

	for (unsigned int r = 0; r < ndev; r++)
		n += fw_fabric_inline_rounds(nodes[r].e.sim);
	return n;
}

/* Whether the sender on d is held in its fabric_tx (hang guard). */
static bool wait_holding(struct dir *d)
{
	uint64_t t_end = now_ms() + HANG_GUARD_MS;
	bool held;

	pthread_mutex_lock(&d->lock);
	while (!d->holding && now_ms() < t_end) {
		pthread_mutex_unlock(&d->lock);
		usleep(1000);
		pthread_mutex_lock(&d->lock);
	}
	held = d->holding;
	pthread_mutex_unlock(&d->lock);
	return held;
}

/*
 * Hold the device thread that sends on d in its fabric_tx, with no round run
 * inline meanwhile; whether it is held (hang guard).
 */
static bool hold_fabric_thread(struct dir *d)
{
	bool holding;

	fw_fabric_inline_rx(false);
	pthread_mutex_lock(&d->lock);
	d->hold = true;
	pthread_mutex_unlock(&d->lock);
	holding = wait_holding(d);
	fw_fabric_inline_rx(true);
	return holding;
}

static unsigned long payload_frames(struct dir *d)
{
	unsigned long n;

	pthread_mutex_lock(&d->lock);
	n = d->payload_frames;
	pthread_mutex_unlock(&d->lock);
	return n;
}

/*
 * Frames taken on the sending device's thread (fw_fabric_port.c,
 * rx_inline_locked()): a device's fabric thread that hands a frame to a
 * device of this process with no thread in a round runs that device's round
 * itself. Rings of 2 (frames copied) and 4 (lent on), inline doorbells
 * off and on: small and multi-frame all-reduces are the reference's bits,
 * and rounds ran inline. The frame a nested round sends back to a device
 * this thread is in a round of is queued, as is every frame for a device
 * whose own fabric thread is in a round: held there (in its fabric_tx, the
 * frames of the all-reduce then started come to it while it is busy), the
 * frames queue, it runs no round inline, and once let go the all-reduce
 * ends exact.
 */
static void test_inline_rx(unsigned int n, bool lend)
{
	static const uint64_t counts[] = { 2, 2, 2, 300007 };
	struct dir *held = &nodes[1].out[SEND_PORT];
	uint64_t before, during;
	unsigned long carried0;
	struct outcome o = { .wrong = 0 };
	struct trial t;
	bool holding;
	long wrong = 0;
	bool ok = true;

	if (!tap_ok(ring_up_lend(n, 0, lend), "inline rx: %u devices cabled (%s)", n,
		    lend ? "frames lent" : "frames copied"))
		return;
	before = inline_rounds();
	for (unsigned int i = 0; i < 10; i++) {
		struct outcome r = run(MAIA_COLL_ALL_REDUCE, MAIA_DTYPE_FP32, MAIA_REDOP_SUM,
				       counts[i % 4], 0, false, -1, LONG_TIMEOUT_MS);

		ok &= all_ok(&r);
		wrong += r.wrong;
	}
	tap_ok(ok && !wrong && inline_rounds() > before,
	       "inline rx, %u devices: 10 all-reduces (8 bytes, 1.2 MB) OK, #wrong %ld, "
	       "%llu rounds run on a sender's thread", n, wrong,
	       (unsigned long long)(inline_rounds() - before));

	/* Device 1's own fabric thread held in a round: nobody else may run one of its. */
	holding = hold_fabric_thread(held);
	before = fw_fabric_inline_rounds(nodes[1].e.sim);
	carried0 = payload_frames(&nodes[0].out[SEND_PORT]);
	prepare(&t, MAIA_COLL_ALL_REDUCE, MAIA_DTYPE_FP32, MAIA_REDOP_SUM, 1000, 0, false, -1,
		LONG_TIMEOUT_MS);
	for (unsigned int r = 0; r < n; r++)
		submit(&t, r);
	/* Rank 0's first chunk reaches device 1 while device 1 is busy. */
	for (uint64_t t_end = now_ms() + HANG_GUARD_MS;
	     payload_frames(&nodes[0].out[SEND_PORT]) == carried0 && now_ms() < t_end;)
		usleep(1000);
	during = fw_fabric_inline_rounds(nodes[1].e.sim);
	tap_ok(holding && payload_frames(&nodes[0].out[SEND_PORT]) > carried0 &&
	       during == before,
	       "inline rx, %u devices: device 1's fabric thread held in its round; device 0's "
	       "frames reached it and were queued (%llu rounds of device 1 run inline meanwhile)",
	       n, (unsigned long long)(during - before));
	pthread_mutex_lock(&held->lock);
	held->holding = false;
	pthread_cond_broadcast(&held->cond);
	pthread_mutex_unlock(&held->lock);
	for (unsigned int r = 0; r < n; r++)
		collect(&t, r, &o);
	finish_trial(&t, &o, true);
	tap_ok(all_ok(&o) && !o.wrong,
	       "inline rx, %u devices: let go, the all-reduce that waited ends OK, #wrong %ld",
	       n, o.wrong);
	ring_down();
}

/*
 * A device of this process whose round outlasts the dead time (a slow host:
 * ThreadSanitizer made one 2 s) is behind, not dead (fw_fabric_port.c,
 * peer_behind()): device 1's fabric thread held in its round (in its
 * fabric_tx) for 2.5 x MAIA_FABRIC_DEAD_MS while device 0 runs on. Device
 * 0's ports stay UP (without the rule both went DOWN, DEAD_PEER), and once
 * device 1 is let go an all-reduce is exact. A pulled cable is still found
 * (test_failure(), test_failover_*()): its peer keeps its rounds.
 */
static void test_peer_behind(void)
{
	struct dir *held = &nodes[1].out[SEND_PORT];
	struct maia_sim_fabric_port_info a[NPORTS], b[NPORTS];
	uint64_t downs0 = 0, downs1 = 0, dead = 0, t_end;
	bool holding, up = true;
	struct outcome o;

	if (!tap_ok(ring_up(2, 0), "peer behind: 2 devices cabled in a ring: every port UP"))
		return;
	for (unsigned int p = 0; p < NPORTS; p++)
		a[p] = port_info(0, p);
	holding = hold_fabric_thread(held);
	/* device 0 ticks on: its keepalives reach device 1's queue, nothing comes back */
	for (t_end = now_ms() + MAIA_FABRIC_DEAD_MS * 5 / 2; now_ms() < t_end;)
		usleep(10000);
	for (unsigned int p = 0; p < NPORTS; p++) {
		b[p] = port_info(0, p);
		up &= b[p].up;
		downs0 += b[p].link_downs - a[p].link_downs;
		dead += b[p].dead_peer - a[p].dead_peer;
	}
	pthread_mutex_lock(&held->lock);
	held->holding = false;
	pthread_cond_broadcast(&held->cond);
	pthread_mutex_unlock(&held->lock);
	tap_ok(holding && up && !downs0 && !dead,
	       "peer behind: device 1's fabric thread held in a round for %u ms, device 0's "
	       "ports stay UP (%llu link downs, %llu dead-peer verdicts)",
	       MAIA_FABRIC_DEAD_MS * 5 / 2, (unsigned long long)downs0,
	       (unsigned long long)dead);
	o = run(MAIA_COLL_ALL_REDUCE, MAIA_DTYPE_FP32, MAIA_REDOP_SUM, 300007, 0, false, -1,
		LONG_TIMEOUT_MS);
	for (unsigned int p = 0; p < NPORTS; p++) {
		struct maia_sim_fabric_port_info c = port_info(1, p);

		downs1 += c.link_downs;
		up &= c.up && port_info(0, p).up;
	}
	tap_ok(all_ok(&o) && !o.wrong && up,
	       "peer behind: let go, an all-reduce ends OK, #wrong %ld, every port UP "
	       "(device 1: %llu link downs since cabled)", o.wrong, (unsigned long long)downs1);
	ring_down();
}

/*
 * A doorbell writer runs its device's first fabric round (frames sent on its
 * thread) only when every port that is UP is direct (maia_sim_ops.
 * fabric_direct_ports): otherwise its frames would wait for a host thread
 * that may need a lock the writer holds, and it wakes the fabric thread. A
 * ring of n with the doorbell fast path on: with every port direct, frames
 * leave on the submitting threads; with the receive port not direct, none
 * does, however the threads run. The all-reduces are exact either way.
 */
static void test_doorbell_direct(unsigned int n)
{
	static const uint32_t masks[] = { UINT32_MAX, 1u << SEND_PORT };

	direct_set = true;
	for (unsigned int m = 0; m < 2; m++) {
		unsigned long before;
		long wrong = 0;
		bool ok = true;

		direct_mask = masks[m];
		if (!tap_ok(ring_up_lend(n, 0, false), "doorbell direct: %u devices cabled", n))
			break;
		before = __atomic_load_n(&tx_on_submit, __ATOMIC_RELAXED);
		for (unsigned int i = 0; i < 10; i++) {
			struct outcome r = run(MAIA_COLL_ALL_REDUCE, MAIA_DTYPE_FP32,
					       MAIA_REDOP_SUM, 2, 0, false, -1, LONG_TIMEOUT_MS);

			ok &= all_ok(&r);
			wrong += r.wrong;
		}
		before = __atomic_load_n(&tx_on_submit, __ATOMIC_RELAXED) - before;
		tap_ok(ok && !wrong && (m ? before == 0 : before > 0),
		       "doorbell direct, %u devices, %s: 10 8-byte all-reduces OK (#wrong %ld), "
		       "%lu frames sent on the doorbell writers' threads", n,
		       m ? "receive port not direct" : "every port direct", wrong, before);
		ring_down();
	}
	direct_set = false;
}

/*
 * Delayed acks (wire version 6): 8-byte all-reduces back to back on n
 * devices, the doorbell fast path on, as QEMU runs them. Each chunk is a lone
 * message: its ack waits for a frame back (none on a ring), or for
 * MAIA_FABRIC_ACK_DELAY_US, or for a quarter window of unacked ones; before,
 * every round that received a chunk sent an ACK frame for it. The bound
 * counts every ACK frame the delay allows in the time the loop took, so a
 * slow or loaded host only loosens it (no fixed cap: a loop of 50 ms lets
 * each port send 50 delayed acks, 200 on 4 devices).
 */
static void test_delayed_acks(unsigned int n)
{
	const unsigned int iters = 200;
	struct maia_sim_fabric_port_info a[MAX_DEV][NPORTS], b;
	uint64_t acks = 0, data = 0, ack_now = 0, bound;
	struct timespec t0, t1;
	double ms;
	long wrong = 0;
	bool ok = true;

	if (!tap_ok(ring_up(n, 0), "delayed acks: %u devices cabled", n))
		return;
	for (unsigned int i = 0; i < n; i++)
		for (unsigned int p = 0; p < NPORTS; p++)
			maia_sim_fabric_port_info(nodes[i].e.sim, p, &a[i][p]);
	clock_gettime(CLOCK_MONOTONIC, &t0);
	for (unsigned int k = 0; k < iters; k++) {
		struct outcome r = run(MAIA_COLL_ALL_REDUCE, MAIA_DTYPE_FP32, MAIA_REDOP_SUM, 2, 0,
				       false, -1, LONG_TIMEOUT_MS);

		ok &= all_ok(&r);
		wrong += r.wrong;
	}
	clock_gettime(CLOCK_MONOTONIC, &t1);
	ms = secs(&t0, &t1) * 1e3;
	/* The snapshots are a round old: let every port publish its last one. */
	usleep(20000);
	for (unsigned int i = 0; i < n; i++)
		for (unsigned int p = 0; p < NPORTS; p++) {
			maia_sim_fabric_port_info(nodes[i].e.sim, p, &b);
			acks += b.tx_acks - a[i][p].tx_acks;
			data += b.rx_msgs - a[i][p].rx_msgs;
			ack_now += b.tx_ack_now - a[i][p].tx_ack_now;
		}
	/*
	 * Per port that received chunks: one ACK per ack delay of the loop (and
	 * the 20 ms after it), one per quarter window received, one per ACK_NOW.
	 */
	bound = (uint64_t)n * ((uint64_t)((ms + 20.0) * 1000.0 / MAIA_FABRIC_ACK_DELAY_US) + 2) +
		data / (MAIA_FABRIC_WINDOW / 4) + ack_now;
	tap_ok(ok && !wrong && acks <= bound,
	       "delayed acks, %u devices: %u 8-byte all-reduces OK (#wrong %ld) in %.1f ms, "
	       "%llu messages, %llu ACK frames (%.2f per all-reduce; at most %llu), %llu asked "
	       "at once", n, iters, wrong, ms, (unsigned long long)data,
	       (unsigned long long)acks, (double)acks / iters, (unsigned long long)bound,
	       (unsigned long long)ack_now);
	ring_down();
}

/* One job on node r's queue qi (command buffer in host memory): its completion entry. */
static struct maia_cq_entry run_job(unsigned int r, unsigned int qi, const struct cmdbuf *cb,
				    uint64_t id)
{
	struct env *e = &nodes[r].e;
	unsigned int irqs = irq_count(e, MAIA_VEC_QUEUE(qi));
	uint32_t slot = queue_push(e, &nodes[r].q[qi], cb_to_host(e, cb), cb->len, 0, 0, id, true);
	struct maia_cq_entry c;

	if (!wait_irq(e, MAIA_VEC_QUEUE(qi), irqs + 1, HANG_GUARD_MS))
		memset(&c, 0, sizeof(c));
	else
		memcpy(&c, cqe_at(e, &nodes[r].q[qi], slot), sizeof(c));
	return c;
}

#define RW_VA_WIN	0x40000000ull	/* the target's window (ASID 1) */
#define RW_VA_CMD	0x20000000ull	/* the target's command buffer (ASID 1, host memory) */
#define RW_BYTES	100000u		/* two messages of a write (60 KiB each at most) */
#define RW_SEM		5u

/*
 * ASID 1 on node r: a read-write window of RW_BYTES of HBM at RW_VA_WIN, a
 * host page of commands at RW_VA_CMD (*cmd_bus). Returns the window's key
 * (0: not opened); its HBM offset goes to *win_pa.
 */
static uint32_t rw_window(unsigned int r, uint64_t *win_pa, uint64_t *cmd_bus)
{
	struct env *e = &nodes[r].e;
	uint32_t pages = (RW_BYTES + MAIA_PAGE_SIZE - 1) / MAIA_PAGE_SIZE;
	uint32_t resp[MAIA_MBOX_NARGS] = { 0 };
	uint64_t root = pt_new_root(e);

	*win_pa = hbm_alloc(e, (uint64_t)pages * MAIA_PAGE_SIZE, MAIA_PAGE_SIZE);
	for (uint32_t i = 0; i < pages; i++)
		pt_map(e, root, RW_VA_WIN + (uint64_t)i * MAIA_PAGE_SIZE,
		       *win_pa + (uint64_t)i * MAIA_PAGE_SIZE, MAIA_PTE_READ | MAIA_PTE_WRITE, false);
	*cmd_bus = host_alloc(e, MAIA_PAGE_SIZE, MAIA_PAGE_SIZE);
	pt_map(e, root, RW_VA_CMD, *cmd_bus, MAIA_PTE_READ | MAIA_PTE_SYSMEM, false);
	if (mbox(e, MAIA_MBOX_SET_CONTEXT, 1, (uint32_t)root, (uint32_t)(root >> 32), NULL) !=
	    MAIA_MBOX_OK ||
	    mbox4(e, MAIA_MBOX_FABRIC_WINDOW_OPEN, 1 | (MAIA_ACCESS_READ | MAIA_ACCESS_WRITE) << 16,
		  (uint32_t)RW_VA_WIN, (uint32_t)(RW_VA_WIN >> 32), pages, resp) != MAIA_MBOX_OK)
		return 0;
	return resp[0];
}

/* Modeled durations of one remote write and read over device 0's send port. */
struct rw_times {
	uint64_t write, read, sem_wait;	/* end_ns - start_ns of each job */
	bool ok;
};

/*
 * A ring of two, device 0's send port's cable cable_ns longer and device
 * 1's receive port's (the other end of that cable) back_ns: device 1 waits
 * on a semaphore (ASID 1) that device 0's remote write of RW_BYTES
 * increments on its last message; then device 0 reads the bytes back.
 */
static struct rw_times remote_rw(uint32_t cable_ns, uint32_t back_ns)
{
	struct rw_times t = { 0 };
	struct maia_cmd_sem_wait sw = {
		.hdr = { .opcode = MAIA_OP_SEM_WAIT, .size = sizeof(sw) },
		.index = RW_SEM, .value = 1, .timeout_us = 60000000u,
	};
	struct maia_cmd_fabric_write w = {
		.hdr = { .opcode = MAIA_OP_FABRIC_WRITE, .size = sizeof(w),
			 .flags = MAIA_FABRIC_WRITE_SEM },
		.port = SEND_PORT, .size = RW_BYTES, .sem_index = RW_SEM, .sem_value = 1,
	};
	struct maia_cmd_fabric_read rd_cmd = {
		.hdr = { .opcode = MAIA_OP_FABRIC_READ, .size = sizeof(rd_cmd) },
		.port = SEND_PORT, .size = RW_BYTES,
	};
	struct maia_cq_entry cw, cr, cs;
	uint64_t win_pa, cmd_bus, src, dst;
	unsigned int irqs;
	struct cmdbuf cb;
	uint32_t slot;

	dev0_send_lat_ns = cable_ns;
	dev1_recv_lat_ns = back_ns;
	t.ok = ring_up(2, 0);
	dev0_send_lat_ns = 0;
	dev1_recv_lat_ns = 0;
	w.key = rd_cmd.key = t.ok ? rw_window(1, &win_pa, &cmd_bus) : 0;
	t.ok &= w.key != 0;
	if (!t.ok) {
		ring_down();
		return t;
	}
	src = hbm_alloc(&nodes[0].e, RW_BYTES, MAIA_PAGE_SIZE);
	dst = hbm_alloc(&nodes[0].e, RW_BYTES, MAIA_PAGE_SIZE);
	fill_random(nodes[0].e.hbm + src, RW_BYTES, 0xcab1e);
	w.local_addr = MAIA_PHYS_HBM | src;
	rd_cmd.local_addr = MAIA_PHYS_HBM | dst;

	/* device 1's wait first (queue 1, ASID 1): its job ends after the signal */
	memcpy(host_ptr(&nodes[1].e, cmd_bus), &sw, sizeof(sw));
	irqs = irq_count(&nodes[1].e, MAIA_VEC_QUEUE(1));
	slot = queue_push(&nodes[1].e, &nodes[1].q[1], RW_VA_CMD, sizeof(sw), 1, 0, 0x5e3, true);
	cb_init(&cb);
	cb_add(&cb, &w, sizeof(w));
	cw = run_job(0, 0, &cb, 0x3717e);
	t.ok &= wait_irq(&nodes[1].e, MAIA_VEC_QUEUE(1), irqs + 1, HANG_GUARD_MS);
	memcpy(&cs, cqe_at(&nodes[1].e, &nodes[1].q[1], slot), sizeof(cs));
	cb_init(&cb);
	cb_add(&cb, &rd_cmd, sizeof(rd_cmd));
	cr = run_job(0, 0, &cb, 0x4ead);
	t.ok &= cw.status == MAIA_STATUS_OK && cr.status == MAIA_STATUS_OK &&
		cs.status == MAIA_STATUS_OK &&
		!memcmp(nodes[1].e.hbm + win_pa, nodes[0].e.hbm + src, RW_BYTES) &&
		!memcmp(nodes[0].e.hbm + dst, nodes[0].e.hbm + src, RW_BYTES);
	t.write = cw.end_ns - cw.start_ns;
	t.read = cr.end_ns - cr.start_ns;
	t.sem_wait = cs.end_ns - cs.start_ns;
	ring_down();
	return t;
}

/*
 * A Maia 100's figures (Documentation/hw/time-model.rst), written out here
 * rather than taken from fw_model.c: a job's fixed cost, a command's, the
 * chip's hop latency and the port's rate (50 GB/s: 50 bytes per ns).
 */
#define M100_JOB_NS		2000u
#define M100_CMD_NS		1000u
#define M100_HOP_NS		1000u
#define M100_LINK_B_PER_NS	50u
#define M100_LIGHT_NS		100u	/* a control command (the SEM_WAIT) */

/*
 * Remote writes and reads count each end of the cable they cross
 * (time-model.rst, "Several devices"): device 0's send port's end `out`
 * longer, device 1's end of the same cable `back` longer. A write's job is
 * its fixed costs, its bytes at the link rate, one chip hop and `out` (its
 * last message's arrival on the target), then `back` (its acknowledgement
 * coming back over the target's end); the waiter on the target continues
 * after the last message's arrival (`out` only); a read's job is two chip
 * hops, its bytes, its request's `out` and its data's `back`.
 */
static void test_remote_cable_latency(void)
{
	const uint32_t lat = 2500, back = 3000;
	const uint32_t outs[4] = { 0, lat, 0, lat }, backs[4] = { 0, 0, back, back };
	const uint64_t bytes_ns = RW_BYTES / M100_LINK_B_PER_NS;

	for (unsigned int i = 0; i < 4; i++) {
		uint64_t write = M100_JOB_NS + M100_CMD_NS + bytes_ns + M100_HOP_NS + outs[i] +
				 backs[i];
		uint64_t read = M100_JOB_NS + M100_CMD_NS + bytes_ns + 2 * M100_HOP_NS + outs[i] +
				backs[i];
		/* device 1's job from 0: the signal at the last message's arrival */
		uint64_t wait = M100_JOB_NS + M100_CMD_NS + bytes_ns + M100_HOP_NS + outs[i] +
				M100_LIGHT_NS;
		struct rw_times t = remote_rw(outs[i], backs[i]);

		tap_ok(t.ok && t.write == write && t.read == read && t.sem_wait == wait,
		       "modeled, 2 ranks, device 0's end of the cable %u ns longer, device 1's %u: "
		       "a %u-byte remote write %llu ns (expected %llu: acknowledged back over "
		       "device 1's end), the read back %llu ns (expected %llu), the target's "
		       "semaphore wait %llu ns (expected %llu: the messages cross device 0's end "
		       "only); the bytes landed", outs[i], backs[i], RW_BYTES,
		       (unsigned long long)t.write, (unsigned long long)write,
		       (unsigned long long)t.read, (unsigned long long)read,
		       (unsigned long long)t.sem_wait, (unsigned long long)wait);
	}
}

int main(void)
{
	test_modeled_time();
	test_cable_latency(2);
	test_cable_latency(4);
	test_remote_cable_latency();
	test_ring(2, 0, false, 37);
	test_ring(3, 50000, true, 0);
	test_ring(4, 0, true, 0);
	test_rounds_cut();
	test_fabric_wait_status();
	test_failure(3);
	test_kept_op(3);
	test_kept_op(4);
	test_failover_ring(3);
	test_failover_ring(4);
	test_failover_two();
	test_failover_threshold();
	test_counted_before_done(40);
	test_two_cuts();
	test_cable_pulled_mid_collective();
	test_two_communicators();
	test_failed_leftovers();
	test_comm_busy();
	test_late_rank_bad_memory();
	test_inline_rx(2, false);
	test_parked_doorbells();
	test_parked_race();
	test_parked_crash();
	test_parked_overflow();
	test_parked_two_queues();
	test_parked_destroy(false);
	test_parked_destroy(true);
	/* The doorbell writer starts collectives, the fabric thread completes them. */
	inline_db = true;
	test_inline_rx(4, true);
	test_inline_order();
	test_parked_doorbells();
	test_parked_race();
	test_parked_crash();
	test_parked_overflow();
	test_parked_two_queues();
	test_parked_destroy(false);
	test_parked_destroy(true);
	test_peer_behind();
	test_doorbell_direct(2);
	test_doorbell_direct(4);
	test_delayed_acks(2);
	test_delayed_acks(4);
	test_counted_before_done(40);
	test_ring(2, 0, false, 0);
	test_ring(4, 0, true, 0);
	test_fabric_wait_status();
	test_failure(3);
	test_cable_pulled_mid_collective();
	inline_db = false;
	return tap_done();
}
