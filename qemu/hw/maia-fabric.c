/*
 * Maia accelerator: the fabric ports as QEMU NICs.
 *
 * Each fabric port is a NIC (properties fabric0 .. fabric11 name its
 * netdev), so any netdev backend carries a link: hubport pairs inside one
 * QEMU, stream or dgram sockets between QEMU processes. The link layer
 * itself (hello, retransmission, keepalive) is firmware-sim's; this file
 * only moves frames (Documentation/hw/fabric.rst, "QEMU glue").
 *
 * Threads: frames arrive on the main loop under the BQL (on a direct cable,
 * below, from the thread in the sending device's fabric round) and go
 * straight to maia_sim_fabric_rx(), which copies them and never waits for
 * another thread (on a direct cable it may run the receiver's round).
 * The device's fabric thread transmits without the BQL: maia_fabric_tx()
 * copies the frame into the port's bounded queue, maia_fabric_tx_lend()
 * queues the device's own DATA frame without a copy (it is given back with
 * maia_sim_fabric_frame_put() once sent, or once the receiving device of a
 * hub is done with it); both schedule tx_bh, which sends under the BQL, one
 * frame at a time into a backend that pushes back. A frame that finds the
 * queue full is dropped and reported as not sent (the port's TX_ERRORS;
 * the link layer retransmits what matters).
 *
 * Direct cables: a hub that joins exactly two maia fabric ports of this
 * process and nothing else, with no filter on it, is a cable between two
 * devices of one QEMU. Its frames go from the sending device's fabric
 * thread straight into the receiving device (maia_sim_fabric_rx() and
 * _rx_lent(), which never block), not through tx_bh, the hub and the main
 * loop: the same frames and link protocol, two thread hand-overs fewer per
 * hop. The NIC path stays for every other backend, for pcap (a filter),
 * and for fabric-direct=off. A DATA frame the device lends may come
 * without its CRC (the receiving device of a direct cable does not check
 * it): maia_fabric_tx_lend() seals it (maia_sim_fabric_frame_seal()) before
 * it goes any other way, shared memory included.
 *
 * Shared-memory cables: a port whose fabricN-shm names a memory backend
 * instead of a netdev is cabled to a port of another QEMU process (or of
 * this one) through two rings of frames in that memory
 * (maia-fabric-shm.c): sent from the device's fabric thread, received by a
 * thread of the port, not through the net layer or the main loop.
 *
 * Link state: `set_link <netdev> off` (or on the NIC) takes the port's
 * carrier away. While it is off, frames are neither sent nor received (the
 * net layer drops them, and so do we), so the device sees a dead peer and
 * takes the link DOWN after its keepalive timeout; `on` brings it back.
 * A port on a shared-memory cable has a NIC with no netdev for this:
 * `set_link <id>.fabricN`.
 *
 * Copyright (c) 2026 The Maia accelerator stack authors
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */

#include "qemu/osdep.h"
#include "qemu/main-loop.h"
#include "qapi/error.h"
#include "hw/qdev-core.h"
#include "net/net.h"
#include "trace.h"

#include "maia/hw/fabric.h"
#include "maia-fabric.h"

struct MaiaFabricFrame {
    QSIMPLEQ_ENTRY(MaiaFabricFrame) next;
    unsigned int port;
    int refs;                   /* glue's and receiving device's (atomic) */
    size_t cap;                 /* bytes buf[] has room for; 0: a lent frame */
    size_t len;
    const uint8_t *data;        /* buf[], or the sending device's lent frame */
    uint8_t buf[];
};

/*
 * Full-size frames kept for reuse, for every device of the process: a
 * frame lent to a receiving device comes back from that device's thread,
 * maybe after its sender is gone. g_malloc() and g_free() of 64 KiB per
 * frame made glibc give the pages back and fault them in again
 * (Documentation/hw/fabric.rst, "Performance").
 */
static GMutex spare_lock;
static QSIMPLEQ_HEAD(, MaiaFabricFrame) spare =
    QSIMPLEQ_HEAD_INITIALIZER(spare);
static unsigned int nspare;     /* under spare_lock, as spare */

/*
 * The frame tx_bh is sending (BQL): a hub hands the very same buffer to
 * the peer NIC's .receive, which then lends it to its device instead of
 * copying it. A frame QEMU had to queue arrives later as QEMU's copy, and
 * is copied as from any other backend.
 */
static MaiaFabricFrame *maia_fabric_sending;

/*
 * A port's direct_lock protects its `direct` pointer and is held while the
 * port hands a frame over it (its device's fabric thread), so that a
 * device being unplugged (detach, under the BQL, which unpairs both ends)
 * is never handed a frame once its ports are unpaired. Per port, so that
 * senders do not wait for each other. It is taken with no device lock
 * held. Under it, maia_sim_fabric_rx() takes the receiving device's lock
 * and, when no thread is in that device's fabric round, runs the round
 * right there (Documentation/hw/fabric.rst, "Rounds without a wake-up"),
 * whose sends take that device's ports' direct_locks in turn, with no
 * device lock held: the nesting follows the frames and never waits for a
 * thread in a round, and a round never waits for the BQL, so the order
 * is BQL, then direct_locks along the frames. Pairing and unpairing (BQL)
 * take one port's at a time.
 */

/* A frame buffer for len bytes, one reference; a spare one if full-size. */
static MaiaFabricFrame *maia_fabric_frame_new(size_t len)
{
    MaiaFabricFrame *fr = NULL;

    if (len > MAIA_FABRIC_MAX_FRAME / 2) {
        g_mutex_lock(&spare_lock);
        fr = QSIMPLEQ_FIRST(&spare);
        if (fr) {
            QSIMPLEQ_REMOVE_HEAD(&spare, next);
            nspare--;
        }
        g_mutex_unlock(&spare_lock);
        if (!fr) {
            fr = g_malloc(sizeof(*fr) + MAIA_FABRIC_BACKEND_MAX_FRAME);
        }
        fr->cap = MAIA_FABRIC_BACKEND_MAX_FRAME;
    } else {
        fr = g_malloc(sizeof(*fr) + len);
        fr->cap = len;
    }
    fr->refs = 1;
    fr->data = fr->buf;
    return fr;
}

/* Drops a reference; any thread. */
static void maia_fabric_frame_unref(MaiaFabricFrame *fr)
{
    if (qatomic_fetch_dec(&fr->refs) != 1) {
        return;
    }
    if (!fr->cap) {
        maia_sim_fabric_frame_put(fr->data);
    } else if (fr->cap == MAIA_FABRIC_BACKEND_MAX_FRAME) {
        g_mutex_lock(&spare_lock);
        if (nspare < MAIA_FABRIC_SPARE) {
            QSIMPLEQ_INSERT_HEAD(&spare, fr, next);
            nspare++;
            fr = NULL;
        }
        g_mutex_unlock(&spare_lock);
    }
    g_free(fr);
}

/* A receiving device is done with a lent frame (its fabric thread). */
static void maia_fabric_frame_release(void *opaque)
{
    maia_fabric_frame_unref(opaque);
}

static bool maia_fabric_carrier(MaiaFabricPort *p)
{
    return p->nic && !qemu_get_queue(p->nic)->link_down;
}

static ssize_t maia_fabric_receive(NetClientState *nc, const uint8_t *buf,
                                   size_t size)
{
    MaiaFabricPort *p = qemu_get_nic_opaque(nc);

    if (nc->link_down) {
        trace_maia_fabric_rx_drop(p->index, size, "carrier off");
        return size;
    }
    /* Bounds the length and counts drops; never blocks. */
    if (maia_fabric_sending && buf == maia_fabric_sending->data &&
        size == maia_fabric_sending->len) {
        trace_maia_fabric_rx(p->index, size, true);
        /* Another maia device's frame, through a hub: lend it, no copy. */
        qatomic_inc(&maia_fabric_sending->refs);
        maia_sim_fabric_rx_lent(p->fab->sim, p->index, buf, size,
                                maia_fabric_frame_release,
                                maia_fabric_sending);
    } else {
        trace_maia_fabric_rx(p->index, size, false);
        maia_sim_fabric_rx(p->fab->sim, p->index, buf, size);
    }
    return size;
}

static void maia_fabric_link_status_changed(NetClientState *nc)
{
    MaiaFabricPort *p = qemu_get_nic_opaque(nc);

    qatomic_set(&p->carrier_off, nc->link_down);
    trace_maia_fabric_carrier(p->index, !nc->link_down);
}

static NetClientInfo maia_fabric_net_info = {
    .type = NET_CLIENT_DRIVER_NIC,
    .size = sizeof(NICState),
    .receive = maia_fabric_receive,
    .link_status_changed = maia_fabric_link_status_changed,
};

/* The backend took the frame it had queued: the port may send again. */
static void maia_fabric_tx_done(NetClientState *nc, ssize_t len)
{
    MaiaFabricPort *p = qemu_get_nic_opaque(nc);

    p->tx_blocked = false;
    qemu_bh_schedule(p->fab->tx_bh);
}


static MaiaFabricFrame *maia_fabric_txq_pop(MaiaFabric *f, MaiaFabricPort *p)
{
    MaiaFabricFrame *fr;

    qemu_mutex_lock(&f->txq_lock);
    fr = QSIMPLEQ_FIRST(&p->txq);
    if (fr) {
        QSIMPLEQ_REMOVE_HEAD(&p->txq, next);
        p->txq_len--;
    }
    qemu_mutex_unlock(&f->txq_lock);
    return fr;
}

/*
 * Sends what the worker queued, port by port. A backend that cannot take
 * a frame now (a stream socket whose peer does not read) queues it and
 * calls maia_fabric_tx_done() later; until then the port's frames wait
 * here, in a bounded queue, instead of filling QEMU's net queue (10,000
 * frames of up to 64 KiB) with retransmissions.
 */
static void maia_fabric_tx_bh(void *opaque)
{
    MaiaFabric *f = opaque;
    MaiaFabricFrame *fr;
    unsigned int i;

    for (i = 0; i < f->nports; i++) {
        MaiaFabricPort *p = &f->port[i];

        while (!p->tx_blocked && (fr = maia_fabric_txq_pop(f, p))) {
            if (!maia_fabric_carrier(p)) {
                trace_maia_fabric_tx_drop(i, fr->len, "carrier off");
            } else {
                maia_fabric_sending = fr;
                trace_maia_fabric_send(i, fr->len);
                if (!qemu_send_packet_async(qemu_get_queue(p->nic),
                                            fr->data, fr->len,
                                            maia_fabric_tx_done)) {
                    p->tx_blocked = true;
                    trace_maia_fabric_tx_blocked(i);
                }
                maia_fabric_sending = NULL;
            }
            maia_fabric_frame_unref(fr);
        }
    }
}

/* A receiving device is done with a frame lent over a direct cable. */
static void maia_fabric_direct_release(void *opaque)
{
    maia_sim_fabric_frame_put(opaque);
}

/*
 * Hands a frame to the other end of port's direct cable, if it has one
 * and both carriers are on; false: not sent, the caller goes the NIC's
 * way. A lent frame is lent on to the receiving device, which gives it
 * back (maia_fabric_direct_release()).
 */
static bool maia_fabric_direct_tx(MaiaFabric *f, unsigned int port,
                                  const void *frame, size_t len, bool lent)
{
    MaiaFabricPort *peer;
    bool sent = false;

    qemu_mutex_lock(&f->port[port].direct_lock);
    peer = f->port[port].direct;
    if (peer && !qatomic_read(&peer->carrier_off)) {
        trace_maia_fabric_direct(port, peer->index, len, lent);
        if (lent) {
            maia_sim_fabric_rx_lent(peer->fab->sim, peer->index, frame, len,
                                    maia_fabric_direct_release,
                                    (void *)frame);
        } else {
            maia_sim_fabric_rx(peer->fab->sim, peer->index, frame, len);
        }
        sent = true;
    }
    qemu_mutex_unlock(&f->port[port].direct_lock);
    return sent;
}

static bool maia_fabric_tx_check(MaiaFabric *f, unsigned int port, size_t len)
{
    if (port >= f->nports || len > MAIA_FABRIC_BACKEND_MAX_FRAME) {
        trace_maia_fabric_tx_drop(port, len, "bad port or length");
        return false;
    }
    if (qatomic_read(&f->port[port].carrier_off)) {
        trace_maia_fabric_tx_drop(port, len, "carrier off");
        return false;
    }
    return true;
}

/* Queues fr (our reference) for tx_bh, or drops it. */
static int maia_fabric_txq_push(MaiaFabric *f, unsigned int port,
                                MaiaFabricFrame *fr, size_t len)
{
    fr->port = port;
    fr->len = len;
    trace_maia_fabric_tx(port, len, !fr->cap);
    qemu_mutex_lock(&f->txq_lock);
    if (f->port[port].txq_len >= MAIA_FABRIC_TXQ_MAX) {
        qemu_mutex_unlock(&f->txq_lock);
        maia_fabric_frame_unref(fr);
        trace_maia_fabric_tx_drop(port, len, "queue full");
        return -1;
    }
    f->port[port].txq_len++;
    QSIMPLEQ_INSERT_TAIL(&f->port[port].txq, fr, next);
    qemu_mutex_unlock(&f->txq_lock);
    qemu_bh_schedule(f->tx_bh);
    return 0;
}

int maia_fabric_tx(MaiaFabric *f, unsigned int port, const void *frame,
                   size_t len)
{
    MaiaFabricFrame *fr;

    if (!maia_fabric_tx_check(f, port, len)) {
        return -1;
    }
    if (f->port[port].shm) {
        return maia_fabric_shm_tx(&f->port[port], frame, len);
    }
    if (maia_fabric_direct_tx(f, port, frame, len, false)) {
        return 0;
    }
    fr = maia_fabric_frame_new(len);
    memcpy(fr->buf, frame, len);
    return maia_fabric_txq_push(f, port, fr, len);
}

int maia_fabric_tx_lend(MaiaFabric *f, unsigned int port, const void *frame,
                        size_t len)
{
    MaiaFabricFrame *fr;

    if (!maia_fabric_tx_check(f, port, len)) {
        maia_sim_fabric_frame_put(frame);
        return -1;
    }
    if (f->port[port].shm) {
        /* Copied into the ring: the device has its frame back at once. */
        int ret;

        maia_sim_fabric_frame_seal(frame, len);
        ret = maia_fabric_shm_tx(&f->port[port], frame, len);

        maia_sim_fabric_frame_put(frame);
        return ret;
    }
    if (maia_fabric_direct_tx(f, port, frame, len, true)) {
        return 0;
    }
    /* Into the net layer (a filter, a socket, another NIC): with its CRC. */
    maia_sim_fabric_frame_seal(frame, len);
    fr = g_malloc(sizeof(*fr));
    fr->cap = 0;
    fr->refs = 1;
    fr->data = frame;
    return maia_fabric_txq_push(f, port, fr, len);
}

bool maia_fabric_configure(MaiaFabric *f, DeviceState *dev,
                           struct maia_sim_config *cfg, Error **errp)
{
    unsigned int i, highest = 0;

    for (i = 0; i < MAIA_FABRIC_MAX_PORTS; i++) {
        if (f->port[i].conf.peers.ncs[0] && f->port[i].shm_be) {
            error_setg(errp, "fabric%u and fabric%u-shm are both given: a "
                       "port is cabled by a netdev or by shared memory, not "
                       "both", i, i);
            return false;
        }
        if (f->port[i].conf.peers.ncs[0] || f->port[i].shm_be) {
            highest = i + 1;
        }
    }
    if (f->ports_prop > MAIA_FABRIC_MAX_PORTS) {
        error_setg(errp, "fabric-ports %u must be 0..%u", f->ports_prop,
                   MAIA_FABRIC_MAX_PORTS);
        return false;
    }
    if (f->ports_prop && f->ports_prop < highest) {
        error_setg(errp, "fabric-ports %u but fabric%u is given",
                   f->ports_prop, highest - 1);
        return false;
    }
    if (f->drop_ppm > 1000000) {
        error_setg(errp, "fabric-drop-ppm %u must be 0..1000000",
                   f->drop_ppm);
        return false;
    }
    for (i = 0; i < MAIA_FABRIC_MAX_PORTS; i++) {
        unsigned int nports = f->ports_prop ? f->ports_prop : highest;

        if (f->port[i].lat_ns > MAIA_FABRIC_LAT_NS_MAX) {
            error_setg(errp, "fabric%u-lat-ns %u must be 0..%u", i,
                       f->port[i].lat_ns, MAIA_FABRIC_LAT_NS_MAX);
            return false;
        }
        if (f->port[i].lat_ns && i >= nports) {
            error_setg(errp, "fabric%u-lat-ns is given but the device has "
                       "%u fabric ports", i, nports);
            return false;
        }
    }
    if (f->window > MAIA_FABRIC_WINDOW || (f->window & (f->window - 1))) {
        error_setg(errp,
                   "fabric-window %u must be 0 or a power of two up to %u",
                   f->window, MAIA_FABRIC_WINDOW);
        return false;
    }
    f->dev = dev;
    cfg->fabric_window = f->window;
    f->nports = f->ports_prop ? f->ports_prop : highest;
    cfg->fabric_ports = f->nports;
    cfg->serial = f->serial;
    for (i = 0; i < f->nports; i++) {
        cfg->fabric_drop_ppm[i] = f->drop_ppm;
        /* Each port its own sequence, all from the one seed. */
        cfg->fabric_drop_seed[i] = f->drop_seed + i;
        /* A longer cable: the port's modeled latency, the failover trigger. */
        cfg->fabric_lat_ns[i] = f->port[i].lat_ns;
    }
    if (!f->nports) {
        return true;            /* no fabric: nothing more than before */
    }
    for (i = 0; i < f->nports; i++) {
        f->port[i].fab = f;
        f->port[i].index = i;
        if (f->port[i].shm_be && !maia_fabric_shm_open(&f->port[i], errp)) {
            while (i--) {
                maia_fabric_shm_close(&f->port[i]);
            }
            return false;
        }
    }
    qemu_mutex_init(&f->txq_lock);
    for (i = 0; i < f->nports; i++) {
        qemu_mutex_init(&f->port[i].direct_lock);
        f->port[i].direct = NULL;
        QSIMPLEQ_INIT(&f->port[i].txq);
        f->port[i].txq_len = 0;
        f->port[i].tx_blocked = false;
    }
    f->tx_bh = qemu_bh_new_guarded(maia_fabric_tx_bh, f,
                                   &dev->mem_reentrancy_guard);
    return true;
}

/* A maia fabric port's NIC on the other side of nc's hub; BQL. */
static MaiaFabricPort *maia_fabric_hub_partner(NetClientState *nc)
{
    g_autofree NetClientState **ncs = NULL;
    NetClientState *other = NULL;
    int hub, id, n, i, ports = 0;

    if (!nc->peer || net_hub_id_for_client(nc->peer, &hub) ||
        !QTAILQ_EMPTY(&nc->filters) || !QTAILQ_EMPTY(&nc->peer->filters)) {
        return NULL;
    }
    n = qemu_find_net_clients_except(NULL, NULL, NET_CLIENT_DRIVER_NIC, 0);
    ncs = g_new0(NetClientState *, n);
    n = qemu_find_net_clients_except(NULL, ncs, NET_CLIENT_DRIVER_NIC, n);
    for (i = 0; i < n; i++) {
        if (ncs[i]->info->type != NET_CLIENT_DRIVER_HUBPORT ||
            net_hub_id_for_client(ncs[i], &id) || id != hub) {
            continue;
        }
        ports++;
        if (ncs[i] != nc->peer) {
            other = ncs[i];
        }
    }
    /* Exactly two ports, the other one leading to a maia port unfiltered. */
    if (ports != 2 || !other || !other->peer ||
        other->peer->info != &maia_fabric_net_info ||
        !QTAILQ_EMPTY(&other->filters) ||
        !QTAILQ_EMPTY(&other->peer->filters)) {
        return NULL;
    }
    return qemu_get_nic_opaque(other->peer);
}

/* Pairs p with the maia port at the other end of its hub, if any; BQL. */
static void maia_fabric_direct_pair(MaiaFabricPort *p)
{
    MaiaFabricPort *q = maia_fabric_hub_partner(qemu_get_queue(p->nic));

    if (!q || !q->fab->direct_prop || !q->fab->sim) {
        return;
    }
    qemu_mutex_lock(&p->direct_lock);
    p->direct = q;
    qemu_mutex_unlock(&p->direct_lock);
    qemu_mutex_lock(&q->direct_lock);
    q->direct = p;
    qemu_mutex_unlock(&q->direct_lock);
    trace_maia_fabric_direct_pair(p->index, q->index);
}

void maia_fabric_attach(MaiaFabric *f, struct maia_sim *sim)
{
    const char *id = f->dev->id;
    unsigned int i;

    f->sim = sim;
    for (i = 0; i < f->nports; i++) {
        MaiaFabricPort *p = &f->port[i];
        g_autofree char *name = id ? g_strdup_printf("%s.fabric%u", id, i)
                                   : NULL;

        p->fab = f;
        p->index = i;
        qemu_macaddr_default_if_unset(&p->conf.macaddr);
        p->nic = qemu_new_nic(&maia_fabric_net_info, &p->conf,
                              object_get_typename(OBJECT(f->dev)), name,
                              &f->dev->mem_reentrancy_guard, p);
        qemu_format_nic_info_str(qemu_get_queue(p->nic), p->conf.macaddr.a);
        qatomic_set(&p->carrier_off, qemu_get_queue(p->nic)->link_down);
        if (p->shm) {
            maia_fabric_shm_start(p);
        }
    }
    for (i = 0; f->direct_prop && i < f->nports; i++) {
        maia_fabric_direct_pair(&f->port[i]);
    }
}

uint32_t maia_fabric_direct_ports(MaiaFabric *f)
{
    uint32_t mask = 0;
    unsigned int i;

    for (i = 0; i < f->nports; i++) {
        qemu_mutex_lock(&f->port[i].direct_lock);
        if (f->port[i].direct) {
            mask |= 1u << i;
        }
        qemu_mutex_unlock(&f->port[i].direct_lock);
    }
    return mask;
}

void maia_fabric_detach(MaiaFabric *f)
{
    unsigned int i;

    /* After this no peer hands us a frame, nor we one to it. */
    for (i = 0; i < f->nports; i++) {
        MaiaFabricPort *p = &f->port[i], *q;

        maia_fabric_shm_stop(p);

        qemu_mutex_lock(&p->direct_lock);
        q = p->direct;
        p->direct = NULL;
        qemu_mutex_unlock(&p->direct_lock);
        if (q) {
            /* Waits for a frame q's thread is handing us. */
            qemu_mutex_lock(&q->direct_lock);
            if (q->direct == p) {
                q->direct = NULL;
            }
            qemu_mutex_unlock(&q->direct_lock);
        }
    }
    for (i = 0; i < f->nports; i++) {
        NICState *nic = f->port[i].nic;

        if (nic) {
            qatomic_set(&f->port[i].carrier_off, true);
            f->port[i].nic = NULL;
            qemu_del_nic(nic);
        }
    }
}

void maia_fabric_cleanup(MaiaFabric *f)
{
    MaiaFabricFrame *fr;
    unsigned int i;

    if (!f->tx_bh) {
        return;
    }
    qemu_bh_delete(f->tx_bh);
    f->tx_bh = NULL;
    for (i = 0; i < f->nports; i++) {
        while ((fr = maia_fabric_txq_pop(f, &f->port[i]))) {
            maia_fabric_frame_unref(fr);
        }
    }
    for (i = 0; i < f->nports; i++) {
        maia_fabric_shm_close(&f->port[i]);
        qemu_mutex_destroy(&f->port[i].direct_lock);
    }
    qemu_mutex_destroy(&f->txq_lock);
    f->sim = NULL;
}
