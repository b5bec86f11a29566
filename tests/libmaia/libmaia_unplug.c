// SPDX-License-Identifier: MIT
/*
 * Device gone: remove the PCI function under an open libmaia device, check
 * that every call fails with -ENODEV (and nothing crashes), then rescan the
 * bus and check the device comes back. Runs last: it rebinds the driver.
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "kselftest_harness.h"
#include "libmaia.h"

static int write_file(const char *path, const char *s)
{
	FILE *f = fopen(path, "w");
	int ok;

	if (!f)
		return -errno;
	ok = fputs(s, f) >= 0;
	return fclose(f) == 0 && ok ? 0 : -EIO;
}

TEST(pci_remove_gives_enodev)
{
	struct maia_device_info info;
	static struct maia_telemetry tm;
	struct maia_ping_result pr;
	struct maia_device *dev, *again;
	struct maia_cmdbuf *cb;
	struct maia_bo *bo;
	char path[128];
	uint64_t v, seqno;
	int before, i, err;

	if (maia_device_open(0, &dev))
		SKIP(return, "no Maia device");
	ASSERT_EQ(0, maia_device_info(dev, &info));
	ASSERT_EQ(0, maia_cmdbuf_create(dev, 4096, &cb));
	ASSERT_EQ(0, maia_cmd_nop(cb));
	before = maia_device_count();

	snprintf(path, sizeof(path), "/sys/bus/pci/devices/%s/remove", info.pci_address);
	ASSERT_EQ(0, write_file(path, "1"));
	EXPECT_EQ(before - 1, maia_device_count());

	EXPECT_EQ(-ENODEV, maia_query(dev, 0, &v));
	EXPECT_EQ(-ENODEV, maia_ping(dev, 1, &pr));
	EXPECT_EQ(-ENODEV, maia_device_info(dev, &info));
	EXPECT_EQ(-ENODEV, maia_bo_create(dev, 4096, MAIA_BO_HOST, &bo));
	EXPECT_EQ(-ENODEV, maia_submit(dev, cb, NULL, &seqno));
	EXPECT_EQ(-ENODEV, maia_run(dev, cb, 1000000000, NULL));
	EXPECT_EQ(-ENODEV, maia_device_telemetry(dev, &tm));
	EXPECT_EQ(-ENODEV, maia_telemetry_read(info.pci_address, &tm));
	EXPECT_STRNE("", maia_strerror(-ENODEV));
	/* Tearing down after the device left must not crash either. */
	maia_cmdbuf_destroy(cb);
	maia_device_close(dev);

	ASSERT_EQ(0, write_file("/sys/bus/pci/rescan", "1"));
	for (i = 0; i < 100 && maia_device_count() < before; i++)
		usleep(100000);
	EXPECT_EQ(before, maia_device_count());
	err = maia_device_open_pci(info.pci_address, &again);
	ASSERT_EQ(0, err);
	EXPECT_EQ(0, maia_ping(again, 2, &pr));
	maia_device_close(again);
}

TEST_HARNESS_MAIN
