// SPDX-License-Identifier: GPL-2.0-only
/*
 * Two maia devices (qemu/run-guest --devices 2): both have nodes, report
 * distinct PCI BDFs that match sysfs, and both answer PING, also when used
 * at the same time from two processes. Skipped with fewer than two devices
 * unless MAIA_EXPECT_DEVICES says there must be more.
 */
#include <sys/wait.h>

#include "maia_ksft.h"
#include "kselftest_harness.h"

FIXTURE(two) {
	struct maia_node nodes[MAIA_MAX_DEVICES];
	int n;
	int fd[2];
};

FIXTURE_SETUP(two)
{
	unsigned long long expect = maia_env_ull("MAIA_EXPECT_DEVICES", 0);
	int i;

	self->fd[0] = self->fd[1] = -1;
	self->n = maia_find_nodes(self->nodes, MAIA_MAX_DEVICES);
	if (expect)
		ASSERT_EQ(expect, self->n) TH_LOG("MAIA_EXPECT_DEVICES=%llu", expect);
	if (self->n < 2)
		SKIP(return, "%d maia device(s); run with qemu/run-guest --devices 2", self->n);
	for (i = 0; i < 2; i++) {
		self->fd[i] = maia_open_node(&self->nodes[i]);
		ASSERT_LE(0, self->fd[i]) TH_LOG("open %s: %s", self->nodes[i].path,
						  strerror(errno));
	}
}

FIXTURE_TEARDOWN(two)
{
	int i;

	for (i = 0; i < 2; i++)
		if (self->fd[i] >= 0)
			close(self->fd[i]);
}

TEST_F(two, nodes_are_distinct)
{
	struct stat a, b;
	char name[64];
	int i;

	ASSERT_EQ(0, fstat(self->fd[0], &a));
	ASSERT_EQ(0, fstat(self->fd[1], &b));
	EXPECT_NE(a.st_rdev, b.st_rdev);
	for (i = 0; i < 2; i++) {
		ASSERT_EQ(0, maia_driver_name(self->fd[i], name, sizeof(name)));
		EXPECT_STREQ(MAIA_DRIVER_NAME, name);
	}
}

TEST_F(two, distinct_bdfs_match_sysfs)
{
	unsigned int dom, bus, slot, fn;
	__u64 bdf[2];
	int i;

	for (i = 0; i < 2; i++) {
		ASSERT_EQ(0, maia_get_param(self->fd[i], DRM_MAIA_PARAM_PCI_BDF, &bdf[i]));
		ASSERT_EQ(4, sscanf(self->nodes[i].bdf, "%x:%x:%x.%x", &dom, &bus, &slot, &fn));
		EXPECT_EQ((__u64)dom << 16 | bus << 8 | slot << 3 | fn, bdf[i])
			TH_LOG("%s is %s", self->nodes[i].path, self->nodes[i].bdf);
	}
	EXPECT_NE(bdf[0], bdf[1]);
}

TEST_F(two, both_ping)
{
	struct drm_maia_ping p;
	int i;

	for (i = 0; i < 2; i++) {
		ASSERT_EQ(0, maia_ping(self->fd[i], 0xd0 + i, &p)) TH_LOG("%s", self->nodes[i].path);
		EXPECT_EQ(0xd0 + i, p.echo);
	}
}

/* Each device in its own process, interleaved: no cross-talk of echoes. */
TEST_F(two, concurrent_pings)
{
	pid_t pid[2];
	int i, status;

	for (i = 0; i < 2; i++) {
		pid[i] = fork();
		ASSERT_LE(0, pid[i]);
		if (pid[i] == 0) {
			struct drm_maia_ping p;
			__u64 k;

			for (k = 0; k < 200; k++) {
				__u64 cookie = (__u64)(i + 1) << 32 | k;

				if (maia_ping(self->fd[i], cookie, &p) || p.echo != cookie)
					_exit(1);
			}
			_exit(0);
		}
	}
	for (i = 0; i < 2; i++) {
		ASSERT_EQ(pid[i], waitpid(pid[i], &status, 0));
		EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0)
			TH_LOG("pinger on %s failed", self->nodes[i].path);
	}
}

TEST_HARNESS_MAIN
