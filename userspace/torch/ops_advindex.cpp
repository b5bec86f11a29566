// SPDX-License-Identifier: MIT
/*
 * Advanced indexing as TVP programs: aten::index.Tensor (x[i], x[i, j],
 * with None/slices around them), _index_put_impl_ (index_put_ and
 * index_put, accumulate or not, and so index's backward) and index_add.
 *
 * One or two index tensors (int64, or both int32), broadcast together to a
 * shape B. The iteration shape is the result's: the self dimensions before
 * the indexed ones, B, the ones after (or B first when the two indexed
 * dimensions are not adjacent, as torch puts it), rank <= 4. Each lane
 * takes one element of it, finds its coordinates by division, each index's
 * position from the index's (broadcast) strides and the data's offset from
 * the data's strides plus index x the indexed dimension's stride. "advget"
 * loads there into a contiguous output; "advput" stores a contiguous source
 * there; "advadd" adds a contiguous float32 source with VAMOADD (binary32
 * atomics: bfloat16/float16 accumulate in a float32 copy), so repeated
 * indices add up, in an unspecified order. self keeps its strides.
 *
 * Negative indices wrap (index, index_put) or are out of range (index_add,
 * as CPU torch). A lane whose index is out of range is not accessed and
 * sets a flag word; the op waits for its job, reads the flag, and a set
 * flag re-runs the op on CPU copies for CPU torch's own error (a host wait
 * per op; an in-place op has stored its good lanes by then, as CPU torch's
 * loop has). Boolean masks become index tensors by nonzero() on the CPU
 * (the mask copied to the host and the indices back: a host wait, not
 * counted as a fallback). A 0-d CPU value tensor (x[i] = 2.0) is copied
 * to the device.
 */
#include <torch/library.h>

#include <ATen/ExpandUtils.h>
#include <ATen/MemoryOverlap.h>
#include <ATen/WrapDimUtils.h>

#include "ops_common.h"

namespace maia_torch {
namespace ops {

using tvp::Launch;

/* ---- the program ---------------------------------------------------------------- */

/*
 * s1 = data, s2 = index 0, s3 = index 1 or 0 (none), s4 = the contiguous
 * output (advget) or source (advput; advadd: f32), s5 = the flag word, s6
 * = n, s7 = S3 | S2 << 32, s8 = S1 | size0 << 32, s9/s10 = the data's
 * strides over the iteration shape (c0 | c1 << 32, c2 | c3 << 32), s11/s12
 * and s13/s14 = index 0's and 1's, s15 = stride0 | stride1 << 32 (the
 * indexed dimensions'), s16 = size1 | wrap << 32 (wrap: negative indices
 * count from the end). Lanes f = 1024 pid + lane; v29 = f < n, then the
 * lanes whose indices are good; v11 = the data's offset.
 */
static std::string coords()
{
	return "\tpid s20, 0\n\tmuli s21, s20, 1024\n\tli s30, 32\n"
	       "\tviota v31, 0\n\tvsplat v30, s21\n\tviadd v28, v31, v30\t# f\n"
	       "\tvsplat v30, s6\n\tvicmp v29, v28, v30, lt\t# f < n\n"
	       "\tvsplat v5, s7\n\tshr s22, s7, s30\n\tvsplat v6, s22\n\tvsplat v7, s8\n"
	       "\tvirem v3, v28, v5\n\tvidiv v4, v28, v5\n\tvirem v2, v4, v6\n\tvidiv v4, v4, v6\n"
	       "\tvirem v1, v4, v7\n\tvidiv v0, v4, v7\t# c0..c3\n"
	       "\tvsplati v17, 0\n\tvsplati v13, -1\n\tshr s22, s16, s30\n\tvsplat v27, s22\n"
	       "\tvicmp v27, v27, v17, ne\t# wrap\n";
}

/*
 * Index j (at s<2 + j>, strides at s<11 + 2j>, size in v8, the indexed
 * dimension's stride in s<stride>): v15/v16 = its low/high words; good =
 * [0, size) or, with wrap, [-size, 0) moved up by size; a bad active lane
 * sets the flag; v11 += index x stride.
 */
static std::string term(bool i64, int j, const std::string &stride)
{
	std::string s = tvp_asm_stride_dot(12, 11 + 2 * j), base = "s" + std::to_string(2 + j), l = std::to_string(j);

	if (i64)
		s += "\tviadd v14, v12, v12\n\tvld v15, " + base + ", v14, i32, v29\n"
		     "\tvsplati v9, 1\n\tviadd v14, v14, v9\n\tvld v16, " + base + ", v14, i32, v29\n";
	else
		s += "\tvld v15, " + base + ", v12, i32, v29\n\tvsplati v9, 31\n\tvsra v16, v15, v9\n";
	s += "\tvicmp v18, v16, v17, eq\n\tvicmp v19, v15, v17, ge\n\tvand v18, v18, v19\n"
	     "\tvicmp v19, v15, v8, lt\n\tvand v18, v18, v19\t# in [0, size)\n"
	     "\tviadd v20, v15, v8\n\tvicmp v21, v16, v13, eq\n\tvicmp v19, v15, v17, lt\n\tvand v21, v21, v19\n"
	     "\tvicmp v19, v20, v17, ge\n\tvand v21, v21, v19\n\tvand v21, v21, v27\t# in [-size, 0), wrapping\n"
	     "\tvsel v15, v20, v15, v21\n\tvor v18, v18, v21\n"
	     "\tvicmp v19, v18, v17, eq\n\tvand v19, v19, v29\n"
	     "\tvsplati v25, 1\n\tvst v25, s5, v17, i32, v19\t# a bad one: flag = 1\n"
	     "\tvand v29, v29, v18\n"
	     "\tvsplat v9, " + stride + "\n\tvimul v10, v15, v9\n\tviadd v11, v11, v10\t# index " + l + "\n";
	return s;
}

static std::string program(const std::string &op, bool i64, const std::string &t)
{
	std::string s = coords() + tvp_asm_stride_dot(11, 9) + "\tshr s22, s8, s30\n\tvsplat v8, s22\t# size0\n" +
			term(i64, 0, "s15") +
			"\tbeqz s3, one\n\tvsplat v8, s16\t# size1\n\tshr s23, s15, s30\n" +
			term(i64, 1, "s23") + "one:\n";

	if (op == "advget")
		s += "\tvld v24, s1, v11, " + t + ", v29\n\tvst v24, s4, v28, " + t + ", v29\n";
	else if (op == "advput")
		s += "\tvld v24, s4, v28, " + t + ", v29\n\tvst v24, s1, v11, " + t + ", v29\n";
	else
		s += "\tvld v24, s4, v28, f32, v29\n\tvamoadd v24, s1, v11, f32, v29\n";
	return s + "\thalt\n";
}

static std::string family(const std::string &kind, const std::string &t)
{
	std::string op = kind.substr(0, 6);
	bool exact = t == "f32" || t == "bf16" || t == "f16" || t == "i32" || t == "i8";

	if ((op == "advadd" && t != "f32") || !exact)
		return "";
	return program(op, kind.back() == '4', t);
}

[[maybe_unused]] static const bool registered = tvp::add_family(
	{ "advget32", "advget64", "advput32", "advput64", "advadd32", "advadd64" }, family);

/* ---- the plan: iteration shape and strides ------------------------------------------ */

struct Plan {
	std::vector<at::Tensor> idx;	/* 1 or 2, on self's device, expanded to B */
	std::vector<int64_t> dims;	/* the self dimension each indexes */
	std::vector<int64_t> shape;	/* the result's */
	int64_t data[4] = {}, index[2][4] = {};
	bool wrap = true;

	int64_t numel() const
	{
		int64_t n = 1;

		for (int64_t s : shape)
			n *= s;
		return n;
	}
	Launch launch(const char *op, const at::Tensor &self, const at::Tensor &other, uint64_t flag) const
	{
		int64_t sh[4] = { 1, 1, 1, 1 };
		size_t pad = 4 - shape.size();
		bool two = idx.size() == 2;

		for (size_t k = 0; k < shape.size(); k++)
			sh[pad + k] = shape[k];
		std::string t = std::string(op) == "advadd" ? "f32" : elem_exact(self.scalar_type());
		std::string program = std::string(op) + (idx[0].scalar_type() == at::kLong ? "64." : "32.") + t;
		return { program, tvp::blocks(numel()),
			 { va_of(self), va_of(idx[0]), two ? va_of(idx[1]) : 0, va_of(other), flag, (uint64_t)numel(),
			   pack(sh[3], sh[2]), pack(sh[1], self.size(dims[0])), pack(data[0], data[1]),
			   pack(data[2], data[3]), pack(index[0][0], index[0][1]), pack(index[0][2], index[0][3]),
			   pack(index[1][0], index[1][1]), pack(index[1][2], index[1][3]),
			   pack(self.stride(dims[0]), two ? self.stride(dims[1]) : 0),
			   pack(two ? self.size(dims[1]) : 0, wrap) } };
	}
};

/*
 * The index tensors of self[indices] (None: undefined), masks replaced by
 * their nonzero() columns; false when torch would refuse them (CPU torch
 * then raises its error) or a mask's copy cannot be made.
 */
static bool expand_masks(const at::Tensor &self, const c10::List<c10::optional<at::Tensor>> &indices,
			 std::vector<at::Tensor> &out)
{
	for (const c10::optional<at::Tensor> &o : indices) {
		if (!o || !o->defined()) {
			out.emplace_back();
			continue;
		}
		const at::Tensor &i = *o;
		if (i.scalar_type() != at::kBool && i.scalar_type() != at::kByte) {
			out.push_back(i.is_cpu() ? i.to(self.device()) : i);
			continue;
		}
		for (int64_t j = 0; j < i.dim(); j++)
			if ((int64_t)out.size() + j >= self.dim() || i.size(j) != self.size(out.size() + j))
				return false;
		at::Tensor nz = cpu(i).nonzero();
		for (int64_t j = 0; j < i.dim(); j++)
			out.push_back(nz.select(1, j).contiguous().to(self.device()));
	}
	return true;
}

/* The plan for self[indices] on self's device, or false (CPU torch's path). */
static bool make_plan(const at::Tensor &self, const c10::List<c10::optional<at::Tensor>> &indices, Plan &p)
{
	std::vector<at::Tensor> ix;

	if (!on_device(self) || !elem_exact(self.scalar_type()) || self.dim() < 1 || self.dim() > 4 ||
	    (int64_t)indices.size() > self.dim() || !int32_reach(self) || !expand_masks(self, indices, ix) ||
	    (int64_t)ix.size() > self.dim())
		return false;
	for (size_t k = 0; k < ix.size(); k++) {
		if (!ix[k].defined())
			continue;
		if (!on_device(ix[k], self) || (ix[k].scalar_type() != at::kLong && ix[k].scalar_type() != at::kInt))
			return false;
		p.idx.push_back(ix[k]);
		p.dims.push_back((int64_t)k);
	}
	if (p.idx.empty() || p.idx.size() > 2 || p.idx.front().scalar_type() != p.idx.back().scalar_type())
		return false;
	at::DimVector b;
	try {
		b = p.idx.size() == 1 ? at::DimVector(p.idx[0].sizes())
				      : at::infer_size_dimvector(p.idx[0].sizes(), p.idx[1].sizes());
	} catch (const std::exception &) {
		return false;
	}
	for (at::Tensor &i : p.idx) {
		i = i.expand(b);
		if (!int32_reach(i))
			return false;
	}
	/* The result's dimensions: self's (k >= 0) or B's (-1 - position in B). */
	std::vector<int64_t> rdims;
	bool adjacent = p.idx.size() == 1 || p.dims[1] == p.dims[0] + 1;
	int64_t first = adjacent ? p.dims[0] : 0;
	for (int64_t k = 0; k < self.dim(); k++) {
		if (k == first)
			for (size_t j = 0; j < b.size(); j++)
				rdims.push_back(-1 - (int64_t)j);
		if (std::find(p.dims.begin(), p.dims.end(), k) == p.dims.end())
			rdims.push_back(k);
	}
	if (rdims.size() > 4)
		return false;
	size_t pad = 4 - rdims.size();
	for (size_t r = 0; r < rdims.size(); r++) {
		int64_t k = rdims[r];

		if (k >= 0) {
			p.shape.push_back(self.size(k));
			p.data[pad + r] = self.stride(k);
			continue;
		}
		p.shape.push_back(b[-1 - k]);
		for (size_t j = 0; j < p.idx.size(); j++)
			p.index[j][pad + r] = p.idx[j].stride(-1 - k);
	}
	return p.numel() <= tvp::max_elements();
}

/*
 * 1: done; 0: the device failed the kernel (logged); -1: an index was out
 * of range. flagclear.i32 is ops_index.cpp's (the flag word = 0).
 */
static int run_plan(const Plan &p, const char *kind, const at::Tensor &self, const at::Tensor &other, const char *op)
{
	int dev = dev_of(self);
	at::Tensor flag = at::empty({ 1 }, self.options().dtype(at::kInt));
	size_t done = tvp::run(dev, { { "flagclear.i32", 1, { va_of(flag) } }, p.launch(kind, self, other, va_of(flag)) },
			       op);

	if (done != 2)
		return 0;
	int32_t bad = 0;
	copy_from_device(dev, &bad, va_of(flag), sizeof(bad));
	return bad ? -1 : 1;
}

static c10::List<c10::optional<at::Tensor>> cpu(const c10::List<c10::optional<at::Tensor>> &l)
{
	c10::List<c10::optional<at::Tensor>> r;

	for (const c10::optional<at::Tensor> &o : l)
		r.push_back(ops::cpu(o));
	return r;
}

/* ---- index ------------------------------------------------------------------------- */

static at::Tensor index(const at::Tensor &self, const c10::List<c10::optional<at::Tensor>> &indices)
{
	Plan p;
	bool failed = false;

	if (make_plan(self, indices, p)) {
		at::Tensor out = at::empty(p.shape, self.options());

		if (out.numel() == 0) {
			count_device_op("index");
			return out;
		}
		int r = run_plan(p, "advget", self, out, "index");
		if (r == 1) {
			count_device_op("index");
			return out;
		}
		if (r < 0)
			cpu_error("index", [&] { at::index(cpu(self), cpu(indices)); });
		failed = true;
	}
	return on_cpu("index.Tensor", failed, [&] { return at::index(cpu(self), cpu(indices)); }).to(self.device());
}

static at::Tensor &index_out(const at::Tensor &self, const c10::List<c10::optional<at::Tensor>> &indices,
			     at::Tensor &out)
{
	at::Tensor r = maia_torch::ops::index(self, indices);

	if (out.sizes() != r.sizes())
		out.resize_(r.sizes());
	return out.copy_(r);
}

/* ---- index_put_ -------------------------------------------------------------------- */

/*
 * self[indices] = values (or += with accumulate; wrap: negative indices
 * count from the end) on the device. 1: done; 0: not for the device; -1:
 * an index was out of range (the good lanes stored); -2: the device failed
 * the kernel (logged).
 */
static int put_on_device(at::Tensor &self, const c10::List<c10::optional<at::Tensor>> &indices,
			 const at::Tensor &values, bool accumulate, bool wrap, const char *op)
{
	Plan p;
	at::Tensor v = values.is_cpu() && values.dim() == 0 && on_device(self) ? values.to(self.device()) : values;

	p.wrap = wrap;
	if (!on_device(v, self) || v.scalar_type() != self.scalar_type() ||
	    (accumulate && !tvp::elem(self.scalar_type())) ||
	    at::has_internal_overlap(self) != at::MemOverlap::No ||
	    at::get_overlap_status(self, v) != at::MemOverlapStatus::No || !make_plan(self, indices, p) ||
	    !at::is_expandable_to(v.sizes(), p.shape))
		return 0;
	if (p.numel() == 0) {
		count_device_op(op);
		return 1;
	}
	at::Tensor acc = self, src = v.expand(p.shape);
	if (accumulate && self.scalar_type() != at::kFloat)
		acc = self.to(at::kFloat);
	src = accumulate ? src.to(at::kFloat).contiguous() : src.contiguous();
	int r = run_plan(p, accumulate ? "advadd" : "advput", acc, src, op);
	if (r == 0)
		return -2;
	if (!acc.is_same(self))
		self.copy_(acc);
	if (r == 1)
		count_device_op(op);
	return r;
}

static at::Tensor &index_put_impl_(at::Tensor &self, const c10::List<c10::optional<at::Tensor>> &indices,
				   const at::Tensor &values, bool accumulate, bool unsafe)
{
	auto ref = [&] {
		at::Tensor c = cpu(self);

		at::_index_put_impl_(c, cpu(indices), cpu(values), accumulate, unsafe);
		return c;
	};
	int r;

	at::assert_no_overlap(self, values);	/* CPU torch's error for x[i] = x[j:] */
	r = put_on_device(self, indices, values, accumulate, true, "index_put_");

	if (r == 1)
		return self;
	if (r == -1)
		cpu_error("index_put_", ref);
	return self.copy_(on_cpu("_index_put_impl_", r == -2, ref));
}

/* ---- index_add --------------------------------------------------------------------- */

/* CPU torch's rules: index of rank <= 1, source of self's shape but index.numel() along dim. */
static bool add_shapes_ok(const at::Tensor &self, int64_t d, const at::Tensor &index, const at::Tensor &source)
{
	if (index.dim() > 1 || source.dim() != self.dim())
		return false;
	for (int64_t k = 0; k < self.dim(); k++)
		if (source.size(k) != (k == d ? index.numel() : self.size(k)))
			return false;
	return true;
}

/* target.index_add_(dim, index, source, alpha) on the device, or on the CPU copies. */
static void index_add_into(at::Tensor &target, int64_t dim, const at::Tensor &index, const at::Tensor &source,
			   const at::Scalar &alpha)
{
	bool failed = false;

	at::assert_no_internal_overlap(target);	/* CPU torch's checks and errors */
	at::assert_no_overlap(target, source);
	if (on_device(target) && on_device(source, target) && tvp::elem(target.scalar_type()) && target.dim() >= 1 &&
	    source.scalar_type() == target.scalar_type() && !alpha.isComplex() &&
	    add_shapes_ok(target, c10::maybe_wrap_dim(dim, target.dim()), index, source)) {
		int64_t d = c10::maybe_wrap_dim(dim, target.dim());
		c10::List<c10::optional<at::Tensor>> ix;

		for (int64_t k = 0; k < d; k++)
			ix.push_back(c10::nullopt);
		ix.push_back(index.reshape({ index.numel() }));
		/* source's dimensions already run as self[..., index, ...]'s result does */
		at::Tensor src = alpha.toDouble() == 1.0 ? source : source.mul(alpha);
		int r = put_on_device(target, ix, src, true, false, "index_add");

		if (r == 1)
			return;
		if (r == -1)
			cpu_error("index_add", [&] { cpu(target).index_add_(dim, cpu(index), cpu(source), alpha); });
		failed = r == -2;
	}
	at::Tensor c = on_cpu("index_add", failed,
			      [&] { return cpu(target).index_add_(dim, cpu(index), cpu(source), alpha); });
	target.copy_(c);
}

static at::Tensor &index_add_(at::Tensor &self, int64_t dim, const at::Tensor &index, const at::Tensor &source,
			      const at::Scalar &alpha)
{
	index_add_into(self, dim, index, source, alpha);
	return self;
}

static at::Tensor index_add(const at::Tensor &self, int64_t dim, const at::Tensor &index, const at::Tensor &source,
			    const at::Scalar &alpha)
{
	at::Tensor out = self.clone();

	index_add_into(out, dim, index, source, alpha);
	return out;
}

static at::Tensor &index_add_out(const at::Tensor &self, int64_t dim, const at::Tensor &index,
				 const at::Tensor &source, const at::Scalar &alpha, at::Tensor &out)
{
	if (!out.is_same(self)) {
		if (out.sizes() != self.sizes())
			out.resize_(self.sizes());
		out.copy_(self);
	}
	index_add_into(out, dim, index, source, alpha);
	return out;
}

TORCH_LIBRARY_IMPL(aten, PrivateUse1, m)
{
	m.impl("index.Tensor", index);
	m.impl("index.Tensor_out", index_out);
	m.impl("_index_put_impl_", index_put_impl_);
	m.impl("index_add_", index_add_);
	m.impl("index_add", index_add);
	m.impl("index_add.out", index_add_out);
}

} // namespace ops
} // namespace maia_torch
