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
 * A file cut short: a process that shrinks the file (ftruncate) while we
 * have it mapped takes the pages past its new end from under us, and the
 * next access to one of them raises SIGBUS, which would kill QEMU. Every
 * cable's mapping is registered (MaiaFabricShmMap); a SIGBUS handler,
 * chained to the one QEMU installed before it, replaces a registered
 * mapping that faults with anonymous zero pages (mmap MAP_FIXED), so that
 * the access completes, and marks it cut. A thread that may touch a
 * mapping lets SIGBUS reach it first (maia_fabric_shm_guard(): QEMU's
 * threads start with every signal blocked, and a fault while SIGBUS is
 * blocked kills the process whatever the handler). The receive thread
 * sees the cut (or a header that is no cable's any more) and takes the
 * cable out of service: nothing is sent or received on it, the device
 * takes the link DOWN as for a dead peer, a trace event and one error say
 * why, and property fabricN-shm-cut reads true. The file is not touched
 * again while the port lives: its mapping is given back to the backend
 * when the port is closed, and a device plugged anew takes the cable again.
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
#include <sys/mman.h>
#include "qemu/atomic.h"
#include "qemu/error-report.h"
#include "qemu/futex.h"
#include "qapi/error.h"
#include "qapi/visitor.h"
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

/* Cable mappings a process may have at once (12 ports on 5 devices). */
#define MAIA_FABRIC_SHM_MAPS        64

typedef struct MaiaFabricShmPool MaiaFabricShmPool;

/*
 * A backend's memory, as the SIGBUS handler sees it. start, len: written
 * under the BQL (start last, cleared first), read by the handler; cut and
 * fault: written by the handler or the receive thread (atomic).
 */
typedef struct MaiaFabricShmMap {
    uintptr_t start;                /* 0: a free entry */
    size_t len;                     /* bytes mapped, whole pages */
    int fd;                         /* the backend's file, or -1 */
    uint64_t fd_offset;             /* where in the file the mapping starts */
    unsigned int users;             /* BQL: ports that opened it */
    int cut;                        /* 1: anonymous pages, the file let go */
    uint64_t fault;                 /* the first fault's offset + 1, or 0 */
} MaiaFabricShmMap;

static MaiaFabricShmMap maia_fabric_shm_maps[MAIA_FABRIC_SHM_MAPS];
static struct sigaction maia_fabric_shm_oldact;
static bool maia_fabric_shm_handler_on;     /* BQL */

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
    MaiaFabricShmMap *map;          /* base's entry for the SIGBUS handler */
    char *name;                     /* the backend's id, for messages */
    char *cut_prop;                 /* property fabricN-shm-cut, or NULL */
    bool cut;                       /* atomic: the cable is out of service */

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

/*
 * Replaces the mapping of m with anonymous zero pages: every access to it
 * completes from now on, and the file is not touched again through it.
 * Async-signal-safe (a system call and atomics). False if mmap failed.
 */
static bool maia_fabric_shm_map_cut(MaiaFabricShmMap *m, uintptr_t start,
                                    uint64_t fault)
{
    void *p = mmap((void *)start, m->len, PROT_READ | PROT_WRITE,
                   MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED, -1, 0);

    if (p == MAP_FAILED) {
        return false;
    }
    if (fault) {
        qatomic_cmpxchg(&m->fault, 0, fault);
    }
    qatomic_set(&m->cut, 1);
    return true;
}

/*
 * SIGBUS on any thread: an access to a cable whose file was cut short
 * (BUS_ADRERR inside a registered mapping) is made to complete; anything
 * else goes to the handler installed before (QEMU's, which re-raises it).
 */
static void maia_fabric_shm_sigbus(int sig, siginfo_t *info, void *ctx)
{
    uintptr_t addr = (uintptr_t)info->si_addr;
    int saved_errno = errno;
    unsigned int i;

    if (info->si_code == BUS_ADRERR) {
        for (i = 0; i < MAIA_FABRIC_SHM_MAPS; i++) {
            MaiaFabricShmMap *m = &maia_fabric_shm_maps[i];
            uintptr_t start = qatomic_load_acquire(&m->start);

            if (start && addr - start < m->len &&
                maia_fabric_shm_map_cut(m, start, addr - start + 1)) {
                errno = saved_errno;
                return;
            }
        }
    }
    errno = saved_errno;
    if (maia_fabric_shm_oldact.sa_flags & SA_SIGINFO) {
        maia_fabric_shm_oldact.sa_sigaction(sig, info, ctx);
    } else if (maia_fabric_shm_oldact.sa_handler != SIG_DFL &&
               maia_fabric_shm_oldact.sa_handler != SIG_IGN) {
        maia_fabric_shm_oldact.sa_handler(sig);
    } else {
        /* Die of it, as without this handler. */
        signal(SIGBUS, SIG_DFL);
        raise(SIGBUS);
    }
}

/*
 * 1: SIGBUS reaches this thread for good; 2: the main loop's thread, which
 * reads SIGBUS from a signalfd and lets it through only while it touches
 * a cable (maia_fabric_shm_guard_end()).
 */
static __thread int maia_fabric_shm_thread_state;

/*
 * Before a thread touches a cable's memory: a fault on a blocked SIGBUS
 * kills the process whatever its handler, and QEMU's threads start with
 * every signal blocked. Returns true if the caller must call
 * maia_fabric_shm_guard_end() when done (the main loop's thread).
 */
static bool maia_fabric_shm_guard(void)
{
    sigset_t set;

    if (likely(maia_fabric_shm_thread_state == 1)) {
        return false;
    }
    if (!maia_fabric_shm_thread_state) {
        maia_fabric_shm_thread_state =
            qemu_get_thread_id() == getpid() ? 2 : 1;
    }
    sigemptyset(&set);
    sigaddset(&set, SIGBUS);
    pthread_sigmask(SIG_UNBLOCK, &set, NULL);
    return maia_fabric_shm_thread_state == 2;
}

static void maia_fabric_shm_guard_end(bool end)
{
    sigset_t set;

    if (end) {
        sigemptyset(&set);
        sigaddset(&set, SIGBUS);
        pthread_sigmask(SIG_BLOCK, &set, NULL);
    }
}

/* The entry of the mapping at start, len bytes (BQL); NULL: no room. */
static MaiaFabricShmMap *maia_fabric_shm_map_get(void *start, size_t len,
                                                 int fd, uint64_t fd_offset)
{
    MaiaFabricShmMap *m, *spare = NULL;
    struct sigaction act;
    unsigned int i;

    if (!maia_fabric_shm_handler_on) {
        memset(&act, 0, sizeof(act));
        act.sa_flags = SA_SIGINFO;
        act.sa_sigaction = maia_fabric_shm_sigbus;
        if (sigaction(SIGBUS, &act, &maia_fabric_shm_oldact)) {
            return NULL;
        }
        maia_fabric_shm_handler_on = true;
    }
    for (i = 0; i < MAIA_FABRIC_SHM_MAPS; i++) {
        m = &maia_fabric_shm_maps[i];
        if (m->start == (uintptr_t)start) {
            m->users++;
            return m;
        }
        if (!m->start && !spare) {
            spare = m;
        }
    }
    if (spare) {
        spare->len = len;
        spare->fd = fd;
        spare->fd_offset = fd_offset;
        spare->users = 1;
        spare->cut = 0;
        spare->fault = 0;
        qatomic_store_release(&spare->start, (uintptr_t)start);
    }
    return spare;
}

/*
 * A port lets go of m (BQL, no thread of it touches the memory). The last
 * one gives a cut mapping back to the backend: its file mapped there again,
 * for whoever takes the cable anew.
 */
static void maia_fabric_shm_map_put(MaiaFabricShmMap *m, const char *name)
{
    uintptr_t start = m->start;
    void *p;

    if (--m->users) {
        return;
    }
    qatomic_set(&m->start, 0);
    if (qatomic_read(&m->cut) && m->fd >= 0) {
        p = mmap((void *)start, m->len, PROT_READ | PROT_WRITE,
                 MAP_SHARED | MAP_FIXED, m->fd, m->fd_offset);
        if (p == MAP_FAILED) {
            error_report("memory backend '%s': its file could not be mapped "
                         "again after it was cut short: %s", name,
                         strerror(errno));
        }
    }
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
    bool guard;

    qemu_mutex_lock(&s->lock);
    guard = maia_fabric_shm_guard();
    r = &s->hdr->ring[s->side];
    if (!s->running) {
        why = qatomic_read(&s->cut) ? "cable cut" : "cable detached";
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
        maia_fabric_shm_guard_end(guard);
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
    maia_fabric_shm_guard_end(guard);
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

/*
 * The receive thread found the cable's memory cut (by the SIGBUS handler)
 * or its header no cable's: the cable goes out of service for good (the
 * file is let go of if not yet), which the device sees as a dead peer.
 */
static void maia_fabric_shm_out(MaiaFabricShm *s, uint32_t magic)
{
    MaiaFabricShmMap *m = s->map;
    uint64_t fault;

    if (!qatomic_read(&m->cut) && m->fd >= 0) {
        /* Not through a fault: let go of the file before it faults. */
        maia_fabric_shm_map_cut(m, (uintptr_t)s->base, 0);
    }
    qemu_mutex_lock(&s->lock);
    qatomic_set(&s->cut, true);
    s->running = false;
    qemu_mutex_unlock(&s->lock);
    fault = qatomic_read(&m->fault);
    trace_maia_fabric_shm_cut(s->port->index, s->name, fault != 0,
                              fault ? fault - 1 : 0, magic);
    if (fault) {
        error_report("fabric%u-shm: the file of memory backend '%s' was cut "
                     "short under this QEMU (SIGBUS at offset 0x%" PRIx64
                     "): the link is down and the file is not used again "
                     "until the device is plugged anew", s->port->index,
                     s->name, fault - 1);
    } else {
        error_report("fabric%u-shm: memory backend '%s' holds no cable any "
                     "more (magic 0x%x): the link is down and the file is "
                     "not used again until the device is plugged anew",
                     s->port->index, s->name, magic);
    }
}

/* Still a cable: not cut, its header intact; else out of service. */
static bool maia_fabric_shm_intact(MaiaFabricShm *s)
{
    uint32_t magic = qatomic_read(&s->hdr->magic);

    if (qatomic_read(&s->map->cut) || magic != MAIA_FABRIC_SHM_MAGIC) {
        maia_fabric_shm_out(s, magic);
        return false;
    }
    return true;
}

static void *maia_fabric_shm_thread(void *opaque)
{
    MaiaFabricShm *s = opaque;
    MaiaFabricShmRing *r = &s->hdr->ring[!s->side];
    MaiaFabricShmSide *peer = &s->hdr->side[!s->side];
    unsigned int port = s->port->index;
    uint32_t tail, gen, head, kick, g, len;

    maia_fabric_shm_guard();    /* for good: not the main loop's thread */
    tail = qatomic_read(&r->tail);      /* set by start() */
    gen = qatomic_read(&peer->gen);
    while (!qatomic_read(&s->stop) && maia_fabric_shm_intact(s)) {
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
        while (tail != head && !qatomic_read(&s->stop) &&
               !qatomic_read(&s->map->cut)) {
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
        if (qatomic_read(&r->head) == tail && !qatomic_read(&s->stop) &&
            !qatomic_read(&s->map->cut)) {
            struct timespec ts = { .tv_nsec = MAIA_FABRIC_SHM_IDLE_NS };

            /* Bounded: a peer may write the futex word back under us. */
            qemu_futex(&r->kick, FUTEX_WAIT, kick, &ts, NULL, 0);
        }
        qatomic_set(&r->waiting, 0);
    }
    return NULL;
}

/* Property fabricN-shm-cut: the cable went out of service, cut short. */
static void maia_fabric_shm_get_cut(Object *obj, Visitor *v,
                                    const char *name, void *opaque,
                                    Error **errp)
{
    MaiaFabricPort *p = opaque;
    bool cut = p->shm && qatomic_read(&p->shm->cut);

    visit_type_bool(v, name, &cut, errp);
}

bool maia_fabric_shm_open(MaiaFabricPort *p, Error **errp)
{
    HostMemoryBackend *be = p->shm_be;
    const char *name = object_get_canonical_path_component(OBJECT(be));
    MaiaFabricShmClaim *c = maia_fabric_shm_claim(be);
    MemoryRegion *mr;
    MaiaFabricShmHeader *hdr;
    MaiaFabricShmMap *map;
    MaiaFabricShm *s;
    unsigned int side;
    uint64_t fd_offset = 0;
    uint32_t magic;
    bool guard;
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
    if (fd >= 0 && object_property_find(OBJECT(be), "offset")) {
        fd_offset = object_property_get_uint(OBJECT(be), "offset", NULL);
    }
    map = maia_fabric_shm_map_get(hdr, ROUND_UP(memory_region_size(mr),
                                      qemu_ram_pagesize(mr->ram_block)),
                                  fd, fd_offset);
    if (!map) {
        if (fd >= 0) {
            qemu_unlock_fd(fd, side, 1);
        }
        error_setg(errp, "fabric%u-shm: memory backend '%s': this QEMU "
                   "has %u cables already, or no SIGBUS handler",
                   p->index, name, MAIA_FABRIC_SHM_MAPS);
        return false;
    }
    guard = maia_fabric_shm_guard();
    magic = qatomic_read(&hdr->magic);
    if (qatomic_read(&map->cut)) {
        maia_fabric_shm_guard_end(guard);
        maia_fabric_shm_map_put(map, name);
        if (fd >= 0) {
            qemu_unlock_fd(fd, side, 1);
        }
        error_setg(errp, "fabric%u-shm: the file of memory backend '%s' is "
                   "shorter than a cable: another process cut it", p->index,
                   name);
        return false;
    }
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
        maia_fabric_shm_guard_end(guard);
        maia_fabric_shm_map_put(map, name);
        if (fd >= 0) {
            qemu_unlock_fd(fd, side, 1);
        }
        error_setg(errp, "fabric%u-shm: memory backend '%s' holds something "
                   "else than a maia fabric cable of version %u (magic 0x%x)",
                   p->index, name, MAIA_FABRIC_SHM_VERSION, magic);
        return false;
    }
    maia_fabric_shm_guard_end(guard);

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
    s->map = map;
    s->name = g_strdup(name);
    qemu_mutex_init(&s->lock);
    s->pool = maia_fabric_shm_pool_new();
    p->shm = s;
    s->cut_prop = g_strdup_printf("fabric%u-shm-cut", p->index);
    if (!object_property_try_add(OBJECT(p->fab->dev), s->cut_prop, "bool",
                                 maia_fabric_shm_get_cut, NULL, NULL, p,
                                 NULL)) {
        g_free(s->cut_prop);
        s->cut_prop = NULL;
    }
    return true;
}

void maia_fabric_shm_start(MaiaFabricPort *p)
{
    MaiaFabricShm *s = p->shm;
    MaiaFabricShmHeader *hdr = s->hdr;
    MaiaFabricShmRing *rx = &hdr->ring[!s->side];
    bool guard = maia_fabric_shm_guard();
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
    maia_fabric_shm_guard_end(guard);

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
        bool guard = maia_fabric_shm_guard();

        qatomic_set(&s->stop, true);
        maia_fabric_shm_wake(&s->hdr->ring[!s->side], true);
        maia_fabric_shm_guard_end(guard);
        qemu_thread_join(&s->thread);
        s->thread_started = false;
        guard = maia_fabric_shm_guard();
        qatomic_set(&s->hdr->side[s->side].attached, 0);
        maia_fabric_shm_guard_end(guard);
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
    if (s->cut_prop) {
        object_property_del(OBJECT(p->fab->dev), s->cut_prop);
        g_free(s->cut_prop);
    }
    maia_fabric_shm_map_put(s->map, s->name);
    g_free(s->name);
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
