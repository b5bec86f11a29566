// SPDX-License-Identifier: MIT
/*
 * Frames that point at device memory (Documentation/hw/fabric.rst, "Frames
 * that point at device memory"; firmware-sim/src/fw_fabric_ref.h): 2 and 4
 * struct maia_sim in one process, booted with the real firmware, cabled in
 * a ring by function calls, their collectives' buffers in HBM. The cable
 * of each test is one of the ways a host carries a lent DATA frame:
 *
 * - LEND: lent on to the receiver as it is (a direct cable): results exact
 *   against the CPU reference (coll_ref.c), frames sent by reference
 *   counted, none with refs turned off, no record left once the devices
 *   are gone;
 * - SEAL: sealed, then lent on (a hub): no frame that arrives is marked,
 *   and its CRC is whole;
 * - COPY: sealed, then copied (a socket, shared memory): the same, the
 *   receiver checks the CRC;
 * - FORGE: a copy of the marked frame, and a marked frame of the test's
 *   own lent on, before the real one: both dropped and counted
 *   (MAIA_FABRIC_DROP_REF), never read; the results still exact;
 * - KEEP: the lent frame kept by the test after the receiver took it: the
 *   sender's job completes only once its frames no longer point at its
 *   memory (their data copied in), each kept frame's data then equal to the
 *   reference's, also after the sender is destroyed or reset.
 *
 * With refs turned off, or fault injection on (fabric_drop_ppm), no frame
 * goes by reference and the results are the same.
 *
 * Decisions are by events (completion entries, port state); the only clock
 * use is a hang guard of 60 s per wait.
 */
#define _GNU_SOURCE
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <zlib.h>

#include "coll_ref.h"
#include "harness.h"
#include "maia/hw/dtype.h"
#include "maia/hw/fabric.h"
#include "tap.h"
#include "../../../firmware-sim/src/fw_fabric.h"
#include "../../../firmware-sim/src/fw_fabric_ref.h"
#include "../../../firmware-sim/src/fw_internal.h"

#define MAX_DEV		4u
#define HBM_SIZE	(48ull << 20)
#define HOST_SIZE	(4ull << 20)
#define HANG_GUARD_MS	60000u
#define KEEP_MAX	4096u

enum cable { LEND, SEAL, COPY, FORGE, KEEP };

struct node {
	struct env e;
	struct tq q;
	pthread_mutex_t lock;
	pthread_cond_t cond;
	bool plugged;
	unsigned int inflight;		/* frames being handed over (not under lock) */
};

static struct node nodes[MAX_DEV];
static unsigned int ndev;
static enum cable cable = LEND;
static uint64_t rng = 0x4ef;

/* Test-wide counts, under count_lock. */
static pthread_mutex_t count_lock = PTHREAD_MUTEX_INITIALIZER;
static unsigned long marked_in;		/* marked frames handed to a receiver */
static unsigned long bad_crc;		/* sealed frames whose CRC was not whole */
static unsigned long forged;		/* FORGE: frames the receiver must drop */
static const void *kept[KEEP_MAX];	/* KEEP: marked frames held by the test */
static size_t kept_len[KEEP_MAX];
static unsigned int nkept;

static uint64_t now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000u + (uint64_t)ts.tv_nsec / 1000000u;
}

static struct node *peer_of(struct node *n, unsigned int port)
{
	unsigned int i = (unsigned int)(n - nodes);

	return &nodes[port == 0 ? (i + 1) % ndev : (i + ndev - 1) % ndev];
}

static bool marked(const void *frame, size_t len)
{
	struct maia_fabric_hdr h;

	if (len < MAIA_FABRIC_MIN_FRAME)
		return false;
	memcpy(&h, (const uint8_t *)frame + MAIA_ETH_HLEN, sizeof(h));
	return h.flags & MAIA_FABRIC_F_REF;
}

/* A frame's CRC against zlib's, over the header with crc 0 and the payload. */
static bool crc_whole(const void *frame, size_t len)
{
	uint8_t *c = malloc(len);
	struct maia_fabric_hdr h;
	uint32_t want;
	bool ok;

	memcpy(c, frame, len);
	memcpy(&h, c + MAIA_ETH_HLEN, sizeof(h));
	want = h.crc;
	h.crc = 0;
	memcpy(c + MAIA_ETH_HLEN, &h, sizeof(h));
	ok = (uint32_t)crc32(0, c + MAIA_ETH_HLEN, (uInt)(len - MAIA_ETH_HLEN)) == want;
	free(c);
	return ok;
}

static void put_frame(void *frame)
{
	maia_sim_fabric_frame_put(frame);
}

struct kept_frame {
	const void *frame;
	size_t len;
};

/* KEEP: the receiver is done with a marked frame; the test keeps the reference. */
static void keep_frame(void *opaque)
{
	struct kept_frame k = *(struct kept_frame *)opaque;
	bool keep;

	free(opaque);
	pthread_mutex_lock(&count_lock);
	keep = nkept < KEEP_MAX;
	if (keep) {
		kept[nkept] = k.frame;
		kept_len[nkept] = k.len;
		nkept++;
	}
	pthread_mutex_unlock(&count_lock);
	if (!keep)
		maia_sim_fabric_frame_put(k.frame);
}

/* A frame of the test's own, given back by the receiver. */
static void free_frame(void *frame)
{
	free(frame);
}

/*
 * Whether n is plugged, counted as handing a frame over until cable_leave().
 * The node's lock is not held while the peer takes the frame: the peer may
 * run its round on this thread and send back through its own cable.
 */
static bool cable_enter(struct node *n)
{
	bool plugged;

	pthread_mutex_lock(&n->lock);
	plugged = n->plugged;
	n->inflight += plugged;
	pthread_mutex_unlock(&n->lock);
	return plugged;
}

static void cable_leave(struct node *n)
{
	pthread_mutex_lock(&n->lock);
	if (!--n->inflight)
		pthread_cond_broadcast(&n->cond);
	pthread_mutex_unlock(&n->lock);
}

/*
 * test_abandon_rx(): node 1's frames parked by the test instead of handed
 * over (park_from1), and node 0's next send stopped until the test lets
 * it go (block0): node 0's round then waits in its cable.
 */
#define PARK_MAX	1024u
static pthread_mutex_t park_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t park_cond = PTHREAD_COND_INITIALIZER;
static bool park_from1, block0, blocked0;
static struct parked {
	const void *frame;
	size_t len;
	bool lent;
} parked[PARK_MAX];
static unsigned int nparked, parked_data;

/* Whether the frame is parked (then the test holds it, or a copy). */
static bool park(struct node *n, const void *frame, size_t len, bool lent)
{
	bool took = false;

	pthread_mutex_lock(&park_lock);
	if (n == &nodes[1] && park_from1 && nparked < PARK_MAX) {
		void *copy = lent ? NULL : malloc(len);

		if (copy)
			memcpy(copy, frame, len);
		parked[nparked++] = (struct parked){ lent ? frame : copy, len, lent };
		parked_data += len > MAIA_FABRIC_MIN_FRAME + sizeof(struct maia_fabric_coll_msg) +
				     4096u;
		took = true;
	} else if (n == &nodes[1] && park_from1) {
		took = true;
		if (lent)
			maia_sim_fabric_frame_put(frame);
	}
	if (n == &nodes[0] && block0) {
		blocked0 = true;
		pthread_cond_broadcast(&park_cond);
		while (block0)
			pthread_cond_wait(&park_cond, &park_lock);
	}
	pthread_mutex_unlock(&park_lock);
	return took;
}

static int cable_tx(void *opaque, unsigned int port, const void *frame, size_t len)
{
	struct node *n = opaque, *p = peer_of(opaque, port);

	if (park(n, frame, len, false))
		return 0;
	if (!cable_enter(n))
		return -1;
	maia_sim_fabric_rx(p->e.sim, port ^ 1u, frame, len);
	cable_leave(n);
	return 0;
}

static int cable_tx_lend(void *opaque, unsigned int port, const void *frame, size_t len)
{
	struct node *n = opaque, *p = peer_of(opaque, port);
	struct maia_sim *to = p->e.sim;
	unsigned int to_port = port ^ 1u;
	bool was_marked = marked(frame, len);

	if (park(n, frame, len, true))
		return 0;
	if (!cable_enter(n)) {
		maia_sim_fabric_frame_put(frame);
		return -1;
	}
	pthread_mutex_lock(&count_lock);
	marked_in += was_marked && (cable == LEND || cable == FORGE || cable == KEEP);
	pthread_mutex_unlock(&count_lock);
	switch (cable) {
	case SEAL:
	case COPY:
		maia_sim_fabric_frame_seal(frame, len);
		pthread_mutex_lock(&count_lock);
		bad_crc += marked(frame, len) || !crc_whole(frame, len);
		pthread_mutex_unlock(&count_lock);
		if (cable == COPY) {
			maia_sim_fabric_rx(to, to_port, frame, len);
			maia_sim_fabric_frame_put(frame);
		} else {
			maia_sim_fabric_rx_lent(to, to_port, frame, len, put_frame, (void *)frame);
		}
		break;
	case FORGE:
		if (was_marked) {
			uint8_t *own = malloc(len);

			/* A copy with the mark, then a marked frame the process did not lend. */
			maia_sim_fabric_rx(to, to_port, frame, len);
			memcpy(own, frame, len);
			maia_sim_fabric_rx_lent(to, to_port, own, len, free_frame, own);
			pthread_mutex_lock(&count_lock);
			forged += 2;
			pthread_mutex_unlock(&count_lock);
		}
		maia_sim_fabric_rx_lent(to, to_port, frame, len, put_frame, (void *)frame);
		break;
	case KEEP:
		if (was_marked) {
			/* The receiver takes it; the test keeps the reference it gives back. */
			struct kept_frame *k = malloc(sizeof(*k));

			k->frame = frame;
			k->len = len;
			maia_sim_fabric_rx_lent(to, to_port, frame, len, keep_frame, k);
			break;
		}
		__attribute__((fallthrough));
	default:
		maia_sim_fabric_rx_lent(to, to_port, frame, len, put_frame, (void *)frame);
		break;
	}
	cable_leave(n);
	return 0;
}

static bool ring_up(unsigned int n)
{
	uint64_t t0 = now_ms();
	bool up = false;

	ndev = n;
	for (unsigned int i = 0; i < n; i++) {
		memset(&nodes[i], 0, sizeof(nodes[i]));
		pthread_mutex_init(&nodes[i].lock, NULL);
		pthread_cond_init(&nodes[i].cond, NULL);
		env_fabric_tx_lend = cable_tx_lend;
		if (env_init_fabric(&nodes[i].e, 1, HBM_SIZE, HOST_SIZE, 2, 0x4d41000000f0ull + i,
				    cable_tx, &nodes[i]))
			return false;
		env_fabric_tx_lend = NULL;
		boot_or_die(&nodes[i].e);
		queue_setup(&nodes[i].e, &nodes[i].q, 0, 64, 0);
	}
	for (unsigned int i = 0; i < n; i++) {
		pthread_mutex_lock(&nodes[i].lock);
		nodes[i].plugged = true;
		pthread_mutex_unlock(&nodes[i].lock);
	}
	while (!up && now_ms() - t0 < HANG_GUARD_MS) {
		up = true;
		for (unsigned int i = 0; i < n; i++)
			for (unsigned int p = 0; p < 2; p++) {
				struct maia_sim_fabric_port_info info;

				up &= !maia_sim_fabric_port_info(nodes[i].e.sim, p, &info) && info.up;
			}
		if (!up)
			usleep(1000);
	}
	return up;
}

/* No frame of node i's is handed over once this returns. */
static void unplug(unsigned int i)
{
	pthread_mutex_lock(&nodes[i].lock);
	nodes[i].plugged = false;
	while (nodes[i].inflight)
		pthread_cond_wait(&nodes[i].cond, &nodes[i].lock);
	pthread_mutex_unlock(&nodes[i].lock);
}

static void ring_down(void)
{
	for (unsigned int i = 0; i < ndev; i++)
		unplug(i);
	for (unsigned int i = 0; i < ndev; i++)
		if (nodes[i].e.sim)
			env_fini(&nodes[i].e);
}

struct trial {
	struct maia_cmd_collective k[MAX_DEV];
	uint8_t *in[MAX_DEV];		/* copies of the inputs */
	uint64_t send[MAX_DEV], recv[MAX_DEV];	/* HBM offsets */
	uint32_t slot[MAX_DEV];
	unsigned int irqs[MAX_DEV];	/* the queue's interrupts before the job */
	unsigned int es;
	size_t recv_bytes[MAX_DEV];
};

static uint32_t next_seq = 1;

static void prepare(struct trial *t, unsigned int coll, unsigned int dtype, uint64_t count,
		    bool in_place)
{
	uint32_t seq = next_seq++;

	t->es = maia_dtype_size(dtype);
	for (unsigned int r = 0; r < ndev; r++) {
		struct env *e = &nodes[r].e;
		struct maia_cmd_collective *k = &t->k[r];
		size_t s, rv;

		*k = (struct maia_cmd_collective){
			.hdr = { .opcode = MAIA_OP_COLLECTIVE, .size = sizeof(*k) },
			.coll = (uint8_t)coll, .redop = MAIA_REDOP_SUM, .dtype = (uint8_t)dtype,
			.send_port = 0, .recv_port = 1, .root = (uint16_t)(seq % ndev),
			.rank = (uint16_t)r, .nranks = (uint16_t)ndev, .comm_id = 0x7ef,
			.seq = seq, .count = count, .algo = MAIA_COLL_ALGO_RING,
		};
		ref_buf_sizes(k, &s, &rv);
		t->send[r] = hbm_alloc(e, s ? s : 64, 4096);
		t->recv[r] = in_place ? t->send[r] : hbm_alloc(e, rv ? rv : 64, 4096);
		ref_fill(e->hbm + t->send[r], s / t->es, dtype, &rng);
		t->in[r] = malloc(s ? s : 1);
		memcpy(t->in[r], e->hbm + t->send[r], s);
		if (!in_place)
			memset(e->hbm + t->recv[r], 0xa5, rv);
		t->recv_bytes[r] = rv;
		k->send_addr = MAIA_PHYS_HBM | t->send[r];
		k->recv_addr = MAIA_PHYS_HBM | t->recv[r];
	}
}

static void submit(struct trial *t, unsigned int r)
{
	struct env *e = &nodes[r].e;
	struct cmdbuf cb;

	cb_init(&cb);
	cb_add(&cb, &t->k[r], sizeof(t->k[r]));
	t->irqs[r] = irq_count(e, MAIA_VEC_QUEUE(0));
	t->slot[r] = queue_push(e, &nodes[r].q, cb_to_host(e, &cb), sizeof(t->k[r]), 0, 0,
				t->k[r].seq, true);
}

/* Rank r's completion entry, waited for (hang guard); false: none. */
static bool done(struct trial *t, unsigned int r, uint32_t *status)
{
	struct maia_cq_entry *c = cqe_at(&nodes[r].e, &nodes[r].q, t->slot[r]);

	/* The queue's interrupt follows its completion entry (and orders it). */
	if (!wait_irq(&nodes[r].e, MAIA_VEC_QUEUE(0), t->irqs[r] + 1, HANG_GUARD_MS) ||
	    !(c->flags & MAIA_CQE_VALID))
		return false;
	*status = c->status;
	return true;
}

/* Elements of every rank's result that differ from the reference. */
static long wrong(struct trial *t)
{
	long bad = 0;

	for (unsigned int r = 0; r < ndev; r++) {
		uint8_t *exp = malloc(t->recv_bytes[r] ? t->recv_bytes[r] : 1);
		const uint8_t *got = nodes[r].e.hbm + t->recv[r];

		ref_expected(t->in, r, &t->k[r], exp);
		for (size_t i = 0; i < t->recv_bytes[r] / t->es; i++)
			bad += memcmp(exp + i * t->es, got + i * t->es, t->es) != 0;
		free(exp);
	}
	return bad;
}

static void trial_free(struct trial *t)
{
	for (unsigned int r = 0; r < ndev; r++)
		free(t->in[r]);
}

/* Runs one collective on every rank: true if every job was OK; *bad: wrong elements. */
static bool run(unsigned int coll, unsigned int dtype, uint64_t count, bool in_place, long *bad)
{
	struct trial t;
	bool ok = true;

	prepare(&t, coll, dtype, count, in_place);
	for (unsigned int r = 0; r < ndev; r++)
		submit(&t, r);
	for (unsigned int r = 0; r < ndev; r++) {
		uint32_t st = 0;

		ok &= done(&t, r, &st) && st == MAIA_STATUS_OK;
	}
	*bad = wrong(&t);
	trial_free(&t);
	return ok;
}

/* port_sum()'s last look: frames dropped for a full receive queue, every port. */
static uint64_t queue_drops;

static uint64_t port_sum(bool tx)
{
	uint64_t n = 0;

	queue_drops = 0;
	for (unsigned int r = 0; r < ndev; r++)
		for (unsigned int p = 0; p < 2; p++) {
			struct maia_sim_fabric_port_info info;

			maia_sim_fabric_port_info(nodes[r].e.sim, p, &info);
			n += tx ? info.tx_ref : info.rx_ref_drops;
			queue_drops += info.rx_queue_drops;
		}
	return n;
}

/* The published port snapshots lag a round: wait until they count want (hang guard). */
static uint64_t wait_port_sum(bool tx, uint64_t want)
{
	uint64_t t0 = now_ms(), n;

	while ((n = port_sum(tx)) + (tx ? 0 : queue_drops) < want && now_ms() - t0 < 2000)
		usleep(1000);
	return n;
}

static const char *const coll_name[] = { "?", "all-reduce", "all-gather", "reduce-scatter",
					 "broadcast", "all-to-all" };

static const struct shape {
	unsigned int coll, dtype;
	uint64_t count;
	bool in_place;
} shapes[] = {
	{ MAIA_COLL_ALL_REDUCE, MAIA_DTYPE_FP32, 1u << 20, false },
	{ MAIA_COLL_ALL_REDUCE, MAIA_DTYPE_FP32, 300007, true },
	{ MAIA_COLL_ALL_REDUCE, MAIA_DTYPE_BF16, 200003, false },
	{ MAIA_COLL_ALL_GATHER, MAIA_DTYPE_FP32, 70001, false },
	{ MAIA_COLL_ALL_GATHER, MAIA_DTYPE_BF16, 90001, false },
	{ MAIA_COLL_REDUCE_SCATTER, MAIA_DTYPE_FP32, 50021, false },
	{ MAIA_COLL_BROADCAST, MAIA_DTYPE_FP32, 80009, true },
};

static void run_shapes(unsigned int n, const char *what)
{
	for (unsigned int i = 0; i < sizeof(shapes) / sizeof(shapes[0]); i++) {
		const struct shape *s = &shapes[i];
		long bad = 0;
		bool ok = run(s->coll, s->dtype, s->count, s->in_place, &bad);

		tap_ok(ok && bad == 0, "%u devices, %s: %s %s count %llu%s: every job OK, #wrong = %ld",
		       n, what, coll_name[s->coll], s->dtype == MAIA_DTYPE_FP32 ? "fp32" : "bf16",
		       (unsigned long long)s->count, s->in_place ? " in place" : "", bad);
	}
}

/* Every way of carrying the frames gives the reference's bits. */
static void test_cables(unsigned int n)
{
	static const struct {
		enum cable c;
		const char *name;
	} ways[] = {
		{ LEND, "lent on as they are (direct cable)" },
		{ SEAL, "sealed, then lent on (hub)" },
		{ COPY, "sealed, then copied (socket)" },
		{ FORGE, "a marked copy and a marked frame not lent here before each" },
	};

	for (unsigned int w = 0; w < sizeof(ways) / sizeof(ways[0]); w++) {
		uint64_t sent, drops;

		cable = ways[w].c;
		marked_in = bad_crc = forged = 0;
		if (!tap_ok(ring_up(n), "%u devices cabled in a ring, frames %s: every port UP", n,
			    ways[w].name)) {
			ring_down();
			continue;
		}
		run_shapes(n, ways[w].name);
		sent = wait_port_sum(true, 1);
		drops = wait_port_sum(false, forged);
		switch (cable) {
		case LEND:
			tap_ok(sent > 0 && marked_in > 0 && marked_in <= sent,
			       "%u devices, direct: %llu frames sent by reference, %lu marked frames "
			       "taken", n, (unsigned long long)sent, marked_in);
			break;
		case SEAL:
		case COPY:
			tap_ok(sent > 0 && bad_crc == 0,
			       "%u devices, %s: %llu frames by reference, each sealed with its data "
			       "(mark cleared, zlib's CRC): %lu not", n, ways[w].name,
			       (unsigned long long)sent, bad_crc);
			break;
		default:
			/* A copy may find the receive queue full first: dropped there. */
			tap_ok(forged > 0 && drops > 0 && drops <= forged &&
			       drops + queue_drops >= forged,
			       "%u devices, forged: %lu marked frames not lent here, %llu dropped "
			       "(MAIA_FABRIC_DROP_REF), %llu frames dropped for a full receive "
			       "queue", n, forged, (unsigned long long)drops,
			       (unsigned long long)queue_drops);
			break;
		}
		ring_down();
		tap_ok(fw_ref_records() == 0, "%u devices, %s: no record left once the devices are "
		       "gone (%u)", n, ways[w].name, fw_ref_records());
	}
	cable = LEND;
}

/* Refs off: no frame by reference, the same bits. */
static void test_off(unsigned int n)
{
	fw_fabric_ref_frames(false);
	cable = LEND;
	if (tap_ok(ring_up(n), "%u devices, refs off: every port UP", n)) {
		run_shapes(n, "refs off");
		tap_ok(port_sum(true) == 0, "%u devices, refs off: %llu frames by reference", n,
		       (unsigned long long)port_sum(true));
	}
	ring_down();
	fw_fabric_ref_frames(true);
}

/*
 * A kept frame's data as the reference has them: n = 2, FP32 all-reduce of
 * an even count, step 0 from rank r its input's block r + 1, step 1 the
 * result's block r. false: not such a frame, or other bytes.
 */
static bool kept_data_ok(struct trial *t, const void *frame, size_t len, const uint8_t *result)
{
	const uint8_t *msg = (const uint8_t *)frame + MAIA_FABRIC_MIN_FRAME;
	struct maia_fabric_coll_msg h;
	uint64_t half = t->k[0].count / 2 * 4;
	const uint8_t *want;

	if (len < MAIA_FABRIC_MIN_FRAME + sizeof(h))
		return false;
	memcpy(&h, msg, sizeof(h));
	if (h.type != MAIA_FMSG_COLL || h.src_rank > 1 || h.step > 1 ||
	    len != MAIA_FABRIC_MIN_FRAME + sizeof(h) + h.len || h.offset + h.len > half)
		return false;
	if (h.step == 0)
		want = t->in[h.src_rank] + (1 - h.src_rank) * half + h.offset;
	else
		want = result + h.src_rank * half + h.offset;
	return !memcmp(msg + sizeof(h), want, h.len);
}

/* Every kept frame: its data copied in (no record pointing), the reference's bytes. */
static bool kept_ok(struct trial *t, const uint8_t *result, unsigned int *pointing,
		    unsigned int *bad)
{
	*pointing = *bad = 0;
	pthread_mutex_lock(&count_lock);
	for (unsigned int i = 0; i < nkept; i++) {
		*pointing += fw_ref_state(kept[i]) == 1;
		*bad += !kept_data_ok(t, kept[i], kept_len[i], result);
	}
	pthread_mutex_unlock(&count_lock);
	return nkept > 0 && !*pointing && !*bad;
}

static void put_kept(void)
{
	pthread_mutex_lock(&count_lock);
	for (unsigned int i = 0; i < nkept; i++)
		maia_sim_fabric_frame_put(kept[i]);
	nkept = 0;
	pthread_mutex_unlock(&count_lock);
}

#define KEEP_COUNT	(1u << 18)	/* 1 MiB of FP32: 9 chunks a step */

/*
 * The test keeps every marked frame after the receiver took it: each job
 * completes only after its frames stopped pointing at its memory, with
 * the reference's bytes in them, which stay after the devices are gone.
 */
static void test_keep_done(void)
{
	struct trial t;
	uint8_t *result = malloc(KEEP_COUNT * 4);
	bool ok = true;
	unsigned int pointing = 0, bad = 0;
	bool fine;

	cable = KEEP;
	nkept = 0;
	if (!tap_ok(ring_up(2), "2 devices, marked frames kept by the host: every port UP")) {
		ring_down();
		free(result);
		cable = LEND;
		return;
	}
	prepare(&t, MAIA_COLL_ALL_REDUCE, MAIA_DTYPE_FP32, KEEP_COUNT, false);
	ref_expected(t.in, 0, &t.k[0], result);
	for (unsigned int r = 0; r < 2; r++)
		submit(&t, r);
	for (unsigned int r = 0; r < 2; r++) {
		uint32_t st = 0;

		ok &= done(&t, r, &st) && st == MAIA_STATUS_OK;
	}
	tap_ok(ok && wrong(&t) == 0, "2 devices, frames kept: both jobs OK, results exact");
	/* Completed: every frame of theirs was given back, or had its data copied in. */
	fine = kept_ok(&t, result, &pointing, &bad);
	tap_ok(fine,
	       "2 devices, frames kept: %u marked frames held by the host at completion, %u "
	       "still pointing at device memory, %u with other bytes than the reference's",
	       nkept, pointing, bad);
	ring_down();
	fine = kept_ok(&t, result, &pointing, &bad);
	tap_ok(fine,
	       "2 devices destroyed: the %u kept frames still hold the reference's bytes (%u "
	       "other)", nkept, bad);
	put_kept();
	tap_ok(fw_ref_records() == 0, "frames given back: no record left (%u)", fw_ref_records());
	trial_free(&t);
	free(result);
	cable = LEND;
}

/*
 * Rank 0 alone starts an all-reduce; rank 1 takes its frames (held, early)
 * and the host keeps them. Then rank 0 is reset (its job aborted),
 * destroyed, or its queue destroyed (the parked job dropped): its frames'
 * data are copied in, rank 0's input's bytes.
 */
enum abort_how { RESET, DESTROY, QUEUE_DESTROY };

/* Whether some kept frame still points at device memory. */
static bool kept_pointing(void)
{
	bool any = false;

	pthread_mutex_lock(&count_lock);
	for (unsigned int i = 0; i < nkept; i++)
		any |= fw_ref_state(kept[i]) == 1;
	pthread_mutex_unlock(&count_lock);
	return any;
}

static void test_keep_abort(enum abort_how how)
{
	static const char *const whats[] = { "reset", "destroyed", "queue destroyed" };
	const char *what = whats[how];
	struct trial t;
	uint64_t t0;
	unsigned int pointing = 0, bad = 0, n;
	bool fine;

	cable = KEEP;
	nkept = 0;
	if (!tap_ok(ring_up(2), "2 devices, rank 0 %s mid-collective: every port UP", what)) {
		ring_down();
		cable = LEND;
		return;
	}
	prepare(&t, MAIA_COLL_ALL_REDUCE, MAIA_DTYPE_FP32, KEEP_COUNT, false);
	submit(&t, 0);
	t0 = now_ms();
	do {
		usleep(1000);
		pthread_mutex_lock(&count_lock);
		n = nkept;
		pthread_mutex_unlock(&count_lock);
	} while (n < 2 && now_ms() - t0 < HANG_GUARD_MS);
	unplug(0);
	unplug(1);
	if (how == DESTROY) {
		env_fini(&nodes[0].e);
		nodes[0].e.sim = NULL;
	} else if (how == RESET) {
		maia_sim_reset(nodes[0].e.sim);
	} else {
		/* The parked job is dropped; its operation goes at its device's next round. */
		wr(&nodes[0].e, MAIA_REG_Q(0, MAIA_Q_CTRL), 0);
		t0 = now_ms();
		while (kept_pointing() && now_ms() - t0 < HANG_GUARD_MS)
			usleep(1000);
	}
	/* Rank 0's step 0 only: its input's block 1, as kept_data_ok() has it. */
	fine = kept_ok(&t, NULL, &pointing, &bad);
	tap_ok(fine,
	       "2 devices, rank 0 %s with %u of its frames held: %u still pointing at its memory, "
	       "%u with other bytes than its input's", what, nkept, pointing, bad);
	ring_down();
	put_kept();
	tap_ok(fw_ref_records() == 0, "rank 0 %s, frames given back: no record left (%u)", what,
	       fw_ref_records());
	trial_free(&t);
	cable = LEND;
}

/* Node 0's port 1 frames received, as its last round published them. */
static uint64_t rx0(void)
{
	struct maia_sim_fabric_port_info info;

	return maia_sim_fabric_port_info(nodes[0].e.sim, 1, &info) ? 0 : info.rx_frames;
}

/*
 * Rank 0's queue destroyed while a frame of its collective is being read
 * (pinned, here by the test) with the peer's messages for it already
 * waiting in its receive queue: the operation is kept for its frames, but
 * its job is gone, so nothing of what it receives from then on lands in
 * the job's memory (rank 0's result buffer stays as it was).
 */
static void test_abandon_rx(void)
{
	struct trial t;
	struct fw_ref *pin = NULL;
	uint64_t t0, rx_before;
	unsigned int n, data, before = 0, changed = 0;
	const uint8_t *got;
	bool ok, gone = false;

	cable = KEEP;
	nkept = 0;
	if (!tap_ok(ring_up(2), "2 devices, rank 0's queue destroyed, a frame pinned: ports UP")) {
		ring_down();
		cable = LEND;
		return;
	}
	prepare(&t, MAIA_COLL_ALL_REDUCE, MAIA_DTYPE_FP32, KEEP_COUNT, false);
	pthread_mutex_lock(&park_lock);
	park_from1 = true;
	nparked = parked_data = 0;
	pthread_mutex_unlock(&park_lock);
	submit(&t, 0);
	submit(&t, 1);
	/* Rank 1's step-0 data for rank 0 parked, rank 0's frames kept pointing. */
	t0 = now_ms();
	do {
		usleep(1000);
		pthread_mutex_lock(&park_lock);
		data = parked_data;
		pthread_mutex_unlock(&park_lock);
		pthread_mutex_lock(&count_lock);
		for (unsigned int i = 0; i < nkept && !pin; i++)
			if (fw_ref_state(kept[i]) == 1)
				pin = fw_ref_pin(kept[i]);
		pthread_mutex_unlock(&count_lock);
	} while ((!data || !pin) && now_ms() - t0 < HANG_GUARD_MS);
	/* Rank 0's round stopped in its cable (its next send: a timeout's). */
	pthread_mutex_lock(&park_lock);
	block0 = true;
	blocked0 = false;
	while (!blocked0)
		pthread_cond_wait(&park_cond, &park_lock);
	park_from1 = false;
	n = nparked;
	pthread_mutex_unlock(&park_lock);
	rx_before = rx0();
	/* Waiting in rank 0's receive queue when its queue goes. */
	for (unsigned int i = 0; i < n; i++) {
		if (parked[i].lent) {
			maia_sim_fabric_rx_lent(nodes[0].e.sim, 1, parked[i].frame, parked[i].len,
						put_frame, (void *)parked[i].frame);
		} else {
			maia_sim_fabric_rx(nodes[0].e.sim, 1, parked[i].frame, parked[i].len);
			free((void *)parked[i].frame);
		}
	}
	wr(&nodes[0].e, MAIA_REG_Q(0, MAIA_Q_CTRL), 0);
	/* The worker drops the job (fw_fop_release_locked()): only then is it gone. */
	t0 = now_ms();
	while (!gone && now_ms() - t0 < HANG_GUARD_MS) {
		pthread_mutex_lock(&nodes[0].e.sim->lock);
		gone = !nodes[0].e.sim->queues[0].job.fop;
		pthread_mutex_unlock(&nodes[0].e.sim->lock);
		if (!gone)
			usleep(1000);
	}
	got = nodes[0].e.hbm + t.recv[0];
	for (size_t i = 0; i < t.recv_bytes[0]; i++)
		before += got[i] != 0xa5;
	ok = !before;
	pthread_mutex_lock(&park_lock);
	block0 = false;
	pthread_cond_broadcast(&park_cond);
	pthread_mutex_unlock(&park_lock);
	/* Every frame handed over taken by rank 0's link (published after its round). */
	t0 = now_ms();
	while (rx0() < rx_before + n && now_ms() - t0 < HANG_GUARD_MS)
		usleep(1000);
	for (size_t i = 0; i < t.recv_bytes[0]; i++)
		changed += got[i] != 0xa5;
	tap_ok(pin && data && gone && ok && !changed,
	       "2 devices, rank 0's queue destroyed with a frame pinned and %u of rank 1's frames "
	       "(%u of data) waiting: %u bytes of its result buffer written before, %u after",
	       n, data, before, changed);
	if (pin)
		fw_ref_unpin(pin);
	t0 = now_ms();
	while (kept_pointing() && now_ms() - t0 < HANG_GUARD_MS)
		usleep(1000);
	tap_ok(!kept_pointing(), "rank 0's queue destroyed, frame unpinned: none pointing");
	ring_down();
	put_kept();
	trial_free(&t);
	cable = LEND;
}

/* Fault injection on (fabric_drop_ppm): no lazy CRC, so no frame by reference; the same bits. */
static void test_drop_ppm(void)
{
	cable = LEND;
	env_fabric_drop_ppm = 1;
	if (tap_ok(ring_up(2), "2 devices, fault injection on (1 ppm): every port UP")) {
		run_shapes(2, "fault injection on");
		tap_ok(port_sum(true) == 0, "2 devices, fault injection on: %llu frames by reference",
		       (unsigned long long)port_sum(true));
	}
	env_fabric_drop_ppm = 0;
	ring_down();
}

int main(void)
{
	test_keep_done();
	test_keep_abort(RESET);
	test_keep_abort(DESTROY);
	test_keep_abort(QUEUE_DESTROY);
	test_abandon_rx();
	test_cables(2);
	test_cables(4);
	test_off(2);
	test_drop_ppm();
	return tap_done();
}
