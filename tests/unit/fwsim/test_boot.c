// SPDX-License-Identifier: MIT
/*
 * firmware-sim boot protocol and mailbox: the real image, every kind of
 * broken image (files from mkfw and images crafted here), the boot interrupt,
 * and the mailbox commands once the firmware runs.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "harness.h"
#include "tap.h"

#define OPS_BUILTIN	0x7full

/* An image built here, independently of mkfw. */
struct image {
	uint8_t buf[4096];
	size_t len;
};

static void img_begin(struct image *im)
{
	struct maia_fw_header h = {
		.magic = MAIA_FW_MAGIC,
		.abi_major = MAIA_FW_ABI_MAJOR,
		.abi_minor = 3,
		.fw_version = MAIA_FW_VERSION(2, 5, 7),
		.header_size = sizeof(h),
	};

	memset(im, 0, sizeof(*im));
	memcpy(im->buf, &h, sizeof(h));
	im->len = sizeof(h);
}

static void img_tlv(struct image *im, uint16_t type, const void *val, uint16_t len)
{
	struct maia_fw_tlv t = { .type = type, .length = len };

	memcpy(im->buf + im->len, &t, sizeof(t));
	memcpy(im->buf + im->len + sizeof(t), val, len);
	im->len += sizeof(t) + ((len + 3u) & ~3u);
}

static void img_u32(struct image *im, uint16_t type, uint32_t v)
{
	img_tlv(im, type, &v, 4);
}

/* Fills in payload size and CRC (computed with the reference CRC). */
static void img_seal(struct image *im)
{
	struct maia_fw_header h;

	memcpy(&h, im->buf, sizeof(h));
	h.payload_size = (uint32_t)(im->len - h.header_size);
	h.payload_crc32 = ref_crc32(im->buf + h.header_size, h.payload_size);
	memcpy(im->buf, &h, sizeof(h));
}

static struct maia_fw_header *img_hdr(struct image *im)
{
	return (struct maia_fw_header *)im->buf;
}

static void fresh(struct env *e)
{
	wr(e, MAIA_REG_RESET, MAIA_RESET_MAGIC);
}

static void test_crc(void)
{
	static const char check[] = "123456789";
	uint8_t big[10000];

	tap_ok(ref_crc32(check, 9) == 0xcbf43926u, "reference CRC-32 of \"123456789\" is 0xcbf43926");
	fill_random(big, sizeof(big), 7);
	tap_ok(ref_crc32(big, sizeof(big)) != 0, "reference CRC-32 is not trivially zero");
}

static void test_good_image(struct env *e)
{
	unsigned int ev = irq_count(e, MAIA_VEC_EVENT);
	uint32_t resp[4];

	tap_ok(boot_file(e, "maia_fw_v1.bin") == MAIA_BOOT_STATUS_READY,
	       "the v1 image built by mkfw boots to READY");
	tap_ok(rd(e, MAIA_REG_BOOT_ERROR) == MAIA_BOOT_OK, "BOOT_ERROR is OK");
	tap_ok(rd(e, MAIA_REG_FW_VERSION) == MAIA_FW_VERSION(1, 0, 0), "FW_VERSION is 1.0.0");
	tap_ok(rd(e, MAIA_REG_FW_ABI) == (MAIA_FW_ABI_MAJOR << 16 | MAIA_FW_ABI_MINOR),
	       "FW_ABI is %u.%u", MAIA_FW_ABI_MAJOR, MAIA_FW_ABI_MINOR);
	tap_ok(rd(e, MAIA_REG_INT_STATUS) & MAIA_INT_BOOT_DONE, "BOOT_DONE is pending");
	tap_ok(irq_count(e, MAIA_VEC_EVENT) == ev + 1, "boot raised the event vector once");

	tap_ok(mbox(e, MAIA_MBOX_PING, 0x12345678, 0, 0, resp) == MAIA_MBOX_OK &&
	       resp[0] == ~0x12345678u && resp[1] == MAIA_FW_VERSION(1, 0, 0),
	       "PING answers ~arg0 and the firmware version");
	tap_ok(irq_count(e, MAIA_VEC_EVENT) == ev + 2, "the mailbox completion interrupts");

	unsigned int before = guest_errors(e);

	wr(e, MAIA_REG_BOOT_CTRL, MAIA_BOOT_CTRL_START);
	maia_sim_drain(e->sim);
	tap_ok(guest_errors(e) == before + 1 && rd(e, MAIA_REG_BOOT_STATUS) == MAIA_BOOT_STATUS_READY,
	       "START while running is reported and leaves the firmware running");
}

struct bad_file {
	const char *name;
	uint32_t err;
};

static void test_bad_files(struct env *e)
{
	static const struct bad_file bad[] = {
		{ "test/maia_fw_bad_magic.bin", MAIA_BOOT_ERR_MAGIC },
		{ "test/maia_fw_bad_crc.bin", MAIA_BOOT_ERR_CHECKSUM },
		{ "test/maia_fw_bad_abi.bin", MAIA_BOOT_ERR_ABI },
		{ "test/maia_fw_bad_truncate.bin", MAIA_BOOT_ERR_SIZE },
		{ "test/maia_fw_bad_tlv.bin", MAIA_BOOT_ERR_PAYLOAD },
	};

	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		unsigned int ev, before;
		uint32_t st;

		fresh(e);
		ev = irq_count(e, MAIA_VEC_EVENT);
		before = guest_errors(e);
		st = boot_file(e, bad[i].name);
		tap_ok(st == MAIA_BOOT_STATUS_FAILED && rd(e, MAIA_REG_BOOT_ERROR) == bad[i].err,
		       "%s fails with BOOT_ERROR %u (got status %u error %u)", bad[i].name,
		       bad[i].err, st, rd(e, MAIA_REG_BOOT_ERROR));
		tap_ok(irq_count(e, MAIA_VEC_EVENT) == ev + 1 && guest_errors(e) > before &&
		       rd(e, MAIA_REG_FW_VERSION) == 0,
		       "%s: BOOT_DONE raised, reason reported, no FW_VERSION", bad[i].name);
	}

	/* After a failure the device wants a reset before trying again. */
	wr(e, MAIA_REG_INT_STATUS, MAIA_INT_ALL);
	wr(e, MAIA_REG_BOOT_CTRL, MAIA_BOOT_CTRL_START);
	maia_sim_drain(e->sim);
	tap_ok(rd(e, MAIA_REG_BOOT_STATUS) == MAIA_BOOT_STATUS_FAILED &&
	       rd(e, MAIA_REG_BOOT_ERROR) == MAIA_BOOT_ERR_STATE &&
	       (rd(e, MAIA_REG_INT_STATUS) & MAIA_INT_BOOT_DONE),
	       "START after FAILED reports ERR_STATE");
	fresh(e);
	tap_ok(boot_file(e, "maia_fw_v1.bin") == MAIA_BOOT_STATUS_READY,
	       "after reset the good image boots again");
}

static void expect_boot(struct env *e, struct image *im, uint32_t err, const char *what)
{
	uint32_t st;

	fresh(e);
	st = boot_image(e, im->buf, im->len);
	tap_ok(rd(e, MAIA_REG_BOOT_ERROR) == err &&
	       st == (err == MAIA_BOOT_OK ? MAIA_BOOT_STATUS_READY : MAIA_BOOT_STATUS_FAILED),
	       "%s: boot error %u (got %u)", what, err, rd(e, MAIA_REG_BOOT_ERROR));
}

static double now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

/*
 * SELFTEST_MS: READY only after the self-test; a reset during it abandons
 * the boot at once; an out-of-range value is a malformed record.
 */
static void test_selftest_delay(struct env *e)
{
	struct image im;
	double t0, ms;
	uint32_t st;

	img_begin(&im);
	img_u32(&im, MAIA_FW_TLV_SELFTEST_MS, 300);
	img_seal(&im);
	fresh(e);
	t0 = now_ms();
	st = boot_image(e, im.buf, im.len);
	ms = now_ms() - t0;
	tap_ok(st == MAIA_BOOT_STATUS_READY && ms >= 300, "a 300 ms self-test: READY after %.0f ms",
	       ms);

	img_begin(&im);
	img_u32(&im, MAIA_FW_TLV_SELFTEST_MS, MAIA_FW_SELFTEST_MAX_MS);
	img_seal(&im);
	fresh(e);
	boot_start(e, im.buf, im.len);
	/*
	 * Wait until the boot is in its self-test (the device's thread may
	 * start late on a loaded host), then 100 ms more.  The reset must not
	 * wait for the 60 s self-test: 10 s is a bound no scheduling delay
	 * reaches and still far below it.
	 */
	t0 = now_ms();
	while ((st = rd(e, MAIA_REG_BOOT_STATUS)) != MAIA_BOOT_STATUS_LOADING &&
	       now_ms() - t0 < 30000)
		usleep(1000);
	usleep(100 * 1000);
	st = rd(e, MAIA_REG_BOOT_STATUS);
	t0 = now_ms();
	fresh(e);
	ms = now_ms() - t0;
	tap_ok(st == MAIA_BOOT_STATUS_LOADING && ms < 10000 &&
	       rd(e, MAIA_REG_BOOT_STATUS) == MAIA_BOOT_STATUS_WAIT_FW,
	       "a reset 100 ms into a 60 s self-test (status %u) takes %.1f ms and leaves WAIT_FW",
	       st, ms);
	tap_ok(boot_file(e, "maia_fw_v1.bin") == MAIA_BOOT_STATUS_READY,
	       "the device boots normally after the abandoned self-test");

	img_begin(&im);
	img_u32(&im, MAIA_FW_TLV_SELFTEST_MS, MAIA_FW_SELFTEST_MAX_MS + 1);
	img_seal(&im);
	expect_boot(e, &im, MAIA_BOOT_ERR_PAYLOAD, "a self-test over 60 s");
}

static void test_crafted(struct env *e)
{
	struct image im;
	uint64_t ops = OPS_BUILTIN;
	uint32_t u = 0;

	img_begin(&im);
	img_tlv(&im, MAIA_FW_TLV_NAME, "crafted", 7);
	img_u32(&im, 0x7777, 42);		/* unknown: skipped */
	img_tlv(&im, MAIA_FW_TLV_OPCODES, &ops, 8);
	img_seal(&im);
	expect_boot(e, &im, MAIA_BOOT_OK, "image with an unknown record and no END");
	tap_ok(rd(e, MAIA_REG_FW_VERSION) == MAIA_FW_VERSION(2, 5, 7) &&
	       rd(e, MAIA_REG_FW_ABI) == (1u << 16 | 3u), "version 2.5.7 and ABI 1.3 reported");

	img_begin(&im);
	img_hdr(&im)->header_size = sizeof(struct maia_fw_header) + 16;
	im.len += 16;				/* a newer minor's bigger header */
	img_u32(&im, MAIA_FW_TLV_CLOCK_MHZ, 1200);
	img_seal(&im);
	expect_boot(e, &im, MAIA_BOOT_OK, "image with a larger header");

	img_begin(&im);
	img_seal(&im);
	expect_boot(e, &im, MAIA_BOOT_OK, "image with an empty payload");

	img_begin(&im);
	img_u32(&im, MAIA_FW_TLV_CLOCK_MHZ, 0);
	img_seal(&im);
	expect_boot(e, &im, MAIA_BOOT_ERR_PAYLOAD, "clock record of 0 MHz");

	img_begin(&im);
	img_tlv(&im, MAIA_FW_TLV_TDP_W, &u, 2);
	img_seal(&im);
	expect_boot(e, &im, MAIA_BOOT_ERR_PAYLOAD, "TDP record of 2 bytes");

	img_begin(&im);
	img_tlv(&im, MAIA_FW_TLV_OPCODES, &u, 4);
	img_seal(&im);
	expect_boot(e, &im, MAIA_BOOT_ERR_PAYLOAD, "OPCODES record of 4 bytes");

	img_begin(&im);
	img_tlv(&im, MAIA_FW_TLV_NAME, "", 0);
	img_seal(&im);
	expect_boot(e, &im, MAIA_BOOT_ERR_PAYLOAD, "empty NAME record");

	img_begin(&im);
	im.len += 2;				/* half a record header */
	img_seal(&im);
	expect_boot(e, &im, MAIA_BOOT_ERR_PAYLOAD, "truncated record header");

	img_begin(&im);
	img_hdr(&im)->flags = 1;
	img_seal(&im);
	expect_boot(e, &im, MAIA_BOOT_ERR_ABI, "nonzero header flags");

	img_begin(&im);
	img_hdr(&im)->reserved = 1;
	img_seal(&im);
	expect_boot(e, &im, MAIA_BOOT_ERR_ABI, "nonzero reserved field");

	img_begin(&im);
	img_hdr(&im)->header_size = 8;
	img_seal(&im);
	img_hdr(&im)->payload_size = (uint32_t)im.len - 8;
	expect_boot(e, &im, MAIA_BOOT_ERR_SIZE, "header_size smaller than the header");

	img_begin(&im);
	img_u32(&im, MAIA_FW_TLV_TDP_W, 500);
	img_seal(&im);
	img_hdr(&im)->payload_size += 4;
	expect_boot(e, &im, MAIA_BOOT_ERR_SIZE, "payload_size larger than the image");

	img_begin(&im);
	img_seal(&im);
	im.len = 16;
	expect_boot(e, &im, MAIA_BOOT_ERR_SIZE, "image smaller than a header");

	img_begin(&im);
	img_u32(&im, MAIA_FW_TLV_TDP_W, 400);
	img_seal(&im);
	im.buf[im.len - 1] ^= 0x80;		/* flip one payload bit after sealing */
	expect_boot(e, &im, MAIA_BOOT_ERR_CHECKSUM, "one flipped payload bit");

	/* Size limits and DMA failures, by register. */
	fresh(e);
	wr(e, MAIA_REG_BOOT_ADDR_LO, (uint32_t)HOST_BASE);
	wr(e, MAIA_REG_BOOT_ADDR_HI, (uint32_t)(HOST_BASE >> 32));
	wr(e, MAIA_REG_BOOT_SIZE, MAIA_FW_MAX_SIZE + 1);
	wr(e, MAIA_REG_BOOT_CTRL, MAIA_BOOT_CTRL_START);
	maia_sim_drain(e->sim);
	tap_ok(rd(e, MAIA_REG_BOOT_ERROR) == MAIA_BOOT_ERR_SIZE, "an image over 1 MiB is refused");

	fresh(e);
	wr(e, MAIA_REG_BOOT_ADDR_LO, 0x1000);
	wr(e, MAIA_REG_BOOT_ADDR_HI, 0);
	wr(e, MAIA_REG_BOOT_SIZE, 4096);
	wr(e, MAIA_REG_BOOT_CTRL, MAIA_BOOT_CTRL_START);
	maia_sim_drain(e->sim);
	tap_ok(rd(e, MAIA_REG_BOOT_ERROR) == MAIA_BOOT_ERR_DMA,
	       "an image at an unreachable address fails with ERR_DMA");
}

static void test_boot_irq_masked(struct env *e)
{
	unsigned int ev;

	fresh(e);
	wr(e, MAIA_REG_INT_MASK, MAIA_INT_BOOT_DONE);
	ev = irq_count(e, MAIA_VEC_EVENT);
	boot_file(e, "maia_fw_v1.bin");
	tap_ok(irq_count(e, MAIA_VEC_EVENT) == ev && (rd(e, MAIA_REG_INT_STATUS) & MAIA_INT_BOOT_DONE),
	       "masked BOOT_DONE is pending without an interrupt");
	wr(e, MAIA_REG_INT_MASK, 0);
	tap_ok(irq_count(e, MAIA_VEC_EVENT) == ev + 1, "unmasking it raises the event vector");
}

static void test_mailbox(struct env *e)
{
	uint32_t resp[4];
	unsigned int before;

	fresh(e);
	boot_or_die(e);
	tap_ok(mbox(e, MAIA_MBOX_SET_POWER_CAP, 450000, 0, 0, resp) == MAIA_MBOX_OK &&
	       resp[0] == 450000, "SET_POWER_CAP 450 W is accepted");
	tap_ok(mbox(e, MAIA_MBOX_SET_POWER_CAP, 0, 0, 0, NULL) == MAIA_MBOX_EINVAL,
	       "SET_POWER_CAP 0 is EINVAL");
	tap_ok(mbox(e, 0x99, 0, 0, 0, NULL) == MAIA_MBOX_EUNKNOWN, "an unknown command is EUNKNOWN");
	tap_ok(mbox(e, MAIA_MBOX_SET_CONTEXT, 0, 0x1000, 0, NULL) == MAIA_MBOX_EINVAL,
	       "SET_CONTEXT for ASID 0 is EINVAL");
	tap_ok(mbox(e, MAIA_MBOX_SET_CONTEXT, MAIA_MAX_ASIDS, 0x1000, 0, NULL) == MAIA_MBOX_EINVAL,
	       "SET_CONTEXT for ASID %u is EINVAL", MAIA_MAX_ASIDS);
	tap_ok(mbox(e, MAIA_MBOX_SET_CONTEXT, 1, 0x1001, 0, NULL) == MAIA_MBOX_EINVAL,
	       "SET_CONTEXT with an unaligned root is EINVAL");
	tap_ok(mbox(e, MAIA_MBOX_SET_CONTEXT, 1, 0, 1, NULL) == MAIA_MBOX_EINVAL,
	       "SET_CONTEXT with a root beyond HBM is EINVAL");
	tap_ok(mbox(e, MAIA_MBOX_SET_CONTEXT, 1, 0x2000, 0, NULL) == MAIA_MBOX_OK,
	       "SET_CONTEXT with a root in HBM is OK");
	tap_ok(mbox(e, MAIA_MBOX_TLB_INVALIDATE, MAIA_ASID_ALL, 0, 0, NULL) == MAIA_MBOX_OK &&
	       mbox(e, MAIA_MBOX_TLB_INVALIDATE, 1, 0, 0, NULL) == MAIA_MBOX_OK,
	       "TLB_INVALIDATE one and all is OK");
	tap_ok(mbox(e, MAIA_MBOX_TLB_INVALIDATE, 300, 0, 0, NULL) == MAIA_MBOX_EINVAL,
	       "TLB_INVALIDATE of ASID 300 is EINVAL");

	/* The control processor answers at once, whatever the engines do. */
	wr(e, MAIA_REG_MBOX_ARG(0), 1);
	wr(e, MAIA_REG_MBOX_CMD, MAIA_MBOX_PING);
	tap_ok(rd(e, MAIA_REG_MBOX_STATUS) == MAIA_MBOX_OK && rd(e, MAIA_REG_MBOX_RESP(0)) == ~1u,
	       "a mailbox command has its answer when the write that starts it returns");
	wr(e, MAIA_REG_INT_STATUS, MAIA_INT_MBOX_DONE);

	/* While busy (a crashed firmware never answers), more writes are refused. */
	wr(e, MAIA_REG_DEBUG_INJECT, MAIA_INJECT_FW_CRASH);
	wr(e, MAIA_REG_MBOX_ARG(0), 3);
	wr(e, MAIA_REG_MBOX_CMD, MAIA_MBOX_PING);
	before = guest_errors(e);
	wr(e, MAIA_REG_MBOX_CMD, MAIA_MBOX_SET_POWER_CAP);
	wr(e, MAIA_REG_MBOX_ARG(0), 4);
	tap_ok(rd(e, MAIA_REG_MBOX_STATUS) == MAIA_MBOX_STATUS_BUSY && guest_errors(e) == before + 2 &&
	       rd(e, MAIA_REG_MBOX_CMD) == MAIA_MBOX_PING && rd(e, MAIA_REG_MBOX_ARG(0)) == 3,
	       "while a command is BUSY, a second command and argument writes are refused");
	wr(e, MAIA_REG_RESET, MAIA_RESET_MAGIC);
	boot_or_die(e);
}

static void test_refuse_before_ready(struct env *e)
{
	struct tq q;
	unsigned int before;

	fresh(e);
	queue_setup(e, &q, 0, 4, MAIA_QUEUE_PRIO_NORMAL);
	before = guest_errors(e);
	queue_push(e, &q, HOST_BASE, 8, 0, MAIA_SQE_NOP, 1, true);
	maia_sim_drain(e->sim);
	tap_ok(guest_errors(e) == before + 1 && rd(e, MAIA_REG_Q(0, MAIA_Q_TAIL)) == 0 &&
	       rd(e, MAIA_REG_Q(0, MAIA_Q_COMPLETED)) == 0,
	       "a doorbell before the firmware is ready is refused");
}

int main(void)
{
	struct env e;

	if (env_init(&e, 2, 16u << 20, 8u << 20)) {
		tap_ok(0, "env_init");
		return tap_done();
	}
	test_crc();
	test_good_image(&e);
	test_bad_files(&e);
	test_crafted(&e);
	test_selftest_delay(&e);
	test_boot_irq_masked(&e);
	test_mailbox(&e);
	test_refuse_before_ready(&e);
	env_fini(&e);
	return tap_done();
}
