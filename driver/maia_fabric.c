// SPDX-License-Identifier: GPL-2.0-only
/*
 * Maia accelerator driver: the scale-out fabric (maia/hw/fabric.h).
 *
 * - Ports: their state and counters come from the device's fabric register
 *   block (a snapshot the device refreshes every few ms), through
 *   DRM_IOCTL_MAIA_FABRIC_PORT and sysfs (fabric/portN/<counter> under the
 *   PCI device). A link going up or down raises MAIA_INT_FABRIC_LINK; the
 *   event thread logs it and sends a change uevent.
 * - Failover (1.10): per port, sysfs only, what collectives routed around
 *   it and why (failovers, failover_state, relayed, ...), and the two
 *   thresholds, fabric/failover_latency_ns and failover_loss_ppm (writable
 *   by root).
 * - Spurious retransmit timeouts (1.12): per port, sysfs only, spurious_rto.
 * - Windows: DRM_IOCTL_MAIA_FABRIC_WINDOW opens and closes them with the
 *   mailbox. The driver keeps a context's windows so that they close with
 *   the mapping under them (before its pages go) and with the file.
 *
 * Fabric commands themselves (remote write and read, collectives) are
 * ordinary commands of a SUBMIT; the device checks them and reports their
 * errors in the job's status.
 */

#include <drm/drm_drv.h>
#include <drm/drm_managed.h>
#include <drm/maia_accel.h>
#include <linux/kobject.h>
#include <linux/pci.h>
#include <linux/slab.h>
#include <linux/string.h>
#include <linux/sysfs.h>

#include <maia/hw/fabric.h>
#include <maia/hw/mbox.h>
#include <maia/hw/mmu.h>

#include "maia_drv.h"
#include "maia_fabric.h"
#include "maia_hw.h"
#include "maia_reset.h"
#include "maia_sysfs.h"
#include "maia_vm.h"

struct maia_fabric_port {
	struct kobject kobj;		/* fabric/portN */
	struct maia_device *mdev;
	unsigned int index;
};

struct maia_fabric {
	unsigned int nports;
	u64 serial;
	struct kobject *dir;		/* fabric/ under the PCI device */
	struct maia_fabric_port *port[MAIA_FABRIC_MAX_PORTS];
	/* Protects @up: which ports the event thread last saw up. */
	struct mutex lock;
	unsigned long up;
};

unsigned int maia_fabric_ports(struct maia_device *mdev)
{
	return mdev->fabric ? mdev->fabric->nports : 0;
}

u64 maia_fabric_serial(struct maia_device *mdev)
{
	return mdev->fabric ? mdev->fabric->serial : 0;
}

/* A 64-bit counter of the snapshot: HI, LO, HI again in case LO wrapped. */
static u64 maia_fabric_rd64(struct maia_device *mdev, u32 reg)
{
	u32 hi, lo, hi2;

	hi = maia_rd(mdev, reg + 4);
	lo = maia_rd(mdev, reg);
	hi2 = maia_rd(mdev, reg + 4);
	if (hi != hi2)
		lo = maia_rd(mdev, reg);
	return (u64)hi2 << 32 | lo;
}

static u64 maia_fabric_peer_serial(struct maia_device *mdev, unsigned int port)
{
	return maia_rd(mdev, MAIA_REG_FPORT(port, MAIA_FPORT_PEER_SERIAL_LO)) |
	       (u64)maia_rd(mdev, MAIA_REG_FPORT(port, MAIA_FPORT_PEER_SERIAL_HI)) << 32;
}

/* --- sysfs: fabric/portN/<counter> ------------------------------------ */

struct maia_fabric_attr {
	struct kobj_attribute kattr;
	u32 base, stride;		/* per-port block: MAIA_REG_FPORT_*, _FO_*, _Q_*, _R_* */
	u32 reg;			/* MAIA_FPORT_* in it */
	bool wide;			/* a 64-bit counter */
	u32 revision;			/* the first MAIA_HW_REVISION_* with it */
};

/* MAIA_FPORT_FO_STATE as words: why collectives avoid the port now. */
static ssize_t maia_fabric_fo_state_show(char *buf, u32 state)
{
	if (!state)
		return sysfs_emit(buf, "ok\n");
	return sysfs_emit(buf, "%s%s%s\n", state & MAIA_FPORT_FO_DOWN ? "down " : "",
			  state & MAIA_FPORT_FO_LATENCY ? "latency " : "",
			  state & MAIA_FPORT_FO_LOSS ? "loss " : "");
}

static ssize_t maia_fabric_attr_show(struct kobject *kobj, struct kobj_attribute *kattr,
				     char *buf)
{
	struct maia_fabric_port *p = container_of(kobj, struct maia_fabric_port, kobj);
	struct maia_fabric_attr *a = container_of(kattr, struct maia_fabric_attr, kattr);
	struct maia_device *mdev = p->mdev;
	u32 reg = a->base + a->stride * p->index + a->reg;
	ssize_t ret;
	int idx;

	if (!drm_dev_enter(&mdev->drm, &idx))
		return -ENODEV;
	if (a->base == MAIA_REG_FPORT_BASE && a->reg == MAIA_FPORT_STATE)
		ret = sysfs_emit(buf, "%s\n", maia_rd(mdev, reg) & MAIA_FPORT_STATE_UP ?
				 "up" : "down");
	else if (a->base == MAIA_REG_FPORT_FO_BASE && a->reg == MAIA_FPORT_FO_STATE)
		ret = maia_fabric_fo_state_show(buf, maia_rd(mdev, reg));
	else if (a->base == MAIA_REG_FPORT_BASE && a->reg == MAIA_FPORT_PEER_SERIAL_LO)
		ret = sysfs_emit(buf, "0x%016llx\n", maia_fabric_peer_serial(mdev, p->index));
	else if (a->wide)
		ret = sysfs_emit(buf, "%llu\n", maia_fabric_rd64(mdev, reg));
	else
		ret = sysfs_emit(buf, "%u\n", maia_rd(mdev, reg));
	drm_dev_exit(idx);
	return ret;
}

#define MAIA_FABRIC_ATTR_BLOCK(_name, _base, _stride, _reg, _wide, _rev) \
	static struct maia_fabric_attr maia_fabric_attr_##_name = { \
		.kattr = __ATTR(_name, 0444, maia_fabric_attr_show, NULL), \
		.base = (_base), .stride = (_stride), .reg = (_reg), .wide = (_wide), \
		.revision = (_rev), \
	}
#define MAIA_FABRIC_ATTR_REV(_name, _reg, _wide, _rev) \
	MAIA_FABRIC_ATTR_BLOCK(_name, MAIA_REG_FPORT_BASE, MAIA_REG_FPORT_STRIDE, _reg, _wide, _rev)
#define MAIA_FABRIC_ATTR(_name, _reg, _wide) \
	MAIA_FABRIC_ATTR_REV(_name, _reg, _wide, MAIA_HW_REVISION_FABRIC)
#define MAIA_FABRIC_ATTR_FO(_name, _reg, _wide) \
	MAIA_FABRIC_ATTR_BLOCK(_name, MAIA_REG_FPORT_FO_BASE, MAIA_REG_FPORT_FO_STRIDE, _reg, \
			       _wide, MAIA_HW_REVISION_FAILOVER)
#define MAIA_FABRIC_ATTR_Q(_name, _reg) \
	MAIA_FABRIC_ATTR_BLOCK(_name, MAIA_REG_FPORT_Q_BASE, MAIA_REG_FPORT_Q_STRIDE, _reg, \
			       false, MAIA_HW_REVISION_FAILOVER)
#define MAIA_FABRIC_ATTR_R(_name, _reg) \
	MAIA_FABRIC_ATTR_BLOCK(_name, MAIA_REG_FPORT_R_BASE, MAIA_REG_FPORT_R_STRIDE, _reg, \
			       false, MAIA_HW_REVISION_SPURIOUS_RTO)

MAIA_FABRIC_ATTR(state, MAIA_FPORT_STATE, false);
MAIA_FABRIC_ATTR(peer_serial, MAIA_FPORT_PEER_SERIAL_LO, false);
MAIA_FABRIC_ATTR(peer_port, MAIA_FPORT_PEER_PORT, false);
MAIA_FABRIC_ATTR(mtu, MAIA_FPORT_MTU, false);
MAIA_FABRIC_ATTR(link_ups, MAIA_FPORT_LINK_UPS, false);
MAIA_FABRIC_ATTR(link_downs, MAIA_FPORT_LINK_DOWNS, false);
MAIA_FABRIC_ATTR(dead_peer, MAIA_FPORT_DEAD_PEER, false);
MAIA_FABRIC_ATTR(tx_frames, MAIA_FPORT_TX_FRAMES, true);
MAIA_FABRIC_ATTR(tx_bytes, MAIA_FPORT_TX_BYTES, true);
MAIA_FABRIC_ATTR(rx_frames, MAIA_FPORT_RX_FRAMES, true);
MAIA_FABRIC_ATTR(rx_bytes, MAIA_FPORT_RX_BYTES, true);
MAIA_FABRIC_ATTR(retransmits, MAIA_FPORT_RETRANSMITS, true);
MAIA_FABRIC_ATTR(rx_drops, MAIA_FPORT_RX_DROPS, true);
MAIA_FABRIC_ATTR(nak_tx, MAIA_FPORT_NAK_TX, true);
MAIA_FABRIC_ATTR(nak_rx, MAIA_FPORT_NAK_RX, true);
MAIA_FABRIC_ATTR(tx_errors, MAIA_FPORT_TX_ERRORS, true);
MAIA_FABRIC_ATTR(injected_drops, MAIA_FPORT_INJECTED_DROPS, true);
MAIA_FABRIC_ATTR_REV(link_nak_tx, MAIA_FPORT_LINK_NAK_TX, true, MAIA_HW_REVISION_LINK_NAKS);
MAIA_FABRIC_ATTR_REV(rx_held, MAIA_FPORT_RX_HELD, true, MAIA_HW_REVISION_LINK_NAKS);
MAIA_FABRIC_ATTR_FO(failovers, MAIA_FPORT_FO_FAILOVERS, false);
MAIA_FABRIC_ATTR_FO(failover_state, MAIA_FPORT_FO_STATE, false);
MAIA_FABRIC_ATTR_FO(relayed, MAIA_FPORT_FO_RELAYED, true);
MAIA_FABRIC_ATTR_Q(latency_ns, MAIA_FPORT_Q_LAT_NS);
MAIA_FABRIC_ATTR_Q(loss_ppm, MAIA_FPORT_Q_LOSS_PPM);
MAIA_FABRIC_ATTR_Q(resent, MAIA_FPORT_Q_RESENT);
MAIA_FABRIC_ATTR_Q(relay_drops, MAIA_FPORT_Q_RELAY_DROPS);
MAIA_FABRIC_ATTR_R(spurious_rto, MAIA_FPORT_R_SPURIOUS_RTO);

static struct attribute *maia_fabric_port_attrs[] = {
	&maia_fabric_attr_state.kattr.attr,
	&maia_fabric_attr_peer_serial.kattr.attr,
	&maia_fabric_attr_peer_port.kattr.attr,
	&maia_fabric_attr_mtu.kattr.attr,
	&maia_fabric_attr_link_ups.kattr.attr,
	&maia_fabric_attr_link_downs.kattr.attr,
	&maia_fabric_attr_dead_peer.kattr.attr,
	&maia_fabric_attr_tx_frames.kattr.attr,
	&maia_fabric_attr_tx_bytes.kattr.attr,
	&maia_fabric_attr_rx_frames.kattr.attr,
	&maia_fabric_attr_rx_bytes.kattr.attr,
	&maia_fabric_attr_retransmits.kattr.attr,
	&maia_fabric_attr_rx_drops.kattr.attr,
	&maia_fabric_attr_nak_tx.kattr.attr,
	&maia_fabric_attr_nak_rx.kattr.attr,
	&maia_fabric_attr_tx_errors.kattr.attr,
	&maia_fabric_attr_injected_drops.kattr.attr,
	&maia_fabric_attr_link_nak_tx.kattr.attr,
	&maia_fabric_attr_rx_held.kattr.attr,
	&maia_fabric_attr_failovers.kattr.attr,
	&maia_fabric_attr_failover_state.kattr.attr,
	&maia_fabric_attr_relayed.kattr.attr,
	&maia_fabric_attr_latency_ns.kattr.attr,
	&maia_fabric_attr_loss_ppm.kattr.attr,
	&maia_fabric_attr_resent.kattr.attr,
	&maia_fabric_attr_relay_drops.kattr.attr,
	&maia_fabric_attr_spurious_rto.kattr.attr,
	NULL,
};

/* A counter the device's revision does not have gets no file. */
static umode_t maia_fabric_port_attr_visible(struct kobject *kobj, struct attribute *attr,
					     int n)
{
	struct maia_fabric_port *p = container_of(kobj, struct maia_fabric_port, kobj);
	struct maia_fabric_attr *a = container_of(attr, struct maia_fabric_attr, kattr.attr);

	return maia_hw_has(p->mdev, a->revision) ? attr->mode : 0;
}

static const struct attribute_group maia_fabric_port_group = {
	.attrs = maia_fabric_port_attrs,
	.is_visible = maia_fabric_port_attr_visible,
};
__ATTRIBUTE_GROUPS(maia_fabric_port);

/* --- sysfs: fabric/failover_latency_ns, failover_loss_ppm (1.10) -------- */

static u32 maia_fabric_threshold_reg(struct kobj_attribute *kattr)
{
	return strcmp(kattr->attr.name, "failover_latency_ns") ? MAIA_REG_FABRIC_FO_LOSS_PPM :
								  MAIA_REG_FABRIC_FO_LAT_NS;
}

/* fabric/ is a child of the PCI device's kobject. */
static struct maia_device *maia_fabric_dir_mdev(struct kobject *kobj)
{
	return maia_from_dev(kobj_to_dev(kobj->parent));
}

static ssize_t maia_fabric_threshold_show(struct kobject *kobj, struct kobj_attribute *kattr,
					  char *buf)
{
	struct maia_device *mdev = maia_fabric_dir_mdev(kobj);
	ssize_t ret;
	int idx;

	if (!drm_dev_enter(&mdev->drm, &idx))
		return -ENODEV;
	ret = sysfs_emit(buf, "%u\n", maia_rd(mdev, maia_fabric_threshold_reg(kattr)));
	drm_dev_exit(idx);
	return ret;
}

/* 0 turns that trigger off; the device reads the register at each collective's start. */
static ssize_t maia_fabric_threshold_store(struct kobject *kobj, struct kobj_attribute *kattr,
					   const char *buf, size_t count)
{
	struct maia_device *mdev = maia_fabric_dir_mdev(kobj);
	u32 val;
	int idx, ret;

	ret = kstrtou32(buf, 0, &val);
	if (ret)
		return ret;
	if (!drm_dev_enter(&mdev->drm, &idx))
		return -ENODEV;
	maia_wr(mdev, maia_fabric_threshold_reg(kattr), val);
	drm_dev_exit(idx);
	return count;
}

static struct kobj_attribute maia_fabric_attr_failover_latency_ns =
	__ATTR(failover_latency_ns, 0644, maia_fabric_threshold_show, maia_fabric_threshold_store);
static struct kobj_attribute maia_fabric_attr_failover_loss_ppm =
	__ATTR(failover_loss_ppm, 0644, maia_fabric_threshold_show, maia_fabric_threshold_store);

static struct attribute *maia_fabric_dir_attrs[] = {
	&maia_fabric_attr_failover_latency_ns.attr,
	&maia_fabric_attr_failover_loss_ppm.attr,
	NULL,
};

static const struct attribute_group maia_fabric_dir_group = {
	.attrs = maia_fabric_dir_attrs,
};

static void maia_fabric_port_release(struct kobject *kobj)
{
	kfree(container_of(kobj, struct maia_fabric_port, kobj));
}

static const struct kobj_type maia_fabric_port_ktype = {
	.release = maia_fabric_port_release,
	.sysfs_ops = &kobj_sysfs_ops,
	.default_groups = maia_fabric_port_groups,
};

/* Managed: the sysfs files go before remove unmaps the registers. */
static void maia_fabric_fini(void *arg)
{
	struct maia_fabric *fabric = arg;
	unsigned int i;

	for (i = 0; i < fabric->nports; i++)
		kobject_put(&fabric->port[i]->kobj);
	kobject_put(fabric->dir);
}

int maia_fabric_init(struct maia_device *mdev)
{
	struct device *dev = mdev->drm.dev;
	struct maia_fabric *fabric;
	unsigned int i, nports;
	int ret;

	if (!maia_hw_has(mdev, MAIA_HW_REVISION_FABRIC) || !(mdev->hw.caps & MAIA_CAP_FABRIC))
		return 0;
	nports = maia_rd(mdev, MAIA_REG_FABRIC_PORTS);
	if (!nports)
		return 0;
	if (nports > MAIA_FABRIC_MAX_PORTS) {
		maia_err(mdev, "device reports %u fabric ports, at most %u exist\n",
			 nports, MAIA_FABRIC_MAX_PORTS);
		return -ENODEV;
	}

	/* Lives until the DRM device goes: the event thread may still run. */
	fabric = drmm_kzalloc(&mdev->drm, sizeof(*fabric), GFP_KERNEL);
	if (!fabric)
		return -ENOMEM;
	ret = drmm_mutex_init(&mdev->drm, &fabric->lock);
	if (ret)
		return ret;
	fabric->serial = maia_rd(mdev, MAIA_REG_FABRIC_SERIAL_LO) |
			 (u64)maia_rd(mdev, MAIA_REG_FABRIC_SERIAL_HI) << 32;

	fabric->dir = kobject_create_and_add("fabric", &dev->kobj);
	if (!fabric->dir)
		return -ENOMEM;
	if (maia_hw_has(mdev, MAIA_HW_REVISION_FAILOVER)) {
		ret = sysfs_create_group(fabric->dir, &maia_fabric_dir_group);
		if (ret) {
			kobject_put(fabric->dir);
			return ret;
		}
	}
	for (i = 0; i < nports; i++) {
		struct maia_fabric_port *p = kzalloc(sizeof(*p), GFP_KERNEL);

		if (!p) {
			ret = -ENOMEM;
			goto err;
		}
		p->mdev = mdev;
		p->index = i;
		ret = kobject_init_and_add(&p->kobj, &maia_fabric_port_ktype, fabric->dir,
					   "port%u", i);
		if (ret) {
			kobject_put(&p->kobj);
			goto err;
		}
		fabric->port[i] = p;
		fabric->nports = i + 1;
		if (maia_rd(mdev, MAIA_REG_FPORT(i, MAIA_FPORT_STATE)) & MAIA_FPORT_STATE_UP)
			__set_bit(i, &fabric->up);
	}
	ret = devm_add_action_or_reset(dev, maia_fabric_fini, fabric);
	if (ret)
		return ret;
	mdev->fabric = fabric;
	maia_info(mdev, "fabric: %u ports, serial 0x%016llx\n", nports, fabric->serial);
	return 0;

err:
	maia_fabric_fini(fabric);
	return ret;
}

/* --- link events -------------------------------------------------------- */

static void maia_fabric_uevent(struct maia_device *mdev, unsigned int port, bool up,
			       u64 peer_serial, u32 peer_port)
{
	char port_env[32], link_env[32], serial_env[48], peer_port_env[32];
	char *envp[5];

	snprintf(port_env, sizeof(port_env), "MAIA_FABRIC_PORT=%u", port);
	snprintf(link_env, sizeof(link_env), "MAIA_FABRIC_LINK=%s", up ? "up" : "down");
	snprintf(serial_env, sizeof(serial_env), "MAIA_FABRIC_PEER_SERIAL=0x%016llx",
		 peer_serial);
	snprintf(peer_port_env, sizeof(peer_port_env), "MAIA_FABRIC_PEER_PORT=%u", peer_port);
	envp[0] = port_env;
	envp[1] = link_env;
	envp[2] = serial_env;
	envp[3] = peer_port_env;
	envp[4] = NULL;
	kobject_uevent_env(&mdev->drm.dev->kobj, KOBJ_CHANGE, envp);
}

void maia_fabric_link_event(struct maia_device *mdev)
{
	struct maia_fabric *fabric = mdev->fabric;
	unsigned int i;
	int idx;

	if (!fabric || !drm_dev_enter(&mdev->drm, &idx))
		return;
	mutex_lock(&fabric->lock);
	for (i = 0; i < fabric->nports; i++) {
		u32 state = maia_rd(mdev, MAIA_REG_FPORT(i, MAIA_FPORT_STATE));
		bool up = state & MAIA_FPORT_STATE_UP;
		u64 serial = 0;
		u32 peer = 0;

		if (up == test_bit(i, &fabric->up))
			continue;
		__assign_bit(i, &fabric->up, up);
		if (up) {
			serial = maia_fabric_peer_serial(mdev, i);
			peer = maia_rd(mdev, MAIA_REG_FPORT(i, MAIA_FPORT_PEER_PORT));
			maia_info(mdev, "fabric port %u up: peer 0x%016llx port %u\n",
				  i, serial, peer);
		} else {
			maia_info(mdev, "fabric port %u down\n", i);
		}
		maia_fabric_uevent(mdev, i, up, serial, peer);
	}
	mutex_unlock(&fabric->lock);
	drm_dev_exit(idx);
}

/* --- DRM_IOCTL_MAIA_FABRIC_PORT ---------------------------------------- */

int maia_fabric_port_ioctl(struct drm_device *drm, void *data, struct drm_file *file)
{
	struct maia_device *mdev = to_maia_device(drm);
	struct drm_maia_fabric_port *args = data;
	struct drm_maia_fabric_port out = { .port = args->port };
	unsigned int p = args->port;
	int idx;

	if (args->flags || args->pad)
		return -EINVAL;
	if (!mdev->fabric)
		return -ENODEV;
	if (p >= mdev->fabric->nports)
		return -EINVAL;
	if (!drm_dev_enter(drm, &idx))
		return -ENODEV;
	if (maia_rd(mdev, MAIA_REG_FPORT(p, MAIA_FPORT_STATE)) & MAIA_FPORT_STATE_UP) {
		out.flags |= DRM_MAIA_FABRIC_PORT_UP;
		out.peer_serial = maia_fabric_peer_serial(mdev, p);
		out.peer_port = maia_rd(mdev, MAIA_REG_FPORT(p, MAIA_FPORT_PEER_PORT));
	}
	out.mtu = maia_rd(mdev, MAIA_REG_FPORT(p, MAIA_FPORT_MTU));
	out.tx_frames = maia_fabric_rd64(mdev, MAIA_REG_FPORT(p, MAIA_FPORT_TX_FRAMES));
	out.tx_bytes = maia_fabric_rd64(mdev, MAIA_REG_FPORT(p, MAIA_FPORT_TX_BYTES));
	out.rx_frames = maia_fabric_rd64(mdev, MAIA_REG_FPORT(p, MAIA_FPORT_RX_FRAMES));
	out.rx_bytes = maia_fabric_rd64(mdev, MAIA_REG_FPORT(p, MAIA_FPORT_RX_BYTES));
	out.retransmits = maia_fabric_rd64(mdev, MAIA_REG_FPORT(p, MAIA_FPORT_RETRANSMITS));
	out.rx_drops = maia_fabric_rd64(mdev, MAIA_REG_FPORT(p, MAIA_FPORT_RX_DROPS));
	out.nak_tx = maia_fabric_rd64(mdev, MAIA_REG_FPORT(p, MAIA_FPORT_NAK_TX));
	out.nak_rx = maia_fabric_rd64(mdev, MAIA_REG_FPORT(p, MAIA_FPORT_NAK_RX));
	out.tx_errors = maia_fabric_rd64(mdev, MAIA_REG_FPORT(p, MAIA_FPORT_TX_ERRORS));
	out.injected_drops = maia_fabric_rd64(mdev, MAIA_REG_FPORT(p, MAIA_FPORT_INJECTED_DROPS));
	out.link_ups = maia_rd(mdev, MAIA_REG_FPORT(p, MAIA_FPORT_LINK_UPS));
	out.link_downs = maia_rd(mdev, MAIA_REG_FPORT(p, MAIA_FPORT_LINK_DOWNS));
	out.dead_peer = maia_rd(mdev, MAIA_REG_FPORT(p, MAIA_FPORT_DEAD_PEER));
	if (maia_hw_has(mdev, MAIA_HW_REVISION_LINK_NAKS)) {
		out.link_nak_tx = maia_fabric_rd64(mdev, MAIA_REG_FPORT(p, MAIA_FPORT_LINK_NAK_TX));
		out.rx_held = maia_fabric_rd64(mdev, MAIA_REG_FPORT(p, MAIA_FPORT_RX_HELD));
	}
	drm_dev_exit(idx);
	*args = out;
	return 0;
}

/* --- windows ------------------------------------------------------------ */

/*
 * Closes @w on the device unless a reset already did. Caller holds the
 * context's lock and the reset lock for reading.
 */
static void maia_fabric_window_close_hw(struct maia_context *ctx, struct maia_fabric_window *w)
{
	struct maia_device *mdev = ctx->mdev;
	u32 args[MAIA_MBOX_NARGS] = { w->key };
	int idx, ret;

	lockdep_assert_held(&ctx->lock);
	maia_reset_assert_read_held(mdev);
	if (w->resets != maia_reset_count(mdev) || !drm_dev_enter(&mdev->drm, &idx))
		return;
	ret = maia_mbox_cmd(mdev, MAIA_MBOX_FABRIC_WINDOW_CLOSE, args, NULL);
	drm_dev_exit(idx);
	/* ENOENT: the device lost it (a reset not counted yet); it is closed. */
	if (ret && ret != -ENOENT)
		maia_err_ratelimited(mdev, "asid %u: cannot close fabric window %#x: %pe\n",
				     ctx->asid, w->key, ERR_PTR(ret));
}

static void maia_fabric_window_free(struct maia_file *mf, struct maia_fabric_window *w)
{
	lockdep_assert_held(&mf->ctx->lock);
	list_del(&w->link);
	mf->fabric_nwindows--;
	kfree(w);
}

/* Closes @mf's windows that overlap [@va, @va + @size); caller holds its context's lock. */
void maia_fabric_close_range(struct maia_file *mf, u64 va, u64 size)
{
	struct maia_context *ctx = mf->ctx;
	struct maia_device *mdev = ctx->mdev;
	struct maia_fabric_window *w, *next;
	bool locked = false;

	lockdep_assert_held(&ctx->lock);
	list_for_each_entry_safe(w, next, &mf->fabric_windows, link) {
		if (w->va >= va + size || va >= w->va + w->size)
			continue;
		if (!locked) {
			maia_reset_read_lock_uninterruptible(mdev);
			locked = true;
		}
		maia_fabric_window_close_hw(ctx, w);
		maia_fabric_window_free(mf, w);
	}
	if (locked)
		maia_reset_read_unlock(mdev);
}

/* At close, with the ASID disabled (which closed them on the device). */
void maia_fabric_free_windows(struct maia_file *mf)
{
	struct maia_fabric_window *w, *next;

	list_for_each_entry_safe(w, next, &mf->fabric_windows, link)
		maia_fabric_window_free(mf, w);
}

/* The single mapping of @ctx that holds [@va, @va + @size), or NULL. */
static struct maia_vm_mapping *maia_fabric_find_mapping(struct maia_context *ctx,
							u64 va, u64 size)
{
	struct drm_mm_node *node;

	drm_mm_for_each_node_in_range(node, &ctx->va_mm, va, va + size) {
		if (node->start <= va && va + size <= node->start + node->size)
			return container_of(node, struct maia_vm_mapping, node);
	}
	return NULL;
}

static int maia_fabric_window_open(struct maia_file *mf, struct drm_maia_fabric_window *args)
{
	struct maia_context *ctx = mf->ctx;
	struct maia_device *mdev = ctx->mdev;
	u32 access = 0, resp[MAIA_MBOX_NARGS];
	struct maia_fabric_window *w;
	struct maia_vm_mapping *m;
	u32 mbox[MAIA_MBOX_NARGS];
	int idx, ret;

	if (!args->access || (args->access & ~(DRM_MAIA_FABRIC_REMOTE_READ |
					       DRM_MAIA_FABRIC_REMOTE_WRITE)) ||
	    args->key || !args->size || !IS_ALIGNED(args->va | args->size, MAIA_PAGE_SIZE) ||
	    args->va < DRM_MAIA_VA_START || args->va >= DRM_MAIA_VA_END ||
	    args->size > DRM_MAIA_VA_END - args->va)
		return -EINVAL;
	if (args->access & DRM_MAIA_FABRIC_REMOTE_READ)
		access |= MAIA_ACCESS_READ;
	if (args->access & DRM_MAIA_FABRIC_REMOTE_WRITE)
		access |= MAIA_ACCESS_WRITE;

	w = kzalloc(sizeof(*w), GFP_KERNEL);
	if (!w)
		return -ENOMEM;
	ret = mutex_lock_interruptible(&ctx->lock);
	if (ret)
		goto err_free;
	m = maia_fabric_find_mapping(ctx, args->va, args->size);
	if (!m) {
		ret = -ENOENT;
		goto err_unlock;
	}
	if ((m->flags & DRM_MAIA_VM_READONLY) && (access & MAIA_ACCESS_WRITE)) {
		ret = -EACCES;
		goto err_unlock;
	}
	if (mf->fabric_nwindows >= DRM_MAIA_MAX_FABRIC_WINDOWS) {
		ret = -ENOSPC;
		goto err_unlock;
	}

	ret = maia_reset_read_lock(mdev);
	if (ret)
		goto err_unlock;
	if (!drm_dev_enter(&mdev->drm, &idx)) {
		ret = -ENODEV;
		goto err_reset;
	}
	mbox[0] = ctx->asid | access << 16;
	mbox[1] = lower_32_bits(args->va);
	mbox[2] = upper_32_bits(args->va);
	mbox[3] = args->size >> MAIA_PAGE_SHIFT;
	ret = maia_mbox_cmd(mdev, MAIA_MBOX_FABRIC_WINDOW_OPEN, mbox, resp);
	drm_dev_exit(idx);
	if (ret)
		goto err_reset;
	w->va = args->va;
	w->size = args->size;
	w->key = resp[0];
	w->resets = maia_reset_count(mdev);
	maia_reset_read_unlock(mdev);

	list_add_tail(&w->link, &mf->fabric_windows);
	mf->fabric_nwindows++;
	mutex_unlock(&ctx->lock);
	args->key = w->key;
	maia_dbg(mdev, "asid %u: fabric window %#x at %#llx+%#llx\n",
		 ctx->asid, w->key, w->va, w->size);
	return 0;

err_reset:
	maia_reset_read_unlock(mdev);
err_unlock:
	mutex_unlock(&ctx->lock);
err_free:
	kfree(w);
	return ret;
}

static int maia_fabric_window_close(struct maia_file *mf, u32 key)
{
	struct maia_context *ctx = mf->ctx;
	struct maia_device *mdev = ctx->mdev;
	struct maia_fabric_window *w;
	int ret;

	ret = mutex_lock_interruptible(&ctx->lock);
	if (ret)
		return ret;
	ret = -ENOENT;
	list_for_each_entry(w, &mf->fabric_windows, link) {
		if (w->key != key)
			continue;
		ret = maia_reset_read_lock(mdev);
		if (ret)
			break;
		maia_fabric_window_close_hw(ctx, w);
		maia_reset_read_unlock(mdev);
		maia_fabric_window_free(mf, w);
		break;
	}
	mutex_unlock(&ctx->lock);
	return ret;
}

int maia_fabric_window_ioctl(struct drm_device *drm, void *data, struct drm_file *file)
{
	struct maia_device *mdev = to_maia_device(drm);
	struct maia_file *mf = to_maia_file(file);
	struct drm_maia_fabric_window *args = data;

	if (args->pad)
		return -EINVAL;
	if (!mdev->fabric)
		return -ENODEV;
	switch (args->op) {
	case DRM_MAIA_FABRIC_WINDOW_OPEN:
		return maia_fabric_window_open(mf, args);
	case DRM_MAIA_FABRIC_WINDOW_CLOSE:
		if (args->access || args->va || args->size)
			return -EINVAL;
		return maia_fabric_window_close(mf, args->key);
	default:
		return -EINVAL;
	}
}
