// SPDX-License-Identifier: MIT
/*
 * The decode worker's message protocol (userspace/llm/llm_remote.c) on the
 * host, under ASan and UBSan (tests/serve/run-in-guest.sh runs it before the
 * guest boots), TAP. Each side of the protocol runs against a scripted peer
 * at the master end of a pseudo-terminal in raw mode, the code under test
 * opening the slave by its path as it opens a virtio-serial port: the
 * engine's side (hello, decode steps) against a fake worker, the worker's
 * side (llm_remote_serve(), its device calls stubbed below) against a fake
 * engine. Framing, replies that come in pieces, a peer gone mid-message,
 * malformed messages: each ends in a clear error or a refused step, never a
 * crash or a hang (every wait here is bounded).
 *
 * The wire format is written out here from the protocol's description (the
 * comment at the top of llm_remote.c), so a change of it shows.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <termios.h>
#include <time.h>
#include <unistd.h>

#include "llm.h"

#define MAGIC		0x4d4c4d52u
#define T_HELLO		1u
#define T_STEP		2u
#define T_LOGITS	3u
#define T_BYE		4u
#define WAIT_MS		5000

static int ntest, nfail;

static const char *es(int err)
{
	return err ? strerror(-err) : "ok";
}

static void tap(bool ok, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void tap(bool ok, const char *fmt, ...)
{
	va_list ap;

	printf("%sok %d - ", ok ? "" : "not ", ++ntest);
	va_start(ap, fmt);
	vprintf(fmt, ap);
	va_end(ap);
	printf("\n");
	nfail += !ok;
}

/* ---- stubs of what llm_remote.c calls besides the protocol ---- */

uint64_t llm_now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

int maia_fabric_ports(struct maia_device *dev, unsigned int *ports, uint64_t *serial)
{
	(void)dev;
	*ports = 2;
	*serial = 0x5e51a1;
	return 0;
}

int maia_fabric_window_open(struct maia_bo *bo, uint64_t offset, uint64_t size, uint32_t flags,
			    uint32_t *key)
{
	(void)bo, (void)offset, (void)size, (void)flags;
	*key = 77;
	return 0;
}

int maia_fabric_window_close(struct maia_device *dev, uint32_t key)
{
	(void)dev, (void)key;
	return 0;
}

uint64_t maia_bo_size(const struct maia_bo *bo)
{
	(void)bo;
	return 1u << 20;
}

void maia_cmdbuf_reset(struct maia_cmdbuf *cb)
{
	(void)cb;
}

static struct llm_dev wdev;
static float wlogits[LLM_MAX_BATCH * LLM_VOCAB];
static uint32_t decoded_rows;

/* The "device": each row's logits a function of its token, position and first block. */
static float logit_of(const struct llm_step_row *r, uint32_t v)
{
	return (float)r->token * 1000.0f + (float)r->pos + (float)r->blocks[0] * 0.25f +
	       (float)v * 0.5f;
}

int llm_build_decode(struct llm_dev *d, const struct llm_step_row *rows, uint32_t n)
{
	for (uint32_t i = 0; i < n; i++)
		for (uint32_t v = 0; v < LLM_VOCAB; v++)
			((float *)d->logits.cpu)[i * LLM_VOCAB + v] = logit_of(&rows[i], v);
	decoded_rows += n;
	return 0;
}

int llm_dev_run(struct llm_dev *d, struct maia_job_times *t)
{
	(void)d;
	t->device_ns = 4242;
	t->host_ns = 99;
	return 0;
}

/* ---- the scripted peer at the pty's master end ---- */

static struct llm_config cfg;

static void config(void)
{
	memset(&cfg, 0, sizeof(cfg));
	cfg.layers = 4;
	cfg.d_model = 256;
	cfg.heads = 8;
	cfg.kv_heads = 2;
	cfg.head_dim = 32;
	cfg.ffn = 512;
	cfg.max_seq = 256;
	cfg.block_tokens = 16;
	cfg.kv_blocks = 128;
	cfg.max_batch = 8;
	cfg.seed = 0x1234567890ull;
}

/*
 * A pty in raw mode: the master for the peer, its slave's path in path.
 * The test keeps a slave fd open until it closes the master (a master
 * without any slave open reads as hung up).
 */
static int slave_of[1024];

static int pty(char *path, size_t len)
{
	struct termios t;
	int m = posix_openpt(O_RDWR | O_NOCTTY), s;

	if (m < 0 || m >= 1024 || grantpt(m) || unlockpt(m) || ptsname_r(m, path, len))
		return -1;
	s = open(path, O_RDWR | O_NOCTTY);
	if (s < 0 || tcgetattr(s, &t))
		return -1;
	cfmakeraw(&t);
	tcsetattr(s, TCSANOW, &t);
	slave_of[m] = s;
	return m;
}

/* The peer goes away. */
static void hang_up(int m)
{
	close(m);
	close(slave_of[m]);
}

static int io(int fd, void *buf, size_t len, bool rd)
{
	uint8_t *p = buf;

	while (len) {
		struct pollfd pf = { .fd = fd, .events = rd ? POLLIN : POLLOUT };
		ssize_t n;

		if (poll(&pf, 1, WAIT_MS) <= 0)
			return -ETIMEDOUT;
		n = rd ? read(fd, p, len) : write(fd, p, len);
		if (n <= 0)
			return -EPIPE;
		p += n;
		len -= (size_t)n;
	}
	return 0;
}

static int put_hdr(int fd, uint32_t magic, uint32_t type, uint32_t len)
{
	uint32_t h[3] = { magic, type, len };

	return io(fd, h, sizeof(h), false);
}

/* The hello as the worker sends it. */
struct hello {
	uint32_t cfg[12];
	uint64_t serial, pool_bytes;
	uint32_t key;
	int32_t index;
};

static void hello_of(const struct llm_config *c, struct hello *h)
{
	uint32_t w[12] = { c->layers, c->d_model, c->heads, c->kv_heads, c->head_dim, c->ffn,
			   c->max_seq, c->block_tokens, c->kv_blocks, c->wdtype, (uint32_t)c->seed,
			   (uint32_t)(c->seed >> 32) };

	memset(h, 0, sizeof(*h));
	memcpy(h->cfg, w, sizeof(w));
	h->serial = 0xabcdef01234ull;
	h->pool_bytes = 3u << 20;
	h->key = 9;
	h->index = 1;
}

struct connect_arg {
	const char *path;
	struct llm_remote r;
	int err;
};

static void *connect_thread(void *arg)
{
	struct connect_arg *a = arg;

	a->err = llm_remote_connect(&a->r, a->path, &cfg, WAIT_MS);
	return NULL;
}

/* The engine connects while the fake worker at m says hello (how: bad). */
static int connect_with(int m, const char *path, int bad, struct llm_remote *r)
{
	struct connect_arg a = { .path = path };
	struct llm_config other = cfg;
	struct hello h;
	pthread_t th;

	other.kv_blocks = 64;
	hello_of(bad == 1 ? &other : &cfg, &h);
	if (pthread_create(&th, NULL, connect_thread, &a))
		return -ENOMEM;
	if (bad == 2)
		put_hdr(m, 0xdeadbeefu, T_HELLO, sizeof(h));
	else if (bad == 3)
		put_hdr(m, MAGIC, T_HELLO, 1u << 30);	/* a length past any buffer */
	else if (!put_hdr(m, MAGIC, T_HELLO, sizeof(h)))
		io(m, &h, sizeof(h), false);
	pthread_join(th, NULL);
	*r = a.r;
	return a.err;
}

struct step_arg {
	struct llm_remote *r;
	struct llm_step_row rows[2];
	uint32_t n;
	struct maia_job_times t;
	int err;
};

static void *step_thread(void *arg)
{
	struct step_arg *a = arg;

	a->err = llm_remote_step(a->r, a->rows, a->n, &cfg, &a->t);
	return NULL;
}

static const uint32_t blocks0[] = { 5, 6 }, blocks1[] = { 40 };

static void rows_of(struct step_arg *a, struct llm_remote *r)
{
	memset(a, 0, sizeof(*a));
	a->r = r;
	a->n = 2;
	a->rows[0] = (struct llm_step_row){ .token = 'M', .pos = 20, .blocks = blocks0 };
	a->rows[1] = (struct llm_step_row){ .token = 'a', .pos = 3, .blocks = blocks1 };
}

/* The STEP the engine sent, as the format says: n, then token, pos, nblocks, blocks. */
static bool step_ok(int m)
{
	uint32_t h[3], want[] = { 2, 'M', 20, 2, 5, 6, 'a', 3, 1, 40 }, got[10];

	return !io(m, h, sizeof(h), true) && h[0] == MAGIC && h[1] == T_STEP &&
	       h[2] == sizeof(want) && !io(m, got, sizeof(got), true) &&
	       !memcmp(got, want, sizeof(want));
}

/*
 * The LOGITS reply to step_ok()'s rows: status, n, device ns, host ns,
 * logits; cut at `cut` bytes (0: whole) with a pause before the rest
 * (split: the rest comes) or the peer closing (!split).
 */
static size_t logits_reply(uint32_t **out, int32_t status, uint32_t n)
{
	size_t len = 24 + (size_t)n * LLM_VOCAB * 4;
	uint32_t *p = calloc(1, len);
	uint64_t dev = 1234, host = 5678;
	struct llm_step_row rows[2] = {
		{ .token = 'M', .pos = 20, .blocks = blocks0 },
		{ .token = 'a', .pos = 3, .blocks = blocks1 },
	};

	p[0] = (uint32_t)status;
	p[1] = n;
	memcpy(&p[2], &dev, 8);
	memcpy(&p[4], &host, 8);
	for (uint32_t i = 0; i < n && i < 2; i++)
		for (uint32_t v = 0; v < LLM_VOCAB; v++) {
			float f = logit_of(&rows[i], v);

			memcpy(&p[6 + i * LLM_VOCAB + v], &f, 4);
		}
	*out = p;
	return len;
}

static bool logits_ok(const struct step_arg *a)
{
	for (uint32_t i = 0; i < a->n; i++)
		for (uint32_t v = 0; v < LLM_VOCAB; v++)
			if (a->r->logits[i * LLM_VOCAB + v] != logit_of(&a->rows[i], v))
				return false;
	return a->t.device_ns == 1234 && a->t.host_ns == 5678;
}

static void test_engine_side(void)
{
	char path[64];
	struct llm_remote r;
	struct step_arg a;
	pthread_t th;
	uint32_t *rep;
	size_t len;
	int m, err, bad;

	/* Bad hellos: another model, a bad magic, a length past the buffer. */
	for (bad = 1; bad <= 3; bad++) {
		m = pty(path, sizeof(path));
		err = connect_with(m, path, bad, &r);
		tap(err == (bad == 1 ? -EINVAL : -EPROTO) && r.fd == -1 && !r.logits,
		    "engine: a hello with %s is refused (%s), the port closed",
		    bad == 1 ? "another pool size" : bad == 2 ? "a bad magic" :
		    "a length past the buffer", es(err));
		hang_up(m);
	}

	m = pty(path, sizeof(path));
	err = connect_with(m, path, 0, &r);
	tap(!err && r.serial == 0xabcdef01234ull && r.key == 9 && r.pool_bytes == 3u << 20 &&
	    r.index == 1, "engine: the worker's hello gives its serial, window key, pool size and "
	    "device index (%s)", es(err));

	/* A step; the reply comes in three pieces (reads come short). */
	rows_of(&a, &r);
	pthread_create(&th, NULL, step_thread, &a);
	tap(step_ok(m), "engine: a step of 2 rows goes out as n, then token, pos, nblocks, blocks");
	len = logits_reply(&rep, 0, 2);
	put_hdr(m, MAGIC, T_LOGITS, (uint32_t)len);
	io(m, rep, 10, false);
	usleep(20000);
	io(m, (uint8_t *)rep + 10, 1000, false);
	usleep(20000);
	io(m, (uint8_t *)rep + 1010, len - 1010, false);
	pthread_join(th, NULL);
	tap(!a.err && logits_ok(&a) && r.steps == 1,
	    "engine: logits that come in pieces are read whole: both rows' %u logits and the "
	    "job's times (%s)", LLM_VOCAB, es(a.err));
	free(rep);

	/* A reply for another number of rows: a protocol error, the stream dropped. */
	rows_of(&a, &r);
	pthread_create(&th, NULL, step_thread, &a);
	step_ok(m);
	len = logits_reply(&rep, 0, 1);
	put_hdr(m, MAGIC, T_LOGITS, (uint32_t)len);
	io(m, rep, len, false);
	pthread_join(th, NULL);
	tap(a.err == -EPROTO && r.fd == -1, "engine: logits for 1 row of 2: -EPROTO, the stream "
	    "closed (%s)", es(a.err));
	free(rep);
	rows_of(&a, &r);
	step_thread(&a);
	tap(a.err == -EPIPE, "engine: a step after that: -EPIPE at once (%s)",
	    es(a.err));
	llm_remote_close(&r);
	hang_up(m);

	/* A worker's failed step: its status comes back as the error. */
	m = pty(path, sizeof(path));
	connect_with(m, path, 0, &r);
	rows_of(&a, &r);
	pthread_create(&th, NULL, step_thread, &a);
	step_ok(m);
	len = logits_reply(&rep, -EIO, 0);
	put_hdr(m, MAGIC, T_LOGITS, (uint32_t)len);
	io(m, rep, len, false);
	pthread_join(th, NULL);
	tap(a.err == -EIO, "engine: the worker's job failed: its -EIO comes back (%s)",
	    es(a.err));
	free(rep);
	llm_remote_close(&r);
	hang_up(m);

	/* The worker gone mid-message: half the logits, then its end closes. */
	m = pty(path, sizeof(path));
	connect_with(m, path, 0, &r);
	rows_of(&a, &r);
	pthread_create(&th, NULL, step_thread, &a);
	step_ok(m);
	len = logits_reply(&rep, 0, 2);
	put_hdr(m, MAGIC, T_LOGITS, (uint32_t)len);
	io(m, rep, len / 2, false);
	usleep(20000);
	hang_up(m);
	pthread_join(th, NULL);
	tap(a.err == -EPIPE && r.fd == -1, "engine: the worker gone in the middle of its logits: "
	    "-EPIPE, the stream closed (%s)", es(a.err));
	free(rep);
	llm_remote_close(&r);

	/* Gone before the header is whole. */
	m = pty(path, sizeof(path));
	connect_with(m, path, 0, &r);
	rows_of(&a, &r);
	pthread_create(&th, NULL, step_thread, &a);
	step_ok(m);
	io(m, (uint32_t[]){ MAGIC }, 4, false);
	hang_up(m);
	pthread_join(th, NULL);
	tap(a.err == -EPIPE, "engine: the worker gone after 4 bytes of a header: -EPIPE (%s)",
	    es(a.err));
	llm_remote_close(&r);

	/* llm_remote_wait_gone(): bounded while it lives, 0 once it is gone. */
	m = pty(path, sizeof(path));
	connect_with(m, path, 0, &r);
	err = llm_remote_wait_gone(&r, 100);
	hang_up(m);
	tap(err == -ETIMEDOUT && !llm_remote_wait_gone(&r, WAIT_MS) && r.fd == -1,
	    "engine: waiting for a live worker to go times out (%s); once its end closed, done",
	    es(err));
	llm_remote_close(&r);
}

struct serve_arg {
	const char *path;
	int err;
};

static void *serve_thread(void *arg)
{
	struct serve_arg *a = arg;

	a->err = llm_remote_serve(&wdev, 1, a->path, 0, WAIT_MS);
	return NULL;
}

/* Send a STEP of `words`, read the LOGITS reply's status and n. */
static int worker_step(int m, const uint32_t *words, uint32_t nwords, int32_t *status,
		       uint32_t *n, float *first)
{
	uint32_t h[3], *p;
	int err = put_hdr(m, MAGIC, T_STEP, nwords * 4);

	err = err ?: io(m, (void *)words, nwords * 4, false);
	err = err ?: io(m, h, sizeof(h), true);
	if (err)
		return err;
	if (h[0] != MAGIC || h[1] != T_LOGITS || h[2] < 24 || h[2] > 24 + 8 * LLM_VOCAB * 4)
		return -EPROTO;
	p = malloc(h[2]);
	err = io(m, p, h[2], true);
	*status = (int32_t)p[0];
	*n = p[1];
	if (!err && h[2] > 24)
		memcpy(first, &p[6], 4);
	else
		*first = -1.0f;
	free(p);
	return err ?: (h[2] == 24 + *n * LLM_VOCAB * 4 ? 0 : -EPROTO);
}

static void test_worker_side(void)
{
	static const struct { uint32_t w[8]; uint32_t n; const char *why; } bad[] = {
		{ { 0 }, 1, "no rows" },
		{ { 9, 'a', 0, 1, 0 }, 5, "more rows than max_batch" },
		{ { 1, 'a', 20, 1, 0 }, 5, "a block count that does not match the position" },
		{ { 1, 'a', 3, 1, 128 }, 5, "a block past the pool" },
		{ { 1, 'a', 256, 17, 0 }, 5, "a position past the context" },
		{ { 2, 'a', 3, 1, 0 }, 5, "a second row cut off" },
		{ { 1, 'a', 40, 3, 1, 2 }, 6, "a row's blocks cut off" },
	};
	struct serve_arg a = { 0 };
	struct hello h;
	char path[64];
	pthread_t th;
	uint32_t hdr[3], n, i, ok_words[] = { 1, 'z', 17, 2, 7, 8 };
	int32_t st;
	float first;
	int m, err, refused = 0;

	wdev.w = NULL;
	{
		static struct llm_weights w;

		w.cfg = cfg;
		wdev.w = &w;
	}
	wdev.logits.cpu = wlogits;
	m = pty(path, sizeof(path));
	a.path = path;
	pthread_create(&th, NULL, serve_thread, &a);
	err = io(m, hdr, sizeof(hdr), true);
	err = err ?: (hdr[0] == MAGIC && hdr[1] == T_HELLO && hdr[2] == sizeof(h) ? 0 : -EPROTO);
	err = err ?: io(m, &h, sizeof(h), true);
	{
		struct hello want;

		hello_of(&cfg, &want);
		tap(!err && !memcmp(h.cfg, want.cfg, sizeof(want.cfg)) && h.serial == 0x5e51a1 &&
		    h.key == 77 && h.pool_bytes == 1u << 20 && h.index == 1,
		    "worker: its hello has the model's words, its serial, window key, pool size, "
		    "index (%s)", es(err));
	}
	err = worker_step(m, ok_words, 6, &st, &n, &first);
	tap(!err && !st && n == 1 && first == 'z' * 1000.0f + 17 + 7 * 0.25f && decoded_rows == 1,
	    "worker: a step of one row runs and its logits come back (%s)", es(err));
	for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		err = worker_step(m, bad[i].w, bad[i].n, &st, &n, &first);
		if (!err && st == -EPROTO && !n && first == -1.0f)
			refused++;
		else
			printf("# not refused: %s (%s, status %d)\n", bad[i].why,
			       es(err), st);
	}
	tap(refused == (int)(sizeof(bad) / sizeof(bad[0])) && decoded_rows == 1,
	    "worker: %d malformed steps (no rows, too many, a wrong block count, a block past "
	    "the pool, a position past the context, rows cut off) each answered -EPROTO, none "
	    "run", refused);
	err = worker_step(m, ok_words, 6, &st, &n, &first);
	tap(!err && !st && n == 1 && decoded_rows == 2, "worker: and it serves the next step");
	/* A header with a bad magic: the stream cannot be trusted, the worker ends. */
	put_hdr(m, 0x12345678u, T_STEP, 4);
	pthread_join(th, NULL);
	tap(a.err == -EPROTO, "worker: a bad magic ends the service with -EPROTO (%s)",
	    es(a.err));
	hang_up(m);

	/* An unknown message type, then BYE; and the engine gone mid-message. */
	m = pty(path, sizeof(path));
	pthread_create(&th, NULL, serve_thread, &a);
	io(m, hdr, sizeof(hdr), true);
	io(m, &h, sizeof(h), true);
	put_hdr(m, MAGIC, 99, 0);
	pthread_join(th, NULL);
	tap(a.err == -EPROTO, "worker: an unknown message type: -EPROTO (%s)",
	    es(a.err));
	hang_up(m);
	m = pty(path, sizeof(path));
	pthread_create(&th, NULL, serve_thread, &a);
	io(m, hdr, sizeof(hdr), true);
	io(m, &h, sizeof(h), true);
	put_hdr(m, MAGIC, T_BYE, 0);
	pthread_join(th, NULL);
	tap(a.err == 0, "worker: BYE ends the service: 0 (%s)", es(a.err));
	hang_up(m);
	m = pty(path, sizeof(path));
	pthread_create(&th, NULL, serve_thread, &a);
	io(m, hdr, sizeof(hdr), true);
	io(m, &h, sizeof(h), true);
	put_hdr(m, MAGIC, T_STEP, 24);
	io(m, ok_words, 8, false);
	hang_up(m);
	pthread_join(th, NULL);
	tap(a.err == 0,
	    "worker: the engine gone in the middle of a step: the service ends (%s)",
	    es(a.err));
}

int main(void)
{
	printf("TAP version 13\n");
	config();
	test_engine_side();
	test_worker_side();
	printf("1..%d\n", ntest);
	return nfail ? 1 : 0;
}
