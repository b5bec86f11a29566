/* SPDX-License-Identifier: MIT */
/*
 * Frames that point at device memory (Documentation/hw/fabric.rst,
 * "Frames that point at device memory"). A collective's message may go to
 * a device of this process with its data left in the sending device's
 * memory: the message buffer (fw_link_msg_alloc(), full size) holds its
 * header, and a record of the process (struct fw_ref, found by the frame's
 * address, never by anything in the frame) holds where the data are. The
 * frame that carries it is lent with MAIA_FABRIC_F_REF in its header.
 *
 * - The receiving device pins the record while its link takes the frame
 *   (fw_ref_pin()); while pinned, fw_ref_rx_enter() makes fw_ref_data() and
 *   fw_ref_copy() of that message read the data where they are.
 * - Every other way out copies the data in first: maia_sim_fabric_frame_
 *   seal() (the flag cleared), a retransmission through fabric_tx or a
 *   message handed the other way round (fw_ref_msg_read()).
 * - The record belongs to an owner (the collective operation) until the
 *   buffer is freed (the peer acked it and the host gave it back) or its
 *   data are copied in (fw_ref_owner_settle()): the operation's job is not
 *   completed while its owner has frames out.
 */
#ifndef FWSIM_FABRIC_REF_H
#define FWSIM_FABRIC_REF_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "maia/hw/fabric.h"

struct fw_ref;

/* Frames of one operation that point at its device's memory. Zeroed: none. */
struct fw_ref_owner {
	struct fw_ref *head;		/* under the registry's lock */
	unsigned int out;		/* records still pointing (atomic reads) */
	uint64_t frames;		/* frames sent by reference, ever */
};

/*
 * Records that frame (a fw_buf_alloc() buffer, the message at frame +
 * data_off - MAIA_FABRIC_MSG_HDR_LEN) carries the len bytes at src in place of its
 * data from data_off on, for owner. 0, or -ENOMEM (nothing recorded: the
 * caller copies the data in).
 */
int fw_ref_attach(void *frame, size_t data_off, const void *src, uint32_t len,
		  struct fw_ref_owner *owner);
/* Whether frame (a buffer of fw_buf_alloc()) still points at device memory. */
bool fw_ref_live(const void *frame);
/*
 * A message of the link's queue (msg of fw_link_msg_alloc(), len bytes) as
 * it would be with its data in it, into dst: its header, then its data from
 * where they are.
 */
void fw_ref_msg_read(const void *msg, void *dst, size_t len);
/* Whether msg (of fw_link_msg_alloc()) has a record (live or copied in). */
bool fw_ref_msg_has(const void *msg);
/* The data copied into frame, the flag cleared: for maia_sim_fabric_frame_seal(). */
void fw_ref_seal(void *frame, size_t len);

/*
 * The record of a lent frame that carries MAIA_FABRIC_F_REF, pinned (its
 * data stay where they are until fw_ref_unpin()), or NULL: not a frame of
 * this process's, which the caller drops.
 */
struct fw_ref *fw_ref_pin(const void *frame);
void fw_ref_unpin(struct fw_ref *r);

/* A receiver's message whose data are elsewhere, on this thread (nested: saved). */
struct fw_ref_rx {
	const uint8_t *msg;		/* the message in the frame */
	const uint8_t *data;		/* where its data are */
};

extern __thread struct fw_ref_rx fw_ref_cur;

/* While the link takes a pinned frame (its message at frame + FW_LINK_HEADROOM). */
struct fw_ref_rx fw_ref_rx_enter(const struct fw_ref *r, const void *frame);
static inline void fw_ref_rx_leave(struct fw_ref_rx saved)
{
	fw_ref_cur = saved;
}

/* A received message's data: where they are. */
static inline const uint8_t *fw_ref_data(const void *msg)
{
	if (msg == fw_ref_cur.msg && fw_ref_cur.data)
		return fw_ref_cur.data;
	return (const uint8_t *)msg + MAIA_FABRIC_MSG_HDR_LEN;
}

/* A copy of a received message (len bytes), its data from where they are. */
void fw_ref_copy(void *dst, const void *msg, size_t len);

/*
 * Copies in the data of owner's records that no receiver has pinned (wait:
 * also those, once unpinned), so that none points at its memory any more.
 * Returns how many still do. Never wait on a thread in a fabric round, or
 * with a device lock held: the pinning thread may need it.
 */
unsigned int fw_ref_owner_settle(struct fw_ref_owner *owner, bool wait);

static inline unsigned int fw_ref_owner_out(const struct fw_ref_owner *owner)
{
	return __atomic_load_n(&owner->out, __ATOMIC_ACQUIRE);
}

/* Records alive in the process (tests). */
unsigned int fw_ref_records(void);
/* frame's record (tests): -1 none, 0 its data copied in, 1 pointing at device memory. */
int fw_ref_state(const void *frame);

#endif /* FWSIM_FABRIC_REF_H */
