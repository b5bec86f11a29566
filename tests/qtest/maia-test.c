/*
 * QTest testcase for the maia accelerator device (qemu/hw/maia-pci.c).
 *
 * The device runs its work on a worker thread in real time, so completions
 * are awaited by polling with a wall-clock timeout rather than by stepping
 * the virtual clock.
 *
 * Copyright (c) 2026 The Maia accelerator stack authors
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */

#include "qemu/osdep.h"
#include "qemu/bswap.h"
#include "qemu/cutils.h"
#include "qemu/units.h"
#include "libqtest.h"
#include "libqos/libqos-pc.h"
#include "libqos/pci.h"
#include "hw/pci/pci_regs.h"
#include "qobject/qdict.h"

#include "maia/hw/regs.h"
#include "maia/hw/boot.h"
#include "maia/hw/dtype.h"
#include "maia/hw/model.h"
#include "maia/hw/queue.h"
#include "maia-qtest-fw.h"

#define WAIT_TIMEOUT_US     (5 * G_USEC_PER_SEC)
#define QUEUE_ENTRIES       8u
#define FW_VERSION          MAIA_FW_VERSION(1u, 2u, 3u)

/* Poll cond until it holds or WAIT_TIMEOUT_US passes; yields its last value. */
#define WAIT_UNTIL(cond) ({                                                 \
    gint64 deadline_ = g_get_monotonic_time() + WAIT_TIMEOUT_US;            \
    bool ok_;                                                               \
    while (!(ok_ = (cond)) && g_get_monotonic_time() < deadline_) {         \
        g_usleep(1000);                                                     \
    }                                                                       \
    ok_;                                                                    \
})

typedef struct Maia {
    QOSState *qs;
    QTestState *qts;
    QPCIDevice *dev;
    QPCIBar regs;
    uint64_t regs_size;
} Maia;

/* One hardware queue's rings in guest memory. */
typedef struct MaiaQueue {
    uint32_t index;
    uint64_t sq, cq;
    uint32_t tail;
} MaiaQueue;

static void save_dev(QPCIDevice *dev, int devfn, void *data)
{
    *(QPCIDevice **)data = dev;
}

static void maia_map_regs(Maia *m)
{
    m->regs = qpci_iomap(m->dev, MAIA_BAR_REGS, &m->regs_size);
    qpci_device_enable(m->dev);
}

static void G_GNUC_PRINTF(2, 3) maia_start(Maia *m, const char *fmt, ...)
{
    va_list ap;
    g_autofree char *extra = NULL;

    va_start(ap, fmt);
    extra = g_strdup_vprintf(fmt, ap);
    va_end(ap);

    m->qs = qtest_pc_boot("-nodefaults -machine q35 "
                          "-device maia,id=maia0%s", extra);
    m->qts = m->qs->qts;
    m->dev = NULL;
    qpci_device_foreach(m->qs->pcibus, MAIA_PCI_VENDOR_ID, MAIA_PCI_DEVICE_ID,
                        save_dev, &m->dev);
    g_assert_nonnull(m->dev);
    maia_map_regs(m);
}

static void maia_stop(Maia *m)
{
    g_free(m->dev);
    qtest_shutdown(m->qs);
}

static uint32_t rd(Maia *m, uint32_t off)
{
    return qpci_io_readl(m->dev, m->regs, off);
}

static void wr(Maia *m, uint32_t off, uint32_t val)
{
    qpci_io_writel(m->dev, m->regs, off, val);
}

static uint64_t guest_zalloc(Maia *m, size_t size)
{
    uint64_t addr = guest_alloc(&m->qs->alloc, size);

    qtest_memset(m->qts, addr, 0, size);
    return addr;
}

/* ---- Firmware image ----------------------------------------------------- */

/* Builds a firmware image; a corrupt one has a wrong payload CRC. */
static GByteArray *build_fw(bool corrupt)
{
    static const char name[] = "maia-qtest";
    uint8_t payload[128];
    uint32_t clock = cpu_to_le32(1500);
    uint64_t opcodes = cpu_to_le64(0x7f);
    struct maia_fw_header hdr;
    size_t len = 0;
    GByteArray *img = g_byte_array_new();

    len += put_tlv(payload + len, MAIA_FW_TLV_NAME, name, sizeof(name));
    len += put_tlv(payload + len, MAIA_FW_TLV_CLOCK_MHZ, &clock,
                   sizeof(clock));
    len += put_tlv(payload + len, MAIA_FW_TLV_OPCODES, &opcodes,
                   sizeof(opcodes));
    len += put_tlv(payload + len, MAIA_FW_TLV_END, NULL, 0);
    g_assert_cmpuint(len, <=, sizeof(payload));

    memset(&hdr, 0, sizeof(hdr));
    hdr.magic = cpu_to_le32(MAIA_FW_MAGIC);
    hdr.abi_major = cpu_to_le16(MAIA_FW_ABI_MAJOR);
    hdr.abi_minor = cpu_to_le16(MAIA_FW_ABI_MINOR);
    hdr.fw_version = cpu_to_le32(FW_VERSION);
    hdr.header_size = cpu_to_le32(sizeof(hdr));
    hdr.payload_size = cpu_to_le32(len);
    hdr.payload_crc32 = cpu_to_le32(ref_crc32(payload, len) ^ corrupt);
    pstrcpy(hdr.build_id, sizeof(hdr.build_id), "qtest");

    g_byte_array_append(img, (const guint8 *)&hdr, sizeof(hdr));
    g_byte_array_append(img, payload, len);
    return img;
}

/* Loads an image into guest memory and starts the boot; returns the status. */
static uint32_t maia_boot(Maia *m, bool corrupt)
{
    g_autoptr(GByteArray) img = build_fw(corrupt);
    uint64_t addr = guest_alloc(&m->qs->alloc, img->len);
    uint32_t status;

    qtest_memwrite(m->qts, addr, img->data, img->len);
    wr(m, MAIA_REG_BOOT_ADDR_LO, addr);
    wr(m, MAIA_REG_BOOT_ADDR_HI, addr >> 32);
    wr(m, MAIA_REG_BOOT_SIZE, img->len);
    wr(m, MAIA_REG_BOOT_CTRL, MAIA_BOOT_CTRL_START);
    g_assert_true(WAIT_UNTIL((status = rd(m, MAIA_REG_BOOT_STATUS)) ==
                             MAIA_BOOT_STATUS_READY ||
                             status == MAIA_BOOT_STATUS_FAILED));
    guest_free(&m->qs->alloc, addr);
    return status;
}

static void maia_boot_ok(Maia *m)
{
    g_assert_cmphex(maia_boot(m, false), ==, MAIA_BOOT_STATUS_READY);
    g_assert_cmphex(rd(m, MAIA_REG_BOOT_ERROR), ==, MAIA_BOOT_OK);
    g_assert_cmphex(rd(m, MAIA_REG_FW_VERSION), ==, FW_VERSION);
    g_assert_cmphex(rd(m, MAIA_REG_FW_ABI) >> 16, ==, MAIA_FW_ABI_MAJOR);
}

/* ---- Queues ------------------------------------------------------------- */

static void queue_alloc(Maia *m, MaiaQueue *q, uint32_t index)
{
    q->index = index;
    q->tail = 0;
    q->sq = guest_zalloc(m, QUEUE_ENTRIES * sizeof(struct maia_sq_entry));
    q->cq = guest_zalloc(m, QUEUE_ENTRIES * sizeof(struct maia_cq_entry));
}

/* Programs the ring addresses (only accepted while disabled) and enables. */
static void queue_enable(Maia *m, MaiaQueue *q)
{
    uint32_t index = q->index;

    wr(m, MAIA_REG_Q(index, MAIA_Q_SQ_LO), q->sq);
    wr(m, MAIA_REG_Q(index, MAIA_Q_SQ_HI), q->sq >> 32);
    wr(m, MAIA_REG_Q(index, MAIA_Q_CQ_LO), q->cq);
    wr(m, MAIA_REG_Q(index, MAIA_Q_CQ_HI), q->cq >> 32);
    wr(m, MAIA_REG_Q(index, MAIA_Q_SIZE), QUEUE_ENTRIES);
    wr(m, MAIA_REG_Q(index, MAIA_Q_CTRL), MAIA_Q_CTRL_ENABLE |
       (MAIA_QUEUE_PRIO_NORMAL << MAIA_Q_CTRL_PRIO_SHIFT));
    g_assert_cmphex(rd(m, MAIA_REG_Q(index, MAIA_Q_STATUS)), ==, 0);
}

static void queue_init(Maia *m, MaiaQueue *q, uint32_t index)
{
    queue_alloc(m, q, index);
    queue_enable(m, q);
}

/* Writes a NOP entry at the tail; returns its slot. The doorbell is apart. */
static uint32_t queue_put_nop(Maia *m, MaiaQueue *q, uint64_t job_id)
{
    struct maia_sq_entry sqe = {
        .flags = cpu_to_le16(MAIA_SQE_NOP),
        .job_id = cpu_to_le64(job_id),
    };
    uint32_t slot = q->tail % QUEUE_ENTRIES;

    qtest_memwrite(m->qts, q->sq + slot * sizeof(sqe), &sqe, sizeof(sqe));
    q->tail = (q->tail + 1) % QUEUE_ENTRIES;
    return slot;
}

static void queue_read_cqe(Maia *m, MaiaQueue *q, uint32_t slot,
                           struct maia_cq_entry *cqe)
{
    qtest_memread(m->qts, q->cq + slot * sizeof(*cqe), cqe, sizeof(*cqe));
}

static bool queue_cqe_valid(Maia *m, MaiaQueue *q, uint32_t slot)
{
    struct maia_cq_entry cqe;

    queue_read_cqe(m, q, slot, &cqe);
    return le32_to_cpu(cqe.flags) & MAIA_CQE_VALID;
}

/* Waits for the completion in slot and checks it echoes job_id. */
static uint32_t queue_wait_status(Maia *m, MaiaQueue *q, uint32_t slot,
                                  uint64_t job_id)
{
    struct maia_cq_entry cqe;

    g_assert_true(WAIT_UNTIL(queue_cqe_valid(m, q, slot)));
    queue_read_cqe(m, q, slot, &cqe);
    g_assert_cmphex(le64_to_cpu(cqe.job_id), ==, job_id);
    g_assert_cmpuint(le64_to_cpu(cqe.end_ns), >=, le64_to_cpu(cqe.start_ns));
    return le32_to_cpu(cqe.status);
}

/* Submits one NOP by MMIO doorbell and expects it to complete with OK. */
static void queue_nop_ok(Maia *m, MaiaQueue *q, uint64_t job_id)
{
    uint32_t slot = queue_put_nop(m, q, job_id);

    wr(m, MAIA_REG_DOORBELL(q->index), q->tail);
    g_assert_cmpuint(queue_wait_status(m, q, slot, job_id), ==,
                     MAIA_STATUS_OK);
}

/* ---- MSI-X -------------------------------------------------------------- */

static void msix_program(Maia *m, uint16_t vector, uint64_t addr,
                         uint32_t data, bool masked)
{
    QPCIDevice *d = m->dev;
    uint64_t off = d->msix_table_off + vector * PCI_MSIX_ENTRY_SIZE;

    qpci_io_writel(d, d->msix_table_bar, off + PCI_MSIX_ENTRY_LOWER_ADDR,
                   addr);
    qpci_io_writel(d, d->msix_table_bar, off + PCI_MSIX_ENTRY_UPPER_ADDR,
                   addr >> 32);
    qpci_io_writel(d, d->msix_table_bar, off + PCI_MSIX_ENTRY_DATA, data);
    qpci_io_writel(d, d->msix_table_bar, off + PCI_MSIX_ENTRY_VECTOR_CTRL,
                   masked ? PCI_MSIX_ENTRY_CTRL_MASKBIT : 0);
}

/* Lines of QEMU's log file (-D) that contain needle. */
static unsigned count_lines(const char *path, const char *needle)
{
    g_autofree char *text = NULL;
    g_auto(GStrv) lines = NULL;
    unsigned n = 0;
    int i;

    g_assert_true(g_file_get_contents(path, &text, NULL, NULL));
    lines = g_strsplit(text, "\n", -1);
    for (i = 0; lines[i]; i++) {
        n += strstr(lines[i], needle) != NULL;
    }
    return n;
}

/* ---- Tests -------------------------------------------------------------- */

static void test_crc32_reference(void)
{
    /* The check value of CRC-32/ISO-HDLC. */
    g_assert_cmphex(ref_crc32("123456789", 9), ==, 0xcbf43926u);
}

static void test_identity(void)
{
    Maia m;
    QPCIBar hbm;
    uint64_t hbm_size;
    uint8_t exp;
    uint32_t bar2;

    maia_start(&m, ",hbm-size=64M,queues=4,clusters=8,tiles-per-cluster=2,"
               "sram-kib=1024,worker-threads=1");

    /* PCI configuration space */
    g_assert_cmphex(qpci_config_readw(m.dev, PCI_VENDOR_ID), ==,
                    MAIA_PCI_VENDOR_ID);
    g_assert_cmphex(qpci_config_readw(m.dev, PCI_DEVICE_ID), ==,
                    MAIA_PCI_DEVICE_ID);
    g_assert_cmphex(qpci_config_readb(m.dev, PCI_REVISION_ID), ==,
                    MAIA_PCI_REVISION);
    g_assert_cmphex(qpci_config_readw(m.dev, PCI_CLASS_DEVICE), ==,
                    MAIA_PCI_CLASS);
    g_assert_cmphex(qpci_config_readw(m.dev, PCI_SUBSYSTEM_VENDOR_ID), ==,
                    MAIA_PCI_VENDOR_ID);
    g_assert_cmphex(qpci_config_readb(m.dev, PCI_INTERRUPT_PIN), ==, 0);
    g_assert_cmpuint(m.regs_size, ==, MAIA_BAR0_SIZE);

    /* On q35 it is a PCIe function with FLR. */
    exp = qpci_find_capability(m.dev, PCI_CAP_ID_EXP, 0);
    g_assert_cmphex(exp, !=, 0);
    g_assert_cmphex(qpci_config_readl(m.dev, exp + PCI_EXP_DEVCAP) &
                    PCI_EXP_DEVCAP_FLR, ==, PCI_EXP_DEVCAP_FLR);

    /* One MSI-X vector for events plus one per queue. */
    g_assert_cmpuint(qpci_msix_table_size(m.dev), ==, MAIA_NUM_VECTORS(4));

    /* BAR2: 64-bit prefetchable HBM aperture of hbm-size bytes. */
    bar2 = qpci_config_readl(m.dev, PCI_BASE_ADDRESS_2);
    g_assert_cmphex(bar2 & ~PCI_BASE_ADDRESS_MEM_MASK, ==,
                    PCI_BASE_ADDRESS_MEM_TYPE_64 |
                    PCI_BASE_ADDRESS_MEM_PREFETCH);
    hbm = qpci_iomap(m.dev, MAIA_BAR_HBM, &hbm_size);
    g_assert_cmpuint(hbm_size, ==, 64 * MiB);
    qpci_io_writel(m.dev, hbm, 0, 0x11223344);
    qpci_io_writel(m.dev, hbm, hbm_size - 4, 0x55667788);
    g_assert_cmphex(qpci_io_readl(m.dev, hbm, 0), ==, 0x11223344);
    g_assert_cmphex(qpci_io_readl(m.dev, hbm, hbm_size - 4), ==, 0x55667788);

    /* BAR0 identification registers */
    g_assert_cmphex(rd(&m, MAIA_REG_ID), ==, MAIA_ID_MAGIC);
    g_assert_cmphex(rd(&m, MAIA_REG_REVISION), ==, MAIA_HW_REVISION);
    g_assert_cmpuint(rd(&m, MAIA_REG_NUM_QUEUES), ==, 4);
    g_assert_cmphex(rd(&m, MAIA_REG_TOPOLOGY), ==,
                    8 | (2 << MAIA_TOPOLOGY_TILES_SHIFT));
    g_assert_cmphex(rd(&m, MAIA_REG_HBM_SIZE_LO), ==, 64 * MiB);
    g_assert_cmphex(rd(&m, MAIA_REG_HBM_SIZE_HI), ==, 0);
    g_assert_cmpuint(rd(&m, MAIA_REG_SRAM_KIB), ==, 1024);
    g_assert_cmpuint(rd(&m, MAIA_REG_MSIX_VECTORS), ==, MAIA_NUM_VECTORS(4));
    g_assert_cmphex(rd(&m, MAIA_REG_BOOT_STATUS), ==,
                    MAIA_BOOT_STATUS_WAIT_FW);

    maia_stop(&m);
}

static void test_reset(void)
{
    Maia m;
    uint8_t exp;
    uint16_t devctl;

    maia_start(&m, ",hbm-size=16M,worker-threads=1");

    /* Register reset */
    wr(&m, MAIA_REG_SCRATCH, 0xa5a5f00d);
    g_assert_cmphex(rd(&m, MAIA_REG_SCRATCH), ==, 0xa5a5f00d);
    maia_boot_ok(&m);
    wr(&m, MAIA_REG_RESET, MAIA_RESET_MAGIC);
    g_assert_cmphex(rd(&m, MAIA_REG_SCRATCH), ==, 0);
    g_assert_cmphex(rd(&m, MAIA_REG_BOOT_STATUS), ==,
                    MAIA_BOOT_STATUS_WAIT_FW);

    /* A corrupt image fails the boot with a checksum error... */
    g_assert_cmphex(maia_boot(&m, true), ==, MAIA_BOOT_STATUS_FAILED);
    g_assert_cmphex(rd(&m, MAIA_REG_BOOT_ERROR), ==, MAIA_BOOT_ERR_CHECKSUM);
    /* ...and reset brings the device back to WAIT_FW, ready to boot. */
    wr(&m, MAIA_REG_RESET, MAIA_RESET_MAGIC);
    g_assert_cmphex(rd(&m, MAIA_REG_BOOT_STATUS), ==,
                    MAIA_BOOT_STATUS_WAIT_FW);
    maia_boot_ok(&m);

    /* Function level reset (which also clears the BARs: map them again) */
    wr(&m, MAIA_REG_SCRATCH, 0x12345678);
    exp = qpci_find_capability(m.dev, PCI_CAP_ID_EXP, 0);
    g_assert_cmphex(exp, !=, 0);
    devctl = qpci_config_readw(m.dev, exp + PCI_EXP_DEVCTL);
    qpci_config_writew(m.dev, exp + PCI_EXP_DEVCTL,
                       devctl | PCI_EXP_DEVCTL_BCR_FLR);
    g_assert_cmphex(qpci_config_readw(m.dev, exp + PCI_EXP_DEVCTL) &
                    PCI_EXP_DEVCTL_BCR_FLR, ==, 0);
    qpci_config_writel(m.dev, PCI_BASE_ADDRESS_0, m.regs.addr);
    qpci_device_enable(m.dev);
    g_assert_cmphex(rd(&m, MAIA_REG_ID), ==, MAIA_ID_MAGIC);
    g_assert_cmphex(rd(&m, MAIA_REG_SCRATCH), ==, 0);
    g_assert_cmphex(rd(&m, MAIA_REG_BOOT_STATUS), ==,
                    MAIA_BOOT_STATUS_WAIT_FW);

    /* System reset */
    maia_boot_ok(&m);
    wr(&m, MAIA_REG_SCRATCH, 0x87654321);
    qtest_qmp_assert_success(m.qts, "{'execute': 'system_reset'}");
    qtest_qmp_eventwait(m.qts, "RESET");
    qpci_config_writel(m.dev, PCI_BASE_ADDRESS_0, m.regs.addr);
    qpci_device_enable(m.dev);
    g_assert_cmphex(rd(&m, MAIA_REG_SCRATCH), ==, 0);
    g_assert_cmphex(rd(&m, MAIA_REG_BOOT_STATUS), ==,
                    MAIA_BOOT_STATUS_WAIT_FW);

    maia_stop(&m);
}

static void test_boot_nop_msix(void)
{
    const uint64_t job1 = 0xfeedf00d00000001ull, job2 = 0xfeedf00d00000002ull;
    const uint32_t msi_data = 0x4d410001;
    Maia m;
    MaiaQueue q;
    uint64_t msi_addr, shadow;
    uint32_t slot, vec;
    g_autofree char *log_path = NULL;
    int log_fd;

    /* The glue's trace events show which path each doorbell took. */
    log_fd = g_file_open_tmp("maia-test-XXXXXX.log", &log_path, NULL);
    g_assert_cmpint(log_fd, >=, 0);
    close(log_fd);
    maia_start(&m, ",hbm-size=16M,worker-threads=1 "
               "-trace maia_doorbell_kick -trace maia_ioeventfd -D %s",
               log_path);

    /*
     * MSI-X on, every vector masked, so that a fired vector shows up as a
     * pending bit. Vector 1 (queue 0) writes its message into guest RAM,
     * where the test can see it once unmasked.
     */
    qpci_msix_enable(m.dev);
    msi_addr = guest_zalloc(&m, 4);
    for (vec = 0; vec < qpci_msix_table_size(m.dev); vec++) {
        msix_program(&m, vec, msi_addr, 0, true);
    }
    msix_program(&m, MAIA_VEC_QUEUE(0), msi_addr, msi_data, true);

    maia_boot_ok(&m);
    /* Boot completion is an event: INT_STATUS cause and vector 0. */
    g_assert_cmphex(rd(&m, MAIA_REG_INT_STATUS) & MAIA_INT_BOOT_DONE, ==,
                    MAIA_INT_BOOT_DONE);
    g_assert_true(WAIT_UNTIL(qpci_msix_pending(m.dev, MAIA_VEC_EVENT)));
    g_assert_false(qpci_msix_pending(m.dev, MAIA_VEC_QUEUE(0)));
    queue_init(&m, &q, 0);

    /* NOP through queue 0 with an MMIO doorbell */
    slot = queue_put_nop(&m, &q, job1);
    wr(&m, MAIA_REG_DOORBELL(0), q.tail);
    g_assert_cmpuint(queue_wait_status(&m, &q, slot, job1), ==,
                     MAIA_STATUS_OK);
    g_assert_cmpuint(rd(&m, MAIA_REG_Q(0, MAIA_Q_HEAD)), ==, 1);
    g_assert_cmpuint(rd(&m, MAIA_REG_Q(0, MAIA_Q_TAIL)), ==, 1);
    g_assert_cmpuint(rd(&m, MAIA_REG_Q(0, MAIA_Q_COMPLETED)), ==, 1);

    /* The queue's vector fired (pending while masked), and only it. */
    g_assert_true(WAIT_UNTIL(qpci_msix_pending(m.dev, MAIA_VEC_QUEUE(0))));
    g_assert_false(qpci_msix_pending(m.dev, MAIA_VEC_QUEUE(1)));
    g_assert_cmphex(qtest_readl(m.qts, msi_addr), ==, 0);
    /* Unmasking delivers the pending message. */
    msix_program(&m, MAIA_VEC_QUEUE(0), msi_addr, msi_data, false);
    g_assert_cmphex(qtest_readl(m.qts, msi_addr), ==, msi_data);
    g_assert_false(qpci_msix_pending(m.dev, MAIA_VEC_QUEUE(0)));

    /*
     * Shadow tail: the doorbell becomes an ioeventfd whose written value is
     * ignored; the device reads the tail from guest memory. A garbage value
     * that would be out of range as a tail proves the shadow was used.
     */
    qtest_writel(m.qts, msi_addr, 0);
    shadow = guest_zalloc(&m, 4);
    wr(&m, MAIA_REG_Q(0, MAIA_Q_SHADOW_LO), shadow);
    wr(&m, MAIA_REG_Q(0, MAIA_Q_SHADOW_HI), shadow >> 32);
    slot = queue_put_nop(&m, &q, job2);
    qtest_writel(m.qts, shadow, q.tail);
    wr(&m, MAIA_REG_DOORBELL(0), 0xdead);
    g_assert_cmpuint(queue_wait_status(&m, &q, slot, job2), ==,
                     MAIA_STATUS_OK);
    g_assert_cmpuint(rd(&m, MAIA_REG_Q(0, MAIA_Q_COMPLETED)), ==, 2);
    g_assert_cmphex(rd(&m, MAIA_REG_Q(0, MAIA_Q_STATUS)) &
                    MAIA_Q_STATUS_ERR_DOORBELL, ==, 0);
    /* Vector 1 is unmasked now: the message lands directly. */
    g_assert_true(WAIT_UNTIL(qtest_readl(m.qts, msi_addr) == msi_data));
    /* That doorbell was an eventfd kick, the MMIO one before was not. */
    g_assert_cmpuint(count_lines(log_path, "maia_ioeventfd queue 0 enabled 1"),
                     ==, 1);
    g_assert_cmpuint(count_lines(log_path, "maia_doorbell_kick queue 0"),
                     ==, 1);

    /* Reset drops the eventfd: doorbells are plain MMIO again. */
    wr(&m, MAIA_REG_RESET, MAIA_RESET_MAGIC);
    g_assert_cmpuint(count_lines(log_path, "maia_ioeventfd queue 0 enabled 0"),
                     ==, 1);
    wr(&m, MAIA_REG_DOORBELL(0), 1);
    g_assert_cmpuint(count_lines(log_path, "maia_doorbell_kick queue 0"),
                     ==, 1);

    maia_stop(&m);
    unlink(log_path);
}

/*
 * BAR1 (revision 1.3): one doorbell page per queue. Page 1's doorbell rings
 * queue 1 and nothing else; other offsets and wrong-sized accesses are
 * inert. A queue bound to an ASID (MAIA_Q_ASID) fails an entry naming
 * another one with ASID_DENIED.
 */
static void test_doorbell_pages(void)
{
    const uint64_t job1 = 0x5553455251000001ull, job2 = 0x5553455251000002ull;
    Maia m;
    MaiaQueue q0, q1;
    QPCIBar udb;
    uint64_t udb_size;
    uint32_t slot;

    maia_start(&m, ",hbm-size=16M,queues=4,worker-threads=1");
    udb = qpci_iomap(m.dev, MAIA_BAR_UDB, &udb_size);
    g_assert_cmpuint(udb_size, ==, MAIA_UDB_BAR_SIZE);
    qpci_device_enable(m.dev);
    maia_boot_ok(&m);
    queue_init(&m, &q0, 0);
    queue_alloc(&m, &q1, 1);
    wr(&m, MAIA_REG_Q(1, MAIA_Q_ASID), MAIA_Q_ASID_BOUND | 0);
    g_assert_cmphex(rd(&m, MAIA_REG_Q(1, MAIA_Q_ASID)), ==, MAIA_Q_ASID_BOUND);
    queue_enable(&m, &q1);

    slot = queue_put_nop(&m, &q1, job1);
    qpci_io_writel(m.dev, udb, MAIA_UDB_PAGE(1) + MAIA_UDB_DOORBELL, q1.tail);
    g_assert_cmpuint(queue_wait_status(&m, &q1, slot, job1), ==, MAIA_STATUS_OK);
    g_assert_cmpuint(rd(&m, MAIA_REG_Q(0, MAIA_Q_TAIL)), ==, 0);

    /* Not the doorbell, a byte access, a page beyond the 4 queues: inert. */
    queue_put_nop(&m, &q0, job2);
    qpci_io_writel(m.dev, udb, MAIA_UDB_PAGE(0) + 8, q0.tail);
    qpci_io_writeb(m.dev, udb, MAIA_UDB_PAGE(0), q0.tail);
    qpci_io_writel(m.dev, udb, MAIA_UDB_PAGE(5), 1);
    g_assert_cmphex(qpci_io_readl(m.dev, udb, MAIA_UDB_PAGE(0)), ==, 0);
    g_assert_cmpuint(rd(&m, MAIA_REG_Q(0, MAIA_Q_TAIL)), ==, 0);
    slot = q0.tail - 1;
    qpci_io_writel(m.dev, udb, MAIA_UDB_PAGE(0) + MAIA_UDB_DOORBELL, q0.tail);
    g_assert_cmpuint(queue_wait_status(&m, &q0, slot, job2), ==, MAIA_STATUS_OK);

    /* Queue 1 is bound to ASID 0: an entry naming ASID 3 is denied. */
    {
        struct maia_sq_entry sqe = {
            .flags = cpu_to_le16(MAIA_SQE_NOP),
            .asid = cpu_to_le16(3),
            .job_id = cpu_to_le64(job2),
        };

        slot = q1.tail;
        qtest_memwrite(m.qts, q1.sq + slot * sizeof(sqe), &sqe, sizeof(sqe));
        q1.tail = (q1.tail + 1) % QUEUE_ENTRIES;
        qpci_io_writel(m.dev, udb, MAIA_UDB_PAGE(1) + MAIA_UDB_DOORBELL, q1.tail);
        g_assert_cmpuint(queue_wait_status(&m, &q1, slot, job2), ==,
                         MAIA_STATUS_ASID_DENIED);
    }

    wr(&m, MAIA_REG_RESET, MAIA_RESET_MAGIC);
    g_assert_cmphex(rd(&m, MAIA_REG_Q(1, MAIA_Q_ASID)), ==, 0);
    maia_stop(&m);
}

/*
 * The event vector follows INT_MASK: a masked cause is latched without an
 * interrupt, and unmasking it interrupts at once (raised from the MMIO
 * write itself, i.e. with the BQL held, not from the device's worker).
 */
static void test_event_mask(void)
{
    Maia m;
    uint32_t vec;

    maia_start(&m, ",hbm-size=16M,worker-threads=1");
    qpci_msix_enable(m.dev);
    for (vec = 0; vec < qpci_msix_table_size(m.dev); vec++) {
        msix_program(&m, vec, 0, 0, true);
    }

    wr(&m, MAIA_REG_INT_MASK, MAIA_INT_ALL);
    maia_boot_ok(&m);
    g_assert_cmphex(rd(&m, MAIA_REG_INT_STATUS) & MAIA_INT_BOOT_DONE, ==,
                    MAIA_INT_BOOT_DONE);
    g_usleep(50 * 1000);
    g_assert_false(qpci_msix_pending(m.dev, MAIA_VEC_EVENT));

    wr(&m, MAIA_REG_INT_MASK, MAIA_INT_ALL & ~MAIA_INT_BOOT_DONE);
    g_assert_true(qpci_msix_pending(m.dev, MAIA_VEC_EVENT));

    /* Write-1-to-clear */
    wr(&m, MAIA_REG_INT_STATUS, MAIA_INT_BOOT_DONE);
    g_assert_cmphex(rd(&m, MAIA_REG_INT_STATUS) & MAIA_INT_BOOT_DONE, ==, 0);

    maia_stop(&m);
}

static void test_bad_access(void)
{
    Maia m;
    MaiaQueue q;
    g_autofree char *log_path = NULL;
    int log_fd;

    /* Each ignored access is reported as a guest error. */
    log_fd = g_file_open_tmp("maia-test-XXXXXX.log", &log_path, NULL);
    g_assert_cmpint(log_fd, >=, 0);
    close(log_fd);
    maia_start(&m, ",hbm-size=16M,worker-threads=1 -d guest_errors -D %s",
               log_path);
    wr(&m, MAIA_REG_SCRATCH, 0x600dcafe);

    /* Wrong-size reads return 0, not a slice of the register. */
    g_assert_cmphex(qpci_io_readb(m.dev, m.regs, MAIA_REG_ID), ==, 0);
    g_assert_cmphex(qpci_io_readw(m.dev, m.regs, MAIA_REG_ID), ==, 0);
    g_assert_cmphex(qpci_io_readq(m.dev, m.regs, MAIA_REG_ID), ==, 0);
    /* Misaligned 32-bit reads return 0. */
    g_assert_cmphex(qpci_io_readl(m.dev, m.regs, MAIA_REG_ID + 2), ==, 0);
    g_assert_cmphex(qpci_io_readl(m.dev, m.regs, MAIA_REG_SCRATCH + 1), ==, 0);
    /* Offsets inside BAR0 but outside the register map read 0. */
    g_assert_cmphex(rd(&m, MAIA_BAR0_SIZE - 4), ==, 0);
    g_assert_cmphex(rd(&m, MAIA_REG_DOORBELL(MAIA_MAX_QUEUES)), ==, 0);
    /* A 4-byte read straddling the end of BAR0 */
    g_assert_cmphex(rd(&m, MAIA_BAR0_SIZE - 2), ==, 0);

    /* Wrong-size and misaligned writes are dropped. */
    qpci_io_writeb(m.dev, m.regs, MAIA_REG_SCRATCH, 0x11);
    qpci_io_writew(m.dev, m.regs, MAIA_REG_SCRATCH, 0x2222);
    qpci_io_writeq(m.dev, m.regs, MAIA_REG_SCRATCH, 0x3333333333333333ull);
    qpci_io_writel(m.dev, m.regs, MAIA_REG_SCRATCH + 1, 0x44444444);
    qpci_io_writel(m.dev, m.regs, MAIA_REG_SCRATCH - 2, 0x55555555);
    g_assert_cmphex(rd(&m, MAIA_REG_SCRATCH), ==, 0x600dcafe);
    /* An 8-byte write over RESET must not reset the device either. */
    qpci_io_writeq(m.dev, m.regs, MAIA_REG_RESET,
                   ((uint64_t)0x0badf00d << 32) | MAIA_RESET_MAGIC);
    g_assert_cmphex(rd(&m, MAIA_REG_SCRATCH), ==, 0x600dcafe);
    /* Writes to unmapped offsets and read-only registers change nothing. */
    wr(&m, MAIA_BAR0_SIZE - 4, 0xffffffff);
    wr(&m, MAIA_REG_ID, 0);
    g_assert_cmphex(rd(&m, MAIA_REG_ID), ==, MAIA_ID_MAGIC);

    g_assert_cmpuint(count_lines(log_path, "maia0: BAR0 read at 0x0 size 1 "
                                 "ignored: not a 32-bit access"), ==, 1);
    g_assert_cmpuint(count_lines(log_path, "maia0: BAR0 write at 0x30 size 8 "
                                 "ignored: not a 32-bit access"), ==, 1);
    g_assert_cmpuint(count_lines(log_path, "maia0: BAR0 read at 0x2 size 4 "
                                 "ignored: misaligned"), ==, 1);
    g_assert_cmpuint(count_lines(log_path, "ignored"), >=, 12);

    /* The device still works: boot and run a NOP. */
    maia_boot_ok(&m);
    queue_init(&m, &q, 0);
    queue_nop_ok(&m, &q, 0x0dd);

    maia_stop(&m);
    unlink(log_path);
}

/*
 * DMA that does not target guest RAM fails cleanly: the image or ring is
 * reported as a DMA error, QEMU neither crashes nor deadlocks, and the
 * device works again after a reset.
 */
static void test_dma_not_ram(void)
{
    const uint64_t unassigned = 0xdead00000000ull;
    Maia m;
    MaiaQueue q;
    uint16_t cmd;

    maia_start(&m, ",hbm-size=16M,worker-threads=1");

    /* Firmware image "in" the device's own registers */
    wr(&m, MAIA_REG_BOOT_ADDR_LO, m.regs.addr);
    wr(&m, MAIA_REG_BOOT_ADDR_HI, m.regs.addr >> 32);
    wr(&m, MAIA_REG_BOOT_SIZE, 256);
    wr(&m, MAIA_REG_BOOT_CTRL, MAIA_BOOT_CTRL_START);
    g_assert_true(WAIT_UNTIL(rd(&m, MAIA_REG_BOOT_STATUS) ==
                             MAIA_BOOT_STATUS_FAILED));
    g_assert_cmphex(rd(&m, MAIA_REG_BOOT_ERROR), ==, MAIA_BOOT_ERR_DMA);

    /* A valid image, but bus mastering is off */
    wr(&m, MAIA_REG_RESET, MAIA_RESET_MAGIC);
    cmd = qpci_config_readw(m.dev, PCI_COMMAND);
    qpci_config_writew(m.dev, PCI_COMMAND, cmd & ~PCI_COMMAND_MASTER);
    g_assert_cmphex(maia_boot(&m, false), ==, MAIA_BOOT_STATUS_FAILED);
    g_assert_cmphex(rd(&m, MAIA_REG_BOOT_ERROR), ==, MAIA_BOOT_ERR_DMA);
    qpci_config_writew(m.dev, PCI_COMMAND, cmd);

    /* A submission ring at an address nothing decodes */
    wr(&m, MAIA_REG_RESET, MAIA_RESET_MAGIC);
    maia_boot_ok(&m);
    queue_alloc(&m, &q, 0);
    q.sq = unassigned;
    queue_enable(&m, &q);
    wr(&m, MAIA_REG_DOORBELL(0), 1);
    g_assert_true(WAIT_UNTIL(rd(&m, MAIA_REG_Q(0, MAIA_Q_STATUS)) &
                             MAIA_Q_STATUS_ERR_DMA));

    /* A completion array on top of BAR0 */
    queue_alloc(&m, &q, 1);
    q.cq = m.regs.addr;
    queue_enable(&m, &q);
    queue_put_nop(&m, &q, 0xbad1);
    wr(&m, MAIA_REG_DOORBELL(1), q.tail);
    g_assert_true(WAIT_UNTIL(rd(&m, MAIA_REG_Q(1, MAIA_Q_STATUS)) &
                             MAIA_Q_STATUS_ERR_DMA));
    g_assert_cmphex(rd(&m, MAIA_REG_ID), ==, MAIA_ID_MAGIC);

    /* Reset recovers. */
    wr(&m, MAIA_REG_RESET, MAIA_RESET_MAGIC);
    maia_boot_ok(&m);
    queue_init(&m, &q, 0);
    queue_nop_ok(&m, &q, 0x900d);

    maia_stop(&m);
}

/*
 * DMA goes through a mapping of the guest RAM the last DMA went to: bus
 * mastering turned off after a DMA that made it must fail the next one
 * (the firmware image read), and turned on again let it work.
 */
static void test_dma_mapping_master_off(void)
{
    Maia m;
    MaiaQueue q;
    uint16_t cmd;

    maia_start(&m, ",hbm-size=16M,worker-threads=1");
    maia_boot_ok(&m);
    queue_init(&m, &q, 0);
    queue_nop_ok(&m, &q, 0x600d);

    cmd = qpci_config_readw(m.dev, PCI_COMMAND);
    qpci_config_writew(m.dev, PCI_COMMAND, cmd & ~PCI_COMMAND_MASTER);
    wr(&m, MAIA_REG_RESET, MAIA_RESET_MAGIC);
    g_assert_cmphex(maia_boot(&m, false), ==, MAIA_BOOT_STATUS_FAILED);
    g_assert_cmphex(rd(&m, MAIA_REG_BOOT_ERROR), ==, MAIA_BOOT_ERR_DMA);

    qpci_config_writew(m.dev, PCI_COMMAND, cmd);
    wr(&m, MAIA_REG_RESET, MAIA_RESET_MAGIC);
    maia_boot_ok(&m);
    queue_init(&m, &q, 0);
    queue_nop_ok(&m, &q, 0x900d);

    maia_stop(&m);
}

static void collect_dev(QPCIDevice *dev, int devfn, void *data)
{
    g_ptr_array_add(data, dev);
}

/* Two devices side by side, each with its own configuration and state. */
static void test_two_devices(void)
{
    QOSState *qs = qtest_pc_boot("-nodefaults -machine q35 "
                                 "-device maia,hbm-size=16M,queues=2 "
                                 "-device maia,hbm-size=32M,queues=3");
    g_autoptr(GPtrArray) devs = g_ptr_array_new_with_free_func(g_free);
    uint32_t queues_seen = 0;
    QPCIBar regs[2];
    int i;

    qpci_device_foreach(qs->pcibus, MAIA_PCI_VENDOR_ID, MAIA_PCI_DEVICE_ID,
                        collect_dev, devs);
    g_assert_cmpuint(devs->len, ==, 2);
    for (i = 0; i < 2; i++) {
        QPCIDevice *dev = g_ptr_array_index(devs, i);
        uint32_t nq;

        regs[i] = qpci_iomap(dev, MAIA_BAR_REGS, NULL);
        qpci_device_enable(dev);
        nq = qpci_io_readl(dev, regs[i], MAIA_REG_NUM_QUEUES);
        g_assert_cmphex(qpci_io_readl(dev, regs[i], MAIA_REG_HBM_SIZE_LO), ==,
                        nq == 2 ? 16 * MiB : 32 * MiB);
        queues_seen |= 1u << nq;
        qpci_io_writel(dev, regs[i], MAIA_REG_SCRATCH, 0x1000 + i);
    }
    g_assert_cmphex(queues_seen, ==, (1u << 2) | (1u << 3));
    for (i = 0; i < 2; i++) {
        g_assert_cmphex(qpci_io_readl(g_ptr_array_index(devs, i), regs[i],
                                      MAIA_REG_SCRATCH), ==, 0x1000 + i);
    }

    qtest_shutdown(qs);
}

/*
 * A hostile driver: random register writes (random queue rings, doorbells,
 * boot and mailbox commands, sizes and alignments) from the test's seed
 * (reproduce with --seed). Afterwards QEMU must still be alive and a reset
 * must bring the device back to a working state.
 */
static uint32_t fuzz_value(void)
{
    switch (g_test_rand_int_range(0, 4)) {
    case 0:
        return g_test_rand_int();
    case 1:
        return g_test_rand_int_range(0, 17);        /* sizes, indexes, bits */
    case 2:
        return 1u << g_test_rand_int_range(0, 32);
    default:                                        /* somewhere in RAM */
        return 0x100000 + g_test_rand_int_range(0, 0x4000) * 64;
    }
}

static void test_mmio_fuzz(void)
{
    static const unsigned sizes[] = { 1, 2, 4, 4, 4, 4, 4, 4, 4, 8 };
    Maia m;
    MaiaQueue q;
    uint32_t off, val;
    unsigned size;
    int i;

    maia_start(&m, ",hbm-size=16M,queues=4,worker-threads=1");
    maia_boot_ok(&m);       /* queues and mailbox need running firmware */
    for (i = 0; i < 4000; i++) {
        if (!g_test_rand_int_range(0, 32)) {
            /* A plausible, possibly broken, queue set-up */
            uint32_t qi = g_test_rand_int_range(0, 4);

            wr(&m, MAIA_REG_Q(qi, MAIA_Q_CTRL), 0);
            wr(&m, MAIA_REG_Q(qi, MAIA_Q_SQ_LO), fuzz_value() & ~63u);
            wr(&m, MAIA_REG_Q(qi, MAIA_Q_CQ_LO), fuzz_value() & ~63u);
            wr(&m, MAIA_REG_Q(qi, MAIA_Q_SIZE),
               1u << g_test_rand_int_range(0, 14));
            wr(&m, MAIA_REG_Q(qi, MAIA_Q_CTRL), MAIA_Q_CTRL_ENABLE |
               g_test_rand_int_range(0, 4) << MAIA_Q_CTRL_PRIO_SHIFT);
            continue;
        }
        if (g_test_rand_bit()) {            /* queue registers, doorbells */
            off = g_test_rand_bit() ?
                MAIA_REG_Q(g_test_rand_int_range(0, 5),
                           g_test_rand_int_range(0, MAIA_REG_QUEUE_STRIDE)) :
                MAIA_REG_DOORBELL(g_test_rand_int_range(0, 5));
        } else {
            off = g_test_rand_int_range(0, MAIA_REG_DOORBELL(5));
        }
        size = sizes[g_test_rand_int_range(0, G_N_ELEMENTS(sizes))];
        if (g_test_rand_int_range(0, 8)) {
            off &= ~(size - 1);
        }
        if (off == MAIA_REG_RESET) {
            continue;       /* keep the device busy rather than idle */
        }
        val = fuzz_value();
        switch (size) {
        case 1:
            qpci_io_writeb(m.dev, m.regs, off, val);
            break;
        case 2:
            qpci_io_writew(m.dev, m.regs, off, val);
            break;
        case 4:
            qpci_io_writel(m.dev, m.regs, off, val);
            break;
        default:
            qpci_io_writeq(m.dev, m.regs, off, ((uint64_t)val << 32) | val);
            break;
        }
        if (i % 16 == 0) {
            rd(&m, off & ~3u);
        }
    }
    g_assert_cmphex(rd(&m, MAIA_REG_ID), ==, MAIA_ID_MAGIC);

    wr(&m, MAIA_REG_RESET, MAIA_RESET_MAGIC);
    g_assert_cmphex(rd(&m, MAIA_REG_BOOT_STATUS), ==,
                    MAIA_BOOT_STATUS_WAIT_FW);
    maia_boot_ok(&m);
    queue_init(&m, &q, 0);
    queue_nop_ok(&m, &q, 0xf022);

    maia_stop(&m);
}

static uint64_t qemu_rss_bytes(QTestState *qts)
{
    g_autofree char *path = g_strdup_printf("/proc/%d/status", qtest_pid(qts));
    g_autofree char *text = NULL;
    const char *line;

    g_assert_true(g_file_get_contents(path, &text, NULL, NULL));
    line = strstr(text, "VmRSS:");
    g_assert_nonnull(line);
    return g_ascii_strtoull(line + strlen("VmRSS:"), NULL, 10) * KiB;
}

/*
 * A Maia 200 by its model alone: 216 GiB of HBM (not a power of two) at the
 * start of a 256 GiB BAR, 32 x 4 tiles, its chip model block; the end of
 * the HBM is memory, the rest of the BAR is not.
 */
static void test_maia200_216g(void)
{
    const uint64_t hbm = 216 * GiB, bar = 256 * GiB, base = 1 * TiB;
    uint32_t lo, hi;
    Maia m;

    maia_start(&m, ",model=maia200,worker-threads=1");
    g_assert_cmphex(rd(&m, MAIA_REG_HBM_SIZE_LO), ==, (uint32_t)hbm);
    g_assert_cmphex(rd(&m, MAIA_REG_HBM_SIZE_HI), ==, hbm >> 32);
    g_assert_cmphex(rd(&m, MAIA_REG_TOPOLOGY), ==, 32 | 4 << 8);
    g_assert_cmpuint(rd(&m, MAIA_REG_MODEL_ID), ==, MAIA_MODEL_MAIA200);
    g_assert_cmpuint(rd(&m, MAIA_REG_MODEL_HBM_MBPS), ==, 7000000);
    g_assert_cmpuint(rd(&m, MAIA_REG_MODEL_PEAK_GFLOPS(MAIA_DTYPE_MXFP4_E2M1)), ==,
                     10000000);

    qpci_config_writel(m.dev, PCI_BASE_ADDRESS_2, 0xffffffff);
    qpci_config_writel(m.dev, PCI_BASE_ADDRESS_3, 0xffffffff);
    lo = qpci_config_readl(m.dev, PCI_BASE_ADDRESS_2);
    hi = qpci_config_readl(m.dev, PCI_BASE_ADDRESS_3);
    g_assert_cmphex(~((((uint64_t)hi << 32) | lo) & ~0xfull) + 1, ==, bar);
    qpci_config_writel(m.dev, PCI_BASE_ADDRESS_2, (uint32_t)base);
    qpci_config_writel(m.dev, PCI_BASE_ADDRESS_3, base >> 32);
    qpci_device_enable(m.dev);
    qtest_writel(m.qts, base + hbm - 4, 0xc0ffee03);
    g_assert_cmphex(qtest_readl(m.qts, base + hbm - 4), ==, 0xc0ffee03);
    qtest_writel(m.qts, base + hbm, 0xc0ffee04);
    g_assert_cmphex(qtest_readl(m.qts, base + hbm), !=, 0xc0ffee04);
    g_assert_cmpuint(qemu_rss_bytes(m.qts), <, 2 * GiB);
    maia_stop(&m);

    /* An unknown model is refused with an error naming the property. */
    {
        QTestState *qts = qtest_init("-nodefaults -machine pc");
        QDict *rsp = qtest_qmp(qts, "{'execute': 'device_add', 'arguments':"
                               " {'driver': 'maia', 'id': 'x', 'model': 'maia300'}}");
        QDict *err = qdict_get_qdict(rsp, "error");

        g_assert_nonnull(err);
        g_assert_nonnull(strstr(qdict_get_str(err, "desc"), "model"));
        qobject_unref(rsp);
        qtest_quit(qts);
    }
}

static void test_hbm_64g(void)
{
    const uint64_t size = 64 * GiB, base = 1 * TiB;
    Maia m;
    uint32_t lo, hi;

    maia_start(&m, ",hbm-size=64G,worker-threads=1");
    g_assert_cmphex(rd(&m, MAIA_REG_HBM_SIZE_LO), ==, (uint32_t)size);
    g_assert_cmphex(rd(&m, MAIA_REG_HBM_SIZE_HI), ==, size >> 32);

    /* Size BAR2/3 the way firmware does. */
    qpci_config_writel(m.dev, PCI_BASE_ADDRESS_2, 0xffffffff);
    qpci_config_writel(m.dev, PCI_BASE_ADDRESS_3, 0xffffffff);
    lo = qpci_config_readl(m.dev, PCI_BASE_ADDRESS_2);
    hi = qpci_config_readl(m.dev, PCI_BASE_ADDRESS_3);
    g_assert_cmphex(~((((uint64_t)hi << 32) | lo) & ~0xfull) + 1, ==, size);

    /* Map it at 1 TiB and touch both ends. */
    qpci_config_writel(m.dev, PCI_BASE_ADDRESS_2, (uint32_t)base);
    qpci_config_writel(m.dev, PCI_BASE_ADDRESS_3, base >> 32);
    qpci_device_enable(m.dev);
    qtest_writel(m.qts, base, 0xc0ffee01);
    qtest_writel(m.qts, base + size - 4, 0xc0ffee02);
    g_assert_cmphex(qtest_readl(m.qts, base), ==, 0xc0ffee01);
    g_assert_cmphex(qtest_readl(m.qts, base + size - 4), ==, 0xc0ffee02);

    /* HBM is backed lazily: QEMU stays far below the aperture's size. */
    g_assert_cmpuint(qemu_rss_bytes(m.qts), <, 2 * GiB);

    maia_stop(&m);
}

static void test_fault_injection(void)
{
    Maia m;
    MaiaQueue q;
    QDict *rsp;
    uint32_t slot;

    maia_start(&m, ",hbm-size=16M,worker-threads=1");

    /* Bad injection requests are refused with an error. */
    rsp = qtest_qmp_assert_failure_ref(m.qts,
        "{'execute': 'qom-set', 'arguments': {'path': '/machine/peripheral/"
        "maia0', 'property': 'inject-hang', 'value': 99}}");
    qobject_unref(rsp);

    maia_boot_ok(&m);
    queue_init(&m, &q, 0);

    /* inject-fault: the next job on the queue ends with an MMU fault. */
    qtest_qmp_assert_success(m.qts,
        "{'execute': 'qom-set', 'arguments': {'path': '/machine/peripheral/"
        "maia0', 'property': 'inject-fault', 'value': 0}}");
    slot = queue_put_nop(&m, &q, 0xfa17);
    wr(&m, MAIA_REG_DOORBELL(0), q.tail);
    g_assert_cmpuint(queue_wait_status(&m, &q, slot, 0xfa17), ==,
                     MAIA_STATUS_MMU_FAULT);
    /* ...reported as an event with the queue and access latched. */
    g_assert_cmphex(rd(&m, MAIA_REG_INT_STATUS) & MAIA_INT_MMU_FAULT, ==,
                    MAIA_INT_MMU_FAULT);
    g_assert_cmphex(rd(&m, MAIA_REG_FAULT_INFO) &
                    (MAIA_FAULT_QUEUE_MASK | MAIA_FAULT_ACCESS_MASK), ==,
                    (0u << MAIA_FAULT_QUEUE_SHIFT) |
                    (MAIA_ACCESS_READ << MAIA_FAULT_ACCESS_SHIFT));
    /* Only the next one: the following job is fine. */
    queue_nop_ok(&m, &q, 0x600d);

    /* inject-hang: the next job never completes, a reset recovers. */
    qtest_qmp_assert_success(m.qts,
        "{'execute': 'qom-set', 'arguments': {'path': '/machine/peripheral/"
        "maia0', 'property': 'inject-hang', 'value': 0}}");
    slot = queue_put_nop(&m, &q, 0x4a46);
    wr(&m, MAIA_REG_DOORBELL(0), q.tail);
    g_usleep(200 * 1000);
    g_assert_false(queue_cqe_valid(&m, &q, slot));
    wr(&m, MAIA_REG_RESET, MAIA_RESET_MAGIC);
    g_assert_cmphex(rd(&m, MAIA_REG_BOOT_STATUS), ==,
                    MAIA_BOOT_STATUS_WAIT_FW);
    maia_boot_ok(&m);
    queue_init(&m, &q, 0);
    queue_nop_ok(&m, &q, 0xa11);

    maia_stop(&m);
}

/* device_add with one bad property fails with an error naming it. */
static void expect_add_error(QTestState *qts, const char *prop, int64_t val)
{
    QDict *args = qdict_new();
    QDict *rsp, *err;

    qdict_put_str(args, "driver", "maia");
    qdict_put_str(args, "id", "bad");
    qdict_put_int(args, prop, val);
    rsp = qtest_qmp(qts, "{'execute': 'device_add', 'arguments': %p}", args);
    err = qdict_get_qdict(rsp, "error");
    g_assert_nonnull(err);
    g_test_message("%s=%" PRId64 ": %s", prop, val, qdict_get_str(err, "desc"));
    g_assert_nonnull(strstr(qdict_get_str(err, "desc"), prop));
    qobject_unref(rsp);
}

static void test_properties_hotplug(void)
{
    QOSState *qs = qtest_pc_boot("-nodefaults -machine pc");
    QPCIDevice *dev = NULL;
    QPCIBar regs;

    expect_add_error(qs->qts, "hbm-size", 3 * MiB + 4 * KiB);
    expect_add_error(qs->qts, "hbm-size", 4 * KiB);
    expect_add_error(qs->qts, "hbm-size", 2 * TiB);
    expect_add_error(qs->qts, "queues", 0);
    expect_add_error(qs->qts, "queues", MAIA_MAX_QUEUES + 1);
    expect_add_error(qs->qts, "clusters", MAIA_MAX_CLUSTERS + 1);
    expect_add_error(qs->qts, "tiles-per-cluster",
                     MAIA_MAX_TILES_PER_CLUSTER + 1);
    expect_add_error(qs->qts, "sram-kib", 0);
    expect_add_error(qs->qts, "inject-hang", 0);

    /* Hot-plug on a conventional PCI bus: no PCIe capability there. */
    qtest_qmp_device_add(qs->qts, "maia", "maia1",
                         "{'addr': '0x5', 'hbm-size': 16777216, "
                         "'queues': 2, 'worker-threads': 1}");
    qpci_device_foreach(qs->pcibus, MAIA_PCI_VENDOR_ID, MAIA_PCI_DEVICE_ID,
                        save_dev, &dev);
    g_assert_nonnull(dev);
    g_assert_cmphex(qpci_find_capability(dev, PCI_CAP_ID_EXP, 0), ==, 0);
    regs = qpci_iomap(dev, MAIA_BAR_REGS, NULL);
    qpci_device_enable(dev);
    g_assert_cmphex(qpci_io_readl(dev, regs, MAIA_REG_ID), ==, MAIA_ID_MAGIC);
    g_assert_cmpuint(qpci_io_readl(dev, regs, MAIA_REG_NUM_QUEUES), ==, 2);
    g_free(dev);

    /* Unplug tears the device down (worker, eventfds, MSI-X). */
    qpci_unplug_acpi_device_test(qs->qts, "maia1", 0x5);

    qtest_shutdown(qs);
}

int main(int argc, char **argv)
{
    g_test_init(&argc, &argv, NULL);

    qtest_add_func("/maia/crc32-reference", test_crc32_reference);
    qtest_add_func("/maia/identity", test_identity);
    qtest_add_func("/maia/reset", test_reset);
    qtest_add_func("/maia/boot-nop-msix", test_boot_nop_msix);
    qtest_add_func("/maia/event-mask", test_event_mask);
    qtest_add_func("/maia/doorbell-pages", test_doorbell_pages);
    qtest_add_func("/maia/bad-access", test_bad_access);
    qtest_add_func("/maia/dma-not-ram", test_dma_not_ram);
    qtest_add_func("/maia/dma-mapping-master-off",
                   test_dma_mapping_master_off);
    qtest_add_func("/maia/mmio-fuzz", test_mmio_fuzz);
    qtest_add_func("/maia/two-devices", test_two_devices);
    qtest_add_func("/maia/hbm-64g", test_hbm_64g);
    qtest_add_func("/maia/maia200-216g", test_maia200_216g);
    qtest_add_func("/maia/fault-injection", test_fault_injection);
    qtest_add_func("/maia/properties-hotplug", test_properties_hotplug);

    return g_test_run();
}
