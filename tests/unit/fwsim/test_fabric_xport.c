// SPDX-License-Identifier: MIT
/*
 * Fabric transport (fw_fabric_xport.c, fw_fabric_win.c): remote writes and
 * reads between two and three devices in one process, cabled by function
 * calls (each port's fabric_tx calls the peer's maia_sim_fabric_rx()), with
 * loss, duplication and reordering injected in the cable.
 *
 * The reference is independent of the device: the bytes the test put in the
 * source, compared with memcmp against the target's HBM, which the test
 * reads directly. Every decision is by events: a completion entry's status,
 * a counter, the cable having passed N data frames. The cable can hold the
 * sending device's fabric thread after N data frames (as the harness gate
 * holds a worker), so "mid-transfer" actions (a CLOSE, a reset, a pulled
 * cable) happen while a transfer is known to be in progress, however slow
 * the machine. The only clock use is a hang guard (60 s) on completions.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <zlib.h>

#include "../../../firmware-sim/src/fw_fabric.h"
#include "harness.h"
#include "maia/hw/fabric.h"
#include "tap.h"

#define MIB		(1024ull * 1024ull)
#define HUGE_PAGE	(2ull * MIB)
#define NPORTS		2u
#define VA_WIN		0x40000000ull	/* the target's window VA (ASID 1) */
#define VA_CMD		0x20000000ull	/* the target's command buffers (ASID 1, host memory) */
#define HANG_GUARD_MS	60000u

/* One direction of a cable, from a node's port to a peer. */
struct dir {
	pthread_mutex_t lock;		/* protects every field */
	pthread_cond_t cond;
	struct env *to;			/* NULL: unplugged */
	unsigned int to_port;
	/* Faults, per million frames. */
	uint32_t loss_ppm, dup_ppm, reorder_ppm;
	uint64_t rng;
	uint8_t *held;			/* a frame held back to deliver after the next */
	size_t held_len;
	/* Events. */
	unsigned long data_frames;	/* DATA frames with a transport message */
	unsigned long forced_at;	/* the DATA frame count of the last forced fault */
	unsigned long lost, dups, reordered;
	unsigned long hold_after;	/* 0: never; else hold the sender at this count */
	bool hold_any;			/* hold the sender at its next frame of any type */
	unsigned long cut_after;	/* 0: never; else unplug at this count ... */
	struct dir *cut_also;		/* ... and this direction with it */
	bool holding;			/* the sender is held in fabric_tx */
	unsigned int sending;		/* frames being handed over, lock dropped */
};

struct node {
	struct env e;
	struct dir out[NPORTS];
	struct tq q, q2;
	uint64_t root;			/* ASID 1 page tables */
	uint64_t win_pa;		/* HBM offset of the window memory */
	uint64_t win_size;
	uint64_t cmd_bus;		/* host page mapped at VA_CMD */
};

static uint64_t now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000u + (uint64_t)ts.tv_nsec / 1000000u;
}

static uint32_t rnd(struct dir *d)
{
	d->rng ^= d->rng << 13;
	d->rng ^= d->rng >> 7;
	d->rng ^= d->rng << 17;
	return (uint32_t)(d->rng % 1000000u);
}

static bool is_data(const uint8_t *frame, size_t len)
{
	return len > MAIA_FABRIC_MIN_FRAME && frame[MAIA_ETH_HLEN + 1] == MAIA_FABRIC_DATA;
}

/* True once, for the DATA frame that made the count k. */
static bool forced(struct dir *d, unsigned long k)
{
	if (d->data_frames != k || d->forced_at == k)
		return false;
	d->forced_at = k;
	return true;
}

/* On the sending device's fabric thread. */
/*
 * Duplicated and reordered frames reach the device lent
 * (maia_sim_fabric_rx_lent), the others copied: both paths carry traffic,
 * and every lent buffer must come back exactly once (checked at the end).
 */
static unsigned long lent_frames, released_frames;

static void release_lent(void *buf)
{
	free(buf);
	__atomic_add_fetch(&released_frames, 1, __ATOMIC_RELAXED);
}

/* Hands buf (malloc'd, now the device's until release_lent) to sim. */
static void lend(struct maia_sim *sim, unsigned int port, void *buf, size_t len)
{
	__atomic_add_fetch(&lent_frames, 1, __ATOMIC_RELAXED);
	maia_sim_fabric_rx_lent(sim, port, buf, len, release_lent, buf);
}

/*
 * The frames are handed over with the cable's lock dropped: a thread in a
 * round runs the receiver's round right there (fw_fabric_port.c, "Rounds
 * without a wake-up"), whose sends take the receiver's own cables' locks.
 * No test lock nests (a cut unplugs its reverse direction after dropping
 * this one's), so ThreadSanitizer's lock-order checking sees the library's
 * own locks only. dir_set() and unplug() wait for the handers.
 */
static int cable_tx(void *opaque, unsigned int port, const void *frame, size_t len)
{
	struct node *n = opaque;
	struct dir *d = &n->out[port];
	struct dir *cut_also = NULL;
	struct env *to;
	unsigned int to_port;
	void *dup = NULL, *held = NULL;
	size_t held_len = 0;
	bool pass = false;

	pthread_mutex_lock(&d->lock);
	if (d->to && d->hold_any) {
		d->hold_any = false;
		d->holding = true;
		pthread_cond_broadcast(&d->cond);
		while (d->holding)
			pthread_cond_wait(&d->cond, &d->lock);
	}
	if (d->to && is_data(frame, len)) {
		d->data_frames++;
		if (d->hold_after && d->data_frames >= d->hold_after) {
			d->hold_after = 0;
			d->holding = true;
			pthread_cond_broadcast(&d->cond);
			while (d->holding)
				pthread_cond_wait(&d->cond, &d->lock);
		}
		if (d->cut_after && d->data_frames >= d->cut_after) {
			d->to = NULL;
			cut_also = d->cut_also;
		}
	}
	to = d->to;
	to_port = d->to_port;
	if (!to)
		goto out;
	d->sending++;
	/*
	 * Besides the random faults, DATA frames 3, 5 and 7 are lost, held back
	 * and duplicated: how many frames a transfer takes depends on how acks
	 * fall into rounds, and each fault must happen at least once.
	 */
	if (d->loss_ppm && (rnd(d) < d->loss_ppm || forced(d, 3))) {
		d->lost++;
		goto out;
	}
	if (d->reorder_ppm && !d->held && (rnd(d) < d->reorder_ppm || forced(d, 5))) {
		d->held = malloc(len);
		memcpy(d->held, frame, len);
		d->held_len = len;
		d->reordered++;
		goto out;
	}
	pass = true;
	if (d->dup_ppm && (rnd(d) < d->dup_ppm || forced(d, 7))) {
		dup = malloc(len);
		memcpy(dup, frame, len);
		d->dups++;
	}
	held = d->held;
	held_len = d->held_len;
	d->held = NULL;
out:
	pthread_mutex_unlock(&d->lock);
	if (cut_also) {
		pthread_mutex_lock(&cut_also->lock);
		cut_also->to = NULL;
		pthread_mutex_unlock(&cut_also->lock);
	}
	if (!to)
		return -1;
	if (pass)
		maia_sim_fabric_rx(to->sim, to_port, frame, len);
	if (dup)
		lend(to->sim, to_port, dup, len);
	if (held)
		lend(to->sim, to_port, held, held_len);
	pthread_mutex_lock(&d->lock);
	if (!--d->sending)
		pthread_cond_broadcast(&d->cond);
	pthread_mutex_unlock(&d->lock);
	return 0;
}

/*
 * The lending host (maia_sim_ops.fabric_tx_lend): every DATA frame a device
 * lends is kept until the test ends, as by a host whose queue never drains,
 * with zlib's CRC of its bytes when lent (sealed first: a lent frame may
 * come without its frame CRC); the frame goes on through cable_tx (faults
 * included). Every retransmission then meets a frame still
 * lent, which the device must send again as a copy through fabric_tx
 * (tx_lend_copies) without writing the lent one.
 */
struct kept_frame {
	const void *frame;
	size_t len;
	uint32_t crc;
};

static pthread_mutex_t kept_lock = PTHREAD_MUTEX_INITIALIZER;
/* Under kept_lock. */
static struct kept_frame kept[4096];
static unsigned int nkept;
static unsigned long lent_again;	/* a frame lent again while we keep it */
static unsigned long kept_over;		/* lent past kept[]: given back at once */

static int cable_tx_lend(void *opaque, unsigned int port, const void *frame, size_t len)
{
	bool keep;

	/* It goes on as a copy (cable_tx), which the receiver checks: with its CRC. */
	maia_sim_fabric_frame_seal(frame, len);
	pthread_mutex_lock(&kept_lock);
	for (unsigned int i = 0; i < nkept; i++)
		lent_again += kept[i].frame == frame;
	keep = nkept < sizeof(kept) / sizeof(kept[0]);
	if (keep)
		kept[nkept++] = (struct kept_frame){ frame, len, (uint32_t)crc32(0, frame, len) };
	else
		kept_over++;
	pthread_mutex_unlock(&kept_lock);
	/* Sent, lost or refused: the device only learns what cable_tx says. */
	if (!keep) {
		int rc = cable_tx(opaque, port, frame, len);

		maia_sim_fabric_frame_put(frame);
		return rc;
	}
	return cable_tx(opaque, port, frame, len);
}

/* Gives every kept frame back; the number whose bytes changed while lent. */
static unsigned int kept_put_all(unsigned int *count)
{
	unsigned int changed = 0;

	pthread_mutex_lock(&kept_lock);
	*count = nkept;
	for (unsigned int i = 0; i < nkept; i++) {
		changed += crc32(0, kept[i].frame, kept[i].len) != kept[i].crc;
		maia_sim_fabric_frame_put(kept[i].frame);
	}
	nkept = 0;
	pthread_mutex_unlock(&kept_lock);
	return changed;
}

/* Waits until no frame is being handed over on d (d->lock held). */
static void dir_idle_locked(struct dir *d)
{
	while (d->sending)
		pthread_cond_wait(&d->cond, &d->lock);
}

/* Unplugged (to NULL): no frame reaches the old peer once this returns. */
static void dir_set(struct dir *d, struct env *to, unsigned int to_port)
{
	pthread_mutex_lock(&d->lock);
	d->to = to;
	d->to_port = to_port;
	dir_idle_locked(d);
	pthread_mutex_unlock(&d->lock);
}

static void plug(struct node *a, unsigned int pa, struct node *b, unsigned int pb)
{
	dir_set(&a->out[pa], &b->e, pb);
	dir_set(&b->out[pb], &a->e, pa);
}

static void faults(struct node *a, unsigned int pa, uint32_t loss, uint32_t dup, uint32_t reorder,
		   uint64_t seed)
{
	struct dir *d = &a->out[pa];

	pthread_mutex_lock(&d->lock);
	d->loss_ppm = loss;
	d->dup_ppm = dup;
	d->reorder_ppm = reorder;
	d->rng = seed;
	pthread_mutex_unlock(&d->lock);
}

/* Hold the sender at its n-th DATA frame from now. */
/*
 * Holds (and cuts) are of the sending device's own fabric thread: no device
 * runs another's rounds meanwhile (fw_fabric_inline_rx(), back on at
 * release()), else the thread held could be a peer's, in a round of the
 * sender it runs inline, and a reset of that peer would wait for it.
 */
static void hold_at(struct dir *d, unsigned long n)
{
	fw_fabric_inline_rx(false);
	pthread_mutex_lock(&d->lock);
	d->hold_after = d->data_frames + n;
	pthread_mutex_unlock(&d->lock);
}

/* Waits until the sender is held; false (and the hold cancelled) after the hang guard. */
static bool wait_held(struct dir *d)
{
	struct timespec ts;
	bool held;

	clock_gettime(CLOCK_REALTIME, &ts);
	ts.tv_sec += HANG_GUARD_MS / 1000;
	pthread_mutex_lock(&d->lock);
	while (!d->holding)
		if (pthread_cond_timedwait(&d->cond, &d->lock, &ts))
			break;
	held = d->holding;
	d->hold_after = 0;
	d->hold_any = false;
	pthread_mutex_unlock(&d->lock);
	if (!held)
		tap_ok(0, "the transfer never reached the cable's hold point");
	return held;
}

static void release(struct dir *d)
{
	pthread_mutex_lock(&d->lock);
	d->holding = false;
	pthread_cond_broadcast(&d->cond);
	pthread_mutex_unlock(&d->lock);
	fw_fabric_inline_rx(true);
}

/* Unplug d and its reverse direction when d has passed n more DATA frames. */
static void cut_at(struct dir *d, struct dir *reverse, unsigned long n)
{
	fw_fabric_inline_rx(false);	/* on again at unplug() */
	pthread_mutex_lock(&d->lock);
	d->cut_after = d->data_frames + n;
	d->cut_also = reverse;
	pthread_mutex_unlock(&d->lock);
}

static struct maia_sim_fabric_port_info pinfo(struct node *n, unsigned int port)
{
	struct maia_sim_fabric_port_info i;

	memset(&i, 0, sizeof(i));
	maia_sim_fabric_port_info(n->e.sim, port, &i);
	return i;
}

/* Waits (by polling the published snapshot) until port is UP with the peer's IDENT. */
static bool wait_up(struct node *n, unsigned int port)
{
	uint64_t start = now_ms();

	while (now_ms() - start < HANG_GUARD_MS) {
		struct maia_sim_fabric_port_info i = pinfo(n, port);

		if (i.up && i.ident_rx)
			return true;
		usleep(1000);
	}
	return false;
}

/*
 * A node: booted device with `ports` fabric ports, queue 0 and 1, ASID 1
 * with win_size bytes of HBM at VA_WIN (2 MiB pages) and a host page of
 * command buffers at VA_CMD.
 */
static void node_init(struct node *n, uint64_t serial, uint64_t hbm, uint64_t win_size)
{
	memset(n, 0, sizeof(*n));
	for (unsigned int i = 0; i < NPORTS; i++) {
		pthread_mutex_init(&n->out[i].lock, NULL);
		pthread_cond_init(&n->out[i].cond, NULL);
	}
	if (env_init_fabric(&n->e, 4, hbm, 8 * MIB, NPORTS, serial, cable_tx, n)) {
		fprintf(stderr, "env_init_fabric failed\n");
		exit(2);
	}
	boot_or_die(&n->e);
	queue_setup(&n->e, &n->q, 0, 64, MAIA_QUEUE_PRIO_NORMAL);
	queue_setup(&n->e, &n->q2, 1, 64, MAIA_QUEUE_PRIO_NORMAL);
	n->root = pt_new_root(&n->e);
	n->win_size = win_size;
	n->win_pa = hbm_alloc(&n->e, win_size, HUGE_PAGE);
	for (uint64_t off = 0; off < win_size; off += HUGE_PAGE)
		pt_map(&n->e, n->root, VA_WIN + off, n->win_pa + off,
		       MAIA_PTE_READ | MAIA_PTE_WRITE, true);
	n->cmd_bus = host_alloc(&n->e, MAIA_PAGE_SIZE, MAIA_PAGE_SIZE);
	pt_map(&n->e, n->root, VA_CMD, n->cmd_bus, MAIA_PTE_READ | MAIA_PTE_SYSMEM, false);
	if (mbox(&n->e, MAIA_MBOX_SET_CONTEXT, 1, (uint32_t)n->root, (uint32_t)(n->root >> 32),
		 NULL) != MAIA_MBOX_OK) {
		fprintf(stderr, "SET_CONTEXT failed\n");
		exit(2);
	}
}

static void node_fini(struct node *n)
{
	for (unsigned int i = 0; i < NPORTS; i++)
		dir_set(&n->out[i], NULL, 0);
	env_fini(&n->e);
	for (unsigned int i = 0; i < NPORTS; i++) {
		free(n->out[i].held);
		pthread_mutex_destroy(&n->out[i].lock);
		pthread_cond_destroy(&n->out[i].cond);
	}
}

/* Unplug both directions between a and b (before destroying either). */
static void unplug(struct node *a, struct node *b)
{
	for (unsigned int i = 0; i < NPORTS; i++) {
		pthread_mutex_lock(&a->out[i].lock);
		if (a->out[i].to == &b->e)
			a->out[i].to = NULL;
		dir_idle_locked(&a->out[i]);
		pthread_mutex_unlock(&a->out[i].lock);
		pthread_mutex_lock(&b->out[i].lock);
		if (b->out[i].to == &a->e)
			b->out[i].to = NULL;
		dir_idle_locked(&b->out[i]);
		pthread_mutex_unlock(&b->out[i].lock);
	}
	fw_fabric_inline_rx(true);	/* after a cut_at() */
}

static uint32_t win_open(struct node *n, unsigned int asid, unsigned int access, uint64_t va,
			 uint32_t pages, uint32_t *key)
{
	uint32_t resp[MAIA_MBOX_NARGS] = { 0 };
	uint32_t st = mbox4(&n->e, MAIA_MBOX_FABRIC_WINDOW_OPEN, asid | access << 16, (uint32_t)va,
			    (uint32_t)(va >> 32), pages, resp);

	*key = resp[0];
	return st;
}

static uint32_t win_close(struct node *n, uint32_t key)
{
	return mbox(&n->e, MAIA_MBOX_FABRIC_WINDOW_CLOSE, key, 0, 0, NULL);
}

static void cmd_fwrite(struct cmdbuf *cb, unsigned int port, uint32_t key, uint64_t roff,
		       uint64_t local, uint64_t size, bool sem, uint32_t sem_index,
		       uint32_t sem_value)
{
	struct maia_cmd_fabric_write c = {
		.hdr = { .opcode = MAIA_OP_FABRIC_WRITE, .size = sizeof(c),
			 .flags = sem ? MAIA_FABRIC_WRITE_SEM : 0 },
		.port = port, .key = key, .remote_offset = roff, .local_addr = local,
		.size = size, .sem_index = sem_index, .sem_value = sem_value,
	};

	cb_add(cb, &c, sizeof(c));
}

static void cmd_fread(struct cmdbuf *cb, unsigned int port, uint32_t key, uint64_t roff,
		      uint64_t local, uint64_t size)
{
	struct maia_cmd_fabric_read c = {
		.hdr = { .opcode = MAIA_OP_FABRIC_READ, .size = sizeof(c) },
		.port = port, .key = key, .remote_offset = roff, .local_addr = local,
		.size = size,
	};

	cb_add(cb, &c, sizeof(c));
}

/* Submits cb (host memory, ASID 0) on q without waiting; returns the slot. */
static uint32_t submit(struct node *n, struct tq *q, const struct cmdbuf *cb)
{
	static uint64_t next_id = 0x5000;

	return queue_push(&n->e, q, cb_to_host(&n->e, cb), cb->len, 0, 0, next_id++, true);
}

/* The completion entry of slot, once the device said it is there (drain, or its interrupt). */
static struct maia_cq_entry read_cqe(struct node *n, struct tq *q, uint32_t slot)
{
	struct maia_cq_entry r;

	memcpy(&r, cqe_at(&n->e, q, slot), sizeof(r));
	if (!(r.flags & MAIA_CQE_VALID))
		r.status = 0xdeadu;	/* not completed */
	return r;
}

/* maia_sim_drain() waits for jobs parked on fabric operations too. */
static struct maia_cq_entry wait_cqe(struct node *n, struct tq *q, uint32_t slot)
{
	maia_sim_drain(n->e.sim);
	return read_cqe(n, q, slot);
}

static uint32_t run(struct node *n, const struct cmdbuf *cb)
{
	return wait_cqe(n, &n->q, submit(n, &n->q, cb)).status;
}

static uint32_t remote_write(struct node *a, unsigned int port, uint32_t key, uint64_t roff,
			     uint64_t src, uint64_t size)
{
	struct cmdbuf cb;

	cb_init(&cb);
	cmd_fwrite(&cb, port, key, roff, MAIA_PHYS_HBM | src, size, false, 0, 0);
	return run(a, &cb);
}

/*
 * A 4 KiB remote write from a's port 0 to b once their cable is UP at both
 * ends. A reset stops a device's ports until its next boot, and the other
 * end may declare the peer dead only after that boot (later still on a
 * loaded host): a write refused for the link is tried again once the link
 * is back, so only the target's answer decides the status.
 */
static uint32_t remote_write_when_up(struct node *a, struct node *b, uint32_t key, uint64_t src)
{
	uint64_t start = now_ms();
	uint32_t st;

	do {
		if (!wait_up(b, 0) || !wait_up(a, 0))
			return MAIA_STATUS_FABRIC_LINK;
		st = remote_write(a, 0, key, 0, src, 4096);
	} while (st == MAIA_STATUS_FABRIC_LINK && now_ms() - start < HANG_GUARD_MS);
	return st;
}

static uint32_t remote_read(struct node *a, unsigned int port, uint32_t key, uint64_t roff,
			    uint64_t dst, uint64_t size)
{
	struct cmdbuf cb;

	cb_init(&cb);
	cmd_fread(&cb, port, key, roff, MAIA_PHYS_HBM | dst, size);
	return run(a, &cb);
}

/* A SEM_WAIT job of ASID 1 on the target (its command buffer at VA_CMD). */
static uint32_t submit_sem_wait(struct node *b, uint32_t index, uint32_t value)
{
	struct maia_cmd_sem_wait c = {
		.hdr = { .opcode = MAIA_OP_SEM_WAIT, .size = sizeof(c) },
		.index = index, .value = value, .timeout_us = 60000000u,
	};

	memcpy(host_ptr(&b->e, b->cmd_bus), &c, sizeof(c));
	return queue_push(&b->e, &b->q2, VA_CMD, sizeof(c), 1, 0, 0x9000, true);
}

static void test_two_devices(void)
{
	struct node a, b;
	const uint64_t big = 64 * MIB;
	uint64_t src, dst;
	uint32_t key, key_ro, key_wo, old, st;
	struct maia_sim_fabric_port_info ia, ib;
	static const uint64_t sizes[] = { 1, 7, 4095, 65536, 65537, 3 * 65536 + 17 };
	static const uint64_t offs[] = { 0, 4093, 1, 65535, 12345, 2 * MIB - 3 };
	bool ok = true;

	node_init(&a, 0xa000000000000001ull, 80 * MIB, 2 * MIB);
	node_init(&b, 0xb000000000000002ull, 80 * MIB, big + 2 * MIB);
	src = hbm_alloc(&a.e, big, HUGE_PAGE);
	dst = hbm_alloc(&a.e, 4 * MIB, HUGE_PAGE);
	fill_random(a.e.hbm + src, big, 7);
	plug(&a, 0, &b, 0);
	tap_ok(wait_up(&a, 0) && wait_up(&b, 0), "A.0 and B.0 UP, IDENT exchanged");
	ia = pinfo(&a, 0);
	tap_ok(ia.ident_serial == 0xb000000000000002ull && ia.ident_port == 0,
	       "A's IDENT from B names serial %016llx port %u",
	       (unsigned long long)ia.ident_serial, ia.ident_port);

	/* Windows. */
	st = win_open(&b, 1, MAIA_ACCESS_READ | MAIA_ACCESS_WRITE, VA_WIN,
		      (uint32_t)(b.win_size / MAIA_PAGE_SIZE), &key);
	tap_ok(st == MAIA_MBOX_OK && MAIA_FABRIC_KEY_GEN(key) != 0, "OPEN a read-write window: key 0x%x (slot %u gen %u)",
	       key, MAIA_FABRIC_KEY_SLOT(key), MAIA_FABRIC_KEY_GEN(key));
	tap_ok(win_open(&b, 0, MAIA_ACCESS_WRITE, VA_WIN, 1, &old) == MAIA_MBOX_EINVAL,
	       "OPEN on ASID 0 (physical): EINVAL");
	tap_ok(win_open(&b, 3, MAIA_ACCESS_WRITE, VA_WIN, 1, &old) == MAIA_MBOX_EINVAL,
	       "OPEN on an ASID without context: EINVAL");
	tap_ok(win_open(&b, 1, 4, VA_WIN, 1, &old) == MAIA_MBOX_EINVAL, "OPEN with bad access bits: EINVAL");
	tap_ok(win_open(&b, 1, MAIA_ACCESS_WRITE, VA_WIN + 8, 1, &old) == MAIA_MBOX_EINVAL,
	       "OPEN at an unaligned VA: EINVAL");
	tap_ok(win_open(&b, 1, MAIA_ACCESS_WRITE, VA_WIN, 0, &old) == MAIA_MBOX_EINVAL,
	       "OPEN of 0 pages: EINVAL");
	tap_ok(win_close(&b, 0) == MAIA_MBOX_ENOENT, "CLOSE of key 0: ENOENT");

	/* Writes of odd sizes at odd offsets; the bytes around them untouched. */
	for (unsigned int i = 0; i < sizeof(sizes) / sizeof(sizes[0]); i++) {
		uint8_t *w = b.e.hbm + b.win_pa;

		memset(w, 0x5a, 4 * MIB);
		st = remote_write(&a, 0, key, offs[i], src + i, sizes[i]);
		ok = tap_ok(st == MAIA_STATUS_OK && !memcmp(w + offs[i], a.e.hbm + src + i, sizes[i]) &&
			    (!offs[i] || w[offs[i] - 1] == 0x5a) && w[offs[i] + sizes[i]] == 0x5a,
			    "remote write of %llu B at offset %llu: status %u, bytes equal, neighbours untouched",
			    (unsigned long long)sizes[i], (unsigned long long)offs[i], st) && ok;
	}
	st = remote_write(&a, 0, key, 0, src, 0);
	tap_ok(st == MAIA_STATUS_OK, "remote write of 0 B: status %u", st);

	/* 64 MiB. */
	st = remote_write(&a, 0, key, 0, src, big);
	tap_ok(st == MAIA_STATUS_OK && !memcmp(b.e.hbm + b.win_pa, a.e.hbm + src, big),
	       "remote write of 64 MiB: status %u, every byte equal", st);
	/*
	 * The cable keeps each direction's order (cable_tx() hands frames over
	 * with its lock dropped, one sending round at a time): without loss or
	 * reordering no receiver saw a gap, so none held a frame after one or
	 * named one in a NAK (a frame its queue dropped would make one).
	 */
	ia = pinfo(&a, 0);
	ib = pinfo(&b, 0);
	tap_ok((ia.rx_held == 0 && ia.link_nak_tx == 0 && ib.rx_held == 0 &&
		ib.link_nak_tx == 0) || ia.rx_queue_drops || ib.rx_queue_drops,
	       "a clean cable kept the frames' order: frames held after a gap %llu and %llu, NAKs "
	       "sent %llu and %llu (queue drops %llu and %llu)",
	       (unsigned long long)ia.rx_held, (unsigned long long)ib.rx_held,
	       (unsigned long long)ia.link_nak_tx, (unsigned long long)ib.link_nak_tx,
	       (unsigned long long)ia.rx_queue_drops, (unsigned long long)ib.rx_queue_drops);

	/* With a semaphore: B's SEM_WAIT job (ASID 1) ends once the data landed. */
	{
		struct cmdbuf cb;
		uint32_t slot = submit_sem_wait(&b, 5, 2);
		struct maia_cq_entry c;

		memset(b.e.hbm + b.win_pa, 0, MIB);
		cb_init(&cb);
		cmd_fwrite(&cb, 0, key, 100, MAIA_PHYS_HBM | (src + 1000), MIB, true, 5, 1);
		cmd_fwrite(&cb, 0, key, 0, MAIA_PHYS_HBM | src, 0, true, 5, 1);
		st = run(&a, &cb);
		c = wait_cqe(&b, &b.q2, slot);
		tap_ok(st == MAIA_STATUS_OK && c.status == MAIA_STATUS_OK &&
		       !memcmp(b.e.hbm + b.win_pa + 100, a.e.hbm + src + 1000, MIB),
		       "1 MiB + 0 B writes with sem += 1 each: B's SEM_WAIT(2) job ends OK (%u), data landed",
		       c.status);
		cb_init(&cb);
		cmd_fwrite(&cb, 0, key, 0, MAIA_PHYS_HBM | src, 8, true, MAIA_NUM_SEMAPHORES, 1);
		tap_ok(run(&a, &cb) == MAIA_STATUS_BAD_CMD, "write with sem index out of range: BAD_CMD");

		/*
		 * B's inline path on: the worker parks the SEM_WAIT (not a cheap
		 * command), and the fabric thread, whose remote write moved the
		 * semaphore, may resume the job in the worker's place.
		 */
		maia_sim_set_inline_doorbell(b.e.sim, true);
		slot = submit_sem_wait(&b, 6, 1);
		memset(b.e.hbm + b.win_pa, 0, MIB);
		cb_init(&cb);
		cmd_fwrite(&cb, 0, key, 8, MAIA_PHYS_HBM | (src + 77), MIB, true, 6, 1);
		st = run(&a, &cb);
		c = wait_cqe(&b, &b.q2, slot);
		maia_sim_drain(b.e.sim);
		tap_ok(st == MAIA_STATUS_OK && c.status == MAIA_STATUS_OK &&
		       !memcmp(b.e.hbm + b.win_pa + 8, a.e.hbm + src + 77, MIB),
		       "inline path on B: its SEM_WAIT(1) job ends OK (%u) after a 1 MiB write with sem += 1, data landed",
		       c.status);
		maia_sim_set_inline_doorbell(b.e.sim, false);
	}

	/* Remote reads. */
	fill_random(b.e.hbm + b.win_pa, 4 * MIB, 99);
	memset(a.e.hbm + dst, 0, 4 * MIB);
	st = remote_read(&a, 0, key, 333, dst, 3 * MIB + 17);
	tap_ok(st == MAIA_STATUS_OK && !memcmp(a.e.hbm + dst, b.e.hbm + b.win_pa + 333, 3 * MIB + 17) &&
	       a.e.hbm[dst + 3 * MIB + 17] == 0, "remote read of 3 MiB + 17 B: status %u, bytes equal", st);
	st = remote_read(&a, 0, key, 5, dst, 1);
	tap_ok(st == MAIA_STATUS_OK && a.e.hbm[dst] == b.e.hbm[b.win_pa + 5], "remote read of 1 B");
	tap_ok(remote_read(&a, 0, key, 0, dst, 0) == MAIA_STATUS_OK, "remote read of 0 B");

	/* Refusals: each one a KEY status, one NAK sent by B and received by A. */
	ia = pinfo(&a, 0);
	ib = pinfo(&b, 0);
	tap_ok(ia.nak_rx == 0 && ib.nak_tx == 0, "no NAKs yet (A rx %llu, B tx %llu)",
	       (unsigned long long)ia.nak_rx, (unsigned long long)ib.nak_tx);
	st = remote_write(&a, 0, MAIA_FABRIC_KEY_SLOT(key) + 1 + (1u << 8), 0, src, 100);
	tap_ok(st == MAIA_STATUS_FABRIC_KEY, "write with a key no window has: FABRIC_KEY (%u)", st);
	st = remote_write(&a, 0, key ^ 0x100, 0, src, 100);
	tap_ok(st == MAIA_STATUS_FABRIC_KEY, "write with the right slot, wrong generation: FABRIC_KEY");
	st = remote_write(&a, 0, key, b.win_size - 10, src, 20);
	tap_ok(st == MAIA_STATUS_FABRIC_KEY, "write across the window's end: FABRIC_KEY");
	st = remote_read(&a, 0, key, b.win_size + 1, dst, 0);
	tap_ok(st == MAIA_STATUS_FABRIC_KEY, "read of 0 B beyond the window's end: FABRIC_KEY");
	win_open(&b, 1, MAIA_ACCESS_READ, VA_WIN, 1, &key_ro);
	win_open(&b, 1, MAIA_ACCESS_WRITE, VA_WIN, 1, &key_wo);
	memset(b.e.hbm + b.win_pa, 0x11, 64);
	st = remote_write(&a, 0, key_ro, 0, src, 64);
	tap_ok(st == MAIA_STATUS_FABRIC_KEY && b.e.hbm[b.win_pa] == 0x11,
	       "write into a read-only window: FABRIC_KEY, nothing landed");
	st = remote_read(&a, 0, key_wo, 0, dst, 64);
	tap_ok(st == MAIA_STATUS_FABRIC_KEY, "read of a write-only window: FABRIC_KEY");
	tap_ok(remote_read(&a, 0, key_ro, 0, dst, 64) == MAIA_STATUS_OK &&
	       remote_write(&a, 0, key_wo, 0, src, 64) == MAIA_STATUS_OK,
	       "read of the read-only, write into the write-only window: OK");
	/* Revoked, then a reused slot's old key. */
	old = key_wo;
	tap_ok(win_close(&b, key_wo) == MAIA_MBOX_OK, "CLOSE the write-only window");
	tap_ok(win_close(&b, key_wo) == MAIA_MBOX_ENOENT, "CLOSE it again: ENOENT");
	st = remote_write(&a, 0, old, 0, src, 64);
	tap_ok(st == MAIA_STATUS_FABRIC_KEY, "write with the revoked key: FABRIC_KEY");
	win_open(&b, 1, MAIA_ACCESS_WRITE, VA_WIN, 1, &key_wo);
	tap_ok(MAIA_FABRIC_KEY_SLOT(key_wo) == MAIA_FABRIC_KEY_SLOT(old) && key_wo != old,
	       "the slot is reused with a new generation (0x%x -> 0x%x)", old, key_wo);
	st = remote_write(&a, 0, old, 0, src, 64);
	tap_ok(st == MAIA_STATUS_FABRIC_KEY, "the reused slot's old key: FABRIC_KEY");
	tap_ok(remote_write(&a, 0, key_wo, 0, src, 64) == MAIA_STATUS_OK, "its new key: OK");
	ia = pinfo(&a, 0);
	ib = pinfo(&b, 0);
	tap_ok(ia.nak_rx == 8 && ib.nak_tx == 8, "8 refusals: B nak_tx %llu, A nak_rx %llu",
	       (unsigned long long)ib.nak_tx, (unsigned long long)ia.nak_rx);

	/* The target's MMU: a window page that is not mapped faults there. */
	win_open(&b, 1, MAIA_ACCESS_WRITE, VA_WIN + b.win_size, 2, &key_wo);
	st = remote_write(&a, 0, key_wo, 0, src, 64);
	tap_ok(st == MAIA_STATUS_FABRIC_REMOTE, "write into an unmapped window page: FABRIC_REMOTE (%u)", st);
	/* SET_CONTEXT disable closes the ASID's windows. */
	{
		uint64_t root2 = pt_new_root(&b.e);
		uint32_t k2;

		pt_map(&b.e, root2, VA_WIN, b.win_pa, MAIA_PTE_READ | MAIA_PTE_WRITE, true);
		mbox(&b.e, MAIA_MBOX_SET_CONTEXT, 2, (uint32_t)root2, (uint32_t)(root2 >> 32), NULL);
		win_open(&b, 2, MAIA_ACCESS_WRITE, VA_WIN, 1, &k2);
		tap_ok(remote_write(&a, 0, k2, 0, src, 64) == MAIA_STATUS_OK, "window of ASID 2: OK");
		mbox(&b.e, MAIA_MBOX_SET_CONTEXT, 2, 0, 0, NULL);
		tap_ok(remote_write(&a, 0, k2, 0, src, 64) == MAIA_STATUS_FABRIC_KEY,
		       "ASID 2 disabled: its window's key is refused");
		tap_ok(win_close(&b, k2) == MAIA_MBOX_ENOENT, "and it is closed");
	}

	/* Malformed commands and ports. */
	{
		struct cmdbuf cb;
		struct maia_cmd_fabric_write c = {
			.hdr = { .opcode = MAIA_OP_FABRIC_WRITE, .size = sizeof(c), .flags = 2 },
			.key = key, .size = 8,
		};

		cb_init(&cb);
		cb_add(&cb, &c, sizeof(c));
		tap_ok(run(&a, &cb) == MAIA_STATUS_BAD_CMD, "write with unknown flags: BAD_CMD");
		cb_init(&cb);
		cmd_fwrite(&cb, 0, key, UINT64_MAX - 4, MAIA_PHYS_HBM | src, 8, false, 0, 0);
		tap_ok(run(&a, &cb) == MAIA_STATUS_BAD_CMD, "write whose remote range wraps: BAD_CMD");
		tap_ok(remote_write(&a, NPORTS, key, 0, src, 8) == MAIA_STATUS_FABRIC_LINK,
		       "write on a port the device does not have: FABRIC_LINK");
		tap_ok(remote_write(&a, 1, key, 0, src, 8) == MAIA_STATUS_FABRIC_LINK,
		       "write on an unplugged port: FABRIC_LINK");
		cb_init(&cb);
		cmd_fwrite(&cb, 0, key, 0, 0x7000000000ull, 8, false, 0, 0);
		st = run(&a, &cb);
		tap_ok(st == MAIA_STATUS_DMA_ERROR,
		       "write from a source the requester cannot read: DMA_ERROR on the requester (%u)", st);
	}

	/*
	 * Parking: while A's write is held in the cable, another queue of A
	 * runs a job to completion.
	 */
	{
		struct cmdbuf cb, cb2;
		uint32_t slot, slot2;
		unsigned int irq0;
		struct maia_cq_entry c;
		uint64_t fence = host_alloc(&a.e, 8, 8);

		hold_at(&a.out[0], 3);
		cb_init(&cb);
		cmd_fwrite(&cb, 0, key, 0, MAIA_PHYS_HBM | src, 8 * MIB, false, 0, 0);
		slot = submit(&a, &a.q, &cb);
		wait_held(&a.out[0]);
		cb_init(&cb2);
		cmd_fence(&cb2, fence, 0x1234);
		irq0 = irq_count(&a.e, MAIA_VEC_QUEUE(1));
		slot2 = submit(&a, &a.q2, &cb2);
		/* Its interrupt is the event (drain would wait for the parked job too). */
		wait_irq(&a.e, MAIA_VEC_QUEUE(1), irq0 + 1, HANG_GUARD_MS);
		c = read_cqe(&a, &a.q2, slot2);
		tap_ok(c.status == MAIA_STATUS_OK && *(uint64_t *)host_ptr(&a.e, fence) == 0x1234 &&
		       !(cqe_at(&a.e, &a.q, slot)->flags & MAIA_CQE_VALID),
		       "a job on another queue completes while the fabric write is parked");
		release(&a.out[0]);
		c = wait_cqe(&a, &a.q, slot);
		tap_ok(c.status == MAIA_STATUS_OK && !memcmp(b.e.hbm + b.win_pa, a.e.hbm + src, 8 * MIB),
		       "the parked write then completes (%u)", c.status);
	}

	/* CLOSE while writes stream in: nothing lands after CLOSE answered. */
	{
		struct cmdbuf cb;
		uint32_t slot;
		struct maia_cq_entry c;
		uint8_t *snap = malloc(16 * MIB);

		memset(b.e.hbm + b.win_pa, 0, 16 * MIB);
		hold_at(&a.out[0], 20);
		cb_init(&cb);
		cmd_fwrite(&cb, 0, key, 0, MAIA_PHYS_HBM | src, 16 * MIB, false, 0, 0);
		slot = submit(&a, &a.q, &cb);
		wait_held(&a.out[0]);
		tap_ok(win_close(&b, key) == MAIA_MBOX_OK, "CLOSE the window while a 16 MiB write streams in");
		memcpy(snap, b.e.hbm + b.win_pa, 16 * MIB);
		release(&a.out[0]);
		c = wait_cqe(&a, &a.q, slot);
		tap_ok(c.status == MAIA_STATUS_FABRIC_KEY, "the write fails with FABRIC_KEY (%u)", c.status);
		tap_ok(!memcmp(snap, b.e.hbm + b.win_pa, 16 * MIB) &&
		       memcmp(snap, a.e.hbm + src, 16 * MIB),
		       "no byte landed after CLOSE answered (and the write was cut short)");
		free(snap);
	}
	unplug(&a, &b);
	node_fini(&a);
	node_fini(&b);
}

/* Loss, duplication and reordering on both directions: the link layer hides them. */
static void test_lossy(unsigned int window, bool lend)
{
	struct node a, b;
	uint64_t src, dst;
	uint32_t key, st;
	struct maia_sim_fabric_port_info ia, ib;

	env_fabric_window = window;
	env_fabric_tx_lend = lend ? cable_tx_lend : NULL;
	node_init(&a, 0xa100000000000001ull, 16 * MIB, 2 * MIB);
	node_init(&b, 0xb100000000000002ull, 16 * MIB, 4 * MIB);
	env_fabric_window = 0;
	env_fabric_tx_lend = NULL;
	src = hbm_alloc(&a.e, 4 * MIB, HUGE_PAGE);
	dst = hbm_alloc(&a.e, 4 * MIB, HUGE_PAGE);
	fill_random(a.e.hbm + src, 4 * MIB, 3);
	faults(&a, 1, 20000, 20000, 20000, 11);
	faults(&b, 1, 20000, 20000, 20000, 12);
	plug(&a, 1, &b, 1);
	tap_ok(wait_up(&a, 1) && wait_up(&b, 1), "lossy cable (2%% loss, dup, reorder each way), window %u: UP", window ? window : MAIA_FABRIC_WINDOW);
	win_open(&b, 1, MAIA_ACCESS_READ | MAIA_ACCESS_WRITE, VA_WIN, 1024, &key);
	st = remote_write(&a, 1, key, 77, src, 2 * MIB + 333);
	tap_ok(st == MAIA_STATUS_OK && !memcmp(b.e.hbm + b.win_pa + 77, a.e.hbm + src, 2 * MIB + 333),
	       "lossy, window %u: write of 2 MiB + 333 B correct (%u)",
	       window ? window : MAIA_FABRIC_WINDOW, st);
	fill_random(b.e.hbm + b.win_pa, 4 * MIB, 4);
	st = remote_read(&a, 1, key, 1, dst, MIB + 4097);
	tap_ok(st == MAIA_STATUS_OK && !memcmp(a.e.hbm + dst, b.e.hbm + b.win_pa + 1, MIB + 4097),
	       "lossy, window %u: read of 1 MiB + 4097 B correct (%u)",
	       window ? window : MAIA_FABRIC_WINDOW, st);
	ia = pinfo(&a, 1);
	tap_ok(ia.retransmits > 0 && a.out[1].lost > 0 && a.out[1].dups > 0 && a.out[1].reordered > 0,
	       "the cable lost %lu, duplicated %lu, reordered %lu frames; %llu retransmits",
	       a.out[1].lost, a.out[1].dups, a.out[1].reordered, (unsigned long long)ia.retransmits);
	ib = pinfo(&b, 1);
	unplug(&a, &b);
	node_fini(&a);
	node_fini(&b);
	if (lend) {
		unsigned int count, changed = kept_put_all(&count);

		/* Every retransmission of a device's DATA met its frame still lent. */
		tap_ok(count > 0 && !changed && !lent_again && !kept_over &&
		       ia.tx_lend_copies > 0 && ia.tx_lend_copies + ib.tx_lend_copies ==
		       ia.retransmits + ib.retransmits,
		       "lent DATA frames: %u kept past both devices, %u changed, %lu lent twice; "
		       "retransmissions %llu + %llu, all sent as copies (%llu + %llu)", count,
		       changed, lent_again, (unsigned long long)ia.retransmits,
		       (unsigned long long)ib.retransmits, (unsigned long long)ia.tx_lend_copies,
		       (unsigned long long)ib.tx_lend_copies);
	}
}

/* fabric_window must be 0 or a power of two up to MAIA_FABRIC_WINDOW. */
static void test_bad_window(void)
{
	static const unsigned int bad[] = { 3, MAIA_FABRIC_WINDOW * 2 };

	for (unsigned int i = 0; i < 2; i++) {
		struct env e;
		int err;

		env_fabric_window = bad[i];
		err = env_init_fabric(&e, 1, 4 * MIB, MIB, 1, 0, cable_tx, NULL);
		env_fabric_window = 0;
		tap_ok(err == -EINVAL, "fabric_window %u: the device is not created (%d)", bad[i],
		       err);
		if (!err)
			env_fini(&e);
	}
}

/* Three devices in a ring (i.0 -> i+1.1): everyone writes ahead and reads behind at once. */
static void test_ring3(void)
{
	struct node n[3];
	uint64_t src[3], dst[3];
	uint32_t key[3], ws[3], rs[3];
	const uint64_t size = 2 * MIB + 5;
	bool ok = true;

	for (unsigned int i = 0; i < 3; i++) {
		node_init(&n[i], 0xc000000000000000ull + i, 24 * MIB, 8 * MIB);
		src[i] = hbm_alloc(&n[i].e, 4 * MIB, HUGE_PAGE);
		dst[i] = hbm_alloc(&n[i].e, 4 * MIB, HUGE_PAGE);
		fill_random(n[i].e.hbm + src[i], 4 * MIB, 100 + i);
		win_open(&n[i], 1, MAIA_ACCESS_READ | MAIA_ACCESS_WRITE, VA_WIN, 2048, &key[i]);
	}
	for (unsigned int i = 0; i < 3; i++) {
		plug(&n[i], 0, &n[(i + 1) % 3], 1);
		faults(&n[i], 0, 5000, 5000, 5000, 21 + i);
	}
	for (unsigned int i = 0; i < 3; i++)
		ok = wait_up(&n[i], 0) && wait_up(&n[i], 1) && ok;
	tap_ok(ok, "ring of 3: every port UP");
	/* The window's first half takes the write from behind, the reads see the second half. */
	for (unsigned int i = 0; i < 3; i++)
		fill_random(n[i].e.hbm + n[i].win_pa + 4 * MIB + 64, size, 200 + i);
	for (unsigned int i = 0; i < 3; i++) {
		struct cmdbuf cw, cr;
		unsigned int next = (i + 1) % 3, prev = (i + 2) % 3;

		cb_init(&cw);
		cmd_fwrite(&cw, 0, key[next], 0, MAIA_PHYS_HBM | src[i], size, false, 0, 0);
		ws[i] = submit(&n[i], &n[i].q, &cw);
		cb_init(&cr);
		cmd_fread(&cr, 1, key[prev], 4 * MIB + 64, MAIA_PHYS_HBM | dst[i], size);
		rs[i] = submit(&n[i], &n[i].q2, &cr);
	}
	for (unsigned int i = 0; i < 3; i++) {
		unsigned int next = (i + 1) % 3, prev = (i + 2) % 3;
		uint32_t w = wait_cqe(&n[i], &n[i].q, ws[i]).status;
		uint32_t r = wait_cqe(&n[i], &n[i].q2, rs[i]).status;

		tap_ok(w == MAIA_STATUS_OK && r == MAIA_STATUS_OK &&
		       !memcmp(n[next].e.hbm + n[next].win_pa, n[i].e.hbm + src[i], size) &&
		       !memcmp(n[i].e.hbm + dst[i], n[prev].e.hbm + n[prev].win_pa + 4 * MIB + 64, size),
		       "ring of 3: device %u wrote 2 MiB + 5 B to %u and read as much from %u (%u, %u)",
		       i, next, prev, w, r);
	}
	for (unsigned int i = 0; i < 3; i++)
		unplug(&n[i], &n[(i + 1) % 3]);
	for (unsigned int i = 0; i < 3; i++)
		node_fini(&n[i]);
}

/* Failures mid-transfer: a pulled cable, a target reset, a requester reset. */
static void test_failures(void)
{
	struct node a, b;
	uint64_t src;
	uint32_t key, slot, st;
	struct maia_cq_entry c;
	struct cmdbuf cb;
	struct maia_sim_fabric_port_info ia;

	node_init(&a, 0xa200000000000001ull, 24 * MIB, 2 * MIB);
	node_init(&b, 0xb200000000000002ull, 24 * MIB, 16 * MIB);
	src = hbm_alloc(&a.e, 8 * MIB, HUGE_PAGE);
	fill_random(a.e.hbm + src, 8 * MIB, 5);
	plug(&a, 0, &b, 0);
	tap_ok(wait_up(&a, 0) && wait_up(&b, 0), "pair UP");
	win_open(&b, 1, MAIA_ACCESS_WRITE, VA_WIN, 4096, &key);

	/* Target reset while the transfer is held mid-way. */
	hold_at(&a.out[0], 10);
	cb_init(&cb);
	cmd_fwrite(&cb, 0, key, 0, MAIA_PHYS_HBM | src, 8 * MIB, false, 0, 0);
	slot = submit(&a, &a.q, &cb);
	wait_held(&a.out[0]);
	maia_sim_reset(b.e.sim);
	release(&a.out[0]);
	c = wait_cqe(&a, &a.q, slot);
	tap_ok(c.status == MAIA_STATUS_FABRIC_LINK,
	       "target reset mid-write: the requester's job fails with FABRIC_LINK (%u)", c.status);
	boot_or_die(&b.e);
	mbox(&b.e, MAIA_MBOX_SET_CONTEXT, 1, (uint32_t)b.root, (uint32_t)(b.root >> 32), NULL);
	st = remote_write_when_up(&a, &b, key, src);
	tap_ok(st == MAIA_STATUS_FABRIC_KEY,
	       "after the target's reset its old key is refused (reset closed every window) (%u)", st);
	win_open(&b, 1, MAIA_ACCESS_WRITE, VA_WIN, 4096, &key);
	st = remote_write_when_up(&a, &b, key, src);
	tap_ok(st == MAIA_STATUS_OK, "a new window works again (%u)", st);
	cb_init(&cb);
	cmd_fwrite(&cb, 0, key, 0, MAIA_PHYS_HBM | src, 8 * MIB, false, 0, 0);

	/*
	 * Requester reset mid-write: the target's fabric thread is held at its
	 * first frame back (an ack), so the write cannot complete; the reset
	 * of the requester then aborts the job.
	 */
	fw_fabric_inline_rx(false);	/* B's own thread held (hold_at()) */
	pthread_mutex_lock(&b.out[0].lock);
	b.out[0].hold_any = true;
	pthread_mutex_unlock(&b.out[0].lock);
	slot = submit(&a, &a.q, &cb);
	wait_held(&b.out[0]);
	maia_sim_reset(a.e.sim);
	release(&b.out[0]);
	c = read_cqe(&a, &a.q, slot);
	tap_ok(c.status == MAIA_STATUS_ABORTED,
	       "requester reset mid-write: its job ends ABORTED (%u)", c.status);
	boot_or_die(&a.e);
	queue_setup(&a.e, &a.q, 0, 64, MAIA_QUEUE_PRIO_NORMAL);
	queue_setup(&a.e, &a.q2, 1, 64, MAIA_QUEUE_PRIO_NORMAL);
	tap_ok(wait_up(&a, 0), "requester's link UP again after its reset");
	tap_ok(remote_write(&a, 0, key, 0, src, 4096) == MAIA_STATUS_OK,
	       "and its next write works");

	/* The cable pulled mid-write: the job fails with FABRIC_LINK, it does not hang. */
	cut_at(&a.out[0], &b.out[0], 10);
	slot = submit(&a, &a.q, &cb);
	c = wait_cqe(&a, &a.q, slot);
	ia = pinfo(&a, 0);
	tap_ok(c.status == MAIA_STATUS_FABRIC_LINK && ia.dead_peer >= 1,
	       "cable pulled mid-write: FABRIC_LINK (%u) once the peer is declared dead (%llu)",
	       c.status, (unsigned long long)ia.dead_peer);
	tap_ok(remote_write(&a, 0, key, 0, src, 4096) == MAIA_STATUS_FABRIC_LINK,
	       "a write on the dead port fails at once with FABRIC_LINK");
	unplug(&a, &b);
	node_fini(&a);
	node_fini(&b);
}

/*
 * The frame CRC (a carry-less multiply path for the bulk when the CPU has
 * one) against the harness's bitwise reference, at every length around
 * its 16- and 64-byte steps and at a full frame's payload.
 */
static void test_crc(void)
{
	static uint8_t buf[MAIA_FABRIC_MAX_PAYLOAD + 64];
	struct maia_fabric_hdr h;
	bool ok = true;

	fill_random(buf, sizeof(buf), 77);
	memset(&h, 0, sizeof(h));
	h.type = MAIA_FABRIC_DATA;
	h.seq = 12345;
	for (uint32_t len = 0; len <= 300 && ok; len++) {
		uint8_t ref[sizeof(h) + 300];
		size_t at = len % 13;	/* unaligned starts too */

		memcpy(ref, &h, sizeof(h));
		memcpy(ref + sizeof(h), buf + at, len);
		ok = fw_fabric_crc(&h, buf + at, len) == ref_crc32(ref, sizeof(h) + len);
	}
	tap_ok(ok, "frame CRC equals the bitwise reference for payloads of 0..300 bytes");
	{
		static uint8_t ref[sizeof(h) + MAIA_FABRIC_MAX_PAYLOAD];

		memcpy(ref, &h, sizeof(h));
		memcpy(ref + sizeof(h), buf + 3, MAIA_FABRIC_MAX_PAYLOAD);
		tap_ok(fw_fabric_crc(&h, buf + 3, MAIA_FABRIC_MAX_PAYLOAD) ==
		       ref_crc32(ref, sizeof(ref)), "frame CRC of a full 65,584-byte payload");
	}
}

int main(void)
{
	test_crc();
	test_two_devices();
	test_lossy(0, false);
	/* Two frames in flight, as over UDP (Documentation/cluster.rst). */
	test_lossy(2, false);
	/* DATA frames lent to the host (maia_sim_ops.fabric_tx_lend), as QEMU does. */
	test_lossy(0, true);
	test_bad_window();
	test_ring3();
	test_failures();
	/* Every device is gone: what it was lent, used or dropped, came back once. */
	tap_ok(lent_frames > 0 && released_frames == lent_frames,
	       "lent frames (duplicates, reordered ones): %lu lent, %lu released", lent_frames,
	       released_frames);
	return tap_done();
}
