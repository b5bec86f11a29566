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
#include <pthread.h>
#include <stdlib.h>

#include "fw_fabric.h"

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

void fw_buf_free(void *p)
{
	struct fw_buf *b;

	if (!p)
		return;
	b = buf_of(p);
	if (__atomic_sub_fetch(&b->refs, 1, __ATOMIC_ACQ_REL))
		return;
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
