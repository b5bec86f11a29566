/* SPDX-License-Identifier: MIT */
/*
 * Maia hardware ABI: device MMU page tables.
 *
 * 48-bit virtual addresses, four levels of 512 64-bit entries (L0 is the
 * root), 4 KiB tables in HBM. An L2 entry with MAIA_PTE_HUGE maps 2 MiB;
 * an L3 entry maps 4 KiB. The root is set per ASID with
 * MAIA_MBOX_SET_CONTEXT; the device caches translations in a TLB flushed by
 * MAIA_MBOX_TLB_INVALIDATE. See Documentation/hw/mmu.rst.
 */
#ifndef MAIA_HW_MMU_H
#define MAIA_HW_MMU_H

#define MAIA_VA_BITS			48
#define MAIA_PAGE_SHIFT			12
#define MAIA_PAGE_SIZE			(1ull << MAIA_PAGE_SHIFT)
#define MAIA_HUGE_PAGE_SHIFT		21
#define MAIA_HUGE_PAGE_SIZE		(1ull << MAIA_HUGE_PAGE_SHIFT)
#define MAIA_PT_LEVELS			4
#define MAIA_PT_ENTRIES			512u
#define MAIA_PT_INDEX(va, level)	(((va) >> (39 - 9 * (level))) & 0x1ffu)

#define MAIA_PTE_VALID			(1ull << 0)
#define MAIA_PTE_READ			(1ull << 1)
#define MAIA_PTE_WRITE			(1ull << 2)
#define MAIA_PTE_SYSMEM			(1ull << 3)	/* address is a host bus address */
#define MAIA_PTE_HUGE			(1ull << 7)	/* L2 only: 2 MiB page */
#define MAIA_PTE_ADDR_MASK		0x000ffffffffff000ull

#endif /* MAIA_HW_MMU_H */
