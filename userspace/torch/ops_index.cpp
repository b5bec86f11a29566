// SPDX-License-Identifier: MIT
/*
 * Indexing ops as TVP programs: index_select (and so embedding, which torch
 * composes from it), embedding_dense_backward, gather, scatter_add(_),
 * masked_fill_ and max_pool2d_with_indices_backward.
 *
 * One program family does the first five: each lane takes one element of
 * an iteration shape (rank <= 5, padded with 1s on the left), finds its
 * coordinates by division (tvp_asm_coords5(), ops_mask.h), the index's position from the index's strides,
 * and the data's offset from the data's strides plus index x the indexed
 * dimension's stride. "igather" loads the data there into a contiguous
 * output; "iscatter" adds a contiguous source there with VAMOADD (binary32
 * atomics: float16/bfloat16 accumulate in a float32 copy), so repeated
 * indices add up, in an unspecified order. Operands keep their strides
 * (broadcast and transposed ones too) except the contiguous output/source.
 *
 * Indices are int64 (both words read: a value must be in [0, size)) or
 * int32. A lane whose index is out of range is not accessed; where CPU
 * torch raises for it, the lane sets a flag word, the op waits for its job
 * and reads the flag, and a set flag re-runs the op on CPU copies for CPU
 * torch's own error (so the check costs a host wait per op). The backward
 * ops ignore such lanes, as CPU torch does.
 */
#include <torch/library.h>

#include <ATen/ExpandUtils.h>
#include <ATen/WrapDimUtils.h>

#include "ops_mask.h"

namespace maia_torch {
namespace ops {

using tvp::Launch;

/* ---- the programs ------------------------------------------------------------ */

/* v15/v16 = low/high word of the int64 (or sign-extended int32) indices at positions v<pos> of s<base>, masked by v29. */
static std::string load_index(bool i64, int pos, int base)
{
	std::string p = "v" + std::to_string(pos), s = "s" + std::to_string(base);

	if (!i64)
		return "\tvld v15, " + s + ", " + p + ", i32, v29\n\tvsplati v13, 31\n\tvsra v16, v15, v13\n";
	return "\tviadd v14, " + p + ", " + p + "\n\tvld v15, " + s + ", v14, i32, v29\n"
	       "\tvsplati v13, 1\n\tviadd v14, v14, v13\n\tvld v16, " + s + ", v14, i32, v29\n";
}

/*
 * v18 = the index v15/v16 is in [0, v8); the active lanes (v29) whose index
 * is not set the word at s<flag> (when s<flag> != 0) to 1; v29 keeps the
 * good ones. v17 = 0.
 */
static std::string check_index(int flag)
{
	std::string f = "s" + std::to_string(flag);

	return "\tvsplati v17, 0\n\tvicmp v18, v16, v17, eq\n\tvicmp v19, v15, v17, ge\n\tvand v18, v18, v19\n"
	       "\tvicmp v19, v15, v8, lt\n\tvand v18, v18, v19\t# a good index\n"
	       "\tbeqz " + f + ", noflag\n\tvicmp v19, v18, v17, eq\n\tvand v19, v19, v29\n"
	       "\tvsplati v25, 1\n\tvst v25, " + f + ", v17, i32, v19\t# a bad one: flag = 1\n"
	       "noflag:\n\tvand v29, v29, v18\n";
}

/*
 * igather / iscatter (x64: int64 indices, x32: int32). s1 = data, s2 =
 * index, s3 = out (igather) or src (iscatter, f32), both contiguous over the
 * iteration shape, s4 = the flag word or 0, s5 = n, s6/s7 = the shape
 * (tvp_pack_shape5()), s8-s10 = the data's strides (0 for the indexed
 * dimension), s11-s13 = the index's (tvp_pack_strides5()), s14 = the
 * data's stride along the indexed dimension | its size << 32, s15 = an
 * index to skip (padding_idx, int32) | 1 << 32 to skip it.
 */
static std::string indexed(bool scatter, bool i64, const std::string &t)
{
	std::string s = tvp_asm_coords5(5, 6) + tvp_asm_dot5(11, 8) + tvp_asm_dot5(12, 11) + load_index(i64, 12, 2);

	s += "\tvsplati v17, 0\n\tvsplat v20, s15\n\tvsplati v21, 31\n\tvsra v21, v20, v21\n"
	     "\tvicmp v22, v15, v20, eq\n\tvicmp v23, v16, v21, eq\n\tvand v22, v22, v23\n"
	     "\tshr s22, s15, s30\n\tvsplat v23, s22\n\tvand v22, v22, v23\n\tvicmp v22, v22, v17, eq\n"
	     "\tvand v29, v29, v22\t# padding_idx skipped\n\tshr s22, s14, s30\n\tvsplat v8, s22\t# size\n";
	s += check_index(4);
	s += "\tvsplat v9, s14\n\tvimul v10, v15, v9\n\tviadd v11, v11, v10\t# the data's offset\n";
	if (scatter)
		s += "\tvld v24, s3, v28, f32, v29\n\tvamoadd v24, s1, v11, f32, v29\n";
	else
		s += "\tvld v24, s1, v11, " + t + ", v29\n\tvst v24, s3, v28, " + t + ", v29\n";
	return s + "\thalt\n";
}

/*
 * maskfill: s1 = x (contiguous, updated in place), s2 = mask (bool bytes,
 * any strides), s3 = n, s4/s5 = the shape as igather's s6/s7, s6-s8 = the
 * mask's strides, s9 = the value (binary32 bits, or the integer).
 */
static std::string maskfill(const std::string &t)
{
	return tvp_asm_coords5(3, 4) + tvp_asm_dot5(12, 6) +
	       "\tvld v15, s2, v12, i8, v29\n\tvsplati v17, 0\n\tvicmp v18, v15, v17, ne\n"
	       "\tvand v18, v18, v29\n\tvsplat v24, s9\n\tvst v24, s1, v28, " + t + ", v18\n\thalt\n";
}

static bool exact_type(const std::string &t)
{
	return t == "f32" || t == "bf16" || t == "f16" || t == "i32" || t == "i8";
}

static std::string family(const std::string &kind, const std::string &t)
{
	if (kind == "flagclear")
		return t == "i32" ? "\tsst s0, s1, i32\n\thalt\n" : "";
	if (kind == "maskfill")
		return exact_type(t) ? maskfill(t) : "";
	bool i64 = kind.back() == '4';

	if (kind.rfind("igather", 0) == 0)
		return exact_type(t) ? indexed(false, i64, t) : "";
	return t == "f32" ? indexed(true, i64, t) : "";
}

[[maybe_unused]] static const bool registered = tvp::add_family(
	{ "flagclear", "maskfill", "igather32", "igather64", "iscatter32", "iscatter64" }, family);

/* ---- launching ------------------------------------------------------------------ */

/* Iteration shapes have rank <= R, padded on the left. */
static constexpr int64_t R = 5;

/* An igather/iscatter launch over an iteration shape of rank <= R. */
struct Indexed {
	std::vector<int64_t> shape = std::vector<int64_t>(R, 1);
	std::vector<int64_t> data = std::vector<int64_t>(R, 0);	/* the data's stride per iteration dimension */
	std::vector<int64_t> index = std::vector<int64_t>(R, 0);	/* the index's */
	int64_t data_d = 0;		/* the data's stride along the indexed dimension */
	int64_t size_d = 0;		/* indices must be in [0, size_d) */
	int64_t skip = 0;
	bool has_skip = false;
	bool check = true;		/* raise CPU torch's error for a bad index */

	/* dims of an iteration shape of rank r go to positions R - r .. R - 1 */
	void set_shape(at::IntArrayRef s)
	{
		for (size_t k = 0; k < s.size(); k++)
			shape[R - s.size() + k] = s[k];
	}
	int64_t numel() const
	{
		int64_t n = 1;

		for (int64_t v : shape)
			n *= v;
		return n;
	}
	Launch launch(const char *kind, const at::Tensor &data_t, const at::Tensor &index_t,
		      const at::Tensor &other, uint64_t flag) const
	{
		std::string program = std::string(kind) + (index_t.scalar_type() == at::kLong ? "64." : "32.") +
				      (std::string(kind) == "iscatter" ? "f32" : elem_exact(data_t.scalar_type()));

		return { program, tvp::blocks(numel()),
			 std::vector<uint64_t>{ va_of(data_t), va_of(index_t), va_of(other), flag, (uint64_t)numel() } +
				 tvp_pack_shape5(shape) + tvp_pack_strides5(data) + tvp_pack_strides5(index) +
				 std::vector<uint64_t>{ pack(data_d, size_d), pack(skip, has_skip) } };
	}
};

/* 1: done; 0: the device failed the kernel (logged); -1: an index was out of range. */
static int run_indexed(const Indexed &g, const char *kind, const at::Tensor &data, const at::Tensor &index,
		       const at::Tensor &other, const char *op)
{
	int dev = dev_of(data);

	if (!g.check)
		return tvp::run(dev, { g.launch(kind, data, index, other, 0) }, op) == 1;
	at::Tensor flag = at::empty({ 1 }, data.options().dtype(at::kInt));
	size_t done = tvp::run(dev, { { "flagclear.i32", 1, { va_of(flag) } },
				     g.launch(kind, data, index, other, va_of(flag)) }, op);
	if (done != 2)
		return 0;
	int32_t bad = 0;
	copy_from_device(dev, &bad, va_of(flag), sizeof(bad));
	return bad ? -1 : 1;
}

static bool index_type(const at::Tensor &i)
{
	return i.scalar_type() == at::kLong || i.scalar_type() == at::kInt;
}

/* data and index can go to an igather/iscatter kernel: same device, rank 1..R, int32 offsets. */
static bool indexable(const at::Tensor &data, const at::Tensor &index)
{
	return on_device(data) && on_device(index, data) && index_type(index) && data.dim() >= 1 &&
	       data.dim() <= R && index.dim() <= R && int32_reach(data) && int32_reach(index);
}

/* ---- index_select (embedding's forward) -------------------------------------------- */

static at::Tensor index_select(const at::Tensor &self, int64_t dim, const at::Tensor &index)
{
	bool failed = false;

	if (indexable(self, index) && elem_exact(self.scalar_type()) && index.dim() <= 1) {
		int64_t d = c10::maybe_wrap_dim(dim, self.dim());
		std::vector<int64_t> shape = self.sizes().vec();

		shape[d] = index.numel();
		at::Tensor out = at::empty(shape, self.options());
		if (out.numel() == 0 && index.numel() == 0) {
			count_device_op("index_select");
			return out;
		}
		if (out.numel() > 0) {
			Indexed g;
			int64_t pad = R - self.dim();

			g.set_shape(shape);
			for (int64_t k = 0; k < self.dim(); k++)
				g.data[pad + k] = k == d ? 0 : self.stride(k);
			g.index[pad + d] = index.dim() ? index.stride(0) : 0;
			g.data_d = self.stride(d);
			g.size_d = self.size(d);
			int r = run_indexed(g, "igather", self, index, out, "index_select");
			if (r == 1) {
				count_device_op("index_select");
				return out;
			}
			if (r < 0)
				cpu_error("index_select", [&] { at::index_select(cpu(self), dim, cpu(index)); });
			failed = true;
		}
	}
	return on_cpu("index_select", failed, [&] { return at::index_select(cpu(self), dim, cpu(index)); })
		.to(self.device());
}

static at::Tensor &index_select_out(const at::Tensor &self, int64_t dim, const at::Tensor &index, at::Tensor &out)
{
	at::Tensor r = maia_torch::ops::index_select(self, dim, index);

	if (out.sizes() != r.sizes())
		out.resize_(r.sizes());
	return out.copy_(r);
}

/* ---- gather and scatter_add --------------------------------------------------------- */

/* CPU torch's shape rules for gather/scatter_add: same rank, index within the others on every dimension but d. */
static bool shapes_ok(const at::Tensor &self, int64_t d, const at::Tensor &index, const at::Tensor *src)
{
	if (index.dim() != self.dim() || (src && src->dim() != self.dim()))
		return false;
	for (int64_t k = 0; k < self.dim(); k++)
		if ((k != d && index.size(k) > self.size(k)) || (src && index.size(k) > src->size(k)))
			return false;
	return true;
}

static at::Tensor gather(const at::Tensor &self, int64_t dim, const at::Tensor &index, bool sparse_grad)
{
	bool failed = false;

	if (indexable(self, index) && elem_exact(self.scalar_type()) && !sparse_grad &&
	    shapes_ok(self, c10::maybe_wrap_dim(dim, self.dim()), index, nullptr)) {
		int64_t d = c10::maybe_wrap_dim(dim, self.dim());
		at::Tensor out = at::empty(index.sizes(), self.options());
		if (out.numel() == 0) {
			count_device_op("gather");
			return out;
		}
		Indexed g;
		int64_t pad = R - self.dim();

		g.set_shape(index.sizes());
		for (int64_t k = 0; k < self.dim(); k++) {
			g.data[pad + k] = k == d ? 0 : self.stride(k);
			g.index[pad + k] = index.stride(k);
		}
		g.data_d = self.stride(d);
		g.size_d = self.size(d);
		int r = run_indexed(g, "igather", self, index, out, "gather");
		if (r == 1) {
			count_device_op("gather");
			return out;
		}
		if (r < 0)
			cpu_error("gather", [&] { at::gather(cpu(self), dim, cpu(index)); });
		failed = true;
	}
	return on_cpu("gather", failed, [&] { return at::gather(cpu(self), dim, cpu(index), sparse_grad); })
		.to(self.device());
}

static at::Tensor &gather_out(const at::Tensor &self, int64_t dim, const at::Tensor &index, bool sparse_grad,
			      at::Tensor &out)
{
	at::Tensor r = maia_torch::ops::gather(self, dim, index, sparse_grad);

	if (out.sizes() != r.sizes())
		out.resize_(r.sizes());
	return out.copy_(r);
}

static at::Tensor scatter_add(const at::Tensor &self, int64_t dim, const at::Tensor &index, const at::Tensor &src)
{
	bool failed = false;

	if (indexable(self, index) && on_device(src, self) && tvp::elem(self.scalar_type()) &&
	    src.scalar_type() == self.scalar_type() && int32_reach(src) &&
	    shapes_ok(self, c10::maybe_wrap_dim(dim, self.dim()), index, &src)) {
		int64_t d = c10::maybe_wrap_dim(dim, self.dim());

		/* A float32 copy of self to add into, contiguous; src cut to index's shape. */
		at::Tensor acc = at::empty(self.sizes(), self.options().dtype(at::kFloat));
		acc.copy_(self);
		if (index.numel() == 0) {
			count_device_op("scatter_add");
			return acc.to(self.scalar_type());
		}
		at::Tensor part = src;
		for (int64_t k = 0; k < src.dim(); k++)
			part = part.narrow(k, 0, index.size(k));
		part = part.to(at::kFloat).contiguous();
		Indexed g;
		int64_t pad = R - self.dim();

		g.set_shape(index.sizes());
		for (int64_t k = 0; k < self.dim(); k++) {
			g.data[pad + k] = k == d ? 0 : acc.stride(k);
			g.index[pad + k] = index.stride(k);
		}
		g.data_d = acc.stride(d);
		g.size_d = self.size(d);
		int r = run_indexed(g, "iscatter", acc, index, part, "scatter_add");
		if (r == 1) {
			count_device_op("scatter_add");
			return self.scalar_type() == at::kFloat ? acc : acc.to(self.scalar_type());
		}
		if (r < 0)
			cpu_error("scatter_add", [&] { at::scatter_add(cpu(self), dim, cpu(index), cpu(src)); });
		failed = true;
	}
	return on_cpu("scatter_add", failed, [&] { return at::scatter_add(cpu(self), dim, cpu(index), cpu(src)); })
		.to(self.device());
}

static at::Tensor &scatter_add_(at::Tensor &self, int64_t dim, const at::Tensor &index, const at::Tensor &src)
{
	return self.copy_(maia_torch::ops::scatter_add(self, dim, index, src));
}

static at::Tensor &scatter_add_out(const at::Tensor &self, int64_t dim, const at::Tensor &index,
				   const at::Tensor &src, at::Tensor &out)
{
	at::Tensor r = maia_torch::ops::scatter_add(self, dim, index, src);

	if (out.sizes() != r.sizes())
		out.resize_(r.sizes());
	return out.copy_(r);
}

/* ---- embedding's backward, max pooling's backward ------------------------------------- */

/*
 * grad_weight[indices[j]] += grad[j] over j (rows of D), padding_idx
 * skipped; out-of-range indices are ignored, as CPU torch ignores them.
 */
static at::Tensor embedding_dense_backward(const at::Tensor &grad, const at::Tensor &indices, int64_t num_weights,
					   int64_t padding_idx, bool scale_grad_by_freq)
{
	bool failed = false;

	if (!scale_grad_by_freq && on_device(grad) && on_device(indices, grad) && index_type(indices) &&
	    tvp::elem(grad.scalar_type()) && grad.dim() >= 1 && num_weights > 0 &&
	    num_weights * grad.size(-1) < ((int64_t)1 << 31) && int32_reach(grad) && int32_reach(indices)) {
		int64_t n = indices.numel(), D = grad.size(-1);
		at::Tensor acc = at::zeros({ num_weights, D }, grad.options().dtype(at::kFloat));

		if (n == 0 || D == 0) {
			count_device_op("embedding_dense_backward");
			return acc.to(grad.scalar_type());
		}
		at::Tensor idx = indices.reshape({ n });
		at::Tensor g = grad.reshape({ n, D }).to(at::kFloat).contiguous();
		Indexed e;

		e.set_shape({ n, D });
		e.data[R - 1] = 1;
		e.index[R - 2] = idx.stride(0);
		e.data_d = D;
		e.size_d = num_weights;
		e.skip = padding_idx;
		e.has_skip = true;
		e.check = false;
		if (run_indexed(e, "iscatter", acc, idx, g, "embedding_dense_backward") == 1) {
			count_device_op("embedding_dense_backward");
			return grad.scalar_type() == at::kFloat ? acc : acc.to(grad.scalar_type());
		}
		failed = true;
	}
	return on_cpu("embedding_dense_backward", failed, [&] {
		       return at::embedding_dense_backward(cpu(grad), cpu(indices), num_weights, padding_idx,
							   scale_grad_by_freq);
	       }).to(grad.device());
}

/* grad_input.view(N C, H W)[plane, indices[plane, k]] += grad_output[plane, k]. */
static at::Tensor max_pool2d_with_indices_backward(const at::Tensor &grad_output, const at::Tensor &self,
						   at::IntArrayRef kernel_size, at::IntArrayRef stride,
						   at::IntArrayRef padding, at::IntArrayRef dilation, bool ceil_mode,
						   const at::Tensor &indices)
{
	bool failed = false;

	if (on_device(self) && on_device(grad_output, self) && on_device(indices, self) &&
	    indices.scalar_type() == at::kLong && tvp::elem(self.scalar_type()) &&
	    grad_output.scalar_type() == self.scalar_type() && (self.dim() == 3 || self.dim() == 4) &&
	    grad_output.sizes() == indices.sizes() && grad_output.dim() == self.dim() && self.numel() > 0 &&
	    int32_reach(self) && int32_reach(indices) && int32_reach(grad_output)) {
		int64_t hw = self.size(-1) * self.size(-2), planes = self.numel() / hw;
		int64_t k = indices.numel() / planes;
		at::Tensor acc = at::zeros(self.sizes(), self.options().dtype(at::kFloat));

		if (k == 0) {
			count_device_op("max_pool2d_with_indices_backward");
			return acc.to(self.scalar_type());
		}
		at::Tensor idx = indices.reshape({ planes, k });
		at::Tensor g = grad_output.reshape({ planes, k }).to(at::kFloat).contiguous();
		Indexed e;

		e.set_shape({ planes, k });
		e.data[R - 2] = hw;
		e.index[R - 2] = idx.stride(0);
		e.index[R - 1] = idx.stride(1);
		e.data_d = 1;
		e.size_d = hw;
		e.check = false;
		if (run_indexed(e, "iscatter", acc, idx, g, "max_pool2d_with_indices_backward") == 1) {
			count_device_op("max_pool2d_with_indices_backward");
			return self.scalar_type() == at::kFloat ? acc : acc.to(self.scalar_type());
		}
		failed = true;
	}
	return on_cpu("max_pool2d_with_indices_backward", failed, [&] {
		       return at::max_pool2d_with_indices_backward(cpu(grad_output), cpu(self), kernel_size, stride,
								   padding, dilation, ceil_mode, cpu(indices));
	       }).to(self.device());
}

/* ---- masked_fill_ ------------------------------------------------------------------- */

static at::Tensor &masked_fill_scalar_(at::Tensor &self, const at::Tensor &mask, const at::Scalar &value)
{
	bool failed = false;

	uint64_t bits = 0;

	if (on_device(self) && on_device(mask, self) && mask.scalar_type() == at::kBool &&
	    elem_exact(self.scalar_type()) && self.dim() <= R && at::is_expandable_to(mask.sizes(), self.sizes()) &&
	    value_arg(value, self.scalar_type(), bits) && int32_reach(self) && int32_reach(mask)) {
		if (self.numel() == 0) {
			count_device_op("masked_fill_");
			return self;
		}
		at::Tensor x = self.is_contiguous() ? self : self.contiguous();
		at::Tensor m = mask.expand(self.sizes());
		std::vector<uint64_t> args = std::vector<uint64_t>{ va_of(x), va_of(m), (uint64_t)self.numel() } +
					     tvp_pack_shape5(self.sizes().vec()) + tvp_pack_strides5(m.strides().vec()) +
					     std::vector<uint64_t>{ bits };

		if (tvp::run(dev_of(self), { { std::string("maskfill.") + elem_exact(self.scalar_type()),
					      tvp::blocks(self.numel()), args } },
			     "masked_fill_") == 1) {
			count_device_op("masked_fill_");
			if (!x.is_same(self))
				self.copy_(x);
			return self;
		}
		failed = true;
	}
	at::Tensor c = on_cpu("masked_fill_.Scalar", failed, [&] { return cpu(self).masked_fill_(cpu(mask), value); });
	return self.copy_(c);
}

static at::Tensor &masked_fill_tensor_(at::Tensor &self, const at::Tensor &mask, const at::Tensor &value)
{
	if (value.dim() == 0 && (value.is_cpu() || on_device(value, self)))
		return masked_fill_scalar_(self, mask, value.item());
	at::Tensor c = on_cpu("masked_fill_.Tensor", false,
			      [&] { return cpu(self).masked_fill_(cpu(mask), cpu(value)); });
	return self.copy_(c);
}

TORCH_LIBRARY_IMPL(aten, PrivateUse1, m)
{
	m.impl("index_select", index_select);
	m.impl("index_select.out", index_select_out);
	m.impl("gather", gather);
	m.impl("gather.out", gather_out);
	m.impl("scatter_add", scatter_add);
	m.impl("scatter_add_", scatter_add_);
	m.impl("scatter_add.out", scatter_add_out);
	m.impl("embedding_dense_backward", embedding_dense_backward);
	m.impl("max_pool2d_with_indices_backward", max_pool2d_with_indices_backward);
	m.impl("masked_fill_.Scalar", masked_fill_scalar_);
	m.impl("masked_fill_.Tensor", masked_fill_tensor_);
}

} // namespace ops
} // namespace maia_torch
