// SPDX-License-Identifier: GPL-2.0-only
/*
 * The fabric between two devices cabled as a ring (qemu/run-guest --devices 2
 * --fabric ring: device 0's port 0 <-> device 1's port 1, device 1's port 0
 * <-> device 0's port 1): ports and their counters, windows (open, close,
 * bad arguments), remote writes and reads that land exactly where the window
 * says, keys that must be refused (closed, forged, of a closed file, of an
 * unmapped range, beyond the window), and a peer whose firmware dies during
 * a remote write: the job fails with FABRIC_LINK, nothing hangs, and the
 * link works again once the driver has recovered the peer. A 2-rank
 * all-reduce whose late rank faults on its receive buffer or report address
 * (a case that once crashed QEMU): the fault stays that rank's, and the next
 * all-reduce is exact. Skipped without two devices with fabric ports.
 */
#include <maia/hw/dtype.h>

#include "maia_job_ksft.h"
#include "kselftest_harness.h"

#define VA_DATA		0x100000000ull
#define VA_CMD		0x200000000ull
#define DATA_SIZE	(4 * KSFT_MIB)
#define CMD_SIZE	(64 * 1024ull)
#define JOB_NS		(60 * NS_PER_SEC)

FIXTURE(fabric) {
	struct maia_node nodes[MAIA_MAX_DEVICES];
	int fd[2];
	__u64 serial[2];
	struct kbo data[2], cmd[2];
	struct kcmd cb[2];
};

static int port_info(int fd, __u32 port, struct drm_maia_fabric_port *p)
{
	memset(p, 0, sizeof(*p));
	p->port = port;
	return ioctl(fd, DRM_IOCTL_MAIA_FABRIC_PORT, p) ? -errno : 0;
}

static int window(int fd, __u32 op, __u32 access, __u64 va, __u64 size, __u32 *key)
{
	struct drm_maia_fabric_window w = {
		.op = op, .access = access, .va = va, .size = size, .key = key ? *key : 0,
	};

	if (op == DRM_MAIA_FABRIC_WINDOW_OPEN)
		w.key = 0;
	if (ioctl(fd, DRM_IOCTL_MAIA_FABRIC_WINDOW, &w))
		return -errno;
	if (key)
		*key = w.key;
	return 0;
}

/* Waits (bounded) until port @port of @fd is up; its info in *p. */
static int wait_up(int fd, __u32 port, struct drm_maia_fabric_port *p)
{
	int i;

	for (i = 0; i < 600; i++) {
		if (port_info(fd, port, p))
			return -1;
		if (p->flags & DRM_MAIA_FABRIC_PORT_UP)
			return 0;
		maia_sleep_ms(50);
	}
	return -1;
}

FIXTURE_SETUP(fabric)
{
	struct drm_maia_fabric_port p;
	__u64 ports;
	int i, n;

	self->fd[0] = self->fd[1] = -1;
	n = maia_find_nodes(self->nodes, MAIA_MAX_DEVICES);
	if (n < 2)
		SKIP(return, "%d maia device(s); run with qemu/run-guest --devices 2 --fabric ring",
		     n);
	for (i = 0; i < 2; i++) {
		self->fd[i] = maia_open_node(&self->nodes[i]);
		ASSERT_LE(0, self->fd[i]);
		if (maia_get_param(self->fd[i], DRM_MAIA_PARAM_FABRIC_PORTS, &ports) || ports < 2)
			SKIP(return, "device %d has no fabric (or fewer than 2 ports)", i);
		ASSERT_EQ(0, maia_get_param(self->fd[i], DRM_MAIA_PARAM_FABRIC_SERIAL,
					    &self->serial[i]));
	}
	/* The ring: device 0 port 0 <-> device 1 port 1, and back. */
	for (i = 0; i < 2; i++) {
		if (wait_up(self->fd[i], 0, &p))
			SKIP(return, "device %d port 0 is not cabled (--fabric ring)", i);
		ASSERT_EQ(self->serial[!i], p.peer_serial);
		ASSERT_EQ(1, p.peer_port);
	}
	for (i = 0; i < 2; i++) {
		ASSERT_EQ(0, kbo_create(self->fd[i], DATA_SIZE, DRM_MAIA_BO_HOST, VA_DATA,
					&self->data[i]));
		ASSERT_EQ(0, kbo_create(self->fd[i], CMD_SIZE, DRM_MAIA_BO_HOST, VA_CMD,
					&self->cmd[i]));
		self->cb[i] = (struct kcmd){ .bo = &self->cmd[i] };
	}
}

FIXTURE_TEARDOWN(fabric)
{
	int i;

	for (i = 0; i < 2; i++) {
		if (self->fd[i] < 0)
			continue;
		kbo_destroy(self->fd[i], &self->cmd[i]);
		kbo_destroy(self->fd[i], &self->data[i]);
		close(self->fd[i]);
	}
}

/* One job on device @d with a remote write or read; the WAIT result in *w. */
static int remote_op(struct __test_metadata *_metadata, FIXTURE_DATA(fabric) *self, int d,
		     __u16 opcode, __u32 port, __u32 key, __u64 roff, __u64 local, __u64 size,
		     struct drm_maia_wait *w)
{
	struct kcmd *cb = &self->cb[d];
	__u64 seqno = 0;
	int err;

	if (cb->used + 256 > CMD_SIZE)
		cb->start = cb->used = 0;
	if (opcode == MAIA_OP_FABRIC_WRITE) {
		struct maia_cmd_fabric_write *c = kcmd_add(cb, opcode, sizeof(*c));

		c->port = port;
		c->key = key;
		c->remote_offset = roff;
		c->local_addr = local;
		c->size = size;
	} else {
		struct maia_cmd_fabric_read *c = kcmd_add(cb, opcode, sizeof(*c));

		c->port = port;
		c->key = key;
		c->remote_offset = roff;
		c->local_addr = local;
		c->size = size;
	}
	err = kcmd_submit(self->fd[d], cb, NULL, &seqno);
	if (err)
		return err;
	return kwait(self->fd[d], seqno, JOB_NS, w);
}

TEST_F(fabric, ports_and_sysfs)
{
	struct drm_maia_fabric_port p;
	char path[PATH_MAX], buf[64];

	ASSERT_EQ(0, port_info(self->fd[0], 0, &p));
	EXPECT_TRUE(p.flags & DRM_MAIA_FABRIC_PORT_UP);
	EXPECT_LT(0, p.mtu);
	EXPECT_LT(0, p.tx_frames);
	EXPECT_LT(0, p.rx_frames);
	EXPECT_LE(1, p.link_ups);
	EXPECT_EQ(-EINVAL, port_info(self->fd[0], 1000, &p));
	p.port = 0;
	p.pad = 1;
	EXPECT_NE(0, ioctl(self->fd[0], DRM_IOCTL_MAIA_FABRIC_PORT, &p));
	EXPECT_EQ(EINVAL, errno);

	snprintf(path, sizeof(path), "/sys/class/accel/accel%d/device/fabric/port0/state",
		 self->nodes[0].minor);
	ASSERT_EQ(0, maia_read_file(path, buf, sizeof(buf)));
	EXPECT_EQ(0, strncmp(buf, "up", 2));
	snprintf(path, sizeof(path), "/sys/class/accel/accel%d/device/fabric/port0/peer_serial",
		 self->nodes[0].minor);
	ASSERT_EQ(0, maia_read_file(path, buf, sizeof(buf)));
	EXPECT_EQ(self->serial[1], strtoull(buf, NULL, 0));
	snprintf(path, sizeof(path), "/sys/class/accel/accel%d/device/fabric_serial",
		 self->nodes[1].minor);
	ASSERT_EQ(0, maia_read_file(path, buf, sizeof(buf)));
	EXPECT_EQ(self->serial[1], strtoull(buf, NULL, 0));
}

/*
 * Minor 6: the gap counters (hardware 1.6) in the ioctl and in sysfs, and
 * the ioctl's first size (minor 3, 120 bytes), as older userspace passes
 * it, still answered without a byte written past it.
 */
TEST_F(fabric, gap_counters_and_the_old_struct_size)
{
	const unsigned long old_cmd = _IOC(_IOC_READ | _IOC_WRITE, DRM_IOCTL_BASE,
					   DRM_COMMAND_BASE + DRM_MAIA_FABRIC_PORT, 120);
	struct drm_maia_fabric_port before, after;
	unsigned char raw[sizeof(struct drm_maia_fabric_port)];
	const char *name[] = { "link_nak_tx", "rx_held" };
	char path[PATH_MAX], buf[64];
	__u64 v[2];
	int i;

	ASSERT_EQ(136, sizeof(struct drm_maia_fabric_port));
	ASSERT_EQ(0, port_info(self->fd[0], 1, &before));
	for (i = 0; i < 2; i++) {
		snprintf(path, sizeof(path), "/sys/class/accel/accel%d/device/fabric/port1/%s",
			 self->nodes[0].minor, name[i]);
		ASSERT_EQ(0, maia_read_file(path, buf, sizeof(buf))) TH_LOG("%s", path);
		v[i] = strtoull(buf, NULL, 0);
	}
	ASSERT_EQ(0, port_info(self->fd[0], 1, &after));
	EXPECT_LE(before.link_nak_tx, v[0]);
	EXPECT_GE(after.link_nak_tx, v[0]);
	EXPECT_LE(before.rx_held, v[1]);
	EXPECT_GE(after.rx_held, v[1]);

	memset(raw, 0xa5, sizeof(raw));
	memset(raw, 0, 120);			/* port 0, flags 0, pad 0 */
	ASSERT_EQ(0, ioctl(self->fd[0], old_cmd, raw)) TH_LOG("errno %d", errno);
	memcpy(&after, raw, 120);
	EXPECT_LE(1, after.link_ups);
	EXPECT_LT(0, after.tx_frames);
	for (i = 120; i < (int)sizeof(raw); i++)
		EXPECT_EQ(0xa5, raw[i]) TH_LOG("byte %d written", i);
}

TEST_F(fabric, window_bad_arguments)
{
	struct drm_maia_fabric_window w;
	__u32 key = 0;

	EXPECT_EQ(-EINVAL, window(self->fd[1], DRM_MAIA_FABRIC_WINDOW_OPEN, 0, VA_DATA,
				  KSFT_PAGE, &key)) TH_LOG("no access");
	EXPECT_EQ(-EINVAL, window(self->fd[1], DRM_MAIA_FABRIC_WINDOW_OPEN, 4, VA_DATA,
				  KSFT_PAGE, &key)) TH_LOG("unknown access bit");
	EXPECT_EQ(-EINVAL, window(self->fd[1], DRM_MAIA_FABRIC_WINDOW_OPEN,
				  DRM_MAIA_FABRIC_REMOTE_WRITE, VA_DATA + 8, KSFT_PAGE, &key));
	EXPECT_EQ(-EINVAL, window(self->fd[1], DRM_MAIA_FABRIC_WINDOW_OPEN,
				  DRM_MAIA_FABRIC_REMOTE_WRITE, VA_DATA, 0, &key));
	EXPECT_EQ(-ENOENT, window(self->fd[1], DRM_MAIA_FABRIC_WINDOW_OPEN,
				  DRM_MAIA_FABRIC_REMOTE_WRITE, VA_DATA, DATA_SIZE + KSFT_PAGE, &key))
		TH_LOG("beyond the mapping");
	EXPECT_EQ(-ENOENT, window(self->fd[1], DRM_MAIA_FABRIC_WINDOW_OPEN,
				  DRM_MAIA_FABRIC_REMOTE_WRITE, 0x700000000ull, KSFT_PAGE, &key))
		TH_LOG("nothing mapped there");
	key = 0x1234;
	EXPECT_EQ(-ENOENT, window(self->fd[1], DRM_MAIA_FABRIC_WINDOW_CLOSE, 0, 0, 0, &key));
	memset(&w, 0, sizeof(w));
	w.op = 7;
	EXPECT_NE(0, ioctl(self->fd[1], DRM_IOCTL_MAIA_FABRIC_WINDOW, &w));
	EXPECT_EQ(EINVAL, errno);
	memset(&w, 0, sizeof(w));
	w.op = DRM_MAIA_FABRIC_WINDOW_OPEN;
	w.access = DRM_MAIA_FABRIC_REMOTE_WRITE;
	w.va = VA_DATA;
	w.size = KSFT_PAGE;
	w.pad = 1;
	EXPECT_NE(0, ioctl(self->fd[1], DRM_IOCTL_MAIA_FABRIC_WINDOW, &w));
	EXPECT_EQ(EINVAL, errno);
}

TEST_F(fabric, remote_write_and_read_land_in_the_window)
{
	unsigned char *src = self->data[0].cpu, *dst = self->data[1].cpu;
	struct drm_maia_wait w;
	__u32 key = 0, i;

	for (i = 0; i < DATA_SIZE; i++) {
		src[i] = (unsigned char)(i * 7 + 3);
		dst[i] = 0xee;
	}
	/* Window: the second MiB of device 1's buffer. */
	ASSERT_EQ(0, window(self->fd[1], DRM_MAIA_FABRIC_WINDOW_OPEN,
			    DRM_MAIA_FABRIC_REMOTE_WRITE | DRM_MAIA_FABRIC_REMOTE_READ,
			    VA_DATA + KSFT_MIB, KSFT_MIB, &key));
	/* 100003 bytes (odd) to window offset 4097 through device 0's port 0. */
	ASSERT_EQ(0, remote_op(_metadata, self, 0, MAIA_OP_FABRIC_WRITE, 0, key, 4097,
			       VA_DATA + 5, 100003, &w));
	ASSERT_EQ(DRM_MAIA_JOB_OK, w.status) TH_LOG("device status %u", w.device_status);
	for (i = 0; i < DATA_SIZE; i++) {
		unsigned char want = i >= KSFT_MIB + 4097 && i < KSFT_MIB + 4097 + 100003 ?
				     src[i - KSFT_MIB - 4097 + 5] : 0xee;

		if (dst[i] != want) {
			EXPECT_EQ(want, dst[i]) TH_LOG("byte %u", i);
			break;
		}
	}
	/* Read it back into device 0's third MiB. */
	memset(src + 2 * KSFT_MIB, 0, KSFT_MIB);
	ASSERT_EQ(0, remote_op(_metadata, self, 0, MAIA_OP_FABRIC_READ, 0, key, 4097,
			       VA_DATA + 2 * KSFT_MIB, 100003, &w));
	ASSERT_EQ(DRM_MAIA_JOB_OK, w.status) TH_LOG("device status %u", w.device_status);
	EXPECT_EQ(0, memcmp(src + 2 * KSFT_MIB, src + 5, 100003));
	EXPECT_EQ(0, window(self->fd[1], DRM_MAIA_FABRIC_WINDOW_CLOSE, 0, 0, 0, &key));
}

/* Every refused access fails the sender's job with FABRIC_KEY and lands nothing. */
TEST_F(fabric, refused_keys)
{
	unsigned char *dst = self->data[1].cpu;
	struct drm_maia_fabric_port before, after;
	__u32 key = 0, ro_key = 0, other_key = 0, k2 = 0;
	struct drm_maia_wait w;
	struct kbo obo, b2;
	int other, i;

	memset(dst, 0x5a, DATA_SIZE);
	ASSERT_EQ(0, port_info(self->fd[0], 0, &before));
	ASSERT_EQ(0, window(self->fd[1], DRM_MAIA_FABRIC_WINDOW_OPEN, DRM_MAIA_FABRIC_REMOTE_WRITE,
			    VA_DATA, KSFT_MIB, &key));
	ASSERT_EQ(0, window(self->fd[1], DRM_MAIA_FABRIC_WINDOW_OPEN, DRM_MAIA_FABRIC_REMOTE_READ,
			    VA_DATA + KSFT_MIB, KSFT_MIB, &ro_key));

	/* Beyond the window's end. */
	ASSERT_EQ(0, remote_op(_metadata, self, 0, MAIA_OP_FABRIC_WRITE, 0, key, KSFT_MIB - 8,
			       VA_DATA, 16, &w));
	EXPECT_EQ(DRM_MAIA_JOB_ERROR, w.status);
	EXPECT_EQ(DRM_MAIA_DEVICE_FABRIC_KEY, w.device_status);
	/* A write into a read-only window. */
	ASSERT_EQ(0, remote_op(_metadata, self, 0, MAIA_OP_FABRIC_WRITE, 0, ro_key, 0,
			       VA_DATA, 64, &w));
	EXPECT_EQ(DRM_MAIA_DEVICE_FABRIC_KEY, w.device_status);
	/* A forged key: the right slot, another generation. */
	ASSERT_EQ(0, remote_op(_metadata, self, 0, MAIA_OP_FABRIC_WRITE, 0,
			       key + (1u << 8), 0, VA_DATA, 64, &w));
	EXPECT_EQ(DRM_MAIA_DEVICE_FABRIC_KEY, w.device_status);
	/* A closed window. */
	ASSERT_EQ(0, window(self->fd[1], DRM_MAIA_FABRIC_WINDOW_CLOSE, 0, 0, 0, &key));
	ASSERT_EQ(0, remote_op(_metadata, self, 0, MAIA_OP_FABRIC_WRITE, 0, key, 0,
			       VA_DATA, 64, &w));
	EXPECT_EQ(DRM_MAIA_DEVICE_FABRIC_KEY, w.device_status);
	/* The window of a file that was closed. */
	other = maia_open_node(&self->nodes[1]);
	ASSERT_LE(0, other);
	ASSERT_EQ(0, kbo_create(other, KSFT_MIB, DRM_MAIA_BO_HOST, VA_DATA, &obo));
	ASSERT_EQ(0, window(other, DRM_MAIA_FABRIC_WINDOW_OPEN, DRM_MAIA_FABRIC_REMOTE_WRITE,
			    VA_DATA, KSFT_MIB, &other_key));
	munmap(obo.cpu, obo.size);
	close(other);
	ASSERT_EQ(0, remote_op(_metadata, self, 0, MAIA_OP_FABRIC_WRITE, 0, other_key, 0,
			       VA_DATA, 64, &w));
	EXPECT_EQ(DRM_MAIA_DEVICE_FABRIC_KEY, w.device_status);
	/* The window of a mapping that was unmapped. */
	ASSERT_EQ(0, kbo_create(self->fd[1], KSFT_MIB, DRM_MAIA_BO_HOST, 0x300000000ull, &b2));
	ASSERT_EQ(0, window(self->fd[1], DRM_MAIA_FABRIC_WINDOW_OPEN, DRM_MAIA_FABRIC_REMOTE_WRITE,
			    0x300000000ull, KSFT_MIB, &k2));
	kbo_destroy(self->fd[1], &b2);
	ASSERT_EQ(0, remote_op(_metadata, self, 0, MAIA_OP_FABRIC_WRITE, 0, k2, 0, VA_DATA, 64,
			       &w));
	EXPECT_EQ(DRM_MAIA_DEVICE_FABRIC_KEY, w.device_status);
	EXPECT_EQ(-ENOENT, window(self->fd[1], DRM_MAIA_FABRIC_WINDOW_CLOSE, 0, 0, 0, &k2));
	/* A port that does not exist. */
	ASSERT_EQ(0, remote_op(_metadata, self, 0, MAIA_OP_FABRIC_WRITE, 11, ro_key, 0,
			       VA_DATA, 64, &w));
	EXPECT_EQ(DRM_MAIA_JOB_ERROR, w.status);
	EXPECT_TRUE(w.device_status == DRM_MAIA_DEVICE_FABRIC_LINK ||
		    w.device_status == DRM_MAIA_DEVICE_BAD_CMD) TH_LOG("%u", w.device_status);

	for (i = 0; i < DATA_SIZE; i++)
		if (dst[i] != 0x5a) {
			EXPECT_EQ(0x5a, dst[i]) TH_LOG("byte %d landed", i);
			break;
		}
	/* The refusals are counted on the sender's port (at least the 5 above). */
	for (i = 0; i < 100; i++) {
		ASSERT_EQ(0, port_info(self->fd[0], 0, &after));
		if (after.nak_rx >= before.nak_rx + 5)
			break;
		maia_sleep_ms(20);
	}
	EXPECT_LE(before.nak_rx + 5, after.nak_rx);
	EXPECT_EQ(0, window(self->fd[1], DRM_MAIA_FABRIC_WINDOW_CLOSE, 0, 0, 0, &ro_key));
}

/*
 * The peer's firmware dies while device 0 streams a remote write to it:
 * device 0's job fails with FABRIC_LINK (the link's keepalive declares the
 * peer dead) instead of hanging; the driver recovers device 1 (heartbeat)
 * and a new write goes through.
 */
TEST_F_TIMEOUT(fabric, peer_dies_during_a_write, 120)
{
	struct drm_maia_fabric_port p;
	struct drm_maia_wait w;
	struct kcmd *cb = &self->cb[0];
	char path[96];
	__u64 seqno = 0;
	__u32 key = 0;
	int i;

	snprintf(path, sizeof(path), "/sys/kernel/debug/accel/%s/inject", self->nodes[1].bdf);
	if (access(path, W_OK))
		SKIP(return, "no %s (debugfs not mounted?)", path);
	ASSERT_EQ(0, window(self->fd[1], DRM_MAIA_FABRIC_WINDOW_OPEN, DRM_MAIA_FABRIC_REMOTE_WRITE,
			    VA_DATA, DATA_SIZE, &key));
	ASSERT_EQ(0, maia_write_file(path, "fw_crash"));
	/* Many writes in one job: one of them meets the dead peer. */
	for (i = 0; i < 64; i++) {
		struct maia_cmd_fabric_write *c = kcmd_add(cb, MAIA_OP_FABRIC_WRITE, sizeof(*c));

		c->port = 0;
		c->key = key;
		c->local_addr = VA_DATA;
		c->size = DATA_SIZE;
	}
	ASSERT_EQ(0, kcmd_submit(self->fd[0], cb, NULL, &seqno));
	ASSERT_EQ(0, kwait(self->fd[0], seqno, 60 * NS_PER_SEC, &w)) TH_LOG("the job hung");
	EXPECT_EQ(DRM_MAIA_JOB_ERROR, w.status);
	EXPECT_TRUE(w.device_status == DRM_MAIA_DEVICE_FABRIC_LINK ||
		    w.device_status == DRM_MAIA_DEVICE_FABRIC_KEY) TH_LOG("%u", w.device_status);

	/* Device 1 is reset by the driver; its windows are gone, the link comes back. */
	ASSERT_EQ(0, wait_up(self->fd[0], 0, &p));
	ASSERT_EQ(0, window(self->fd[1], DRM_MAIA_FABRIC_WINDOW_CLOSE, 0, 0, 0, &key));
	for (i = 0; i < 600; i++) {
		if (!window(self->fd[1], DRM_MAIA_FABRIC_WINDOW_OPEN, DRM_MAIA_FABRIC_REMOTE_WRITE,
			    VA_DATA, DATA_SIZE, &key))
			break;
		maia_sleep_ms(50);
	}
	ASSERT_EQ(0, wait_up(self->fd[0], 0, &p));
	ASSERT_EQ(0, remote_op(_metadata, self, 0, MAIA_OP_FABRIC_WRITE, 0, key, 0, VA_DATA,
			       4096, &w));
	EXPECT_EQ(DRM_MAIA_JOB_OK, w.status) TH_LOG("device status %u", w.device_status);
	EXPECT_LE(1, p.link_downs);
}

/*
 * A collective's rank on one device: its own file (so that its fault stays
 * its own), data (send at VA_DATA, receive at VA_RECV), a read-only buffer
 * at VA_RO, a report at VA_REPORT, and its command buffer.
 */
#define VA_RECV		(VA_DATA + DATA_SIZE / 2)
#define VA_RO		0x300000000ull
#define VA_REPORT	0x400000000ull
#define VA_NONE		0x500000000ull	/* nothing is mapped there */

struct coll_rank {
	int fd;
	struct kbo data, ro, report, cmd;
	struct kcmd cb;
};

static int rank_open(const struct maia_node *node, struct coll_rank *r)
{
	struct drm_maia_bo_create c = { .size = DATA_SIZE / 2, .flags = DRM_MAIA_BO_HOST };
	struct drm_maia_vm_bind b = {
		.op = DRM_MAIA_VM_MAP, .flags = DRM_MAIA_VM_READONLY, .va = VA_RO,
		.size = DATA_SIZE / 2,
	};
	int err;

	memset(r, 0, sizeof(*r));
	r->fd = maia_open_node(node);
	if (r->fd < 0)
		return -errno;
	err = kbo_create(r->fd, DATA_SIZE, DRM_MAIA_BO_HOST, VA_DATA, &r->data);
	if (!err)
		err = kbo_create(r->fd, KSFT_PAGE, DRM_MAIA_BO_HOST, VA_REPORT, &r->report);
	if (!err)
		err = kbo_create(r->fd, CMD_SIZE, DRM_MAIA_BO_HOST, VA_CMD, &r->cmd);
	if (err)
		return err;
	r->cb = (struct kcmd){ .bo = &r->cmd };
	/* The read-only buffer: mapped without device write. */
	if (ioctl(r->fd, DRM_IOCTL_MAIA_BO_CREATE, &c))
		return -errno;
	r->ro.handle = c.handle;
	b.handle = c.handle;
	if (ioctl(r->fd, DRM_IOCTL_MAIA_VM_BIND, &b))
		return -errno;
	r->ro.va = VA_RO;
	r->ro.size = c.size;
	return 0;
}

static void rank_close(struct coll_rank *r)
{
	if (r->fd < 0)
		return;
	kbo_destroy(r->fd, &r->cmd);
	kbo_destroy(r->fd, &r->report);
	kbo_destroy(r->fd, &r->ro);
	kbo_destroy(r->fd, &r->data);
	close(r->fd);
	r->fd = -1;
}

/* Rank @rank of 2 submits an FP32 sum all-reduce of @count elements. */
static int coll_submit(struct coll_rank *r, __u16 rank, __u32 comm_id, __u64 count,
		       __u64 recv, __u64 report, __u32 timeout_ms, __u64 *seqno)
{
	struct maia_cmd_collective *k;

	r->cb.start = r->cb.used = 0;
	k = kcmd_add(&r->cb, MAIA_OP_COLLECTIVE, sizeof(*k));
	k->coll = MAIA_COLL_ALL_REDUCE;
	k->redop = MAIA_REDOP_SUM;
	k->dtype = MAIA_DTYPE_FP32;
	k->send_port = 0;
	k->recv_port = 1;
	k->rank = rank;
	k->nranks = 2;
	k->comm_id = comm_id;
	k->seq = 1;
	k->timeout_ms = timeout_ms;
	k->send_addr = VA_DATA;
	k->recv_addr = recv;
	k->count = count;
	k->report_addr = report;
	return kcmd_submit(r->fd, &r->cb, NULL, seqno);
}

static void fill_input(struct coll_rank *r, __u64 count, int rank)
{
	float *x = r->data.cpu;
	__u64 i;

	for (i = 0; i < count; i++)
		x[i] = (float)((i * 7 + (__u64)rank * 13) % 1000) * 0.25f;
}

/*
 * The case that crashed QEMU: rank 0 of a 2-rank all-reduce waits on device
 * 0, and 300 ms later rank 1 comes on device 1 with a receive buffer that is
 * read-only or not mapped, or a report address that is not mapped. Device 1
 * took rank 0's chunks before rank 1 came and offers them to it as it
 * starts; rank 1 faults on one of them. Rank 1's job ends with a fault that
 * names its address, rank 0's with a timeout (or OK: a small collective may
 * have all it needs before rank 1's end), the guest lives on, and the next
 * all-reduce on the same devices is exact.
 */
TEST_F_TIMEOUT(fabric, late_rank_with_a_faulting_buffer, 240)
{
	static const struct {
		const char *what;
		__u64 count, recv, report, fault_lo, fault_hi;
	} cases[] = {
		{ "read-only receive buffer", 256 * 1024, VA_RO, VA_REPORT, VA_RO,
		  VA_RO + DATA_SIZE / 2 },
		{ "unmapped receive buffer", 256 * 1024, VA_NONE, VA_REPORT, VA_NONE,
		  VA_NONE + DATA_SIZE / 2 },
		{ "unmapped report address", 256 * 1024, VA_RECV, VA_NONE, VA_NONE,
		  VA_NONE + KSFT_PAGE },
		{ "unmapped report address, small", 1024, VA_RECV, VA_NONE, VA_NONE,
		  VA_NONE + KSFT_PAGE },
	};
	struct coll_rank r[2] = { { .fd = -1 }, { .fd = -1 } };
	struct drm_maia_context_status cs;
	struct drm_maia_wait w0, w1;
	__u64 s0, s1, i, count = 256 * 1024, wrong = 0;
	const float *x0, *x1, *y0, *y1;
	unsigned int c;

	for (c = 0; c < sizeof(cases) / sizeof(cases[0]); c++) {
		__u32 comm = 0x1a7e0000u + ((__u32)getpid() & 0xff00u) + c;

		ASSERT_EQ(0, rank_open(&self->nodes[0], &r[0]));
		ASSERT_EQ(0, rank_open(&self->nodes[1], &r[1]));
		fill_input(&r[0], cases[c].count, 0);
		fill_input(&r[1], cases[c].count, 1);
		ASSERT_EQ(0, coll_submit(&r[0], 0, comm, cases[c].count, VA_RECV, VA_REPORT,
					 3000, &s0));
		maia_sleep_ms(300);
		ASSERT_EQ(0, coll_submit(&r[1], 1, comm, cases[c].count, cases[c].recv,
					 cases[c].report, 3000, &s1));
		ASSERT_EQ(0, kwait(r[1].fd, s1, JOB_NS, &w1)) TH_LOG("%s: rank 1 hung",
								     cases[c].what);
		ASSERT_EQ(0, kwait(r[0].fd, s0, JOB_NS, &w0)) TH_LOG("%s: rank 0 hung",
								     cases[c].what);
		EXPECT_EQ(DRM_MAIA_JOB_FAULT, w1.status)
			TH_LOG("%s: rank 1 status %u, device status %u", cases[c].what, w1.status,
			       w1.device_status);
		ASSERT_EQ(0, kcontext_status(r[1].fd, &cs));
		EXPECT_TRUE(cs.flags & DRM_MAIA_CTX_FAULTED) TH_LOG("%s", cases[c].what);
		if (!(cs.flags & DRM_MAIA_CTX_FAULT_ADDR_UNKNOWN)) {
			EXPECT_TRUE(cs.fault_addr >= cases[c].fault_lo &&
				    cs.fault_addr < cases[c].fault_hi)
				TH_LOG("%s: fault at %#llx", cases[c].what,
				       (unsigned long long)cs.fault_addr);
			EXPECT_EQ(DRM_MAIA_ACCESS_WRITE, cs.fault_access);
		}
		EXPECT_TRUE(w0.status == DRM_MAIA_JOB_OK ||
			    (w0.status == DRM_MAIA_JOB_ERROR &&
			     w0.device_status == DRM_MAIA_DEVICE_FABRIC_TIMEOUT))
			TH_LOG("%s: rank 0 status %u, device status %u", cases[c].what, w0.status,
			       w0.device_status);
		rank_close(&r[1]);
		rank_close(&r[0]);
	}

	/* The devices still work, without a reset: an exact all-reduce. */
	ASSERT_EQ(0, rank_open(&self->nodes[0], &r[0]));
	ASSERT_EQ(0, rank_open(&self->nodes[1], &r[1]));
	fill_input(&r[0], count, 0);
	fill_input(&r[1], count, 1);
	ASSERT_EQ(0, coll_submit(&r[0], 0, 0x1a7e00ffu, count, VA_RECV, VA_REPORT, 30000, &s0));
	ASSERT_EQ(0, coll_submit(&r[1], 1, 0x1a7e00ffu, count, VA_RECV, VA_REPORT, 30000, &s1));
	ASSERT_EQ(0, kwait(r[0].fd, s0, JOB_NS, &w0));
	ASSERT_EQ(0, kwait(r[1].fd, s1, JOB_NS, &w1));
	EXPECT_EQ(DRM_MAIA_JOB_OK, w0.status) TH_LOG("device status %u", w0.device_status);
	EXPECT_EQ(DRM_MAIA_JOB_OK, w1.status) TH_LOG("device status %u", w1.device_status);
	x0 = r[0].data.cpu;
	x1 = r[1].data.cpu;
	y0 = (const float *)((const char *)r[0].data.cpu + DATA_SIZE / 2);
	y1 = (const float *)((const char *)r[1].data.cpu + DATA_SIZE / 2);
	for (i = 0; i < count; i++)
		wrong += y0[i] != x0[i] + x1[i] || y1[i] != x0[i] + x1[i];
	EXPECT_EQ(0, wrong);
	rank_close(&r[1]);
	rank_close(&r[0]);
}

TEST_HARNESS_MAIN
