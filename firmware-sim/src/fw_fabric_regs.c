// SPDX-License-Identifier: MIT
/*
 * The BAR0 fabric register block (maia/hw/fabric.h, revision 1.3): device
 * registers and one block per port, decoded from the snapshot the worker
 * publishes after each fabric round (fw_fabric_port.c), and (1.10) the
 * failover thresholds, the only ones written, and two failover blocks per
 * port; (1.12) a register per port after them, the spurious retransmit
 * timeouts. Called by fw_regs.c with sim->lock held.
 *
 * A device without fabric ports reads 0 in the device registers; the
 * port blocks of ports it does not have, and holes in a port's block, are
 * unmapped (0 and a guest error, like any unmapped register).
 */
#include "fw_internal.h"
#include "maia/hw/fabric.h"

#define FW_FABRIC_REG_END	0x1000u		/* the block is 0x0800 - 0x0fff */
#define FW_FPORT_REG_END	(MAIA_FPORT_RX_HELD + 8u)

bool fw_fabric_is_reg(uint32_t offset)
{
	return offset >= MAIA_REG_FABRIC_BASE && offset < FW_FABRIC_REG_END;
}

/* A 64-bit counter at base: LO at base, HI at base + 4. */
static bool counter(uint32_t reg, uint32_t base, uint64_t value, uint32_t *val)
{
	if (reg == base)
		*val = (uint32_t)value;
	else if (reg == base + 4u)
		*val = (uint32_t)(value >> 32);
	else
		return false;
	return true;
}

static bool port_reg_read(const struct maia_sim_fabric_port_info *i, uint32_t reg,
			  uint32_t *val)
{
	const struct {
		uint32_t reg;
		uint64_t value;
	} counters[] = {
		{ MAIA_FPORT_TX_FRAMES, i->tx_frames },
		{ MAIA_FPORT_TX_BYTES, i->tx_bytes },
		{ MAIA_FPORT_RX_FRAMES, i->rx_frames },
		{ MAIA_FPORT_RX_BYTES, i->rx_bytes },
		{ MAIA_FPORT_RETRANSMITS, i->retransmits },
		{ MAIA_FPORT_RX_DROPS, i->rx_dropped + i->rx_queue_drops },
		{ MAIA_FPORT_NAK_TX, i->nak_tx },
		{ MAIA_FPORT_NAK_RX, i->nak_rx },
		{ MAIA_FPORT_TX_ERRORS, i->tx_errors },
		{ MAIA_FPORT_INJECTED_DROPS, i->injected_drops },
		{ MAIA_FPORT_LINK_NAK_TX, i->link_nak_tx },
		{ MAIA_FPORT_RX_HELD, i->rx_held },
	};

	switch (reg) {
	case MAIA_FPORT_STATE:
		*val = i->up ? MAIA_FPORT_STATE_UP : 0;
		return true;
	case MAIA_FPORT_PEER_PORT:
		*val = i->up ? i->peer_port : 0;
		return true;
	case MAIA_FPORT_PEER_SERIAL_LO:
		*val = i->up ? (uint32_t)i->peer_serial : 0;
		return true;
	case MAIA_FPORT_PEER_SERIAL_HI:
		*val = i->up ? (uint32_t)(i->peer_serial >> 32) : 0;
		return true;
	case MAIA_FPORT_MTU:
		*val = i->mtu;
		return true;
	/* 32-bit event counters: they wrap, as the driver expects of them. */
	case MAIA_FPORT_LINK_UPS:
		*val = (uint32_t)i->link_ups;
		return true;
	case MAIA_FPORT_LINK_DOWNS:
		*val = (uint32_t)i->link_downs;
		return true;
	case MAIA_FPORT_DEAD_PEER:
		*val = (uint32_t)i->dead_peer;
		return true;
	}
	for (size_t k = 0; k < sizeof(counters) / sizeof(counters[0]); k++)
		if (counter(reg, counters[k].reg, counters[k].value, val))
			return true;
	return false;
}

/* A port's failover registers (1.10): the FO block and the Q block. */
static bool fo_reg_read(const struct maia_sim_fabric_port_info *i, uint32_t reg, bool q,
			uint32_t *val)
{
	if (!q && reg == MAIA_FPORT_FO_FAILOVERS)
		*val = (uint32_t)i->failovers;	/* an event counter: wraps */
	else if (!q && reg == MAIA_FPORT_FO_STATE)
		*val = i->fo_state;
	else if (!q)
		return counter(reg, MAIA_FPORT_FO_RELAYED, i->relayed, val);
	else if (reg == MAIA_FPORT_Q_LAT_NS)
		*val = i->lat_ns;
	else if (reg == MAIA_FPORT_Q_LOSS_PPM)
		*val = i->loss_ppm;
	else if (reg == MAIA_FPORT_Q_RESENT)
		*val = (uint32_t)i->resent;
	else if (reg == MAIA_FPORT_Q_RELAY_DROPS)
		*val = (uint32_t)i->relay_drops;
	else
		return false;
	return true;
}

bool fw_fabric_reg_write_locked(struct maia_sim *sim, uint32_t offset, uint32_t value)
{
	uint32_t *t = fw_fabric_fo_threshold_locked(sim, offset);

	if (!t)
		return false;
	*t = value;
	return true;
}

bool fw_fabric_reg_read_locked(struct maia_sim *sim, uint32_t offset, uint32_t *val)
{
	const uint32_t *t = fw_fabric_fo_threshold_locked(sim, offset);
	const struct maia_sim_fabric_port_info *info;
	uint64_t serial = fw_fabric_serial(sim);
	unsigned int port;

	switch (offset) {
	case MAIA_REG_FABRIC_PORTS:
		*val = fw_fabric_ports(sim);
		return true;
	case MAIA_REG_FABRIC_SERIAL_LO:
		*val = (uint32_t)serial;
		return true;
	case MAIA_REG_FABRIC_SERIAL_HI:
		*val = (uint32_t)(serial >> 32);
		return true;
	case MAIA_REG_FABRIC_LINK_EVENTS:
		*val = fw_fabric_link_events_locked(sim);
		return true;
	case MAIA_REG_FABRIC_WINDOWS:
		/* Every device with ports has the window table. */
		*val = fw_fabric_ports(sim) ? MAIA_FABRIC_MAX_WINDOWS : 0;
		return true;
	}
	if (t) {
		*val = *t;
		return true;
	}
	if (offset >= MAIA_REG_FPORT_FO_BASE && offset < MAIA_REG_FPORT_BASE) {
		info = fw_fabric_info_locked(sim, (offset - MAIA_REG_FPORT_FO_BASE) /
						  MAIA_REG_FPORT_FO_STRIDE);
		return info && fo_reg_read(info, (offset - MAIA_REG_FPORT_FO_BASE) %
					   MAIA_REG_FPORT_FO_STRIDE, false, val);
	}
	if (offset >= MAIA_REG_FPORT_R_BASE) {
		info = fw_fabric_info_locked(sim, (offset - MAIA_REG_FPORT_R_BASE) /
						  MAIA_REG_FPORT_R_STRIDE);
		if (!info)
			return false;
		*val = (uint32_t)info->spurious_rto;	/* an event counter: wraps */
		return true;
	}
	if (offset >= MAIA_REG_FPORT_Q_BASE) {
		info = fw_fabric_info_locked(sim, (offset - MAIA_REG_FPORT_Q_BASE) /
						  MAIA_REG_FPORT_Q_STRIDE);
		return info && fo_reg_read(info, (offset - MAIA_REG_FPORT_Q_BASE) %
					   MAIA_REG_FPORT_Q_STRIDE, true, val);
	}
	if (offset < MAIA_REG_FPORT_BASE)
		return false;
	port = (offset - MAIA_REG_FPORT_BASE) / MAIA_REG_FPORT_STRIDE;
	info = fw_fabric_info_locked(sim, port);
	if (!info || (offset - MAIA_REG_FPORT_BASE) % MAIA_REG_FPORT_STRIDE >= FW_FPORT_REG_END)
		return false;
	return port_reg_read(info, (offset - MAIA_REG_FPORT_BASE) % MAIA_REG_FPORT_STRIDE, val);
}
