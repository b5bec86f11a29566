/*
 * QTest testcase for the maia device's fabric ports (qemu/hw/maia-fabric.c):
 * ports as NICs on QEMU netdevs, seen through the BAR0 fabric registers.
 *
 * - Two devices in one QEMU cabled as a ring by hubport pairs, each reset
 *   and booted as a driver's probe does, one after the other: no link is up
 *   before both firmwares run, so after the boots every port counts one UP
 *   and no DOWN; then every port UP with the other device's serial and port;
 *   `set_link off` takes a cable's ports DOWN (dead peer), `set_link on`
 *   brings them back: exactly one DOWN on each end of that cable, none on
 *   the other; a filter-dump on a cable writes a pcap of EtherType 0x88b5
 *   frames. A third device without fabric properties has no fabric.
 * - Two QEMU processes cabled over a `-netdev stream` unix socket: UP once
 *   both are booted, not before.
 * - Two QEMU processes cabled over shared memory (fabric0-shm, one
 *   memory-backend-file in the test's directory): UP, a remote write and
 *   read exact; `set_link` on the port's NIC takes it DOWN and back; the
 *   peer QEMU killed (SIGKILL): DOWN by dead peer; a new QEMU on the same
 *   file: UP again; garbage the test writes into both rings (slot lengths,
 *   frames, indices): frames dropped and counted, QEMU running, the link UP.
 *   A ring of two QEMUs over two such cables, one file cut short
 *   (ftruncate) under them: both QEMUs run on, that cable's ports DOWN and
 *   marked cut, the other cable UP, a next all-reduce exact; the devices
 *   plugged anew on the file grown back: UP; the other file's magic
 *   overwritten: out of service the same way; a file cut to nothing:
 *   a device plugged on it refused.
 *   In one QEMU: two devices on one memory-backend-memfd are cabled; a
 *   third end, a small, unshared or read-only backend, a netdev beside
 *   it: refused;
 *   one end unplugged and plugged again: UP again.
 * - A `-netdev dgram` port fed by this test: what the device sends is a
 *   fabric frame, and malformed frames of any size are counted in RX_DROPS,
 *   one each, with QEMU still running.
 * - Hot-plug and unplug of a device cabled to a running one (twice, each
 *   plugged device booted), with
 *   injected drops; bad fabric properties refused.
 * - A longer cable (fabric0-lat-ns): the port's modeled latency register
 *   reads the chip's link latency plus the property, and its failover
 *   state says "latency" exactly while that is over the threshold the test
 *   writes (5 us, then 1 ns above the latency, then back); the other port
 *   keeps the chip's latency and no failover state.
 *
 * - Remote write and remote read over a hubport cable: device 1 opens a
 *   window (mailbox) on HBM pages of its ASID 1; device 0 runs jobs that
 *   write into it and read it back; the bytes are checked through BAR2 and
 *   guest memory. A write with a key device 1 never issued completes with
 *   MAIA_STATUS_FABRIC_KEY, nothing lands, and device 1 counts the refusal.
 *   Three times: over the direct cable a hub of two maia ports makes
 *   (fabric-direct, the default; fabric-direct-ports reads 1 on both), and
 *   through the hub and the main loop, with device 0's fabric-direct=off
 *   or a filter on the cable (fabric-direct-ports 0).
 *
 * The device runs its links in real time: waits poll a register with a
 * generous bound (FABRIC_WAIT_US) for an event, never assert a duration.
 *
 * Copyright (c) 2026 The Maia accelerator stack authors
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */

#include "qemu/osdep.h"
#include "qemu/atomic.h"
#include "qemu/bswap.h"
#include "qemu/futex.h"
#include "qemu/units.h"
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/un.h>
#include "libqtest.h"
#include "libqos/libqos-pc.h"
#include "libqos/pci.h"
#include "libqos/pci-pc.h"
#include "qobject/qdict.h"

#include "maia/hw/boot.h"
#include "maia/hw/cmd.h"
#include "maia/hw/dtype.h"
#include "maia/hw/fabric.h"
#include "maia/hw/mbox.h"
#include "maia/hw/mmu.h"
#include "maia/hw/model.h"
#include "maia/hw/queue.h"
#include "maia/hw/regs.h"
#include "maia-qtest-fw.h"
/* The shared-memory cable's layout (qemu/hw/, grafted as hw/misc/maia/). */
#include "../../hw/misc/maia/maia-fabric-shm.h"

/* 20 x the dead-peer timeout: a loaded CI machine, not a bound on speed. */
#define FABRIC_WAIT_US      (20 * G_USEC_PER_SEC)
#define DEV_OPTS            "hbm-size=16M,queues=1,worker-threads=1"

#define WAIT_UNTIL(cond) ({                                                 \
    gint64 deadline_ = g_get_monotonic_time() + FABRIC_WAIT_US;             \
    bool ok_;                                                               \
    while (!(ok_ = (cond)) && g_get_monotonic_time() < deadline_) {         \
        g_usleep(2000);                                                     \
    }                                                                       \
    ok_;                                                                    \
})

typedef struct Dev {
    QPCIDevice *pci;
    QPCIBar regs;
} Dev;

static void collect_dev(QPCIDevice *dev, int devfn, void *data)
{
    g_ptr_array_add(data, dev);
}

static uint32_t rd(Dev *d, uint32_t off)
{
    return qpci_io_readl(d->pci, d->regs, off);
}

static void wr(Dev *d, uint32_t off, uint32_t val)
{
    qpci_io_writel(d->pci, d->regs, off, val);
}

static uint64_t rd64(Dev *d, uint32_t off)
{
    uint32_t hi, lo;

    do {
        hi = rd(d, off + 4);
        lo = rd(d, off);
    } while (rd(d, off + 4) != hi);
    return (uint64_t)hi << 32 | lo;
}

static uint64_t serial_of(Dev *d)
{
    return (uint64_t)rd(d, MAIA_REG_FABRIC_SERIAL_HI) << 32 |
           rd(d, MAIA_REG_FABRIC_SERIAL_LO);
}

static bool port_up(Dev *d, unsigned port)
{
    return rd(d, MAIA_REG_FPORT(port, MAIA_FPORT_STATE)) &
           MAIA_FPORT_STATE_UP;
}

static uint64_t peer_serial(Dev *d, unsigned port)
{
    return (uint64_t)rd(d, MAIA_REG_FPORT(port, MAIA_FPORT_PEER_SERIAL_HI))
           << 32 | rd(d, MAIA_REG_FPORT(port, MAIA_FPORT_PEER_SERIAL_LO));
}

/* The maia devices of qs, each with BAR0 mapped, found by their serial. */
static Dev *find_devs(QOSState *qs, const uint64_t *serials, unsigned n)
{
    g_autoptr(GPtrArray) pcis = g_ptr_array_new();
    Dev *devs = g_new0(Dev, n);
    unsigned i, k;

    qpci_device_foreach(qs->pcibus, MAIA_PCI_VENDOR_ID, MAIA_PCI_DEVICE_ID,
                        collect_dev, pcis);
    g_assert_cmpuint(pcis->len, ==, n);
    for (i = 0; i < n; i++) {
        Dev d = { .pci = g_ptr_array_index(pcis, i) };

        d.regs = qpci_iomap(d.pci, MAIA_BAR_REGS, NULL);
        qpci_device_enable(d.pci);
        for (k = 0; k < n && serials[k] != serial_of(&d); k++) {
            ;
        }
        g_assert_cmpuint(k, <, n);
        g_assert_null(devs[k].pci);
        devs[k] = d;
    }
    return devs;
}

static void free_devs(Dev *devs, unsigned n)
{
    unsigned i;

    for (i = 0; i < n; i++) {
        g_free(devs[i].pci);
    }
    g_free(devs);
}

static void set_link(QTestState *qts, const char *netdev, bool up)
{
    QDict *rsp = qtest_qmp(qts, "{'execute': 'set_link', 'arguments': "
                           "{'name': %s, 'up': %i}}", netdev, up);

    g_assert(qdict_haskey(rsp, "return"));
    qobject_unref(rsp);
}

/* Port pa of a is cabled to port pb of b. */
static void assert_cabled(Dev *a, unsigned pa, Dev *b, unsigned pb)
{
    g_assert(WAIT_UNTIL(port_up(a, pa) && port_up(b, pb)));
    g_assert_cmphex(peer_serial(a, pa), ==, serial_of(b));
    g_assert_cmpuint(rd(a, MAIA_REG_FPORT(pa, MAIA_FPORT_PEER_PORT)), ==, pb);
    g_assert_cmphex(peer_serial(b, pb), ==, serial_of(a));
    g_assert_cmpuint(rd(b, MAIA_REG_FPORT(pb, MAIA_FPORT_PEER_PORT)), ==, pa);
}

/* ---- Firmware, mailbox and one queue, as a driver drives them ---------- */

#define QUEUE_ENTRIES       8u

/* Boots d with a minimal image whose opcodes include the fabric ones. */
static void boot_fw(QOSState *qs, Dev *d)
{
    static const char name[] = "maia-fabric-qtest";
    uint64_t opcodes = cpu_to_le64((1u << (MAIA_OP_COLLECTIVE + 1)) - 1);
    struct maia_fw_header hdr = { 0 };
    uint8_t img[sizeof(hdr) + 128];
    uint8_t *payload = img + sizeof(hdr);
    size_t len = 0;
    uint64_t addr;
    uint32_t status;

    len += put_tlv(payload + len, MAIA_FW_TLV_NAME, name, sizeof(name));
    len += put_tlv(payload + len, MAIA_FW_TLV_OPCODES, &opcodes,
                   sizeof(opcodes));
    len += put_tlv(payload + len, MAIA_FW_TLV_END, NULL, 0);
    g_assert_cmpuint(sizeof(hdr) + len, <=, sizeof(img));
    hdr.magic = cpu_to_le32(MAIA_FW_MAGIC);
    hdr.abi_major = cpu_to_le16(MAIA_FW_ABI_MAJOR);
    hdr.abi_minor = cpu_to_le16(MAIA_FW_ABI_MINOR);
    hdr.fw_version = cpu_to_le32(MAIA_FW_VERSION(1u, 3u, 0u));
    hdr.header_size = cpu_to_le32(sizeof(hdr));
    hdr.payload_size = cpu_to_le32(len);
    hdr.payload_crc32 = cpu_to_le32(ref_crc32(payload, len));
    memcpy(img, &hdr, sizeof(hdr));

    addr = guest_alloc(&qs->alloc, sizeof(hdr) + len);
    qtest_memwrite(qs->qts, addr, img, sizeof(hdr) + len);
    wr(d, MAIA_REG_BOOT_ADDR_LO, addr);
    wr(d, MAIA_REG_BOOT_ADDR_HI, addr >> 32);
    wr(d, MAIA_REG_BOOT_SIZE, sizeof(hdr) + len);
    wr(d, MAIA_REG_BOOT_CTRL, MAIA_BOOT_CTRL_START);
    g_assert(WAIT_UNTIL((status = rd(d, MAIA_REG_BOOT_STATUS)) ==
                        MAIA_BOOT_STATUS_READY ||
                        status == MAIA_BOOT_STATUS_FAILED));
    g_assert_cmphex(status, ==, MAIA_BOOT_STATUS_READY);
    guest_free(&qs->alloc, addr);
}

/*
 * What a driver's probe does to d: a reset (back to WAIT_FW, whatever ran
 * before), then the boot. The links of d run only while its firmware does.
 */
static void probe(QOSState *qs, Dev *d)
{
    wr(d, MAIA_REG_RESET, MAIA_RESET_MAGIC);
    g_assert(WAIT_UNTIL(rd(d, MAIA_REG_BOOT_STATUS) ==
                        MAIA_BOOT_STATUS_WAIT_FW));
    boot_fw(qs, d);
}

/* Port p's LINK_UPS, LINK_DOWNS and DEAD_PEER are ups, downs and dead. */
static void assert_link_counts(Dev *d, unsigned p, uint32_t ups,
                               uint32_t downs, uint32_t dead)
{
    g_assert_cmpuint(rd(d, MAIA_REG_FPORT(p, MAIA_FPORT_LINK_UPS)), ==, ups);
    g_assert_cmpuint(rd(d, MAIA_REG_FPORT(p, MAIA_FPORT_LINK_DOWNS)), ==,
                     downs);
    g_assert_cmpuint(rd(d, MAIA_REG_FPORT(p, MAIA_FPORT_DEAD_PEER)), ==,
                     dead);
}

/* One mailbox command; returns its result, *resp0 its first output. */
static uint32_t mbox(Dev *d, uint32_t cmd, const uint32_t arg[4],
                     uint32_t *resp0)
{
    uint32_t st;
    unsigned i;

    for (i = 0; i < 4; i++) {
        wr(d, MAIA_REG_MBOX_ARG(i), arg[i]);
    }
    wr(d, MAIA_REG_MBOX_CMD, cmd);
    g_assert(WAIT_UNTIL(!((st = rd(d, MAIA_REG_MBOX_STATUS)) &
                          MAIA_MBOX_STATUS_BUSY)));
    if (resp0) {
        *resp0 = rd(d, MAIA_REG_MBOX_RESP(0));
    }
    return st & MAIA_MBOX_STATUS_RESULT_MASK;
}

/* Queue 0 of d: rings in guest memory, enabled. */
typedef struct Queue {
    uint64_t sq, cq;
    uint32_t tail;
} Queue;

static void queue_init(QOSState *qs, Dev *d, Queue *q)
{
    size_t sq = QUEUE_ENTRIES * sizeof(struct maia_sq_entry);
    size_t cq = QUEUE_ENTRIES * sizeof(struct maia_cq_entry);

    q->tail = 0;
    q->sq = guest_alloc(&qs->alloc, sq);
    q->cq = guest_alloc(&qs->alloc, cq);
    qtest_memset(qs->qts, q->sq, 0, sq);
    qtest_memset(qs->qts, q->cq, 0, cq);
    wr(d, MAIA_REG_Q(0, MAIA_Q_SQ_LO), q->sq);
    wr(d, MAIA_REG_Q(0, MAIA_Q_SQ_HI), q->sq >> 32);
    wr(d, MAIA_REG_Q(0, MAIA_Q_CQ_LO), q->cq);
    wr(d, MAIA_REG_Q(0, MAIA_Q_CQ_HI), q->cq >> 32);
    wr(d, MAIA_REG_Q(0, MAIA_Q_SIZE), QUEUE_ENTRIES);
    wr(d, MAIA_REG_Q(0, MAIA_Q_CTRL), MAIA_Q_CTRL_ENABLE |
       (MAIA_QUEUE_PRIO_NORMAL << MAIA_Q_CTRL_PRIO_SHIFT));
    g_assert_cmphex(rd(d, MAIA_REG_Q(0, MAIA_Q_STATUS)), ==, 0);
}

static bool cqe_valid(QTestState *qts, Queue *q, uint32_t slot)
{
    struct maia_cq_entry cqe;

    qtest_memread(qts, q->cq + slot * sizeof(cqe), &cqe, sizeof(cqe));
    return le32_to_cpu(cqe.flags) & MAIA_CQE_VALID;
}

/* A job put on a queue and not waited for yet. */
typedef struct Job {
    uint64_t cb;                /* its command buffer in guest memory */
    uint32_t slot;
    uint64_t id;
} Job;

/*
 * Puts one command (len bytes at cmd) on q as a job in ASID 0, where
 * addresses are guest bus addresses, and rings d's doorbell.
 */
static void job_submit(QOSState *qs, Dev *d, Queue *q, const void *cmd,
                       uint32_t len, Job *j)
{
    struct maia_sq_entry sqe = { 0 };

    j->cb = guest_alloc(&qs->alloc, len);
    j->slot = q->tail % QUEUE_ENTRIES;
    j->id = 0x10b0 + q->tail;
    sqe.cmdbuf_addr = cpu_to_le64(j->cb);
    sqe.cmdbuf_size = cpu_to_le32(len);
    sqe.job_id = cpu_to_le64(j->id);
    qtest_memwrite(qs->qts, j->cb, cmd, len);
    qtest_memset(qs->qts, q->cq + j->slot * sizeof(struct maia_cq_entry), 0,
                 sizeof(struct maia_cq_entry));
    qtest_memwrite(qs->qts, q->sq + j->slot * sizeof(sqe), &sqe, sizeof(sqe));
    q->tail = (q->tail + 1) % QUEUE_ENTRIES;
    wr(d, MAIA_REG_DOORBELL(0), q->tail);
}

/* Waits for j's completion: its status. */
static uint32_t job_wait(QOSState *qs, Queue *q, Job *j)
{
    struct maia_cq_entry cqe;

    /* The fabric's own timeouts end a job that gets no answer. */
    g_assert(WAIT_UNTIL(cqe_valid(qs->qts, q, j->slot)));
    qtest_memread(qs->qts, q->cq + j->slot * sizeof(cqe), &cqe, sizeof(cqe));
    g_assert_cmphex(le64_to_cpu(cqe.job_id), ==, j->id);
    guest_free(&qs->alloc, j->cb);
    return le32_to_cpu(cqe.status);
}

/* Runs one command as a job (job_submit()) and waits for it: its status. */
static uint32_t run_job(QOSState *qs, Dev *d, Queue *q, const void *cmd,
                        uint32_t len)
{
    Job j;

    job_submit(qs, d, q, cmd, len, &j);
    return job_wait(qs, q, &j);
}

/* A pcap file: its header, and how many of its frames are fabric frames. */
static unsigned pcap_fabric_frames(const char *path, unsigned *frames)
{
    g_autofree char *buf = NULL;
    size_t len, off = 24;
    unsigned fabric = 0;

    g_assert(g_file_get_contents(path, &buf, &len, NULL));
    g_assert_cmpuint(len, >=, 24);
    g_assert_cmphex((uint32_t)ldl_le_p(buf), ==, 0xa1b2c3d4);   /* pcap, microseconds */
    g_assert_cmpuint(lduw_le_p(buf + 4), ==, 2);        /* version 2.4 */
    g_assert_cmpuint(lduw_le_p(buf + 6), ==, 4);
    g_assert_cmpuint(ldl_le_p(buf + 20), ==, 1);        /* LINKTYPE_ETHERNET */
    *frames = 0;
    while (off + 16 <= len) {
        uint32_t caplen = (uint32_t)ldl_le_p(buf + off + 8);

        off += 16;
        g_assert_cmpuint(off + caplen, <=, len);
        if (caplen >= MAIA_FABRIC_MIN_FRAME &&
            lduw_be_p(buf + off + 12) == MAIA_FABRIC_ETHERTYPE) {
            fabric++;
        }
        (*frames)++;
        off += caplen;
    }
    return fabric;
}

static void test_hubport_ring(void)
{
    /* Without ports a device shows no serial (0), whatever its property. */
    static const uint64_t serials[3] = { 0x1111, 0x2222, 0 };
    g_autofree char *dir = g_dir_make_tmp("maia-fabric-XXXXXX", NULL);
    g_autofree char *pcap = g_strdup_printf("%s/cable0.pcap", dir);
    QOSState *qs;
    Dev *d;
    unsigned frames, fabric, i;
    uint32_t events;

    /* Ring of two: 0.port0 - 1.port1 on hub 0, 1.port0 - 0.port1 on hub 1. */
    qs = qtest_pc_boot("-nodefaults -machine q35 "
                       "-netdev hubport,id=c0a,hubid=0 "
                       "-netdev hubport,id=c0b,hubid=0 "
                       "-netdev hubport,id=c1a,hubid=1 "
                       "-netdev hubport,id=c1b,hubid=1 "
                       "-object filter-dump,id=dump0,netdev=c0a,file=%s "
                       "-device maia,id=m0," DEV_OPTS ",serial=0x1111,"
                       "fabric0=c0a,fabric1=c1b "
                       "-device maia,id=m1," DEV_OPTS ",serial=0x2222,"
                       "fabric0=c1a,fabric1=c0b "
                       "-device maia,id=m2," DEV_OPTS ",serial=0x3333",
                       pcap);
    d = find_devs(qs, serials, 3);

    g_assert(rd(&d[0], MAIA_REG_CAPS) & MAIA_CAP_FABRIC);
    g_assert_cmpuint(rd(&d[0], MAIA_REG_FABRIC_PORTS), ==, 2);
    g_assert_cmpuint(rd(&d[1], MAIA_REG_FABRIC_PORTS), ==, 2);
    /* No fabric property: no fabric, as before the fabric existed. */
    g_assert_false(rd(&d[2], MAIA_REG_CAPS) & MAIA_CAP_FABRIC);
    g_assert_cmpuint(rd(&d[2], MAIA_REG_FABRIC_PORTS), ==, 0);

    /*
     * A clean boot, as the guest's driver probes the devices one after the
     * other: device 1's reset comes after device 0 runs, yet no link was
     * up before both firmwares ran, so nothing went down.
     */
    g_assert_false(port_up(&d[0], 0) || port_up(&d[0], 1));
    probe(qs, &d[0]);
    probe(qs, &d[1]);
    assert_cabled(&d[0], 0, &d[1], 1);
    assert_cabled(&d[1], 0, &d[0], 1);
    g_assert(rd(&d[0], MAIA_REG_INT_STATUS) & MAIA_INT_FABRIC_LINK);
    for (i = 0; i < 2; i++) {
        assert_link_counts(&d[i], 0, 1, 0, 0);
        assert_link_counts(&d[i], 1, 1, 0, 0);
        g_assert_cmpuint(rd(&d[i], MAIA_REG_FABRIC_LINK_EVENTS), ==, 2);
    }
    g_assert_cmpuint(rd64(&d[0], MAIA_REG_FPORT(0, MAIA_FPORT_TX_FRAMES)),
                     >, 0);
    g_assert_cmpuint(rd64(&d[1], MAIA_REG_FPORT(1, MAIA_FPORT_RX_BYTES)),
                     >=, MAIA_FABRIC_MIN_FRAME);

    /* Carrier off on cable 0: both of its ends declare a dead peer. */
    events = rd(&d[1], MAIA_REG_FABRIC_LINK_EVENTS);
    set_link(qs->qts, "c0a", false);
    g_assert(WAIT_UNTIL(!port_up(&d[0], 0) && !port_up(&d[1], 1)));
    g_assert_cmpuint(rd(&d[1], MAIA_REG_FPORT(1, MAIA_FPORT_DEAD_PEER)), ==,
                     1);
    g_assert_cmpuint(rd(&d[1], MAIA_REG_FABRIC_LINK_EVENTS), >, events);
    g_assert(WAIT_UNTIL(port_up(&d[0], 1) && port_up(&d[1], 0)));

    /* Carrier back: one DOWN (a dead peer) and a second UP at each end. */
    set_link(qs->qts, "c0a", true);
    assert_cabled(&d[0], 0, &d[1], 1);
    assert_link_counts(&d[0], 0, 2, 1, 1);
    assert_link_counts(&d[1], 1, 2, 1, 1);
    assert_link_counts(&d[0], 1, 1, 0, 0);
    assert_link_counts(&d[1], 0, 1, 0, 0);

    free_devs(d, 3);
    qtest_shutdown(qs);

    fabric = pcap_fabric_frames(pcap, &frames);
    g_test_message("pcap of cable 0: %u frames, %u fabric frames", frames,
                   fabric);
    g_assert_cmpuint(fabric, >=, 2);
    g_assert_cmpuint(fabric, ==, frames);
    unlink(pcap);
    rmdir(dir);
}

static void test_stream_two_qemus(void)
{
    static const uint64_t sa = 0xa0a0, sb = 0xb0b0;
    g_autofree char *dir = g_dir_make_tmp("maia-fabric-XXXXXX", NULL);
    g_autofree char *sock = g_strdup_printf("%s/link.sock", dir);
    QOSState *qa, *qb;
    Dev *a, *b;

    qa = qtest_pc_boot("-nodefaults -machine q35 "
                       "-netdev stream,id=s0,server=on,addr.type=unix,"
                       "addr.path=%s "
                       "-device maia," DEV_OPTS ",serial=0xa0a0,fabric0=s0",
                       sock);
    qb = qtest_pc_boot("-nodefaults -machine q35 "
                       "-netdev stream,id=s0,server=off,addr.type=unix,"
                       "addr.path=%s,reconnect-ms=100 "
                       "-device maia," DEV_OPTS ",serial=0xb0b0,fabric0=s0",
                       sock);
    a = find_devs(qa, &sa, 1);
    b = find_devs(qb, &sb, 1);
    /* a's HELLOs go unanswered while b's firmware does not run. */
    probe(qa, a);
    g_assert_false(port_up(a, 0));
    probe(qb, b);
    assert_cabled(a, 0, b, 0);
    assert_link_counts(a, 0, 1, 0, 0);
    assert_link_counts(b, 0, 1, 0, 0);

    free_devs(a, 1);
    free_devs(b, 1);
    qtest_shutdown(qb);
    qtest_shutdown(qa);
    unlink(sock);
    rmdir(dir);
}

/* device_add with one bad fabric property fails with an error naming it. */
static void expect_add_error(QTestState *qts, const char *prop, int64_t val)
{
    QDict *args = qdict_new();
    QDict *rsp, *err;

    qdict_put_str(args, "driver", "maia");
    qdict_put_str(args, "id", "bad");
    qdict_put_int(args, "hbm-size", 16 * MiB);
    qdict_put_str(args, "fabric1", "h2");
    qdict_put_int(args, prop, val);
    rsp = qtest_qmp(qts, "{'execute': 'device_add', 'arguments': %p}", args);
    err = qdict_get_qdict(rsp, "error");
    g_assert_nonnull(err);
    g_test_message("%s=%" PRId64 ": %s", prop, val,
                   qdict_get_str(err, "desc"));
    g_assert_nonnull(strstr(qdict_get_str(err, "desc"), prop));
    qobject_unref(rsp);
}

static uint32_t direct_ports(QTestState *qts, const char *id)
{
    QDict *rsp = qtest_qmp(qts, "{'execute': 'qom-get', 'arguments': "
                           "{'path': %s, 'property': 'fabric-direct-ports'}}",
                           id);
    uint32_t v;

    g_assert(qdict_haskey(rsp, "return"));
    v = qdict_get_int(rsp, "return");
    qobject_unref(rsp);
    return v;
}

/*
 * Hot-plug a device cabled to a running one, with 20 % of its frames
 * dropped by injection, then unplug it while its peer keeps sending to
 * it, and plug it again: the link comes back, QEMU never falls over.
 */
static void test_hotplug(void)
{
    static const uint64_t serials[2] = { 0xaaaa, 0xbbbb };
    QOSState *qs;
    Dev *d;

    qs = qtest_pc_boot("-nodefaults -machine pc "
                       "-netdev hubport,id=h0,hubid=0 "
                       "-netdev hubport,id=h1,hubid=0 "
                       "-netdev hubport,id=h2,hubid=1 "
                       "-device maia,id=m0,addr=0x4," DEV_OPTS ","
                       "serial=0xaaaa,fabric0=h0");
    expect_add_error(qs->qts, "fabric-ports", 13);
    expect_add_error(qs->qts, "fabric-ports", 1);     /* fabric1 is given */
    expect_add_error(qs->qts, "fabric-drop-ppm", 1000001);
    expect_add_error(qs->qts, "fabric-window", 3);      /* not a power of two */
    expect_add_error(qs->qts, "fabric-window", 128);    /* above MAIA_FABRIC_WINDOW */
    expect_add_error(qs->qts, "fabric0-lat-ns", 1000000001);    /* over 1 s */
    expect_add_error(qs->qts, "fabric5-lat-ns", 100);   /* 2 ports */

    for (int round = 0; round < 2; round++) {
        qtest_qmp_device_add(qs->qts, "maia", "m1",
                             "{'addr': '0x5', 'hbm-size': 16777216, "
                             "'queues': 1, 'worker-threads': 1, "
                             "'serial': 48059, 'fabric0': 'h1', "
                             "'fabric-ports': 3, "
                             "'fabric-drop-ppm': 200000, "
                             "'fabric-drop-seed': 7}");
        d = find_devs(qs, serials, 2);
        if (!round) {
            probe(qs, &d[0]);
        }
        probe(qs, &d[1]);
        g_assert_cmpuint(rd(&d[1], MAIA_REG_FABRIC_PORTS), ==, 3);
        /* The hub of h0 and h1 is a direct cable while both are plugged. */
        g_assert_cmpuint(direct_ports(qs->qts, "m0"), ==, 1);
        g_assert_cmpuint(direct_ports(qs->qts, "m1"), ==, 1);
        assert_cabled(&d[0], 0, &d[1], 0);
        g_assert(WAIT_UNTIL(rd64(&d[1], MAIA_REG_FPORT(0,
                                 MAIA_FPORT_INJECTED_DROPS)) > 0));
        g_assert_cmpuint(rd64(&d[0], MAIA_REG_FPORT(0,
                              MAIA_FPORT_INJECTED_DROPS)), ==, 0);

        qpci_unplug_acpi_device_test(qs->qts, "m1", 0x5);
        g_assert_cmpuint(direct_ports(qs->qts, "m0"), ==, 0);
        g_assert(WAIT_UNTIL(!port_up(&d[0], 0)));
        g_assert_cmphex(rd(&d[0], MAIA_REG_ID), ==, MAIA_ID_MAGIC);
        free_devs(d, 2);
    }
    qtest_shutdown(qs);
}

/* Port p's failover state, once the device has published it. */
static bool fo_state_is(Dev *d, unsigned p, uint32_t state)
{
    return rd(d, MAIA_REG_FPORT_FO(p, MAIA_FPORT_FO_STATE)) == state;
}

/*
 * fabric0-lat-ns models a long cable on device 0's port 0: its latency
 * register is the chip's hop plus the property, and the latency trigger
 * of failover follows the threshold register across that value.
 */
static void test_cable_latency(void)
{
    static const uint64_t serials[2] = { 0x1a1a, 0x2b2b };
    const uint32_t extra = 6000;
    QOSState *qs;
    uint32_t hop, lat;
    Dev *d;

    qs = qtest_pc_boot("-nodefaults -machine q35 "
                       "-netdev hubport,id=c0a,hubid=0 "
                       "-netdev hubport,id=c0b,hubid=0 "
                       "-netdev hubport,id=c1a,hubid=1 "
                       "-netdev hubport,id=c1b,hubid=1 "
                       "-device maia,id=m0," DEV_OPTS ",serial=0x1a1a,"
                       "fabric0=c0a,fabric1=c1b,fabric0-lat-ns=%u "
                       "-device maia,id=m1," DEV_OPTS ",serial=0x2b2b,"
                       "fabric0=c1a,fabric1=c0b", extra);
    d = find_devs(qs, serials, 2);
    probe(qs, &d[0]);
    probe(qs, &d[1]);
    assert_cabled(&d[0], 0, &d[1], 1);
    assert_cabled(&d[1], 0, &d[0], 1);

    hop = rd(&d[0], MAIA_REG_MODEL_LINK_LAT_NS);
    lat = hop + extra;
    g_test_message("chip hop %u ns, port 0 with fabric0-lat-ns=%u: %u ns",
                   hop, extra,
                   rd(&d[0], MAIA_REG_FPORT_Q(0, MAIA_FPORT_Q_LAT_NS)));
    g_assert_cmpuint(rd(&d[0], MAIA_REG_FPORT_Q(0, MAIA_FPORT_Q_LAT_NS)), ==,
                     lat);
    g_assert_cmpuint(rd(&d[0], MAIA_REG_FPORT_Q(1, MAIA_FPORT_Q_LAT_NS)), ==,
                     hop);
    g_assert_cmpuint(rd(&d[1], MAIA_REG_FPORT_Q(1, MAIA_FPORT_Q_LAT_NS)), ==,
                     hop);
    g_assert_cmpuint(rd(&d[0], MAIA_REG_FABRIC_FO_LAT_NS), ==,
                     MAIA_FABRIC_FO_LAT_NS_DEFAULT);
    g_assert_cmpuint(lat, >, MAIA_FABRIC_FO_LAT_NS_DEFAULT);
    g_assert(WAIT_UNTIL(fo_state_is(&d[0], 0, MAIA_FPORT_FO_LATENCY)));
    g_assert(fo_state_is(&d[0], 1, 0));
    g_assert(fo_state_is(&d[1], 1, 0));

    /* At the latency itself the port is not over it; 1 ns lower it is. */
    wr(&d[0], MAIA_REG_FABRIC_FO_LAT_NS, lat);
    g_assert(WAIT_UNTIL(fo_state_is(&d[0], 0, 0)));
    wr(&d[0], MAIA_REG_FABRIC_FO_LAT_NS, lat - 1);
    g_assert(WAIT_UNTIL(fo_state_is(&d[0], 0, MAIA_FPORT_FO_LATENCY)));
    g_assert(fo_state_is(&d[0], 1, 0));
    /* 0 turns the trigger off. */
    wr(&d[0], MAIA_REG_FABRIC_FO_LAT_NS, 0);
    g_assert(WAIT_UNTIL(fo_state_is(&d[0], 0, 0)));

    free_devs(d, 2);
    qtest_shutdown(qs);
}

/* Frames this test puts on a dgram cable, each one broken in its own way. */
static size_t bad_frame(uint8_t *buf, size_t max, unsigned i)
{
    size_t len = 1 + g_test_rand_int_range(0, max);

    for (size_t k = 0; k < len; k++) {
        buf[k] = g_test_rand_int();
    }
    if (i % 2 && len >= MAIA_FABRIC_MIN_FRAME) {
        /* A fabric frame's headers with random payload and CRC. */
        stw_be_p(buf + 12, MAIA_FABRIC_ETHERTYPE);
        buf[MAIA_ETH_HLEN] = MAIA_FABRIC_VERSION;
        buf[MAIA_ETH_HLEN + 1] = 1 + i % 5;
        if (i % 4 == 1) {
            stl_le_p(buf + MAIA_ETH_HLEN + 36, len - MAIA_FABRIC_MIN_FRAME);
        }
    }
    return len;
}

static void test_dgram_malformed(void)
{
    static const uint64_t serial = 0xd9d9;
    g_autofree char *dir = g_dir_make_tmp("maia-fabric-XXXXXX", NULL);
    g_autofree char *qsock = g_strdup_printf("%s/qemu.sock", dir);
    g_autofree char *tsock = g_strdup_printf("%s/test.sock", dir);
    g_autofree uint8_t *buf = g_malloc(MAIA_FABRIC_BACKEND_MAX_FRAME);
    struct sockaddr_un ta = { .sun_family = AF_UNIX };
    struct sockaddr_un qa = { .sun_family = AF_UNIX };
    const unsigned nbad = 300;
    struct timeval tv = { .tv_sec = FABRIC_WAIT_US / G_USEC_PER_SEC };
    uint64_t drops;
    QOSState *qs;
    ssize_t n;
    Dev *d;
    int fd;
    unsigned i;

    fd = socket(AF_UNIX, SOCK_DGRAM, 0);
    g_assert_cmpint(fd, >=, 0);
    g_strlcpy(ta.sun_path, tsock, sizeof(ta.sun_path));
    g_strlcpy(qa.sun_path, qsock, sizeof(qa.sun_path));
    g_assert_cmpint(bind(fd, (struct sockaddr *)&ta, sizeof(ta)), ==, 0);
    g_assert_cmpint(setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv)),
                    ==, 0);

    qs = qtest_pc_boot("-nodefaults -machine q35 "
                       "-netdev dgram,id=g0,local.type=unix,local.path=%s,"
                       "remote.type=unix,remote.path=%s "
                       "-device maia," DEV_OPTS ",serial=0xd9d9,fabric0=g0",
                       qsock, tsock);
    d = find_devs(qs, &serial, 1);
    probe(qs, d);

    /* The device's HELLO, as sent: a fabric frame from this serial. */
    n = recv(fd, buf, MAIA_FABRIC_BACKEND_MAX_FRAME, 0);
    g_assert_cmpint(n, >=, MAIA_FABRIC_MIN_FRAME);
    g_assert_cmphex(lduw_be_p(buf + 12), ==, MAIA_FABRIC_ETHERTYPE);
    g_assert_cmpuint(buf[MAIA_ETH_HLEN + 1], ==, MAIA_FABRIC_HELLO);
    g_assert_cmphex(ldq_le_p(buf + MAIA_ETH_HLEN + 8), ==, serial);

    /* Garbage of every size a datagram carries: counted, never fatal. */
    drops = rd64(d, MAIA_REG_FPORT(0, MAIA_FPORT_RX_DROPS));
    for (i = 0; i < nbad; i++) {
        size_t len = bad_frame(buf, i % 10 ? 200 : 65000, i);

        g_assert_cmpint(sendto(fd, buf, len, 0, (struct sockaddr *)&qa,
                               sizeof(qa)), ==, len);
        if (i % 32 == 31) {
            /* Let the device's receive queue drain now and then. */
            rd(d, MAIA_REG_ID);
        }
    }
    g_assert(WAIT_UNTIL(rd64(d, MAIA_REG_FPORT(0, MAIA_FPORT_RX_DROPS)) ==
                        drops + nbad));
    g_assert_cmphex(rd(d, MAIA_REG_ID), ==, MAIA_ID_MAGIC);
    g_assert_false(port_up(d, 0));

    free_devs(d, 1);
    qtest_shutdown(qs);
    close(fd);
    unlink(tsock);
    unlink(qsock);
    rmdir(dir);
}

/*
 * Device 0 writes into a window of device 1 and reads it back over one
 * hubport cable (0.port0 - 1.port0). Device 1's window: WIN_PAGES HBM pages
 * at WIN_HBM mapped at WIN_VA in ASID 1 by page tables the test writes
 * through BAR2 (one table per level from PT_HBM).
 */
#define PT_HBM      0x1000ull       /* root 0 would disable the ASID */
#define WIN_HBM     0x10000ull
#define WIN_VA      0x40000000ull
#define WIN_PAGES   2u
#define XFER_OFF    0x123u          /* not aligned: the device must not care */
#define XFER_LEN    5000u           /* more than one page, under the window */

static void map_window(Dev *d, QPCIBar hbm)
{
    uint64_t table = PT_HBM;
    unsigned level, i;

    /* L0..L2: one entry each, pointing at the next table. */
    for (level = 0; level < MAIA_PT_LEVELS - 1; level++) {
        uint64_t next = table + MAIA_PAGE_SIZE;
        uint64_t pte = cpu_to_le64(next | MAIA_PTE_VALID);

        qpci_memwrite(d->pci, hbm,
                      table + 8 * MAIA_PT_INDEX(WIN_VA, level), &pte, 8);
        table = next;
    }
    for (i = 0; i < WIN_PAGES; i++) {
        uint64_t va = WIN_VA + i * MAIA_PAGE_SIZE;
        uint64_t pte = cpu_to_le64((WIN_HBM + i * MAIA_PAGE_SIZE) |
                                   MAIA_PTE_VALID | MAIA_PTE_READ |
                                   MAIA_PTE_WRITE);

        qpci_memwrite(d->pci, hbm, table + 8 * MAIA_PT_INDEX(va, 3), &pte, 8);
    }
}

static uint32_t remote_write(QOSState *qs, Dev *d, Queue *q, uint32_t key,
                             uint64_t src)
{
    struct maia_cmd_fabric_write c = {
        .hdr = { .opcode = cpu_to_le16(MAIA_OP_FABRIC_WRITE),
                 .size = cpu_to_le32(sizeof(c)) },
        .port = 0,
        .key = cpu_to_le32(key),
        .remote_offset = cpu_to_le64(XFER_OFF),
        .local_addr = cpu_to_le64(src),
        .size = cpu_to_le64(XFER_LEN),
    };

    return run_job(qs, d, q, &c, sizeof(c));
}

static uint32_t remote_read(QOSState *qs, Dev *d, Queue *q, uint32_t key,
                            uint64_t dst)
{
    struct maia_cmd_fabric_read c = {
        .hdr = { .opcode = cpu_to_le16(MAIA_OP_FABRIC_READ),
                 .size = cpu_to_le32(sizeof(c)) },
        .port = 0,
        .key = cpu_to_le32(key),
        .remote_offset = cpu_to_le64(XFER_OFF),
        .local_addr = cpu_to_le64(dst),
        .size = cpu_to_le64(XFER_LEN),
    };

    return run_job(qs, d, q, &c, sizeof(c));
}

/* How the cable of test_remote_write_read() is made, and what it must be. */
typedef struct CableCase {
    const char *opts;           /* after the QEMU options of both devices */
    const char *dev0;           /* more properties of device 0 */
    uint32_t direct;            /* fabric-direct-ports of both */
} CableCase;

static const CableCase cable_direct = { "", "", 1 };
static const CableCase cable_off = { "", ",fabric-direct=off", 0 };
static const CableCase cable_filter = {
    " -object filter-dump,id=d0,netdev=c0b,file=/dev/null", "", 0
};

/*
 * Device d0 (of qs) writes into a window of d1 (of qs, or of another QEMU)
 * and reads it back; a key d1 never issued is refused. Both are booted and
 * cabled port 0 to port 0.
 */
static void check_remote_write_read(QOSState *qs, Dev *d0, Dev *d1)
{
    g_autofree uint8_t *pattern = g_malloc(XFER_LEN);
    g_autofree uint8_t *other = g_malloc(XFER_LEN);
    g_autofree uint8_t *got = g_malloc(XFER_LEN);
    g_autofree uint8_t *zero = NULL;
    uint32_t arg[4], key, bad_key;
    uint64_t src, dst, naks;
    QPCIBar hbm;
    Queue q;
    unsigned i;

    /* Device 1: ASID 1 maps the window's pages; the window is opened. */
    hbm = qpci_iomap(d1->pci, MAIA_BAR_HBM, NULL);
    map_window(d1, hbm);
    zero = g_malloc0(WIN_PAGES * MAIA_PAGE_SIZE);
    qpci_memwrite(d1->pci, hbm, WIN_HBM, zero, WIN_PAGES * MAIA_PAGE_SIZE);
    arg[0] = 1;
    arg[1] = (uint32_t)PT_HBM;
    arg[2] = PT_HBM >> 32;
    arg[3] = 0;
    g_assert_cmpuint(mbox(d1, MAIA_MBOX_SET_CONTEXT, arg, NULL), ==,
                     MAIA_MBOX_OK);
    arg[0] = 1 | (MAIA_ACCESS_READ | MAIA_ACCESS_WRITE) << 16;
    arg[1] = (uint32_t)WIN_VA;
    arg[2] = WIN_VA >> 32;
    arg[3] = WIN_PAGES;
    g_assert_cmpuint(mbox(d1, MAIA_MBOX_FABRIC_WINDOW_OPEN, arg, &key), ==,
                     MAIA_MBOX_OK);
    g_assert_cmpuint(MAIA_FABRIC_KEY_GEN(key), !=, 0);

    /* Device 0: jobs in ASID 0 on guest memory. */
    queue_init(qs, d0, &q);
    for (i = 0; i < XFER_LEN; i++) {
        pattern[i] = (uint8_t)(i * 7 + 3);
        other[i] = (uint8_t)~pattern[i];
    }
    src = guest_alloc(&qs->alloc, XFER_LEN);
    dst = guest_alloc(&qs->alloc, XFER_LEN);
    qtest_memwrite(qs->qts, src, pattern, XFER_LEN);
    qtest_memset(qs->qts, dst, 0, XFER_LEN);

    /* Remote write: the bytes land at the offset, nothing around them. */
    g_assert_cmpuint(remote_write(qs, d0, &q, key, src), ==,
                     MAIA_STATUS_OK);
    qpci_memread(d1->pci, hbm, WIN_HBM + XFER_OFF, got, XFER_LEN);
    g_assert(memcmp(got, pattern, XFER_LEN) == 0);
    g_assert_cmphex(qpci_io_readb(d1->pci, hbm, WIN_HBM + XFER_OFF - 1), ==,
                    0);
    g_assert_cmphex(qpci_io_readb(d1->pci, hbm,
                                  WIN_HBM + XFER_OFF + XFER_LEN), ==, 0);

    /* Remote read of the same bytes into guest memory. */
    g_assert_cmpuint(remote_read(qs, d0, &q, key, dst), ==,
                     MAIA_STATUS_OK);
    qtest_memread(qs->qts, dst, got, XFER_LEN);
    g_assert(memcmp(got, pattern, XFER_LEN) == 0);

    /* A key of the same slot, another generation: refused, nothing lands. */
    bad_key = key + (1u << 8);
    naks = rd64(d1, MAIA_REG_FPORT(0, MAIA_FPORT_NAK_TX));
    qtest_memwrite(qs->qts, src, other, XFER_LEN);
    g_assert_cmpuint(remote_write(qs, d0, &q, bad_key, src), ==,
                     MAIA_STATUS_FABRIC_KEY);
    qpci_memread(d1->pci, hbm, WIN_HBM + XFER_OFF, got, XFER_LEN);
    g_assert(memcmp(got, pattern, XFER_LEN) == 0);
    g_assert_cmpuint(remote_read(qs, d0, &q, bad_key, dst), ==,
                     MAIA_STATUS_FABRIC_KEY);
    /* The port registers are a snapshot: wait for the refusals to show. */
    g_assert(WAIT_UNTIL(rd64(d1, MAIA_REG_FPORT(0, MAIA_FPORT_NAK_TX)) ==
                        naks + 2));
    g_assert_cmphex(rd(d0, MAIA_REG_ID), ==, MAIA_ID_MAGIC);
    g_assert_cmphex(rd(d1, MAIA_REG_ID), ==, MAIA_ID_MAGIC);

    guest_free(&qs->alloc, src);
    guest_free(&qs->alloc, dst);
    qpci_iounmap(d1->pci, hbm);
}

static void test_remote_write_read(const void *opaque)
{
    const CableCase *cc = opaque;
    static const uint64_t serials[2] = { 0x5151, 0x5252 };
    QOSState *qs;
    Dev *d;

    qs = qtest_pc_boot("-nodefaults -machine q35 "
                       "-netdev hubport,id=c0a,hubid=0 "
                       "-netdev hubport,id=c0b,hubid=0 "
                       "-device maia,id=m0," DEV_OPTS ",serial=0x5151,"
                       "fabric0=c0a%s "
                       "-device maia,id=m1," DEV_OPTS ",serial=0x5252,"
                       "fabric0=c0b%s", cc->dev0, cc->opts);
    g_assert_cmpuint(direct_ports(qs->qts, "m0"), ==, cc->direct);
    g_assert_cmpuint(direct_ports(qs->qts, "m1"), ==, cc->direct);
    d = find_devs(qs, serials, 2);
    boot_fw(qs, &d[0]);
    boot_fw(qs, &d[1]);
    assert_cabled(&d[0], 0, &d[1], 0);
    check_remote_write_read(qs, &d[0], &d[1]);

    free_devs(d, 2);
    qtest_shutdown(qs);
}

/* ---- A collective whose buffer is a device's own registers ------------ */

#define COLL_COMM       0x7a11u
#define COLL_COUNT      5u
#define COLL_MAX        4u

/* rank's part of a collective of a ring: sends on port 0, receives on 1. */
static struct maia_cmd_collective coll_cmd(uint8_t coll, uint16_t rank,
                                           uint16_t nranks, uint32_t seq,
                                           uint64_t send, uint64_t recv,
                                           uint64_t count, uint64_t report)
{
    struct maia_cmd_collective c = {
        .hdr = { .opcode = cpu_to_le16(MAIA_OP_COLLECTIVE),
                 .size = cpu_to_le32(sizeof(c)) },
        .coll = coll,
        .redop = MAIA_REDOP_SUM,
        .dtype = MAIA_DTYPE_FP32,
        .send_port = 0,
        .recv_port = 1,
        .root = 0,
        .rank = cpu_to_le16(rank),
        .nranks = cpu_to_le16(nranks),
        .comm_id = cpu_to_le32(COLL_COMM),
        .seq = cpu_to_le32(seq),
        .send_addr = cpu_to_le64(send),
        .recv_addr = cpu_to_le64(recv),
        .count = cpu_to_le64(count),
        .report_addr = cpu_to_le64(report),
    };

    return c;
}

/* The status in the struct maia_coll_report at addr. */
static uint32_t report_status(QTestState *qts, uint64_t addr)
{
    struct maia_coll_report rep;

    qtest_memread(qts, addr, &rep, MAIA_COLL_REPORT_SIZE_1_3);
    return le32_to_cpu(rep.status);
}

/*
 * A hostile guest points the last rank's part of a broadcast at that
 * device's own RESET register (BAR0, MMIO), the word broadcast being
 * RESET's magic, in a ring of n devices of one QEMU cabled directly
 * (device i's port 0 to device i + 1's port 1). Every other rank's job is
 * queued first and waits for the data; the root's, device 0's, is started
 * last by a doorbell on device 0. A doorbell write runs its job right
 * there, on the writer's thread (inline-doorbell; in a qtest the thread of
 * QEMU's main loop, with the BQL, as a vCPU's), and frames over a direct
 * cable are delivered on the sender's thread: the rounds of devices 1 to
 * n - 1 run nested on that thread, the last one's writing its part. That
 * DMA must be held to guest RAM as a worker's is: a write into that
 * device's RESET would wait for the round the thread is in, and QEMU would
 * hang (it did while only device 0's DMA was held, a per-device flag).
 * The last rank's job ends with DMA_ERROR, in its completion and its
 * report; the others' parts land; no device is reset; a next all-reduce of
 * all is exact.
 */
static void test_coll_dma_mmio(const void *opaque)
{
    const unsigned n = GPOINTER_TO_UINT(opaque), last = n - 1;
    const uint32_t magic = cpu_to_le32(MAIA_RESET_MAGIC);
    uint64_t serials[COLL_MAX] = { 0 }, src[COLL_MAX] = { 0 };
    uint64_t dst[COLL_MAX] = { 0 }, rep[COLL_MAX] = { 0 };
    float in[COLL_COUNT], got[COLL_COUNT];
    g_autoptr(GString) opts = g_string_new("-nodefaults -machine q35");
    struct maia_cmd_collective c;
    Queue q[COLL_MAX];
    Job j[COLL_MAX];
    uint32_t st;
    QOSState *qs;
    unsigned i, k, r;
    Dev *d;

    g_assert_cmpuint(n, <=, COLL_MAX);
    for (i = 0; i < n; i++) {
        g_string_append_printf(opts, " -netdev hubport,id=c%ua,hubid=%u"
                               " -netdev hubport,id=c%ub,hubid=%u",
                               i, i, i, i);
    }
    for (i = 0; i < n; i++) {
        serials[i] = 0x6161 + 0x101 * i;
        g_string_append_printf(opts, " -device maia,id=m%u," DEV_OPTS
                               ",serial=0x%" PRIx64 ",fabric0=c%ua,"
                               "fabric1=c%ub", i, serials[i], i,
                               (i + n - 1) % n);
    }
    qs = qtest_pc_boot("%s", opts->str);
    d = find_devs(qs, serials, n);
    for (i = 0; i < n; i++) {
        g_autofree char *id = g_strdup_printf("m%u", i);

        /* Direct cables: frames are delivered on the sender's thread. */
        g_assert_cmphex(direct_ports(qs->qts, id), ==, 0x3);  /* ports 0, 1 */
        probe(qs, &d[i]);
    }
    for (i = 0; i < n; i++) {
        assert_cabled(&d[i], 0, &d[(i + 1) % n], 1);
        queue_init(qs, &d[i], &q[i]);
        src[i] = guest_alloc(&qs->alloc, sizeof(in));
        dst[i] = guest_alloc(&qs->alloc, sizeof(got));
        rep[i] = guest_alloc(&qs->alloc, sizeof(struct maia_coll_report));
        qtest_memset(qs->qts, src[i], 0, sizeof(in));
        qtest_memset(qs->qts, dst[i], 0, sizeof(got));
        qtest_memset(qs->qts, rep[i], 0xff, sizeof(struct maia_coll_report));
    }
    qtest_memwrite(qs->qts, src[0], &magic, sizeof(magic));

    /* Ranks n - 1 down to 1 first, then the root's doorbell. */
    for (r = n; r-- > 0;) {
        c = coll_cmd(MAIA_COLL_BROADCAST, r, n, 1, src[r],
                     r == last ? d[r].regs.addr + MAIA_REG_RESET : dst[r], 1,
                     rep[r]);
        job_submit(qs, &d[r], &q[r], &c, sizeof(c), &j[r]);
    }
    for (r = n; r-- > 0;) {
        st = job_wait(qs, &q[r], &j[r]);
        g_test_message("broadcast of %u into rank %u's RESET: rank %u "
                       "status %u", n, last, r, st);
        g_assert_cmpuint(st, ==, r == last ? MAIA_STATUS_DMA_ERROR :
                         MAIA_STATUS_OK);
        g_assert_cmpuint(report_status(qs->qts, rep[r]), ==, st);
        if (r != last) {
            qtest_memread(qs->qts, dst[r], got, sizeof(magic));
            g_assert_cmpmem(got, sizeof(magic), &magic, sizeof(magic));
        }
    }
    /* Nobody was reset: every firmware runs, every link stayed UP. */
    for (i = 0; i < n; i++) {
        g_assert_cmphex(rd(&d[i], MAIA_REG_BOOT_STATUS), ==,
                        MAIA_BOOT_STATUS_READY);
        g_assert(port_up(&d[i], 0) && port_up(&d[i], 1));
    }

    /* All keep working: an all-reduce, exact (small integers in FP32). */
    for (r = n; r-- > 0;) {
        for (k = 0; k < COLL_COUNT; k++) {
            in[k] = (k + 1) << (4 * r);
        }
        qtest_memwrite(qs->qts, src[r], in, sizeof(in));
        c = coll_cmd(MAIA_COLL_ALL_REDUCE, r, n, 2, src[r], dst[r],
                     COLL_COUNT, rep[r]);
        job_submit(qs, &d[r], &q[r], &c, sizeof(c), &j[r]);
    }
    for (r = n; r-- > 0;) {
        g_assert_cmpuint(job_wait(qs, &q[r], &j[r]), ==, MAIA_STATUS_OK);
        g_assert_cmpuint(report_status(qs->qts, rep[r]), ==, MAIA_STATUS_OK);
        qtest_memread(qs->qts, dst[r], got, sizeof(got));
        for (k = 0; k < COLL_COUNT; k++) {
            /* (k + 1) times 0x1, 0x11, 0x111 or 0x1111. */
            g_assert_cmpfloat(got[k], ==,
                              (float)((k + 1) * (0x11111111u >> (32 - 4 * n))));
        }
    }

    free_devs(d, n);
    qtest_shutdown(qs);
}

/* The fabric0-shm cable in a memory-backend-file at path, 16 MiB. */
#define SHM_OPTS "-object memory-backend-file,id=cable,mem-path=%s," \
                 "size=16M,share=on "

static QOSState *boot_shm(const char *path, const char *serial)
{
    return qtest_pc_boot("-nodefaults -machine q35 " SHM_OPTS
                         "-device maia,id=m0," DEV_OPTS ",serial=%s,"
                         "fabric0-shm=cable", path, serial);
}

/*
 * SIGKILL, as a crash or the OOM killer: none of QEMU's exit code runs.
 * libqtest aborts when it reaps a QEMU that died of a signal, so the test
 * reaps it and leaves the QTestState (two sockets) behind.
 */
static void kill_qemu_hard(QOSState *qs)
{
    g_assert_cmpint(kill(qtest_pid(qs->qts), SIGKILL), ==, 0);
    while (qtest_probe_child(qs->qts)) {
        g_usleep(1000);
    }
    qpci_free_pc(qs->pcibus);
    alloc_destroy(&qs->alloc);
    g_free(qs);
}

/* A hostile peer wakes the receiver of ring r (it may be asleep). */
static void shm_kick(MaiaFabricShmRing *ring)
{
    qatomic_inc(&ring->kick);
    qemu_futex_wake(&ring->kick, INT_MAX);
}

/*
 * A hostile peer: 16 garbage frames put into each ring of the cable at mem
 * (slot lengths small, zero or far too large, random bytes).
 */
static void shm_garbage(uint8_t *mem)
{
    MaiaFabricShmHeader *hdr = (MaiaFabricShmHeader *)mem;
    unsigned r, k, b;

    for (r = 0; r < 2; r++) {
        MaiaFabricShmRing *ring = &hdr->ring[r];
        uint32_t tail = qatomic_read(&ring->tail);

        for (k = 0; k < 16; k++) {
            MaiaFabricShmSlot *slot = (MaiaFabricShmSlot *)
                (mem + maia_fabric_shm_slot_offset(r, tail + k));
            uint32_t len = k % 4 == 3 ? 0xfffff000u + k :
                           (uint32_t)g_test_rand_int_range(0, 200);

            for (b = 0; b < 200; b++) {
                slot->frame[b] = g_test_rand_int();
            }
            qatomic_set(&slot->len, len);
        }
        qatomic_store_release(&ring->head, tail + 16);
        shm_kick(ring);
    }
}

/* ... and indices that make no sense: a head far ahead, a tail past it. */
static void shm_bad_indices(uint8_t *mem)
{
    MaiaFabricShmHeader *hdr = (MaiaFabricShmHeader *)mem;

    qatomic_set(&hdr->ring[0].head, qatomic_read(&hdr->ring[0].tail) +
                1000000u);
    shm_kick(&hdr->ring[0]);
    qatomic_set(&hdr->ring[1].tail, qatomic_read(&hdr->ring[1].head) + 777u);
}

static uint64_t rx_drops(Dev *d)
{
    return rd64(d, MAIA_REG_FPORT(0, MAIA_FPORT_RX_DROPS));
}

static void test_shm_two_qemus(void)
{
    static const uint64_t sa = 0xa1a1, sb = 0xb1b1;
    g_autofree char *dir = g_dir_make_tmp("maia-fabric-XXXXXX", NULL);
    g_autofree char *path = g_strdup_printf("%s/cable", dir);
    uint64_t da, db;
    QOSState *qa, *qb;
    uint8_t *mem;
    Dev *a, *b;
    int fd;

    qa = boot_shm(path, "0xa1a1");
    qb = boot_shm(path, "0xb1b1");
    a = find_devs(qa, &sa, 1);
    b = find_devs(qb, &sb, 1);
    probe(qa, a);
    probe(qb, b);
    assert_cabled(a, 0, b, 0);
    assert_link_counts(a, 0, 1, 0, 0);
    check_remote_write_read(qa, a, b);

    /* The port's NIC has no netdev, but set_link takes its carrier. */
    set_link(qa->qts, "m0.fabric0", false);
    g_assert(WAIT_UNTIL(!port_up(a, 0) && !port_up(b, 0)));
    set_link(qa->qts, "m0.fabric0", true);
    assert_cabled(a, 0, b, 0);
    assert_link_counts(a, 0, 2, 1, 1);

    /* Peer killed: a's keepalive finds it dead, as with a dead socket. */
    kill_qemu_hard(qb);
    free_devs(b, 1);
    g_assert(WAIT_UNTIL(!port_up(a, 0)));
    assert_link_counts(a, 0, 2, 2, 2);

    /* A new QEMU on the same file takes the dead one's side: UP again. */
    qb = boot_shm(path, "0xb1b1");
    b = find_devs(qb, &sb, 1);
    probe(qb, b);
    assert_cabled(a, 0, b, 0);
    assert_link_counts(a, 0, 3, 2, 2);

    /* Garbage in the rings: dropped and counted, nobody falls over. */
    fd = open(path, O_RDWR);
    g_assert_cmpint(fd, >=, 0);
    mem = mmap(NULL, MAIA_FABRIC_SHM_SIZE, PROT_READ | PROT_WRITE,
               MAP_SHARED, fd, 0);
    g_assert(mem != MAP_FAILED);
    da = rx_drops(a);
    db = rx_drops(b);
    /* The senders may write their heads over ours: again until it shows. */
    g_assert(WAIT_UNTIL((shm_garbage(mem), rx_drops(a) > da &&
                         rx_drops(b) > db)));
    g_test_message("RX_DROPS after garbage: %" PRIu64 " and %" PRIu64,
                   rx_drops(a) - da, rx_drops(b) - db);
    shm_bad_indices(mem);
    g_assert_cmphex(rd(a, MAIA_REG_ID), ==, MAIA_ID_MAGIC);
    g_assert_cmphex(rd(b, MAIA_REG_ID), ==, MAIA_ID_MAGIC);
    assert_cabled(a, 0, b, 0);
    munmap(mem, MAIA_FABRIC_SHM_SIZE);
    close(fd);

    free_devs(a, 1);
    free_devs(b, 1);
    qtest_shutdown(qb);
    qtest_shutdown(qa);
    unlink(path);
    rmdir(dir);
}

/*
 * device_add of a maia with port `port` on memory backend `be` (and on
 * netdev `netdev` too, if not NULL) fails with an error saying `what`.
 */
static void expect_shm_error(QTestState *qts, unsigned port, const char *be,
                             const char *netdev, const char *what)
{
    g_autofree char *shm = g_strdup_printf("fabric%u-shm", port);
    g_autofree char *nd = g_strdup_printf("fabric%u", port);
    QDict *args = qdict_new();
    QDict *rsp, *err;

    qdict_put_str(args, "driver", "maia");
    qdict_put_str(args, "id", "bad");
    qdict_put_int(args, "hbm-size", 16 * MiB);
    qdict_put_str(args, shm, be);
    if (netdev) {
        qdict_put_str(args, nd, netdev);
    }
    rsp = qtest_qmp(qts, "{'execute': 'device_add', 'arguments': %p}", args);
    err = qdict_get_qdict(rsp, "error");
    g_assert_nonnull(err);
    g_test_message("%s=%s: %s", shm, be, qdict_get_str(err, "desc"));
    g_assert_nonnull(strstr(qdict_get_str(err, "desc"), what));
    qobject_unref(rsp);
}

/* ---- The test as the other end of a shared-memory cable --------------- */

#define SHM_STALE_HEAD  0xfffffff8u     /* the batches cross 2^32 */

/* The header of a cable file as a QEMU (killed since) left it on side 0. */
static void shm_stale_header(MaiaFabricShmHeader *hdr)
{
    hdr->magic = MAIA_FABRIC_SHM_MAGIC;
    hdr->version = MAIA_FABRIC_SHM_VERSION;
    hdr->slots = MAIA_FABRIC_SHM_SLOTS;
    hdr->slot_size = MAIA_FABRIC_SHM_SLOT_SIZE;
    hdr->side[0].gen = 41;
    hdr->side[0].attached = 1;
    /* 10 frames it never took: not for the next QEMU on side 0. */
    hdr->ring[1].tail = SHM_STALE_HEAD - 10;
    hdr->ring[1].head = SHM_STALE_HEAD;
    hdr->ring[0].tail = hdr->ring[0].head = 500;
}

/*
 * The test, side 1 of the cable at mem, sends n frames into ring 1: slot
 * lengths lens[k], frames of that many bytes (at most a slot's) that are
 * no fabric frame (too short, or another EtherType), so that the device
 * drops and counts each it is handed. Waits until the receiver took them.
 */
static void shm_send(uint8_t *mem, const uint32_t *lens, unsigned n)
{
    MaiaFabricShmRing *ring = &((MaiaFabricShmHeader *)mem)->ring[1];
    uint32_t head = qatomic_read(&ring->head);
    unsigned k;

    g_assert_cmpuint(n, <=, MAIA_FABRIC_SHM_SLOTS);
    g_assert(WAIT_UNTIL(qatomic_load_acquire(&ring->tail) == head));
    for (k = 0; k < n; k++) {
        MaiaFabricShmSlot *slot = (MaiaFabricShmSlot *)
            (mem + maia_fabric_shm_slot_offset(1, head + k));
        uint32_t len = MIN(lens[k], MAIA_FABRIC_MAX_FRAME);

        memset(slot->frame, 0x5a ^ k, len);
        if (len >= MAIA_ETH_HLEN) {
            stw_be_p(slot->frame + 12, 0x0800);         /* IPv4 */
        }
        qatomic_set(&slot->len, lens[k]);
    }
    qatomic_store_release(&ring->head, head + n);
    shm_kick(ring);
    g_assert(WAIT_UNTIL(qatomic_load_acquire(&ring->tail) == head + n));
}

/* A file at path of len bytes whose first bytes are hdr's n. */
static void shm_file(const char *path, const void *hdr, size_t n, off_t len)
{
    int fd = open(path, O_RDWR | O_CREAT | O_TRUNC, 0600);

    g_assert_cmpint(fd, >=, 0);
    g_assert_cmpint(ftruncate(fd, len), ==, 0);
    g_assert_cmpint(pwrite(fd, hdr, n, 0), ==, n);
    close(fd);
}

/*
 * Bad input from the peer's side of a cable file, the test being that
 * peer (side 1) of one QEMU's device (side 0):
 * - the file is one a killed QEMU left: QEMU takes side 0 anew (gen 41 ->
 *   42) and skips the 10 frames left in its receive ring (none counted);
 *   the same file cut to its header page is refused as a backend;
 * - frames of every length a slot holds, 0 to the largest, each copied out
 *   once, handed over and dropped as malformed: RX_DROPS, RX_FRAMES and
 *   RX_BYTES count exactly them; slot lengths past a slot (by one, by
 *   2^32 - 1) are skipped and not handed over, the frames after them are;
 * - four full rings of the largest frames at once, more than the port's
 *   receive buffers keep (MAIA_FABRIC_SHM_RX_CACHE) and than the device's
 *   queue takes: every one is counted, as dropped or malformed;
 * - files that hold another layout (magic, version, slot size) refused;
 * - then a real peer, a second QEMU, on side 1: UP, remote write and read
 *   exact.
 */
static void test_shm_hostile_peer(void)
{
    static const uint64_t sa = 0xe1e1, sb = 0xe2e2;
    static const uint32_t lens[] = {
        0, 1, MAIA_ETH_HLEN - 1, MAIA_ETH_HLEN, MAIA_FABRIC_MIN_FRAME - 1,
        MAIA_FABRIC_MIN_FRAME, MAIA_FABRIC_MIN_FRAME + 1, 1500,
        MAIA_FABRIC_MAX_FRAME + 1, 9000, 0xffffffffu,
        MAIA_FABRIC_MAX_FRAME - 1, MAIA_FABRIC_MAX_FRAME,
    };
    g_autofree char *dir = g_dir_make_tmp("maia-fabric-XXXXXX", NULL);
    g_autofree char *path = g_strdup_printf("%s/cable", dir);
    g_autofree char *cut = g_strdup_printf("%s/cut", dir);
    char *bad[3];
    g_autofree uint32_t *big = g_new(uint32_t, MAIA_FABRIC_SHM_SLOTS);
    MaiaFabricShmHeader *hdr = g_malloc0(sizeof(*hdr));
    uint64_t drops, frames, bytes, sum = 0;
    unsigned n = 0, i;
    QOSState *qa, *qb;
    QDict *rsp;
    uint8_t *mem;
    Dev *a, *b;
    int fd;

    /* A killed QEMU's cable file; the same cut to its header page. */
    shm_stale_header(hdr);
    shm_file(path, hdr, sizeof(*hdr), 16 * MiB);
    shm_file(cut, hdr, sizeof(*hdr), MAIA_FABRIC_SHM_HDR_SIZE);
    /* Files that are no cable of this layout. */
    for (i = 0; i < 3; i++) {
        shm_stale_header(hdr);
        hdr->magic = i == 0 ? 0x464c457fu : hdr->magic;
        hdr->version = i == 1 ? 2 : hdr->version;
        hdr->slot_size = i == 2 ? 4096 : hdr->slot_size;
        bad[i] = g_strdup_printf("%s/bad%u", dir, i);
        shm_file(bad[i], hdr, sizeof(*hdr), 16 * MiB);
    }
    g_free(hdr);

    /* pc: device_add on its bus is a hot-plug (refused ones here). */
    qa = qtest_pc_boot("-nodefaults -machine pc " SHM_OPTS
                       "-object memory-backend-file,id=bad0,mem-path=%s,"
                       "size=16M,share=on "
                       "-object memory-backend-file,id=bad1,mem-path=%s,"
                       "size=16M,share=on "
                       "-object memory-backend-file,id=bad2,mem-path=%s,"
                       "size=16M,share=on "
                       "-device maia,id=m0," DEV_OPTS ",serial=0xe1e1,"
                       "fabric0-shm=cable", path, bad[0], bad[1], bad[2]);
    for (i = 0; i < 3; i++) {
        g_autofree char *be = g_strdup_printf("bad%u", i);

        expect_shm_error(qa->qts, 0, be, NULL, "something else");
    }
    /* A cable file cut short: no backend of a cable's size is made of it. */
    rsp = qtest_qmp(qa->qts, "{'execute': 'object-add', 'arguments': "
                    "{'qom-type': 'memory-backend-file', 'id': 'cut', "
                    "'mem-path': %s, 'size': 16777216, 'share': true}}",
                    cut);
    g_assert_nonnull(qdict_get_qdict(rsp, "error"));
    g_test_message("a cut cable file: %s", qdict_get_str(
                   qdict_get_qdict(rsp, "error"), "desc"));
    g_assert_nonnull(strstr(qdict_get_str(qdict_get_qdict(rsp, "error"),
                                          "desc"), "too small"));
    qobject_unref(rsp);
    a = find_devs(qa, &sa, 1);
    probe(qa, a);

    fd = open(path, O_RDWR);
    g_assert_cmpint(fd, >=, 0);
    mem = mmap(NULL, MAIA_FABRIC_SHM_SIZE, PROT_READ | PROT_WRITE,
               MAP_SHARED, fd, 0);
    g_assert(mem != MAP_FAILED);
    hdr = (MaiaFabricShmHeader *)mem;
    g_assert_cmpuint(qatomic_read(&hdr->side[0].gen), ==, 42);
    g_assert_cmpuint(qatomic_read(&hdr->side[0].attached), ==, 1);
    g_assert_cmphex(qatomic_read(&hdr->ring[1].tail), ==, SHM_STALE_HEAD);
    g_assert_cmpuint(rx_drops(a), ==, 0);
    g_assert_cmpuint(rd64(a, MAIA_REG_FPORT(0, MAIA_FPORT_RX_FRAMES)), ==, 0);

    /* Every length a slot holds, and lengths past it. */
    shm_send(mem, lens, ARRAY_SIZE(lens));
    for (i = 0; i < ARRAY_SIZE(lens); i++) {
        if (lens[i] <= MAIA_FABRIC_MAX_FRAME) {
            n++;
            sum += lens[i];
        }
    }
    g_assert(WAIT_UNTIL(rx_drops(a) == n));
    g_assert_cmpuint(rd64(a, MAIA_REG_FPORT(0, MAIA_FPORT_RX_FRAMES)), ==, n);
    g_assert_cmpuint(rd64(a, MAIA_REG_FPORT(0, MAIA_FPORT_RX_BYTES)), ==,
                     sum);

    /* Rings full of the largest frames: lent faster than the device eats. */
    for (i = 0; i < MAIA_FABRIC_SHM_SLOTS; i++) {
        big[i] = MAIA_FABRIC_MAX_FRAME;
    }
    for (i = 0; i < 4; i++) {
        shm_send(mem, big, MAIA_FABRIC_SHM_SLOTS);
    }
    drops = n + 4 * MAIA_FABRIC_SHM_SLOTS;
    g_assert(WAIT_UNTIL(rx_drops(a) == drops));
    frames = rd64(a, MAIA_REG_FPORT(0, MAIA_FPORT_RX_FRAMES));
    bytes = rd64(a, MAIA_REG_FPORT(0, MAIA_FPORT_RX_BYTES));
    g_test_message("4 rings of %u-byte frames: %" PRIu64 " reached the link,"
                   " %" PRIu64 " dropped from the device's full queue",
                   (unsigned)MAIA_FABRIC_MAX_FRAME, frames - n,
                   4 * MAIA_FABRIC_SHM_SLOTS - (frames - n));
    g_assert_cmpuint(bytes - sum, ==, (frames - n) * MAIA_FABRIC_MAX_FRAME);
    g_assert_cmphex(rd(a, MAIA_REG_ID), ==, MAIA_ID_MAGIC);
    g_assert_false(port_up(a, 0));
    munmap(mem, MAIA_FABRIC_SHM_SIZE);
    close(fd);

    /* A real peer after all that: the link and the data as on any cable. */
    qb = boot_shm(path, "0xe2e2");
    b = find_devs(qb, &sb, 1);
    probe(qb, b);
    assert_cabled(a, 0, b, 0);
    check_remote_write_read(qa, a, b);

    free_devs(a, 1);
    free_devs(b, 1);
    qtest_shutdown(qb);
    qtest_shutdown(qa);
    unlink(path);
    unlink(cut);
    for (i = 0; i < 3; i++) {
        unlink(bad[i]);
        g_free(bad[i]);
    }
    rmdir(dir);
}

/*
 * An all-reduce of the ring of two ranks d[0], d[1] (of qs[0], qs[1], on
 * their queues q[0], q[1]): exact.
 */
static void shm_all_reduce(QOSState **qs, Dev *d, Queue *q, uint32_t seq)
{
    float in[COLL_COUNT], got[COLL_COUNT];
    uint64_t src[2], dst[2], rep[2];
    struct maia_cmd_collective c;
    Job j[2];
    unsigned r, k;

    for (r = 2; r-- > 0;) {
        src[r] = guest_alloc(&qs[r]->alloc, sizeof(in));
        dst[r] = guest_alloc(&qs[r]->alloc, sizeof(got));
        rep[r] = guest_alloc(&qs[r]->alloc, sizeof(struct maia_coll_report));
        for (k = 0; k < COLL_COUNT; k++) {
            in[k] = (k + 1) << (4 * r);
        }
        qtest_memwrite(qs[r]->qts, src[r], in, sizeof(in));
        qtest_memset(qs[r]->qts, dst[r], 0, sizeof(got));
        c = coll_cmd(MAIA_COLL_ALL_REDUCE, r, 2, seq, src[r], dst[r],
                     COLL_COUNT, rep[r]);
        job_submit(qs[r], &d[r], &q[r], &c, sizeof(c), &j[r]);
    }
    for (r = 2; r-- > 0;) {
        g_assert_cmpuint(job_wait(qs[r], &q[r], &j[r]), ==, MAIA_STATUS_OK);
        g_assert_cmpuint(report_status(qs[r]->qts, rep[r]), ==,
                         MAIA_STATUS_OK);
        qtest_memread(qs[r]->qts, dst[r], got, sizeof(got));
        for (k = 0; k < COLL_COUNT; k++) {
            g_assert_cmpfloat(got[k], ==, (float)((k + 1) * 0x11));
        }
        guest_free(&qs[r]->alloc, src[r]);
        guest_free(&qs[r]->alloc, dst[r]);
        guest_free(&qs[r]->alloc, rep[r]);
    }
}

/* qom-get of a bool property of device id. */
static bool qom_bool(QTestState *qts, const char *id, const char *prop)
{
    QDict *rsp = qtest_qmp(qts, "{'execute': 'qom-get', 'arguments': "
                           "{'path': %s, 'property': %s}}", id, prop);
    bool val;

    g_assert(qdict_haskey(rsp, "return"));
    val = qdict_get_bool(rsp, "return");
    qobject_unref(rsp);
    return val;
}

/* The file at path holds `what` (a trace log QEMU writes), in time. */
static bool file_has(const char *path, const char *what)
{
    g_autofree char *buf = NULL;

    return g_file_get_contents(path, &buf, NULL, NULL) && strstr(buf, what);
}

/* QEMU r of test_shm_cut(): its device m0, in slot 4, cabled, booted. */
static void shm_cut_plug(QOSState *qs, unsigned r, const char *x,
                         const char *y, Dev *d, Queue *q)
{
    static const uint64_t serials[2] = { 0xd1d1, 0xd2d2 };
    Dev *found;

    qtest_qmp_device_add(qs->qts, "maia", "m0",
                         "{'addr': '0x4', 'hbm-size': 16777216, "
                         "'queues': 1, 'worker-threads': 1, "
                         "'serial': %" PRId64 ", 'fabric0-shm': %s, "
                         "'fabric1-shm': %s}", (int64_t)serials[r],
                         r ? y : x, r ? x : y);
    found = find_devs(qs, &serials[r], 1);
    *d = found[0];
    g_free(found);
    probe(qs, d);
    queue_init(qs, d, q);
}

/* Both ends of the cable of A's port `pa` (B's 1 - pa) are out of service. */
static void shm_cut_seen(QOSState **qs, Dev *d, unsigned pa, char **log,
                         const char *what)
{
    unsigned r, p;

    g_assert(WAIT_UNTIL(!port_up(&d[0], pa) && !port_up(&d[1], !pa)));
    for (r = 0; r < 2; r++) {
        g_autofree char *cut = NULL;
        g_autofree char *line = NULL;

        p = r ? !pa : pa;
        cut = g_strdup_printf("fabric%u-shm-cut", p);
        line = g_strdup_printf("port %u: the cable in %s", p, what);
        g_assert_cmphex(rd(&d[r], MAIA_REG_ID), ==, MAIA_ID_MAGIC);
        g_assert(WAIT_UNTIL(file_has(log[r], line)));
        g_assert(qom_bool(qs[r]->qts, "m0", cut));
        assert_link_counts(&d[r], p, 1, 1, 1);
        /* The other cable: UP all along. */
        g_assert(port_up(&d[r], !p));
        assert_link_counts(&d[r], !p, 1, 0, 0);
    }
}

/*
 * A peer cuts the cable file short (ftruncate to its header page) while
 * two QEMUs have it mapped and frames cross it: two QEMUs in a ring of
 * two, A's port 0 to B's port 1 over file x, B's port 0 to A's port 1
 * over file y; an all-reduce over both first. Then x is cut: the next
 * access to a slot raises SIGBUS in each QEMU (it killed both, exit
 * status 135, before the guard). Both keep running, the ports on x go
 * DOWN as for a dead peer (LINK_DOWNS and DEAD_PEER one more),
 * fabricN-shm-cut reads true there and false on y, the trace event
 * maia_fabric_shm_cut says why; the ports on y stay UP, and a next
 * all-reduce, routed around the cut cable, is exact. x grown back and
 * both devices plugged anew: both cables UP, an all-reduce exact. Then
 * the test overwrites y's magic: out of service the same way, no SIGBUS,
 * the next all-reduce exact over x. The devices unplugged and x cut to
 * nothing: a device plugged on it is refused (SIGBUS in the main loop's
 * thread as it reads the header). Both QEMUs quit normally.
 */
static void test_shm_cut(void)
{
    g_autofree char *dir = g_dir_make_tmp("maia-fabric-XXXXXX", NULL);
    g_autofree char *x = g_strdup_printf("%s/x", dir);
    g_autofree char *y = g_strdup_printf("%s/y", dir);
    const uint32_t bad_magic = 0x464c457fu;
    char *log[2];
    QOSState *qs[2];
    Queue q[2];
    Dev d[2];
    unsigned r;
    int fd;

    for (r = 0; r < 2; r++) {
        log[r] = g_strdup_printf("%s/trace%u", dir, r);
        /* pc: the devices are plugged anew below. */
        qs[r] = qtest_pc_boot("-nodefaults -machine pc "
                              "-D %s -trace maia_fabric_shm_cut "
                              "-object memory-backend-file,id=x,"
                              "mem-path=%s,size=16M,share=on "
                              "-object memory-backend-file,id=y,"
                              "mem-path=%s,size=16M,share=on",
                              log[r], x, y);
        shm_cut_plug(qs[r], r, "x", "y", &d[r], &q[r]);
    }
    assert_cabled(&d[0], 0, &d[1], 1);
    assert_cabled(&d[1], 0, &d[0], 1);
    shm_all_reduce(qs, d, q, 1);
    assert_link_counts(&d[0], 0, 1, 0, 0);
    assert_link_counts(&d[1], 1, 1, 0, 0);

    /* Cut: every slot of both rings is past the end of the file. */
    g_assert_cmpint(truncate(x, MAIA_FABRIC_SHM_HDR_SIZE), ==, 0);
    shm_cut_seen(qs, d, 0, log, "x is out of service (SIGBUS 1");
    for (r = 0; r < 2; r++) {
        g_assert_false(qom_bool(qs[r]->qts, "m0", r ? "fabric0-shm-cut" :
                                                      "fabric1-shm-cut"));
    }
    /* The next collective goes round the cut cable. */
    shm_all_reduce(qs, d, q, 2);
    g_assert_false(port_up(&d[0], 0));

    /* x grown back, the devices plugged anew: x is taken again. */
    g_assert_cmpint(truncate(x, 16 * MiB), ==, 0);
    for (r = 0; r < 2; r++) {
        qpci_unplug_acpi_device_test(qs[r]->qts, "m0", 0x4);
        g_free(d[r].pci);
    }
    for (r = 0; r < 2; r++) {
        shm_cut_plug(qs[r], r, "x", "y", &d[r], &q[r]);
        g_assert_false(qom_bool(qs[r]->qts, "m0", "fabric0-shm-cut"));
        g_assert_false(qom_bool(qs[r]->qts, "m0", "fabric1-shm-cut"));
    }
    assert_cabled(&d[0], 0, &d[1], 1);
    assert_cabled(&d[1], 0, &d[0], 1);
    shm_all_reduce(qs, d, q, 3);

    /* y's header overwritten: no fault, out of service all the same. */
    fd = open(y, O_RDWR);
    g_assert_cmpint(fd, >=, 0);
    g_assert_cmpint(pwrite(fd, &bad_magic, sizeof(bad_magic), 0), ==,
                    sizeof(bad_magic));
    close(fd);
    shm_cut_seen(qs, d, 1, log, "y is out of service (SIGBUS 0");
    shm_all_reduce(qs, d, q, 4);

    /*
     * Unplugged, x cut to nothing: a device taking it faults on its header
     * in the main loop's thread, and is refused.
     */
    for (r = 0; r < 2; r++) {
        qpci_unplug_acpi_device_test(qs[r]->qts, "m0", 0x4);
        g_free(d[r].pci);
    }
    g_assert_cmpint(truncate(x, 0), ==, 0);
    expect_shm_error(qs[0]->qts, 0, "x", NULL, "another process cut it");

    for (r = 0; r < 2; r++) {
        qtest_shutdown(qs[r]);
        unlink(log[r]);
        g_free(log[r]);
    }
    unlink(x);
    unlink(y);
    rmdir(dir);
}

/*
 * Two devices of one QEMU on one memfd backend; what a cable refuses; one
 * unplugged and plugged again.
 */
static void test_shm_one_qemu(void)
{
    static const uint64_t serials[2] = { 0xc1c1, 0xc2c2 };
    g_autofree char *dir = g_dir_make_tmp("maia-fabric-XXXXXX", NULL);
    g_autofree char *ro = g_strdup_printf("%s/ro", dir);
    QOSState *qs;
    Dev *d;
    int fd;

    /* A file a read-only backend can map: 16 MiB of zeros. */
    fd = open(ro, O_RDWR | O_CREAT, 0600);
    g_assert_cmpint(fd, >=, 0);
    g_assert_cmpint(ftruncate(fd, 16 * MiB), ==, 0);
    close(fd);
    qs = qtest_pc_boot("-nodefaults -machine pc "
                       "-object memory-backend-file,id=ro,mem-path=%s,"
                       "size=16M,share=on,readonly=on "
                       "-object memory-backend-memfd,id=mf,size=16M "
                       "-object memory-backend-memfd,id=small,size=1M "
                       "-object memory-backend-ram,id=priv,size=16M,"
                       "share=off "
                       "-object memory-backend-memfd,id=spare,size=16M "
                       "-netdev hubport,id=h0,hubid=0 "
                       "-device maia,id=m0,addr=0x4," DEV_OPTS ","
                       "serial=0xc1c1,fabric0-shm=mf "
                       "-device maia,id=m1,addr=0x5," DEV_OPTS ","
                       "serial=0xc2c2,fabric0-shm=mf", ro);
    d = find_devs(qs, serials, 2);
    probe(qs, &d[0]);
    probe(qs, &d[1]);
    assert_cabled(&d[0], 0, &d[1], 0);
    g_assert_cmpuint(direct_ports(qs->qts, "m0"), ==, 0);

    expect_shm_error(qs->qts, 0, "mf", NULL, "both ends");
    expect_shm_error(qs->qts, 0, "small", NULL, "size=16M");
    expect_shm_error(qs->qts, 0, "priv", NULL, "share=on");
    expect_shm_error(qs->qts, 0, "ro", NULL, "read-only");
    expect_shm_error(qs->qts, 1, "spare", "h0", "not both");
    g_assert_cmphex(rd(&d[0], MAIA_REG_ID), ==, MAIA_ID_MAGIC);

    /* Unplugged (its thread joined): its side is free for the next one. */
    qpci_unplug_acpi_device_test(qs->qts, "m1", 0x5);
    g_assert(WAIT_UNTIL(!port_up(&d[0], 0)));
    free_devs(d, 2);
    qtest_qmp_device_add(qs->qts, "maia", "m1",
                         "{'addr': '0x5', 'hbm-size': 16777216, "
                         "'queues': 1, 'worker-threads': 1, "
                         "'serial': 49858, 'fabric0-shm': 'mf'}");
    d = find_devs(qs, serials, 2);
    probe(qs, &d[1]);
    assert_cabled(&d[0], 0, &d[1], 0);

    free_devs(d, 2);
    qtest_shutdown(qs);
    unlink(ro);
    rmdir(dir);
}

int main(int argc, char **argv)
{
    g_test_init(&argc, &argv, NULL);

    qtest_add_func("/maia-fabric/hubport-ring", test_hubport_ring);
    qtest_add_func("/maia-fabric/stream-two-qemus", test_stream_two_qemus);
    qtest_add_func("/maia-fabric/shm-two-qemus", test_shm_two_qemus);
    qtest_add_func("/maia-fabric/shm-one-qemu", test_shm_one_qemu);
    qtest_add_func("/maia-fabric/shm-hostile-peer", test_shm_hostile_peer);
    qtest_add_func("/maia-fabric/shm-cut", test_shm_cut);
    qtest_add_func("/maia-fabric/dgram-malformed", test_dgram_malformed);
    qtest_add_func("/maia-fabric/hotplug", test_hotplug);
    qtest_add_func("/maia-fabric/cable-latency", test_cable_latency);
    /* The direct cable (default); the hub's way, one end off or filtered. */
    qtest_add_data_func("/maia-fabric/remote-write-read", &cable_direct,
                        test_remote_write_read);
    qtest_add_data_func("/maia-fabric/remote-write-read-nic", &cable_off,
                        test_remote_write_read);
    qtest_add_data_func("/maia-fabric/remote-write-read-filter",
                        &cable_filter, test_remote_write_read);
    /* Rings of 2 and of 4: the rounds of 1 and of 3 devices nested. */
    qtest_add_data_func("/maia-fabric/coll-dma-mmio-2", GUINT_TO_POINTER(2),
                        test_coll_dma_mmio);
    qtest_add_data_func("/maia-fabric/coll-dma-mmio-4", GUINT_TO_POINTER(4),
                        test_coll_dma_mmio);

    return g_test_run();
}
