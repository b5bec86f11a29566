// SPDX-License-Identifier: MIT
/*
 * The collective engine (fw_fabric_coll.c): 1 to 8 engines wired into a ring
 * by plain function calls. Each link is a bounded in-order queue of messages
 * (capacity 2..8, so back-pressure and refusal happen all the time); the
 * links are served in a seeded random interleaving and the ranks start at
 * random times, so chunks arrive before their collective. Every collective,
 * FP32 and BF16, SUM/MAX/MIN, counts 0, 1, odd, not multiples of the chunk,
 * a few MiB, in place, back to back; results are compared with a CPU
 * reference computed here in the order Documentation/hw/fabric.rst gives
 * ("Collectives"), with its own BF16 rounding: #wrong must be 0 (FP32
 * bitwise). Then bad fields, a rank that never starts, an MMU fault midway,
 * and malformed, stale and unexpected messages.
 */
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "../../../firmware-sim/src/fw_fabric_coll.h"
#include "../../../firmware-sim/src/fw_model.h"
#include "coll_ref.h"
#include "maia/hw/dtype.h"
#include "maia/hw/queue.h"
#include "tap.h"

#define MAX_RANKS	8	/* ranks a ring has room for */
#define MATRIX_RANKS	5	/* the matrix goes up to this many */
#define MAX_CMDS	4
#define SEND_VA		0x10000000ull
#define RECV_VA		0x80000000ull
#define REPORT_VA	0xf0000000ull	/* struct maia_coll_report */
#define MS		1000000ull
#define SEND_PORT	0u	/* ring convention: send on 0, receive on 1 */
#define RECV_PORT	1u
/* The ports the ring uses: the convention, or one cable (port 0 both ways) for two ranks. */
static unsigned int send_port = SEND_PORT, recv_port = RECV_PORT;

static uint64_t rng_state;
/* ring_init()'s engines price their hops on this chip (NULL: no modeled time). */
static const struct fw_chip *model_chip;
/* Each rank's modeled end (fw_coll.model_end_ns) of run_one()'s collective. */
static uint64_t model_end[MAX_RANKS];
/* run_one's inputs: ref_fill_special() (NaNs, +-0, ties...) instead of ref_fill(). */
static bool fill_special;

static uint64_t rng_next(void)
{
	uint64_t z = (rng_state += 0x9e3779b97f4a7c15ull);

	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
	return z ^ (z >> 31);
}

static unsigned int rng_below(unsigned int n)
{
	return (unsigned int)(rng_next() % n);
}



/* ---- a ring of engines ---- */

struct msg {
	size_t len;
	uint8_t *data;
};

struct link {
	struct msg q[8];
	unsigned int head, n, cap;
};

struct rank {
	unsigned int index;
	struct fw_coll eng;
	uint8_t *send, *recv;		/* recv == send: in place */
	struct maia_coll_report report;
	size_t send_len, recv_len;
	uint64_t fault_va;		/* an access touching [fault_va, +4096) faults; 0: none */
	unsigned int recv_writes;	/* mem_write() calls into recv (send, in place) */
	struct maia_cmd_collective cmd[MAX_CMDS];
	unsigned int ncmds, next;	/* next command to start */
	bool active;			/* cmd[next] started and not yet recorded */
	long start_at;			/* iteration to start cmd[next]; -1: never */
	uint32_t status[MAX_CMDS];
	struct fw_coll_result result[MAX_CMDS];
	bool ended[MAX_CMDS];
};

struct ring {
	unsigned int n;
	struct rank r[MAX_RANKS];
	struct link link[MAX_RANKS];	/* link[i]: rank i port 0 -> rank i + 1 port 1 */
	uint64_t now;
	unsigned int max_delay;
	bool mappable;			/* mem_map hands memory out (half the runs) */
};

static struct ring R;

static unsigned int cb_tx_room(void *opaque, unsigned int port)
{
	struct rank *k = opaque;
	struct link *l = &R.link[k->index];

	return port == send_port ? l->cap - l->n : 0;
}

static int cb_tx(void *opaque, unsigned int port, const void *m, size_t len)
{
	struct rank *k = opaque;
	struct link *l = &R.link[k->index];
	struct msg *s;

	if (port != send_port || l->n == l->cap)
		return -1;	/* the engine must not send without room */
	s = &l->q[(l->head + l->n) % 8];
	s->data = malloc(len);
	memcpy(s->data, m, len);
	s->len = len;
	l->n++;
	return 0;
}

static uint8_t *mem_at(struct rank *k, uint64_t va, size_t len)
{
	if (k->fault_va && va < k->fault_va + 4096 && k->fault_va < va + len)
		return NULL;
	if (va >= SEND_VA && va + len <= SEND_VA + k->send_len)
		return k->send + (va - SEND_VA);
	if (va >= RECV_VA && va + len <= RECV_VA + k->recv_len)
		return k->recv + (va - RECV_VA);
	if (va >= REPORT_VA && va + len <= REPORT_VA + sizeof(k->report))
		return (uint8_t *)&k->report + (va - REPORT_VA);
	return NULL;
}

static int cb_read(void *opaque, uint64_t va, void *buf, size_t len)
{
	uint8_t *p = mem_at(opaque, va, len);

	if (!p)
		return -EFAULT;
	memcpy(buf, p, len);
	return 0;
}

static int cb_write(void *opaque, uint64_t va, const void *buf, size_t len)
{
	struct rank *k = opaque;
	uint8_t *p = mem_at(k, va, len);

	if (!p)
		return -EFAULT;
	if (p >= k->recv && p < k->recv + k->recv_len)
		k->recv_writes++;
	memcpy(p, buf, len);
	return 0;
}

/* As device memory in place would be; NULL (copy through cb_read) otherwise. */
static const void *cb_map(void *opaque, uint64_t va, size_t len)
{
	return R.mappable ? mem_at(opaque, va, len) : NULL;
}

static void *cb_map_write(void *opaque, uint64_t va, size_t len)
{
	return R.mappable ? mem_at(opaque, va, len) : NULL;
}

static const struct fw_coll_ops ops = {
	.tx_room = cb_tx_room,
	.tx = cb_tx,
	.mem_read = cb_read,
	.mem_write = cb_write,
	.mem_map = cb_map,
	.mem_map_write = cb_map_write,
};

static void ring_init(unsigned int n, unsigned int early_msgs)
{
	struct fw_coll_config cfg;

	memset(&R, 0, sizeof(R));
	R.n = n;
	R.now = 1000 * MS;
	R.max_delay = 40;
	R.mappable = rng_below(2);
	fw_coll_config_defaults(&cfg);
	cfg.nports = 2;
	cfg.early_msgs = early_msgs;
	cfg.model_chip = model_chip;
	for (unsigned int i = 0; i < n; i++) {
		R.r[i].index = i;
		R.link[i].cap = 2 + rng_below(7);
		if (fw_coll_init(&R.r[i].eng, &cfg, &ops, &R.r[i]))
			abort();
	}
}

static void link_pop(struct link *l)
{
	free(l->q[l->head].data);
	l->head = (l->head + 1) % 8;
	l->n--;
}

static unsigned int ring_leftover(void)
{
	unsigned int left = 0;

	for (unsigned int i = 0; i < R.n; i++) {
		left += R.link[i].n + R.r[i].eng.early_n;
		while (R.link[i].n)
			link_pop(&R.link[i]);
	}
	return left;
}

static void ring_fini(void)
{
	ring_leftover();
	for (unsigned int i = 0; i < R.n; i++) {
		fw_coll_destroy(&R.r[i].eng);
		if (R.r[i].recv != R.r[i].send)
			free(R.r[i].recv);
		free(R.r[i].send);
	}
}

static void record_end(struct rank *k)
{
	unsigned int c = k->next;

	k->ended[c] = true;
	k->result[c] = k->eng.result;
	k->status[c] = k->eng.result.status;
	k->next++;
	k->start_at = k->next < k->ncmds ? -2 : -1;	/* -2: schedule after a delay */
}

static void try_start(struct rank *k, long iter)
{
	if (k->start_at == -2)
		k->start_at = iter + rng_below(R.max_delay);
	if (k->start_at < 0 || iter < k->start_at || k->next >= k->ncmds)
		return;
	k->start_at = -1;
	if (fw_coll_start(&k->eng, &k->cmd[k->next], R.now) != 0)
		record_end(k);
	else
		k->active = true;
}

static bool ring_busy(void)
{
	for (unsigned int i = 0; i < R.n; i++)
		if (R.r[i].active || (R.r[i].next < R.r[i].ncmds && R.r[i].start_at != -1))
			return true;
	return false;
}

/* Runs until every rank has ended every command it starts. Returns the iterations. */
static long ring_run(void)
{
	unsigned int order[MAX_RANKS];
	long iter;

	for (iter = 0; ring_busy() && iter < 50000000; iter++) {
		bool moved = false;

		for (unsigned int i = 0; i < R.n; i++) {
			order[i] = i;
			try_start(&R.r[i], iter);
		}
		for (unsigned int i = R.n; i > 1; i--) {
			unsigned int j = rng_below(i), t = order[i - 1];

			order[i - 1] = order[j];
			order[j] = t;
		}
		for (unsigned int i = 0; i < R.n; i++) {
			struct link *l = &R.link[order[i]];
			struct rank *dst = &R.r[(order[i] + 1) % R.n];
			unsigned int burst = 1 + rng_below(4);

			while (l->n && burst--) {
				struct msg *m = &l->q[l->head];

				if (fw_coll_rx(&dst->eng, recv_port, m->data, m->len, R.now))
					break;
				link_pop(l);
				moved = true;
			}
		}
		for (unsigned int i = 0; i < R.n; i++) {
			struct rank *k = &R.r[order[i]];

			fw_coll_poll(&k->eng, R.now);
			/* It may also have ended inside fw_coll_rx(). */
			if (k->active && !fw_coll_running(&k->eng)) {
				k->active = false;
				record_end(k);
			}
		}
		R.now += moved ? 1000 : MS;
	}
	return iter;
}


static const char *coll_name[] = { "?", "all-reduce", "all-gather", "reduce-scatter",
				   "broadcast", "all-to-all" };

/* The algo field of the commands make_cmd() makes. */
static unsigned int cmd_algo = MAIA_COLL_ALGO_AUTO;

static struct maia_cmd_collective make_cmd(unsigned int coll, unsigned int dtype,
					   unsigned int redop, unsigned int n, unsigned int r,
					   uint64_t count, uint32_t chunk, bool in_place,
					   uint32_t seq)
{
	struct maia_cmd_collective k = {
		.hdr = { .opcode = MAIA_OP_COLLECTIVE, .size = sizeof(k) },
		.coll = (uint8_t)coll,
		.redop = (uint8_t)redop,
		.dtype = (uint8_t)dtype,
		.send_port = (uint8_t)send_port,
		.recv_port = (uint8_t)recv_port,
		.root = (uint16_t)(n > 1 ? (seq * 7u + 1u) % n : 0),
		.rank = (uint16_t)r,
		.nranks = (uint16_t)n,
		.comm_id = 0xc0ffee,
		.seq = seq,
		.chunk_bytes = chunk,
		.timeout_ms = 50,
		.send_addr = SEND_VA,
		.recv_addr = in_place ? SEND_VA : RECV_VA,
		.report_addr = REPORT_VA,
		.count = count,
		.algo = (uint8_t)cmd_algo,
	};
	return k;
}


/*
 * One collective on n ranks: random inputs, staggered starts; returns the
 * number of wrong elements, or -1 if a rank did not end OK or its report
 * (struct maia_coll_report) is off: OK, no port, and every byte a rank sent
 * reported as received by the next.
 */
static long run_one(unsigned int n, unsigned int coll, unsigned int dtype, unsigned int redop,
		    uint64_t count, uint32_t chunk, bool in_place)
{
	unsigned int es = maia_dtype_size(dtype);
	uint8_t *in[MAX_RANKS];
	uint64_t sent = 0, received = 0;
	long wrong = 0;
	bool ok = true;

	ring_init(n, 2 + rng_below(6));
	for (unsigned int r = 0; r < n; r++) {
		struct rank *k = &R.r[r];
		size_t s, rv;

		k->cmd[0] = make_cmd(coll, dtype, redop, n, r, count, chunk, in_place, 1);
		k->ncmds = 1;
		k->start_at = rng_below(R.max_delay);
		ref_buf_sizes(&k->cmd[0], &s, &rv);
		k->send_len = s;
		k->recv_len = rv;
		k->send = malloc(s ? s : 1);
		(fill_special ? ref_fill_special : ref_fill)(k->send, s / es, dtype, &rng_state);
		in[r] = malloc(s ? s : 1);
		memcpy(in[r], k->send, s);
		if (in_place) {
			k->recv = k->send;
		} else {
			k->recv = malloc(rv ? rv : 1);
			memset(k->recv, 0xa5, rv);
		}
	}
	ring_run();
	for (unsigned int r = 0; r < n; r++) {
		struct rank *k = &R.r[r];
		uint8_t *exp = malloc(k->recv_len ? k->recv_len : 1);

		if (!k->ended[0] || k->status[0] != MAIA_STATUS_OK) {
			ok = false;
			tap_ok(0, "%s n=%u rank %u count %llu: ended %d status %u step %u",
			       coll_name[coll], n, r, (unsigned long long)count, k->ended[0],
			       k->status[0], k->result[0].step);
		}
		if (k->report.status != MAIA_STATUS_OK || k->report.port != 0xffffffffu) {
			ok = false;
			tap_ok(0, "%s n=%u rank %u: report status %u port %#x", coll_name[coll], n,
			       r, k->report.status, k->report.port);
		}
		if (coll == MAIA_COLL_ALL_REDUCE && n > 1 && count) {
			/*
			 * Gather-reduce (one step: a stream of n-1 whole inputs) for
			 * small counts, else the ring (2n-2 steps).
			 */
			bool gather = cmd_algo == MAIA_COLL_ALGO_GATHER_REDUCE ||
				      (cmd_algo == MAIA_COLL_ALGO_AUTO &&
				       count * n * 4 <= MAIA_COLL_GATHER_REDUCE_BYTES);
			unsigned int last = gather ? 0 : 2 * n - 3;

			if (k->report.step != last ||
			    (gather && k->report.bytes_sent != (n - 1) * count * es)) {
				ok = false;
				tap_ok(0, "all-reduce n=%u rank %u count %llu: last step %u (want %u), %llu bytes sent",
				       n, r, (unsigned long long)count, k->report.step, last,
				       (unsigned long long)k->report.bytes_sent);
			}
		}
		sent += k->report.bytes_sent;
		received += k->report.bytes_received;
		model_end[r] = k->eng.model_end_ns;
		ref_expected(in, r, &k->cmd[0], exp);
		for (size_t i = 0; i < k->recv_len / es; i++)
			if (memcmp(exp + i * es, k->recv + i * es, es)) {
				if (getenv("FABRIC_COLL_VERBOSE"))
					printf("# %s n=%u rank %u count %llu chunk %u: element %zu wrong\n",
					       coll_name[coll], n, r, (unsigned long long)count, chunk, i);
				wrong++;
			}
		free(exp);
	}
	for (unsigned int r = 0; r < n; r++)
		free(in[r]);
	if (sent != received || (n > 1 && count && !sent)) {
		tap_ok(0, "%s n=%u: reports: %llu bytes sent, %llu received", coll_name[coll], n,
		       (unsigned long long)sent, (unsigned long long)received);
		ok = false;
	}
	if (ring_leftover()) {
		tap_ok(0, "%s n=%u: messages left over", coll_name[coll], n);
		ok = false;
	}
	ring_fini();
	return ok ? wrong : -1;
}

/* One case of the matrix: n ranks, a collective, its dtype, op, count and chunk. */
static void matrix_case(unsigned int n, unsigned int coll, unsigned int dtype, unsigned int op,
			unsigned int ci, long *wrong, long *runs, bool *failed)
{
	/* 0, 1, odd, not a multiple of the chunk; chunks of 4 B to the device default (60 KiB) */
	static const uint64_t counts[] = { 0, 1, 17, 197, 1001, 3001 };
	static const uint32_t chunks[] = { 4, 64, 4, 64, 200, 0, 256, 200 };
	uint64_t count;
	bool in_place = (coll == MAIA_COLL_ALL_REDUCE || coll == MAIA_COLL_BROADCAST) && (ci & 1);
	long w;

	if (ci < 6)
		count = counts[ci];
	else	/* all-reduce: the largest count gather-reduce takes, the least it does not */
		count = MAIA_COLL_GATHER_REDUCE_BYTES / 4 / n + (ci - 6);
	w = run_one(n, coll, dtype, op, count, chunks[ci], in_place);
	(*runs)++;
	if (w < 0)
		*failed = true;
	else
		*wrong += w;
}

/*
 * Every collective, dtype and op over 1 to 5 ranks; all-reduce also on both
 * sides of gather-reduce's size limit and with either algorithm asked for: the same
 * reference, so the same bits whichever algorithm runs.
 */
static void test_matrix(void)
{
	static const char *const algo_asked[] = { "", " (ring asked for)",
						   " (gather-reduce asked for)" };

	for (unsigned int n = 1; n <= MATRIX_RANKS; n++) {
		for (unsigned int coll = 1; coll <= 5; coll++) {
			bool ar = coll == MAIA_COLL_ALL_REDUCE;
			bool reduces = ar || coll == MAIA_COLL_REDUCE_SCATTER;

			for (unsigned int a = 0; a < (ar ? 3u : 1u); a++) {
				for (unsigned int dt = 0; dt < 2; dt++) {
					long wrong = 0, runs = 0;
					bool failed = false;

					/* AUTO, RING, GATHER_REDUCE: all but the count it does not take */
					cmd_algo = a;
					for (unsigned int op = 0; op < (reduces ? 3u : 1u); op++)
						for (unsigned int ci = 0; ci < (ar ? 8u - a / 2 : 6u); ci++)
							matrix_case(n, coll, dt ? MAIA_DTYPE_BF16 :
								    MAIA_DTYPE_FP32, op, ci, &wrong,
								    &runs, &failed);
					tap_ok(!failed && wrong == 0,
					       "%s%s n=%u %s: %ld runs (counts 0..3001%s, chunks 4 B..60 KiB, in place), #wrong = %ld",
					       coll_name[coll], algo_asked[a], n,
					       dt ? "bf16" : "fp32", runs,
					       ar ? " and both sides of gather-reduce's limit" : "", wrong);
				}
			}
			cmd_algo = MAIA_COLL_ALGO_AUTO;
		}
	}
}

static void test_large(void)
{
	struct {
		unsigned int n, coll, dtype;
		uint64_t count;
	} t[] = {
		{ 4, MAIA_COLL_ALL_REDUCE, MAIA_DTYPE_FP32, (3u << 19) + 3 },	/* 6 MiB */
		{ 3, MAIA_COLL_ALL_REDUCE, MAIA_DTYPE_BF16, (1u << 20) + 1 },	/* 2 MiB */
		{ 5, MAIA_COLL_REDUCE_SCATTER, MAIA_DTYPE_FP32, (1u << 18) + 7 },
		{ 4, MAIA_COLL_ALL_GATHER, MAIA_DTYPE_BF16, (1u << 19) + 3 },
		{ 3, MAIA_COLL_BROADCAST, MAIA_DTYPE_FP32, (1u << 20) + 5 },
		{ 4, MAIA_COLL_ALL_TO_ALL, MAIA_DTYPE_FP32, (1u << 17) + 9 },
	};

	for (unsigned int i = 0; i < sizeof(t) / sizeof(t[0]); i++) {
		long w = run_one(t[i].n, t[i].coll, t[i].dtype, MAIA_REDOP_SUM, t[i].count, 0,
				 t[i].coll == MAIA_COLL_ALL_REDUCE);

		tap_ok(w == 0, "%s n=%u %s count %llu (%.1f MiB per rank), 60 KiB chunks: #wrong = %ld",
		       coll_name[t[i].coll], t[i].n, t[i].dtype ? "bf16" : "fp32",
		       (unsigned long long)t[i].count,
		       (double)t[i].count * maia_dtype_size(t[i].dtype) / (1 << 20), w);
	}
}

/*
 * MAX and MIN on inputs that mix quiet NaNs (random payloads and signs),
 * +0 and -0, infinities, denormals and values tied across ranks, bitwise
 * against the reference (NaN payloads included). Counts and chunks leave
 * partial vectors: 17 elements a chunk, 1 and 50, and 67 in all.
 */
static void test_minmax_special(void)
{
	static const uint64_t counts[] = { 1, 67, 1001, 3001 };
	static const uint32_t chunks[] = { 4, 68, 200, 0 };

	fill_special = true;
	for (unsigned int n = 2; n <= MATRIX_RANKS; n++) {
		for (unsigned int coll = MAIA_COLL_ALL_REDUCE; coll <= MAIA_COLL_REDUCE_SCATTER;
		     coll += MAIA_COLL_REDUCE_SCATTER - MAIA_COLL_ALL_REDUCE) {
			for (unsigned int dt = 0; dt < 2; dt++) {
				unsigned int dtype = dt ? MAIA_DTYPE_BF16 : MAIA_DTYPE_FP32;
				long wrong = 0, runs = 0;
				bool failed = false;

				for (unsigned int op = MAIA_REDOP_MAX; op <= MAIA_REDOP_MIN; op++) {
					/* All-reduce: gather-reduce at these counts, and the ring asked for. */
					for (unsigned int k = 0; k < (coll == MAIA_COLL_ALL_REDUCE ? 8u : 4u);
					     k++) {
						unsigned int ci = k % 4;
						long w;

						cmd_algo = k < 4 ? MAIA_COLL_ALGO_AUTO : MAIA_COLL_ALGO_RING;
						w = run_one(n, coll, dtype, op, counts[ci], chunks[ci],
							    coll == MAIA_COLL_ALL_REDUCE && (ci & 1));
						runs++;
						if (w < 0)
							failed = true;
						else
							wrong += w;
					}
					cmd_algo = MAIA_COLL_ALGO_AUTO;
				}
				tap_ok(!failed && wrong == 0,
				       "%s n=%u %s MAX/MIN with NaNs, +-0, infinities, denormals, ties%s: %ld runs, #wrong = %ld (bitwise)",
				       coll_name[coll], n, dt ? "bf16" : "fp32",
				       coll == MAIA_COLL_ALL_REDUCE ? " (gather-reduce and ring)" : "", runs,
				       wrong);
			}
		}
	}
	fill_special = false;
}

/*
 * acc op x under a rule the documentation does not give: 1, NaN ignored
 * (what the reference did before); 2, the right NaN first; 3, the right
 * operand on ties.
 */
static float other_rule(unsigned int op, unsigned int rule, float acc, float x)
{
	bool nan = isnan(acc) || isnan(x);

	if (rule == 1 || (rule == 3 && !nan))
		return op == MAIA_REDOP_MAX ? (x > acc || (rule == 3 && x == acc) ? x : acc)
					    : (x < acc || (rule == 3 && x == acc) ? x : acc);
	if (rule == 2 && isnan(x))
		return x;
	return ref_op(op, acc, x);
}

/* test_minmax_special's inputs tell the documented rules from the others. */
static void test_minmax_rules_matter(void)
{
	unsigned int n = 4;
	uint64_t count = 4096, total = 0, differ[4] = { 0 };
	uint8_t *in[4];

	for (unsigned int dt = 0; dt < 2; dt++) {
		unsigned int dtype = dt ? MAIA_DTYPE_BF16 : MAIA_DTYPE_FP32;
		unsigned int es = maia_dtype_size(dtype);

		for (unsigned int r = 0; r < n; r++) {
			in[r] = malloc(count * es);
			ref_fill_special(in[r], count, dtype, &rng_state);
		}
		for (unsigned int op = MAIA_REDOP_MAX; op <= MAIA_REDOP_MIN; op++) {
			struct maia_cmd_collective k = make_cmd(MAIA_COLL_ALL_REDUCE, dtype, op, n, 0,
								count, 0, false, 1);

			for (uint64_t i = 0; i < count; i++) {
				uint8_t doc[4], other[4];

				ref_reduce(in, i, 0, &k, doc);
				for (unsigned int rule = 1; rule <= 3; rule++) {
					float acc = ref_ld(in[0], i, dtype);
					uint16_t h;

					for (unsigned int r = 1; r < n; r++)
						acc = other_rule(op, rule, acc, ref_ld(in[r], i, dtype));
					h = ref_f32_to_bf16(acc);
					memcpy(other, dt ? (void *)&h : (void *)&acc, es);
					differ[rule] += memcmp(doc, other, es) != 0;
				}
				total++;
			}
		}
		for (unsigned int r = 0; r < n; r++)
			free(in[r]);
	}
	tap_ok(differ[1] && differ[2] && differ[3],
	       "MAX/MIN special inputs tell the documented rules apart in %llu folds: NaN ignored differs in %llu, right NaN first in %llu, right operand on ties in %llu (the check can fail)",
	       (unsigned long long)total, (unsigned long long)differ[1],
	       (unsigned long long)differ[2], (unsigned long long)differ[3]);
}

/* The reference is order-sensitive: summing in rank order instead gives other bits. */
static void test_order_matters(void)
{
	unsigned int n = 4;
	uint64_t count = 4096, differ = 0;
	uint8_t *in[4], out[4];
	struct maia_cmd_collective k = make_cmd(MAIA_COLL_ALL_REDUCE, MAIA_DTYPE_FP32,
						MAIA_REDOP_SUM, n, 0, count, 0, false, 1);

	for (unsigned int r = 0; r < n; r++) {
		in[r] = malloc(count * 4);
		ref_fill(in[r], count, MAIA_DTYPE_FP32, &rng_state);
	}
	for (uint64_t i = 0; i < count; i++) {
		float natural = 0;

		for (unsigned int r = 0; r < n; r++)
			natural += ref_ld(in[r], i, MAIA_DTYPE_FP32);
		ref_reduce(in, i, (unsigned int)(i / (count / n)) + 1, &k, out);
		differ += memcmp(out, &natural, 4) != 0;
	}
	for (unsigned int r = 0; r < n; r++)
		free(in[r]);
	tap_ok(differ > 0, "the documented order differs from rank order in %llu of %llu sums (the check can fail)",
	       (unsigned long long)differ, (unsigned long long)count);
}

/* Three collectives back to back per rank, starts staggered: chunks of the next arrive early. */
static void test_back_to_back(void)
{
	unsigned int n = 4;
	long wrong = 0;
	bool ok = true;

	ring_init(n, 3);
	R.max_delay = 400;
	for (unsigned int r = 0; r < n; r++) {
		struct rank *k = &R.r[r];

		k->send_len = k->recv_len = 4 * 999;
		k->send = malloc(k->send_len);
		k->recv = malloc(k->recv_len);
		for (unsigned int c = 0; c < 3; c++) {
			k->cmd[c] = make_cmd(MAIA_COLL_ALL_REDUCE, MAIA_DTYPE_FP32, MAIA_REDOP_SUM,
					     n, r, 999, 256, true, 10 + c);
			/* Idle rounds advance the clock 1 ms: wait out the late rank. */
			k->cmd[c].timeout_ms = 10000;
		}
		k->ncmds = 3;
		k->start_at = r == 2 ? 300 : 0;	/* one rank late: its peers run ahead */
		ref_fill(k->send, 999, MAIA_DTYPE_FP32, &rng_state);
	}
	{
		/* In place three times: the expected result is the sum of sums. */
		uint8_t *in[4], *exp[4];

		for (unsigned int r = 0; r < n; r++) {
			in[r] = malloc(4 * 999);
			exp[r] = malloc(4 * 999);
			memcpy(in[r], R.r[r].send, 4 * 999);
		}
		for (unsigned int c = 0; c < 3; c++) {
			for (unsigned int r = 0; r < n; r++)
				ref_expected(in, r, &R.r[r].cmd[c], exp[r]);
			for (unsigned int r = 0; r < n; r++)
				memcpy(in[r], exp[r], 4 * 999);
		}
		ring_run();
		for (unsigned int r = 0; r < n; r++) {
			for (unsigned int c = 0; c < 3; c++)
				ok &= R.r[r].ended[c] && R.r[r].status[c] == MAIA_STATUS_OK;
			for (unsigned int i = 0; i < 999; i++)
				wrong += memcmp(exp[r] + 4 * i, R.r[r].send + 4 * i, 4) != 0;
			free(in[r]);
			free(exp[r]);
		}
	}
	tap_ok(ok && wrong == 0 && !ring_leftover(),
	       "3 all-reduces back to back, one rank 300 rounds late: all OK, #wrong = %ld, early peak %llu, refused %llu",
	       wrong, (unsigned long long)R.r[2].eng.stats.early_peak,
	       (unsigned long long)R.r[2].eng.stats.refused);
	ring_fini();
}

static void test_bad_fields(void)
{
	struct fw_coll_config cfg;
	struct fw_coll e;
	struct rank k;
	struct maia_cmd_collective base, b;
	unsigned int bad = 0, total = 0;

	memset(&k, 0, sizeof(k));
	memset(&R, 0, sizeof(R));
	R.link[0].cap = 8;
	fw_coll_config_defaults(&cfg);
	cfg.nports = 2;
	fw_coll_init(&e, &cfg, &ops, &k);
	base = make_cmd(MAIA_COLL_ALL_GATHER, MAIA_DTYPE_FP32, 0, 4, 1, 16, 0, false, 1);

#define BAD(field_change)						\
	do {								\
		b = base;						\
		field_change;						\
		total++;						\
		if (fw_coll_start(&e, &b, 0) == MAIA_STATUS_BAD_CMD &&	\
		    e.result.status == MAIA_STATUS_BAD_CMD && !R.link[0].n)	\
			bad++;						\
		else							\
			tap_ok(0, "not refused: %s", #field_change);	\
	} while (0)

	BAD(b.coll = 0);
	BAD(b.coll = 6);
	BAD((b.coll = MAIA_COLL_ALL_REDUCE, b.redop = 3));
	BAD(b.dtype = MAIA_DTYPE_FP16);
	BAD(b.dtype = MAIA_DTYPE_MXFP4_E2M1);
	BAD(b.nranks = 0);
	BAD((b.nranks = MAIA_COLL_MAX_RANKS + 1, b.rank = 0));
	BAD(b.rank = 4);
	BAD((b.coll = MAIA_COLL_BROADCAST, b.root = 4));
	BAD(b.send_port = 2);
	BAD(b.recv_port = 200);
	BAD(b.chunk_bytes = 2);
	BAD(b.chunk_bytes = 6);
	BAD(b.chunk_bytes = MAIA_FABRIC_MSG_MAX_DATA + 4);
	BAD(b.count = 1ull << 62);
	BAD((b.coll = MAIA_COLL_ALL_TO_ALL, b.count = (1ull << 62) / 3));
	BAD(b.send_addr = ~0ull - 8);
	BAD(b.recv_addr = ~0ull - 100);
	BAD(b.recv_addr = b.send_addr);			/* in place: all-gather */
	BAD(b.recv_addr = b.send_addr + 8);		/* overlap */
	BAD((b.coll = MAIA_COLL_ALL_REDUCE, b.recv_addr = b.send_addr + 4));
	BAD(b.algo = MAIA_COLL_ALGO_GATHER_REDUCE + 1);
	BAD((b.algo = MAIA_COLL_ALGO_GATHER_REDUCE, b.coll = MAIA_COLL_ALL_GATHER));
	BAD((b.algo = MAIA_COLL_ALGO_GATHER_REDUCE, b.coll = MAIA_COLL_ALL_REDUCE,
	     b.count = MAIA_COLL_GATHER_REDUCE_BYTES / 16 + 1));	/* 4 ranks: too large */
	BAD(b.reserved1 = 1);
	BAD(b.hdr.flags = 2);	/* MAIA_COLL_F_REACH (1) is valid since 1.10 */
	BAD(b.report_addr = 4);
	BAD(b.report_addr = ~0ull - 8);
#undef BAD
	tap_ok(bad == total, "%u of %u invalid commands end with BAD_CMD and send nothing", bad,
	       total);
	fw_coll_destroy(&e);
}

/* Rank `dead` never starts: the others time out naming the step they wait for. */
/* Zeroed send and receive buffers of the sizes of a rank's first command. */
static void zero_buffers(struct rank *k)
{
	size_t s, rv;

	ref_buf_sizes(&k->cmd[0], &s, &rv);
	k->send_len = s;
	k->recv_len = rv;
	k->send = calloc(1, s);
	k->recv = calloc(1, rv);
}

/*
 * Ranks that disagree on the algorithm (rank 0 asks for the ring, rank 1
 * for gather-reduce): a BF16 all-reduce of an even count, where the ring's
 * step 0 (FP32 partials of half the count) is exactly as long as
 * gather-reduce's (BF16 inputs of the whole count). Both must fail by
 * timeout, neither may end OK on the other's bytes.
 */
static void test_algo_mismatch(void)
{
	bool ok = true;

	ring_init(2, 4);
	for (unsigned int r = 0; r < 2; r++) {
		struct rank *k = &R.r[r];

		k->cmd[0] = make_cmd(MAIA_COLL_ALL_REDUCE, MAIA_DTYPE_BF16, MAIA_REDOP_SUM, 2, r,
				     1000, 0, false, 1);
		k->cmd[0].algo = r ? MAIA_COLL_ALGO_GATHER_REDUCE : MAIA_COLL_ALGO_RING;
		k->ncmds = 1;
		k->start_at = 0;
		zero_buffers(k);
	}
	ring_run();
	for (unsigned int r = 0; r < 2; r++)
		ok &= R.r[r].ended[0] && R.r[r].status[0] == MAIA_STATUS_FABRIC_TIMEOUT;
	tap_ok(ok, "all-reduce, rank 0 ring and rank 1 gather-reduce: both time out (status %u, %u), "
	       "%llu chunks refused as the other algorithm's", R.r[0].status[0], R.r[1].status[0],
	       (unsigned long long)(R.r[0].eng.stats.drop_unexpected +
				    R.r[1].eng.stats.drop_unexpected));
	ring_fini();
}

/*
 * Injection leaves half of the room to forwards: on a link with room for
 * 8, rank 0 alone injects 4 of its 10 step-0 chunks and stops; rank 1's
 * first chunk then arrives and is reduced and forwarded at once, not held.
 * Then the collective runs to its end, correct.
 */
static void test_inject_leaves_room(void)
{
	uint64_t count = 10 * 1024, held;
	unsigned int queued;
	bool ok;

	ring_init(2, 4);
	for (unsigned int r = 0; r < 2; r++) {
		struct rank *k = &R.r[r];

		R.link[r].cap = 8;
		k->cmd[0] = make_cmd(MAIA_COLL_ALL_REDUCE, MAIA_DTYPE_FP32, MAIA_REDOP_SUM, 2, r,
				     2 * count, 4096, false, 1);
		k->cmd[0].algo = MAIA_COLL_ALGO_RING;
		k->ncmds = 1;
		k->start_at = -1;	/* started here, not by ring_run() */
		zero_buffers(k);
		for (uint64_t i = 0; i < 2 * count; i++)
			((float *)k->send)[i] = (float)(i % 97 + r);
	}
	ok = fw_coll_start(&R.r[0].eng, &R.r[0].cmd[0], R.now) == 0;
	R.r[0].active = true;
	queued = R.link[0].n;
	ok &= fw_coll_start(&R.r[1].eng, &R.r[1].cmd[0], R.now) == 0;
	R.r[1].active = true;
	/* Rank 1's first chunk to rank 0: reduced, and forwarded as step 1. */
	ok &= fw_coll_rx(&R.r[0].eng, recv_port, R.link[1].q[R.link[1].head].data,
			 R.link[1].q[R.link[1].head].len, R.now) == 0;
	link_pop(&R.link[1]);
	held = R.r[0].eng.early_n;
	tap_ok(ok && queued == 4 && held == 0 && R.link[0].n == 5,
	       "room for 8 on the link: rank 0 injects %u of its 10 chunks, then forwards the chunk "
	       "it reduced at once (%llu held, %u queued)", queued, (unsigned long long)held,
	       R.link[0].n);
	ring_run();
	ok = true;
	for (unsigned int r = 0; r < 2; r++)
		for (uint64_t i = 0; i < 2 * count; i++)
			ok &= ((float *)R.r[r].recv)[i] == (float)(2 * (i % 97) + 1);
	tap_ok(ok && R.r[0].status[0] == MAIA_STATUS_OK && R.r[1].status[0] == MAIA_STATUS_OK,
	       "and the all-reduce ends OK on both ranks, every element right");
	ring_fini();
}

static void test_never_starts(unsigned int n, unsigned int coll, unsigned int dead)
{
	unsigned int next = (dead + 1) % n;
	bool ok = true;

	ring_init(n, 4);
	for (unsigned int r = 0; r < n; r++) {
		struct rank *k = &R.r[r];

		k->cmd[0] = make_cmd(coll, MAIA_DTYPE_FP32, MAIA_REDOP_SUM, n, r, 50000, 4096,
				     false, 1);
		k->cmd[0].root = (uint16_t)dead;
		k->ncmds = r == dead ? 0 : 1;
		k->start_at = r == dead ? -1 : 0;
		zero_buffers(k);
	}
	ring_run();
	for (unsigned int r = 0; r < n; r++) {
		if (r == dead)
			continue;
		ok &= R.r[r].ended[0] && R.r[r].status[0] == MAIA_STATUS_FABRIC_TIMEOUT;
	}
	/* The dead rank's successor waits on the very first step it receives. */
	ok &= !R.r[next].result[0].sending && R.r[next].result[0].peer == dead &&
	      R.r[next].result[0].port == RECV_PORT &&
	      R.r[next].result[0].step == 0;
	/* The same in the report the device writes. */
	ok &= R.r[next].report.status == MAIA_STATUS_FABRIC_TIMEOUT &&
	      R.r[next].report.step == 0 && R.r[next].report.port == RECV_PORT &&
	      R.r[next].report.peer_rank == dead;
	tap_ok(ok, "%s n=%u, rank %u never starts: the others time out (FABRIC_TIMEOUT), rank %u names step %u, port %u, peer %u",
	       coll_name[coll], n, dead, next, R.r[next].result[0].step,
	       R.r[next].result[0].port, R.r[next].result[0].peer);
	ring_fini();
}

/* An MMU fault on one rank midway: it ends with MMU_FAULT, the others do not hang. */
static void test_fault(unsigned int coll, bool fault_recv)
{
	unsigned int n = 4, bad = 2, timeouts = 0, oks = 0;
	bool ok = true;

	ring_init(n, 4);
	for (unsigned int r = 0; r < n; r++) {
		struct rank *k = &R.r[r];

		k->cmd[0] = make_cmd(coll, MAIA_DTYPE_FP32, MAIA_REDOP_SUM, n, r, 100000, 4096,
				     false, 1);
		k->cmd[0].root = 0;
		k->ncmds = 1;
		zero_buffers(k);
		if (r == bad)
			k->fault_va = fault_recv ? RECV_VA + k->recv_len / 2 :
						   SEND_VA + k->send_len / 2;
	}
	ring_run();
	ok &= R.r[bad].ended[0] && R.r[bad].status[0] == MAIA_STATUS_MMU_FAULT;
	for (unsigned int r = 0; r < n; r++) {
		if (r == bad)
			continue;
		ok &= R.r[r].ended[0];
		timeouts += R.r[r].status[0] == MAIA_STATUS_FABRIC_TIMEOUT;
		oks += R.r[r].status[0] == MAIA_STATUS_OK;
	}
	ok &= timeouts + oks == n - 1 && timeouts > 0;
	tap_ok(ok, "%s n=4, fault in rank 2's %s buffer at step %u: MMU_FAULT there, %u peers time out, %u finish",
	       coll_name[coll], fault_recv ? "recv" : "send", R.r[bad].result[0].step, timeouts, oks);
	ring_fini();
}

/*
 * The same under gather-reduce (3000 elements on 4 ranks: each rank's whole
 * result written in one access at the end, fold_gathered()). A fault in
 * rank 2's recv buffer fails that write: MMU_FAULT there, and the others,
 * which had every input before it, finish OK. A fault in its send buffer
 * fails its first read: MMU_FAULT there, the others end (none hangs).
 */
static void test_fault_gather(bool fault_recv)
{
	unsigned int n = 4, bad = 2, oks = 0, ended = 0;
	const uint64_t count = 3000;
	bool ok;

	ring_init(n, 4);
	for (unsigned int r = 0; r < n; r++) {
		struct rank *k = &R.r[r];

		k->cmd[0] = make_cmd(MAIA_COLL_ALL_REDUCE, MAIA_DTYPE_FP32, MAIA_REDOP_SUM, n, r,
				     count, 0, false, 1);
		k->ncmds = 1;
		zero_buffers(k);
		if (r == bad)
			k->fault_va = fault_recv ? RECV_VA + k->recv_len / 2 :
						   SEND_VA + k->send_len / 2;
	}
	ok = maia_coll_gather_reduce(&R.r[0].cmd[0]);
	ring_run();
	ok &= R.r[bad].ended[0] && R.r[bad].status[0] == MAIA_STATUS_MMU_FAULT;
	for (unsigned int r = 0; r < n; r++) {
		if (r == bad)
			continue;
		ended += R.r[r].ended[0];
		oks += R.r[r].status[0] == MAIA_STATUS_OK;
	}
	ok &= ended == n - 1 && (!fault_recv || oks == n - 1);
	tap_ok(ok, "all-reduce by gather-reduce, n=4, %llu elements, fault in rank 2's %s buffer: "
	       "its status %u (want MMU_FAULT %u), %u peers ended, %u OK%s",
	       (unsigned long long)count, fault_recv ? "recv" : "send", R.r[bad].status[0],
	       MAIA_STATUS_MMU_FAULT, ended, oks, fault_recv ? " (want 3)" : "");
	ring_fini();
}

/* Malformed, stale and unexpected messages are counted and dropped. */
static void test_bad_messages(void)
{
	uint8_t m[MAIA_FABRIC_MSG_HDR_LEN + 64];
	struct maia_fabric_coll_msg h = {
		.type = MAIA_FMSG_COLL, .comm_id = 0xc0ffee, .seq = 0, .len = 64, .src_rank = 0,
	};
	struct fw_coll *e;
	long wrong;
	bool ok;

	/* A 2-rank all-reduce whose rank 1 already holds an earlier collective's chunks. */
	ring_init(2, 8);
	e = &R.r[1].eng;
	memset(m, 0, sizeof(m));
	memcpy(m, &h, sizeof(h));
	fw_coll_rx(e, RECV_PORT, m, sizeof(m), 0);	/* stale: seq 0 */
	fw_coll_rx(e, RECV_PORT, m, sizeof(m), 0);
	fw_coll_rx(e, RECV_PORT, m, 10, 0);		/* shorter than a header */
	fw_coll_rx(e, RECV_PORT, m, sizeof(m) - 1, 0);	/* len disagrees */
	m[0] = MAIA_FMSG_WRITE;
	fw_coll_rx(e, RECV_PORT, m, sizeof(m), 0);	/* not a COLL message */
	fw_coll_rx(e, 7, m, sizeof(m), 0);		/* no such port */
	ok = e->stats.drop_malformed == 4 && e->early_n == 2;
	ring_fini();

	/* run_one's ring is built fresh; repeat the setup by hand around ring_run. */
	ring_init(2, 8);
	e = &R.r[1].eng;
	m[0] = MAIA_FMSG_COLL;
	fw_coll_rx(e, RECV_PORT, m, sizeof(m), 0);
	for (unsigned int r = 0; r < 2; r++) {
		struct rank *k = &R.r[r];

		k->cmd[0] = make_cmd(MAIA_COLL_ALL_REDUCE, MAIA_DTYPE_FP32, MAIA_REDOP_SUM, 2, r,
				     1000, 256, false, 1);
		k->ncmds = 1;
		k->send_len = k->recv_len = 4000;
		k->send = calloc(1, 4000);
		k->recv = calloc(1, 4000);
		for (unsigned int i = 0; i < 1000; i++) {
			float f = (float)(i + r);

			memcpy(k->send + 4 * i, &f, 4);
		}
	}
	/* Rank 1 starts first: the stale chunk is dropped, then wrong ones arrive. */
	fw_coll_start(e, &R.r[1].cmd[0], R.now);
	R.r[1].start_at = -1;
	R.r[1].active = true;
	R.r[0].start_at = 0;
	h.seq = 1;
	h.offset = 64;		/* not the next offset */
	memcpy(m, &h, sizeof(h));
	fw_coll_rx(e, RECV_PORT, m, sizeof(m), R.now);
	h.offset = 0;
	h.src_rank = 1;		/* not rank - 1 */
	memcpy(m, &h, sizeof(h));
	fw_coll_rx(e, RECV_PORT, m, sizeof(m), R.now);
	h.src_rank = 0;
	h.step = 9;		/* no such step */
	memcpy(m, &h, sizeof(h));
	fw_coll_rx(e, RECV_PORT, m, sizeof(m), R.now);
	ok &= e->stats.drop_stale == 1 && e->stats.drop_unexpected == 3;
	ring_run();
	wrong = 0;
	for (unsigned int r = 0; r < 2; r++)
		for (unsigned int i = 0; i < 1000; i++) {
			float f;

			memcpy(&f, R.r[r].recv + 4 * i, 4);
			wrong += f != (float)(2 * i + 1);
		}
	ok &= R.r[0].status[0] == MAIA_STATUS_OK && wrong == 0;
	tap_ok(ok, "malformed (4), stale (%llu) and unexpected (%llu) messages dropped and counted; the collective still right (#wrong = %ld)",
	       (unsigned long long)e->stats.drop_stale,
	       (unsigned long long)e->stats.drop_unexpected, wrong);
	ring_fini();
}

/* fw_coll_abort(): a port going down ends the running collective, naming the step. */
static void test_abort(void)
{
	bool ok;

	ring_init(3, 4);
	for (unsigned int r = 0; r < 3; r++) {
		struct rank *k = &R.r[r];

		k->cmd[0] = make_cmd(MAIA_COLL_ALL_GATHER, MAIA_DTYPE_FP32, 0, 3, r, 1000, 256,
				     false, 1);
		ref_buf_sizes(&k->cmd[0], &k->send_len, &k->recv_len);
		k->send = calloc(1, k->send_len);
		k->recv = calloc(1, k->recv_len);
	}
	/* Rank 1 alone: it sends what the link takes and waits on step 0 from rank 0. */
	ok = fw_coll_start(&R.r[1].eng, &R.r[1].cmd[0], R.now) == 0;
	fw_coll_abort(&R.r[1].eng, MAIA_STATUS_FABRIC_LINK, R.now);
	ok &= R.r[1].eng.state == FW_COLL_DONE &&
	      R.r[1].eng.result.status == MAIA_STATUS_FABRIC_LINK &&
	      R.r[1].eng.result.step == 0 && R.r[1].eng.result.peer == 0 &&
	      R.r[1].eng.result.port == RECV_PORT && !R.r[1].eng.result.sending;
	tap_ok(ok, "abort: FABRIC_LINK, waiting on step %u, port %u, rank %u",
	       R.r[1].eng.result.step, R.r[1].eng.result.port, R.r[1].eng.result.peer);

	/* The send port down mid-way: the report names it and rank + 1. */
	ok = fw_coll_start(&R.r[2].eng, &R.r[2].cmd[0], R.now) == 0;
	fw_coll_fail_port(&R.r[2].eng, NULL, MAIA_STATUS_FABRIC_LINK, SEND_PORT);
	ok &= R.r[2].report.status == MAIA_STATUS_FABRIC_LINK && R.r[2].report.step == 0 &&
	      R.r[2].report.port == SEND_PORT && R.r[2].report.peer_rank == 0;
	/* A command that could not start (its port down): the same, step 0. */
	fw_coll_fail_port(&R.r[0].eng, &R.r[0].cmd[0], MAIA_STATUS_FABRIC_LINK, RECV_PORT);
	ok &= R.r[0].report.status == MAIA_STATUS_FABRIC_LINK && R.r[0].report.step == 0 &&
	      R.r[0].report.port == RECV_PORT && R.r[0].report.peer_rank == 2 &&
	      R.r[0].eng.state == FW_COLL_DONE;
	tap_ok(ok, "a port down: reports name it (send port: rank %u; never started, recv port: rank %u)",
	       R.r[2].report.peer_rank, R.r[0].report.peer_rank);
	ring_fini();
}

/* Two ranks on one cable: send_port == recv_port (cmd.h allows it). */
static void test_one_cable(void)
{
	long w1, w2;

	send_port = recv_port = 0;
	w1 = run_one(2, MAIA_COLL_ALL_REDUCE, MAIA_DTYPE_BF16, MAIA_REDOP_SUM, 5003, 256, false);
	w2 = run_one(2, MAIA_COLL_ALL_TO_ALL, MAIA_DTYPE_FP32, 0, 777, 0, false);
	send_port = SEND_PORT;
	recv_port = RECV_PORT;
	tap_ok(w1 == 0 && w2 == 0,
	       "2 ranks on one cable (port 0 both ways): all-reduce bf16 #wrong = %ld, all-to-all #wrong = %ld",
	       w1, w2);
}

/*
 * Gather-reduce's stream (Documentation/hw/fabric.rst, "Gather-reduce"):
 * ranks of 4 start one after the other, each after what its predecessor
 * sent has arrived (held). Each sends its own input and the inputs it
 * holds in one message, so rank 0 sends its own, then ranks 3's and 2's
 * inputs; rank 1 its own with rank 0's, then rank 3's; ranks 2 and 3 one
 * message of three inputs: 6 messages where one per input and hop made 12.
 * The results are the reference's, bit for bit (FP32 and BF16, in place),
 * each written in one access (2 elements: blocks of 1, 1, 0, 0 were two).
 */
static void test_gather_stream(unsigned int dtype, bool in_place)
{
	static const unsigned int want_msgs[4] = { 2, 2, 1, 1 };
	const unsigned int n = 4, es = maia_dtype_size(dtype);
	const uint64_t count = 2;
	uint8_t *in[4];
	unsigned int msgs[4], writes[4];
	long wrong = 0;
	bool ok = true;

	ring_init(n, 8);
	for (unsigned int r = 0; r < n; r++) {
		struct rank *k = &R.r[r];

		k->cmd[0] = make_cmd(MAIA_COLL_ALL_REDUCE, dtype, MAIA_REDOP_SUM, n, r, count, 0,
				     in_place, 1);
		k->ncmds = 1;
		k->start_at = 5 * r;	/* iterations: what rank r-1 sent has arrived */
		k->send_len = k->recv_len = count * es;
		k->send = malloc(k->send_len);
		ref_fill(k->send, count, dtype, &rng_state);
		in[r] = malloc(k->send_len);
		memcpy(in[r], k->send, k->send_len);
		k->recv = in_place ? k->send : calloc(1, k->recv_len);
	}
	ring_run();
	for (unsigned int r = 0; r < n; r++) {
		struct rank *k = &R.r[r];
		uint8_t exp[16];

		msgs[r] = (unsigned int)k->eng.stats.tx_msgs;
		writes[r] = k->recv_writes;
		ok &= k->ended[0] && k->status[0] == MAIA_STATUS_OK && msgs[r] == want_msgs[r] &&
		      writes[r] == 1 &&
		      k->report.step == 0 && k->report.bytes_sent == (n - 1) * count * es &&
		      k->report.bytes_received == (n - 1) * count * es;
		ref_expected(in, r, &k->cmd[0], exp);
		wrong += memcmp(exp, k->recv, count * es) != 0;
	}
	for (unsigned int r = 0; r < n; r++)
		free(in[r]);
	ok &= !ring_leftover();
	ring_fini();
	tap_ok(ok && !wrong,
	       "gather-reduce, 4 ranks starting in turn (%s%s): messages sent %u %u %u %u (want 2 2 1 1), "
	       "every rank OK, step 0, %u bytes sent and received, result writes %u %u %u %u "
	       "(want 1 each), #wrong %ld",
	       dtype == MAIA_DTYPE_FP32 ? "fp32" : "bf16", in_place ? ", in place" : "",
	       msgs[0], msgs[1], msgs[2], msgs[3], (unsigned int)((n - 1) * count * es),
	       writes[0], writes[1], writes[2], writes[3], wrong);
}

/*
 * Modeled time does not depend on the order things happen in
 * (Documentation/hw/time-model.rst): gather-reduce on n ranks, with chunks
 * smaller than an input, so that how much of the stream a message carries
 * depends on what had arrived; each rank's modeled end must be the same
 * over many seeded interleavings and start orders.
 */
static void test_gather_model_order(unsigned int n, uint64_t count, uint32_t chunk)
{
	uint64_t first[MAX_RANKS] = { 0 }, lo = UINT64_MAX, hi = 0;
	unsigned int runs = 24, differ = 0;
	bool ok = true;

	model_chip = fw_chip_by_id(MAIA_MODEL_MAIA100);
	cmd_algo = MAIA_COLL_ALGO_GATHER_REDUCE;
	for (unsigned int i = 0; i < runs; i++) {
		long w = run_one(n, MAIA_COLL_ALL_REDUCE, MAIA_DTYPE_FP32, MAIA_REDOP_SUM, count,
				 chunk, i & 1);

		ok &= w == 0;
		for (unsigned int r = 0; r < n; r++) {
			if (!i)
				first[r] = model_end[r];
			differ += model_end[r] != first[r];
			lo = model_end[r] < lo ? model_end[r] : lo;
			hi = model_end[r] > hi ? model_end[r] : hi;
		}
	}
	cmd_algo = MAIA_COLL_ALGO_AUTO;
	model_chip = NULL;
	tap_ok(ok && !differ && first[0],
	       "gather-reduce n=%u count %llu chunk %u: modeled end the same in %u interleavings "
	       "(%u rank ends differ from the first run's; %llu..%llu ns)",
	       n, (unsigned long long)count, chunk, runs, differ, (unsigned long long)lo,
	       (unsigned long long)hi);
}

int main(void)
{
	/* Seeded; FABRIC_COLL_SEED=n runs another interleaving. */
	rng_state = getenv("FABRIC_COLL_SEED") ? strtoull(getenv("FABRIC_COLL_SEED"), NULL, 0)
					       : 0x5eed2026;
	test_bad_fields();
	test_order_matters();
	test_matrix();
	test_minmax_rules_matter();
	test_minmax_special();
	test_large();
	test_back_to_back();
	test_algo_mismatch();
	test_inject_leaves_room();
	test_never_starts(3, MAIA_COLL_ALL_REDUCE, 1);
	test_never_starts(4, MAIA_COLL_ALL_GATHER, 3);
	test_never_starts(4, MAIA_COLL_BROADCAST, 0);
	test_fault(MAIA_COLL_ALL_REDUCE, false);
	test_fault(MAIA_COLL_ALL_REDUCE, true);
	test_fault(MAIA_COLL_BROADCAST, true);
	test_fault_gather(true);
	test_fault_gather(false);
	test_bad_messages();
	test_abort();
	test_one_cable();
	test_gather_stream(MAIA_DTYPE_FP32, false);
	test_gather_stream(MAIA_DTYPE_BF16, true);
	for (unsigned int n = 2; n <= 8; n++) {
		test_gather_model_order(n, 100, 0);
		test_gather_model_order(n, 100, 64);
		test_gather_model_order(n, 97, 12);
	}
	return tap_done();
}
