/*
 * Maia accelerator: the layout of a shared-memory fabric cable between two
 * QEMU processes (maia-fabric-shm.c; Documentation/hw/fabric.rst,
 * "Shared-memory cables").
 *
 * A QEMU-glue contract between two QEMUs of one build, not device ABI: the
 * frames in the rings are the fabric's own (maia/hw/fabric.h), and the
 * layout changes with MAIA_FABRIC_SHM_VERSION. Plain C, so that a test can
 * write into a cable's file.
 *
 * The memory backend's file holds a header page and two rings of fixed
 * slots; ring[s] carries the frames side s sends, side 1 - s receives. Each
 * ring has one producer (the sending device's fabric thread) and one
 * consumer (the receiving port's thread). Everything in the file may be
 * written by the other process at any time: readers bound every index and
 * length before use.
 *
 * Copyright (c) 2026 The Maia accelerator stack authors
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */
#ifndef HW_MISC_MAIA_FABRIC_SHM_H
#define HW_MISC_MAIA_FABRIC_SHM_H

#include <stdint.h>
#include "maia/hw/fabric.h"

#define MAIA_FABRIC_SHM_MAGIC       0x4d534846u     /* "FHSM" */
#define MAIA_FABRIC_SHM_VERSION     1u

/*
 * Slots per ring: a full window of DATA frames (MAIA_FABRIC_WINDOW, the
 * largest fabric-window) and as many acks and control frames. A power of
 * two: a slot is its index modulo MAIA_FABRIC_SHM_SLOTS.
 */
#define MAIA_FABRIC_SHM_SLOTS       (2u * MAIA_FABRIC_WINDOW)
/* A slot: its length word, 4 bytes reserved, a frame of up to MAX_FRAME. */
#define MAIA_FABRIC_SHM_SLOT_HDR    8u
#define MAIA_FABRIC_SHM_SLOT_SIZE                                           \
    ((MAIA_FABRIC_SHM_SLOT_HDR + MAIA_FABRIC_MAX_FRAME + 63u) & ~63u)
/* The header page: MaiaFabricShmHeader, then the rings' slots. */
#define MAIA_FABRIC_SHM_HDR_SIZE    4096u
/* The least size of the memory backend: 15,765,504 bytes (size=16M). */
#define MAIA_FABRIC_SHM_SIZE                                                \
    ((uint64_t)MAIA_FABRIC_SHM_HDR_SIZE +                                   \
     2ull * MAIA_FABRIC_SHM_SLOTS * MAIA_FABRIC_SHM_SLOT_SIZE)

/* One cache line each, so that the two processes do not share lines. */
typedef struct MaiaFabricShmSide {
    uint32_t gen;           /* bumped each time a process takes the side */
    uint32_t attached;      /* 1 while a device owns the side */
    uint32_t rsvd[14];
} MaiaFabricShmSide;

typedef struct MaiaFabricShmRing {
    /* The producer's line: frames [tail, head) are in the ring. */
    uint32_t head;
    uint32_t rsvd0[15];
    /* The consumer's line. */
    uint32_t tail;
    uint32_t waiting;       /* 1: the consumer may sleep on `kick` */
    uint32_t kick;          /* futex: bumped by a producer that wakes it */
    uint32_t rsvd1[13];
} MaiaFabricShmRing;

typedef struct MaiaFabricShmHeader {
    uint32_t magic;         /* MAIA_FABRIC_SHM_MAGIC; 0 in a new file */
    uint32_t version;       /* MAIA_FABRIC_SHM_VERSION */
    uint32_t slots;         /* MAIA_FABRIC_SHM_SLOTS */
    uint32_t slot_size;     /* MAIA_FABRIC_SHM_SLOT_SIZE */
    uint32_t rsvd[12];
    MaiaFabricShmSide side[2];
    MaiaFabricShmRing ring[2];  /* ring[s]: the frames side s sends */
} MaiaFabricShmHeader;

typedef struct MaiaFabricShmSlot {
    uint32_t len;           /* frame bytes, 0..MAIA_FABRIC_MAX_FRAME */
    uint32_t rsvd;
    uint8_t frame[];
} MaiaFabricShmSlot;

_Static_assert(sizeof(MaiaFabricShmSide) == 64, "a side is one line");
_Static_assert(sizeof(MaiaFabricShmRing) == 128, "a ring's indices: 2 lines");
_Static_assert(sizeof(MaiaFabricShmHeader) <= MAIA_FABRIC_SHM_HDR_SIZE,
               "the header fits its page");
_Static_assert(MAIA_FABRIC_SHM_SLOT_SIZE >=
               MAIA_FABRIC_SHM_SLOT_HDR + MAIA_FABRIC_MAX_FRAME,
               "a slot holds the largest frame");
_Static_assert((MAIA_FABRIC_SHM_SLOTS & (MAIA_FABRIC_SHM_SLOTS - 1)) == 0,
               "slots are a power of two");

/* Byte offset of slot `index` (any u32: taken modulo the slots) of ring r. */
static inline uint64_t maia_fabric_shm_slot_offset(unsigned int r,
                                                   uint32_t index)
{
    return MAIA_FABRIC_SHM_HDR_SIZE +
           ((uint64_t)(r & 1) * MAIA_FABRIC_SHM_SLOTS +
            (index & (MAIA_FABRIC_SHM_SLOTS - 1))) *
           MAIA_FABRIC_SHM_SLOT_SIZE;
}

#endif /* HW_MISC_MAIA_FABRIC_SHM_H */
