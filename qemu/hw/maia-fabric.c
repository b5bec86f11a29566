/*
 * Maia accelerator: the fabric ports as QEMU NICs.
 *
 * Each fabric port is a NIC (properties fabric0 .. fabric11 name its
 * netdev), so any netdev backend carries a link: hubport pairs inside one
 * QEMU, stream or dgram sockets between QEMU processes. The link layer
 * itself (hello, retransmission, keepalive) is firmware-sim's; this file
 * only moves frames (Documentation/hw/fabric.rst, "QEMU glue").
 *
 * Threads: frames arrive on the main loop under the BQL and go straight to
 * maia_sim_fabric_rx(), which copies them and never blocks. The device
 * worker transmits without the BQL: maia_fabric_tx() copies the frame into
 * a bounded queue and schedules tx_bh, which sends it under the BQL. A
 * frame that finds the queue full is dropped and reported as not sent (the
 * port's TX_ERRORS; the link layer retransmits what matters).
 *
 * Link state: `set_link <netdev> off` (or on the NIC) takes the port's
 * carrier away. While it is off, frames are neither sent nor received (the
 * net layer drops them, and so do we), so the device sees a dead peer and
 * takes the link DOWN after its keepalive timeout; `on` brings it back.
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
    size_t len;
    uint8_t data[];
};

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
    /* Copies, bounds the length and counts drops; never blocks. */
    maia_sim_fabric_rx(p->fab->sim, p->index, buf, size);
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

static void maia_fabric_tx_bh(void *opaque)
{
    MaiaFabric *f = opaque;
    QSIMPLEQ_HEAD(, MaiaFabricFrame) frames;
    MaiaFabricFrame *fr;

    QSIMPLEQ_INIT(&frames);
    qemu_mutex_lock(&f->txq_lock);
    QSIMPLEQ_CONCAT(&frames, &f->txq);
    f->txq_len = 0;
    qemu_mutex_unlock(&f->txq_lock);

    while ((fr = QSIMPLEQ_FIRST(&frames))) {
        MaiaFabricPort *p = &f->port[fr->port];

        QSIMPLEQ_REMOVE_HEAD(&frames, next);
        if (maia_fabric_carrier(p)) {
            qemu_send_packet(qemu_get_queue(p->nic), fr->data, fr->len);
        } else {
            trace_maia_fabric_tx_drop(fr->port, fr->len, "carrier off");
        }
        g_free(fr);
    }
}

int maia_fabric_tx(MaiaFabric *f, unsigned int port, const void *frame,
                   size_t len)
{
    MaiaFabricFrame *fr;

    if (port >= f->nports || len > MAIA_FABRIC_BACKEND_MAX_FRAME) {
        trace_maia_fabric_tx_drop(port, len, "bad port or length");
        return -1;
    }
    if (qatomic_read(&f->port[port].carrier_off)) {
        trace_maia_fabric_tx_drop(port, len, "carrier off");
        return -1;
    }
    fr = g_malloc(sizeof(*fr) + len);
    fr->port = port;
    fr->len = len;
    memcpy(fr->data, frame, len);

    qemu_mutex_lock(&f->txq_lock);
    if (f->txq_len >= MAIA_FABRIC_TXQ_MAX) {
        qemu_mutex_unlock(&f->txq_lock);
        g_free(fr);
        trace_maia_fabric_tx_drop(port, len, "queue full");
        return -1;
    }
    f->txq_len++;
    QSIMPLEQ_INSERT_TAIL(&f->txq, fr, next);
    qemu_mutex_unlock(&f->txq_lock);
    qemu_bh_schedule(f->tx_bh);
    return 0;
}

bool maia_fabric_configure(MaiaFabric *f, DeviceState *dev,
                           struct maia_sim_config *cfg, Error **errp)
{
    unsigned int i, highest = 0;

    for (i = 0; i < MAIA_FABRIC_MAX_PORTS; i++) {
        if (f->port[i].conf.peers.ncs[0]) {
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
    f->dev = dev;
    f->nports = f->ports_prop ? f->ports_prop : highest;
    cfg->fabric_ports = f->nports;
    cfg->serial = f->serial;
    for (i = 0; i < f->nports; i++) {
        cfg->fabric_drop_ppm[i] = f->drop_ppm;
        /* Each port its own sequence, all from the one seed. */
        cfg->fabric_drop_seed[i] = f->drop_seed + i;
    }
    if (!f->nports) {
        return true;            /* no fabric: nothing more than before */
    }
    qemu_mutex_init(&f->txq_lock);
    QSIMPLEQ_INIT(&f->txq);
    f->txq_len = 0;
    f->tx_bh = qemu_bh_new_guarded(maia_fabric_tx_bh, f,
                                   &dev->mem_reentrancy_guard);
    return true;
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
    }
}

void maia_fabric_detach(MaiaFabric *f)
{
    unsigned int i;

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

    if (!f->tx_bh) {
        return;
    }
    qemu_bh_delete(f->tx_bh);
    f->tx_bh = NULL;
    while ((fr = QSIMPLEQ_FIRST(&f->txq))) {
        QSIMPLEQ_REMOVE_HEAD(&f->txq, next);
        g_free(fr);
    }
    qemu_mutex_destroy(&f->txq_lock);
    f->sim = NULL;
}
