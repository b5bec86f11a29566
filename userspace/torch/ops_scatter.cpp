// SPDX-License-Identifier: MIT
/*
 * scatter (src and value forms, reduce= add/multiply), scatter_reduce
 * (sum, prod, amax, amin, mean; include_self), index_copy and index_fill_
 * as one TVP program family, deterministic.
 *
 * index_copy and index_fill_ are scatters along dim of an index expanded
 * over the other dimensions. A lane takes one position of the index's
 * shape with dim left out (its "outer" coordinates, rank <= 5 with dim
 * last and of size 1) and walks j = 0 .. index.size(dim) - 1 in order:
 * it reads index[.., j, ..] and src[.., j, ..] and updates self[.., index,
 * ..] by a load, the reduction, a store. Two lanes never share an element
 * of self (their outer coordinates differ), so there are no atomics and
 * the order is fixed: for plain scatter and index_copy with repeated
 * indices the last one along dim wins (what CPU torch's loop leaves in
 * practice; torch leaves it undefined), and scatter_reduce folds src in
 * index order as CPU torch does, rounding to self's dtype each step (so
 * sum, prod and mean are within float rounding of CPU torch, amax/amin
 * exact, NaN propagating as on the CPU). include_self=False first stores
 * the reduction's identity at every indexed element (CPU torch's
 * scatter_ of it); mean counts each element's updates (float32) and
 * divides by count + include_self (at least 1) in a last walk along dim.
 *
 * The result is a contiguous copy of self, so a bad index (out of range;
 * for index_fill_ also below -size) leaves self as it was: the lane sets
 * a flag word, the op waits for its job, reads it and re-runs the op on
 * CPU copies for CPU torch's own error (a host wait per op). Indices are
 * int64, as CPU torch requires for these ops. Set takes any type the
 * gathers keep exactly; the reductions float32, bfloat16, float16.
 */
#include <torch/library.h>

#include <ATen/MemoryOverlap.h>
#include <ATen/WrapDimUtils.h>

#include "ops_mask.h"

namespace maia_torch {
namespace ops {

using tvp::Launch;

enum class Red { Set, Add, Mul, Max, Min, Mean };

static const char *const red_kind[] = { "sset", "sadd", "smul", "smax", "smin", "smean" };
static const char *const red_identity[] = { "0", "0.0", "1.0", "-inf", "inf", "0.0" };

/* ---- the programs ------------------------------------------------------------ */

/*
 * One walk along dim (label l): j = 0 .. J - 1 (s23), the index at v12
 * (int64 elements), src at v13, both stepping by their dim strides (v20,
 * v21); v15 = the index, wrapped from [-size, 0) where v7 says so; a bad
 * one sets the flag word (s4) and its lane sits the step out; v23 = the
 * target (v11 + index x v22). init: store the identity there; else reduce
 * src (or the value v6 when s18 != 0) into it.
 */
static std::string walk(const std::string &l, Red r, bool init, const std::string &t)
{
	std::string s = "\tli s26, 0\n\tvmov v12, v1\n\tvmov v13, v2\n" + l + ":\n\tbge s26, s23, " + l + "_end\n" +
			"\tviadd v14, v12, v12\n\tvld v15, s2, v14, i32, v29\n\tvsplati v9, 1\n"
			"\tviadd v14, v14, v9\n\tvld v16, s2, v14, i32, v29\n"
			"\tvicmp v18, v16, v17, eq\n\tvicmp v19, v15, v17, ge\n\tvand v18, v18, v19\n"
			"\tvicmp v19, v15, v8, lt\n\tvand v18, v18, v19\t# in [0, size)\n"
			"\tvsplati v9, -1\n\tviadd v3, v15, v8\n\tvicmp v4, v16, v9, eq\n\tvicmp v19, v15, v17, lt\n"
			"\tvand v4, v4, v19\n\tvicmp v19, v3, v17, ge\n\tvand v4, v4, v19\n\tvand v4, v4, v7\n"
			"\tvsel v15, v3, v15, v4\n\tvor v18, v18, v4\t# in [-size, 0), wrapping\n"
			"\tvicmp v19, v18, v17, eq\n\tvand v19, v19, v29\n\tvsplati v9, 1\n"
			"\tvst v9, s4, v17, i32, v19\t# a bad one: flag = 1\n"
			"\tvand v18, v18, v29\n\tvimul v23, v15, v22\n\tviadd v23, v23, v11\t# the target\n";

	if (init) {
		s += "\tvsplati v24, " + std::string(red_identity[(int)r]) + "\n\tvst v24, s1, v23, " + t + ", v18\n";
	} else {
		s += "\tbnez s18, " + l + "_v\n\tvld v24, s3, v13, " + t + ", v18\n\tjmp " + l + "_s\n" + l +
		     "_v:\n\tvmov v24, v6\n" + l + "_s:\n";
		if (r != Red::Set)
			s += "\tvld v25, s1, v23, " + t + ", v18\n";
		switch (r) {
		case Red::Set:
			s += "\tvmov v25, v24\n";
			break;
		case Red::Add:
		case Red::Mean:
			s += "\tvfadd v25, v25, v24\n";
			break;
		case Red::Mul:
			s += "\tvfmul v25, v25, v24\n";
			break;
		case Red::Max:
		case Red::Min:
			/* a NaN on either side wins, as CPU torch's */
			s += std::string("\t") + (r == Red::Max ? "vfmax" : "vfmin") + " v26, v25, v24\n"
			     "\tvfcmp v27, v24, v24, ne\n\tvsel v26, v24, v26, v27\n"
			     "\tvfcmp v27, v25, v25, ne\n\tvsel v25, v25, v26, v27\n";
			break;
		}
		s += "\tvst v25, s1, v23, " + t + ", v18\n";
		if (r == Red::Mean)
			s += "\tvld v26, s27, v23, f32, v18\n\tvsplati v27, 1.0\n\tvfadd v26, v26, v27\n"
			     "\tvst v26, s27, v23, f32, v18\t# count\n";
	}
	return s + "\tviadd v12, v12, v20\n\tviadd v13, v13, v21\n\taddi s26, s26, 1\n\tjmp " + l + "\n" + l +
	       "_end:\n";
}

/*
 * sset / sadd / smul / smax / smin / smean: s1 = self (updated in place),
 * s2 = index (int64), s3 = src or the value (binary32 bits or the
 * integer), s4 = aux (int32: the flag word, then smean's float32 counts
 * at self's offsets), s5 = the outer element count, s6/s7 = the outer
 * shape, s8-s10 / s11-s13 / s14-s16 = the strides of self / index / src
 * over it (the last, dim's, in the low half of s10 / s13 / s16), and in
 * the high halves of s10 J, of s13 self.size(dim), of s16 the mode: 1
 * wrap negative indices, 2 include_self, 4 the value form.
 */
static std::string sloop(Red r, const std::string &t)
{
	std::string s = tvp_asm_coords5(5, 6) + tvp_asm_dot5(11, 8) + tvp_asm_dot5(12, 11) + tvp_asm_dot5(13, 14);

	s += "\tvmov v1, v12\n\tvmov v2, v13\n\tshr s23, s10, s30\t# J\n\tshr s24, s13, s30\t# size\n"
	     "\tshr s25, s16, s30\t# mode\n\tvsplat v20, s13\n\tvsplat v21, s16\n\tvsplat v22, s10\n"
	     "\tvsplat v8, s24\n\tvsplati v17, 0\n\tvsplat v6, s3\n\taddi s27, s4, 4\t# counts\n"
	     "\tli s31, 1\n\tand s17, s25, s31\n\tvsplat v7, s17\t# wrap\n"
	     "\tli s31, 4\n\tand s18, s25, s31\t# the value form\n"
	     "\tli s31, 1\n\tshr s19, s25, s31\n\tand s19, s19, s31\t# include_self\n";
	if (r != Red::Set)
		s += "\tbnez s19, self_in\n" + walk("ini", r, true, t) + "self_in:\n";
	s += walk("red", r, false, t);
	if (r == Red::Mean)
		s += "\tvsplat v5, s19\n\tvcvt v5, v5, i2f\n\tvsplati v27, 1.0\n\tvmov v23, v11\n\tli s26, 0\n"
		     "fin:\n\tbge s26, s24, fin_end\n\tvld v25, s1, v23, " + t + ", v29\n"
		     "\tvld v26, s27, v23, f32, v29\n\tvfadd v26, v26, v5\n\tvfmax v26, v26, v27\n"
		     "\tvfdiv v25, v25, v26\n\tvst v25, s1, v23, " + t + ", v29\n"
		     "\tviadd v23, v23, v22\n\taddi s26, s26, 1\n\tjmp fin\nfin_end:\n";
	return s + "\thalt\n";
}

static std::string family(const std::string &kind, const std::string &t)
{
	bool flt = t == "f32" || t == "bf16" || t == "f16";

	for (int r = 0; r <= (int)Red::Mean; r++)
		if (kind == red_kind[r]) {
			if (r == (int)Red::Set)
				return flt || t == "i32" || t == "i8" ? sloop(Red::Set, t) : "";
			return flt ? sloop((Red)r, t) : "";
		}
	return "";
}

[[maybe_unused]] static const bool registered = tvp::add_family(
	{ "sset", "sadd", "smul", "smax", "smin", "smean" }, family);

/* ---- launching ------------------------------------------------------------------ */

/* A walk's instructions: the budget (MAIA_TVP_DEFAULT_BUDGET) bounds J and self.size(dim). */
static constexpr int64_t max_walk = (int64_t)1 << 16;

/* What one scatter does: self (contiguous, updated) along d from index, src or value. */
struct Scatter {
	Red red = Red::Set;
	int64_t d = 0;
	at::Tensor index;		/* int64, self's rank, any strides (expanded ones too) */
	at::Tensor src;			/* undefined: the value form */
	uint64_t value = 0;		/* value_arg() */
	bool include_self = true;
	bool wrap = false;
};

/*
 * Whether s can run on self's device: the types, ranks <= 5, int32
 * offsets, CPU torch's shape rules (index within self on every dimension
 * but d, within src on all), walks within the budget.
 */
static bool scatter_ok(const at::Tensor &self, const Scatter &s)
{
	const at::Tensor &i = s.index;
	bool set = s.red == Red::Set;

	if (!i.defined() || !on_device(self) || !on_device(i, self) || i.scalar_type() != at::kLong || self.dim() < 1 ||
	    self.dim() > 5 || i.dim() != self.dim() || !int32_reach(self) || !int32_reach(i) ||
	    !(set ? elem_exact(self.scalar_type()) : tvp::elem(self.scalar_type())) ||
	    i.size(s.d) > max_walk || self.size(s.d) > max_walk)
		return false;
	if (s.src.defined() && (!on_device(s.src, self) || s.src.scalar_type() != self.scalar_type() ||
				s.src.dim() != self.dim() || !int32_reach(s.src)))
		return false;
	for (int64_t k = 0; k < self.dim(); k++)
		if ((k != s.d && i.size(k) > self.size(k)) || (s.src.defined() && i.size(k) > s.src.size(k)))
			return false;
	return true;
}

/*
 * Run s on acc (contiguous, on the device): 1 done, 0 the device failed
 * the kernel (logged), -1 a bad index (the flag read back).
 */
static int run_scatter(at::Tensor &acc, const Scatter &s, const char *op)
{
	std::vector<int64_t> shape, ast, ist, sst;
	const at::Tensor &i = s.index;

	for (int64_t k = 0; k <= acc.dim(); k++) {
		int64_t j = k == acc.dim() ? s.d : k;	/* d last */

		if (k == s.d)
			continue;
		shape.push_back(k == acc.dim() ? 1 : i.size(j));
		ast.push_back(acc.stride(j));
		ist.push_back(i.stride(j));
		sst.push_back(s.src.defined() ? s.src.stride(j) : 0);
	}
	int64_t n = 1;
	for (int64_t v : shape)
		n *= v;
	if (n == 0 || i.size(s.d) == 0)
		return 1;
	at::Tensor aux = at::zeros({ 1 + (s.red == Red::Mean ? acc.numel() : 0) }, acc.options().dtype(at::kInt));
	std::vector<uint64_t> a = { va_of(acc), va_of(i), s.src.defined() ? va_of(s.src) : s.value, va_of(aux),
				    (uint64_t)n };
	std::vector<uint64_t> sh = tvp_pack_shape5(shape), as = tvp_pack_strides5(ast), is = tvp_pack_strides5(ist),
			      ss = tvp_pack_strides5(sst);
	uint64_t mode = (s.wrap ? 1 : 0) | (s.include_self ? 2 : 0) | (s.src.defined() ? 0 : 4);

	as[2] |= (uint64_t)i.size(s.d) << 32;
	is[2] |= (uint64_t)acc.size(s.d) << 32;
	ss[2] |= mode << 32;
	for (const std::vector<uint64_t> *v : { &sh, &as, &is, &ss })
		a.insert(a.end(), v->begin(), v->end());
	std::string program = std::string(red_kind[(int)s.red]) + "." + elem_exact(acc.scalar_type());
	if (tvp::run(dev_of(acc), { { program, tvp::blocks(n), a } }, op) != 1)
		return 0;
	int32_t bad = 0;
	copy_from_device(dev_of(acc), &bad, va_of(aux), sizeof(bad));
	return bad ? -1 : 1;
}

/*
 * self with s applied, on the device, or ref() on CPU copies (counted as
 * op's fallback; ref raises CPU torch's error for bad operands).
 */
template <class F> static at::Tensor scatter_into_copy(const at::Tensor &self, const Scatter &s, const char *op,
						       F ref)
{
	bool failed = false;

	if (scatter_ok(self, s)) {
		at::Tensor acc = self.clone(at::MemoryFormat::Contiguous);
		int r = run_scatter(acc, s, op);

		if (r == 1) {
			count_device_op(op);
			return acc;
		}
		if (r < 0)
			cpu_error(op, ref);
		failed = true;
	}
	return on_cpu(op, failed, ref).to(self.device());
}

/*
 * out (self of an in-place op, or out=) = r; CPU torch's error when out
 * has overlapping elements (index_fill_ on the CPU writes through them).
 */
static at::Tensor &into(at::Tensor &out, const at::Tensor &r, bool overlap_ok = false)
{
	if (!out.is_same(r)) {
		if (out.sizes() != r.sizes())
			out.resize_(r.sizes());
		if (!overlap_ok)
			at::assert_no_internal_overlap(out);
		out.copy_(r);
	}
	return out;
}

/* ---- scatter, scatter_reduce ------------------------------------------------------- */

static Scatter make(const at::Tensor &self, int64_t dim, const at::Tensor &index, Red red)
{
	Scatter s;

	s.red = red;
	s.d = self.dim() ? c10::maybe_wrap_dim(dim, self.dim()) : 0;
	s.index = index;
	return s;
}

/* reduce= of scatter (add, multiply) and of scatter_reduce; false: CPU torch's error for the name */
static bool red_of(c10::string_view name, bool two, Red &r)
{
	static const std::pair<const char *, Red> one[] = { { "add", Red::Add }, { "multiply", Red::Mul } };
	static const std::pair<const char *, Red> both[] = {
		{ "sum", Red::Add }, { "prod", Red::Mul }, { "mean", Red::Mean }, { "amax", Red::Max }, { "amin", Red::Min },
	};

	for (const auto &p : two ? c10::ArrayRef<std::pair<const char *, Red>>(both)
				 : c10::ArrayRef<std::pair<const char *, Red>>(one))
		if (name == p.first) {
			r = p.second;
			return true;
		}
	return false;
}

static at::Tensor scatter_src(const at::Tensor &self, int64_t dim, const at::Tensor &index, const at::Tensor &src)
{
	Scatter s = make(self, dim, index, Red::Set);

	s.src = src;
	return scatter_into_copy(self, s, "scatter", [&] { return at::scatter(cpu(self), dim, cpu(index), cpu(src)); });
}

static at::Tensor scatter_value(const at::Tensor &self, int64_t dim, const at::Tensor &index, const at::Scalar &v)
{
	Scatter s = make(self, dim, index, Red::Set);

	if (!value_arg(v, self.scalar_type(), s.value))
		s.index = at::Tensor();	/* not for the device */
	return scatter_into_copy(self, s, "scatter", [&] { return at::scatter(cpu(self), dim, cpu(index), v); });
}

static at::Tensor scatter_reduce_src(const at::Tensor &self, int64_t dim, const at::Tensor &index,
				     const at::Tensor &src, c10::string_view reduce)
{
	Scatter s = make(self, dim, index, Red::Set);
	auto ref = [&] { return at::scatter(cpu(self), dim, cpu(index), cpu(src), reduce); };

	if (!red_of(reduce, false, s.red))
		return on_cpu("scatter.reduce", false, ref).to(self.device());
	s.src = src;
	return scatter_into_copy(self, s, "scatter", ref);
}

static at::Tensor scatter_reduce_value(const at::Tensor &self, int64_t dim, const at::Tensor &index,
				       const at::Scalar &v, c10::string_view reduce)
{
	Scatter s = make(self, dim, index, Red::Set);
	auto ref = [&] { return at::scatter(cpu(self), dim, cpu(index), v, reduce); };

	if (!red_of(reduce, false, s.red) || !value_arg(v, self.scalar_type(), s.value))
		return on_cpu("scatter.value_reduce", false, ref).to(self.device());
	return scatter_into_copy(self, s, "scatter", ref);
}

static at::Tensor scatter_reduce_two(const at::Tensor &self, int64_t dim, const at::Tensor &index,
				     const at::Tensor &src, c10::string_view reduce, bool include_self)
{
	Scatter s = make(self, dim, index, Red::Set);
	auto ref = [&] { return at::scatter_reduce(cpu(self), dim, cpu(index), cpu(src), reduce, include_self); };

	if (!red_of(reduce, true, s.red))
		return on_cpu("scatter_reduce.two", false, ref).to(self.device());
	s.src = src;
	s.include_self = include_self;
	return scatter_into_copy(self, s, "scatter_reduce", ref);
}

/* ---- index_copy, index_fill_ ------------------------------------------------------- */

/* index (rank <= 1) along d of a tensor of sizes, expanded over the other dimensions */
static at::Tensor expanded(const at::Tensor &index, int64_t d, at::IntArrayRef sizes)
{
	std::vector<int64_t> one(sizes.size(), 1);

	one[d] = index.numel();
	return index.reshape(one).expand(sizes);
}

static at::Tensor index_copy(const at::Tensor &self, int64_t dim, const at::Tensor &index, const at::Tensor &source)
{
	auto ref = [&] { return at::index_copy(cpu(self), dim, cpu(index), cpu(source)); };
	Scatter s = make(self, dim, index, Red::Set);
	bool shapes = self.dim() >= 1 && index.dim() <= 1 && source.dim() == self.dim();

	for (int64_t k = 0; shapes && k < self.dim(); k++)
		shapes = source.size(k) == (k == s.d ? index.numel() : self.size(k));
	if (!shapes)
		return on_cpu("index_copy", false, ref).to(self.device());
	s.index = expanded(index, s.d, source.sizes());
	s.src = source;
	return scatter_into_copy(self, s, "index_copy", ref);
}

static at::Tensor &index_copy_(at::Tensor &self, int64_t dim, const at::Tensor &index, const at::Tensor &source)
{
	return into(self, maia_torch::ops::index_copy(self, dim, index, source));
}

static at::Tensor &index_copy_out(const at::Tensor &self, int64_t dim, const at::Tensor &index,
				  const at::Tensor &source, at::Tensor &out)
{
	return into(out, maia_torch::ops::index_copy(self, dim, index, source));
}

static at::Tensor &index_fill_scalar_(at::Tensor &self, int64_t dim, const at::Tensor &index, const at::Scalar &v)
{
	auto ref = [&] { return cpu(self).index_fill_(dim, cpu(index), v); };
	Scatter s = make(self, dim, index, Red::Set);

	if (self.dim() < 1 || index.dim() > 1 || !value_arg(v, self.scalar_type(), s.value))
		return self.copy_(on_cpu("index_fill_", false, ref));
	std::vector<int64_t> sizes = self.sizes().vec();
	sizes[s.d] = index.numel();
	s.index = expanded(index, s.d, sizes);
	s.wrap = true;
	return into(self, scatter_into_copy(self, s, "index_fill_", ref), true);
}

static at::Tensor &index_fill_tensor_(at::Tensor &self, int64_t dim, const at::Tensor &index, const at::Tensor &v)
{
	if (v.dim() == 0 && (v.is_cpu() || on_device(v, self)))
		return index_fill_scalar_(self, dim, index, v.item());
	return self.copy_(on_cpu("index_fill_", false, [&] { return cpu(self).index_fill_(dim, cpu(index), cpu(v)); }));
}

TORCH_LIBRARY_IMPL(aten, PrivateUse1, m)
{
	m.impl("scatter.src", scatter_src);
	m.impl("scatter_.src", [](at::Tensor &self, int64_t dim, const at::Tensor &index, const at::Tensor &src)
	       -> at::Tensor & { return into(self, scatter_src(self, dim, index, src)); });
	m.impl("scatter.src_out", [](const at::Tensor &self, int64_t dim, const at::Tensor &index, const at::Tensor &src,
				     at::Tensor &out) -> at::Tensor & { return into(out, scatter_src(self, dim, index, src)); });
	m.impl("scatter.value", scatter_value);
	m.impl("scatter_.value", [](at::Tensor &self, int64_t dim, const at::Tensor &index, const at::Scalar &v)
	       -> at::Tensor & { return into(self, scatter_value(self, dim, index, v)); });
	m.impl("scatter.value_out", [](const at::Tensor &self, int64_t dim, const at::Tensor &index, const at::Scalar &v,
				       at::Tensor &out) -> at::Tensor & { return into(out, scatter_value(self, dim, index, v)); });
	m.impl("scatter.reduce", scatter_reduce_src);
	m.impl("scatter_.reduce", [](at::Tensor &self, int64_t dim, const at::Tensor &index, const at::Tensor &src,
				     c10::string_view reduce) -> at::Tensor & {
		return into(self, scatter_reduce_src(self, dim, index, src, reduce));
	});
	m.impl("scatter.reduce_out", [](const at::Tensor &self, int64_t dim, const at::Tensor &index,
					const at::Tensor &src, c10::string_view reduce, at::Tensor &out) -> at::Tensor & {
		return into(out, scatter_reduce_src(self, dim, index, src, reduce));
	});
	m.impl("scatter.value_reduce", scatter_reduce_value);
	m.impl("scatter_.value_reduce", [](at::Tensor &self, int64_t dim, const at::Tensor &index, const at::Scalar &v,
					   c10::string_view reduce) -> at::Tensor & {
		return into(self, scatter_reduce_value(self, dim, index, v, reduce));
	});
	m.impl("scatter.value_reduce_out", [](const at::Tensor &self, int64_t dim, const at::Tensor &index,
					      const at::Scalar &v, c10::string_view reduce, at::Tensor &out) -> at::Tensor & {
		return into(out, scatter_reduce_value(self, dim, index, v, reduce));
	});
	m.impl("scatter_reduce.two", scatter_reduce_two);
	m.impl("scatter_reduce_.two", [](at::Tensor &self, int64_t dim, const at::Tensor &index, const at::Tensor &src,
					 c10::string_view reduce, bool include_self) -> at::Tensor & {
		return into(self, scatter_reduce_two(self, dim, index, src, reduce, include_self));
	});
	m.impl("scatter_reduce.two_out", [](const at::Tensor &self, int64_t dim, const at::Tensor &index,
					    const at::Tensor &src, c10::string_view reduce, bool include_self,
					    at::Tensor &out) -> at::Tensor & {
		return into(out, scatter_reduce_two(self, dim, index, src, reduce, include_self));
	});
	m.impl("index_copy", index_copy);
	m.impl("index_copy_", index_copy_);
	m.impl("index_copy.out", index_copy_out);
	m.impl("index_fill_.int_Scalar", index_fill_scalar_);
	m.impl("index_fill_.int_Tensor", index_fill_tensor_);
}

} // namespace ops
} // namespace maia_torch
