/* SPDX-License-Identifier: MIT */
/*
 * Maia hardware ABI: mailbox commands.
 *
 * The host writes MAIA_REG_MBOX_ARG(0..3), then the command code to
 * MAIA_REG_MBOX_CMD. MBOX_STATUS shows BUSY until the device finishes; then
 * its low 16 bits hold the result, MBOX_RESP(0..3) the outputs, and
 * MAIA_INT_MBOX_DONE is raised. One command at a time; a write to MBOX_CMD
 * while BUSY is a guest error and is ignored. The control processor answers
 * independently of the engines: a running job does not delay a command (this
 * model finishes it before the MMIO write that starts it returns). A host
 * still polls BUSY: firmware that stopped never answers.
 */
#ifndef MAIA_HW_MBOX_H
#define MAIA_HW_MBOX_H

/* Commands */
#define MAIA_MBOX_PING			0x01u	/* resp0 = ~arg0, resp1 = fw version */
#define MAIA_MBOX_SET_CONTEXT		0x02u	/* arg0 = asid, arg1/2 = page-table root (HBM offset lo/hi), 0 = disable */
#define MAIA_MBOX_TLB_INVALIDATE	0x03u	/* arg0 = asid, or MAIA_ASID_ALL */
#define MAIA_MBOX_SET_POWER_CAP		0x04u	/* arg0 = cap in mW */
/*
 * Fabric windows (revision 1.3, maia/hw/fabric.h "Windows"):
 * OPEN: arg0 = asid | MAIA_ACCESS_* << 16 (what the remote side may do),
 *       arg1/2 = device VA lo/hi (4 KiB aligned), arg3 = size in 4 KiB pages;
 *       resp0 = the window's key. EINVAL: ASID not set up, bad access bits,
 *       zero size or unaligned VA; ENOSPC: every window slot is in use.
 * CLOSE: arg0 = key; ENOENT if no window has that key. Once CLOSE has
 *       answered, no remote access lands in the window any more.
 */
#define MAIA_MBOX_FABRIC_WINDOW_OPEN	0x05u
#define MAIA_MBOX_FABRIC_WINDOW_CLOSE	0x06u

#define MAIA_ASID_ALL			0xffffu

/* Results */
#define MAIA_MBOX_OK			0x0u
#define MAIA_MBOX_EINVAL		0x1u
#define MAIA_MBOX_EUNKNOWN		0x2u
#define MAIA_MBOX_ENOTREADY		0x3u
#define MAIA_MBOX_ENOSPC		0x4u	/* 1.3: no free slot */
#define MAIA_MBOX_ENOENT		0x5u	/* 1.3: no such object */

#endif /* MAIA_HW_MBOX_H */
