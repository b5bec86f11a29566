// SPDX-License-Identifier: MIT
/*
 * The smallest libmaia program: open the first device, print what it is,
 * and send one command round trip through a hardware queue.
 */
#include <stdio.h>

#include "libmaia.h"

int main(void)
{
	struct maia_ping_result ping;
	struct maia_device_info info;
	struct maia_device *dev;
	int err;

	err = maia_device_open(0, &dev);
	if (err) {
		fprintf(stderr, "maia-hello: cannot open a Maia device: %s\n", maia_strerror(err));
		return 1;
	}
	err = maia_device_info(dev, &info);
	if (err) {
		fprintf(stderr, "maia-hello: query failed: %s\n", maia_strerror(err));
		goto out;
	}
	printf("maia-hello: %s at %s, firmware %u.%u.%u, %.0f GiB HBM, %u x %u tiles\n",
	       info.node, info.pci_address, info.fw_version >> 16, (info.fw_version >> 8) & 0xff,
	       info.fw_version & 0xff, info.hbm_size / (double)(1ull << 30), info.clusters,
	       info.tiles_per_cluster);

	err = maia_ping(dev, 0x1234abcd, &ping);
	if (err) {
		fprintf(stderr, "maia-hello: ping failed: %s\n", maia_strerror(err));
		goto out;
	}
	if (ping.echo != 0x1234abcd) {
		fprintf(stderr, "maia-hello: device echoed 0x%llx, expected 0x1234abcd\n",
			(unsigned long long)ping.echo);
		err = -1;
		goto out;
	}
	printf("maia-hello: NOP job round trip OK: echo 0x%llx in %.1f us (device clock %.3f ms)\n",
	       (unsigned long long)ping.echo, ping.round_trip_ns / 1e3, ping.device_ns / 1e6);
out:
	maia_device_close(dev);
	return err ? 1 : 0;
}
