/* SPDX-License-Identifier: MIT */
/* IEEE 802.3 CRC-32, as zlib's crc32() computes it (firmware image check). */
#ifndef FWSIM_CRC32_H
#define FWSIM_CRC32_H

#include <stddef.h>
#include <stdint.h>

/* Continue a CRC: start with crc = 0. */
uint32_t fw_crc32(uint32_t crc, const void *buf, size_t len);

#endif /* FWSIM_CRC32_H */
