// SPDX-License-Identifier: GPL-2.0-only
/*
 * Malformed ioctls on a maia node: unknown numbers, sizes that do not match
 * the uAPI structs, nonzero pads and indices, unknown flags and parameters,
 * bad pointers. Each must fail with the documented errno and leave the
 * caller's buffer exactly as it was (uapi/drm/maia_accel.h: "on failure no
 * output field is written"), which the tests check against a canary.
 */
#include <stddef.h>

#include "maia_ksft.h"
#include "kselftest_harness.h"

#define CANARY		0xa5
#define BUF_SIZE	4096

FIXTURE(dev) {
	int fd;
	unsigned char buf[BUF_SIZE];
	unsigned char ref[BUF_SIZE];
};

FIXTURE_SETUP(dev)
{
	struct maia_node node;

	self->fd = -1;
	if (maia_find_nodes(&node, 1) < 1)
		SKIP(return, "no maia accel node (is maia.ko loaded and a maia device present?)");
	self->fd = maia_open_node(&node);
	ASSERT_LE(0, self->fd) TH_LOG("open %s: %s", node.path, strerror(errno));
}

FIXTURE_TEARDOWN(dev)
{
	if (self->fd >= 0) {
		/* Whatever came before, the device still answers. */
		EXPECT_EQ(0, maia_ping(self->fd, 42, NULL));
		close(self->fd);
	}
}

/* Fills buf with the canary, puts `len` bytes of `arg` at its start. */
static void arm(unsigned char *buf, unsigned char *ref, const void *arg, size_t len)
{
	memset(buf, CANARY, BUF_SIZE);
	memcpy(buf, arg, len);
	memcpy(ref, buf, BUF_SIZE);
}

/* Issues cmd on buf, returns errno (0 if it succeeded). */
static int issue(int fd, unsigned long cmd, void *buf)
{
	return ioctl(fd, cmd, buf) ? errno : 0;
}

/* The first differing byte, or -1: for a readable failure message. */
static int first_diff(const unsigned char *a, const unsigned char *b)
{
	int i;

	for (i = 0; i < BUF_SIZE; i++)
		if (a[i] != b[i])
			return i;
	return -1;
}

#define EXPECT_REJECTED(cmd, arg, err) do {					\
	arm(self->buf, self->ref, &(arg), sizeof(arg));				\
	EXPECT_EQ(err, issue(self->fd, cmd, self->buf))				\
		TH_LOG("ioctl %#lx", (unsigned long)(cmd));			\
	EXPECT_EQ(-1, first_diff(self->buf, self->ref))				\
		TH_LOG("ioctl %#lx wrote byte %d", (unsigned long)(cmd),	\
		       first_diff(self->buf, self->ref));			\
} while (0)

/* A valid call for reference: the tests below are not failing for nothing. */
TEST_F(dev, valid_calls_succeed)
{
	struct drm_maia_get_param gp = { .param = DRM_MAIA_PARAM_DEVICE_ID };
	struct drm_maia_ping ping = { .cookie = 7 };

	ASSERT_EQ(0, ioctl(self->fd, DRM_IOCTL_MAIA_GET_PARAM, &gp));
	EXPECT_NE(0, gp.value);
	ASSERT_EQ(0, ioctl(self->fd, DRM_IOCTL_MAIA_PING, &ping));
	EXPECT_EQ(7, ping.echo);
}

TEST_F(dev, unknown_ioctl_numbers)
{
	/* Past the driver's table (numbers are only appended, from 0). */
	static const unsigned int nrs[] = { 0x30, 0x4f, 0x5f };
	struct drm_maia_get_param gp = { .param = DRM_MAIA_PARAM_DEVICE_ID };
	struct drm_maia_ping ping = { .cookie = 1 };
	unsigned int i;

	for (i = 0; i < sizeof(nrs) / sizeof(nrs[0]); i++) {
		EXPECT_REJECTED(DRM_IOWR(DRM_COMMAND_BASE + nrs[i], struct drm_maia_get_param),
				gp, EINVAL);
		EXPECT_REJECTED(DRM_IOWR(DRM_COMMAND_BASE + nrs[i], struct drm_maia_ping),
				ping, EINVAL);
		EXPECT_REJECTED(DRM_IO(DRM_COMMAND_BASE + nrs[i]), gp, EINVAL);
	}
}

/*
 * Same number, other sizes: a caller built against another struct layout.
 * Sizes from @first (the struct's size in the minor that added the ioctl)
 * up to @size are older layouts of a struct that grew: those are answered.
 */
static void check_sizes_from(struct __test_metadata *_metadata, FIXTURE_DATA(dev) *self,
			     unsigned int nr, const void *arg, unsigned int first,
			     unsigned int size)
{
	const unsigned int sizes[] = {
		0, 4, 8, size - 8, size - 4, size + 4, size + 8, 2 * size, 256, 1024,
	};
	unsigned int i;

	for (i = 0; i < sizeof(sizes) / sizeof(sizes[0]); i++) {
		unsigned long cmd = _IOC(_IOC_READ | _IOC_WRITE, DRM_IOCTL_BASE,
					 DRM_COMMAND_BASE + nr, sizes[i]);

		if (sizes[i] >= first && sizes[i] <= size)
			continue;
		arm(self->buf, self->ref, arg, size);
		EXPECT_EQ(EINVAL, issue(self->fd, cmd, self->buf))
			TH_LOG("nr %#x with size %u (expected %u)", nr, sizes[i], size);
		EXPECT_EQ(-1, first_diff(self->buf, self->ref))
			TH_LOG("nr %#x with size %u wrote byte %d", nr, sizes[i],
			       first_diff(self->buf, self->ref));
	}
}

static void check_sizes(struct __test_metadata *_metadata, FIXTURE_DATA(dev) *self,
			unsigned int nr, const void *arg, unsigned int size)
{
	check_sizes_from(_metadata, self, nr, arg, size, size);
}

TEST_F(dev, get_param_wrong_sizes)
{
	struct drm_maia_get_param gp = { .param = DRM_MAIA_PARAM_DEVICE_ID };

	check_sizes(_metadata, self, DRM_MAIA_GET_PARAM, &gp, sizeof(gp));
}

TEST_F(dev, ping_wrong_sizes)
{
	struct drm_maia_ping ping = { .cookie = 3 };

	check_sizes(_metadata, self, DRM_MAIA_PING, &ping, sizeof(ping));
}

TEST_F(dev, fabric_wrong_sizes)
{
	struct drm_maia_fabric_port port = { .port = 0 };
	struct drm_maia_fabric_window win = { .op = DRM_MAIA_FABRIC_WINDOW_CLOSE, .key = 1 };

	/* Minor 6 added link_nak_tx and rx_held: 120 bytes is minor 3's struct. */
	check_sizes_from(_metadata, self, DRM_MAIA_FABRIC_PORT, &port,
			 offsetof(struct drm_maia_fabric_port, link_nak_tx), sizeof(port));
	check_sizes(_metadata, self, DRM_MAIA_FABRIC_WINDOW, &win, sizeof(win));
}

TEST_F(dev, get_param_unknown_params)
{
	static const __u32 params[] = {
		DRM_MAIA_PARAM_PEAK_GFLOPS + 1, 64, 0x1000, 0x7fffffff, 0x80000000, 0xffffffff,
	};
	struct drm_maia_get_param gp;
	unsigned int i;

	for (i = 0; i < sizeof(params) / sizeof(params[0]); i++) {
		memset(&gp, CANARY, sizeof(gp));
		gp.param = params[i];
		gp.index = 0;
		EXPECT_REJECTED(DRM_IOCTL_MAIA_GET_PARAM, gp, EINVAL);
	}
}

TEST_F(dev, get_param_nonzero_index)
{
	static const __u32 indices[] = { 1, 2, 0x80000000, 0xffffffff };
	struct drm_maia_get_param gp;
	unsigned int i;

	for (i = 0; i < sizeof(indices) / sizeof(indices[0]); i++) {
		memset(&gp, CANARY, sizeof(gp));
		gp.param = DRM_MAIA_PARAM_DEVICE_ID;
		gp.index = indices[i];
		EXPECT_REJECTED(DRM_IOCTL_MAIA_GET_PARAM, gp, EINVAL);
	}
}

/* The one per-instance parameter (minor 7): the index is a data type, up to MX4. */
TEST_F(dev, get_param_peak_bad_dtype)
{
	static const __u32 indices[] = {
		DRM_MAIA_DTYPE_MX4 + 1, 64, 0x80000000, 0xffffffff,
	};
	struct drm_maia_get_param gp;
	unsigned int i;

	for (i = 0; i < sizeof(indices) / sizeof(indices[0]); i++) {
		memset(&gp, CANARY, sizeof(gp));
		gp.param = DRM_MAIA_PARAM_PEAK_GFLOPS;
		gp.index = indices[i];
		EXPECT_REJECTED(DRM_IOCTL_MAIA_GET_PARAM, gp, EINVAL);
	}
}

TEST_F(dev, ping_unknown_flags)
{
	struct drm_maia_ping ping;
	int bit;

	for (bit = 0; bit < 32; bit++) {
		memset(&ping, CANARY, sizeof(ping));
		ping.cookie = 5;
		ping.flags = 1u << bit;
		ping.pad = 0;
		EXPECT_REJECTED(DRM_IOCTL_MAIA_PING, ping, EINVAL);
	}
}

TEST_F(dev, ping_nonzero_pad)
{
	static const __u32 pads[] = { 1, 0x100, 0x80000000, 0xffffffff };
	struct drm_maia_ping ping;
	unsigned int i;

	for (i = 0; i < sizeof(pads) / sizeof(pads[0]); i++) {
		memset(&ping, CANARY, sizeof(ping));
		ping.cookie = 6;
		ping.flags = 0;
		ping.pad = pads[i];
		EXPECT_REJECTED(DRM_IOCTL_MAIA_PING, ping, EINVAL);
	}
}

TEST_F(dev, bad_pointers)
{
	static const unsigned long cmds[] = { DRM_IOCTL_MAIA_GET_PARAM, DRM_IOCTL_MAIA_PING };
	unsigned int i;

	for (i = 0; i < sizeof(cmds) / sizeof(cmds[0]); i++) {
		EXPECT_EQ(EFAULT, issue(self->fd, cmds[i], NULL));
		EXPECT_EQ(EFAULT, issue(self->fd, cmds[i], (void *)8));
		/* Kernel addresses are not user memory. */
		EXPECT_EQ(EFAULT, issue(self->fd, cmds[i], (void *)0xffff888000000000ul));
	}
}

/*
 * DRM core ioctls that use the file's master, which an accel file never has:
 * the 6.12 core dereferences the NULL master in drm_getunique() and
 * drm_getmagic() (an oops with dev->master_mutex held, then every later user
 * of the mutex hangs). Found by tests/ioctl-fuzz. The driver refuses them as
 * a render node does; the teardown's PING shows the device still answers.
 */
TEST_F(dev, core_ioctls_needing_a_master)
{
	char name[64];
	struct drm_unique u = { .unique_len = sizeof(name), .unique = name };
	struct drm_auth auth = { 0 };
	struct drm_unique u0 = { 0 };

	EXPECT_REJECTED(DRM_IOCTL_GET_UNIQUE, u, EACCES);
	EXPECT_REJECTED(DRM_IOCTL_GET_UNIQUE, u0, EACCES);
	EXPECT_REJECTED(DRM_IOCTL_GET_MAGIC, auth, EACCES);
	/* Twice: a first oops would have left the master mutex held. */
	EXPECT_REJECTED(DRM_IOCTL_GET_MAGIC, auth, EACCES);
	/* The other master ioctls were already refused by the core. */
	EXPECT_NE(0, ioctl(self->fd, DRM_IOCTL_SET_MASTER, 0));
	EXPECT_NE(0, ioctl(self->fd, DRM_IOCTL_DROP_MASTER, 0));
}

TEST_HARNESS_MAIN
