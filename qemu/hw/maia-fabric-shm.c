/*
 * Maia accelerator: a fabric cable between two QEMU processes over shared
 * memory, beside the NIC path (Documentation/hw/fabric.rst, "Shared-memory
 * cables").
 *
 * Property fabricN-shm names a memory backend with share=on (usually
 * memory-backend-file with a mem-path under /dev/shm); the two QEMUs name
 * the same file. The layout is maia-fabric-shm.h: two rings of frame slots,
 * one per direction. The frames and the link protocol are the NIC path's.
 *
 * Sides: each process takes side 0 or 1 of the file with an exclusive
 * open-file-description lock on byte 0 or 1 (qemu_lock_fd()), which the
 * kernel drops when the process dies, so a restarted QEMU takes the side of
 * the one that was killed. Two ports of one process may be the two ends of
 * one backend (an in-process list of the sides taken, claims).
 *
 * Sending: the device's fabric thread (no BQL), as on a direct cable, copies
 * the frame into the next slot of its ring and publishes the head; a full
 * ring drops the frame and reports it not sent, as the NIC path's full
 * queue does (the link layer retransmits). It makes a futex system call
 * only when the receiver said it may sleep (ring->waiting).
 *
 * Receiving: a thread per port drains the other side's ring, and sleeps on
 * the ring's futex word (no FUTEX_PRIVATE: the waker is another process).
 * It copies each frame once, out of the slot into a buffer of its own, frees
 * the slot at once and lends the buffer to the device
 * (maia_sim_fabric_rx_lent(), as a direct cable does), which gives it back
 * when done (maia_fabric_shm_buf_release()). So the device never parses
 * shared memory: a peer changing a slot while we copy it only makes a
 * garbage frame in our buffer, which the device parses as it would any
 * frame from a hostile peer, and nothing it checked can change under it.
 * The device does not check a lent frame's CRC: memory does not corrupt
 * frames in transit, and a hostile peer could compute the CRC anyway.
 * The buffers come from a small per-port cache (MaiaFabricShmPool), which
 * lives while one is lent: the device may give one back after the port
 * is closed.
 *
 * The other process may write anything anywhere in the file: indices are
 * kept in private copies and only published into the file; every index and
 * length read from it is bounded before use; a ring whose indices make no
 * sense is resynchronised (frames dropped, a trace event), never trusted.
 *
 * Link state: a shm port still has a NIC, with no netdev, so that
 * `set_link <id>.fabricN off` takes its carrier away as on any port: frames
 * are then neither sent nor received, and the device takes the link DOWN
 * after its keepalive timeout. A killed peer looks the same (its ring stays
 * silent, ours fills); a restarted one takes the side again and the HELLOs
 * bring the link back.
 *
 * Copyright (c) 2026 The Maia accelerator stack authors
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */

#include "qemu/osdep.h"
#include "qemu/atomic.h"
#include "qemu/futex.h"
#include "qapi/error.h"
#include "qom/object.h"
#include "system/hostmem.h"
#include "exec/memory.h"
#include "trace.h"

#include "maia/hw/fabric.h"
#include "maia-fabric.h"
#include "maia-fabric-shm.h"

/* The receive thread's longest sleep: it rereads its indices this often. */
#define MAIA_FABRIC_SHM_IDLE_NS     (100 * 1000 * 1000)
/* Receive buffers a port keeps for reuse: a window of DATA, and acks. */
#define MAIA_FABRIC_SHM_RX_CACHE    (MAIA_FABRIC_WINDOW + 16u)

typedef struct MaiaFabricShmPool MaiaFabricShmPool;

/* A received frame, copied out of its slot and lent to the device. */
typedef struct MaiaFabricShmBuf {
    MaiaFabricShmPool *pool;
    struct MaiaFabricShmBuf *next;  /* in pool->free */
    uint8_t frame[MAIA_FABRIC_MAX_FRAME];
} MaiaFabricShmBuf;

/*
 * A port's receive buffers. refs: the port's, and one per buffer lent to
 * the device (atomic); the last unref frees it.
 */
struct MaiaFabricShmPool {
    QemuMutex lock;                 /* protects free and nfree */
    MaiaFabricShmBuf *free;
    unsigned int nfree;
    unsigned int refs;
};

struct MaiaFabricShm {
    MaiaFabricPort *port;
    HostMemoryBackend *be;
    uint8_t *base;                  /* the backend's memory */
    MaiaFabricShmHeader *hdr;       /* = base */
    int fd;                         /* the backend's file; -1: no lock */
    unsigned int side;              /* this end: 0 or 1 */

    /* lock protects running and head: the sender against detach. */
    QemuMutex lock;
    bool running;                   /* frames may be sent */
    uint32_t head;                  /* our copy of ring[side].head */

    QemuThread thread;
    bool thread_started;            /* BQL */
    bool stop;                      /* atomic: the receive thread ends */
    MaiaFabricShmPool *pool;        /* the receive thread's buffers */
};

/*
 * The sides this process holds, per backend (BQL): the file lock cannot
 * tell two ports of one process apart.
 */
typedef struct MaiaFabricShmClaim {
    HostMemoryBackend *be;
    unsigned int sides;             /* bit s: side s taken here */
    QLIST_ENTRY(MaiaFabricShmClaim) next;
} MaiaFabricShmClaim;

static QLIST_HEAD(, MaiaFabricShmClaim) claims =
    QLIST_HEAD_INITIALIZER(claims);

static MaiaFabricShmClaim *maia_fabric_shm_claim(HostMemoryBackend *be)
{
    MaiaFabricShmClaim *c;

    QLIST_FOREACH(c, &claims, next) {
        if (c->be == be) {
            return c;
        }
    }
    return NULL;
}

static MaiaFabricShmSlot *maia_fabric_shm_slot(MaiaFabricShm *s,
                                               unsigned int ring,
                                               uint32_t index)
{
    return (MaiaFabricShmSlot *)(s->base +
                                 maia_fabric_shm_slot_offset(ring, index));
}

/* Wakes the consumer of ring r if it said it may sleep. */
static void maia_fabric_shm_wake(MaiaFabricShmRing *r, bool always)
{
    smp_mb();       /* head (or stop) before waiting: pairs with the rx's */
    if (always || qatomic_read(&r->waiting)) {
        qatomic_inc(&r->kick);
        qemu_futex_wake(&r->kick, INT_MAX);
    }
}

int maia_fabric_shm_tx(MaiaFabricPort *p, const void *frame, size_t len)
{
    MaiaFabricShm *s = p->shm;
    MaiaFabricShmRing *r;
    MaiaFabricShmSlot *slot;
    const char *why = NULL;
    uint32_t used;

    qemu_mutex_lock(&s->lock);
    r = &s->hdr->ring[s->side];
    if (!s->running) {
        why = "cable detached";
    } else if (len > MAIA_FABRIC_MAX_FRAME) {
        why = "longer than a ring slot";
    } else if (!qatomic_read(&s->hdr->side[!s->side].attached)) {
        why = "no peer on the cable";
    } else {
        used = s->head - qatomic_load_acquire(&r->tail);
        if (used > MAIA_FABRIC_SHM_SLOTS) {
            /* The tail is not ours to fix: show our head, wake the reader. */
            trace_maia_fabric_shm_corrupt(p->index, "tx", s->head, s->head -
                                          used);
            qatomic_store_release(&r->head, s->head);
            maia_fabric_shm_wake(r, true);
            why = "ring indices corrupt";
        } else if (used == MAIA_FABRIC_SHM_SLOTS) {
            why = "ring full";
        }
    }
    if (why) {
        qemu_mutex_unlock(&s->lock);
        trace_maia_fabric_tx_drop(p->index, len, why);
        return -1;
    }
    slot = maia_fabric_shm_slot(s, s->side, s->head);
    qatomic_set(&slot->len, len);
    memcpy(slot->frame, frame, len);
    s->head++;
    qatomic_store_release(&r->head, s->head);
    maia_fabric_shm_wake(r, false);
    qemu_mutex_unlock(&s->lock);
    trace_maia_fabric_shm_tx(p->index, len);
    return 0;
}

static MaiaFabricShmPool *maia_fabric_shm_pool_new(void)
{
    MaiaFabricShmPool *pool = g_new0(MaiaFabricShmPool, 1);

    qemu_mutex_init(&pool->lock);
    pool->refs = 1;
    return pool;
}

static void maia_fabric_shm_pool_unref(MaiaFabricShmPool *pool)
{
    MaiaFabricShmBuf *b;

    if (qatomic_fetch_dec(&pool->refs) != 1) {
        return;
    }
    while ((b = pool->free)) {
        pool->free = b->next;
        g_free(b);
    }
    qemu_mutex_destroy(&pool->lock);
    g_free(pool);
}

/* A buffer to copy a frame into: a cached one, or a new one. */
static MaiaFabricShmBuf *maia_fabric_shm_buf_get(MaiaFabricShmPool *pool)
{
    MaiaFabricShmBuf *b;

    qemu_mutex_lock(&pool->lock);
    b = pool->free;
    if (b) {
        pool->free = b->next;
        pool->nfree--;
    }
    qemu_mutex_unlock(&pool->lock);
    if (!b) {
        b = g_malloc(sizeof(*b));
        b->pool = pool;
    }
    qatomic_inc(&pool->refs);
    return b;
}

/*
 * The device is done with a lent buffer: any of its threads, perhaps with
 * its lock held; calls nothing of the device's.
 */
static void maia_fabric_shm_buf_release(void *opaque)
{
    MaiaFabricShmBuf *b = opaque;
    MaiaFabricShmPool *pool = b->pool;

    qemu_mutex_lock(&pool->lock);
    if (pool->nfree < MAIA_FABRIC_SHM_RX_CACHE) {
        b->next = pool->free;
        pool->free = b;
        pool->nfree++;
        b = NULL;
    }
    qemu_mutex_unlock(&pool->lock);
    g_free(b);
    maia_fabric_shm_pool_unref(pool);
}

/*
 * Copies the frame in slot `index` of the peer's ring out of shared memory;
 * NULL if there is none to hand on (counted in a trace). *len: its length.
 */
static MaiaFabricShmBuf *maia_fabric_shm_rx_copy(MaiaFabricShm *s,
                                                 uint32_t index, uint32_t *len)
{
    MaiaFabricPort *p = s->port;
    MaiaFabricShmSlot *slot = maia_fabric_shm_slot(s, !s->side, index);
    MaiaFabricShmBuf *b;

    *len = qatomic_read(&slot->len);    /* read once, then bounded */
    if (*len > MAIA_FABRIC_MAX_FRAME) {
        trace_maia_fabric_rx_drop(p->index, *len, "slot length corrupt");
        return NULL;
    }
    if (qatomic_read(&p->carrier_off)) {
        trace_maia_fabric_rx_drop(p->index, *len, "carrier off");
        return NULL;
    }
    b = maia_fabric_shm_buf_get(s->pool);
    memcpy(b->frame, slot->frame, *len);
    return b;
}

static void *maia_fabric_shm_thread(void *opaque)
{
    MaiaFabricShm *s = opaque;
    MaiaFabricShmRing *r = &s->hdr->ring[!s->side];
    MaiaFabricShmSide *peer = &s->hdr->side[!s->side];
    unsigned int port = s->port->index;
    uint32_t tail = qatomic_read(&r->tail);     /* set by start() */
    uint32_t gen = qatomic_read(&peer->gen);
    uint32_t head, kick, g, len;

    while (!qatomic_read(&s->stop)) {
        g = qatomic_read(&peer->gen);
        if (g != gen) {
            gen = g;
            trace_maia_fabric_shm_peer(port, gen,
                                       qatomic_read(&peer->attached));
        }
        kick = qatomic_read(&r->kick);
        head = qatomic_load_acquire(&r->head);
        if (head - tail > MAIA_FABRIC_SHM_SLOTS) {
            /* More frames than slots: drop them all, start at the head. */
            trace_maia_fabric_shm_corrupt(port, "rx", head, tail);
            tail = head;
        }
        while (tail != head && !qatomic_read(&s->stop)) {
            MaiaFabricShmBuf *b = maia_fabric_shm_rx_copy(s, tail, &len);

            tail++;
            /* The slot is free for the sender once copied out. */
            qatomic_store_release(&r->tail, tail);
            if (b) {
                trace_maia_fabric_shm_rx(port, len);
                maia_sim_fabric_rx_lent(s->port->fab->sim, port, b->frame,
                                        len, maia_fabric_shm_buf_release, b);
            }
        }
        /* Republished each round: the peer may have written over it. */
        qatomic_store_release(&r->tail, tail);
        if (tail != head) {
            continue;
        }
        qatomic_set(&r->waiting, 1);
        smp_mb();   /* waiting before head: pairs with the sender's */
        if (qatomic_read(&r->head) == tail && !qatomic_read(&s->stop)) {
            struct timespec ts = { .tv_nsec = MAIA_FABRIC_SHM_IDLE_NS };

            /* Bounded: a peer may write the futex word back under us. */
            qemu_futex(&r->kick, FUTEX_WAIT, kick, &ts, NULL, 0);
        }
        qatomic_set(&r->waiting, 0);
    }
    return NULL;
}

bool maia_fabric_shm_open(MaiaFabricPort *p, Error **errp)
{
    HostMemoryBackend *be = p->shm_be;
    const char *name = object_get_canonical_path_component(OBJECT(be));
    MaiaFabricShmClaim *c = maia_fabric_shm_claim(be);
    MemoryRegion *mr;
    MaiaFabricShmHeader *hdr;
    MaiaFabricShm *s;
    unsigned int side;
    uint32_t magic;
    int fd;

    if (!host_memory_backend_mr_inited(be)) {
        error_setg(errp, "fabric%u-shm: memory backend '%s' is not ready",
                   p->index, name);
        return false;
    }
    mr = host_memory_backend_get_memory(be);
    if (!be->share) {
        error_setg(errp, "fabric%u-shm: memory backend '%s' needs share=on "
                   "(the other QEMU must see what this one writes)",
                   p->index, name);
        return false;
    }
    if (mr->readonly) {
        error_setg(errp, "fabric%u-shm: memory backend '%s' is read-only",
                   p->index, name);
        return false;
    }
    if (memory_region_size(mr) < MAIA_FABRIC_SHM_SIZE) {
        error_setg(errp, "fabric%u-shm: memory backend '%s' has %" PRIu64
                   " bytes; a cable needs %" PRIu64 " (size=16M)", p->index,
                   name, (uint64_t)memory_region_size(mr),
                   (uint64_t)MAIA_FABRIC_SHM_SIZE);
        return false;
    }
    if (!c && host_memory_backend_is_mapped(be)) {
        error_setg(errp, "fabric%u-shm: memory backend '%s' is in use by "
                   "something else", p->index, name);
        return false;
    }
    fd = memory_region_get_fd(mr);
    for (side = 0; side < 2; side++) {
        if (c && (c->sides & (1u << side))) {
            continue;
        }
        if (fd < 0 || !qemu_lock_fd(fd, side, 1, true)) {
            break;
        }
    }
    if (side == 2) {
        error_setg(errp, "fabric%u-shm: both ends of the cable in memory "
                   "backend '%s' are taken (by this QEMU or another)",
                   p->index, name);
        return false;
    }

    hdr = memory_region_get_ram_ptr(mr);
    magic = qatomic_read(&hdr->magic);
    if (!magic) {
        /* A new file; the other end writes the same if it races us. */
        hdr->version = MAIA_FABRIC_SHM_VERSION;
        hdr->slots = MAIA_FABRIC_SHM_SLOTS;
        hdr->slot_size = MAIA_FABRIC_SHM_SLOT_SIZE;
        smp_wmb();  /* the fields before the magic that vouches for them */
        qatomic_set(&hdr->magic, MAIA_FABRIC_SHM_MAGIC);
    } else if (magic != MAIA_FABRIC_SHM_MAGIC ||
               qatomic_read(&hdr->version) != MAIA_FABRIC_SHM_VERSION ||
               qatomic_read(&hdr->slots) != MAIA_FABRIC_SHM_SLOTS ||
               qatomic_read(&hdr->slot_size) != MAIA_FABRIC_SHM_SLOT_SIZE) {
        if (fd >= 0) {
            qemu_unlock_fd(fd, side, 1);
        }
        error_setg(errp, "fabric%u-shm: memory backend '%s' holds something "
                   "else than a maia fabric cable of version %u (magic 0x%x)",
                   p->index, name, MAIA_FABRIC_SHM_VERSION, magic);
        return false;
    }

    if (!c) {
        c = g_new0(MaiaFabricShmClaim, 1);
        c->be = be;
        QLIST_INSERT_HEAD(&claims, c, next);
        host_memory_backend_set_mapped(be, true);
    }
    c->sides |= 1u << side;

    s = g_new0(MaiaFabricShm, 1);
    s->port = p;
    s->be = be;
    s->base = (uint8_t *)hdr;
    s->hdr = hdr;
    s->fd = fd;
    s->side = side;
    qemu_mutex_init(&s->lock);
    s->pool = maia_fabric_shm_pool_new();
    p->shm = s;
    return true;
}

void maia_fabric_shm_start(MaiaFabricPort *p)
{
    MaiaFabricShm *s = p->shm;
    MaiaFabricShmHeader *hdr = s->hdr;
    MaiaFabricShmRing *rx = &hdr->ring[!s->side];
    uint32_t gen;

    /* What the peer sent to a side before us is not for us. */
    qatomic_set(&rx->waiting, 0);
    qatomic_store_release(&rx->tail, qatomic_load_acquire(&rx->head));
    qemu_mutex_lock(&s->lock);
    s->head = qatomic_read(&hdr->ring[s->side].head);
    s->running = true;
    qemu_mutex_unlock(&s->lock);
    gen = qatomic_read(&hdr->side[s->side].gen) + 1;
    qatomic_set(&hdr->side[s->side].gen, gen);
    qatomic_set(&hdr->side[s->side].attached, 1);
    trace_maia_fabric_shm_attach(p->index, s->side,
        object_get_canonical_path_component(OBJECT(s->be)), gen);
    /* Tell the peer's receiver at once (it traces the new generation). */
    maia_fabric_shm_wake(&hdr->ring[s->side], false);

    qatomic_set(&s->stop, false);
    qemu_thread_create(&s->thread, "maia-fabric-shm", maia_fabric_shm_thread,
                       s, QEMU_THREAD_JOINABLE);
    s->thread_started = true;
}

void maia_fabric_shm_stop(MaiaFabricPort *p)
{
    MaiaFabricShm *s = p->shm;

    if (!s) {
        return;
    }
    /* No frame sent after this. */
    qemu_mutex_lock(&s->lock);
    s->running = false;
    qemu_mutex_unlock(&s->lock);
    if (s->thread_started) {
        qatomic_set(&s->stop, true);
        maia_fabric_shm_wake(&s->hdr->ring[!s->side], true);
        qemu_thread_join(&s->thread);
        s->thread_started = false;
        qatomic_set(&s->hdr->side[s->side].attached, 0);
    }
}

void maia_fabric_shm_close(MaiaFabricPort *p)
{
    MaiaFabricShm *s = p->shm;
    MaiaFabricShmClaim *c;

    if (!s) {
        return;
    }
    maia_fabric_shm_stop(p);
    c = maia_fabric_shm_claim(s->be);
    if (s->fd >= 0) {
        qemu_unlock_fd(s->fd, s->side, 1);
    }
    c->sides &= ~(1u << s->side);
    if (!c->sides) {
        QLIST_REMOVE(c, next);
        host_memory_backend_set_mapped(s->be, false);
        g_free(c);
    }
    qemu_mutex_destroy(&s->lock);
    /* Freed once the device gave back every buffer lent. */
    maia_fabric_shm_pool_unref(s->pool);
    g_free(s);
    p->shm = NULL;
}
