// SPDX-License-Identifier: MIT
/*
 * torch.distributed's "maia" backend: a c10d Backend whose collectives are
 * libmaia's (userspace/lib/comm.c, Documentation/collectives.rst), one
 * process per device as with NCCL. The communicator is made at the first
 * collective, on the device of its tensors: rank 0 takes a new id and puts
 * it in the process group's store (torchrun's env:// store, a FileStore,
 * ...), the other ranks read it from there.
 *
 * Ordering: a collective is a job on the same device queue as the backend's
 * own jobs (runtime.h), submitted after a flush of the pending batch, so it
 * runs after the ops that wrote its input and before every later op, a host
 * read included: the device's stream, as NCCL's is CUDA's. So a call returns
 * once its job is submitted, with the Work's future already complete (what
 * reads the result queues behind the collective; DDP's gradient all-reduces
 * thus overlap the backward pass). Work::wait() waits for the collective on
 * the host and raises libmaia's message (the rank, step and port) if it
 * failed; a failure also raises at the group's next call. barrier() waits.
 */
#include <torch/csrc/distributed/c10d/Backend.hpp>
#include <torch/csrc/distributed/c10d/Store.hpp>
#include <torch/csrc/distributed/c10d/Work.hpp>

#include <cstring>
#include <mutex>

#include "process_group.h"
#include "runtime.h"

namespace maia_torch {
namespace {

class ProcessGroupMaia;

/*
 * A collective submitted to the device's queue: its future is complete (the
 * result is read through the same queue); wait() and isCompleted() ask
 * libmaia about the communicator's calls so far.
 */
class CollWork : public c10d::Work {
public:
	CollWork(c10::intrusive_ptr<ProcessGroupMaia> pg, int rank, c10d::OpType type,
		 std::vector<at::Tensor> out);
	bool isCompleted() override;
	bool isSuccess() const override { return !exception(); }
	std::exception_ptr exception() const override { return error_; }
	bool wait(std::chrono::milliseconds timeout) override;
	std::vector<at::Tensor> result() override { return out_; }
	c10::intrusive_ptr<c10::ivalue::Future> getFuture() override { return future_; }
private:
	c10::intrusive_ptr<ProcessGroupMaia> pg_;
	std::vector<at::Tensor> out_;
	c10::intrusive_ptr<c10::ivalue::Future> future_;
	bool done_ = false;
	std::exception_ptr error_;
};

class ProcessGroupMaia : public c10d::Backend {
public:
	ProcessGroupMaia(c10::intrusive_ptr<c10d::Store> store, int rank, int size,
			 std::chrono::milliseconds timeout)
		: c10d::Backend(rank, size), store_(std::move(store)), timeout_(timeout)
	{
	}
	~ProcessGroupMaia() override
	{
		if (comm_)
			maia_comm_destroy(comm_);
	}
	const std::string getBackendName() const override { return "maia"; }
	void setTimeout(std::chrono::milliseconds timeout) override { timeout_ = timeout; }

	c10::intrusive_ptr<c10d::Work> broadcast(std::vector<at::Tensor> &tensors,
						 const c10d::BroadcastOptions &opts) override
	{
		at::Tensor &t = one(tensors, "broadcast");
		std::lock_guard<std::mutex> g(lock_);
		unsigned int dtype;
		uint64_t count = as_bytes(t, &dtype);
		check(maia_broadcast(comm_of(t), va_of(t), va_of(t), count, dtype,
				     static_cast<int>(opts.rootRank)), "maia_broadcast");
		return done(c10d::OpType::BROADCAST, tensors);
	}

	c10::intrusive_ptr<c10d::Work> allreduce(std::vector<at::Tensor> &tensors,
						 const c10d::AllreduceOptions &opts) override
	{
		at::Tensor &t = one(tensors, "allreduce");
		std::lock_guard<std::mutex> g(lock_);
		bool avg = false;
		unsigned int redop = redop_of(opts.reduceOp, &avg);
		check(maia_all_reduce(comm_of(t), va_of(t), va_of(t), t.numel(), dtype_of(t), redop),
		      "maia_all_reduce");
		if (avg)
			t.div_(size_);
		return done(c10d::OpType::ALLREDUCE, tensors);
	}

	c10::intrusive_ptr<c10d::Work> _allgather_base(at::Tensor &out, at::Tensor &in,
						       const c10d::AllgatherOptions &) override
	{
		std::lock_guard<std::mutex> g(lock_);
		gather_into(out, in);
		return done(c10d::OpType::_ALLGATHER_BASE, { out });
	}

	c10::intrusive_ptr<c10d::Work> allgather(std::vector<std::vector<at::Tensor>> &outs,
						 std::vector<at::Tensor> &ins,
						 const c10d::AllgatherOptions &) override
	{
		at::Tensor &in = one(ins, "allgather");
		TORCH_CHECK(outs.size() == 1 && outs[0].size() == static_cast<size_t>(size_),
			    "maia: allgather wants one list of ", size_, " output tensors");
		std::lock_guard<std::mutex> g(lock_);
		at::Tensor flat = at::empty({ size_ * in.numel() }, in.options());
		gather_into(flat, in);
		for (int r = 0; r < size_; r++) {
			at::Tensor &o = outs[0][r];
			TORCH_CHECK(o.numel() == in.numel() && o.scalar_type() == in.scalar_type(),
				    "maia: allgather's output ", r, " differs from the input in size or type");
			o.copy_(flat.narrow(0, r * in.numel(), in.numel()).view(o.sizes()));
		}
		return done(c10d::OpType::ALLGATHER, outs[0]);
	}

	c10::intrusive_ptr<c10d::Work> _reduce_scatter_base(at::Tensor &out, at::Tensor &in,
							    const c10d::ReduceScatterOptions &opts) override
	{
		std::lock_guard<std::mutex> g(lock_);
		scatter_into(out, in, opts.reduceOp);
		return done(c10d::OpType::_REDUCE_SCATTER_BASE, { out });
	}

	c10::intrusive_ptr<c10d::Work> reduce_scatter(std::vector<at::Tensor> &outs,
						      std::vector<std::vector<at::Tensor>> &ins,
						      const c10d::ReduceScatterOptions &opts) override
	{
		at::Tensor &out = one(outs, "reduce_scatter");
		TORCH_CHECK(ins.size() == 1 && ins[0].size() == static_cast<size_t>(size_),
			    "maia: reduce_scatter wants one list of ", size_, " input tensors");
		for (const at::Tensor &i : ins[0])
			TORCH_CHECK(i.numel() == out.numel() && i.scalar_type() == out.scalar_type(),
				    "maia: reduce_scatter's inputs differ from the output in size or type");
		std::lock_guard<std::mutex> g(lock_);
		std::vector<at::Tensor> flat_in;
		for (const at::Tensor &i : ins[0])
			flat_in.push_back(i.reshape({ -1 }));
		at::Tensor flat = at::cat(flat_in);
		scatter_into(out, flat, opts.reduceOp);
		return done(c10d::OpType::REDUCE_SCATTER, outs);
	}

	/* Every rank's one-element all-reduce: none returns before all came. */
	c10::intrusive_ptr<c10d::Work> barrier(const c10d::BarrierOptions &) override
	{
		std::lock_guard<std::mutex> g(lock_);
		int dev = dev_ >= 0 ? dev_ : current_device();
		at::Tensor t = at::zeros({ 1 }, at::TensorOptions().dtype(at::kFloat)
							   .device(c10::Device(c10::DeviceType::PrivateUse1,
									       static_cast<c10::DeviceIndex>(dev))));
		check(maia_all_reduce(comm_of(t), va_of(t), va_of(t), 1, MAIA_DTYPE_FP32,
				      MAIA_REDOP_SUM), "maia_all_reduce (barrier)");
		sync();
		return done(c10d::OpType::BARRIER, {});
	}

private:
	/* The one tensor of a call (one device per process, as NCCL's one GPU). */
	at::Tensor &one(std::vector<at::Tensor> &tensors, const char *what)
	{
		TORCH_CHECK(tensors.size() == 1, "maia: ", what, " takes one tensor per process, not ",
			    tensors.size());
		at::Tensor &t = tensors[0];
		check_tensor(t, what);
		return t;
	}
	static void check_tensor(const at::Tensor &t, const char *what)
	{
		TORCH_CHECK(t.device().type() == c10::DeviceType::PrivateUse1, "maia: ", what,
			    " wants a maia tensor, not one on ", t.device());
		TORCH_CHECK(t.is_contiguous(), "maia: ", what, " wants a contiguous tensor");
	}

	/* The element type of a reduction: the device reduces FP32 and BF16. */
	static unsigned int dtype_of(const at::Tensor &t)
	{
		if (t.scalar_type() == at::kFloat)
			return MAIA_DTYPE_FP32;
		if (t.scalar_type() == at::kBFloat16)
			return MAIA_DTYPE_BF16;
		TORCH_CHECK(false, "maia: the devices reduce float32 and bfloat16, not ", t.scalar_type());
	}
	/* Data movement (broadcast, gathers) of any type: its bytes as FP32 or BF16 words. */
	static uint64_t as_bytes(const at::Tensor &t, unsigned int *dtype)
	{
		uint64_t bytes = t.nbytes();
		if (bytes % 4 == 0) {
			*dtype = MAIA_DTYPE_FP32;
			return bytes / 4;
		}
		TORCH_CHECK(bytes % 2 == 0, "maia: a collective moves 2-byte words; ", t.scalar_type(),
			    " x ", t.numel(), " is ", bytes, " bytes");
		*dtype = MAIA_DTYPE_BF16;
		return bytes / 2;
	}
	static unsigned int redop_of(const c10d::ReduceOp &op, bool *avg)
	{
		switch (op.op_) {
		case c10d::ReduceOp::SUM:
			return MAIA_REDOP_SUM;
		case c10d::ReduceOp::AVG:
			*avg = true;
			return MAIA_REDOP_SUM;
		case c10d::ReduceOp::MAX:
			return MAIA_REDOP_MAX;
		case c10d::ReduceOp::MIN:
			return MAIA_REDOP_MIN;
		default:
			TORCH_CHECK(false, "maia: the devices reduce by sum, avg, max and min, not op ",
				    static_cast<int>(op.op_));
		}
	}

	void gather_into(at::Tensor &out, at::Tensor &in)
	{
		check_tensor(out, "allgather");
		check_tensor(in, "allgather");
		TORCH_CHECK(out.numel() == size_ * in.numel() && out.scalar_type() == in.scalar_type(),
			    "maia: allgather's output must hold ", size_, " inputs of its type");
		/* The device gathers from and into distinct buffers. */
		at::Tensor src = in;
		uint64_t a = va_of(in), b = va_of(out);
		if (a < b + out.nbytes() && b < a + in.nbytes())
			src = in.clone();
		unsigned int dtype;
		uint64_t count = as_bytes(src, &dtype);
		check(maia_all_gather(comm_of(src), va_of(src), va_of(out), count, dtype),
		      "maia_all_gather");
	}

	void scatter_into(at::Tensor &out, at::Tensor &in, const c10d::ReduceOp &op)
	{
		check_tensor(out, "reduce_scatter");
		check_tensor(in, "reduce_scatter");
		TORCH_CHECK(in.numel() == size_ * out.numel() && out.scalar_type() == in.scalar_type(),
			    "maia: reduce_scatter's input must hold ", size_, " outputs of its type");
		bool avg = false;
		unsigned int redop = redop_of(op, &avg);
		at::Tensor dst = out;
		uint64_t a = va_of(in), b = va_of(out);
		if (a < b + out.nbytes() && b < a + in.nbytes())
			dst = at::empty_like(out);
		check(maia_reduce_scatter(comm_of(in), va_of(in), va_of(dst), out.numel(), dtype_of(in),
					  redop), "maia_reduce_scatter");
		if (!dst.is_same(out))
			out.copy_(dst);
		if (avg)
			out.div_(size_);
	}

	/*
	 * The communicator, made at the first collective on its tensor's
	 * device; the pending batch of that device is flushed so that the
	 * collective's job comes after the ops that wrote its input.
	 */
	struct maia_comm *comm_of(const at::Tensor &t)
	{
		int dev = t.device().index();
		if (!comm_) {
			struct maia_comm_id id;
			const std::string key = "maia_comm_id";
			if (rank_ == 0) {
				check(maia_comm_get_unique_id(&id), "maia_comm_get_unique_id");
				store_->set(key, std::vector<uint8_t>(id.bytes, id.bytes + sizeof(id.bytes)));
			} else {
				std::vector<uint8_t> v = store_->get(key);
				TORCH_CHECK(v.size() == sizeof(id.bytes), "maia: the store's ", key, " has ",
					    v.size(), " bytes, not ", sizeof(id.bytes));
				memcpy(id.bytes, v.data(), sizeof(id.bytes));
			}
			check(maia_comm_init_rank(&comm_, device(dev), size_, &id, rank_),
			      "maia_comm_init_rank");
			dev_ = dev;
		}
		TORCH_CHECK(dev == dev_, "maia: this process group's collectives run on maia:", dev_,
			    ", not maia:", dev);
		/* An earlier collective's failure sticks: raise it rather than queue more. */
		const char *msg = nullptr;
		if (maia_comm_async_error(comm_, &msg))
			TORCH_CHECK(false, "maia: an earlier collective failed: ", msg ? msg : "?");
		flush(dev_);
		return comm_;
	}

	/* Wait for the collective; libmaia's message (the rank, step and port) if it failed. */
	void sync()
	{
		int64_t ns = static_cast<int64_t>(timeout_.count()) * 1000000;
		int err = maia_comm_sync(comm_, ns);
		if (err < 0) {
			const char *msg = nullptr;
			maia_comm_async_error(comm_, &msg);
			TORCH_CHECK(false, "maia: collective failed: ", msg ? msg : strerror(-err));
		}
	}

	c10::intrusive_ptr<c10d::Work> done(c10d::OpType type, std::vector<at::Tensor> out)
	{
		return c10::make_intrusive<CollWork>(
			c10::intrusive_ptr<ProcessGroupMaia>::reclaim_copy(this), rank_, type,
			std::move(out));
	}

public:
	/* For CollWork: wait for every call so far (raises), or only look (-EAGAIN: running). */
	void wait_all()
	{
		std::lock_guard<std::mutex> g(lock_);
		if (comm_)
			sync();
	}
	int poll()
	{
		std::lock_guard<std::mutex> g(lock_);
		return comm_ ? maia_comm_sync(comm_, 0) : 0;
	}

private:

	c10::intrusive_ptr<c10d::Store> store_;
	std::chrono::milliseconds timeout_;
	std::mutex lock_;		/* protects comm_, dev_ and the order of calls */
	struct maia_comm *comm_ = nullptr;
	int dev_ = -1;
};

CollWork::CollWork(c10::intrusive_ptr<ProcessGroupMaia> pg, int rank, c10d::OpType type,
		   std::vector<at::Tensor> out)
	: c10d::Work(rank, type), pg_(std::move(pg)), out_(std::move(out))
{
	/* No devices: the future records no device events; the queue orders the reads. */
	future_ = c10::make_intrusive<c10::ivalue::Future>(
		c10::ListType::create(c10::TensorType::get()));
	future_->markCompleted(c10::IValue(out_));
}

bool CollWork::isCompleted()
{
	if (!done_ && pg_->poll() != -EAGAIN)
		done_ = true;	/* a failure is wait()'s to raise */
	return done_;
}

bool CollWork::wait(std::chrono::milliseconds)
{
	if (error_)
		std::rethrow_exception(error_);
	try {
		pg_->wait_all();
	} catch (...) {
		error_ = std::current_exception();
		throw;
	}
	done_ = true;
	return true;
}

} // namespace

c10::intrusive_ptr<c10d::Backend> new_process_group(const c10::intrusive_ptr<c10d::Store> &store,
						    int rank, int size,
						    std::chrono::milliseconds timeout)
{
	TORCH_CHECK(size >= 1 && rank >= 0 && rank < size, "maia: rank ", rank, " of ", size);
	return c10::make_intrusive<ProcessGroupMaia>(store, rank, size, timeout);
}

} // namespace maia_torch
