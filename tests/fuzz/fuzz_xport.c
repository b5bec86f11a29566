// SPDX-License-Identifier: MIT
/*
 * libFuzzer target for the fabric transport's receive side
 * (firmware-sim/src/fw_fabric_xport.c, fw_fabric_win.c): any message a peer
 * delivers over a link must be handled (a write landed through a window
 * and the MMU, a read answered, a refusal counted) or counted and dropped,
 * never crash, land outside a window or read outside the message.
 *
 * One device (the whole firmware-sim, built with ASan/UBSan) with one
 * fabric port and four windows of ASID 1: read-write over 64 KiB, read-only,
 * write-only, and one whose second page is not mapped. Its worker and fabric
 * thread are parked as for a reset, so this thread may call the transport
 * directly. The input is a list of records [op u8][len u16 LE][len bytes];
 * each is delivered as one message. op & 1: the target first makes the
 * bytes a plausible message: header type 1 + (op >> 1) % 6, key of window
 * (op >> 4) & 3, and the length field that matches the data. After each
 * record the answers owed are flushed (the link is down: dropped), and
 * after each input the port state is forgotten as after a link DOWN.
 */
#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "../../firmware-sim/src/fw_fabric_xport.h"
#include "../../firmware-sim/src/fw_internal.h"

#define HBM_SIZE	(4u << 20)
#define VA_WIN		0x40000000ull
#define WIN_PAGES	16u

static struct maia_sim *sim;
static uint8_t *hbm;
static uint32_t keys[4];
static uint64_t next_table = MAIA_PAGE_SIZE;

static int no_dma(void *opaque, uint64_t addr, void *buf, size_t len)
{
	(void)opaque, (void)addr, (void)buf, (void)len;
	return -1;
}

static int no_dma_w(void *opaque, uint64_t addr, const void *buf, size_t len)
{
	(void)opaque, (void)addr, (void)buf, (void)len;
	return -1;
}

static void no_irq(void *opaque, unsigned int vector)
{
	(void)opaque, (void)vector;
}

static uint64_t new_table(void)
{
	uint64_t t = next_table;

	next_table += MAIA_PAGE_SIZE;
	return t;
}

/* 4 KiB page tables in HBM, as the driver writes them (maia/hw/mmu.h). */
static void map(uint64_t root, uint64_t va, uint64_t pa, uint64_t flags)
{
	uint64_t table = root;

	for (unsigned int level = 0; level < 3; level++) {
		uint64_t *pte = (uint64_t *)(hbm + table) + ((va >> (39 - 9 * level)) & 0x1ff);

		if (!(*pte & MAIA_PTE_VALID))
			*pte = new_table() | MAIA_PTE_VALID;
		table = *pte & MAIA_PTE_ADDR_MASK;
	}
	((uint64_t *)(hbm + table))[(va >> 12) & 0x1ff] = pa | flags | MAIA_PTE_VALID;
}

static uint32_t open_window(unsigned int access, uint64_t va, uint32_t pages)
{
	uint32_t arg[4] = { 1 | access << 16, (uint32_t)va, (uint32_t)(va >> 32), pages }, key = 0;

	if (fw_win_open(sim, arg, &key) != MAIA_MBOX_OK)
		abort();
	return key;
}

static void setup(void)
{
	static const struct maia_sim_ops ops = {
		.dma_read = no_dma, .dma_write = no_dma_w, .raise_irq = no_irq,
	};
	struct maia_sim_config cfg;
	uint64_t root, data;

	hbm = calloc(1, HBM_SIZE);
	maia_sim_config_defaults(&cfg);
	cfg.hbm = hbm;
	cfg.hbm_size = HBM_SIZE;
	cfg.clusters = 1;
	cfg.tiles_per_cluster = 1;
	cfg.worker_threads = 1;
	cfg.fabric_ports = 1;
	sim = maia_sim_create(&cfg, &ops, NULL);
	if (!sim)
		abort();
	/* Park both threads, as maia_sim_reset() does, and keep them parked. */
	fw_park_threads(sim);

	root = new_table();
	next_table = 64 * MAIA_PAGE_SIZE;
	data = 1u << 20;
	for (unsigned int i = 0; i < WIN_PAGES; i++)
		map(root, VA_WIN + i * MAIA_PAGE_SIZE, data + i * MAIA_PAGE_SIZE,
		    MAIA_PTE_READ | MAIA_PTE_WRITE);
	/* The fourth window's second page is not mapped. */
	map(root, VA_WIN + 0x100000, data + 0x100000, MAIA_PTE_READ | MAIA_PTE_WRITE);
	fw_mmu_set_context(sim, 1, root);
	keys[0] = open_window(MAIA_ACCESS_READ | MAIA_ACCESS_WRITE, VA_WIN, WIN_PAGES);
	keys[1] = open_window(MAIA_ACCESS_READ, VA_WIN, 2);
	keys[2] = open_window(MAIA_ACCESS_WRITE, VA_WIN + MAIA_PAGE_SIZE, 2);
	keys[3] = open_window(MAIA_ACCESS_READ | MAIA_ACCESS_WRITE, VA_WIN + 0x100000, 2);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static uint8_t msg[MAIA_FABRIC_MAX_PAYLOAD];

	if (!sim)
		setup();
	while (size >= 3) {
		uint8_t op = data[0];
		size_t len = data[1] | (size_t)data[2] << 8;

		data += 3;
		size -= 3;
		if (len > size)
			len = size;
		memcpy(msg, data, len);
		data += len;
		size -= len;
		if ((op & 1) && len < MAIA_FABRIC_MSG_HDR_LEN) {
			memset(msg + len, 0, MAIA_FABRIC_MSG_HDR_LEN - len);
			len = MAIA_FABRIC_MSG_HDR_LEN;
		}
		if (op & 1) {
			struct maia_fabric_msg m;
			uint8_t type = (uint8_t)(1 + (op >> 1) % 6);
			uint32_t dlen = (uint32_t)(len - MAIA_FABRIC_MSG_HDR_LEN);

			memcpy(&m, msg, sizeof(m));
			m.type = type;
			m.key = keys[(op >> 4) & 3];
			if (type == MAIA_FMSG_COLL) {
				struct maia_fabric_coll_msg c;

				memcpy(&c, &m, sizeof(c));
				c.len = dlen;
				memcpy(&m, &c, sizeof(m));
			} else if (type != MAIA_FMSG_READ_REQ) {
				m.len = dlen;
			}
			memcpy(msg, &m, sizeof(m));
		}
		fw_xport_deliver(sim, 0, msg, len);
		fw_xport_pump(sim, fw_xport_now(sim));
	}
	fw_xport_link_down(sim, 0);
	return 0;
}
