/* SPDX-License-Identifier: MIT */
/*
 * The device time model (Documentation/hw/time-model.rst): the chip presets
 * and the cost of one command on them. Pure functions of their arguments:
 * no clock, no device state, so the same command costs the same on any host
 * and unit tests check the formulas against closed-form values.
 */
#ifndef FWSIM_MODEL_H
#define FWSIM_MODEL_H

#include <stdbool.h>
#include <stdint.h>

#include "maia/hw/dtype.h"
#include "maia/hw/model.h"
#include "maia/hw/tvp.h"

/* What a command keeps busy; each class has its own dynamic power. */
enum fw_pm_class {
	FW_PM_TENSOR,		/* matrix ops: GEMM, batched GEMM, attention */
	FW_PM_VECTOR,		/* other tensor-engine ops: eltwise, norms, ... */
	FW_PM_DMA,		/* DMA copy and fill, fabric transfers */
	FW_PM_CLASSES,
	FW_PM_IDLE = -1,
};

/* One chip preset: every parameter of the model, in one table (fw_model.c). */
struct fw_chip {
	unsigned int id;		/* MAIA_MODEL_* */
	const char *name;		/* "maia100", the QEMU property's value */
	unsigned int clusters, tiles_per_cluster;
	uint64_t hbm_bytes;		/* capacity: the default hbm-size */
	uint32_t sram_kib;		/* on-chip SRAM, whole chip */
	uint32_t hbm_mbps, host_mbps, link_mbps, link_lat_ns;
	uint32_t cmd_ns;		/* fixed cost of a command that does work */
	uint32_t light_cmd_ns;		/* ... of NOP, fences, timestamps, semaphores */
	uint32_t job_ns;		/* fixed cost of a job: fetch and completion */
	uint32_t vector_gflops;
	uint32_t peak_gflops[MAIA_DTYPE_COUNT];
	/* Power (the power controller's model, fw_telemetry.c) */
	uint32_t clock_mhz;		/* nominal: the peaks hold at this clock */
	uint32_t tdp_w;			/* default power cap */
	uint32_t design_w;		/* largest cap */
	double idle_static_w, idle_clock_w;
	double dyn_w[FW_PM_CLASSES];	/* fully busy at nominal clock */
	double hbm_pj_per_byte;
};

const struct fw_chip *fw_chip_by_id(unsigned int id);
/* NULL if name is not a model. */
const struct fw_chip *fw_chip_by_name(const char *name);

/*
 * A preset with another tile layout: SRAM and peaks scale with the number
 * of tiles (a chip with half the tiles has half the peak), the rest stays.
 */
void fw_chip_scale(const struct fw_chip *preset, unsigned int clusters,
		   unsigned int tiles_per_cluster, struct fw_chip *chip);

/* What a command costs at the nominal clock. */
struct fw_cost {
	int cls;			/* enum fw_pm_class, FW_PM_IDLE for control commands */
	uint64_t fixed_ns;		/* overheads, independent of the clock */
	uint64_t compute_ns;		/* at the data type's peak, scales with 1/clock */
	uint64_t hbm_ns;		/* HBM traffic at the HBM bandwidth */
	uint64_t link_ns;		/* host link or fabric, at its rate plus latency */
	uint64_t hbm_bytes;		/* read + written */
	uint64_t flops;
	uint64_t peak_ns;		/* flops at the peak of the whole chip */
	unsigned int tiles;		/* tiles the command keeps busy */
};

/* Duration with the clock at ratio r (0 < r <= 1) of nominal. */
uint64_t fw_cost_ns(const struct fw_cost *c, double r);

/*
 * The engines that run side by side on the chip (fw_timeline.c): a command
 * occupies one of them; control commands only their queue's sequencer.
 */
enum fw_engine {
	FW_ENG_NONE,			/* control commands: NOP, TIMESTAMP, SEM_* */
	FW_ENG_TENSOR,			/* matrix, vector and kernel commands */
	FW_ENG_DMA,			/* DMA_COPY, FILL */
	FW_ENG_FABRIC,			/* remote writes and reads, collectives */
	FW_ENGINES
};

/* When each engine's last command ends, in modeled time. */
struct fw_engines {
	uint64_t busy_ns[FW_ENGINES];
};

unsigned int fw_engine_of(uint16_t opcode);
/* A command whose queue is ready at ready_ns starts when its engine is free too. */
uint64_t fw_engines_start(const struct fw_engines *e, unsigned int eng, uint64_t ready_ns);
/*
 * The HBM is shared by the engines busy at start: the command's HBM time
 * is scaled by how many are (itself included).
 */
void fw_engines_share_hbm(const struct fw_engines *e, unsigned int eng, uint64_t start,
			  struct fw_cost *c);
void fw_engines_done(struct fw_engines *e, unsigned int eng, uint64_t end);

/*
 * Remote writes are posted, as an RDMA NIC posts them: a FABRIC_WRITE holds
 * the fabric engine for its fixed cost and its bytes at the link rate only;
 * its hop (the data's flight and the acknowledgement) overlaps whatever the
 * engine and the queue do next. So back-to-back writes pay the hop once per
 * burst. A queue's next command may pass its writes in flight if it is a
 * remote write (posted behind them, in order on the link) or a semaphore
 * wait (it waits for someone else); any other command, and the job's
 * completion, waits for their acknowledgements.
 */
bool fw_passes_posted(uint16_t opcode);
/* When a queue's next command is ready: its last end, or its writes' last ack. */
uint64_t fw_posted_ready(uint64_t queue_ns, uint64_t acked_ns, uint16_t opcode);

/* A matrix multiply, as the tensor engine parsed it. */
struct fw_mm_shape {
	uint64_t batch, m, n, k;
	unsigned int dtype_a, dtype_b, dtype_c;
	bool reads_c;			/* beta != 0 */
	bool bias;
};

/* The C block a tile computes, and the tiling it gives. */
struct fw_mm_tiling {
	uint64_t bm, bn;		/* rows and columns of a tile's C block */
	uint64_t blocks;		/* over the whole command */
	uint64_t waves;			/* blocks / tiles, rounded up */
	uint64_t compute_ns, hbm_bytes;	/* what it costs */
};

void fw_model_mm_tiling(const struct fw_chip *chip, const struct fw_mm_shape *s,
			struct fw_mm_tiling *t);
void fw_model_mm(const struct fw_chip *chip, const struct fw_mm_shape *s, struct fw_cost *c);
/* An element-wise or reduction op: flops at the vector peak, bytes through HBM. */
void fw_model_vector(const struct fw_chip *chip, uint64_t flops, uint64_t bytes,
		     struct fw_cost *c);
/* A copy or fill: bytes over the host link (host_bytes) and HBM (hbm_bytes). */
void fw_model_dma(const struct fw_chip *chip, uint64_t host_bytes, uint64_t hbm_bytes,
		  struct fw_cost *c);
/*
 * A fabric transfer of bytes over hops links, each the chip's hop latency,
 * plus cable_ns once (the longer cable of the port it leaves on,
 * fabric_lat_ns: a remote read's request's; its data's comes back with the
 * answers, fw_model_read_answer_left(); 0 for a collective's closed form),
 * and its HBM side.
 */
void fw_model_fabric(const struct fw_chip *chip, uint64_t bytes, unsigned int hops,
		     uint32_t cable_ns, struct fw_cost *c);
/*
 * A collective (Documentation/hw/time-model.rst, "Other commands" and
 * "Several devices"). fw_model_coll_work(): the bytes a rank sends and the
 * hops its ranks' data waits through, for the closed form (fw_model_fabric()
 * prices them): a ring's steps, or gather-reduce's n - 1 hops. The chunks
 * themselves: fw_model_coll_hop() is when a chunk of len bytes that leaves
 * at left_ns arrives over one hop: the chip's hop latency, cable_ns (the
 * sending port's longer cable, fabric_lat_ns) and its bytes at the link
 * rate; its header carries that (model_ns) to the receiver. A remote
 * write's messages are priced by fw_model_write_arrival().
 */
struct maia_cmd_collective;
void fw_model_coll_work(const struct maia_cmd_collective *c, uint64_t *bytes,
			unsigned int *hops);
uint64_t fw_model_coll_link_ns(const struct fw_chip *chip, uint64_t len);
uint64_t fw_model_coll_hop(const struct fw_chip *chip, uint32_t cable_ns, uint64_t left_ns,
			   uint64_t len);
/*
 * A remote read that starts sending its requests at start_ns over a port
 * whose cable is cable_ns longer: when the answer whose data end at byte
 * bytes of the read may leave the target (the request's hop, then the
 * bytes asked up to there at the link rate), its READ_REQ's model_ns. The
 * target adds its hop over the cable it answers on (fw_model_coll_hop(),
 * len 0): the last answer's arrival is the read's end, so the data come
 * back at the target's cable figure.
 */
uint64_t fw_model_read_answer_left(const struct fw_chip *chip, uint32_t cable_ns,
				   uint64_t start_ns, uint64_t bytes);
/*
 * A posted remote write of bytes (fw_passes_posted()) on a port whose cable
 * is cable_ns longer: the cost that holds the engine, without the hop;
 * returns the hop (the chip's and the cable's), after which its last byte
 * is on the target. Its acknowledgement comes back later by the target's
 * end of the cable (fw_model_write_ack()), when the target says so.
 */
uint64_t fw_model_fabric_write(const struct fw_chip *chip, uint32_t cable_ns, uint64_t bytes,
			       struct fw_cost *c);
/*
 * A remote write that starts sending at start_ns over a port whose cable is
 * cable_ns longer: when its message whose data end at byte bytes of the
 * write arrives on the target (one hop after the bytes up to there at the
 * link rate, rounded up as fw_model_fabric()'s, so that its last message
 * arrives when the closed form, fw_model_fabric_write(), says).
 */
uint64_t fw_model_write_arrival(const struct fw_chip *chip, uint32_t cable_ns,
				uint64_t start_ns, uint64_t bytes);
/*
 * The target's side of a remote write: when its acknowledgement (WRITE_DONE)
 * arrives back at the requester, for a last message that arrived at
 * arrival_ns, sent back over the target's port whose cable is cable_ns
 * longer. It crosses that cable at its figure and takes no chip hop of its
 * own (a write is one hop: fw_model_fabric_write()).
 */
uint64_t fw_model_write_ack(uint32_t cable_ns, uint64_t arrival_ns);
/*
 * A KERNEL: its instances' work units per instruction class (lane groups
 * of FW_TVP_LANE_GROUP lanes for vector classes, MAC groups for VDOT, one
 * per scalar, branch or semaphore instruction), each at fw_tvp_unit_cycles
 * of its class, instances spread over the tiles in waves.
 */
struct fw_kernel_work {
	uint64_t instances;
	uint64_t units[MAIA_TVP_NUM_CLASSES];
	uint64_t flops;
	uint64_t bytes;			/* loads and stores, the program fetch */
};
extern const uint32_t fw_tvp_unit_cycles[MAIA_TVP_NUM_CLASSES];
void fw_model_kernel(const struct fw_chip *chip, const struct fw_kernel_work *w,
		     struct fw_cost *c);
/* A control command (NOP, fences, timestamps, semaphores). */
void fw_model_light(const struct fw_chip *chip, struct fw_cost *c);

/* The model block (maia/hw/model.h): false for an offset that is no register. */
bool fw_model_is_reg(uint32_t offset);
bool fw_model_reg_read(const struct fw_chip *chip, uint32_t offset, uint32_t *val);

/* Bytes of n elements of dtype, shared block scales included. */
uint64_t fw_model_bytes(unsigned int dtype, uint64_t n);
/* Peak of a multiply of dtype a by dtype b, GFLOP/s: the slower operand's. */
uint32_t fw_model_mm_peak(const struct fw_chip *chip, unsigned int a, unsigned int b);

#endif /* FWSIM_MODEL_H */
