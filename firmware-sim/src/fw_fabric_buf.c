// SPDX-License-Identifier: MIT
/*
 * Frame buffers, recycled. Every data frame needs two buffers of about
 * 64 KiB (the sender's message, the receiver's copy), allocated on one
 * thread and freed on another. glibc hands a freed block at the top of a
 * thread's arena back to the kernel (madvise), and the next frame faults
 * its pages in and zeroes them again: page faults and page clearing were
 * 10-15 % of a host's CPU time in a large all-reduce (perf, Documentation/
 * hw/fabric.rst "Performance"). Buffers of up to FW_BUF_BIG bytes are kept
 * on a free list instead, at most FW_BUF_KEEP of them per process.
 *
 * Every buffer has a header in front with its capacity and a reference
 * count: a message the link keeps for retransmission can be lent to the
 * host's transmit path (maia_sim_ops.fabric_tx_lend) at the same time, and
 * whoever drops the last reference frees it. A buffer of any other size is
 * plain malloc()/free().
 *
 * A frame lent without its CRC (fw_fabric.h, fw_buf_set_unsealed()) says
 * so in its header, so that maia_sim_fabric_frame_seal() knows whether to
 * compute it: the link sets the mark before it lends the frame, the host
 * clears it while it holds a reference, and the link never writes a
 * buffer someone else holds, so the two never touch it at once.
 */
#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "fw_fabric.h"
#include "fw_fabric_ref.h"

#define FW_BUF_BIG	(FW_LINK_HEADROOM + MAIA_FABRIC_BACKEND_MAX_FRAME)
#define FW_BUF_SMALL	4096u		/* below this, malloc's own bins do well */
#if FW_FABRIC_ASAN
#define FW_BUF_KEEP	0u		/* a use after free must reach ASan */
#else
#define FW_BUF_KEEP	256u		/* at most 17.5 MiB kept */
#endif

struct fw_buf {
	union {
		struct fw_buf *next;	/* on the free list */
		size_t cap;		/* in use: FW_BUF_BIG, or 0 for a plain block */
	};
	int refs;			/* in use: references (atomic) */
	bool unsealed;			/* in use: a frame whose CRC is not filled in */
	struct fw_ref *ref;		/* in use: its data elsewhere (fw_fabric_ref.h) */
	max_align_t align[];		/* the data, aligned for any type */
};

static struct fw_buf *buf_of(const void *p)
{
	return (struct fw_buf *)((const char *)p - offsetof(struct fw_buf, align));
}

static pthread_mutex_t pool_lock = PTHREAD_MUTEX_INITIALIZER;
/* Under pool_lock. */
static struct fw_buf *pool;
static unsigned int pool_len;

void *fw_buf_alloc(size_t len)
{
	struct fw_buf *b = NULL;

	if (len < FW_BUF_SMALL || len > FW_BUF_BIG) {
		b = malloc(sizeof(*b) + (len ? len : 1));
		if (!b)
			return NULL;
		b->cap = 0;
		b->refs = 1;
		b->unsealed = false;
		b->ref = NULL;
		return b->align;
	}
	pthread_mutex_lock(&pool_lock);
	if (pool) {
		b = pool;
		pool = b->next;
		pool_len--;
	}
	pthread_mutex_unlock(&pool_lock);
	if (!b)
		b = malloc(sizeof(*b) + FW_BUF_BIG);
	if (!b)
		return NULL;
	b->cap = FW_BUF_BIG;
	b->refs = 1;
	b->unsealed = false;
	b->ref = NULL;
	return b->align;
}

void fw_buf_get(const void *p)
{
	__atomic_add_fetch(&buf_of(p)->refs, 1, __ATOMIC_RELAXED);
}

bool fw_buf_shared(const void *p)
{
	/* Acquire: the other holders' last reads happen before our next write. */
	return __atomic_load_n(&buf_of(p)->refs, __ATOMIC_ACQUIRE) > 1;
}

void fw_buf_set_unsealed(void *p, bool unsealed)
{
	buf_of(p)->unsealed = unsealed;
}

bool fw_buf_unsealed(const void *p)
{
	return buf_of(p)->unsealed;
}

static void ref_release(struct fw_ref *r);

void fw_buf_free(void *p)
{
	struct fw_buf *b;

	if (!p)
		return;
	b = buf_of(p);
	if (__atomic_sub_fetch(&b->refs, 1, __ATOMIC_ACQ_REL))
		return;
	if (b->ref) {
		ref_release(b->ref);
		b->ref = NULL;
	}
	if (b->cap == FW_BUF_BIG) {
		pthread_mutex_lock(&pool_lock);
		if (pool_len + 1 <= FW_BUF_KEEP) {	/* not "<": KEEP is 0 under ASan */
			b->next = pool;
			pool = b;
			pool_len++;
			b = NULL;
		}
		pthread_mutex_unlock(&pool_lock);
	}
	free(b);
}

/*
 * ---- frames that point at device memory (fw_fabric_ref.h) ----
 *
 * One lock for the process's records: a record is looked up by the
 * frame's address (a lent frame's flag alone proves nothing: shared memory
 * or a peer process may set it), pinned while a receiver reads its data,
 * and its data copied into the frame only while nobody has it pinned.
 */
struct fw_ref {
	struct fw_ref *next;		/* hash chain */
	struct fw_ref *onext, **oprev;	/* the owner's list, while it points */
	uint8_t *frame;			/* the buffer (fw_buf_alloc()) */
	size_t data_off;		/* where the data belong in it */
	const uint8_t *src;		/* where they are; NULL: copied in */
	uint32_t len;
	unsigned int pins;
	struct fw_ref_owner *owner;	/* NULL: copied in */
};

#define REF_BUCKETS	256u

static pthread_mutex_t ref_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t ref_cond = PTHREAD_COND_INITIALIZER;
/* Under ref_lock. */
static struct fw_ref *ref_hash[REF_BUCKETS];
static unsigned int ref_count;

__thread struct fw_ref_rx fw_ref_cur;

static struct fw_ref **bucket(const void *frame)
{
	uintptr_t a = (uintptr_t)frame;

	return &ref_hash[(a >> 6 ^ a >> 14) % REF_BUCKETS];
}

/* The record of frame, or NULL. ref_lock held. */
static struct fw_ref *ref_find_locked(const void *frame)
{
	struct fw_ref *r = *bucket(frame);

	while (r && r->frame != frame)
		r = r->next;
	return r;
}

int fw_ref_attach(void *frame, size_t data_off, const void *src, uint32_t len,
		  struct fw_ref_owner *owner)
{
	struct fw_ref *r = malloc(sizeof(*r)), **head;

	if (!r)
		return -ENOMEM;
	r->frame = frame;
	r->data_off = data_off;
	r->src = src;
	r->len = len;
	r->pins = 0;
	r->owner = owner;
	pthread_mutex_lock(&ref_lock);
	head = bucket(frame);
	r->next = *head;
	*head = r;
	r->onext = owner->head;
	r->oprev = &owner->head;
	if (owner->head)
		owner->head->oprev = &r->onext;
	owner->head = r;
	__atomic_add_fetch(&owner->out, 1, __ATOMIC_RELEASE);
	owner->frames++;
	ref_count++;
	/* Only the buffer's one holder (the link, before it queues it) gets here. */
	buf_of(frame)->ref = r;
	pthread_mutex_unlock(&ref_lock);
	return 0;
}

/* Its owner lets go of it. ref_lock held. */
static void ref_detach_locked(struct fw_ref *r)
{
	if (!r->owner)
		return;
	*r->oprev = r->onext;
	if (r->onext)
		r->onext->oprev = r->oprev;
	__atomic_sub_fetch(&r->owner->out, 1, __ATOMIC_RELEASE);
	r->owner = NULL;
}

/* The data copied into the frame: it points nowhere any more. ref_lock held, no pins. */
static void ref_fill_locked(struct fw_ref *r)
{
	if (r->src) {
		memcpy(r->frame + r->data_off, r->src, r->len);
		r->src = NULL;
	}
	ref_detach_locked(r);
}

/* The buffer's last reference went: nobody holds the frame any more. */
static void ref_release(struct fw_ref *r)
{
	struct fw_ref **pp;

	pthread_mutex_lock(&ref_lock);
	for (pp = bucket(r->frame); *pp != r; pp = &(*pp)->next)
		;
	*pp = r->next;
	ref_detach_locked(r);
	ref_count--;
	pthread_mutex_unlock(&ref_lock);
	free(r);
}

bool fw_ref_live(const void *frame)
{
	struct fw_ref *r = buf_of(frame)->ref;
	bool live;

	if (!r)
		return false;
	pthread_mutex_lock(&ref_lock);
	live = r->src != NULL;
	pthread_mutex_unlock(&ref_lock);
	return live;
}

bool fw_ref_msg_has(const void *msg)
{
	return buf_of((const uint8_t *)msg - FW_LINK_HEADROOM)->ref != NULL;
}

void fw_ref_msg_read(const void *msg, void *dst, size_t len)
{
	const uint8_t *frame = (const uint8_t *)msg - FW_LINK_HEADROOM;
	struct fw_ref *r = buf_of(frame)->ref;
	size_t head;

	if (!r) {
		memcpy(dst, msg, len);
		return;
	}
	pthread_mutex_lock(&ref_lock);
	head = r->data_off - FW_LINK_HEADROOM;
	memcpy(dst, msg, head);
	memcpy((uint8_t *)dst + head, r->src ? r->src : frame + r->data_off, len - head);
	pthread_mutex_unlock(&ref_lock);
}

void fw_ref_seal(void *frame, size_t len)
{
	struct fw_ref *r = buf_of(frame)->ref;
	struct maia_fabric_hdr h;

	if (!r || len < MAIA_FABRIC_MIN_FRAME)
		return;
	pthread_mutex_lock(&ref_lock);
	while (r->pins)
		pthread_cond_wait(&ref_cond, &ref_lock);
	ref_fill_locked(r);
	memcpy(&h, (uint8_t *)frame + MAIA_ETH_HLEN, sizeof(h));
	h.flags &= (uint16_t)~MAIA_FABRIC_F_REF;
	memcpy((uint8_t *)frame + MAIA_ETH_HLEN, &h, sizeof(h));
	pthread_mutex_unlock(&ref_lock);
}

struct fw_ref *fw_ref_pin(const void *frame)
{
	struct fw_ref *r;

	pthread_mutex_lock(&ref_lock);
	r = ref_find_locked(frame);
	if (r)
		r->pins++;
	pthread_mutex_unlock(&ref_lock);
	return r;
}

void fw_ref_unpin(struct fw_ref *r)
{
	pthread_mutex_lock(&ref_lock);
	if (!--r->pins)
		pthread_cond_broadcast(&ref_cond);
	pthread_mutex_unlock(&ref_lock);
}

struct fw_ref_rx fw_ref_rx_enter(const struct fw_ref *r, const void *frame)
{
	struct fw_ref_rx saved = fw_ref_cur;

	/* Pinned: src does not change until fw_ref_unpin(). */
	fw_ref_cur.msg = (const uint8_t *)frame + FW_LINK_HEADROOM;
	fw_ref_cur.data = r->src;
	return saved;
}

void fw_ref_copy(void *dst, const void *msg, size_t len)
{
	if (msg != fw_ref_cur.msg || !fw_ref_cur.data || len < MAIA_FABRIC_MSG_HDR_LEN) {
		memcpy(dst, msg, len);
		return;
	}
	memcpy(dst, msg, MAIA_FABRIC_MSG_HDR_LEN);
	memcpy((uint8_t *)dst + MAIA_FABRIC_MSG_HDR_LEN, fw_ref_cur.data,
	       len - MAIA_FABRIC_MSG_HDR_LEN);
}

unsigned int fw_ref_owner_settle(struct fw_ref_owner *owner, bool wait)
{
	unsigned int out;

	if (!fw_ref_owner_out(owner))
		return 0;
	pthread_mutex_lock(&ref_lock);
	for (struct fw_ref *r = owner->head, *next; r; r = next) {
		next = r->onext;
		if (r->pins && !wait)
			continue;
		while (r->pins)
			pthread_cond_wait(&ref_cond, &ref_lock);
		ref_fill_locked(r);
		/* The list may have changed while we waited: from the start again. */
		next = owner->head;
	}
	out = owner->out;
	pthread_mutex_unlock(&ref_lock);
	return out;
}

unsigned int fw_ref_records(void)
{
	unsigned int n;

	pthread_mutex_lock(&ref_lock);
	n = ref_count;
	pthread_mutex_unlock(&ref_lock);
	return n;
}

int fw_ref_state(const void *frame)
{
	struct fw_ref *r;
	int st;

	pthread_mutex_lock(&ref_lock);
	r = ref_find_locked(frame);
	st = !r ? -1 : r->src != NULL;
	pthread_mutex_unlock(&ref_lock);
	return st;
}
