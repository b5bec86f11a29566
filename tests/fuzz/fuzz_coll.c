// SPDX-License-Identifier: MIT
/*
 * libFuzzer target: the collective engine (firmware-sim/src/fw_fabric_coll.c)
 * against a hostile peer. The input's first bytes are a raw struct
 * maia_cmd_collective (any field values: invalid ones must end in BAD_CMD);
 * then records drive the engine:
 *
 *   op & 3 == 0: a message: u16 length, then that many bytes (usually a
 *                struct maia_fabric_coll_msg and data), offered on port op >> 2 & 3
 *   op & 3 == 1: poll, after advancing the clock by (op >> 2) ms
 *   op & 3 == 2: set the transmit room to op >> 2 (0..63)
 *   op & 3 == 3: start the command again (if the last one ended), with seq + 1,
 *                or abort the running one
 *
 * The input's length picks the engine's set-up: bit 0 set, messages are
 * built in buffers of the transport's (fw_coll_ops.tx_buf/tx_owned, each
 * exactly as large as asked, freed once sent); bit 1, the engine prices
 * hops on a chip (modeled time, hostile model_ns/model_delta_ns); bit 2,
 * every command starts quiet (fw_coll_quiet()) until the next poll.
 *
 * The job's memory is 256 KiB at 0x10000; anything else faults. ASan/UBSan
 * report any out-of-bounds access; a message sent without transmit room
 * traps. The engine's own checks (BAD_CMD, drops) must keep it safe.
 */
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "../../firmware-sim/src/fw_fabric_coll.h"
#include "maia/hw/model.h"

#define MEM_BASE	0x10000ull
#define MEM_SIZE	(256u << 10)

static uint8_t mem[MEM_SIZE];
static unsigned int room;
static uint64_t sent;

static unsigned int f_room(void *opaque, unsigned int port)
{
	(void)opaque;
	(void)port;
	return room;
}

static int f_tx(void *opaque, unsigned int port, const void *msg, size_t len)
{
	volatile uint8_t sink = 0;

	(void)opaque;
	(void)port;
	if (!room)
		__builtin_trap();	/* the engine sent without room */
	/* Touch every byte: ASan checks the message pointer and length. */
	for (size_t i = 0; i < len; i++)
		sink ^= ((const uint8_t *)msg)[i];
	(void)sink;
	room--;
	sent++;
	return 0;
}

static uint8_t *at(uint64_t va, size_t len)
{
	if (va < MEM_BASE || len > MEM_SIZE || va - MEM_BASE > MEM_SIZE - len)
		return NULL;
	return mem + (va - MEM_BASE);
}

static int f_read(void *opaque, uint64_t va, void *buf, size_t len)
{
	uint8_t *p = at(va, len);

	(void)opaque;
	if (!p)
		return -1;
	memcpy(buf, p, len);
	return 0;
}

static int f_write(void *opaque, uint64_t va, const void *buf, size_t len)
{
	uint8_t *p = at(va, len);

	(void)opaque;
	if (!p)
		return -1;
	memcpy(p, buf, len);
	return 0;
}

static void *f_tx_buf(void *opaque, size_t len)
{
	(void)opaque;
	return malloc(len ? len : 1);
}

static void f_tx_buf_free(void *opaque, void *buf)
{
	(void)opaque;
	free(buf);
}

/* Takes msg: sent (as f_tx) and freed, so a later use of it is ASan's. */
static int f_tx_owned(void *opaque, unsigned int port, void *msg, size_t len)
{
	int rc = f_tx(opaque, port, msg, len);

	free(msg);
	return rc;
}

static const struct fw_coll_ops ops = {
	.tx_room = f_room,
	.tx = f_tx,
	.mem_read = f_read,
	.mem_write = f_write,
};

static const struct fw_coll_ops ops_owned = {
	.tx_room = f_room,
	.tx = f_tx,
	.tx_buf = f_tx_buf,
	.tx_owned = f_tx_owned,
	.tx_buf_free = f_tx_buf_free,
	.mem_read = f_read,
	.mem_write = f_write,
};

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct maia_cmd_collective cmd;
	struct fw_coll_config cfg;
	struct fw_coll c;
	uint64_t now = 1000000000ull;
	size_t pos = sizeof(cmd);
	bool quiet = size & 4;

	if (size < sizeof(cmd))
		return 0;
	memcpy(&cmd, data, sizeof(cmd));
	fw_coll_config_defaults(&cfg);
	cfg.nports = 2;
	cfg.early_msgs = 8;
	cfg.early_bytes = 256u << 10;
	if (size & 2) {
		cfg.model_chip = fw_chip_by_id(MAIA_MODEL_MAIA100);
		cfg.model_cable_ns[1] = 2500;
	}
	if (fw_coll_init(&c, &cfg, size & 1 ? &ops_owned : &ops, NULL))
		return 0;
	room = 4;
	fw_coll_quiet(&c, quiet, now);
	fw_coll_start(&c, &cmd, now);
	while (pos < size) {
		uint8_t op = data[pos++];

		switch (op & 3) {
		case 0: {
			size_t len;

			if (size - pos < 2)
				goto out;
			len = (size_t)data[pos] | (size_t)data[pos + 1] << 8;
			pos += 2;
			if (len > size - pos)
				len = size - pos;
			fw_coll_rx(&c, op >> 2 & 3, data + pos, len, now);
			pos += len;
			break;
		}
		case 1:
			now += (uint64_t)(op >> 2) * 1000000ull;
			if (c.quiet)
				fw_coll_quiet(&c, false, now);
			fw_coll_poll(&c, now);
			break;
		case 2:
			room = op >> 2;
			fw_coll_poll(&c, now);
			break;
		default:
			if (fw_coll_running(&c)) {
				fw_coll_abort(&c, 10, now);
			} else {
				cmd.seq++;
				fw_coll_quiet(&c, quiet, now);
				fw_coll_start(&c, &cmd, now);
			}
			break;
		}
	}
out:
	fw_coll_destroy(&c);
	return 0;
}
