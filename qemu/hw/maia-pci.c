/*
 * Maia accelerator: the QEMU PCIe device glue.
 *
 * The device itself (registers, boot, queues, command processor, tensor
 * engine) lives in firmware-sim, a library with no QEMU dependency. This file
 * is the thin layer between that library and QEMU: PCI config space, BARs,
 * MSI-X, DMA through the PCI address space, doorbell ioeventfds, properties,
 * reset/FLR, tracing and logging.
 *
 * Threading: the library runs device work on its own worker thread (and a
 * tensor thread pool), created through our thread_create callback with
 * qemu_thread_create(); they call our dma_read/dma_write/raise_irq/
 * guest_error/trace callbacks without the BQL. Every entry point into the
 * library is called with the BQL held (MMIO handlers, ioeventfd handlers,
 * reset, QOM setters), which is the "one host thread at a time" the library
 * requires. The library's reset and drain
 * wait for the worker, so a worker callback must never wait for the BQL:
 * interrupts are bounced through a bottom half, and worker DMA is restricted
 * to guest RAM, which address_space_rw copies under RCU without the BQL.
 *
 * Copyright (c) 2026 The Maia accelerator stack authors
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */

#include "qemu/osdep.h"
#include "qemu/log.h"
#include "qemu/main-loop.h"
#include "qemu/module.h"
#include "qemu/rcu.h"
#include "qemu/thread.h"
#include "qemu/timer.h"
#include "qemu/units.h"
#include "qapi/error.h"
#include "qapi/visitor.h"
#include "hw/pci/pci_device.h"
#include "hw/pci/pcie.h"
#include "hw/pci/msix.h"
#include "hw/qdev-properties.h"
#include "hw/qdev-properties-system.h"
#include "migration/vmstate.h"
#include "system/dma.h"
#include "trace.h"

#include "maia/hw/regs.h"
#include "maia/sim.h"
#include "maia-fabric.h"

#define TYPE_MAIA "maia"
OBJECT_DECLARE_SIMPLE_TYPE(MaiaState, MAIA)

#define MAIA_PCIE_CAP_OFFSET    0x80
#define MAIA_HBM_MIN_SIZE       (1 * MiB)
#define MAIA_HBM_MAX_SIZE       (1 * TiB)
#define MAIA_SRAM_MAX_KIB       (256 * 1024)
#define MAIA_WORKERS_MAX        256

/* One doorbell routed through an eventfd while its queue has a shadow tail. */
typedef struct MaiaDoorbell {
    MaiaState *dev;
    uint32_t queue;
    bool enabled;
    EventNotifier notifier;
} MaiaDoorbell;

struct MaiaState {
    PCIDevice parent_obj;

    MemoryRegion regs;          /* BAR0 */
    MemoryRegion udb;           /* BAR1, doorbell pages (user queues) */
    MemoryRegion hbm;           /* HBM, RAM_NORESERVE */
    MemoryRegion hbm_bar;       /* BAR2: a power of two, HBM at its start */

    struct maia_sim *sim;

    /*
     * MSI-X vectors raised off the BQL (bit n = vector n), delivered by
     * irq_bh. Written by the worker with atomics, drained under the BQL.
     */
    uint32_t irq_pending;
    QEMUBH *irq_bh;

    /*
     * The guest RAM range the last DMA that missed it went to, mapped
     * (maia_dma_cached()); dma_cache.mrs.mr is NULL while there is none.
     * Dropped at every change of the memory map (dma_listener): the
     * mapping holds a flat view, which holds every region in it, and so
     * their owners (another device being unplugged among them).
     */
    QemuSpin dma_lock;
    MemoryRegionCache dma_cache;
    uint64_t dma_cache_base;    /* bus address of dma_cache.ptr */
    MemoryListener dma_listener;

    /* Doorbell kicks to replay from kick_bh; BQL. */
    uint32_t kick_pending;
    QEMUBH *kick_bh;

    /* Per-queue doorbell eventfds; BQL. */
    MaiaDoorbell doorbell[MAIA_MAX_QUEUES];

    /* Fabric ports as NICs, and their properties (maia-fabric.c). */
    MaiaFabric fabric;

    /* Properties */
    char *model;                /* chip model: maia100 (default), maia200 */
    uint64_t hbm_size;          /* 0: the model's capacity */
    uint32_t clusters;
    uint32_t tiles_per_cluster;
    uint32_t queues;
    uint32_t sram_kib;
    uint32_t worker_threads;
    bool inline_doorbell;
};

/* Bit masks of vectors and queues below must fit in 32 bits. */
QEMU_BUILD_BUG_ON(MAIA_NUM_VECTORS(MAIA_MAX_QUEUES) > 32);

/*
 * Maia doorbell writes this thread is in, of any device: such a write may
 * run jobs right there (inline-doorbell), and a collective's fabric rounds
 * of this and other maia devices of this QEMU (frames delivered on the
 * sender's thread), on a vCPU holding the BQL. Their DMA is held to guest
 * RAM as the workers' is, so that where a job or round runs changes nothing
 * it does: a DMA into MMIO (a reset register) from there would wait for the
 * round this thread is in.
 */
static __thread unsigned int maia_doorbells_on_thread;

static bool maia_guest_error_wanted(void)
{
    return qemu_loglevel_mask(LOG_GUEST_ERROR) ||
           trace_event_get_state_backends(TRACE_MAIA_GUEST_ERROR);
}

/* Guest mistakes (ours and the library's) are logged, never fatal. */
static void maia_log_guest_error(MaiaState *s, const char *msg)
{
    trace_maia_guest_error(msg);
    qemu_log_mask(LOG_GUEST_ERROR, "%s: %s\n",
                  object_get_canonical_path_component(OBJECT(s)) ?: TYPE_MAIA,
                  msg);
}

static void G_GNUC_PRINTF(2, 3) maia_guest_error_fmt(MaiaState *s,
                                                     const char *fmt, ...)
{
    va_list ap;
    g_autofree char *msg = NULL;

    if (!maia_guest_error_wanted()) {
        return;
    }
    va_start(ap, fmt);
    msg = g_strdup_vprintf(fmt, ap);
    va_end(ap);
    maia_log_guest_error(s, msg);
}

/* ---- BAR0: registers ---------------------------------------------------- */

/*
 * The ABI allows only aligned 32-bit accesses. QEMU is told to pass every
 * access through unchanged (.valid and .impl accept 1..8 bytes, unaligned) so
 * that a wrong-sized or misaligned access reaches this check instead of being
 * split or widened behind the guest's back.
 */
static bool maia_regs_access_ok(MaiaState *s, const char *dir, hwaddr addr,
                                unsigned size)
{
    const char *why = NULL;

    if (size != 4) {
        why = "not a 32-bit access";
    } else if (addr & 3) {
        why = "misaligned";
    } else if (addr + size > MAIA_BAR0_SIZE) {
        why = "outside BAR0";
    }
    if (!why) {
        return true;
    }
    trace_maia_mmio_bad_access(dir, addr, size, why);
    maia_guest_error_fmt(s, "BAR0 %s at 0x%" HWADDR_PRIx " size %u ignored: %s",
                         dir, addr, size, why);
    return false;
}

static uint64_t maia_regs_read(void *opaque, hwaddr addr, unsigned size)
{
    MaiaState *s = opaque;
    uint32_t val;

    if (!maia_regs_access_ok(s, "read", addr, size)) {
        return 0;
    }
    val = maia_sim_mmio_read(s->sim, addr);
    trace_maia_mmio_read(addr, val);
    return val;
}

static void maia_regs_write(void *opaque, hwaddr addr, uint64_t val,
                            unsigned size)
{
    MaiaState *s = opaque;

    if (!maia_regs_access_ok(s, "write", addr, size)) {
        return;
    }
    trace_maia_mmio_write(addr, val);
    if (addr >= MAIA_REG_DOORBELL(0) && addr < MAIA_REG_DOORBELL(s->queues)) {
        trace_maia_doorbell((addr - MAIA_REG_DOORBELL(0)) / 4, val);
        maia_doorbells_on_thread++;
        maia_sim_mmio_write(s->sim, addr, val);
        maia_doorbells_on_thread--;
        return;
    }
    maia_sim_mmio_write(s->sim, addr, val);
}

static const MemoryRegionOps maia_regs_ops = {
    .read = maia_regs_read,
    .write = maia_regs_write,
    .endianness = DEVICE_LITTLE_ENDIAN,
    .valid = {
        .min_access_size = 1,
        .max_access_size = 8,
        .unaligned = true,
    },
    .impl = {
        .min_access_size = 1,
        .max_access_size = 8,
        .unaligned = true,
    },
};

/* ---- BAR1: one doorbell page per queue ---------------------------------- */

/*
 * A page of its own per queue lets the driver map one queue's doorbell into
 * a process. Same access rules as BAR0; the library decodes the offset.
 */
static bool maia_udb_access_ok(MaiaState *s, const char *dir, hwaddr addr,
                               unsigned size)
{
    if (size == 4 && !(addr & 3) && addr + size <= MAIA_UDB_BAR_SIZE) {
        return true;
    }
    trace_maia_mmio_bad_access(dir, addr, size, "BAR1 needs aligned 32-bit");
    maia_guest_error_fmt(s, "BAR1 %s at 0x%" HWADDR_PRIx " size %u ignored: "
                         "not an aligned 32-bit access", dir, addr, size);
    return false;
}

static uint64_t maia_udb_read(void *opaque, hwaddr addr, unsigned size)
{
    MaiaState *s = opaque;

    if (!maia_udb_access_ok(s, "read", addr, size)) {
        return 0;
    }
    return maia_sim_udb_read(s->sim, addr);
}

static void maia_udb_write(void *opaque, hwaddr addr, uint64_t val,
                           unsigned size)
{
    MaiaState *s = opaque;

    if (!maia_udb_access_ok(s, "write", addr, size)) {
        return;
    }
    trace_maia_doorbell(addr / MAIA_UDB_PAGE_SIZE, val);
    /* Like a BAR0 doorbell, it may run a job here (inline-doorbell). */
    maia_doorbells_on_thread++;
    maia_sim_udb_write(s->sim, addr, val);
    maia_doorbells_on_thread--;
}

static const MemoryRegionOps maia_udb_ops = {
    .read = maia_udb_read,
    .write = maia_udb_write,
    .endianness = DEVICE_LITTLE_ENDIAN,
    .valid = {
        .min_access_size = 1,
        .max_access_size = 8,
        .unaligned = true,
    },
    .impl = {
        .min_access_size = 1,
        .max_access_size = 8,
        .unaligned = true,
    },
};

/* ---- Doorbell ioeventfds (shadow tails) --------------------------------- */

/*
 * TEST-ONLY PATH today: a doorbell goes through an ioeventfd only while its
 * queue has a shadow tail, and the kernel driver does not set shadow tails
 * (the unit tests and the qtest do). Guest doorbells are plain MMIO writes.
 */

static void maia_doorbell_notify(EventNotifier *e)
{
    MaiaDoorbell *db = container_of(e, MaiaDoorbell, notifier);

    if (!event_notifier_test_and_clear(e)) {
        return;
    }
    trace_maia_doorbell_kick(db->queue);
    maia_sim_doorbell_kick(db->dev->sim, db->queue);
}

static void maia_doorbell_eventfd_enable(MaiaState *s, uint32_t q)
{
    MaiaDoorbell *db = &s->doorbell[q];
    int ret;

    if (db->enabled) {
        return;
    }
    ret = event_notifier_init(&db->notifier, 0);
    if (ret < 0) {
        /* Not fatal: doorbell writes then reach the library as MMIO. */
        warn_report("maia: queue %u doorbell eventfd: %s", q, strerror(-ret));
        return;
    }
    event_notifier_set_handler(&db->notifier, maia_doorbell_notify);
    memory_region_add_eventfd(&s->regs, MAIA_REG_DOORBELL(q), 4, false, 0,
                              &db->notifier);
    db->enabled = true;
    trace_maia_ioeventfd(q, true);
}

static void maia_doorbell_eventfd_disable(MaiaState *s, uint32_t q)
{
    MaiaDoorbell *db = &s->doorbell[q];

    if (!db->enabled) {
        return;
    }
    memory_region_del_eventfd(&s->regs, MAIA_REG_DOORBELL(q), 4, false, 0,
                              &db->notifier);
    /*
     * A kick may have been signalled but not yet handled. It cannot be
     * passed to the library from here (we may be inside one of its
     * callbacks), so replay it from a bottom half.
     */
    if (event_notifier_test_and_clear(&db->notifier)) {
        s->kick_pending |= 1u << q;
        qemu_bh_schedule(s->kick_bh);
    }
    event_notifier_set_handler(&db->notifier, NULL);
    event_notifier_cleanup(&db->notifier);
    db->enabled = false;
    trace_maia_ioeventfd(q, false);
}

static void maia_doorbell_eventfds_disable_all(MaiaState *s)
{
    uint32_t q;

    for (q = 0; q < s->queues; q++) {
        maia_doorbell_eventfd_disable(s, q);
    }
}

static void maia_kick_bh(void *opaque)
{
    MaiaState *s = opaque;
    uint32_t pending = s->kick_pending;

    s->kick_pending = 0;
    while (pending) {
        uint32_t q = ctz32(pending);

        pending &= pending - 1;
        trace_maia_doorbell_kick(q);
        maia_sim_doorbell_kick(s->sim, q);
    }
}

/* ---- Callbacks from the library ----------------------------------------- */

/*
 * Off the BQL (the library's worker), DMA is allowed only to guest RAM:
 * address_space_rw copies RAM under RCU, but dispatching to a device's MMIO
 * would take the BQL, and the BQL holder may be waiting for this very worker
 * in maia_sim_reset() or maia_sim_drain(). A target that is not RAM (another
 * device's BAR, an IOMMU fault, bus mastering off) fails the transfer.
 * The check and the copy are separate RCU sections: a guest that turns RAM
 * into MMIO under in-flight DMA can slip between them, and the copy then
 * waits for the BQL as iothread DMA does; nothing well-behaved does that.
 */
static bool maia_dma_is_ram(MaiaState *s, uint64_t addr, size_t len,
                            bool is_write)
{
    AddressSpace *as = pci_get_address_space(PCI_DEVICE(s));
    MemTxAttrs attrs = MEMTXATTRS_UNSPECIFIED;

    RCU_READ_LOCK_GUARD();
    while (len) {
        hwaddr xlat, plen = len;
        MemoryRegion *mr;

        mr = address_space_translate(as, addr, &xlat, &plen, is_write, attrs);
        if (!plen || !memory_access_is_direct(mr, is_write, attrs)) {
            return false;
        }
        addr += plen;
        len -= plen;
    }
    return true;
}

/* Called with dma_lock held, in an RCU critical section. */
static bool maia_dma_cache_covers(MaiaState *s, AddressSpace *as,
                                  uint64_t addr, size_t len)
{
    MemoryRegionCache *c = &s->dma_cache;

    return c->mrs.mr && c->fv == address_space_to_flatview(as) &&
           addr >= s->dma_cache_base && addr - s->dma_cache_base < c->len &&
           len <= c->len - (addr - s->dma_cache_base);
}

/*
 * Maps the guest RAM around addr in place of the last mapping: from the
 * start of the flat range that holds addr, as far as the RAM goes on.
 * Called with dma_lock held, in an RCU critical section.
 */
static void maia_dma_cache_fill(MaiaState *s, AddressSpace *as, uint64_t addr)
{
    MemoryRegionCache *c = &s->dma_cache;
    uint64_t base = addr;

    for (;;) {
        address_space_cache_destroy(c);
        address_space_cache_init(c, as, base, UINT64_MAX - base, true);
        if (!c->ptr) {
            address_space_cache_destroy(c);
            return;
        }
        s->dma_cache_base = base;
        if (base != addr ||
            c->mrs.offset_within_address_space >= base) {
            return;
        }
        /* Once more from the start of the range. */
        base = c->mrs.offset_within_address_space;
    }
}

/* A memory map changed (BQL): the mapping goes with the old flat view. */
static void maia_dma_listener_commit(MemoryListener *listener)
{
    MaiaState *s = container_of(listener, MaiaState, dma_listener);
    MemoryRegionCache old;

    /* Let go of it outside the lock: its references may be the last. */
    qemu_spin_lock(&s->dma_lock);
    old = s->dma_cache;
    s->dma_cache = (MemoryRegionCache) { .mrs.mr = NULL };
    qemu_spin_unlock(&s->dma_lock);
    address_space_cache_destroy(&old);
}

/*
 * The fast path of a DMA: inside the mapped range, a copy through the
 * mapping, with the dirty and translated-code bookkeeping a write through
 * address_space_rw does; no address translation. The mapping holds while
 * the bus master address space keeps the flat view it was made on: any
 * change of the memory map, or bus mastering turned off, makes a new one
 * (and drops the mapping, maia_dma_listener_commit()), and the next DMA
 * maps again (or takes the slow path with its checks).
 * Only guest RAM is ever mapped, so the copy is allowed from any thread.
 * False: not RAM (or no longer), the caller takes the slow path.
 */
static bool maia_dma_cached(MaiaState *s, uint64_t addr, void *buf,
                            size_t len, DMADirection dir)
{
    AddressSpace *as = pci_get_address_space(PCI_DEVICE(s));
    MemoryRegionCache c;
    hwaddr off;
    bool hit;

    if (!len) {
        return false;
    }
    RCU_READ_LOCK_GUARD();
    qemu_spin_lock(&s->dma_lock);
    hit = maia_dma_cache_covers(s, as, addr, len);
    if (!hit) {
        maia_dma_cache_fill(s, as, addr);
        hit = maia_dma_cache_covers(s, as, addr, len);
    }
    /*
     * A copy of the mapping outlives the lock: its flat view and the
     * memory regions in it stay until this RCU critical section ends.
     */
    c = s->dma_cache;
    off = addr - s->dma_cache_base;
    qemu_spin_unlock(&s->dma_lock);
    if (!hit) {
        return false;
    }
    dma_barrier(as, dir);
    if (dir == DMA_DIRECTION_FROM_DEVICE) {
        address_space_write_cached(&c, off, buf, len);
        address_space_cache_invalidate(&c, off, len);
        trace_maia_dma_write(addr, len, MEMTX_OK);
    } else {
        address_space_read_cached(&c, off, buf, len);
        trace_maia_dma_read(addr, len, MEMTX_OK);
    }
    return true;
}

static int maia_dma(MaiaState *s, uint64_t addr, void *buf, size_t len,
                    DMADirection dir)
{
    bool is_write = dir == DMA_DIRECTION_FROM_DEVICE;
    const char *what = is_write ? "write" : "read";
    MemTxResult res;

    if (addr + len < addr) {
        maia_guest_error_fmt(s, "DMA %s at 0x%" PRIx64 " len %zu wraps",
                             what, addr, len);
        return -1;
    }
    if (maia_dma_cached(s, addr, buf, len, dir)) {
        return 0;
    }
    if ((!bql_locked() || maia_doorbells_on_thread) &&
        !maia_dma_is_ram(s, addr, len, is_write)) {
        /* A racy look at COMMAND, only to word the message. */
        bool master = pci_get_word(PCI_DEVICE(s)->config + PCI_COMMAND) &
                      PCI_COMMAND_MASTER;

        trace_maia_dma_not_ram(what, addr, len);
        maia_guest_error_fmt(s, "DMA %s at 0x%" PRIx64 " len %zu failed: %s",
                             what, addr, len, master ?
                             "not guest RAM (MMIO, unmapped or IOMMU fault)" :
                             "bus mastering is disabled");
        return -1;
    }
    res = pci_dma_rw(PCI_DEVICE(s), addr, buf, len, dir,
                     MEMTXATTRS_UNSPECIFIED);
    if (is_write) {
        trace_maia_dma_write(addr, len, res);
    } else {
        trace_maia_dma_read(addr, len, res);
    }
    if (res != MEMTX_OK) {
        maia_guest_error_fmt(s, "DMA %s at 0x%" PRIx64 " len %zu failed (%d)",
                             what, addr, len, res);
        return -1;
    }
    return 0;
}

static int maia_cb_dma_read(void *opaque, uint64_t addr, void *buf,
                            size_t len)
{
    return maia_dma(opaque, addr, buf, len, DMA_DIRECTION_TO_DEVICE);
}

static int maia_cb_dma_write(void *opaque, uint64_t addr, const void *buf,
                             size_t len)
{
    /* pci_dma_rw takes a non-const buffer for both directions. */
    return maia_dma(opaque, addr, (void *)buf, len, DMA_DIRECTION_FROM_DEVICE);
}

static void maia_irq_bh(void *opaque)
{
    MaiaState *s = opaque;
    uint32_t pending = qatomic_xchg(&s->irq_pending, 0);

    while (pending) {
        uint32_t vector = ctz32(pending);

        pending &= pending - 1;
        msix_notify(PCI_DEVICE(s), vector);
    }
}

static void maia_cb_raise_irq(void *opaque, unsigned int vector)
{
    MaiaState *s = opaque;

    if (vector >= MAIA_NUM_VECTORS(s->queues)) {
        error_report("maia: firmware-sim raised vector %u of %u", vector,
                     MAIA_NUM_VECTORS(s->queues));
        return;
    }
    if (bql_locked()) {
        trace_maia_irq(vector, false);
        msix_notify(PCI_DEVICE(s), vector);
        return;
    }
    /*
     * The worker wrote the completion before calling us; the atomic OR is a
     * full barrier, so the guest sees the completion before the interrupt.
     */
    trace_maia_irq(vector, true);
    qatomic_or(&s->irq_pending, 1u << vector);
    qemu_bh_schedule(s->irq_bh);
}

static void maia_cb_guest_error(void *opaque, const char *msg)
{
    maia_log_guest_error(opaque, msg);
}

static void maia_cb_trace(void *opaque, const char *msg)
{
    trace_maia_sim_event(msg);
}

/* Cheap: lets the library skip formatting events nobody traces. */
static bool maia_cb_trace_enabled(void *opaque)
{
    return trace_event_get_state_backends(TRACE_MAIA_SIM_EVENT);
}

/* Test-only path today: the kernel driver never sets a shadow tail. */
static void maia_cb_shadow_changed(void *opaque, unsigned int queue,
                                   bool enabled)
{
    MaiaState *s = opaque;

    if (queue >= s->queues) {
        error_report("maia: firmware-sim changed shadow of queue %u of %u",
                     queue, s->queues);
        return;
    }
    if (enabled) {
        maia_doorbell_eventfd_enable(s, queue);
    } else {
        maia_doorbell_eventfd_disable(s, queue);
    }
}

/*
 * Device time (TIME registers, job timeouts, scheduler quanta, telemetry)
 * is QEMU_CLOCK_REALTIME: monotonic, and running under qtest and while the
 * VM is stopped. Not QEMU_CLOCK_VIRTUAL: under qtest it moves only on
 * clock_step, while the library's worker sleeps until device-time deadlines
 * on the host's monotonic clock and the qtests poll completions in wall
 * time (Documentation/qemu-device.rst, "Device time").
 */
static uint64_t maia_cb_now_ns(void *opaque)
{
    return qemu_clock_get_ns(QEMU_CLOCK_REALTIME);
}

typedef struct MaiaThreadStart {
    void *(*fn)(void *);
    void *arg;
} MaiaThreadStart;

/* Library threads DMA through address_space_rw under RCU: register them. */
static void *maia_thread_start(void *opaque)
{
    MaiaThreadStart start = *(MaiaThreadStart *)opaque;
    void *ret;

    g_free(opaque);
    rcu_register_thread();
    ret = start.fn(start.arg);
    rcu_unregister_thread();
    return ret;
}

/*
 * qemu_thread_create() blocks signals in the new thread (they stay with
 * QEMU's own threads) and names it with -name debug-threads=on. It aborts
 * on failure rather than returning an error. The library joins the thread
 * with pthread_join(), which is what qemu_thread_join() does on POSIX.
 */
static int maia_cb_thread_create(void *opaque, pthread_t *thread,
                                 const char *name, void *(*fn)(void *),
                                 void *arg)
{
    MaiaThreadStart *start = g_new(MaiaThreadStart, 1);
    QemuThread qt;

    start->fn = fn;
    start->arg = arg;
    qemu_thread_create(&qt, name, maia_thread_start, start,
                       QEMU_THREAD_JOINABLE);
    *thread = qt.thread;
    return 0;
}

static int maia_cb_fabric_tx(void *opaque, unsigned int port,
                             const void *frame, size_t len)
{
    MaiaState *s = opaque;

    return maia_fabric_tx(&s->fabric, port, frame, len);
}

static int maia_cb_fabric_tx_lend(void *opaque, unsigned int port,
                                  const void *frame, size_t len)
{
    MaiaState *s = opaque;

    return maia_fabric_tx_lend(&s->fabric, port, frame, len);
}

/*
 * Ports whose frames leave on the sender's thread: a direct cable or a
 * shared-memory one. A NIC's frames wait for the main loop (the BQL).
 */
static uint32_t maia_cb_fabric_direct_ports(void *opaque)
{
    MaiaState *s = opaque;
    uint32_t mask = maia_fabric_direct_ports(&s->fabric);
    unsigned int i;

    for (i = 0; i < s->fabric.nports; i++) {
        if (s->fabric.port[i].shm) {
            mask |= 1u << i;
        }
    }
    return mask;
}

static const struct maia_sim_ops maia_sim_ops = {
    .dma_read = maia_cb_dma_read,
    .dma_write = maia_cb_dma_write,
    .raise_irq = maia_cb_raise_irq,
    .guest_error = maia_cb_guest_error,
    .trace = maia_cb_trace,
    .trace_enabled = maia_cb_trace_enabled,
    .shadow_changed = maia_cb_shadow_changed,
    .now_ns = maia_cb_now_ns,
    .thread_create = maia_cb_thread_create,
    .fabric_tx = maia_cb_fabric_tx,
    .fabric_tx_lend = maia_cb_fabric_tx_lend,
    .fabric_direct_ports = maia_cb_fabric_direct_ports,
};

/* ---- Reset -------------------------------------------------------------- */

/* System reset, PCI bus reset and FLR (pci_device_reset) all land here. */
static void maia_reset_hold(Object *obj, ResetType type)
{
    MaiaState *s = MAIA(obj);

    if (!s->sim) {
        return;
    }
    trace_maia_reset();
    maia_doorbell_eventfds_disable_all(s);
    maia_sim_reset(s->sim);
    /* The worker is stopped: interrupts and kicks from before are stale. */
    qatomic_set(&s->irq_pending, 0);
    s->kick_pending = 0;
}

static void maia_write_config(PCIDevice *pci_dev, uint32_t addr, uint32_t val,
                              int len)
{
    pci_default_write_config(pci_dev, addr, val, len);
    if (pci_is_express(pci_dev)) {
        pcie_cap_flr_write_config(pci_dev, addr, val, len);
    }
}

/* ---- Fault injection (qom-set, for tests) -------------------------------- */

static void maia_set_inject(Object *obj, Visitor *v, const char *name,
                            void *opaque, Error **errp)
{
    MaiaState *s = MAIA(obj);
    enum maia_sim_inject what = (uintptr_t)opaque;
    uint32_t queue;

    if (!visit_type_uint32(v, name, &queue, errp)) {
        return;
    }
    if (!DEVICE(obj)->realized) {
        error_setg(errp, "%s can only be set on a running device", name);
        return;
    }
    if (queue >= s->queues) {
        error_setg(errp, "%s: queue %u out of range (device has %u queues)",
                   name, queue, s->queues);
        return;
    }
    trace_maia_inject(name, queue);
    if (maia_sim_inject(s->sim, what, queue)) {
        error_setg(errp, "%s: firmware-sim refused queue %u", name, queue);
    }
}

/* ---- Realize / unrealize ------------------------------------------------ */

/*
 * The chip model sets the defaults of the properties left at 0: the HBM
 * size and the tile layout.
 */
static bool maia_apply_model(MaiaState *s, struct maia_sim_config *cfg,
                             Error **errp)
{
    const char *model = s->model ? s->model : "maia100";

    if (maia_sim_config_model(cfg, model)) {
        error_setg(errp, "model '%s' is not a chip model: use maia100 or "
                   "maia200", model);
        return false;
    }
    if (!s->hbm_size) {
        s->hbm_size = maia_sim_model_hbm_bytes(cfg->model);
    }
    if (!s->clusters) {
        s->clusters = cfg->clusters;
    }
    if (!s->tiles_per_cluster) {
        s->tiles_per_cluster = cfg->tiles_per_cluster;
    }
    return true;
}

static bool maia_check_properties(MaiaState *s, Error **errp)
{
    if (s->hbm_size % MiB || s->hbm_size < MAIA_HBM_MIN_SIZE ||
        s->hbm_size > MAIA_HBM_MAX_SIZE) {
        error_setg(errp, "hbm-size 0x%" PRIx64 " must be a multiple of 1M "
                   "from 1M to 1T", s->hbm_size);
        return false;
    }
    if (s->clusters < 1 || s->clusters > MAIA_MAX_CLUSTERS) {
        error_setg(errp, "clusters %u must be 1..%u", s->clusters,
                   MAIA_MAX_CLUSTERS);
        return false;
    }
    if (s->tiles_per_cluster < 1 ||
        s->tiles_per_cluster > MAIA_MAX_TILES_PER_CLUSTER) {
        error_setg(errp, "tiles-per-cluster %u must be 1..%u",
                   s->tiles_per_cluster, MAIA_MAX_TILES_PER_CLUSTER);
        return false;
    }
    if (s->queues < 1 || s->queues > MAIA_MAX_QUEUES) {
        error_setg(errp, "queues %u must be 1..%u", s->queues,
                   MAIA_MAX_QUEUES);
        return false;
    }
    if (s->sram_kib < 1 || s->sram_kib > MAIA_SRAM_MAX_KIB) {
        error_setg(errp, "sram-kib %u must be 1..%u", s->sram_kib,
                   MAIA_SRAM_MAX_KIB);
        return false;
    }
    if (s->worker_threads > MAIA_WORKERS_MAX) {
        error_setg(errp, "worker-threads %u must be 0 (one per host CPU) "
                   "to %u", s->worker_threads, MAIA_WORKERS_MAX);
        return false;
    }
    return true;
}

/*
 * BAR2. An HBM size that is not a power of two (Maia 200's 216 GiB) sits at
 * the start of a container of the next power of two, the rest of the BAR
 * unassigned; the container gives the HBM back before the device goes, so
 * that neither region is finalized while inside the other.
 */
static bool maia_hbm_bar_needed(MaiaState *s)
{
    return !is_power_of_2(s->hbm_size);
}

static MemoryRegion *maia_hbm_bar(MaiaState *s)
{
    return maia_hbm_bar_needed(s) ? &s->hbm_bar : &s->hbm;
}

static void maia_hbm_bar_init(MaiaState *s)
{
    if (maia_hbm_bar_needed(s)) {
        memory_region_init(&s->hbm_bar, OBJECT(s), "maia-hbm-bar",
                           pow2ceil(s->hbm_size));
        memory_region_add_subregion(&s->hbm_bar, 0, &s->hbm);
    }
}

static void maia_hbm_bar_exit(MaiaState *s)
{
    if (maia_hbm_bar_needed(s)) {
        memory_region_del_subregion(&s->hbm_bar, &s->hbm);
    }
}

static void maia_realize(PCIDevice *pci_dev, Error **errp)
{
    MaiaState *s = MAIA(pci_dev);
    struct maia_sim_config cfg;
    uint32_t q, nvec = MAIA_NUM_VECTORS(s->queues);
    int ret;

    maia_sim_config_defaults(&cfg);
    if (!maia_apply_model(s, &cfg, errp) ||
        !maia_check_properties(s, errp)) {
        return;
    }

    /*
     * HBM is as large as the real part (64 GiB and more), far beyond what a
     * development host may have: reserve nothing and let pages be backed on
     * first touch.
     */
    if (!memory_region_init_ram_flags_nomigrate(&s->hbm, OBJECT(s), "maia-hbm",
                                                s->hbm_size, RAM_NORESERVE,
                                                errp)) {
        return;
    }

    cfg.hbm_size = s->hbm_size;
    cfg.hbm = memory_region_get_ram_ptr(&s->hbm);
    cfg.clusters = s->clusters;
    cfg.tiles_per_cluster = s->tiles_per_cluster;
    cfg.num_queues = s->queues;
    cfg.sram_kib = s->sram_kib;
    cfg.worker_threads = s->worker_threads;
    if (!maia_fabric_configure(&s->fabric, DEVICE(s), &cfg, errp)) {
        return;
    }

    qemu_spin_init(&s->dma_lock);
    s->dma_listener = (MemoryListener) {
        .name = "maia-dma",
        .commit = maia_dma_listener_commit,
    };
    memory_listener_register(&s->dma_listener,
                             pci_get_address_space(pci_dev));
    s->irq_bh = qemu_bh_new_guarded(maia_irq_bh, s,
                                    &DEVICE(s)->mem_reentrancy_guard);
    s->kick_bh = qemu_bh_new_guarded(maia_kick_bh, s,
                                     &DEVICE(s)->mem_reentrancy_guard);
    for (q = 0; q < MAIA_MAX_QUEUES; q++) {
        s->doorbell[q].dev = s;
        s->doorbell[q].queue = q;
    }

    s->sim = maia_sim_create(&cfg, &maia_sim_ops, s);
    if (!s->sim) {
        error_setg_errno(errp, errno, "firmware-sim rejected the device "
                         "configuration");
        goto err_bh;
    }
    /* A doorbell runs cheap jobs in the vCPU thread, under the BQL. */
    maia_sim_set_inline_doorbell(s->sim, s->inline_doorbell);
    maia_fabric_attach(&s->fabric, s->sim);

    /* IDs come from the class; MSI-X only, so no INTx pin. */
    pci_dev->config[PCI_INTERRUPT_PIN] = 0;

    if (pci_bus_is_express(pci_get_bus(pci_dev))) {
        ret = pcie_endpoint_cap_init(pci_dev, MAIA_PCIE_CAP_OFFSET);
        if (ret < 0) {
            error_setg(errp, "failed to add the PCIe capability");
            goto err_sim;
        }
        pcie_cap_flr_init(pci_dev);
    } else {
        pci_dev->cap_present &= ~QEMU_PCI_CAP_EXPRESS;
    }

    memory_region_init_io(&s->regs, OBJECT(s), &maia_regs_ops, s, "maia-regs",
                          MAIA_BAR0_SIZE);
    pci_register_bar(pci_dev, MAIA_BAR_REGS, PCI_BASE_ADDRESS_SPACE_MEMORY,
                     &s->regs);
    memory_region_init_io(&s->udb, OBJECT(s), &maia_udb_ops, s, "maia-udb",
                          MAIA_UDB_BAR_SIZE);
    pci_register_bar(pci_dev, MAIA_BAR_UDB, PCI_BASE_ADDRESS_SPACE_MEMORY,
                     &s->udb);
    maia_hbm_bar_init(s);
    pci_register_bar(pci_dev, MAIA_BAR_HBM,
                     PCI_BASE_ADDRESS_SPACE_MEMORY |
                     PCI_BASE_ADDRESS_MEM_TYPE_64 |
                     PCI_BASE_ADDRESS_MEM_PREFETCH, maia_hbm_bar(s));

    ret = msix_init_exclusive_bar(pci_dev, nvec, MAIA_BAR_MSIX, errp);
    if (ret < 0) {
        maia_hbm_bar_exit(s);
        goto err_pcie;
    }
    for (q = 0; q < nvec; q++) {
        msix_vector_use(pci_dev, q);
    }

    trace_maia_realize(s->hbm_size, s->clusters, s->tiles_per_cluster,
                       s->queues, pci_is_express(pci_dev));
    return;

err_pcie:
    if (pci_is_express(pci_dev)) {
        pcie_cap_exit(pci_dev);
    }
err_sim:
    maia_fabric_detach(&s->fabric);
    maia_sim_destroy(s->sim);
    s->sim = NULL;
err_bh:
    memory_listener_unregister(&s->dma_listener);
    maia_fabric_cleanup(&s->fabric);
    qemu_bh_delete(s->kick_bh);
    qemu_bh_delete(s->irq_bh);
}

static void maia_exit(PCIDevice *pci_dev)
{
    MaiaState *s = MAIA(pci_dev);

    /* Eventfds first: their handlers call into the library. */
    maia_doorbell_eventfds_disable_all(s);
    /* No NIC: nothing is received into the device any more. */
    maia_fabric_detach(&s->fabric);
    maia_sim_destroy(s->sim);
    s->sim = NULL;
    /* The worker is gone, nothing can schedule the bottom halves now. */
    maia_fabric_cleanup(&s->fabric);
    qemu_bh_delete(s->kick_bh);
    qemu_bh_delete(s->irq_bh);
    /* No thread DMAs any more. */
    memory_listener_unregister(&s->dma_listener);
    address_space_cache_destroy(&s->dma_cache);
    msix_unuse_all_vectors(pci_dev);
    msix_uninit_exclusive_bar(pci_dev);
    if (pci_is_express(pci_dev)) {
        pcie_cap_exit(pci_dev);
    }
    maia_hbm_bar_exit(s);
}

static void maia_instance_init(Object *obj)
{
    /*
     * Claim PCIe before realize so config space is sized for it; realize
     * drops it again on a conventional PCI bus (as bochs-display does).
     */
    PCI_DEVICE(obj)->cap_present |= QEMU_PCI_CAP_EXPRESS;
}

/*
 * Not migratable: the device state lives in firmware-sim (queues in flight,
 * the worker thread, the tensor engine, MMU contexts) and the library has no
 * way to save and restore it; HBM is not registered for migration either.
 */
static const VMStateDescription maia_vmstate = {
    .name = TYPE_MAIA,
    .unmigratable = 1,
};

static const Property maia_properties[] = {
    DEFINE_PROP_STRING("model", MaiaState, model),
    DEFINE_PROP_SIZE("hbm-size", MaiaState, hbm_size, 0),
    DEFINE_PROP_UINT32("clusters", MaiaState, clusters, 0),
    DEFINE_PROP_UINT32("tiles-per-cluster", MaiaState, tiles_per_cluster, 0),
    DEFINE_PROP_UINT32("queues", MaiaState, queues, MAIA_DEFAULT_QUEUES),
    DEFINE_PROP_UINT32("sram-kib", MaiaState, sram_kib, 8192),
    DEFINE_PROP_UINT32("worker-threads", MaiaState, worker_threads, 0),
    DEFINE_PROP_BOOL("inline-doorbell", MaiaState, inline_doorbell, true),
    DEFINE_MAIA_FABRIC_PROPERTIES(MaiaState, fabric),
};

static void maia_get_direct_ports(Object *obj, Visitor *v, const char *name,
                                  void *opaque, Error **errp)
{
    uint32_t mask = maia_fabric_direct_ports(&MAIA(obj)->fabric);

    visit_type_uint32(v, name, &mask, errp);
}

static void maia_class_init(ObjectClass *klass, void *data)
{
    DeviceClass *dc = DEVICE_CLASS(klass);
    PCIDeviceClass *pc = PCI_DEVICE_CLASS(klass);
    ResettableClass *rc = RESETTABLE_CLASS(klass);

    pc->realize = maia_realize;
    pc->exit = maia_exit;
    pc->config_write = maia_write_config;
    pc->vendor_id = MAIA_PCI_VENDOR_ID;
    pc->device_id = MAIA_PCI_DEVICE_ID;
    pc->revision = MAIA_PCI_REVISION;
    pc->class_id = MAIA_PCI_CLASS;
    pc->subsystem_vendor_id = MAIA_PCI_VENDOR_ID;
    pc->subsystem_id = MAIA_PCI_DEVICE_ID;

    rc->phases.hold = maia_reset_hold;
    dc->vmsd = &maia_vmstate;
    dc->desc = "Maia AI accelerator (firmware-sim model)";
    set_bit(DEVICE_CATEGORY_MISC, dc->categories);
    device_class_set_props(dc, maia_properties);

    object_class_property_add(klass, "inject-hang", "uint32", NULL,
                              maia_set_inject, NULL,
                              (void *)(uintptr_t)MAIA_SIM_INJECT_HANG);
    object_class_property_set_description(klass, "inject-hang",
        "Fault injection: the next job on this queue never completes");
    object_class_property_add(klass, "inject-fault", "uint32", NULL,
                              maia_set_inject, NULL,
                              (void *)(uintptr_t)MAIA_SIM_INJECT_MMU_FAULT);
    object_class_property_set_description(klass, "inject-fault",
        "Fault injection: the next job on this queue takes an MMU fault");
    object_class_property_add(klass, "fabric-direct-ports", "uint32",
                              maia_get_direct_ports, NULL, NULL, NULL);
    object_class_property_set_description(klass, "fabric-direct-ports",
        "Fabric ports on a direct cable to a device of this QEMU (bit N: "
        "port N); the others go through their netdev");
}

static const TypeInfo maia_info = {
    .name = TYPE_MAIA,
    .parent = TYPE_PCI_DEVICE,
    .instance_size = sizeof(MaiaState),
    .instance_init = maia_instance_init,
    .class_init = maia_class_init,
    .interfaces = (InterfaceInfo[]) {
        { INTERFACE_PCIE_DEVICE },
        { INTERFACE_CONVENTIONAL_PCI_DEVICE },
        { },
    },
};

static void maia_register_types(void)
{
    type_register_static(&maia_info);
}

type_init(maia_register_types)
