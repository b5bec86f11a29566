// SPDX-License-Identifier: MIT
/*
 * maia-fabric-links: wait for device 0's ring ports, or print their counters.
 *
 *   maia-fabric-links wait [--max-wait-s S]
 *   maia-fabric-links counters [--expect-retransmits]
 *
 * wait: until fabric ports 0 and 1 of device 0 are up (a cluster's QEMUs
 * boot at different times, and maia_comm_init_rank() wants both ring ports
 * up), polling every 20 ms for at most S seconds (default 120: a bound for
 * a broken cable, not a timing claim). Prints each port's peer.
 *
 * counters: one line per port with the link counters. With
 * --expect-retransmits, exit 1 unless the device dropped frames on purpose
 * (fabric-drop-ppm) and retransmitted: the proof that a lossy link's
 * correct results came from the device's own reliable delivery.
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "libmaia.h"

static int wait_links(struct maia_device *dev, unsigned int max_wait_s)
{
	struct timespec tick = { .tv_nsec = 20 * 1000000 };
	unsigned int polls, max_polls = max_wait_s * 50, p;
	struct maia_fabric_port info[2];

	for (polls = 0; polls <= max_polls; polls++) {
		if (maia_fabric_port(dev, 0, &info[0]) || maia_fabric_port(dev, 1, &info[1])) {
			fprintf(stderr, "maia-fabric-links: %s\n", maia_last_error());
			return 1;
		}
		if (info[0].up && info[1].up) {
			for (p = 0; p < 2; p++)
				printf("links: port %u up, peer serial %#" PRIx64 " port %u\n", p,
				       info[p].peer_serial, info[p].peer_port);
			return 0;
		}
		nanosleep(&tick, NULL);
	}
	fprintf(stderr, "maia-fabric-links: ports not up after %u s: port 0 %s, port 1 %s\n",
		max_wait_s, info[0].up ? "up" : "down", info[1].up ? "up" : "down");
	return 1;
}

static int counters(struct maia_device *dev, int expect_retransmits)
{
	uint64_t retransmits = 0, injected = 0, naks = 0;
	struct maia_fabric_port_gaps gaps;
	struct maia_fabric_port info;
	unsigned int ports, p;
	bool has_gaps = true;

	if (maia_fabric_ports(dev, &ports, NULL)) {
		fprintf(stderr, "maia-fabric-links: %s\n", maia_last_error());
		return 1;
	}
	for (p = 0; p < ports; p++) {
		if (maia_fabric_port(dev, p, &info))
			continue;
		printf("port %u: %s tx_frames %" PRIu64 " rx_frames %" PRIu64 " retransmits %"
		       PRIu64 " injected_drops %" PRIu64 " rx_drops %" PRIu64 " link_downs %u\n",
		       p, info.up ? "up" : "down", info.tx_frames, info.rx_frames,
		       info.retransmits, info.injected_drops, info.rx_drops, info.link_downs);
		retransmits += info.retransmits;
		injected += info.injected_drops;
		/* Driver minor 6, hardware 1.6: the gaps this port named to its peer. */
		if (maia_fabric_port_gaps(dev, p, &gaps)) {
			has_gaps = false;
			continue;
		}
		printf("port %u: link_nak_tx %" PRIu64 " rx_held %" PRIu64 "\n", p,
		       gaps.link_nak_tx, gaps.rx_held);
		naks += gaps.link_nak_tx;
	}
	if (expect_retransmits && (!retransmits || !injected)) {
		fprintf(stderr, "maia-fabric-links: expected dropped frames and retransmits, got "
			"%" PRIu64 " and %" PRIu64 "\n", injected, retransmits);
		return 1;
	}
	/* Frames lost before others: the receivers named the gaps. */
	if (expect_retransmits && has_gaps && !naks) {
		fprintf(stderr, "maia-fabric-links: expected gaps named (NAKs sent), got none\n");
		return 1;
	}
	return 0;
}

int main(int argc, char **argv)
{
	struct maia_device *dev;
	unsigned int max_wait_s = 120;
	int expect = 0, i, ret;

	if (argc < 2 || (strcmp(argv[1], "wait") && strcmp(argv[1], "counters"))) {
		fprintf(stderr, "usage: maia-fabric-links wait [--max-wait-s S] | counters "
			"[--expect-retransmits]\n");
		return 2;
	}
	for (i = 2; i < argc; i++) {
		if (!strcmp(argv[i], "--max-wait-s") && i + 1 < argc)
			max_wait_s = (unsigned int)atoi(argv[++i]);
		else if (!strcmp(argv[i], "--expect-retransmits"))
			expect = 1;
		else
			return 2;
	}
	if (maia_device_open(0, &dev)) {
		fprintf(stderr, "maia-fabric-links: %s\n", maia_last_error());
		return 1;
	}
	ret = strcmp(argv[1], "wait") ? counters(dev, expect) : wait_links(dev, max_wait_s);
	maia_device_close(dev);
	return ret;
}
