// SPDX-License-Identifier: MIT
/*
 * Small-collective latency on the host, without QEMU: n firmware-sim
 * devices of one process cabled in a ring by function calls (port 0 of
 * device i to port 1 of device i + 1, each frame copied into the receiver
 * on the sender's fabric thread, as QEMU's direct cables do), doorbells
 * through the inline fast path (QEMU's default). One thread submits an
 * 8-byte FP32 all-reduce on every rank, one after another as the guest
 * does, and waits for every completion entry; beside it the round trip of a
 * one-NOP job on device 0. Every frame a device sends is stamped (host
 * clock), so that an all-reduce's time splits into where it goes:
 *
 *   submit   first doorbell to the last; one doorbell: its register
 *            write alone (the inline path runs in the writer's thread)
 *   start    last doorbell to that rank's first DATA frame (doorbell path,
 *            worker, fabric thread)
 *   hop      a DATA frame sent to the receiver's next frame (its fabric
 *            thread woken, the frame taken, its ack or next chunk sent)
 *   finish   the last DATA frame sent to the last completion seen
 *
 * Medians over the iterations; one line per figure. --wait poll (default)
 * spins on the completion entries as a guest polling its user queue does;
 * --wait irq sleeps on the queue's interrupt. Figures: benchmarks.rst,
 * "Small collectives".
 *
 * --json: the figures to stderr and one JSON line to stdout for make bench
 * (tests/run-bench): allreduce_8b_host_nN, the all-reduce's median beside
 * the empty job's.
 *
 * --trace: the last iteration's doorbells, frames and completions, one a
 * line, in us from its first doorbell (to stderr).
 *
 *   coll_lat_bench [--devices N] [--iters K] [--wait poll|irq] [--json] [--trace]
 */
#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "harness.h"
#include "maia/hw/dtype.h"

#define MAX_DEV		4u
#define MAX_EV		4096u
#define MAX_ITERS	100000u		/* enough for a profile's samples */

struct node {
	struct env e;
	struct tq q;
	unsigned int index;
	bool booted;			/* e.sim may be used by other devices' threads */
};

static struct node nodes[MAX_DEV];
static unsigned int ndev = 2;
/* Read-held across a frame's hand-over, so that no device is destroyed under it. */
static pthread_rwlock_t cable_lock = PTHREAD_RWLOCK_INITIALIZER;

/* Frames sent, in order (protected by ev_lock). */
struct ev {
	uint64_t ns;
	unsigned int dev;
	unsigned int type;		/* the fabric header's: DATA 2, ACK 3, ... */
};
static pthread_mutex_t ev_lock = PTHREAD_MUTEX_INITIALIZER;
static struct ev evs[MAX_EV];
static unsigned int nev;
static bool recording;

static uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

/* On the sending device's fabric thread. */
static int cable_tx(void *opaque, unsigned int port, const void *frame, size_t len)
{
	struct node *n = opaque;
	unsigned int peer = port == 0 ? (n->index + 1) % ndev : (n->index + ndev - 1) % ndev;

	if (len > 15 && __atomic_load_n(&recording, __ATOMIC_RELAXED)) {
		pthread_mutex_lock(&ev_lock);
		if (nev < MAX_EV)
			evs[nev++] = (struct ev){ now_ns(), n->index, ((const uint8_t *)frame)[15] };
		pthread_mutex_unlock(&ev_lock);
	}
	/* The ring's later devices are made after the first ones talk. */
	pthread_rwlock_rdlock(&cable_lock);
	if (!__atomic_load_n(&nodes[peer].booted, __ATOMIC_ACQUIRE)) {
		pthread_rwlock_unlock(&cable_lock);
		return -1;
	}
	maia_sim_fabric_rx(nodes[peer].e.sim, port ^ 1u, frame, len);
	pthread_rwlock_unlock(&cable_lock);
	return 0;
}

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return x < y ? -1 : x > y;
}

static double median_us(uint64_t *v, unsigned int n)
{
	if (!n)
		return 0;
	qsort(v, n, sizeof(*v), cmp_u64);
	return (double)v[n / 2] / 1000.0;
}

static bool poll_mode = true;

/* Waits for rank r's entry in slot; false if it never came. */
static bool wait_done(unsigned int r, uint32_t slot, unsigned int irqs)
{
	struct maia_cq_entry *c = cqe_at(&nodes[r].e, &nodes[r].q, slot);
	uint64_t t0 = now_ns();

	if (!poll_mode)
		return wait_irq(&nodes[r].e, MAIA_VEC_QUEUE(0), irqs + 1, 10000) &&
		       (__atomic_load_n(&c->flags, __ATOMIC_ACQUIRE) & MAIA_CQE_VALID);
	while (!(__atomic_load_n(&c->flags, __ATOMIC_ACQUIRE) & MAIA_CQE_VALID))
		if (now_ns() - t0 > 10000000000ull)
			return false;
	return true;
}

int main(int argc, char **argv)
{
	unsigned int iters = 200;
	uint64_t *t_empty, *t_ar, *t_sub, *t_start, *t_fin, *t_hop, *t_db;
	unsigned int nhop = 0, ndb = 0, seq = 1;
	uint64_t cb_nop, cb_ar[MAX_DEV], buf[MAX_DEV];
	bool json = false, trace = false;

	for (int i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "--devices") && i + 1 < argc)
			ndev = (unsigned int)atoi(argv[++i]);
		else if (!strcmp(argv[i], "--iters") && i + 1 < argc)
			iters = (unsigned int)atoi(argv[++i]);
		else if (!strcmp(argv[i], "--wait") && i + 1 < argc)
			poll_mode = strcmp(argv[++i], "irq") != 0;
		else if (!strcmp(argv[i], "--json"))
			json = true;
		else if (!strcmp(argv[i], "--trace"))
			trace = true;
		else {
			fprintf(stderr, "usage: coll_lat_bench [--devices 2..4] [--iters 1..100000] "
				"[--wait poll|irq] [--json] [--trace]\n");
			return 2;
		}
	}
	if (ndev < 2 || ndev > MAX_DEV || !iters || iters > MAX_ITERS) {
		fprintf(stderr, "coll_lat_bench: --devices 2..4, --iters 1..100000\n");
		return 2;
	}
	t_empty = calloc(iters, sizeof(*t_empty));
	t_ar = calloc(iters, sizeof(*t_ar));
	t_sub = calloc(iters, sizeof(*t_sub));
	t_start = calloc(iters, sizeof(*t_start));
	t_fin = calloc(iters, sizeof(*t_fin));
	t_hop = calloc((size_t)iters * 8, sizeof(*t_hop));
	t_db = calloc((size_t)iters * MAX_DEV, sizeof(*t_db));
	if (!t_empty || !t_ar || !t_sub || !t_start || !t_fin || !t_hop || !t_db) {
		fprintf(stderr, "coll_lat_bench: out of memory\n");
		return 1;
	}
	for (unsigned int i = 0; i < ndev; i++) {
		nodes[i].index = i;
		if (env_init_fabric(&nodes[i].e, 1, 64ull << 20, 4ull << 20, 2,
				    0x4d4100000b00ull + i, cable_tx, &nodes[i])) {
			fprintf(stderr, "coll_lat_bench: device creation failed\n");
			return 1;
		}
		boot_or_die(&nodes[i].e);
		__atomic_store_n(&nodes[i].booted, true, __ATOMIC_RELEASE);
		maia_sim_set_inline_doorbell(nodes[i].e.sim, true);
		queue_setup(&nodes[i].e, &nodes[i].q, 0, 64, MAIA_QUEUE_PRIO_NORMAL);
	}
	for (uint64_t t0 = now_ns();;) {
		bool up = true;

		for (unsigned int i = 0; i < ndev; i++)
			for (unsigned int p = 0; p < 2; p++) {
				struct maia_sim_fabric_port_info info;

				up &= !maia_sim_fabric_port_info(nodes[i].e.sim, p, &info) &&
				      info.up && info.ident_rx;
			}
		if (up)
			break;
		if (now_ns() - t0 > 60000000000ull) {
			fprintf(stderr, "coll_lat_bench: ring not UP\n");
			return 1;
		}
		usleep(1000);
	}
	{
		struct maia_cmd_header nop = { .opcode = MAIA_OP_NOP, .size = sizeof(nop) };
		struct cmdbuf cb;

		cb_init(&cb);
		cb_add(&cb, &nop, sizeof(nop));
		cb_nop = cb_to_host(&nodes[0].e, &cb);
	}
	/* Each rank's buffer and command buffer, rewritten in place every iteration. */
	for (unsigned int r = 0; r < ndev; r++) {
		buf[r] = host_alloc(&nodes[r].e, 64, 64);
		cb_ar[r] = host_alloc(&nodes[r].e, sizeof(struct maia_cmd_collective), 64);
	}
	for (unsigned int it = 0; it < iters + 10; it++) {
		struct maia_cmd_collective k[MAX_DEV];
		uint32_t slot[MAX_DEV];
		unsigned int irqs[MAX_DEV];
		uint64_t tdb[MAX_DEV], tdb_end[MAX_DEV], tdone[MAX_DEV], t0;
		bool ok = true;

		/* The empty job first, then the all-reduce: same minutes for both. */
		irqs[0] = irq_count(&nodes[0].e, MAIA_VEC_QUEUE(0));
		t0 = now_ns();
		slot[0] = queue_push(&nodes[0].e, &nodes[0].q, cb_nop, 8, 0, 0, it, true);
		ok &= wait_done(0, slot[0], irqs[0]);
		if (it >= 10)
			t_empty[it - 10] = now_ns() - t0;

		for (unsigned int r = 0; r < ndev; r++) {
			k[r] = (struct maia_cmd_collective){
				.hdr = { .opcode = MAIA_OP_COLLECTIVE, .size = sizeof(k[r]) },
				.coll = MAIA_COLL_ALL_REDUCE, .redop = MAIA_REDOP_SUM,
				.dtype = MAIA_DTYPE_FP32, .send_port = 0, .recv_port = 1,
				.rank = (uint16_t)r, .nranks = (uint16_t)ndev, .comm_id = 0xbe,
				.seq = seq, .count = 2, .send_addr = buf[r], .recv_addr = buf[r],
			};
			memcpy(host_ptr(&nodes[r].e, cb_ar[r]), &k[r], sizeof(k[r]));
		}
		seq++;
		pthread_mutex_lock(&ev_lock);
		nev = 0;
		pthread_mutex_unlock(&ev_lock);
		__atomic_store_n(&recording, true, __ATOMIC_RELAXED);
		for (unsigned int r = 0; r < ndev; r++) {
			irqs[r] = irq_count(&nodes[r].e, MAIA_VEC_QUEUE(0));
			tdb[r] = now_ns();
			slot[r] = queue_push(&nodes[r].e, &nodes[r].q, cb_ar[r], sizeof(k[r]), 0, 0,
					     seq, true);
			tdb_end[r] = now_ns();
			if (it >= 10 && ndb < iters * MAX_DEV)
				t_db[ndb++] = tdb_end[r] - tdb[r];
		}
		for (unsigned int r = 0; r < ndev; r++) {
			ok &= wait_done(r, slot[r], irqs[r]);
			ok &= cqe_at(&nodes[r].e, &nodes[r].q, slot[r])->status == MAIA_STATUS_OK;
			tdone[r] = now_ns();
		}
		__atomic_store_n(&recording, false, __ATOMIC_RELAXED);
		if (!ok) {
			fprintf(stderr, "coll_lat_bench: iteration %u failed\n", it);
			return 1;
		}
		if (it < 10)
			continue;
		t_ar[it - 10] = tdone[ndev - 1] - tdb[0];
		if (trace && it == iters + 9) {
			pthread_mutex_lock(&ev_lock);
			for (unsigned int r = 0; r < ndev; r++)
				fprintf(stderr, "trace %8.1f %8.1f doorbell rank %u\n",
					(double)(tdb[r] - tdb[0]) / 1e3,
					(double)(tdb_end[r] - tdb[0]) / 1e3, r);
			for (unsigned int i = 0; i < nev; i++)
				fprintf(stderr, "trace %8.1f          dev %u sends type %u\n",
					(double)(evs[i].ns - tdb[0]) / 1e3, evs[i].dev, evs[i].type);
			for (unsigned int r = 0; r < ndev; r++)
				fprintf(stderr, "trace %8.1f          completion seen, rank %u\n",
					(double)(tdone[r] - tdb[0]) / 1e3, r);
			pthread_mutex_unlock(&ev_lock);
		}
		t_sub[it - 10] = tdb[ndev - 1] - tdb[0];
		pthread_mutex_lock(&ev_lock);
		{
			uint64_t first_last = 0, last_data = 0;

			for (unsigned int i = 0; i < nev; i++) {
				if (evs[i].type != MAIA_FABRIC_DATA)
					continue;
				if (!first_last && evs[i].dev == ndev - 1)
					first_last = evs[i].ns;
				last_data = evs[i].ns;
				/* the receiver's next frame after this DATA */
				for (unsigned int j = i + 1; j < nev; j++)
					if (evs[j].dev == (evs[i].dev + 1) % ndev) {
						if (nhop < iters * 8)
							t_hop[nhop++] = evs[j].ns - evs[i].ns;
						break;
					}
			}
			t_start[it - 10] = first_last > tdb[ndev - 1] ? first_last - tdb[ndev - 1] : 0;
			t_fin[it - 10] = tdone[ndev - 1] > last_data ?
					 tdone[ndev - 1] - last_data : 0;
		}
		pthread_mutex_unlock(&ev_lock);
	}
	/* with --json the JSON line alone goes to stdout (make bench's results) */
	FILE *txt = json ? stderr : stdout;

	fprintf(txt, "coll_lat_bench: %u devices, %u iterations, wait %s\n", ndev, iters,
		poll_mode ? "poll" : "irq");
	fprintf(txt, "  empty job (NOP) round trip     %8.1f us\n", median_us(t_empty, iters));
	fprintf(txt, "  8-byte all-reduce              %8.1f us\n", median_us(t_ar, iters));
	fprintf(txt, "    submit (first to last doorbell)        %8.1f us\n", median_us(t_sub, iters));
	fprintf(txt, "    one doorbell (the register write)      %8.1f us\n", median_us(t_db, ndb));
	fprintf(txt, "    start (last doorbell to its DATA)      %8.1f us\n", median_us(t_start, iters));
	fprintf(txt, "    hop (DATA to the receiver's next frame) %7.1f us (%u hops)\n",
		median_us(t_hop, nhop), nhop);
	fprintf(txt, "    finish (last DATA to last completion)  %8.1f us\n", median_us(t_fin, iters));
	if (json) {
		double ar = median_us(t_ar, iters), nop = median_us(t_empty, iters);

		printf("{\"name\": \"allreduce_8b_host_n%u\", \"value\": %.1f, \"unit\": \"us\", "
		       "\"higher_is_better\": false, \"baseline\": \"empty job (NOP), host, no QEMU\", "
		       "\"baseline_value\": %.1f, \"ratio\": %.1f}\n", ndev, ar, nop,
		       nop > 0 ? ar / nop : 0);
	}
	/* Cables cut first: the devices still up send to the ones gone. */
	pthread_rwlock_wrlock(&cable_lock);
	for (unsigned int i = 0; i < ndev; i++)
		__atomic_store_n(&nodes[i].booted, false, __ATOMIC_RELEASE);
	pthread_rwlock_unlock(&cable_lock);
	for (unsigned int i = 0; i < ndev; i++)
		env_fini(&nodes[i].e);
	return 0;
}
