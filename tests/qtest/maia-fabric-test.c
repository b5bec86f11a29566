/*
 * QTest testcase for the maia device's fabric ports (qemu/hw/maia-fabric.c):
 * ports as NICs on QEMU netdevs, seen through the BAR0 fabric registers.
 *
 * - Two devices in one QEMU cabled as a ring by hubport pairs: every port
 *   UP with the other device's serial and port; `set_link off` takes a
 *   cable's ports DOWN (dead peer), `set_link on` brings them back; a
 *   filter-dump on a cable writes a pcap of EtherType 0x88b5 frames. A third
 *   device without fabric properties has no fabric.
 * - Two QEMU processes cabled over a `-netdev stream` unix socket: UP.
 * - A `-netdev dgram` port fed by this test: what the device sends is a
 *   fabric frame, and malformed frames of any size are counted in RX_DROPS,
 *   one each, with QEMU still running.
 *
 * Remote write, remote read and bad-key tests come with the transport
 * (fabric windows); they belong here.
 *
 * The device runs its links in real time: waits poll a register with a
 * generous bound (FABRIC_WAIT_US) for an event, never assert a duration.
 *
 * Copyright (c) 2026 The Maia accelerator stack authors
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */

#include "qemu/osdep.h"
#include "qemu/bswap.h"
#include <sys/socket.h>
#include <sys/un.h>
#include "libqtest.h"
#include "libqos/libqos-pc.h"
#include "libqos/pci.h"
#include "qobject/qdict.h"

#include "maia/hw/fabric.h"
#include "maia/hw/regs.h"

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
    unsigned frames, fabric;
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

    assert_cabled(&d[0], 0, &d[1], 1);
    assert_cabled(&d[1], 0, &d[0], 1);
    g_assert(rd(&d[0], MAIA_REG_INT_STATUS) & MAIA_INT_FABRIC_LINK);
    g_assert_cmpuint(rd(&d[0], MAIA_REG_FABRIC_LINK_EVENTS), >=, 2);
    g_assert_cmpuint(rd64(&d[0], MAIA_REG_FPORT(0, MAIA_FPORT_TX_FRAMES)),
                     >, 0);
    g_assert_cmpuint(rd64(&d[1], MAIA_REG_FPORT(1, MAIA_FPORT_RX_BYTES)),
                     >=, MAIA_FABRIC_MIN_FRAME);

    /* Carrier off on cable 0: both of its ends declare a dead peer. */
    events = rd(&d[1], MAIA_REG_FABRIC_LINK_EVENTS);
    set_link(qs->qts, "c0a", false);
    g_assert(WAIT_UNTIL(!port_up(&d[0], 0) && !port_up(&d[1], 1)));
    g_assert_cmpuint(rd(&d[1], MAIA_REG_FPORT(1, MAIA_FPORT_DEAD_PEER)), >=,
                     1);
    g_assert_cmpuint(rd(&d[1], MAIA_REG_FABRIC_LINK_EVENTS), >, events);
    g_assert(WAIT_UNTIL(port_up(&d[0], 1) && port_up(&d[1], 0)));

    set_link(qs->qts, "c0a", true);
    assert_cabled(&d[0], 0, &d[1], 1);

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
    assert_cabled(a, 0, b, 0);

    free_devs(a, 1);
    free_devs(b, 1);
    qtest_shutdown(qb);
    qtest_shutdown(qa);
    unlink(sock);
    rmdir(dir);
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

int main(int argc, char **argv)
{
    g_test_init(&argc, &argv, NULL);

    qtest_add_func("/maia-fabric/hubport-ring", test_hubport_ring);
    qtest_add_func("/maia-fabric/stream-two-qemus", test_stream_two_qemus);
    qtest_add_func("/maia-fabric/dgram-malformed", test_dgram_malformed);

    return g_test_run();
}
