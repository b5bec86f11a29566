/*
 * Firmware-image helpers shared by the maia qtests (maia-test.c,
 * maia-fabric-test.c): each qtest is its own program, so these are static.
 * qemu/setup/qemu.sh links this header next to them in QEMU's tree.
 *
 * Copyright (c) 2026 The Maia accelerator stack authors
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */
#ifndef MAIA_QTEST_FW_H
#define MAIA_QTEST_FW_H

#include "maia/hw/boot.h"

/* IEEE 802.3 CRC-32, bit by bit: an independent reference for the device. */
static inline uint32_t ref_crc32(const void *data, size_t len)
{
    const uint8_t *p = data;
    uint32_t crc = 0xffffffffu;
    int bit;

    while (len--) {
        crc ^= *p++;
        for (bit = 0; bit < 8; bit++) {
            crc = (crc >> 1) ^ (0xedb88320u & -(crc & 1));
        }
    }
    return ~crc;
}

/* One TLV of an image's payload at p, padded to 4 bytes; its size. */
static inline size_t put_tlv(uint8_t *p, uint16_t type, const void *val,
                             uint16_t len)
{
    struct maia_fw_tlv tlv = {
        .type = cpu_to_le16(type),
        .length = cpu_to_le16(len),
    };
    size_t padded = ROUND_UP(len, 4);

    memcpy(p, &tlv, sizeof(tlv));
    memset(p + sizeof(tlv), 0, padded);
    memcpy(p + sizeof(tlv), val, len);
    return sizeof(tlv) + padded;
}

#endif /* MAIA_QTEST_FW_H */
