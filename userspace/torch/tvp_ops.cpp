// SPDX-License-Identifier: MIT
/*
 * aten ops on the TVP kernel library (tvp_kernels.cpp): exp, log, sqrt,
 * rsqrt, reciprocal, neg, abs, the comparisons, where, clamp, the activations'
 * backward (threshold_backward for ReLU, gelu_backward, silu_backward),
 * what clip_grad_norm_ needs (linalg_vector_norm, _foreach_norm, mul_ by a
 * scalar tensor, _foreach_mul_) and AdamW's fused step (_fused_adamw_ and
 * the _foreach_add_ of its step counters). Float operands (float32,
 * bfloat16, float16) of one dtype on one device; broadcast or strided
 * operands are made contiguous on the device first. Anything else takes
 * the op's CPU implementation, counted like the boxed fallback, and so
 * does an op whose kernel the device ended with an error status (logged;
 * in strict mode that raises instead).
 */
#include <ATen/ExpandUtils.h>
#include <torch/library.h>

#include <cmath>
#include <functional>

#include "tensor_desc.h"
#include "tvp_kernels.h"

namespace maia_torch {

using tvp::Launch;

static at::Tensor cpu(const at::Tensor &t)
{
	return t.defined() ? t.to(at::kCPU) : t;
}

/*
 * Account for running op on the CPU: no kernel takes these operands, or
 * (failed) its kernel failed on the device. Raises in strict mode.
 */
static void to_cpu(const char *op, bool failed)
{
	std::string name = std::string("aten::") + op;

	TORCH_CHECK(!failed || !strict(), "maia strict mode: ", name,
		    ": its TVP kernel failed on the device and the op would run on the CPU");
	count_fallback(name);
}

/* Float tensors of one dtype on ref's device, non-empty, within a kernel's grid. */
static bool fits(std::initializer_list<at::Tensor> ts)
{
	const at::Tensor &ref = *ts.begin();

	for (const at::Tensor &t : ts)
		if (!on_device(t, ref) || t.scalar_type() != ref.scalar_type() ||
		    !tvp::elem(t.scalar_type()) || t.numel() > tvp::max_elements())
			return false;
	return true;
}

static std::string program(const char *kind, const at::Tensor &t)
{
	return std::string(kind) + "." + tvp::elem(t.scalar_type());
}

static int dev_of(const at::Tensor &t)
{
	return device_index(t.device());
}

/* ---- unary -------------------------------------------------------------------- */

/* kind(x) into out (contiguous, x's shape; may be x itself). false: the device failed it. */
static bool unary_into(const char *kind, const at::Tensor &x, const at::Tensor &out)
{
	at::Tensor xc = x.contiguous();
	int64_t n = x.numel();

	if (n == 0)
		return true;
	return tvp::run(dev_of(x), { { program(kind, x), tvp::blocks(n),
				      { va_of(xc), va_of(out), (uint64_t)n } } }, kind) == 1;
}

static at::Tensor unary(const char *kind, const at::Tensor &x, at::Tensor (*ref)(const at::Tensor &))
{
	bool failed = false;

	if (fits({ x })) {
		at::Tensor out = at::empty(x.sizes(), x.options());

		if (unary_into(kind, x, out)) {
			count_device_op(kind);
			return out;
		}
		failed = true;
	}
	to_cpu(kind, failed);
	return ref(cpu(x)).to(x.device());
}

static at::Tensor &unary_(const char *kind, at::Tensor &x, at::Tensor (*ref)(const at::Tensor &))
{
	if (fits({ x }) && x.is_contiguous()) {
		if (unary_into(kind, x, x)) {
			count_device_op(kind);
			return x;
		}
		to_cpu(kind, true);
		return x.copy_(ref(cpu(x)));
	}
	return x.copy_(unary(kind, x, ref));
}

/* The out= forms: the functional kernel, copied into out. */
static at::Tensor &into(at::Tensor &out, const at::Tensor &r)
{
	if (out.sizes() != r.sizes())
		out.resize_(r.sizes());
	out.copy_(r);
	return out;
}

#define UNARY(name)                                                                  \
	static at::Tensor name##_f(const at::Tensor &x)                               \
	{                                                                             \
		return unary(#name, x, [](const at::Tensor &c) { return at::name(c); }); \
	}                                                                             \
	static at::Tensor &name##_i(at::Tensor &x)                                    \
	{                                                                             \
		return unary_(#name, x, [](const at::Tensor &c) { return at::name(c); }); \
	}                                                                             \
	static at::Tensor &name##_o(const at::Tensor &x, at::Tensor &out)             \
	{                                                                             \
		return into(out, name##_f(x));                                        \
	}

UNARY(exp)
UNARY(log)
UNARY(sqrt)
UNARY(rsqrt)
UNARY(reciprocal)
UNARY(neg)
UNARY(abs)

/* ---- comparisons and where ------------------------------------------------------ */

static bool cpu_scalar(const at::Tensor &t)
{
	return t.defined() && t.is_cpu() && t.dim() == 0;
}

/* s in x's dtype, as the comparison sees it (a bfloat16 tensor compares with a bfloat16 s). */
static double in_dtype(const at::Scalar &s, at::ScalarType t)
{
	switch (t) {
	case at::kBFloat16: return (float)c10::BFloat16(s.toFloat());
	case at::kHalf: return (float)c10::Half(s.toFloat());
	default: return s.toFloat();
	}
}

static at::Tensor compare_scalar(const char *cond, const at::Tensor &x, const at::Scalar &s,
				 at::Tensor (*ref)(const at::Tensor &, const at::Scalar &))
{
	std::string op = std::string(cond) + ".Scalar";
	bool failed = false;

	if (fits({ x }) && !s.isComplex()) {
		at::Tensor xc = x.contiguous(), out = at::empty(x.sizes(), x.options().dtype(at::kBool));
		int64_t n = x.numel();

		if (n == 0 ||
		    tvp::run(dev_of(x), { { program(("cmps_" + std::string(cond)).c_str(), x), tvp::blocks(n),
					   { va_of(xc), va_of(out), (uint64_t)n,
					     tvp::f32_bits(in_dtype(s, x.scalar_type())) } } },
			     op.c_str()) == 1) {
			count_device_op(cond);
			return out;
		}
		failed = true;
	}
	to_cpu(op.c_str(), failed);
	return ref(cpu(x), s).to(x.device());
}

static at::Tensor compare(const char *cond, const at::Tensor &a, const at::Tensor &b,
			  at::Tensor (*ref)(const at::Tensor &, const at::Tensor &),
			  at::Tensor (*ref_s)(const at::Tensor &, const at::Scalar &))
{
	std::string op = std::string(cond) + ".Tensor";
	bool failed = false;

	/* A number on the right (x > 0 with the 0 wrapped): the scalar kernel. */
	if (on_device(a) && cpu_scalar(b) && !at::isComplexType(b.scalar_type()))
		return compare_scalar(cond, a, b.item(), ref_s);
	if (fits({ a, b })) {
		std::vector<int64_t> shape = at::infer_size(a.sizes(), b.sizes());
		at::Tensor ac = a.expand(shape).contiguous(), bc = b.expand(shape).contiguous();
		at::Tensor out = at::empty(shape, a.options().dtype(at::kBool));
		int64_t n = out.numel();

		if (n == 0 ||
		    tvp::run(dev_of(a), { { program(("cmp_" + std::string(cond)).c_str(), a), tvp::blocks(n),
					   { va_of(ac), va_of(bc), va_of(out), (uint64_t)n } } },
			     op.c_str()) == 1) {
			count_device_op(cond);
			return out;
		}
		failed = true;
	}
	to_cpu(op.c_str(), failed);
	return ref(cpu(a), cpu(b)).to(on_device(a) ? a.device() : b.device());
}

#define COMPARE(name)                                                                          \
	static at::Tensor name##_s(const at::Tensor &x, const at::Scalar &s)                    \
	{                                                                                       \
		return compare_scalar(#name, x, s,                                              \
				      [](const at::Tensor &c, const at::Scalar &v) { return at::name(c, v); }); \
	}                                                                                       \
	static at::Tensor name##_t(const at::Tensor &a, const at::Tensor &b)                    \
	{                                                                                       \
		return compare(#name, a, b,                                                     \
			       [](const at::Tensor &c, const at::Tensor &d) { return at::name(c, d); }, \
			       [](const at::Tensor &c, const at::Scalar &v) { return at::name(c, v); }); \
	}                                                                                       \
	static at::Tensor &name##_so(const at::Tensor &x, const at::Scalar &s, at::Tensor &out) \
	{                                                                                       \
		return into(out, name##_s(x, s));                                               \
	}                                                                                       \
	static at::Tensor &name##_to(const at::Tensor &a, const at::Tensor &b, at::Tensor &out) \
	{                                                                                       \
		return into(out, name##_t(a, b));                                               \
	}

COMPARE(eq)
COMPARE(ne)
COMPARE(lt)
COMPARE(le)
COMPARE(gt)
COMPARE(ge)

/*
 * A 0-dim operand of where beside a tensor of rank >= 1 (a number, or a
 * 0-dim tensor, which type promotion does not let decide the result's
 * dtype), as a device tensor of like's dtype.
 */
static at::Tensor materialize(const at::Tensor &t, const at::Tensor &like)
{
	if (t.dim() != 0 || like.dim() == 0 || at::isComplexType(t.scalar_type()) ||
	    !at::isFloatingType(like.scalar_type()))
		return t;
	if (cpu_scalar(t))
		return at::empty({}, like.options()).fill_(t.item());
	return on_device(t, like) ? t.to(like.scalar_type()) : t;
}

/* x != x: the NaNs (isinf is a composite of abs and eq). */
static at::Tensor isnan_k(const at::Tensor &x)
{
	if (fits({ x }))
		return ne_t(x, x);
	to_cpu("isnan", false);
	return at::isnan(cpu(x)).to(x.device());
}

static at::Tensor where(const at::Tensor &cond, const at::Tensor &self, const at::Tensor &other)
{
	bool failed = false;
	const at::Tensor &ref = on_device(self) ? self : other;

	if (on_device(cond) && cond.scalar_type() == at::kBool && on_device(ref, cond)) {
		at::Tensor a = materialize(self, ref), b = materialize(other, ref);

		if (fits({ a, b }) && on_device(a, cond)) {
			std::vector<int64_t> shape =
				at::infer_size(at::infer_size(cond.sizes(), a.sizes()), b.sizes());
			at::Tensor cc = cond.expand(shape).contiguous(), ac = a.expand(shape).contiguous(),
				   bc = b.expand(shape).contiguous(), out = at::empty(shape, a.options());
			int64_t n = out.numel();

			if (n == 0 ||
			    tvp::run(dev_of(a), { { program("where", a), tvp::blocks(n),
						   { va_of(cc), va_of(ac), va_of(bc), va_of(out), (uint64_t)n } } },
				     "where.self") == 1) {
				count_device_op("where");
				return out;
			}
			failed = true;
		}
	}
	to_cpu("where.self", failed);
	return at::where(cpu(cond), cpu(self), cpu(other)).to(on_device(cond) ? cond.device() : ref.device());
}

static at::Tensor &where_out(const at::Tensor &cond, const at::Tensor &self, const at::Tensor &other,
			     at::Tensor &out)
{
	return into(out, maia_torch::where(cond, self, other));
}

/* ---- activations' backward ----------------------------------------------------------- */

/* kind(grad, x[, scalar]) element-wise, same shape; undefined when the device cannot or failed (*failed). */
static at::Tensor grad_kernel(const char *kind, const at::Tensor &g, const at::Tensor &x,
			      std::vector<uint64_t> extra, bool *failed)
{
	*failed = false;
	if (!fits({ g, x }) || g.sizes() != x.sizes())
		return at::Tensor();
	at::Tensor gc = g.contiguous(), xc = x.contiguous(), out = at::empty(x.sizes(), x.options());
	int64_t n = x.numel();
	std::vector<uint64_t> args = { va_of(gc), va_of(xc), va_of(out), (uint64_t)n };

	args.insert(args.end(), extra.begin(), extra.end());
	if (n == 0 || tvp::run(dev_of(x), { { program(kind, x), tvp::blocks(n), args } }, kind) == 1) {
		count_device_op(kind);
		return out;
	}
	*failed = true;
	return at::Tensor();
}

static at::Tensor threshold_backward(const at::Tensor &g, const at::Tensor &x, const at::Scalar &thr)
{
	bool failed;
	at::Tensor r = grad_kernel("threshold_backward", g, x, { tvp::f32_bits(thr.toDouble()) }, &failed);

	if (r.defined())
		return r;
	to_cpu("threshold_backward", failed);
	return at::threshold_backward(cpu(g), cpu(x), thr).to(x.device());
}

static at::Tensor gelu_backward(const at::Tensor &g, const at::Tensor &x, c10::string_view approximate)
{
	bool failed = false;
	at::Tensor r;

	if (approximate == "none" || approximate == "tanh")
		r = grad_kernel(approximate == "none" ? "gelu_backward" : "gelu_tanh_backward", g, x, {},
				&failed);
	if (r.defined())
		return r;
	to_cpu("gelu_backward", failed);
	return at::gelu_backward(cpu(g), cpu(x), approximate).to(x.device());
}

static at::Tensor &gelu_backward_out(const at::Tensor &g, const at::Tensor &x,
				     c10::string_view approximate, at::Tensor &out)
{
	return into(out, maia_torch::gelu_backward(g, x, approximate));
}

static at::Tensor silu_backward(const at::Tensor &g, const at::Tensor &x)
{
	bool failed;
	at::Tensor r = grad_kernel("silu_backward", g, x, {}, &failed);

	if (r.defined())
		return r;
	to_cpu("silu_backward", failed);
	return at::silu_backward(cpu(g), cpu(x)).to(x.device());
}

static at::Tensor &silu_backward_out(const at::Tensor &g, const at::Tensor &x, at::Tensor &out)
{
	return into(out, maia_torch::silu_backward(g, x));
}

/* ---- clamp, scalar arithmetic -------------------------------------------------------- */

static at::Tensor clamp(const at::Tensor &x, const c10::optional<at::Scalar> &lo,
			const c10::optional<at::Scalar> &hi)
{
	bool failed = false;
	double l = lo ? lo->toDouble() : -INFINITY, h = hi ? hi->toDouble() : INFINITY;

	if (fits({ x }) && (lo || hi) && !std::isnan(l) && !std::isnan(h)) {
		at::Tensor xc = x.contiguous(), out = at::empty(x.sizes(), x.options());
		int64_t n = x.numel();

		if (n == 0 ||
		    tvp::run(dev_of(x), { { program("clamp", x), tvp::blocks(n),
					   { va_of(xc), va_of(out), (uint64_t)n,
					     tvp::f32_bits(l), tvp::f32_bits(h) } } }, "clamp") == 1) {
			count_device_op("clamp");
			return out;
		}
		failed = true;
	}
	to_cpu("clamp", failed);
	return at::clamp(cpu(x), lo, hi).to(x.device());
}

static at::Tensor &clamp_out(const at::Tensor &x, const c10::optional<at::Scalar> &lo,
			     const c10::optional<at::Scalar> &hi, at::Tensor &out)
{
	return into(out, maia_torch::clamp(x, lo, hi));
}

/*
 * The launch of x <- x op s for each x of xs (in place, contiguous): muls /
 * adds with s a number (sbits), mult with s the address of an f32 scalar.
 */
static Launch inplace_launch(const char *kind, const at::Tensor &x, uint64_t s)
{
	return { program(kind, x), tvp::blocks(x.numel()),
		 { va_of(x), va_of(x), (uint64_t)x.numel(), s } };
}

/* xs that kernels can update in place: float, contiguous, on one device. */
static bool inplace_ok(at::TensorList xs)
{
	for (const at::Tensor &x : xs)
		if (!fits({ x }) || !on_device(x, xs[0]) || !x.is_contiguous() || x.numel() == 0)
			return false;
	return !xs.empty();
}

/*
 * Run launches[i] updating xs[i] in place, for op; the tensors from the
 * first one the device failed on are updated by cpu_update (on a CPU copy,
 * copied back). Counted as the device op or the fallback.
 */
static void inplace_run(const char *op, at::TensorList xs, const std::vector<Launch> &launches,
			const std::function<void(at::Tensor &)> &cpu_update)
{
	size_t done = tvp::run(dev_of(xs[0]), launches, op);

	if (done == launches.size()) {
		count_device_op(op);
		return;
	}
	to_cpu(op, true);
	for (size_t i = done; i < xs.size(); i++) {
		at::Tensor c = cpu(xs[i]);

		cpu_update(c);
		at::Tensor x = xs[i];
		x.copy_(c);
	}
}

/* x *= s, s a 0-dim device float32 tensor (clip_grad_norm_'s coefficient) or a number. */
static at::Tensor &mul_tensor_(at::Tensor &x, const at::Tensor &s)
{
	if (inplace_ok({ x }) && cpu_scalar(s) && !at::isComplexType(s.scalar_type())) {
		inplace_run("mul_", { x }, { inplace_launch("muls", x, tvp::f32_bits(s.item<double>())) },
			    [&](at::Tensor &c) { c.mul_(s); });
		return x;
	}
	if (inplace_ok({ x }) && on_device(s, x) && s.dim() == 0 && s.scalar_type() == at::kFloat) {
		inplace_run("mul_", { x }, { inplace_launch("mult", x, va_of(s)) },
			    [&](at::Tensor &c) { c.mul_(cpu(s)); });
		return x;
	}
	/* A tensor of x's shape or broadcast to it: the engine's mul (kernels.cpp), copied in. */
	if (on_device(x) && on_device(s, x) && s.dim() > 0) {
		at::Tensor r = at::mul(x, s);

		if (r.sizes() == x.sizes() && r.scalar_type() == x.scalar_type())
			return x.copy_(r);
	}
	to_cpu("mul_.Tensor", false);
	at::Tensor r = at::mul(cpu(x), cpu(s));
	return x.copy_(r);
}

static at::Tensor &mul_scalar_(at::Tensor &x, const at::Scalar &s)
{
	if (inplace_ok({ x }) && !s.isComplex()) {
		inplace_run("mul_", { x }, { inplace_launch("muls", x, tvp::f32_bits(s.toDouble())) },
			    [&](at::Tensor &c) { c.mul_(s); });
		return x;
	}
	to_cpu("mul_.Scalar", false);
	return x.copy_(at::mul(cpu(x), s));
}

static at::Tensor &add_scalar_(at::Tensor &x, const at::Scalar &s, const at::Scalar &alpha)
{
	if (inplace_ok({ x }) && !s.isComplex() && !alpha.isComplex()) {
		double v = s.toDouble() * alpha.toDouble();

		inplace_run("add_", { x }, { inplace_launch("adds", x, tvp::f32_bits(v)) },
			    [&](at::Tensor &c) { c.add_(s, alpha); });
		return x;
	}
	to_cpu("add_.Scalar", false);
	return x.copy_(at::add(cpu(x), s, alpha));
}

/*
 * self <- kind(self, others..., scalars) in place, the others broadcast to
 * self's shape (AdamW's foreach path decomposes into these per tensor),
 * when usable (the scalars are real); cpu_update does the same on a CPU
 * copy when the kernel cannot or failed.
 */
static at::Tensor &inplace_with(const char *kind, const char *op, at::Tensor &self,
				const std::vector<at::Tensor> &others, const std::vector<uint64_t> &scalars,
				bool usable, const std::function<void(at::Tensor &)> &cpu_update)
{
	bool ok = usable && inplace_ok({ self }), failed = false;

	for (const at::Tensor &o : others)
		ok = ok && fits({ self, o }) && at::is_expandable_to(o.sizes(), self.sizes());
	if (ok) {
		std::vector<at::Tensor> keep;
		std::vector<uint64_t> args = { va_of(self) };

		for (const at::Tensor &o : others) {
			keep.push_back(o.expand(self.sizes()).contiguous());
			args.push_back(va_of(keep.back()));
		}
		args.push_back(va_of(self));
		args.push_back((uint64_t)self.numel());
		args.insert(args.end(), scalars.begin(), scalars.end());
		if (tvp::run(dev_of(self), { { program(kind, self), tvp::blocks(self.numel()), args } }, op) == 1) {
			count_device_op(op);
			return self;
		}
		failed = true;
	}
	to_cpu(op, failed);
	at::Tensor c = cpu(self);
	cpu_update(c);
	return self.copy_(c);
}

static double real(const at::Scalar &s)
{
	return s.isComplex() ? 0.0 : s.toDouble();
}

static at::Tensor &div_scalar_(at::Tensor &x, const at::Scalar &s)
{
	return inplace_with("divs", "div_.Scalar", x, {}, { tvp::f32_bits(real(s)) }, !s.isComplex(),
			    [&](at::Tensor &c) { c.div_(s); });
}

static at::Tensor &lerp_scalar_(at::Tensor &x, const at::Tensor &end, const at::Scalar &weight)
{
	double w = real(weight);
	bool low = std::abs(w) < 0.5;

	return inplace_with("lerps", "lerp_.Scalar", x, { end }, { tvp::f32_bits(low ? w : w - 1), low ? 0u : 1u },
			    !weight.isComplex(), [&](at::Tensor &c) { c.lerp_(cpu(end), weight); });
}

static at::Tensor &addcmul_(at::Tensor &x, const at::Tensor &t1, const at::Tensor &t2,
			    const at::Scalar &value)
{
	return inplace_with("addcmul", "addcmul_", x, { t1, t2 }, { tvp::f32_bits(real(value)) },
			    !value.isComplex(), [&](at::Tensor &c) { c.addcmul_(cpu(t1), cpu(t2), value); });
}

static at::Tensor &addcdiv_(at::Tensor &x, const at::Tensor &t1, const at::Tensor &t2,
			    const at::Scalar &value)
{
	return inplace_with("addcdiv", "addcdiv_", x, { t1, t2 }, { tvp::f32_bits(real(value)) },
			    !value.isComplex(), [&](at::Tensor &c) { c.addcdiv_(cpu(t1), cpu(t2), value); });
}

/* ---- foreach ops: one job for the whole list -------------------------------------------- */

static void foreach_add_scalar_(at::TensorList xs, const at::Scalar &s)
{
	if (xs.empty())
		return;
	if (inplace_ok(xs) && !s.isComplex()) {
		std::vector<Launch> ls;

		for (const at::Tensor &x : xs)
			ls.push_back(inplace_launch("adds", x, tvp::f32_bits(s.toDouble())));
		inplace_run("_foreach_add_", xs, ls, [&](at::Tensor &c) { c.add_(s); });
		return;
	}
	to_cpu("_foreach_add_.Scalar", false);
	for (const at::Tensor &x : xs) {
		at::Tensor t = x;
		t.copy_(at::add(cpu(x), s));
	}
}

static void foreach_mul_tensor_(at::TensorList xs, const at::Tensor &s)
{
	if (xs.empty())
		return;
	at::Tensor sd = s;
	if (inplace_ok(xs) && s.dim() == 0 && !at::isComplexType(s.scalar_type()) &&
	    (cpu_scalar(s) || on_device(s, xs[0]))) {
		std::vector<Launch> ls;

		if (on_device(s) && s.scalar_type() != at::kFloat)
			sd = s.to(at::kFloat);
		for (const at::Tensor &x : xs)
			ls.push_back(cpu_scalar(s) ? inplace_launch("muls", x, tvp::f32_bits(s.item<double>())) :
						     inplace_launch("mult", x, va_of(sd)));
		inplace_run("_foreach_mul_", xs, ls, [&](at::Tensor &c) { c.mul_(cpu(s)); });
		return;
	}
	to_cpu("_foreach_mul_.Tensor", false);
	for (const at::Tensor &x : xs) {
		at::Tensor t = x;
		t.copy_(at::mul(cpu(x), cpu(s)));
	}
}

/* ---- norms ------------------------------------------------------------------------------ */

/* The 2-norm of each x (float, contiguous copies) as float32 scalars; empty when the device failed. */
static std::vector<at::Tensor> norms2(at::TensorList xs, const char *op)
{
	std::vector<at::Tensor> outs, keep;
	std::vector<Launch> ls;

	for (const at::Tensor &x : xs) {
		at::Tensor xc = x.contiguous(), out = at::empty({}, x.options().dtype(at::kFloat));

		if (x.numel() == 0) {
			out.zero_();
		} else {
			ls.push_back({ program("norm2", x), 1, { va_of(xc), va_of(out), (uint64_t)x.numel() } });
			keep.push_back(xc);
		}
		outs.push_back(out);
	}
	if (!ls.empty() && tvp::run(dev_of(xs[0]), ls, op) != ls.size())
		return {};
	return outs;
}

static bool norm_ok(at::TensorList xs, const at::Scalar &ord, c10::optional<at::ScalarType> dtype)
{
	for (const at::Tensor &x : xs)
		if (!fits({ x }) || !on_device(x, xs[0]) || (dtype && *dtype != x.scalar_type()))
			return false;
	return !xs.empty() && !ord.isComplex() && ord.toDouble() == 2.0;
}

static at::Tensor vector_norm(const at::Tensor &x, const at::Scalar &ord, at::OptionalIntArrayRef dim,
			      bool keepdim, c10::optional<at::ScalarType> dtype)
{
	bool all = !dim || dim->empty() || (int64_t)dim->size() == x.dim();
	bool failed = false;

	if (all && dim) {	/* every dimension, each once */
		std::vector<bool> seen(std::max<int64_t>(x.dim(), 1));
		for (int64_t d : *dim) {
			int64_t w = c10::maybe_wrap_dim(d, x.dim());
			all = all && !seen[w];
			seen[w] = true;
		}
	}
	if (all && norm_ok({ x }, ord, dtype)) {
		std::vector<at::Tensor> r = norms2({ x }, "linalg_vector_norm");

		if (!r.empty()) {
			count_device_op("linalg_vector_norm");
			at::Tensor out = r[0].to(x.scalar_type());
			if (keepdim)
				out = out.reshape(std::vector<int64_t>(x.dim(), 1));
			return out;
		}
		failed = true;
	}
	to_cpu("linalg_vector_norm", failed);
	return at::linalg_vector_norm(cpu(x), ord, dim, keepdim, dtype).to(x.device());
}

static at::Tensor &vector_norm_out(const at::Tensor &x, const at::Scalar &ord, at::OptionalIntArrayRef dim,
				   bool keepdim, c10::optional<at::ScalarType> dtype, at::Tensor &out)
{
	return into(out, vector_norm(x, ord, dim, keepdim, dtype));
}

static std::vector<at::Tensor> foreach_norm(at::TensorList xs, const at::Scalar &ord,
					    c10::optional<at::ScalarType> dtype)
{
	bool failed = false;

	if (norm_ok(xs, ord, dtype)) {
		std::vector<at::Tensor> r = norms2(xs, "_foreach_norm");

		if (!r.empty()) {
			count_device_op("_foreach_norm");
			for (size_t i = 0; i < r.size(); i++)
				if (xs[i].scalar_type() != at::kFloat)
					r[i] = r[i].to(xs[i].scalar_type());
			return r;
		}
		failed = true;
	}
	to_cpu("_foreach_norm.Scalar", failed);
	std::vector<at::Tensor> host, out;
	for (const at::Tensor &x : xs)
		host.push_back(cpu(x));
	for (const at::Tensor &r : at::_foreach_norm(host, ord, dtype))
		out.push_back(r.to(xs[0].device()));
	return out;
}

/* ---- AdamW ---------------------------------------------------------------------------- */

static void fused_adamw_(at::TensorList params, at::TensorList grads, at::TensorList exp_avgs,
			 at::TensorList exp_avg_sqs, at::TensorList max_exp_avg_sqs,
			 at::TensorList steps, double lr, double beta1, double beta2,
			 double weight_decay, double eps, bool amsgrad, bool maximize,
			 const c10::optional<at::Tensor> &grad_scale,
			 const c10::optional<at::Tensor> &found_inf)
{
	size_t n = params.size();
	bool ok = n && grads.size() == n && exp_avgs.size() == n && exp_avg_sqs.size() == n &&
		  steps.size() == n && (!amsgrad || max_exp_avg_sqs.size() == n) &&
		  !(grad_scale && grad_scale->defined()) && !(found_inf && found_inf->defined()) &&
		  beta1 > 0 && beta2 > 0;

	for (size_t i = 0; ok && i < n; i++) {
		const at::Tensor &p = params[i];

		ok = p.scalar_type() == at::kFloat && inplace_ok({ p }) && on_device(p, params[0]) &&
		     inplace_ok({ p, grads[i], exp_avgs[i], exp_avg_sqs[i] }) &&
		     grads[i].sizes() == p.sizes() && exp_avgs[i].sizes() == p.sizes() &&
		     exp_avg_sqs[i].sizes() == p.sizes() && on_device(steps[i], p) &&
		     steps[i].scalar_type() == at::kFloat && steps[i].numel() == 1;
		if (ok && amsgrad)
			ok = inplace_ok({ p, max_exp_avg_sqs[i] }) && max_exp_avg_sqs[i].sizes() == p.sizes();
	}
	if (ok) {
		std::vector<Launch> ls;
		std::vector<at::Tensor> all;

		for (size_t i = 0; i < n; i++) {
			const at::Tensor &p = params[i];

			all.push_back(p);
			ls.push_back({ "adamw.f32", tvp::blocks(p.numel()),
				       { va_of(p), va_of(grads[i]), va_of(exp_avgs[i]), va_of(exp_avg_sqs[i]),
					 amsgrad ? va_of(max_exp_avg_sqs[i]) : 0, (uint64_t)p.numel(),
					 va_of(steps[i]), tvp::f32_bits(lr), tvp::f32_bits(1 - beta1),
					 tvp::f32_bits(beta2), tvp::f32_bits(1 - beta2),
					 tvp::f32_bits(1 - lr * weight_decay), tvp::f32_bits(eps),
					 tvp::f32_bits(maximize ? -1.0 : 1.0), tvp::f32_bits(std::log(beta1)),
					 tvp::f32_bits(std::log(beta2)) } });
		}
		size_t done = tvp::run(dev_of(params[0]), ls, "_fused_adamw_");
		if (done == n) {
			count_device_op("_fused_adamw_");
			return;
		}
		to_cpu("_fused_adamw_", true);
		params = params.slice(done);
		grads = grads.slice(done);
		exp_avgs = exp_avgs.slice(done);
		exp_avg_sqs = exp_avg_sqs.slice(done);
		steps = steps.slice(done);
		if (amsgrad)
			max_exp_avg_sqs = max_exp_avg_sqs.slice(done);
	} else {
		to_cpu("_fused_adamw_", false);
	}
	/* CPU torch's fused AdamW on copies; the updated state copied back. */
	auto host = [](at::TensorList ts) {
		std::vector<at::Tensor> h;
		for (const at::Tensor &t : ts)
			h.push_back(cpu(t));
		return h;
	};
	std::vector<at::Tensor> hp = host(params), hg = host(grads), hm = host(exp_avgs),
				hv = host(exp_avg_sqs), hmax = host(max_exp_avg_sqs), hs = host(steps);
	c10::optional<at::Tensor> gs, fi;
	if (grad_scale && grad_scale->defined())
		gs = cpu(*grad_scale);
	if (found_inf && found_inf->defined())
		fi = cpu(*found_inf);
	at::_fused_adamw_(hp, hg, hm, hv, hmax, hs, lr, beta1, beta2, weight_decay, eps, amsgrad, maximize,
			  gs, fi);
	auto back = [](at::TensorList dst, const std::vector<at::Tensor> &src) {
		for (size_t i = 0; i < src.size(); i++) {
			at::Tensor d = dst[i];
			d.copy_(src[i]);
		}
	};
	back(params, hp);
	back(grads, hg);
	back(exp_avgs, hm);
	back(exp_avg_sqs, hv);
	back(max_exp_avg_sqs, hmax);
}

TORCH_LIBRARY_IMPL(aten, PrivateUse1, m)
{
#define REG_UNARY(name)                          \
	m.impl(#name, name##_f);                 \
	m.impl(#name "_", name##_i);             \
	m.impl(#name ".out", name##_o);
	REG_UNARY(exp)
	REG_UNARY(log)
	REG_UNARY(sqrt)
	REG_UNARY(rsqrt)
	REG_UNARY(reciprocal)
	REG_UNARY(neg)
	REG_UNARY(abs)
#define REG_COMPARE(name)                        \
	m.impl(#name ".Scalar", name##_s);       \
	m.impl(#name ".Tensor", name##_t);       \
	m.impl(#name ".Scalar_out", name##_so);  \
	m.impl(#name ".Tensor_out", name##_to);
	REG_COMPARE(eq)
	REG_COMPARE(ne)
	REG_COMPARE(lt)
	REG_COMPARE(le)
	REG_COMPARE(gt)
	REG_COMPARE(ge)
	m.impl("isnan", isnan_k);
	m.impl("where.self", where);
	m.impl("where.self_out", where_out);
	m.impl("threshold_backward", threshold_backward);
	m.impl("gelu_backward", gelu_backward);
	m.impl("gelu_backward.grad_input", gelu_backward_out);
	m.impl("silu_backward", silu_backward);
	m.impl("silu_backward.grad_input", silu_backward_out);
	m.impl("clamp", clamp);
	m.impl("clamp.out", clamp_out);
	m.impl("mul_.Tensor", mul_tensor_);
	m.impl("mul_.Scalar", mul_scalar_);
	m.impl("add_.Scalar", add_scalar_);
	m.impl("div_.Scalar", div_scalar_);
	m.impl("lerp_.Scalar", lerp_scalar_);
	m.impl("addcmul_", addcmul_);
	m.impl("addcdiv_", addcdiv_);
	m.impl("linalg_vector_norm", vector_norm);
	m.impl("linalg_vector_norm.out", vector_norm_out);
	m.impl("_foreach_norm.Scalar", foreach_norm);
	m.impl("_foreach_mul_.Tensor", foreach_mul_tensor_);
	m.impl("_foreach_add_.Scalar", foreach_add_scalar_);
	m.impl("_fused_adamw_", fused_adamw_);
}

TORCH_LIBRARY_FRAGMENT(maia, m)
{
	m.def("tvp_inject_fault(str kernel) -> ()",
	      [](c10::string_view kind) { tvp::inject_fault(std::string(kind)); });
	m.def("tvp_kernels() -> str[]", [] { return tvp::kinds(); });
	m.def("tvp_source(str program) -> str",
	      [](c10::string_view program) { return tvp::source(std::string(program)); });
}

} // namespace maia_torch
