/*
 * Maia accelerator: fabric ports as QEMU NICs (maia-fabric.c).
 *
 * Copyright (c) 2026 The Maia accelerator stack authors
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */
#ifndef HW_MISC_MAIA_FABRIC_H
#define HW_MISC_MAIA_FABRIC_H

#include "qemu/queue.h"
#include "qemu/thread.h"
#include "net/net.h"
#include "system/hostmem.h"
#include "maia/sim.h"

/* Frames the device worker may have waiting for the main loop, per port. */
#define MAIA_FABRIC_TXQ_MAX     512
/* Full-size frame buffers kept for reuse, per process (about 17 MiB). */
#ifdef QEMU_SANITIZE_ADDRESS
#define MAIA_FABRIC_SPARE       0       /* a use after free must reach ASan */
#else
#define MAIA_FABRIC_SPARE       256
#endif

typedef struct MaiaFabric MaiaFabric;
typedef struct MaiaFabricFrame MaiaFabricFrame;
typedef struct MaiaFabricShm MaiaFabricShm;

typedef struct MaiaFabricPort {
    MaiaFabric *fab;
    unsigned int index;
    NICConf conf;               /* property fabricN: the netdev */
    /* property fabricN-shm: a shared-memory cable instead of a netdev */
    HostMemoryBackend *shm_be;
    MaiaFabricShm *shm;         /* its state (maia-fabric-shm.c), or NULL */
    uint32_t lat_ns;            /* property fabricN-lat-ns: cable latency */
    NICState *nic;              /* BQL; NULL when the port is not created */
    /* nc->link_down for the worker, which must not touch the NIC (atomic) */
    bool carrier_off;
    /* Frames from the worker, under fab->txq_lock. */
    QSIMPLEQ_HEAD(, MaiaFabricFrame) txq;
    unsigned int txq_len;
    /* BQL: the backend holds a frame of ours; send no more until it is out */
    bool tx_blocked;
    /*
     * The other end of a direct cable (maia-fabric.c, "Direct cables"), or
     * NULL: frames then go through the NIC. direct_lock protects it and is
     * held while this port hands a frame over it.
     */
    QemuMutex direct_lock;
    struct MaiaFabricPort *direct;
} MaiaFabricPort;

struct MaiaFabric {
    DeviceState *dev;
    struct maia_sim *sim;       /* set by maia_fabric_attach() */
    unsigned int nports;
    MaiaFabricPort port[MAIA_FABRIC_MAX_PORTS];

    /*
     * Frames from the device worker (no BQL) to tx_bh (BQL). txq_lock
     * protects every port's txq and txq_len; nothing else.
     */
    QemuMutex txq_lock;
    QEMUBH *tx_bh;

    /* Properties */
    uint32_t ports_prop;        /* fabric-ports; 0: highest fabricN + 1 */
    uint64_t serial;            /* 0: firmware-sim derives one */
    uint32_t drop_ppm;          /* fabric-drop-ppm */
    uint64_t drop_seed;         /* fabric-drop-seed */
    uint32_t window;            /* fabric-window; 0: the device's default */
    bool direct_prop;           /* fabric-direct */
};

/* The largest fabricN-lat-ns: one second of cable. */
#define MAIA_FABRIC_LAT_NS_MAX  1000000000u

#define DEFINE_MAIA_FABRIC_PORT_PROP(_s, _f, _n)                        \
    DEFINE_PROP_NETDEV("fabric" #_n, _s, _f.port[_n].conf.peers),      \
    DEFINE_PROP_UINT32("fabric" #_n "-lat-ns", _s, _f.port[_n].lat_ns, 0), \
    DEFINE_PROP_LINK("fabric" #_n "-shm", _s, _f.port[_n].shm_be,       \
                     TYPE_MEMORY_BACKEND, HostMemoryBackend *)

/* The properties; _f is the MaiaFabric member of state _s. */
#define DEFINE_MAIA_FABRIC_PROPERTIES(_s, _f)                           \
    DEFINE_MAIA_FABRIC_PORT_PROP(_s, _f, 0),                            \
    DEFINE_MAIA_FABRIC_PORT_PROP(_s, _f, 1),                            \
    DEFINE_MAIA_FABRIC_PORT_PROP(_s, _f, 2),                            \
    DEFINE_MAIA_FABRIC_PORT_PROP(_s, _f, 3),                            \
    DEFINE_MAIA_FABRIC_PORT_PROP(_s, _f, 4),                            \
    DEFINE_MAIA_FABRIC_PORT_PROP(_s, _f, 5),                            \
    DEFINE_MAIA_FABRIC_PORT_PROP(_s, _f, 6),                            \
    DEFINE_MAIA_FABRIC_PORT_PROP(_s, _f, 7),                            \
    DEFINE_MAIA_FABRIC_PORT_PROP(_s, _f, 8),                            \
    DEFINE_MAIA_FABRIC_PORT_PROP(_s, _f, 9),                            \
    DEFINE_MAIA_FABRIC_PORT_PROP(_s, _f, 10),                           \
    DEFINE_MAIA_FABRIC_PORT_PROP(_s, _f, 11),                           \
    DEFINE_PROP_UINT32("fabric-ports", _s, _f.ports_prop, 0),           \
    DEFINE_PROP_UINT64("serial", _s, _f.serial, 0),                     \
    DEFINE_PROP_UINT32("fabric-drop-ppm", _s, _f.drop_ppm, 0),          \
    DEFINE_PROP_UINT64("fabric-drop-seed", _s, _f.drop_seed, 0),       \
    DEFINE_PROP_UINT32("fabric-window", _s, _f.window, 0),             \
    DEFINE_PROP_BOOL("fabric-direct", _s, _f.direct_prop, true)

/*
 * Realize, in this order: maia_fabric_configure() (checks the properties,
 * fills cfg), maia_sim_create(), maia_fabric_attach() (the NICs).
 * Unrealize: maia_fabric_detach() (no NIC, so nothing received), then
 * maia_sim_destroy() (no worker, so nothing sent), then
 * maia_fabric_cleanup() (no bottom half, queued frames freed).
 */
bool maia_fabric_configure(MaiaFabric *f, DeviceState *dev,
                           struct maia_sim_config *cfg, Error **errp);
void maia_fabric_attach(MaiaFabric *f, struct maia_sim *sim);
void maia_fabric_detach(MaiaFabric *f);
void maia_fabric_cleanup(MaiaFabric *f);

/* Ports on a direct cable (bit N: port N), for the QOM property. */
uint32_t maia_fabric_direct_ports(MaiaFabric *f);

/* ops.fabric_tx: called from the device's fabric thread without the BQL. */
int maia_fabric_tx(MaiaFabric *f, unsigned int port, const void *frame,
                   size_t len);
/* ops.fabric_tx_lend: the same, frame kept (no copy) until it is sent. */
int maia_fabric_tx_lend(MaiaFabric *f, unsigned int port, const void *frame,
                        size_t len);

/*
 * maia-fabric-shm.c: a port's shared-memory cable (fabricN-shm). open()
 * takes a side of the backend (configure), start() runs the receive thread
 * (attach), stop() joins it and sends no more (detach), close() gives the
 * side back (cleanup; stops first if needed).
 */
bool maia_fabric_shm_open(MaiaFabricPort *p, Error **errp);
void maia_fabric_shm_start(MaiaFabricPort *p);
void maia_fabric_shm_stop(MaiaFabricPort *p);
void maia_fabric_shm_close(MaiaFabricPort *p);
/* As maia_fabric_tx(), on the port's fabric thread: 0 sent, -1 dropped. */
int maia_fabric_shm_tx(MaiaFabricPort *p, const void *frame, size_t len);

#endif /* HW_MISC_MAIA_FABRIC_H */
