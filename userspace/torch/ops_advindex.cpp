// SPDX-License-Identifier: MIT
/*
 * Advanced indexing as TVP programs: aten::index.Tensor (x[i], x[i, j, k],
 * with None/slices around them), _index_put_impl_ (index_put_ and
 * index_put, accumulate or not, and so index's backward) and index_add.
 *
 * Any number of index tensors (int64 or int32, mixed), broadcast together
 * to a shape B; boolean masks become their nonzero() columns on the device
 * (ops_mask.cpp: the count read back, a host wait). The result's shape is
 * the self dimensions before the indexed ones, B, the ones after (or B
 * first when the indexed dimensions are not adjacent, as torch puts it),
 * rank <= 5. First one "advoff" launch per index tensor over B adds index
 * x the indexed dimension's stride into an int32 offset tensor "off"
 * (negative indices wrapped, or out of range as for index_add); a bad
 * index sets a flag word and makes its off -1. Then a lane per element of
 * the result finds its coordinates by division, the data's offset from the
 * data's strides plus off at its B position: "advget" loads there into a
 * contiguous output; "advput" stores a contiguous source there; "advadd"
 * adds a contiguous float32 source with VAMOADD (binary32 atomics:
 * bfloat16/float16 accumulate in a float32 copy), so repeated indices add
 * up, in an unspecified order. self keeps its strides. A lane whose off is
 * -1 is not accessed. All of it is one job; the op waits for it and reads
 * the flag (a host wait; none when every index came from a mask), and a
 * set flag re-runs the op on CPU copies for CPU torch's own error (an
 * in-place op has stored its good lanes by then, as CPU torch's loop has).
 * A 0-d CPU value tensor (x[i] = 2.0) is copied to the device.
 */
#include <torch/library.h>

#include <ATen/ExpandUtils.h>
#include <ATen/MemoryOverlap.h>
#include <ATen/WrapDimUtils.h>

#include "ops_mask.h"

namespace maia_torch {
namespace ops {

using tvp::Launch;

/* ---- the programs ---------------------------------------------------------------- */

/*
 * advoff (x64: int64 indices, x32: int32), over B: s1 = index j (any
 * strides), s2 = off (int32, contiguous over B), s3 = the flag word, s4 =
 * n, s5/s6 = B's shape, s7-s9 = the index's strides, s10 = size | stride
 * << 32 (the indexed dimension's), s11 = wrap | first << 32. off = (first ?
 * 0 : off) + index x stride, or -1 once an index is bad (out of range, or
 * negative without wrap), which also sets the flag.
 */
static std::string advoff(bool i64)
{
	std::string s = tvp_asm_coords5(4, 5) + tvp_asm_dot5(12, 7);

	if (i64)
		s += "\tviadd v14, v12, v12\n\tvld v15, s1, v14, i32, v29\n"
		     "\tvsplati v9, 1\n\tviadd v14, v14, v9\n\tvld v16, s1, v14, i32, v29\n";
	else
		s += "\tvld v15, s1, v12, i32, v29\n\tvsplati v9, 31\n\tvsra v16, v15, v9\n";
	s += "\tvsplati v17, 0\n\tvsplati v13, -1\n\tvsplat v8, s10\t# size\n"
	     "\tshr s22, s11, s30\n\tvsplat v27, s22\n\tvicmp v27, v27, v17, eq\n\tvand v27, v27, v29\t# not first\n"
	     "\tvsplat v26, s11\n\tvicmp v26, v26, v17, ne\t# wrap\n"
	     "\tvicmp v18, v16, v17, eq\n\tvicmp v19, v15, v17, ge\n\tvand v18, v18, v19\n"
	     "\tvicmp v19, v15, v8, lt\n\tvand v18, v18, v19\t# in [0, size)\n"
	     "\tviadd v20, v15, v8\n\tvicmp v21, v16, v13, eq\n\tvicmp v19, v15, v17, lt\n\tvand v21, v21, v19\n"
	     "\tvicmp v19, v20, v17, ge\n\tvand v21, v21, v19\n\tvand v21, v21, v26\t# in [-size, 0), wrapping\n"
	     "\tvsel v15, v20, v15, v21\n\tvor v18, v18, v21\n"
	     "\tvicmp v19, v18, v17, eq\n\tvand v19, v19, v29\n"
	     "\tvsplati v25, 1\n\tvst v25, s3, v17, i32, v19\t# a bad one: flag = 1\n"
	     "\tshr s22, s10, s30\n\tvsplat v9, s22\n\tvimul v10, v15, v9\t# index x stride\n"
	     "\tvld v11, s2, v28, i32, v27\t# 0 when first\n\tviadd v10, v10, v11\n"
	     "\tvicmp v19, v11, v17, lt\n\tvicmp v20, v18, v17, eq\n\tvor v19, v19, v20\n"
	     "\tvsel v10, v13, v10, v19\t# bad now or before: -1\n\tvst v10, s2, v28, i32, v29\n\thalt\n";
	return s;
}

/*
 * advget / advput / advadd over the result's shape: s1 = data, s2 = off,
 * s3 = the contiguous output (advget) or source (advput; advadd: f32), s4
 * = n, s5/s6 = the shape, s7-s9 = the data's strides (0 along B), s10-s12
 * = off's (0 outside B). A lane whose off is -1 is not accessed.
 */
static std::string advmain(const std::string &op, const std::string &t)
{
	std::string s = tvp_asm_coords5(4, 5) + tvp_asm_dot5(11, 7) + tvp_asm_dot5(12, 10) +
			"\tvld v15, s2, v12, i32, v29\n\tvsplati v17, 0\n\tvicmp v18, v15, v17, ge\n"
			"\tvand v29, v29, v18\n\tviadd v11, v11, v15\t# the data's offset\n";

	if (op == "advget")
		s += "\tvld v24, s1, v11, " + t + ", v29\n\tvst v24, s3, v28, " + t + ", v29\n";
	else if (op == "advput")
		s += "\tvld v24, s3, v28, " + t + ", v29\n\tvst v24, s1, v11, " + t + ", v29\n";
	else
		s += "\tvld v24, s3, v28, f32, v29\n\tvamoadd v24, s1, v11, f32, v29\n";
	return s + "\thalt\n";
}

static std::string family(const std::string &kind, const std::string &t)
{
	bool exact = t == "f32" || t == "bf16" || t == "f16" || t == "i32" || t == "i8";

	if (kind.rfind("advoff", 0) == 0)
		return t == "i32" ? advoff(kind.back() == '4') : "";
	if ((kind == "advadd" && t != "f32") || !exact)
		return "";
	return advmain(kind, t);
}

[[maybe_unused]] static const bool registered = tvp::add_family(
	{ "advoff32", "advoff64", "advget", "advput", "advadd" }, family);

/* ---- the plan: iteration shape and strides ------------------------------------------ */

struct Plan {
	std::vector<at::Tensor> idx;	/* on self's device, expanded to B */
	std::vector<int64_t> dims;	/* the self dimension each indexes */
	std::vector<int64_t> b;		/* B, the indices' broadcast shape */
	std::vector<int64_t> shape;	/* the result's, rank <= 5 */
	std::vector<int64_t> data, offs; /* the data's and off's strides over it */
	bool wrap = true;
	bool trusted = false;		/* every index from a mask: none can be bad */

	static int64_t prod(const std::vector<int64_t> &v)
	{
		int64_t n = 1;

		for (int64_t s : v)
			n *= s;
		return n;
	}
	int64_t numel() const { return prod(shape); }

	/* off over B from each index, then op (advget, advput, advadd) over the result. */
	std::vector<Launch> launches(const char *op, const at::Tensor &self, const at::Tensor &other,
				     const at::Tensor &off, uint64_t flag) const
	{
		std::vector<Launch> l;
		int64_t nb = prod(b);

		for (size_t j = 0; j < idx.size(); j++) {
			std::vector<int64_t> st(idx[j].strides().begin(), idx[j].strides().end());

			l.push_back({ std::string("advoff") + (idx[j].scalar_type() == at::kLong ? "64" : "32") + ".i32",
				      tvp::blocks(nb),
				      std::vector<uint64_t>{ va_of(idx[j]), va_of(off), flag, (uint64_t)nb } +
					      tvp_pack_shape5(b) + tvp_pack_strides5(st) +
					      std::vector<uint64_t>{ pack(self.size(dims[j]), self.stride(dims[j])),
								     pack(wrap, j == 0) } });
		}
		std::string t = std::string(op) == "advadd" ? "f32" : elem_exact(self.scalar_type());
		l.push_back({ std::string(op) + "." + t, tvp::blocks(numel()),
			      std::vector<uint64_t>{ va_of(self), va_of(off), va_of(other), (uint64_t)numel() } +
				      tvp_pack_shape5(shape) + tvp_pack_strides5(data) + tvp_pack_strides5(offs) });
		return l;
	}
};

/*
 * The index tensors of self[indices] (None: undefined), masks replaced by
 * their nonzero() columns (on the device: a host wait for the count; else
 * on the CPU, and the indices copied back); false when torch would refuse
 * them (CPU torch then raises its error). trusted: only masks.
 */
static bool expand_masks(const at::Tensor &self, const c10::List<c10::optional<at::Tensor>> &indices,
			 std::vector<at::Tensor> &out, bool &trusted)
{
	trusted = true;
	for (const c10::optional<at::Tensor> &o : indices) {
		if (!o || !o->defined()) {
			out.emplace_back();
			continue;
		}
		const at::Tensor &i = *o;
		if (i.scalar_type() != at::kBool && i.scalar_type() != at::kByte) {
			out.push_back(i.is_cpu() ? i.to(self.device()) : i);
			trusted = false;
			continue;
		}
		for (int64_t j = 0; j < i.dim(); j++)
			if ((int64_t)out.size() + j >= self.dim() || i.size(j) != self.size(out.size() + j))
				return false;
		at::Tensor m = i.is_cpu() ? i.to(self.device()) : i, nz;
		int r = nonzero_on_device(m, nz, "index");
		if (r < 0)
			to_cpu("nonzero", true);	/* a kernel failed: counted, strict mode raises */
		if (r != 1)
			nz = cpu(i).nonzero().to(self.device());
		for (int64_t j = 0; j < i.dim(); j++)
			out.push_back(nz.select(1, j));
	}
	return true;
}

/* The plan for self[indices] on self's device, or false (CPU torch's path). */
static bool make_plan(const at::Tensor &self, const c10::List<c10::optional<at::Tensor>> &indices, Plan &p)
{
	std::vector<at::Tensor> ix;

	if (!on_device(self) || !elem_exact(self.scalar_type()) || self.dim() < 1 || self.dim() > 5 ||
	    (int64_t)indices.size() > self.dim() || !int32_reach(self) || !expand_masks(self, indices, ix, p.trusted) ||
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
	if (p.idx.empty())
		return false;
	at::DimVector b;
	try {
		std::vector<at::Tensor> e = at::expand_outplace(p.idx);

		for (size_t j = 0; j < e.size(); j++)
			p.idx[j] = e[j];
	} catch (const std::exception &) {
		return false;
	}
	p.b = std::vector<int64_t>(p.idx[0].sizes().begin(), p.idx[0].sizes().end());
	for (const at::Tensor &i : p.idx)
		if (!int32_reach(i) || i.dim() > 5)
			return false;
	/* The result's dimensions: self's (k >= 0) or B's (-1 - position in B). */
	std::vector<int64_t> rdims;
	bool adjacent = p.dims.back() - p.dims.front() == (int64_t)p.dims.size() - 1;
	int64_t first = adjacent ? p.dims[0] : 0;
	for (int64_t k = 0; k < self.dim(); k++) {
		if (k == first)
			for (size_t j = 0; j < p.b.size(); j++)
				rdims.push_back(-1 - (int64_t)j);
		if (std::find(p.dims.begin(), p.dims.end(), k) == p.dims.end())
			rdims.push_back(k);
	}
	if (rdims.size() > 5)
		return false;
	/* off is contiguous over B */
	std::vector<int64_t> bstride(p.b.size());
	for (int64_t j = (int64_t)p.b.size() - 1, s = 1; j >= 0; s *= p.b[j], j--)
		bstride[j] = s;
	for (int64_t k : rdims) {
		p.shape.push_back(k >= 0 ? self.size(k) : p.b[-1 - k]);
		p.data.push_back(k >= 0 ? self.stride(k) : 0);
		p.offs.push_back(k >= 0 ? 0 : bstride[-1 - k]);
	}
	return p.numel() <= tvp::max_elements() && Plan::prod(p.b) <= tvp::max_elements();
}

/*
 * 1: done; 0: the device failed a kernel (logged); -1: an index was out
 * of range. flagclear.i32 is ops_index.cpp's (the flag word = 0). Indices
 * from masks are good: no flag to read (no host wait).
 */
static int run_plan(const Plan &p, const char *kind, const at::Tensor &self, const at::Tensor &other, const char *op)
{
	int dev = dev_of(self);
	at::Tensor flag = at::empty({ 1 }, self.options().dtype(at::kInt));
	at::Tensor off = at::empty(p.b, self.options().dtype(at::kInt));
	std::vector<Launch> l = p.launches(kind, self, other, off, va_of(flag));

	l.insert(l.begin(), { "flagclear.i32", 1, { va_of(flag) } });
	if (tvp::run(dev, l, op) != l.size())
		return 0;
	if (p.trusted)
		return 1;
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
	    v.is_alias_of(self) || !make_plan(self, indices, p) ||
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
