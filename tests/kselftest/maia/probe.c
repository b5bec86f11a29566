// SPDX-License-Identifier: GPL-2.0-only
/*
 * The maia device probed: its accel node, its identity through
 * DRM_IOCTL_VERSION, every GET_PARAM against an independent source (the
 * hardware ABI header, the QEMU properties, PCI sysfs), and a PING.
 */
#include <grp.h>
#include <sys/wait.h>

#include "maia_ksft.h"
#include "kselftest_harness.h"

FIXTURE(dev) {
	struct maia_node node;
	int fd;
};

FIXTURE_SETUP(dev)
{
	self->fd = -1;
	if (maia_find_nodes(&self->node, 1) < 1)
		SKIP(return, "no maia accel node (is maia.ko loaded and a maia device present?)");
	self->fd = maia_open_node(&self->node);
	ASSERT_LE(0, self->fd) TH_LOG("open %s: %s", self->node.path, strerror(errno));
}

FIXTURE_TEARDOWN(dev)
{
	if (self->fd >= 0)
		close(self->fd);
}

/* Every maia PCI function got bound and has a node in sysfs and /dev. */
TEST(sysfs_and_dev_nodes)
{
	struct maia_node nodes[MAIA_MAX_DEVICES];
	unsigned long long expect;
	struct stat st;
	int n, i, pci;

	pci = maia_count_pci_functions();
	expect = maia_env_ull("MAIA_EXPECT_DEVICES", 0);
	if (expect)
		ASSERT_EQ(expect, pci);
	if (pci == 0)
		SKIP(return, "no maia PCI function on this machine");
	ASSERT_EQ(0, access("/sys/class/accel/accel0", F_OK));
	n = maia_find_nodes(nodes, MAIA_MAX_DEVICES);
	ASSERT_EQ(pci, n);
	for (i = 0; i < n; i++) {
		ASSERT_EQ(0, stat(nodes[i].path, &st)) TH_LOG("%s: %s", nodes[i].path, strerror(errno));
		EXPECT_TRUE(S_ISCHR(st.st_mode));
		/* DRM accel major (drivers/accel/drm_accel.c, ACCEL_MAJOR). */
		EXPECT_EQ(261, major(st.st_rdev));
		EXPECT_EQ(nodes[i].minor, (int)minor(st.st_rdev));
	}
}

TEST_F(dev, driver_name_and_version)
{
	char name[64], date[64], desc[256];
	struct drm_version v;

	memset(&v, 0, sizeof(v));
	v.name = name;
	v.name_len = sizeof(name) - 1;
	v.date = date;
	v.date_len = sizeof(date) - 1;
	v.desc = desc;
	v.desc_len = sizeof(desc) - 1;
	memset(name, 0, sizeof(name));
	ASSERT_EQ(0, ioctl(self->fd, DRM_IOCTL_VERSION, &v));
	ASSERT_EQ(strlen(MAIA_DRIVER_NAME), v.name_len);
	EXPECT_STREQ(MAIA_DRIVER_NAME, name);
	EXPECT_EQ(MAIA_DRIVER_MAJOR, v.version_major);
}

TEST_F(dev, param_device_id)
{
	__u64 v = 0;

	ASSERT_EQ(0, maia_get_param(self->fd, DRM_MAIA_PARAM_DEVICE_ID, &v));
	EXPECT_EQ((__u64)MAIA_PCI_VENDOR_ID << 16 | MAIA_PCI_DEVICE_ID, v);
}

TEST_F(dev, param_revision)
{
	__u64 v = 0;

	ASSERT_EQ(0, maia_get_param(self->fd, DRM_MAIA_PARAM_REVISION, &v));
	EXPECT_EQ(MAIA_HW_REVISION, v);
}

TEST_F(dev, param_fw_version_and_abi)
{
	char path[PATH_MAX], buf[64];
	__u64 ver = 0, abi = 0;

	ASSERT_EQ(0, maia_get_param(self->fd, DRM_MAIA_PARAM_FW_VERSION, &ver));
	EXPECT_NE(0, ver);
	EXPECT_EQ(0, ver >> 32);
	ASSERT_EQ(0, maia_get_param(self->fd, DRM_MAIA_PARAM_FW_ABI, &abi));
	/* The driver only runs firmware whose ABI major it speaks. */
	EXPECT_EQ(1, abi >> 16);
	TH_LOG("firmware %llu.%llu.%llu, ABI %llu.%llu",
	       (unsigned long long)(ver >> 16), (unsigned long long)(ver >> 8 & 0xff),
	       (unsigned long long)(ver & 0xff), (unsigned long long)(abi >> 16),
	       (unsigned long long)(abi & 0xffff));
	/* Not compared, just reported: the sysfs firmware version, if any. */
	snprintf(path, sizeof(path), "/sys/class/accel/accel%d/device/fw_version",
		 self->node.minor);
	if (!maia_read_file(path, buf, sizeof(buf)))
		TH_LOG("sysfs fw_version: %s", buf);
}

TEST_F(dev, param_hbm_size)
{
	unsigned long long expect = maia_env_ull("MAIA_EXPECT_HBM_SIZE", MAIA_DEFAULT_HBM_SIZE);
	__u64 v = 0;

	ASSERT_EQ(0, maia_get_param(self->fd, DRM_MAIA_PARAM_HBM_SIZE, &v));
	EXPECT_EQ(expect, v);
}

TEST_F(dev, param_topology)
{
	unsigned long long clusters = maia_env_ull("MAIA_EXPECT_CLUSTERS", MAIA_DEFAULT_CLUSTERS);
	unsigned long long tiles = maia_env_ull("MAIA_EXPECT_TILES", MAIA_DEFAULT_TILES);
	__u64 v = 0;

	ASSERT_EQ(0, maia_get_param(self->fd, DRM_MAIA_PARAM_NUM_CLUSTERS, &v));
	EXPECT_EQ(clusters, v);
	EXPECT_LE(v, MAIA_MAX_CLUSTERS);
	ASSERT_EQ(0, maia_get_param(self->fd, DRM_MAIA_PARAM_TILES_PER_CLUSTER, &v));
	EXPECT_EQ(tiles, v);
	EXPECT_LE(v, MAIA_MAX_TILES_PER_CLUSTER);
}

TEST_F(dev, param_queues_caps_dtypes_sram)
{
	__u64 v = 0;

	ASSERT_EQ(0, maia_get_param(self->fd, DRM_MAIA_PARAM_NUM_QUEUES, &v));
	EXPECT_LE(1, v);
	EXPECT_LE(v, MAIA_MAX_QUEUES);
	ASSERT_EQ(0, maia_get_param(self->fd, DRM_MAIA_PARAM_CAPABILITIES, &v));
	/*
	 * Only bits the uAPI defines; this device model has every one, the
	 * fabric only when it was given ports (the kselftest guest cables them).
	 */
	EXPECT_EQ(DRM_MAIA_CAP_MMU | DRM_MAIA_CAP_SEMAPHORES | DRM_MAIA_CAP_TENSOR |
		  DRM_MAIA_CAP_TELEMETRY | DRM_MAIA_CAP_FLR, v & ~DRM_MAIA_CAP_FABRIC);
	ASSERT_EQ(0, maia_get_param(self->fd, DRM_MAIA_PARAM_DTYPES, &v));
	/* The tensor engine takes every data type the uAPI names. */
	EXPECT_EQ((1ull << (DRM_MAIA_DTYPE_MX4 + 1)) - 1, v);
	ASSERT_EQ(0, maia_get_param(self->fd, DRM_MAIA_PARAM_SRAM_KIB, &v));
	EXPECT_NE(0, v);
}

/* The BDF the driver reports is the PCI address sysfs shows for the node. */
TEST_F(dev, param_pci_bdf)
{
	unsigned int dom, bus, slot, fn;
	__u64 v = 0;

	ASSERT_EQ(0, maia_get_param(self->fd, DRM_MAIA_PARAM_PCI_BDF, &v));
	ASSERT_EQ(4, sscanf(self->node.bdf, "%x:%x:%x.%x", &dom, &bus, &slot, &fn))
		TH_LOG("sysfs device link: '%s'", self->node.bdf);
	EXPECT_EQ((__u64)dom << 16 | bus << 8 | slot << 3 | fn, v);
}

TEST_F(dev, ping_echoes_cookie)
{
	static const __u64 cookies[] = {
		0, 1, 0x5a5a5a5a5a5a5a5aull, 0xffffffffffffffffull, 0x0123456789abcdefull,
	};
	struct drm_maia_ping p;
	unsigned int i;

	for (i = 0; i < sizeof(cookies) / sizeof(cookies[0]); i++) {
		ASSERT_EQ(0, maia_ping(self->fd, cookies[i], &p));
		EXPECT_EQ(cookies[i], p.echo);
		EXPECT_EQ(cookies[i], p.cookie);
		EXPECT_NE(0, p.round_trip_ns);
		/* Under TCG a round trip is slow, but not a minute. */
		EXPECT_GT(60ull * 1000000000ull, p.round_trip_ns);
		EXPECT_NE(0, p.device_ns);
	}
}

/* Device time moves forward between two pings. */
TEST_F(dev, ping_device_time_advances)
{
	struct drm_maia_ping a, b;

	ASSERT_EQ(0, maia_ping(self->fd, 1, &a));
	maia_sleep_ms(10);
	ASSERT_EQ(0, maia_ping(self->fd, 2, &b));
	EXPECT_GT(b.device_ns, a.device_ns);
}

/*
 * An unprivileged process in the node's group (udev rule 70-maia.rules:
 * GROUP="render", MODE="0660") can open the node and use it: the driver's
 * ioctls must not demand root.
 */
TEST_F(dev, unprivileged_group_member_can_ping)
{
	struct drm_maia_ping p;
	struct stat st;
	int status, fd;
	pid_t pid;
	gid_t gid;

	ASSERT_EQ(0, fstat(self->fd, &st));
	if (geteuid() != 0)
		SKIP(return, "needs root to switch to an unprivileged user");
	if (st.st_gid == 0 || !(st.st_mode & S_IRGRP) || !(st.st_mode & S_IWGRP))
		SKIP(return, "%s is not group-accessible (no udev rule applied)", self->node.path);
	gid = st.st_gid;
	pid = fork();
	ASSERT_LE(0, pid);
	if (pid == 0) {
		if (setgroups(1, &gid) || setgid(gid) || setuid(65534))
			_exit(2);
		fd = open(self->node.path, O_RDWR | O_CLOEXEC);
		if (fd < 0)
			_exit(3);
		if (maia_ping(fd, 0x600d, &p) || p.echo != 0x600d)
			_exit(4);
		close(fd);
		_exit(0);
	}
	ASSERT_EQ(pid, waitpid(pid, &status, 0));
	ASSERT_TRUE(WIFEXITED(status));
	EXPECT_EQ(0, WEXITSTATUS(status)) TH_LOG("2: setuid failed, 3: open failed, 4: ping failed");
}

/* Others (not owner, not in the group) cannot open the node. */
TEST_F(dev, others_cannot_open)
{
	struct stat st;
	int status;
	pid_t pid;

	ASSERT_EQ(0, fstat(self->fd, &st));
	if (geteuid() != 0)
		SKIP(return, "needs root to switch to an unprivileged user");
	if (st.st_mode & (S_IROTH | S_IWOTH))
		SKIP(return, "%s is world-accessible", self->node.path);
	pid = fork();
	ASSERT_LE(0, pid);
	if (pid == 0) {
		gid_t nogroup = 65534;

		if (setgroups(1, &nogroup) || setgid(nogroup) || setuid(65534))
			_exit(2);
		_exit(open(self->node.path, O_RDWR | O_CLOEXEC) < 0 && errno == EACCES ? 0 : 1);
	}
	ASSERT_EQ(pid, waitpid(pid, &status, 0));
	ASSERT_TRUE(WIFEXITED(status));
	EXPECT_EQ(0, WEXITSTATUS(status));
}

TEST_HARNESS_MAIN
