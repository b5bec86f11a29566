// SPDX-License-Identifier: MIT
/*
 * maia-smi: list Maia devices and their state.
 *
 *   maia-smi [--json]          one entry per device
 *   maia-smi ping [-n COUNT]   round trips through a hardware queue
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "libmaia.h"
#include "maia/hw/dtype.h"

static void print_dtypes(uint32_t mask, const char *sep, const char *quote)
{
	const char *s = "";
	unsigned int t;

	for (t = 0; t < MAIA_DTYPE_COUNT; t++) {
		if (!(mask & (1u << t)))
			continue;
		printf("%s%s%s%s", s, quote, maia_dtype_name(t), quote);
		s = sep;
	}
}

static void print_text(const struct maia_device_info *i)
{
	printf("accel%d  %s  [%04x:%04x rev %u.%u]  %s\n", i->index, i->pci_address,
	       i->vendor_id, i->device_id, i->revision >> 8, i->revision & 0xff, i->node);
	printf("  firmware   %u.%u.%u (ABI %u.%u)   driver %s\n", i->fw_version >> 16,
	       (i->fw_version >> 8) & 0xff, i->fw_version & 0xff, i->fw_abi >> 16,
	       i->fw_abi & 0xffff, i->driver_version);
	printf("  HBM        %.1f GiB\n", i->hbm_size / (double)(1ull << 30));
	printf("  topology   %u clusters x %u tiles, %u KiB SRAM per cluster, %u queues\n",
	       i->clusters, i->tiles_per_cluster, i->sram_kib, i->num_queues);
	if (i->link_width)
		printf("  PCIe       %u.%u GT/s x%u\n", i->link_speed_gts_x10 / 10,
		       i->link_speed_gts_x10 % 10, i->link_width);
	printf("  dtypes     ");
	print_dtypes(i->dtypes, " ", "");
	printf("\n");
}

static void print_json(const struct maia_device_info *i, int first)
{
	printf("%s{\"index\":%d,\"node\":\"%s\",\"pci_address\":\"%s\","
	       "\"vendor_id\":\"0x%04x\",\"device_id\":\"0x%04x\",\"revision\":%u,"
	       "\"firmware_version\":\"%u.%u.%u\",\"firmware_abi\":\"%u.%u\","
	       "\"driver\":\"%s\",\"hbm_total_bytes\":%llu,\"clusters\":%u,"
	       "\"tiles_per_cluster\":%u,\"sram_kib_per_cluster\":%u,\"queues\":%u,"
	       "\"pcie_link_gts\":%.1f,\"pcie_link_width\":%u,\"dtypes\":[",
	       first ? "" : ",", i->index, i->node, i->pci_address, i->vendor_id,
	       i->device_id, i->revision, i->fw_version >> 16, (i->fw_version >> 8) & 0xff,
	       i->fw_version & 0xff, i->fw_abi >> 16, i->fw_abi & 0xffff, i->driver_version,
	       (unsigned long long)i->hbm_size, i->clusters, i->tiles_per_cluster,
	       i->sram_kib, i->num_queues, i->link_speed_gts_x10 / 10.0, i->link_width);
	print_dtypes(i->dtypes, ",", "\"");
	printf("]}");
}

static int list(int json)
{
	int n = maia_device_count(), idx, err, shown = 0;

	if (n < 0) {
		fprintf(stderr, "maia-smi: %s\n", maia_strerror(n));
		return 1;
	}
	if (json)
		printf("[");
	for (idx = 0; idx < n; idx++) {
		struct maia_device_info info;
		struct maia_device *dev;

		err = maia_device_open(idx, &dev);
		if (!err) {
			err = maia_device_info(dev, &info);
			maia_device_close(dev);
		}
		if (err) {
			fprintf(stderr, "maia-smi: device %d: %s\n", idx, maia_strerror(err));
			continue;
		}
		if (json)
			print_json(&info, shown == 0);
		else
			print_text(&info);
		shown++;
	}
	if (json)
		printf("]\n");
	else if (!shown)
		printf("No Maia devices found.\n");
	return shown == n ? 0 : 1;
}

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return x < y ? -1 : x > y;
}

static int ping(int count)
{
	struct maia_device *dev;
	uint64_t *rt;
	int i, err;

	err = maia_device_open(0, &dev);
	if (err) {
		fprintf(stderr, "maia-smi: open: %s\n", maia_strerror(err));
		return 1;
	}
	rt = calloc((size_t)count, sizeof(*rt));
	if (!rt) {
		maia_device_close(dev);
		return 1;
	}
	for (i = 0; i < count; i++) {
		struct maia_ping_result r;
		uint64_t cookie = 0x6d61696100000000ull | (uint64_t)i;

		err = maia_ping(dev, cookie, &r);
		if (err || r.echo != cookie) {
			fprintf(stderr, "maia-smi: ping %d: %s (echo 0x%llx)\n", i,
				err ? maia_strerror(err) : "wrong echo",
				(unsigned long long)(err ? 0 : r.echo));
			free(rt);
			maia_device_close(dev);
			return 1;
		}
		rt[i] = r.round_trip_ns;
	}
	qsort(rt, (size_t)count, sizeof(*rt), cmp_u64);
	printf("ping: %d round trips through queue 0, doorbell -> device -> MSI-X: "
	       "min %.1f us, median %.1f us, max %.1f us\n", count, rt[0] / 1e3,
	       rt[count / 2] / 1e3, rt[count - 1] / 1e3);
	free(rt);
	maia_device_close(dev);
	return 0;
}

static void usage(void)
{
	fprintf(stderr, "usage: maia-smi [--json]\n       maia-smi ping [-n COUNT]\n");
}

int main(int argc, char **argv)
{
	if (argc == 1)
		return list(0);
	if (argc == 2 && !strcmp(argv[1], "--json"))
		return list(1);
	if (!strcmp(argv[1], "ping")) {
		int count = 100;

		if (argc == 4 && !strcmp(argv[2], "-n"))
			count = atoi(argv[3]);
		else if (argc != 2)
			count = 0;
		if (count > 0)
			return ping(count);
	}
	usage();
	return 2;
}
