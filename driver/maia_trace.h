/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * Maia accelerator driver: tracepoints for job submission, execution,
 * completion, queue interrupts and device resets
 * (/sys/kernel/tracing/events/maia/).
 */
#undef TRACE_SYSTEM
#define TRACE_SYSTEM maia

#if !defined(__MAIA_TRACE_H__) || defined(TRACE_HEADER_MULTI_READ)
#define __MAIA_TRACE_H__

#include <linux/tracepoint.h>

#include "maia_job.h"

TRACE_EVENT(maia_job_submit,
	    TP_PROTO(const struct maia_job *job),
	    TP_ARGS(job),
	    TP_STRUCT__entry(__field(u64, seqno)
			     __field(u64, cmdbuf_va)
			     __field(u32, cmdbuf_size)
			     __field(u16, asid)
			     __field(u32, priority)),
	    TP_fast_assign(__entry->seqno = job->seqno;
			   __entry->cmdbuf_va = job->cmdbuf_va;
			   __entry->cmdbuf_size = job->cmdbuf_size;
			   __entry->asid = job->asid;
			   __entry->priority = job->priority;),
	    TP_printk("asid=%u seqno=%llu cmdbuf=%#llx+%u prio=%u",
		      __entry->asid, __entry->seqno, __entry->cmdbuf_va,
		      __entry->cmdbuf_size, __entry->priority)
);

TRACE_EVENT(maia_job_run,
	    TP_PROTO(const struct maia_job *job, unsigned int queue, u64 hw_seq),
	    TP_ARGS(job, queue, hw_seq),
	    TP_STRUCT__entry(__field(u64, seqno)
			     __field(u64, hw_seq)
			     __field(u16, asid)
			     __field(unsigned int, queue)),
	    TP_fast_assign(__entry->seqno = job->seqno;
			   __entry->hw_seq = hw_seq;
			   __entry->asid = job->asid;
			   __entry->queue = queue;),
	    TP_printk("asid=%u seqno=%llu queue=%u hw_seq=%llu",
		      __entry->asid, __entry->seqno, __entry->queue, __entry->hw_seq)
);

TRACE_EVENT(maia_job_done,
	    TP_PROTO(const struct maia_job *job, u64 device_ns),
	    TP_ARGS(job, device_ns),
	    TP_STRUCT__entry(__field(u64, seqno)
			     __field(u64, device_ns)
			     __field(u16, asid)
			     __field(u32, status)
			     __field(u32, device_status)),
	    TP_fast_assign(__entry->seqno = job->seqno;
			   __entry->device_ns = device_ns;
			   __entry->asid = job->asid;
			   __entry->status = job->status;
			   __entry->device_status = job->device_status;),
	    TP_printk("asid=%u seqno=%llu status=%u device_status=%u device_ns=%llu",
		      __entry->asid, __entry->seqno, __entry->status,
		      __entry->device_status, __entry->device_ns)
);

TRACE_EVENT(maia_queue_irq,
	    TP_PROTO(unsigned int queue, u64 completed),
	    TP_ARGS(queue, completed),
	    TP_STRUCT__entry(__field(unsigned int, queue)
			     __field(u64, completed)),
	    TP_fast_assign(__entry->queue = queue;
			   __entry->completed = completed;),
	    TP_printk("queue=%u completed=%llu", __entry->queue, __entry->completed)
);

TRACE_EVENT(maia_reset,
	    TP_PROTO(const struct maia_device *mdev, const char *reason, int ret),
	    TP_ARGS(mdev, reason, ret),
	    TP_STRUCT__entry(__string(dev, dev_name(mdev->drm.dev))
			     __string(reason, reason)
			     __field(int, ret)),
	    TP_fast_assign(__assign_str(dev);
			   __assign_str(reason);
			   __entry->ret = ret;),
	    TP_printk("%s reason=%s ret=%d", __get_str(dev), __get_str(reason),
		      __entry->ret)
);

#endif /* __MAIA_TRACE_H__ */

/* Out of tree: define_trace.h finds this file through -I$(src)/driver. */
#undef TRACE_INCLUDE_PATH
#define TRACE_INCLUDE_PATH .
#undef TRACE_INCLUDE_FILE
#define TRACE_INCLUDE_FILE maia_trace
#include <trace/define_trace.h>
