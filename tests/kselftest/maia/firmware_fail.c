// SPDX-License-Identifier: GPL-2.0-only
/*
 * maia.ko loaded with a broken or missing firmware image (firmware=
 * parameter), or one that boots slower than boot_timeout_ms: every
 * device's probe fails, leaving no accel node; the kernel
 * log has exactly one warning-or-worse line per device naming the file; the
 * module still unloads; and a normal load afterwards works.
 *
 * The broken images come from the firmware-sim build (mkfw --break) and are
 * installed under /lib/firmware/maia/test/. Needs root and maia.ko at
 * $MAIA_KO (default /lib/modules/maia.ko).
 */
#include "maia_ksft.h"
#include "kselftest_harness.h"

FIXTURE(fw) {
	int pci_functions;
	int kmsg;
};

FIXTURE_VARIANT(fw) {
	const char *file;	/* under /lib/firmware */
	bool exists;
	const char *params;	/* more module parameters, or NULL */
};

FIXTURE_VARIANT_ADD(fw, bad_magic) {
	.file = "maia/test/maia_fw_bad_magic.bin", .exists = true,
};

FIXTURE_VARIANT_ADD(fw, bad_crc) {
	.file = "maia/test/maia_fw_bad_crc.bin", .exists = true,
};

FIXTURE_VARIANT_ADD(fw, abi_major_2) {
	.file = "maia/test/maia_fw_bad_abi.bin", .exists = true,
};

FIXTURE_VARIANT_ADD(fw, truncated) {
	.file = "maia/test/maia_fw_bad_truncate.bin", .exists = true,
};

/* Passes the host checks, rejected by the device (malformed TLV payload). */
FIXTURE_VARIANT_ADD(fw, bad_tlv) {
	.file = "maia/test/maia_fw_bad_tlv.bin", .exists = true,
};

/*
 * A good image whose start-up self-test (2 s) outlasts the driver's wait:
 * the boot-timeout path, and the reset that abandons the boot.
 */
FIXTURE_VARIANT_ADD(fw, boot_timeout) {
	.file = "maia/test/maia_fw_slow.bin", .exists = true, .params = "boot_timeout_ms=300",
};

FIXTURE_VARIANT_ADD(fw, missing) {
	.file = "maia/test/no-such-image.bin", .exists = false,
};

FIXTURE_SETUP(fw)
{
	char path[PATH_MAX];

	self->kmsg = -1;
	if (geteuid() != 0)
		SKIP(return, "needs root to load modules");
	if (access(maia_ko_path(), R_OK))
		SKIP(return, "no %s (set MAIA_KO)", maia_ko_path());
	self->pci_functions = maia_count_pci_functions();
	if (!self->pci_functions)
		SKIP(return, "no maia PCI function on this machine");
	snprintf(path, sizeof(path), "/lib/firmware/%s", variant->file);
	if (variant->exists) {
		ASSERT_EQ(0, access(path, R_OK)) TH_LOG("%s: %s (firmware-sim build?)", path,
							 strerror(errno));
	} else {
		ASSERT_NE(0, access(path, F_OK));
	}
	ASSERT_EQ(0, maia_module_ensure_unloaded());
	self->kmsg = maia_kmsg_open();
	ASSERT_LE(0, self->kmsg) TH_LOG("/dev/kmsg: %s", strerror(errno));
}

FIXTURE_TEARDOWN(fw)
{
	if (self->kmsg >= 0)
		close(self->kmsg);
	if (!maia_module_loaded())
		maia_module_load(NULL);
}

struct kmsg_match {
	const char *needle;
	int matches;		/* warning or worse, naming the file */
	int others;		/* any level, naming the file */
	struct __test_metadata *_metadata;
};

static void match_line(int level, const char *text, void *arg)
{
	struct kmsg_match *m = arg;
	struct __test_metadata *_metadata = m->_metadata;

	if (!strstr(text, m->needle))
		return;
	TH_LOG("kernel log <%d>: %s", level, text);
	if (level <= 4)
		m->matches++;
	else
		m->others++;
}

/* Whether every bound maia device is gone from the PCI driver. */
static int maia_bound_functions(void)
{
	struct dirent *de;
	unsigned int d, b, s, f;
	int n = 0;
	DIR *dir;

	dir = opendir("/sys/bus/pci/drivers/maia");
	if (!dir)
		return 0;
	while ((de = readdir(dir)))
		n += sscanf(de->d_name, "%x:%x:%x.%x", &d, &b, &s, &f) == 4;
	closedir(dir);
	return n;
}

TEST_F_TIMEOUT(fw, probe_fails_cleanly, 120)
{
	struct kmsg_match m = { .needle = variant->file, ._metadata = _metadata };
	struct maia_node nodes[MAIA_MAX_DEVICES];
	char params[256];
	long long end;
	int ret;

	snprintf(params, sizeof(params), "firmware=%s%s%s", variant->file,
		 variant->params ? " " : "", variant->params ? variant->params : "");
	ret = maia_module_load(params);
	/* A failed probe does not fail the module load. */
	ASSERT_EQ(0, ret) TH_LOG("load with %s: %s", params, strerror(-ret));

	/* Probe is synchronous unless the driver asks otherwise: wait for the
	 * messages a while in case it does.
	 */
	end = maia_now_ms() + 5000;
	while (m.matches < self->pci_functions && maia_now_ms() < end) {
		maia_kmsg_each(self->kmsg, match_line, &m);
		if (m.matches < self->pci_functions)
			maia_sleep_ms(50);
	}
	maia_sleep_ms(100);
	maia_kmsg_each(self->kmsg, match_line, &m);

	EXPECT_EQ(0, maia_find_nodes(nodes, MAIA_MAX_DEVICES));
	EXPECT_EQ(0, maia_bound_functions());
	EXPECT_EQ(self->pci_functions, m.matches)
		TH_LOG("want one warning-or-worse line naming %s per device", variant->file);

	ret = maia_module_unload();
	ASSERT_EQ(0, ret) TH_LOG("unload after failed probe: %s", strerror(-ret));

	/* A normal load afterwards works. */
	ret = maia_module_load(NULL);
	ASSERT_EQ(0, ret) TH_LOG("normal load: %s", strerror(-ret));
	ASSERT_EQ(self->pci_functions, maia_wait_nodes(self->pci_functions, 10000));
	EXPECT_EQ(0, maia_ping_first(0xf00d));
}

TEST_HARNESS_MAIN
