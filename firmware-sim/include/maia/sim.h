/* SPDX-License-Identifier: MIT */
/*
 * firmware-sim: the Maia device as a C library with no QEMU dependency.
 *
 * A host (the QEMU glue, or a unit test) creates a device with a config and
 * a set of callbacks for DMA to host memory and for raising MSI-X vectors.
 * It forwards BAR0 accesses to maia_sim_mmio_read/write. HBM (BAR2) is a
 * host buffer the caller owns and passes in the config; the device reads
 * and writes it directly.
 *
 * Threading: the library runs device work (boot, mailbox, queues) on its
 * own worker thread, and with fabric ports the links and remote accesses on
 * a fabric thread, so MMIO handlers return quickly.
 * Callbacks may therefore be called from that worker thread, and must be
 * thread-safe. All entry points may be called from any one host thread at a
 * time (the QEMU BQL holder); maia_sim_fabric_rx() and
 * maia_sim_fabric_port_info() may in addition be called from any thread at
 * any time (see there).
 */
#ifndef MAIA_SIM_H
#define MAIA_SIM_H

#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "maia/hw/fabric.h"

struct maia_sim;

struct maia_sim_ops {
	/* Host memory by bus address. Return 0, or -1 if the access failed. */
	int (*dma_read)(void *opaque, uint64_t addr, void *buf, size_t len);
	int (*dma_write)(void *opaque, uint64_t addr, const void *buf, size_t len);
	/* Raise MSI-X vector (MAIA_VEC_*). */
	void (*raise_irq)(void *opaque, unsigned int vector);
	/* A guest mistake, as one line without a trailing newline. */
	void (*guest_error)(void *opaque, const char *msg);
	/* Optional: a device event worth tracing, as one line. */
	void (*trace)(void *opaque, const char *msg);
	/*
	 * Optional, beside trace: whether anyone takes trace messages now (a
	 * cheap check: it is asked for every message). While it says no the
	 * library formats none. NULL: trace takes every message.
	 */
	bool (*trace_enabled)(void *opaque);
	/*
	 * Optional, TEST-ONLY PATH today: queue's shadow tail was set (enabled)
	 * or cleared. The glue may then route the doorbell through an eventfd
	 * and call maia_sim_doorbell_kick(). Called from an MMIO write. The
	 * kernel driver does not give queues a shadow tail (yet); only the unit
	 * tests and the qtest exercise this path.
	 */
	void (*shadow_changed)(void *opaque, unsigned int queue, bool enabled);
	/*
	 * Optional: the host's clock in nanoseconds, for device time (TIME
	 * registers, job timeouts, scheduler quanta, telemetry). Must be
	 * monotonic and advance at about real-time rate: the library sleeps
	 * until device-time deadlines on CLOCK_MONOTONIC. NULL:
	 * clock_gettime(CLOCK_MONOTONIC). May be called from any thread.
	 */
	uint64_t (*now_ns)(void *opaque);
	/*
	 * Optional: start a joinable thread running fn(arg) (the device worker,
	 * the tensor engine's pool). name is short ("maia-worker"). Return 0
	 * and set *thread, or an errno value. The library ends the thread by
	 * returning from fn and joins it with pthread_join(). NULL:
	 * pthread_create() with default attributes (the caller's signal mask).
	 */
	int (*thread_create)(void *opaque, pthread_t *thread, const char *name,
			     void *(*fn)(void *), void *arg);
	/*
	 * Optional: put one frame (an Ethernet frame, maia/hw/fabric.h, at most
	 * MAIA_FABRIC_MAX_FRAME bytes) on the wire of fabric port `port`
	 * (< maia_sim_config.fabric_ports). The buffer is only valid during the
	 * call. Return 0, or -1 if the frame was not sent (counted; the link
	 * layer retransmits what matters). Called from the device's fabric
	 * thread with no library lock held, so it may call
	 * maia_sim_fabric_rx() of another device, or of this one, directly.
	 * It must not block for long: that thread runs every port's timers.
	 * NULL: every port is unplugged (frames go nowhere).
	 */
	int (*fabric_tx)(void *opaque, unsigned int port, const void *frame, size_t len);
	/*
	 * Optional, beside fabric_tx: the same for a DATA frame, without the
	 * copy. The device keeps a DATA frame until the peer acknowledges it,
	 * so it lends it: `frame` stays valid and unchanged until the host
	 * calls maia_sim_fabric_frame_put(frame), exactly once per call (also
	 * when it returns -1), from any thread, even after this device is
	 * destroyed. Other frames, and a retransmission while the earlier
	 * transmission is still lent, go to fabric_tx. NULL: fabric_tx for all.
	 * A lent frame may come without its CRC: a host that hands it to
	 * anything but maia_sim_fabric_rx_lent() of a device of this process
	 * (a socket, a hub, shared memory, a copy) seals it first
	 * (maia_sim_fabric_frame_seal()).
	 */
	int (*fabric_tx_lend)(void *opaque, unsigned int port, const void *frame, size_t len);
	/*
	 * Optional: the ports (bit N: port N) whose frames fabric_tx hands on
	 * at once on the calling thread (a direct cable into a device of this
	 * process, a shared-memory ring), rather than queue them for a thread
	 * that may need a lock the caller holds (QEMU's main loop, which takes
	 * a NIC's frames, needs the BQL a vCPU writing a doorbell holds). A
	 * doorbell writer runs its device's first fabric round itself only
	 * when every port whose link is UP is one of these; otherwise it wakes
	 * the fabric thread. Called with no library lock held. NULL: all ports.
	 */
	uint32_t (*fabric_direct_ports)(void *opaque);
};

struct maia_sim_config {
	uint64_t hbm_size;		/* bytes */
	void *hbm;			/* hbm_size bytes, owned by the caller */
	unsigned int clusters;		/* default 16 */
	unsigned int tiles_per_cluster;	/* default 4 */
	unsigned int num_queues;	/* default MAIA_DEFAULT_QUEUES */
	unsigned int sram_kib;		/* per cluster; default 8192 */
	unsigned int worker_threads;	/* tensor thread pool; 0 = one per host CPU */
	/*
	 * Fabric ports, 0..MAIA_FABRIC_MAX_PORTS; default 0: no fabric, and the
	 * device behaves exactly as it did without one.
	 */
	unsigned int fabric_ports;
	/*
	 * The device's serial number, its fabric identity (HELLO src_serial).
	 * Default 0: none given. A device with fabric ports and serial 0 gets
	 * one derived from the host process id and the order in which this
	 * process created its devices (MAIA_SIM_SERIAL_AUTO | pid << 16 | n),
	 * stable for a given program run. A host that can give a stable
	 * identity (a QEMU property) should set it.
	 */
	uint64_t serial;
	/*
	 * Fault injection per fabric port: drop this many of every 1,000,000
	 * transmitted frames (at most 1,000,000), from a generator seeded
	 * with fabric_drop_seed (the same seed drops the same frames). 0: no
	 * drops. Counted in the port's injected_drops.
	 */
	uint32_t fabric_drop_ppm[MAIA_FABRIC_MAX_PORTS];
	uint64_t fabric_drop_seed[MAIA_FABRIC_MAX_PORTS];
	/*
	 * Fault injection per fabric port: modeled latency its cable adds to
	 * the chip's link latency (a longer or degraded cable), ns. Only
	 * failover looks at it (MAIA_REG_FABRIC_FO_LAT_NS). 0: none.
	 */
	uint32_t fabric_lat_ns[MAIA_FABRIC_MAX_PORTS];
	/*
	 * DATA frames a peer may have in flight to each port (the credit this
	 * device grants) and this device sends ahead on each: a power of two
	 * up to MAIA_FABRIC_WINDOW; 0 = MAIA_FABRIC_WINDOW. A cable that drops
	 * what it cannot buffer (a UDP socket holds about three 60 KiB frames
	 * by default) needs a small one.
	 */
	unsigned int fabric_window;
	/*
	 * The chip model (MAIA_MODEL_*, maia/hw/model.h) whose parameters the
	 * device time model uses; default MAIA_MODEL_MAIA100. With another tile
	 * layout than the model's, its peaks and SRAM scale with the tiles.
	 */
	unsigned int model;
};

#define MAIA_SIM_SERIAL_AUTO	0x4d41000000000000ull	/* "MA" */

/* Fills cfg with defaults (hbm and hbm_size are left to the caller). */
void maia_sim_config_defaults(struct maia_sim_config *cfg);

/*
 * Sets cfg's model by name ("maia100", "maia200") and the model's tile
 * layout. 0, or -EINVAL for an unknown name (cfg unchanged).
 */
int maia_sim_config_model(struct maia_sim_config *cfg, const char *name);
/* The model's HBM capacity in bytes (a host's default HBM size); 0 if unknown. */
uint64_t maia_sim_model_hbm_bytes(unsigned int model);

/* Returns NULL and sets errno on invalid config or allocation failure. */
struct maia_sim *maia_sim_create(const struct maia_sim_config *cfg,
				 const struct maia_sim_ops *ops, void *opaque);
void maia_sim_destroy(struct maia_sim *sim);

/*
 * BAR0 accesses, 32-bit and aligned; the glue rejects anything else.
 * Offsets outside the map read as 0 and ignore writes, with a guest_error.
 */
uint32_t maia_sim_mmio_read(struct maia_sim *sim, uint32_t offset);
void maia_sim_mmio_write(struct maia_sim *sim, uint32_t offset, uint32_t value);

/*
 * BAR1, the doorbell pages (revision 1.3): 32-bit aligned accesses, like
 * BAR0. A write to MAIA_UDB_PAGE(q) + MAIA_UDB_DOORBELL is a doorbell of
 * queue q; anything else reads as 0 and ignores writes, with a guest_error.
 */
uint32_t maia_sim_udb_read(struct maia_sim *sim, uint32_t offset);
void maia_sim_udb_write(struct maia_sim *sim, uint32_t offset, uint32_t value);

/* Same as writing MAIA_REG_DOORBELL(queue). */
void maia_sim_doorbell(struct maia_sim *sim, unsigned int queue, uint32_t tail);

/*
 * A doorbell write whose value was not seen (ioeventfd): use the shadow tail.
 * Test-only path today, like shadow_changed: the kernel driver does not set
 * shadow tails, so in a guest this is never called.
 */
void maia_sim_doorbell_kick(struct maia_sim *sim, unsigned int queue);

/*
 * Full device reset (MAIA_REG_RESET, PCI reset, FLR): waits for the worker to
 * stop (a running command gives up at its next chunk), writes a
 * MAIA_STATUS_ABORTED completion (without an interrupt) for each job already
 * fetched, clears registers and returns to WAIT_FW. Entries not yet fetched
 * are dropped. Calls shadow_changed(q, false) for queues that had a shadow.
 */
void maia_sim_reset(struct maia_sim *sim);

/*
 * Wait until the worker is idle: all doorbells and mailbox work done, and no
 * job left that can still finish. Jobs parked on a semaphore count as work
 * until they are signalled or time out; hung (injected) jobs do not.
 */
void maia_sim_drain(struct maia_sim *sim);

/*
 * Doorbell fast path, off by default. When on, a doorbell write that finds
 * the worker asleep with nothing else to do runs the queue's next job in
 * the calling thread, before maia_sim_mmio_write() returns, as far as its
 * commands are cheap (NOP, FENCE_WRITE, TIMESTAMP, within a short slice);
 * the worker takes over at the first other command. That saves the wake-up
 * of the worker and, since the caller then gets raise_irq and DMA callbacks
 * synchronously, any deferral of the interrupt. Only for a host whose MMIO
 * thread may take those callbacks (QEMU: the BQL holder).
 */
void maia_sim_set_inline_doorbell(struct maia_sim *sim, bool on);

/* Fault injection, for tests. */
enum maia_sim_inject {
	MAIA_SIM_INJECT_HANG = 1,	/* the next job on queue never completes */
	MAIA_SIM_INJECT_MMU_FAULT = 2,	/* the next job on queue faults */
	MAIA_SIM_INJECT_FW_CRASH = 3,	/* firmware stops until reset; queue ignored */
	MAIA_SIM_INJECT_ECC_CE = 4,	/* use maia_sim_inject_ecc() */
	MAIA_SIM_INJECT_ECC_UE = 5,	/* use maia_sim_inject_ecc() */
};
int maia_sim_inject(struct maia_sim *sim, enum maia_sim_inject what,
		    unsigned int queue);
/*
 * An HBM ECC error (MAIA_SIM_INJECT_ECC_CE or _UE) in the 4 KiB page holding
 * hbm_addr, as MAIA_REG_DEBUG_INJECT with DEBUG_INJECT_ADDR does. 0, or
 * -EINVAL for an address outside HBM, another kind, or a full error table.
 */
int maia_sim_inject_ecc(struct maia_sim *sim, enum maia_sim_inject what, uint64_t hbm_addr);

/*
 * Fabric (Documentation/hw/fabric.rst, "Attaching ports").
 *
 * A frame received on fabric port `port`: copied into the port's receive
 * queue (bounded: MAIA_SIM_FABRIC_RXQ frames with a payload, and 64 more
 * without, so that acks and keepalives get through a flood of data), and the fabric thread is
 * woken to hand it to the port's link engine. Never blocks beyond a short internal
 * lock and never calls a callback. A frame is dropped and counted
 * (rx_queue_drops) when the queue is full or it is longer than
 * MAIA_FABRIC_BACKEND_MAX_FRAME; ignored if port is out of range. Unlike the
 * other entry points it may be called from any thread, concurrently,
 * including from a fabric_tx callback (this device's or another's): it only
 * takes the device's internal lock for a moment, and the library never
 * holds that lock while calling fabric_tx, dma_*, raise_irq or
 * shadow_changed (it may while calling guest_error and trace, which must
 * therefore not call it). The caller must stop calling it before
 * maia_sim_destroy() of this device.
 *
 * The link engines run on the device's fabric thread (started with
 * ops.thread_create like the worker): they see received frames, and their
 * timers (HELLO, retransmit, keepalive, dead peer) fire, whether or not the
 * device is booted and busy, except while the firmware is crashed
 * (MAIA_SIM_INJECT_FW_CRASH: the ports go quiet, and the peers declare this
 * device dead). Link work does not count as work for maia_sim_drain(); a
 * job parked on a remote write or read does. maia_sim_reset() takes every link DOWN with
 * a new session epoch and empties the receive queues; the links then
 * rediscover their peers.
 */
/* A full window of DATA from the peer and as many acks of our own DATA. */
#define MAIA_SIM_FABRIC_RXQ	128u
void maia_sim_fabric_rx(struct maia_sim *sim, unsigned int port, const void *frame, size_t len);
/*
 * The same without the copy: the caller lends `frame`, which must stay valid
 * and unchanged until the device calls release(opaque). It does so exactly
 * once per call (at once if it drops the frame), from any of its threads
 * and possibly with its internal lock held: release must not call into
 * this device. For a host that already owns the frame's buffer (a QEMU glue
 * handing one device's transmitted frame to another in the same process).
 */
void maia_sim_fabric_rx_lent(struct maia_sim *sim, unsigned int port, const void *frame,
			     size_t len, void (*release)(void *opaque), void *opaque);
/* Gives back a frame maia_sim_ops.fabric_tx_lend lent; any thread. */
void maia_sim_fabric_frame_put(const void *frame);
/*
 * Fills in the CRC of a frame maia_sim_ops.fabric_tx_lend lent without it
 * (a frame for a device of this process, which does not check it), before
 * the host sends it any other way; nothing if it has it. Any thread, while
 * the host holds the frame, before anyone else reads it.
 */
void maia_sim_fabric_frame_seal(const void *frame, size_t len);

/*
 * A port's state and counters, for tests and debugging: a snapshot the
 * worker publishes after each round of fabric work (so a few ms old).
 */
struct maia_sim_fabric_port_info {
	bool up;			/* link UP: peer_* are valid */
	uint64_t serial;		/* this device's fabric serial */
	uint64_t peer_serial;		/* last peer discovered (kept while DOWN) */
	unsigned int peer_port;
	uint32_t epoch;			/* this port's session epoch */
	uint64_t link_ups, link_downs, dead_peer;
	uint64_t tx_frames, rx_frames, tx_errors, retransmits;
	uint64_t tx_bytes, rx_bytes;	/* whole frames, Ethernet header included */
	uint64_t rx_dropped;		/* frames the link engine rejected (all reasons),
					 * and malformed or unclaimed transport messages */
	uint64_t rx_queue_drops;	/* maia_sim_fabric_rx(): queue full or too long */
	uint64_t injected_drops;	/* transmitted frames dropped by fabric_drop_ppm */
	uint64_t tx_lend_copies;	/* retransmissions copied: the frame was still lent */
	uint64_t link_nak_tx;		/* NAK frames sent: gaps named to the peer */
	uint64_t link_nak_rx;		/* NAK frames received */
	uint64_t rx_held;		/* DATA frames held after a gap until it filled */
	uint64_t spurious_rto;		/* retransmit timeouts undone: the peer had the frame */
	uint64_t rx_cut;		/* fabric rounds that stopped in this port's received
					 * frames for the time limit and left the rest */
	uint64_t tx_acks;		/* bare ACK frames sent (not carried by DATA) */
	uint64_t tx_ack_now;		/* DATA frames that asked for their ack at once */
	uint32_t mtu;			/* data bytes per transport message */
	/* The transport (MAIA_FMSG_IDENT on every link UP, remote writes and reads). */
	uint64_t tx_msgs_acked;		/* messages the peer acknowledged */
	uint64_t rx_msgs;		/* messages delivered from the peer */
	uint64_t ident_rx;		/* of which identity messages */
	uint64_t ident_serial;		/* serial and port the last one named */
	unsigned int ident_port;
	uint64_t nak_tx;		/* remote requests this device refused (bad key, access) */
	uint64_t nak_rx;		/* refusals this device received */
	/* Failover (Documentation/hw/fabric.rst, "Failover"). */
	uint64_t failovers;		/* collectives routed around this port, DOWN */
	uint64_t relayed;		/* relayed chunks sent on out of this port */
	uint64_t resent;		/* chunks re-sent the other way as this port went DOWN */
	uint64_t relay_drops;		/* relayed chunks in on this port with no way on */
	uint32_t lat_ns;		/* modeled latency: the chip's link + fabric_lat_ns */
	uint32_t loss_ppm;		/* gaps the peer named per frame sent, last window */
	uint32_t fo_state;		/* MAIA_FPORT_FO_DOWN | _LATENCY | _LOSS */
	/*
	 * DATA frames lent with their data in this device's memory
	 * (MAIA_FABRIC_F_REF), and received frames with the mark that were a
	 * copy or not lent by a device of this process: dropped.
	 */
	uint64_t tx_ref;
	uint64_t rx_ref_drops;
};
/* 0, or -EINVAL if port >= fabric_ports. May be called from any thread. */
int maia_sim_fabric_port_info(struct maia_sim *sim, unsigned int port,
			      struct maia_sim_fabric_port_info *info);

#endif /* MAIA_SIM_H */
