// SPDX-License-Identifier: MIT
/*
 * Decode on a device in another QEMU process (Documentation/serving.rst,
 * "Across QEMU processes"). The worker (maia-serve --mode decode-worker)
 * holds the decode device and its KV pool, opens a fabric window over the
 * pool and says hello on a byte stream: a virtio-serial port whose other
 * end, through a unix socket between the two QEMU processes, is the
 * engine's. The engine keeps every decision (admission, blocks, sampling);
 * its prefill device pushes K/V into the worker's window over the fabric as
 * in one guest, and each decode step goes over the stream as the rows
 * (token, position, blocks) and comes back as the logits.
 *
 * Messages: a header (magic, type, payload bytes) and a payload of
 * little-endian words:
 *   HELLO   worker -> engine: the configuration words, the device's fabric
 *           serial, its window key, the pool's size, its device index
 *   STEP    engine -> worker: n, then per row token, pos, nblocks, blocks
 *   LOGITS  worker -> engine: status (0 or -errno), n, device ns, host ns,
 *           then n x vocab FP32 logits
 *   BYE     engine -> worker: stop
 * A peer that goes away (its QEMU killed: the port's host side closes) ends
 * a read with -EPIPE at once; every wait is bounded.
 */
#define _GNU_SOURCE
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "llm.h"

#define MSG_MAGIC	0x4d4c4d52u	/* "RMLM" */
#define MSG_HELLO	1u
#define MSG_STEP	2u
#define MSG_LOGITS	3u
#define MSG_BYE		4u
#define CFG_WORDS	12u
#define STEP_MAX	(4u + LLM_MAX_BATCH * (3u + 1024u)) * 4u
#define STEP_TIMEOUT_MS	30000

struct msg_hdr {
	uint32_t magic, type, len;
};

int llm_vport_open(const char *name)
{
	char path[300], dev[300] = "";
	DIR *d;
	struct dirent *e;

	if (name[0] == '/')
		snprintf(dev, sizeof(dev), "%s", name);
	d = dev[0] ? NULL : opendir("/sys/class/virtio-ports");
	if (!d && !dev[0])
		return -ENOENT;
	while (d && (e = readdir(d)) && !dev[0]) {
		char got[128] = "";
		FILE *f;

		if (e->d_name[0] == '.')
			continue;
		snprintf(path, sizeof(path), "/sys/class/virtio-ports/%s/name", e->d_name);
		f = fopen(path, "re");
		if (!f)
			continue;
		if (fgets(got, sizeof(got), f)) {
			got[strcspn(got, "\n")] = 0;
			if (!strcmp(got, name))
				snprintf(dev, sizeof(dev), "/dev/%s", e->d_name);
		}
		fclose(f);
	}
	if (d)
		closedir(d);
	if (!dev[0])
		return -ENOENT;
	{
		int fd = open(dev, O_RDWR | O_NONBLOCK | O_CLOEXEC);

		return fd < 0 ? -errno : fd;
	}
}

static uint64_t now_ms(void)
{
	return llm_now_ns() / 1000000u;
}

/*
 * Move len bytes, bounded by deadline (ms, CLOCK_MONOTONIC). A virtio port
 * whose host side is not connected reads as end of file and polls POLLHUP:
 * with `wait_peer` that means "not yet" (retry), else "gone" (-EPIPE).
 */
static int xfer(int fd, void *buf, size_t len, bool rd, uint64_t deadline, bool wait_peer)
{
	uint8_t *p = buf;

	while (len) {
		struct pollfd pf = { .fd = fd, .events = rd ? POLLIN : POLLOUT };
		uint64_t now = now_ms();
		ssize_t n;
		int r;

		if (now >= deadline)
			return -ETIMEDOUT;
		r = poll(&pf, 1, deadline == UINT64_MAX ? -1 :
			 (int)(deadline - now < 60000 ? deadline - now : 60000));
		if (r < 0 && errno != EINTR)
			return -errno;
		if (r <= 0)
			continue;
		if ((pf.revents & POLLHUP) && !wait_peer && !(rd && (pf.revents & POLLIN)))
			return -EPIPE;
		n = rd ? read(fd, p, len) : write(fd, p, len);
		if (n < 0 && (errno == EAGAIN || errno == EINTR)) {
			/* A port not yet connected polls ready at once: do not spin. */
			if (pf.revents & POLLHUP)
				usleep(50000);
			continue;
		}
		/* A tty (a virtio console, a pty) whose other end hung up says EIO. */
		if (n < 0 && errno == EIO && !wait_peer)
			return -EPIPE;
		if (n < 0 && !(wait_peer && (errno == ENOTCONN || errno == ENODEV)))
			return -errno;
		if (n <= 0) {
			if (!wait_peer)
				return -EPIPE;
			/* Not connected yet: look again shortly. */
			usleep(50000);
			continue;
		}
		p += n;
		len -= (size_t)n;
	}
	return 0;
}

static int send_msg(int fd, uint32_t type, const void *payload, uint32_t len, uint64_t deadline,
		    bool wait_peer)
{
	struct msg_hdr h = { MSG_MAGIC, type, len };
	int err = xfer(fd, &h, sizeof(h), false, deadline, wait_peer);

	return err ?: (len ? xfer(fd, (void *)payload, len, false, deadline, wait_peer) : 0);
}

/* A message of type `type` (at most cap bytes) into buf; its length in *len. */
static int recv_msg(int fd, uint32_t *type, void *buf, uint32_t cap, uint32_t *len,
		    uint64_t deadline, bool wait_peer)
{
	struct msg_hdr h;
	int err = xfer(fd, &h, sizeof(h), true, deadline, wait_peer);

	if (err)
		return err;
	if (h.magic != MSG_MAGIC || h.len > cap)
		return -EPROTO;
	*type = h.type;
	*len = h.len;
	return h.len ? xfer(fd, buf, h.len, true, deadline, false) : 0;
}

static void cfg_words(const struct llm_config *c, uint32_t w[CFG_WORDS])
{
	uint32_t v[CFG_WORDS] = { c->layers, c->d_model, c->heads, c->kv_heads, c->head_dim,
				  c->ffn, c->max_seq, c->block_tokens, c->kv_blocks,
				  c->wdtype, (uint32_t)c->seed, (uint32_t)(c->seed >> 32) };

	memcpy(w, v, sizeof(v));
}

struct hello {
	uint32_t cfg[CFG_WORDS];
	uint64_t serial, pool_bytes;
	uint32_t key;
	int32_t index;
};

int llm_remote_connect(struct llm_remote *r, const char *port, const struct llm_config *c,
		       int timeout_ms)
{
	struct hello h;
	uint32_t want[CFG_WORDS], type, len;
	int err;

	memset(r, 0, sizeof(*r));
	r->fd = llm_vport_open(port);
	if (r->fd < 0)
		return r->fd;
	r->logits = calloc((size_t)LLM_MAX_BATCH * LLM_VOCAB, sizeof(float));
	err = r->logits ? 0 : -ENOMEM;
	/* The worker's QEMU may still be booting: wait for its hello. */
	err = err ?: recv_msg(r->fd, &type, &h, sizeof(h), &len, now_ms() + (uint64_t)timeout_ms,
			      true);
	if (!err && (type != MSG_HELLO || len != sizeof(h)))
		err = -EPROTO;
	cfg_words(c, want);
	if (!err && memcmp(want, h.cfg, sizeof(want)))
		err = -EINVAL;	/* another model or pool: its K/V would not fit ours */
	if (err) {
		llm_remote_close(r);
		return err;
	}
	r->serial = h.serial;
	r->key = h.key;
	r->pool_bytes = h.pool_bytes;
	r->index = h.index;
	return 0;
}

int llm_remote_step(struct llm_remote *r, const struct llm_step_row *rows, uint32_t n,
		    const struct llm_config *c, struct maia_job_times *t)
{
	uint32_t *msg = malloc(STEP_MAX), k = 0, i, b, nb, type, len;
	uint64_t deadline = now_ms() + STEP_TIMEOUT_MS;
	int err = 0;

	if (!msg)
		return -ENOMEM;
	if (r->fd < 0 || !n || n > LLM_MAX_BATCH) {
		free(msg);
		return r->fd < 0 ? -EPIPE : -EINVAL;
	}
	msg[k++] = n;
	for (i = 0; i < n; i++) {
		nb = rows[i].pos / c->block_tokens + 1;
		msg[k++] = rows[i].token;
		msg[k++] = rows[i].pos;
		msg[k++] = nb;
		for (b = 0; b < nb; b++)
			msg[k++] = rows[i].blocks[b];
	}
	err = send_msg(r->fd, MSG_STEP, msg, k * 4, deadline, false);
	/* The reply: status, n, device ns (2 words), host ns (2 words), logits. */
	err = err ?: recv_msg(r->fd, &type, msg, STEP_MAX, &len, deadline, false);
	if (!err && (type != MSG_LOGITS || len < 24))
		err = -EPROTO;
	if (!err && (int32_t)msg[0])
		err = (int32_t)msg[0];
	if (!err && (msg[1] != n || len != 24 + n * LLM_VOCAB * 4))
		err = -EPROTO;
	if (!err) {
		memcpy(&t->device_ns, &msg[2], 8);
		memcpy(&t->host_ns, &msg[4], 8);
		memcpy(r->logits, &msg[6], (size_t)n * LLM_VOCAB * 4);
		r->steps++;
	}
	free(msg);
	if (err && r->fd >= 0) {
		/* The stream is out of step or gone: no more use of it. */
		close(r->fd);
		r->fd = -1;
	}
	return err;
}

void llm_remote_close(struct llm_remote *r)
{
	if (r->fd >= 0) {
		/* Bounded: a worker already gone is fine. */
		send_msg(r->fd, MSG_BYE, NULL, 0, now_ms() + 1000, false);
		close(r->fd);
	}
	free(r->logits);
	memset(r, 0, sizeof(*r));
	r->fd = -1;
}

int llm_remote_wait_gone(struct llm_remote *r, int timeout_ms)
{
	uint64_t deadline = now_ms() + (uint64_t)timeout_ms;
	uint8_t byte;

	while (r->fd >= 0) {
		struct pollfd pf = { .fd = r->fd, .events = POLLIN };
		uint64_t now = now_ms();
		int n;

		if (now >= deadline)
			return -ETIMEDOUT;
		n = poll(&pf, 1, (int)(deadline - now < 1000 ? deadline - now : 1000));
		if (n < 0 && errno != EINTR)
			return -errno;
		if (n <= 0)
			continue;
		/*
		 * The worker sends nothing unasked: the port's host side gone,
		 * its end of file, or a byte out of turn all end the stream.
		 */
		if (!(pf.revents & (POLLHUP | POLLERR)) && read(r->fd, &byte, 1) < 0 &&
		    (errno == EAGAIN || errno == EINTR))
			continue;
		close(r->fd);
		r->fd = -1;
	}
	return 0;
}

int llm_remote_serve(struct llm_dev *d, int index, const char *port, uint64_t pause_at_step,
		     int timeout_ms)
{
	const struct llm_config *c = &d->w->cfg;
	uint32_t *msg = malloc(STEP_MAX), *reply = NULL, type, len, key = 0, n, i, k, b;
	struct llm_step_row rows[LLM_MAX_BATCH];
	struct hello h = { 0 };
	unsigned int ports;
	uint64_t steps = 0;
	int fd = llm_vport_open(port), err;

	if (fd < 0) {
		free(msg);
		return fd;
	}
	reply = malloc(24 + (size_t)LLM_MAX_BATCH * LLM_VOCAB * 4);
	err = msg && reply ? 0 : -ENOMEM;
	err = err ?: maia_fabric_ports(d->dev, &ports, &h.serial);
	err = err ?: maia_fabric_window_open(d->pool.bo, 0, maia_bo_size(d->pool.bo),
					     MAIA_FABRIC_REMOTE_WRITE, &key);
	if (!err) {
		cfg_words(c, h.cfg);
		h.key = key;
		h.pool_bytes = maia_bo_size(d->pool.bo);
		h.index = index;
		err = send_msg(fd, MSG_HELLO, &h, sizeof(h), now_ms() + (uint64_t)timeout_ms, true);
	}
	while (!err) {
		struct maia_job_times t = { 0 };
		int32_t st;

		/* The engine may sit idle between requests: no deadline but its going away. */
		err = recv_msg(fd, &type, msg, STEP_MAX, &len, UINT64_MAX, false);
		if (err || type == MSG_BYE)
			break;
		if (type != MSG_STEP || len < 4) {
			err = -EPROTO;
			break;
		}
		n = msg[0];
		st = n && n <= c->max_batch ? 0 : -EPROTO;
		for (i = 0, k = 1; i < n && !st; i++) {
			if ((k + 3) * 4 > len) {
				st = -EPROTO;
				break;
			}
			rows[i].token = (uint8_t)msg[k];
			rows[i].pos = msg[k + 1];
			if (msg[k + 2] != rows[i].pos / c->block_tokens + 1 ||
			    rows[i].pos >= c->max_seq || (k + 3 + msg[k + 2]) * 4 > len) {
				st = -EPROTO;
				break;
			}
			rows[i].blocks = &msg[k + 3];
			for (b = 0; b < msg[k + 2]; b++)
				if (msg[k + 3 + b] >= c->kv_blocks)
					st = -EPROTO;
			k += 3 + msg[k + 2];
		}
		steps++;
		if (pause_at_step && steps == pause_at_step) {
			/* tests: the step never runs; the test kills this QEMU now. */
			printf("maia-serve: decode-worker: paused at step %llu\n",
			       (unsigned long long)steps);
			fflush(stdout);
			sleep((unsigned int)(timeout_ms / 1000));
			err = -ETIMEDOUT;
			break;
		}
		if (!st) {
			maia_cmdbuf_reset(d->cb);
			st = llm_build_decode(d, rows, n);
			st = st ?: llm_dev_run(d, &t);
		}
		reply[0] = (uint32_t)st;
		reply[1] = st ? 0 : n;
		memcpy(&reply[2], &t.device_ns, 8);
		memcpy(&reply[4], &t.host_ns, 8);
		if (!st)
			memcpy(&reply[6], d->logits.cpu, (size_t)n * LLM_VOCAB * 4);
		err = send_msg(fd, MSG_LOGITS, reply, 24 + (st ? 0 : n * LLM_VOCAB * 4),
			       now_ms() + STEP_TIMEOUT_MS, false);
	}
	if (key)
		maia_fabric_window_close(d->dev, key);
	close(fd);
	free(msg);
	free(reply);
	/* The engine going away ends the service: not an error. */
	return err == -EPIPE ? 0 : err;
}
