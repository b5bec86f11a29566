// SPDX-License-Identifier: MIT
/* Fabric: ports, windows, and the fabric command builders (driver 1.3). */
#include <errno.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <drm/maia_accel.h>

#include "maia/hw/cmd.h"
#include "maia/hw/mmu.h"
#include "maia/hw/regs.h"

#include "internal.h"

MAIA_EXPORT int maia_fabric_ports(struct maia_device *dev, unsigned int *ports, uint64_t *serial)
{
	uint64_t n = 0, s = 0;
	int err;

	maia_error_clear();
	if (!dev || !ports)
		return maia_error(-EINVAL, "maia_fabric_ports: NULL argument");
	/* A driver before 1.3 does not know the parameters: no fabric. */
	err = maia_query(dev, DRM_MAIA_PARAM_FABRIC_PORTS, &n);
	if (err && err != -EINVAL)
		return err;
	if (n) {
		err = maia_query(dev, DRM_MAIA_PARAM_FABRIC_SERIAL, &s);
		if (err)
			return err;
	}
	maia_error_clear();
	*ports = (unsigned int)n;
	if (serial)
		*serial = s;
	return 0;
}

MAIA_EXPORT int maia_fabric_port(struct maia_device *dev, unsigned int port,
				 struct maia_fabric_port *info)
{
	struct drm_maia_fabric_port p = { .port = port };
	int err;

	maia_error_clear();
	if (!dev || !info)
		return maia_error(-EINVAL, "maia_fabric_port: NULL argument");
	err = maia_ioctl(dev, DRM_IOCTL_MAIA_FABRIC_PORT, &p);
	if (err == -ENODEV)
		return maia_error(err, "maia_fabric_port: the device has no fabric");
	if (err == -EINVAL)
		return maia_error(err, "maia_fabric_port: no port %u on this device", port);
	if (err)
		return maia_error(err, "maia_fabric_port: DRM_IOCTL_MAIA_FABRIC_PORT failed");
	*info = (struct maia_fabric_port){
		.up = p.flags & DRM_MAIA_FABRIC_PORT_UP,
		.peer_serial = p.peer_serial,
		.peer_port = p.peer_port,
		.mtu = p.mtu,
		.tx_frames = p.tx_frames,
		.tx_bytes = p.tx_bytes,
		.rx_frames = p.rx_frames,
		.rx_bytes = p.rx_bytes,
		.retransmits = p.retransmits,
		.rx_drops = p.rx_drops,
		.nak_tx = p.nak_tx,
		.nak_rx = p.nak_rx,
		.tx_errors = p.tx_errors,
		.injected_drops = p.injected_drops,
		.link_ups = p.link_ups,
		.link_downs = p.link_downs,
		.dead_peer = p.dead_peer,
	};
	return 0;
}

MAIA_EXPORT int maia_fabric_port_gaps(struct maia_device *dev, unsigned int port,
				      struct maia_fabric_port_gaps *gaps)
{
	struct drm_maia_fabric_port p = { .port = port };
	uint64_t rev = 0;
	int err;

	maia_error_clear();
	if (!dev || !gaps)
		return maia_error(-EINVAL, "maia_fabric_port_gaps: NULL argument");
	if (dev->driver_minor < 6)
		return maia_error(-EOPNOTSUPP, "maia_fabric_port_gaps: driver minor %d has no "
				  "gap counters (6 has)", dev->driver_minor);
	err = maia_query(dev, DRM_MAIA_PARAM_REVISION, &rev);
	if (err)
		return maia_error(err, "maia_fabric_port_gaps: DRM_MAIA_PARAM_REVISION failed");
	/* Minor revisions add registers (the major is the driver's own). */
	if ((rev & 0xff) < (MAIA_HW_REVISION_LINK_NAKS & 0xff))
		return maia_error(-EOPNOTSUPP, "maia_fabric_port_gaps: hardware revision 0x%04llx "
				  "has no gap counters (0x%04x has)", (unsigned long long)rev,
				  MAIA_HW_REVISION_LINK_NAKS);
	err = maia_ioctl(dev, DRM_IOCTL_MAIA_FABRIC_PORT, &p);
	if (err == -ENODEV)
		return maia_error(err, "maia_fabric_port_gaps: the device has no fabric");
	if (err == -EINVAL)
		return maia_error(err, "maia_fabric_port_gaps: no port %u on this device", port);
	if (err)
		return maia_error(err, "maia_fabric_port_gaps: DRM_IOCTL_MAIA_FABRIC_PORT failed");
	gaps->link_nak_tx = p.link_nak_tx;
	gaps->rx_held = p.rx_held;
	return 0;
}

MAIA_EXPORT int maia_fabric_window_open(struct maia_bo *bo, uint64_t offset, uint64_t size,
					uint32_t access, uint32_t *key)
{
	struct drm_maia_fabric_window w = { .op = DRM_MAIA_FABRIC_WINDOW_OPEN };
	int err;

	maia_error_clear();
	if (!bo || !key)
		return maia_error(-EINVAL, "maia_fabric_window_open: NULL argument");
	if (!bo->va)
		return maia_error(-EINVAL, "maia_fabric_window_open: the BO is not mapped on the "
				  "device");
	if (!access || (access & ~(MAIA_FABRIC_REMOTE_READ | MAIA_FABRIC_REMOTE_WRITE)))
		return maia_error(-EINVAL, "maia_fabric_window_open: access %#x is not a "
				  "combination of MAIA_FABRIC_REMOTE_READ and _WRITE", access);
	if (!size || (offset | size) % MAIA_PAGE_SIZE || offset > bo->size ||
	    size > bo->size - offset)
		return maia_error(-EINVAL, "maia_fabric_window_open: [%#llx, +%#llx) is not a "
				  "page-aligned, nonempty range of the %#llx-byte BO",
				  (unsigned long long)offset, (unsigned long long)size,
				  (unsigned long long)bo->size);
	w.va = bo->va + offset;
	w.size = size;
	if (access & MAIA_FABRIC_REMOTE_READ)
		w.access |= DRM_MAIA_FABRIC_REMOTE_READ;
	if (access & MAIA_FABRIC_REMOTE_WRITE)
		w.access |= DRM_MAIA_FABRIC_REMOTE_WRITE;
	err = maia_ioctl(bo->dev, DRM_IOCTL_MAIA_FABRIC_WINDOW, &w);
	if (err == -ENOSPC)
		return maia_error(err, "maia_fabric_window_open: no window left (at most %d per "
				  "device file, and the device's table is shared)",
				  DRM_MAIA_MAX_FABRIC_WINDOWS);
	if (err == -ENODEV)
		return maia_error(err, "maia_fabric_window_open: the device has no fabric");
	if (err)
		return maia_error(err, "maia_fabric_window_open: DRM_IOCTL_MAIA_FABRIC_WINDOW "
				  "failed");
	*key = w.key;
	return 0;
}

MAIA_EXPORT int maia_fabric_window_close(struct maia_device *dev, uint32_t key)
{
	struct drm_maia_fabric_window w = { .op = DRM_MAIA_FABRIC_WINDOW_CLOSE, .key = key };
	int err;

	maia_error_clear();
	if (!dev)
		return maia_error(-EINVAL, "maia_fabric_window_close: NULL device");
	err = maia_ioctl(dev, DRM_IOCTL_MAIA_FABRIC_WINDOW, &w);
	if (err == -ENOENT)
		return maia_error(err, "maia_fabric_window_close: no open window has key %#x", key);
	if (err)
		return maia_error(err, "maia_fabric_window_close: DRM_IOCTL_MAIA_FABRIC_WINDOW "
				  "failed");
	return 0;
}

static int fabric_write(struct maia_cmdbuf *cb, uint32_t port, uint32_t key,
			uint64_t remote_offset, uint64_t src_va, uint64_t size, bool sem,
			uint32_t sem_index, uint32_t sem_value)
{
	struct maia_cmd_fabric_write c = {
		.hdr = { .opcode = MAIA_OP_FABRIC_WRITE, .size = sizeof(c),
			 .flags = sem ? MAIA_FABRIC_WRITE_SEM : 0 },
		.port = port, .key = key, .remote_offset = remote_offset,
		.local_addr = src_va, .size = size,
		.sem_index = sem ? sem_index : 0, .sem_value = sem ? sem_value : 0,
	};

	maia_error_clear();
	if (sem && sem_index >= MAIA_NUM_SEMAPHORES)
		return maia_error(-EINVAL, "maia_cmd_fabric_write_sem: semaphore %u, the device "
				  "has %u", sem_index, MAIA_NUM_SEMAPHORES);
	return maia_cmd_raw(cb, &c);
}

MAIA_EXPORT int maia_cmd_fabric_write(struct maia_cmdbuf *cb, uint32_t port, uint32_t key,
				      uint64_t remote_offset, uint64_t src_va, uint64_t size)
{
	return fabric_write(cb, port, key, remote_offset, src_va, size, false, 0, 0);
}

MAIA_EXPORT int maia_cmd_fabric_write_sem(struct maia_cmdbuf *cb, uint32_t port, uint32_t key,
					  uint64_t remote_offset, uint64_t src_va, uint64_t size,
					  uint32_t sem_index, uint32_t sem_value)
{
	return fabric_write(cb, port, key, remote_offset, src_va, size, true, sem_index,
			    sem_value);
}

MAIA_EXPORT int maia_cmd_fabric_read(struct maia_cmdbuf *cb, uint32_t port, uint32_t key,
				     uint64_t remote_offset, uint64_t dst_va, uint64_t size)
{
	struct maia_cmd_fabric_read c = {
		.hdr = { .opcode = MAIA_OP_FABRIC_READ, .size = sizeof(c) },
		.port = port, .key = key, .remote_offset = remote_offset,
		.local_addr = dst_va, .size = size,
	};

	return maia_cmd_raw(cb, &c);
}

/*
 * Appends *c with its header made (the opcode, the size, MAIA_COLL_F_REACH
 * of its flags kept): for callers whose rank, ranks and collective are
 * valid (maia_cmd_collective() checks them; a communicator did at its
 * creation). cb not NULL.
 */
int maia_cmd_collective_put(struct maia_cmdbuf *cb, struct maia_cmd_collective *c)
{
	c->hdr = (struct maia_cmd_header){ .opcode = MAIA_OP_COLLECTIVE, .size = sizeof(*c),
					   .flags = c->hdr.flags & MAIA_COLL_F_REACH };
	return maia_cmdbuf_put(cb, c);
}

MAIA_EXPORT int maia_cmd_collective(struct maia_cmdbuf *cb, const struct maia_cmd_collective *c)
{
	struct maia_cmd_collective cmd;

	maia_error_clear();
	if (!c || !cb)
		return maia_error(-EINVAL, "maia_cmd_collective: NULL command or command buffer");
	cmd = *c;
	if (!cmd.nranks || cmd.nranks > MAIA_COLL_MAX_RANKS || cmd.rank >= cmd.nranks)
		return maia_error(-EINVAL, "maia_cmd_collective: rank %u of %u ranks (1..%u)",
				  cmd.rank, cmd.nranks, MAIA_COLL_MAX_RANKS);
	if (cmd.coll < MAIA_COLL_ALL_REDUCE || cmd.coll > MAIA_COLL_ALL_TO_ALL)
		return maia_error(-EINVAL, "maia_cmd_collective: unknown collective %u", cmd.coll);
	return maia_cmd_collective_put(cb, &cmd);
}

/* One number from fabric/portN/<name> of a PCI device; -1 if unreadable. */
static int fabric_sysfs_u64(const char *dir, const char *name, uint64_t *v)
{
	char path[512], buf[64];
	FILE *f;
	int ok;

	snprintf(path, sizeof(path), "%s/%s", dir, name);
	f = fopen(path, "re");
	if (!f)
		return -1;
	ok = fgets(buf, sizeof(buf), f) != NULL;
	fclose(f);
	if (!ok)
		return -1;
	if (!strncmp(buf, "up", 2) || !strncmp(buf, "down", 4)) {
		*v = buf[0] == 'u';
		return 0;
	}
	*v = strtoull(buf, NULL, 0);
	return 0;
}

/*
 * The sysfs directory of a port (fabric/portN of the PCI device) in dir, and
 * its state (1 up) in *up; the error set as fn's.
 */
static int fabric_port_dir(const char *fn, const char *pci_address, unsigned int port,
			   char *dir, size_t size, uint64_t *up)
{
	struct maia_device_entry e;
	int err = maia_find_pci(pci_address, &e);

	if (err)
		return maia_error(err, "%s: no Maia device at %s", fn, pci_address);
	snprintf(dir, size, "%s/bus/pci/devices/%s/fabric/port%u", maia_sysfs_root(),
		 e.pci_address, port);
	if (fabric_sysfs_u64(dir, "state", up))
		return maia_error(-ENOENT, "%s: %s has no fabric port %u", fn, e.pci_address,
				  port);
	return 0;
}

MAIA_EXPORT int maia_fabric_read(const char *pci_address, unsigned int port,
				 struct maia_fabric_port *info)
{
	static const struct {
		const char *name;
		size_t offset;
		bool wide;
	} files[] = {
#define F64(f) { #f, offsetof(struct maia_fabric_port, f), true }
#define F32(f) { #f, offsetof(struct maia_fabric_port, f), false }
		F64(peer_serial), F32(peer_port), F32(mtu), F64(tx_frames), F64(tx_bytes),
		F64(rx_frames), F64(rx_bytes), F64(retransmits), F64(rx_drops), F64(nak_tx),
		F64(nak_rx), F64(tx_errors), F64(injected_drops), F32(link_ups),
		F32(link_downs), F32(dead_peer),
#undef F64
#undef F32
	};
	struct maia_fabric_port out = { 0 };
	char dir[384];
	uint64_t v;
	size_t i;
	int err;

	maia_error_clear();
	if (!pci_address || !info)
		return maia_error(-EINVAL, "maia_fabric_read: NULL argument");
	err = fabric_port_dir("maia_fabric_read", pci_address, port, dir, sizeof(dir), &v);
	if (err)
		return err;
	out.up = v;
	for (i = 0; i < sizeof(files) / sizeof(files[0]); i++) {
		if (fabric_sysfs_u64(dir, files[i].name, &v))
			return maia_error(-EIO, "maia_fabric_read: cannot read %s/%s", dir,
					  files[i].name);
		if (files[i].wide)
			memcpy((char *)&out + files[i].offset, &v, sizeof(uint64_t));
		else
			*(uint32_t *)((char *)&out + files[i].offset) = (uint32_t)v;
	}
	*info = out;
	return 0;
}

/* fabric/portN/failover_state: "ok", or words among down, latency, loss. */
static int fabric_sysfs_fo_state(const char *dir, uint32_t *state)
{
	char path[512], buf[64];
	FILE *f;
	int ok;

	snprintf(path, sizeof(path), "%s/failover_state", dir);
	f = fopen(path, "re");
	if (!f)
		return -1;
	ok = fgets(buf, sizeof(buf), f) != NULL;
	fclose(f);
	if (!ok)
		return -1;
	*state = (strstr(buf, "down") ? MAIA_FABRIC_FO_DOWN : 0) |
		 (strstr(buf, "latency") ? MAIA_FABRIC_FO_LATENCY : 0) |
		 (strstr(buf, "loss") ? MAIA_FABRIC_FO_LOSS : 0);
	return 0;
}

MAIA_EXPORT int maia_fabric_read_failover(const char *pci_address, unsigned int port,
					  struct maia_fabric_failover *fo)
{
	uint64_t v[8];
	static const char *const names[8] = {
		"failovers", "relayed", "resent", "relay_drops", "latency_ns", "loss_ppm",
		"../failover_latency_ns", "../failover_loss_ppm",
	};
	char dir[384];
	int err;

	maia_error_clear();
	if (!pci_address || !fo)
		return maia_error(-EINVAL, "maia_fabric_read_failover: NULL argument");
	err = fabric_port_dir("maia_fabric_read_failover", pci_address, port, dir, sizeof(dir),
			      &v[0]);
	if (err)
		return err;
	/* The driver shows the files only for a device that has failover. */
	for (unsigned int i = 0; i < 8; i++)
		if (fabric_sysfs_u64(dir, names[i], &v[i]))
			return maia_error(-EOPNOTSUPP, "maia_fabric_read_failover: %s has no %s "
					  "(hardware 1.10 has)", dir, names[i]);
	if (fabric_sysfs_fo_state(dir, &fo->state))
		return maia_error(-EOPNOTSUPP, "maia_fabric_read_failover: %s has no "
				  "failover_state (hardware 1.10 has)", dir);
	fo->failovers = (uint32_t)v[0];
	fo->relayed = v[1];
	fo->resent = (uint32_t)v[2];
	fo->relay_drops = (uint32_t)v[3];
	fo->latency_ns = (uint32_t)v[4];
	fo->loss_ppm = (uint32_t)v[5];
	fo->threshold_latency_ns = (uint32_t)v[6];
	fo->threshold_loss_ppm = (uint32_t)v[7];
	return 0;
}

MAIA_EXPORT int maia_fabric_read_spurious_rto(const char *pci_address, unsigned int port,
					      uint32_t *count)
{
	uint64_t v;
	char dir[384];
	int err;

	maia_error_clear();
	if (!pci_address || !count)
		return maia_error(-EINVAL, "maia_fabric_read_spurious_rto: NULL argument");
	err = fabric_port_dir("maia_fabric_read_spurious_rto", pci_address, port, dir,
			      sizeof(dir), &v);
	if (err)
		return err;
	/* The driver shows the file only for a device that has the register. */
	if (fabric_sysfs_u64(dir, "spurious_rto", &v))
		return maia_error(-EOPNOTSUPP, "maia_fabric_read_spurious_rto: %s has no "
				  "spurious_rto (hardware 1.12 has)", dir);
	*count = (uint32_t)v;
	return 0;
}

MAIA_EXPORT int maia_fabric_read_gaps(const char *pci_address, unsigned int port,
				      struct maia_fabric_port_gaps *gaps)
{
	uint64_t v, naks, held;
	char dir[384];
	int err;

	maia_error_clear();
	if (!pci_address || !gaps)
		return maia_error(-EINVAL, "maia_fabric_read_gaps: NULL argument");
	err = fabric_port_dir("maia_fabric_read_gaps", pci_address, port, dir, sizeof(dir), &v);
	if (err)
		return err;
	/* The driver shows the files only for a device that has the counters. */
	if (fabric_sysfs_u64(dir, "link_nak_tx", &naks) || fabric_sysfs_u64(dir, "rx_held", &held))
		return maia_error(-EOPNOTSUPP, "maia_fabric_read_gaps: %s has no gap counters "
				  "(driver minor 6 and hardware 1.6 have)", dir);
	gaps->link_nak_tx = naks;
	gaps->rx_held = held;
	return 0;
}
