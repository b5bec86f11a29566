// SPDX-License-Identifier: MIT
/*
 * aten ops on the tensor engine: mm, addmm, bmm (and so linear and matmul,
 * which torch decomposes into them), add/sub/mul (tensor or scalar
 * operand, broadcasting by stride 0), relu/gelu/silu, softmax and
 * log-softmax over the last dimension, layer norm, sum and mean. An op
 * whose operands the device cannot take (dtype, rank > 4, mixed devices)
 * goes to the CPU through cpu_op(), counted like the boxed fallback.
 */
#include <ATen/ExpandUtils.h>
#include <ATen/MemoryOverlap.h>
#include <torch/library.h>

#include <cmath>

#include "tensor_desc.h"

namespace maia_torch {

/* Run f on CPU copies and bring the result back: a counted fallback. */
template <class F> static at::Tensor cpu_op(const char *name, const at::Device &dev, F f)
{
	count_fallback(std::string("aten::") + name);
	return f().to(dev);
}

static at::Tensor cpu(const at::Tensor &t)
{
	return t.defined() ? t.to(at::kCPU) : t;
}

static bool same_float(std::initializer_list<at::Tensor> ts)
{
	at::ScalarType t = ts.begin()->scalar_type();

	for (const at::Tensor &x : ts)
		if (!on_device(x, *ts.begin()) || x.scalar_type() != t || !engine_float(t))
			return false;
	return true;
}

/* ---- GEMMs -------------------------------------------------------------------- */

/* out = alpha * a @ b + beta * out (rank 2, or rank 3 batched), in job. */
static void gemm(Job &job, const at::Tensor &a, const at::Tensor &b, const at::Tensor &out,
		 float alpha, float beta)
{
	struct maia_tensor_desc da = desc(a), db = desc(b), dc = desc(out);
	struct maia_gemm_args g = {};

	g.a = &da;
	g.b = &db;
	g.c = &dc;
	g.alpha = alpha;
	g.beta = beta;
	job.add(maia_cmd_gemm_ex(job.cmdbuf(), &g), "maia_cmd_gemm_ex");
}

static bool gemm_ok(const at::Tensor &a, const at::Tensor &b, int64_t rank)
{
	return same_float({ a, b }) && a.dim() == rank && b.dim() == rank &&
	       a.size(rank - 1) == b.size(rank - 2) && describable(a) && describable(b);
}

static at::Tensor mm(const at::Tensor &a, const at::Tensor &b)
{
	if (!gemm_ok(a, b, 2))
		return cpu_op("mm", a.device(), [&] { return at::mm(cpu(a), cpu(b)); });
	at::Tensor out = at::empty({ a.size(0), b.size(1) }, a.options());
	Job job(a);

	gemm(job, a, b, out, 1.0f, 0.0f);
	job.run();
	count_device_op("mm");
	return out;
}

static at::Tensor bmm(const at::Tensor &a, const at::Tensor &b)
{
	if (!gemm_ok(a, b, 3) || a.size(0) != b.size(0))
		return cpu_op("bmm", a.device(), [&] { return at::bmm(cpu(a), cpu(b)); });
	at::Tensor out = at::empty({ a.size(0), a.size(1), b.size(2) }, a.options());
	Job job(a);

	gemm(job, a, b, out, 1.0f, 0.0f);
	job.run();
	count_device_op("bmm");
	return out;
}

static bool addmm_ok(const at::Tensor &self, const at::Tensor &a, const at::Tensor &b, float alpha)
{
	return gemm_ok(a, b, 2) && on_device(self, a) && engine_float(self.scalar_type()) &&
	       self.dim() <= 2 && alpha != 0.0f;
}

/* out = beta * self + alpha * a @ b in job (addmm_ok; out [a.size(0), b.size(1)], a's type). */
static void addmm_into(Job &job, const at::Tensor &self, const at::Tensor &a, const at::Tensor &b,
		       float beta, float alpha, const at::Tensor &out)
{
	if (beta == 1.0f && self.dim() == 1 && self.size(0) == b.size(1) &&
	    self.scalar_type() == a.scalar_type() && describable(self)) {
		/* nn.Linear's bias: the GEMM's epilogue adds it, one command. */
		struct maia_tensor_desc da = desc(a), db = desc(b), dc = desc(out), dbias = desc(self);
		struct maia_gemm_args g = {};

		g.a = &da;
		g.b = &db;
		g.c = &dc;
		g.bias = &dbias;
		g.alpha = alpha;
		job.add(maia_cmd_gemm_ex(job.cmdbuf(), &g), "maia_cmd_gemm_ex");
	} else {
		if (beta != 0.0f) {
			struct maia_tensor_desc x = desc(self.expand(out.sizes())), o = desc(out);

			job.add(maia_cmd_tensor_copy(job.cmdbuf(), &x, &o), "maia_cmd_tensor_copy");
		}
		gemm(job, a, b, out, alpha, beta);
	}
}

static at::Tensor addmm(const at::Tensor &self, const at::Tensor &a, const at::Tensor &b,
			const at::Scalar &beta_s, const at::Scalar &alpha_s)
{
	float beta = beta_s.toFloat(), alpha = alpha_s.toFloat();

	if (!addmm_ok(self, a, b, alpha))
		return cpu_op("addmm", a.device(), [&] {
			return at::addmm(cpu(self), cpu(a), cpu(b), beta_s, alpha_s);
		});
	Job job(a);
	at::Tensor out = empty_on(job.dev(), { a.size(0), b.size(1) }, a.scalar_type());

	addmm_into(job, self, a, b, beta, alpha, out);
	job.run();
	count_device_op("addmm");
	return out;
}

/*
 * act(beta * self + alpha * a @ b), act GELU (erf, as CPU torch) or ReLU:
 * the fused linear + activation of torch's transformer fast path, one GEMM
 * with the activation as its epilogue.
 */
static at::Tensor addmm_activation(const at::Tensor &self, const at::Tensor &a, const at::Tensor &b,
				   const at::Scalar &beta_s, const at::Scalar &alpha_s, bool use_gelu)
{
	float beta = beta_s.toFloat(), alpha = alpha_s.toFloat();

	if (!gemm_ok(a, b, 2) || !on_device(self, a) || self.scalar_type() != a.scalar_type() ||
	    self.dim() > 2 || alpha == 0.0f || !describable(self))
		return cpu_op("_addmm_activation", a.device(), [&] {
			return at::_addmm_activation(cpu(self), cpu(a), cpu(b), beta_s, alpha_s, use_gelu);
		});
	at::Tensor out = at::empty({ a.size(0), b.size(1) }, a.options());
	struct maia_tensor_desc da = desc(a), db = desc(b), dc = desc(out), dbias = {};
	struct maia_gemm_args g = {};
	Job job(a);

	g.a = &da;
	g.b = &db;
	g.c = &dc;
	g.alpha = alpha;
	g.activation = use_gelu ? MAIA_ACT_GELU_ERF : MAIA_ACT_RELU;
	if (beta == 1.0f && self.dim() == 1 && self.size(0) == b.size(1)) {
		dbias = desc(self);
		g.bias = &dbias;
	} else if (beta != 0.0f) {
		struct maia_tensor_desc x = desc(self.expand(out.sizes()));

		job.add(maia_cmd_tensor_copy(job.cmdbuf(), &x, &dc), "maia_cmd_tensor_copy");
		g.beta = beta;
	}
	job.add(maia_cmd_gemm_ex(job.cmdbuf(), &g), "maia_cmd_gemm_ex");
	job.run();
	count_device_op("_addmm_activation");
	return out;
}

/* The out= forms torch's own composites call: the functional kernel, copied into out. */
static at::Tensor &into(at::Tensor &out, const at::Tensor &r)
{
	if (out.sizes() != r.sizes())
		out.resize_(r.sizes());
	out.copy_(r);
	return out;
}

static at::Tensor softmax(const at::Tensor &x, int64_t dim, bool half_to_float);

/*
 * Whether a GEMM of a and b (and self) can write its product straight into
 * out (shape, a's type): on a's device, describable, no element written
 * twice, sharing no storage with an input (the engine reads them while it
 * writes C). Else the product is made and copied into out.
 */
static bool gemm_into_ok(const at::Tensor &out, at::IntArrayRef shape, const at::Tensor &a,
			 const at::Tensor &b, const at::Tensor &self = at::Tensor())
{
	return on_device(out, a) && out.sizes() == shape && out.scalar_type() == a.scalar_type() &&
	       describable(out) && at::has_internal_overlap(out) == at::MemOverlap::No &&
	       !out.is_alias_of(a) && !out.is_alias_of(b) && !(self.defined() && out.is_alias_of(self));
}

/* Inductor's extern calls for matrix products write into its buffers (out=): one GEMM into out. */
static at::Tensor &bmm_out(const at::Tensor &a, const at::Tensor &b, at::Tensor &out)
{
	if (!on_device(out))
		return out.copy_(at::bmm(cpu(a), cpu(b)));
	if (!gemm_ok(a, b, 3) || a.size(0) != b.size(0) ||
	    !gemm_into_ok(out, { a.size(0), a.size(1), b.size(2) }, a, b))
		return into(out, maia_torch::bmm(a, b));
	Job job(a);

	gemm(job, a, b, out, 1.0f, 0.0f);
	job.run();
	count_device_op("bmm");
	return out;
}

static at::Tensor &mm_out(const at::Tensor &a, const at::Tensor &b, at::Tensor &out)
{
	if (!on_device(out))
		return out.copy_(at::mm(cpu(a), cpu(b)));
	if (!gemm_ok(a, b, 2) || !gemm_into_ok(out, { a.size(0), b.size(1) }, a, b))
		return into(out, maia_torch::mm(a, b));
	Job job(a);

	gemm(job, a, b, out, 1.0f, 0.0f);
	job.run();
	count_device_op("mm");
	return out;
}

static at::Tensor &addmm_out(const at::Tensor &self, const at::Tensor &a, const at::Tensor &b,
			     const at::Scalar &beta, const at::Scalar &alpha, at::Tensor &out)
{
	if (!on_device(out))
		return out.copy_(at::addmm(cpu(self), cpu(a), cpu(b), beta, alpha));
	if (!addmm_ok(self, a, b, alpha.toFloat()) ||
	    !gemm_into_ok(out, { a.size(0), b.size(1) }, a, b, self))
		return into(out, maia_torch::addmm(self, a, b, beta, alpha));
	Job job(a);

	addmm_into(job, self, a, b, beta.toFloat(), alpha.toFloat(), out);
	job.run();
	count_device_op("addmm");
	return out;
}

static at::Tensor &addmm_activation_out(const at::Tensor &self, const at::Tensor &a,
					const at::Tensor &b, const at::Scalar &beta, const at::Scalar &alpha,
					bool use_gelu, at::Tensor &out)
{
	return into(out, addmm_activation(self, a, b, beta, alpha, use_gelu));
}

static at::Tensor &softmax_out(const at::Tensor &x, int64_t dim, bool half_to_float, at::Tensor &out)
{
	return into(out, maia_torch::softmax(x, dim, half_to_float));
}

/* ---- elementwise -------------------------------------------------------------- */

static bool cpu_scalar(const at::Tensor &t)
{
	return t.is_cpu() && t.dim() == 0;
}

/* out = alpha * x + beta on the device. */
static at::Tensor scale(const at::Tensor &x, float alpha, float beta, const char *name)
{
	at::Tensor out = at::empty(x.sizes(), x.options());
	struct maia_tensor_desc dx = desc(x), dout = desc(out);
	Job job(x);

	job.add(maia_cmd_scale(job.cmdbuf(), &dx, &dout, alpha, beta), "maia_cmd_scale");
	job.run();
	count_device_op(name);
	return out;
}

/*
 * x + alpha * y (mul: x * y) into out (a new tensor when undefined), with
 * broadcasting; returns an undefined tensor when the device cannot do it.
 */
static at::Tensor binary(const at::Tensor &x, const at::Tensor &y, float alpha, bool mul,
			 at::Tensor out, const char *name)
{
	if (on_device(x) && cpu_scalar(y) && engine_float(x.scalar_type()) && describable(x) &&
	    !out.defined()) {
		double s = y.item<double>();

		return mul ? scale(x, (float)s, 0.0f, name) : scale(x, 1.0f, (float)(alpha * s), name);
	}
	/* A scalar on the left (1 - t, 2 * t): s + alpha y, s y. */
	if (on_device(y) && cpu_scalar(x) && engine_float(y.scalar_type()) && describable(y) &&
	    !out.defined()) {
		double s = x.item<double>();

		return mul ? scale(y, (float)s, 0.0f, name) : scale(y, alpha, (float)s, name);
	}
	if (!same_float({ x, y }) || x.dim() > 4 || y.dim() > 4)
		return at::Tensor();
	std::vector<int64_t> shape = at::infer_size(x.sizes(), y.sizes());
	if (c10::multiply_integers(shape) == 0)
		return at::Tensor();
	if (!out.defined())
		out = at::empty(shape, x.options());
	if (out.sizes() != at::IntArrayRef(shape) || !describable(out) ||
	    at::has_internal_overlap(out) == at::MemOverlap::Yes)
		return at::Tensor();
	at::Tensor ys = y;
	if (!mul && alpha != 1.0f)
		ys = scale(y, alpha, 0.0f, "scale");
	struct maia_tensor_desc dx = desc(x.expand(shape)), dy = desc(ys.expand(shape)),
				dout = desc(out);
	Job job(out);

	if (mul)
		job.add(maia_cmd_mul(job.cmdbuf(), &dx, &dy, &dout, 0), "maia_cmd_mul");
	else
		job.add(maia_cmd_add(job.cmdbuf(), &dx, &dy, &dout, 0), "maia_cmd_add");
	job.run();
	count_device_op(name);
	return out;
}

static at::Tensor add(const at::Tensor &x, const at::Tensor &y, const at::Scalar &alpha)
{
	at::Tensor r = binary(x, y, alpha.toFloat(), false, at::Tensor(), "add");

	if (r.defined())
		return r;
	return cpu_op("add.Tensor", on_device(x) ? x.device() : y.device(),
		      [&] { return at::add(cpu(x), cpu(y), alpha); });
}

static at::Tensor sub(const at::Tensor &x, const at::Tensor &y, const at::Scalar &alpha)
{
	at::Tensor r = binary(x, y, -alpha.toFloat(), false, at::Tensor(), "sub");

	if (r.defined())
		return r;
	return cpu_op("sub.Tensor", on_device(x) ? x.device() : y.device(),
		      [&] { return at::sub(cpu(x), cpu(y), alpha); });
}

static at::Tensor mul(const at::Tensor &x, const at::Tensor &y)
{
	at::Tensor r = binary(x, y, 1.0f, true, at::Tensor(), "mul");

	if (r.defined())
		return r;
	return cpu_op("mul.Tensor", on_device(x) ? x.device() : y.device(),
		      [&] { return at::mul(cpu(x), cpu(y)); });
}

static at::Tensor div(const at::Tensor &x, const at::Tensor &y)
{
	if (on_device(x) && cpu_scalar(y) && engine_float(x.scalar_type()) && describable(x))
		return scale(x, (float)(1.0 / y.item<double>()), 0.0f, "div");
	return cpu_op("div.Tensor", on_device(x) ? x.device() : y.device(),
		      [&] { return at::div(cpu(x), cpu(y)); });
}

static at::Tensor &add_(at::Tensor &self, const at::Tensor &other, const at::Scalar &alpha)
{
	at::Tensor r;

	/* A number (Adam's denominator's + eps): the scale command, copied in. */
	if (cpu_scalar(other) && on_device(self) && engine_float(self.scalar_type()) &&
	    describable(self) && !at::isComplexType(other.scalar_type())) {
		self.copy_(scale(self, 1.0f, (float)(alpha.toDouble() * other.item<double>()), "add_"));
		return self;
	}
	if (!cpu_scalar(other))
		r = binary(self, other, alpha.toFloat(), false, self, "add_");
	if (!r.defined()) {
		count_fallback("aten::add_.Tensor");
		self.copy_(at::add(cpu(self), cpu(other), alpha));
	}
	return self;
}

static at::Tensor activation(const at::Tensor &x, uint32_t act, const char *name)
{
	at::Tensor out = at::empty(x.sizes(), x.options());
	struct maia_tensor_desc dx = desc(x), dout = desc(out);
	Job job(x);

	job.add(maia_cmd_activation(job.cmdbuf(), &dx, &dout, act), "maia_cmd_activation");
	job.run();
	count_device_op(name);
	return out;
}

static bool unary_ok(const at::Tensor &x)
{
	return on_device(x) && engine_float(x.scalar_type()) && describable(x);
}

static at::Tensor relu(const at::Tensor &x)
{
	if (!unary_ok(x))
		return cpu_op("relu", x.device(), [&] { return at::relu(cpu(x)); });
	return activation(x, MAIA_ACT_RELU, "relu");
}

static at::Tensor silu(const at::Tensor &x)
{
	if (!unary_ok(x))
		return cpu_op("silu", x.device(), [&] { return at::silu(cpu(x)); });
	return activation(x, MAIA_ACT_SILU, "silu");
}

static at::Tensor gelu(const at::Tensor &x, c10::string_view approximate)
{
	if (!unary_ok(x) || (approximate != "none" && approximate != "tanh"))
		return cpu_op("gelu", x.device(), [&] { return at::gelu(cpu(x), approximate); });
	return activation(x, approximate == "tanh" ? MAIA_ACT_GELU : MAIA_ACT_GELU_ERF, "gelu");
}

/* ---- softmax, layer norm, reductions --------------------------------------------- */

static at::Tensor softmax_common(const at::Tensor &x, int64_t dim, bool half_to_float, bool log)
{
	dim = c10::maybe_wrap_dim(dim, x.dim());
	if (unary_ok(x) && x.dim() > 1 && dim != x.dim() - 1)	/* the last dimension of a permuted view */
		return softmax_common(x.movedim(dim, -1), -1, half_to_float, log).movedim(-1, dim).contiguous();
	if (!unary_ok(x) || x.dim() == 0)
		return cpu_op(log ? "_log_softmax" : "_softmax", x.device(), [&] {
			return log ? at::_log_softmax(cpu(x), dim, half_to_float) :
				     at::_softmax(cpu(x), dim, half_to_float);
		});
	at::Tensor out = at::empty(x.sizes(), x.options().dtype(half_to_float ? at::kFloat :
									     x.scalar_type()));
	struct maia_tensor_desc dx = desc(x), dout = desc(out);
	Job job(x);

	job.add(maia_cmd_softmax(job.cmdbuf(), &dx, &dout, 1.0f, 0, log ? MAIA_SOFTMAX_F_LOG : 0),
		"maia_cmd_softmax");
	job.run();
	count_device_op(log ? "_log_softmax" : "_softmax");
	return out;
}

static at::Tensor softmax(const at::Tensor &x, int64_t dim, bool half_to_float)
{
	return softmax_common(x, dim, half_to_float, false);
}

static at::Tensor log_softmax(const at::Tensor &x, int64_t dim, bool half_to_float)
{
	return softmax_common(x, dim, half_to_float, true);
}

/*
 * Layer norm over the last dimension (size D), all on the device: the
 * output, and each row's mean and 1/sqrt(var + eps) that backward (on the
 * CPU) needs. The engine has no reciprocal square root, but RMS norm has
 * one inside: over the row z = [s c_1 .. s c_D, t] with c = x - mean,
 * s = sqrt((D + 1) / D) and t = sqrt(eps (D + 1)), mean(z^2) = var + eps,
 * so RMS norm with eps 0 gives t / sqrt(var + eps) in the last column.
 */
static std::tuple<at::Tensor, at::Tensor, at::Tensor>
layer_norm(const at::Tensor &input, at::IntArrayRef normalized_shape,
	   const c10::optional<at::Tensor> &weight_opt, const c10::optional<at::Tensor> &bias_opt,
	   double eps)
{
	at::Tensor weight = weight_opt.value_or(at::Tensor()), bias = bias_opt.value_or(at::Tensor());
	bool ok = unary_ok(input) && input.is_contiguous() && input.dim() >= 1 && eps > 0 &&
		  normalized_shape.size() == 1 && (weight.defined() == bias.defined()) &&
		  (!weight.defined() || (same_float({ input, weight, bias }) && weight.dim() == 1 &&
					 bias.dim() == 1));

	if (!ok) {
		count_fallback("aten::native_layer_norm");
		auto r = at::native_layer_norm(cpu(input), normalized_shape, cpu(weight), cpu(bias), eps);
		return std::make_tuple(std::get<0>(r).to(input.device()), std::get<1>(r).to(input.device()),
				       std::get<2>(r).to(input.device()));
	}
	int64_t d = input.size(-1), rows = input.numel() / d;
	float s = (float)std::sqrt((double)(d + 1) / (double)d);
	float t = (float)std::sqrt(eps * (double)(d + 1));
	at::Tensor x = input.view({ rows, d });
	at::Tensor out = at::empty({ rows, d }, input.options());
	at::TensorOptions f32 = input.options().dtype(at::kFloat);
	at::Tensor mean = at::empty({ rows, 1 }, f32), neg = at::empty({ rows, 1 }, f32);
	at::Tensor z = at::empty({ rows, d + 1 }, f32), zn = at::empty({ rows, d + 1 }, f32);
	at::Tensor rstd = at::empty({ rows, 1 }, f32);
	at::Tensor zc = z.narrow(1, 0, d), zt = z.narrow(1, d, 1), znt = zn.narrow(1, d, 1);
	struct maia_tensor_desc dx = desc(x), dout = desc(out), dmean = desc(mean), dneg = desc(neg),
				dneg_b = desc(neg.expand({ rows, d })), dzc = desc(zc), dzt = desc(zt),
				dz = desc(z), dzn = desc(zn), dznt = desc(znt), drstd = desc(rstd),
				dg, db;
	Job job(input);

	if (weight.defined()) {
		dg = desc(weight);
		db = desc(bias);
	}
	job.add(maia_cmd_layernorm(job.cmdbuf(), &dx, weight.defined() ? &dg : nullptr,
				   weight.defined() ? &db : nullptr, &dout, (float)eps),
		"maia_cmd_layernorm");
	job.add(maia_cmd_reduce(job.cmdbuf(), &dx, &dmean, MAIA_REDUCE_MEAN, 2), "maia_cmd_reduce");
	job.add(maia_cmd_scale(job.cmdbuf(), &dmean, &dneg, -s, 0.0f), "maia_cmd_scale");
	job.add(maia_cmd_scale(job.cmdbuf(), &dx, &dzc, s, 0.0f), "maia_cmd_scale");
	job.add(maia_cmd_add(job.cmdbuf(), &dzc, &dneg_b, &dzc, 0), "maia_cmd_add");
	job.add(maia_cmd_scale(job.cmdbuf(), &dmean, &dzt, 0.0f, t), "maia_cmd_scale");
	job.add(maia_cmd_rmsnorm(job.cmdbuf(), &dz, nullptr, &dzn, 0.0f), "maia_cmd_rmsnorm");
	job.add(maia_cmd_scale(job.cmdbuf(), &dznt, &drstd, 1.0f / t, 0.0f), "maia_cmd_scale");
	job.run();
	std::vector<int64_t> stat_shape(input.sizes().begin(), input.sizes().end());
	stat_shape.back() = 1;
	count_device_op("native_layer_norm");
	return std::make_tuple(out.view(input.sizes()), mean.view(stat_shape).to(input.scalar_type()),
			       rstd.view(stat_shape).to(input.scalar_type()));
}

/* sum / mean over dims (all when empty), on the device when it can. */
static at::Tensor reduce(const char *name, uint32_t op, const at::Tensor &x,
			 at::OptionalIntArrayRef dims_opt, bool keepdim,
			 c10::optional<at::ScalarType> dtype)
{
	uint32_t axes = 0;
	std::vector<int64_t> kept(x.sizes().begin(), x.sizes().end()), final_shape;

	bool ok = unary_ok(x) && (!dtype || *dtype == x.scalar_type());
	if (ok && x.dim() == 0) {
		/* A scalar: reduced as one element of rank 1, returned as a scalar. */
		kept = { 1 };
		axes = 1;
	} else if (ok) {
		if (!dims_opt || dims_opt->empty()) {
			axes = (1u << x.dim()) - 1;
		} else {
			for (int64_t d : *dims_opt)
				axes |= 1u << c10::maybe_wrap_dim(d, x.dim());
		}
		for (int64_t d = 0; d < x.dim(); d++) {
			if (axes & (1u << d))
				kept[d] = 1;
			if (!(axes & (1u << d)) || keepdim)
				final_shape.push_back(kept[d]);
		}
	}
	if (!ok)
		return cpu_op(name, x.device(), [&] {
			return op == MAIA_REDUCE_SUM ? at::sum(cpu(x), dims_opt, keepdim, dtype) :
						       at::mean(cpu(x), dims_opt, keepdim, dtype);
		});
	at::Tensor out = at::empty(kept, x.options());
	struct maia_tensor_desc dx = desc(x.dim() ? x : x.view({ 1 })), dout = desc(out);
	Job job(x);

	job.add(maia_cmd_reduce(job.cmdbuf(), &dx, &dout, op, axes), "maia_cmd_reduce");
	job.run();
	count_device_op(name);
	return out.view(final_shape);
}

static at::Tensor sum_dim(const at::Tensor &x, at::OptionalIntArrayRef dims, bool keepdim,
			  c10::optional<at::ScalarType> dtype)
{
	return reduce("sum", MAIA_REDUCE_SUM, x, dims, keepdim, dtype);
}

static at::Tensor sum_all(const at::Tensor &x, c10::optional<at::ScalarType> dtype)
{
	return reduce("sum", MAIA_REDUCE_SUM, x, c10::nullopt, false, dtype);
}

static at::Tensor mean_dim(const at::Tensor &x, at::OptionalIntArrayRef dims, bool keepdim,
			   c10::optional<at::ScalarType> dtype)
{
	return reduce("mean", MAIA_REDUCE_MEAN, x, dims, keepdim, dtype);
}

/* ---- composite kernels: several device commands, no CPU ------------------------ */

/* grad_input = y * (g - sum(g * y, dim)): softmax's derivative. */
static at::Tensor softmax_backward(const at::Tensor &g, const at::Tensor &y, int64_t dim,
				   at::ScalarType input_dtype)
{
	at::Tensor gy, s, d, out;

	dim = c10::maybe_wrap_dim(dim, y.dim());
	if (same_float({ g, y }) && input_dtype == y.scalar_type() && y.dim() >= 1 &&
	    describable(g) && describable(y) && g.sizes() == y.sizes()) {
		gy = binary(g, y, 1.0f, true, at::Tensor(), "mul");
		if (gy.defined())
			s = reduce("sum", MAIA_REDUCE_SUM, gy, at::IntArrayRef(dim), true, c10::nullopt);
		if (s.defined())
			d = binary(g, s, -1.0f, false, at::Tensor(), "sub");
		if (d.defined())
			out = binary(y, d, 1.0f, true, at::Tensor(), "mul");
	}
	if (!out.defined())
		return cpu_op("_softmax_backward_data", y.device(), [&] {
			return at::_softmax_backward_data(cpu(g), cpu(y), dim, input_dtype);
		});
	count_device_op("_softmax_backward_data");
	return out;
}

static bool mse_ok(const at::Tensor &x, const at::Tensor &t)
{
	return same_float({ x, t }) && x.sizes() == t.sizes() && describable(x) && describable(t);
}

static at::Tensor mse_loss(const at::Tensor &x, const at::Tensor &t, int64_t reduction)
{
	at::Tensor d, sq;

	if (mse_ok(x, t))
		d = binary(x, t, -1.0f, false, at::Tensor(), "sub");
	if (d.defined())
		sq = binary(d, d, 1.0f, true, at::Tensor(), "mul");
	if (!sq.defined())
		return cpu_op("mse_loss", x.device(), [&] { return at::mse_loss(cpu(x), cpu(t), reduction); });
	count_device_op("mse_loss");
	if (reduction == at::Reduction::None)
		return sq;
	if (reduction == at::Reduction::Mean)
		return reduce("mean", MAIA_REDUCE_MEAN, sq, c10::nullopt, false, c10::nullopt);
	return reduce("sum", MAIA_REDUCE_SUM, sq, c10::nullopt, false, c10::nullopt);
}

/* grad_input = grad * 2 (x - t) (/ numel for the mean). */
static at::Tensor mse_loss_backward(const at::Tensor &grad, const at::Tensor &x, const at::Tensor &t,
				    int64_t reduction)
{
	at::Tensor d, out;
	float f = 2.0f / (reduction == at::Reduction::Mean ? (float)x.numel() : 1.0f);

	if (mse_ok(x, t) && on_device(grad, x) && grad.scalar_type() == x.scalar_type() &&
	    describable(grad))
		d = binary(x, t, -1.0f, false, at::Tensor(), "sub");
	if (d.defined())
		out = binary(d, scale(grad, f, 0.0f, "scale"), 1.0f, true, at::Tensor(), "mul");
	if (!out.defined())
		return cpu_op("mse_loss_backward", x.device(), [&] {
			return at::mse_loss_backward(cpu(grad), cpu(x), cpu(t), reduction);
		});
	count_device_op("mse_loss_backward");
	return out;
}

/*
 * Layer norm's derivative over rows of D, with xhat = (x - mean) rstd and
 * gy = dy gamma: dx = rstd / D (D gy - sum(gy) - xhat sum(gy xhat)),
 * dgamma = sum over rows of dy xhat, dbeta = sum over rows of dy.
 */
static std::tuple<at::Tensor, at::Tensor, at::Tensor>
layer_norm_backward(const at::Tensor &grad, const at::Tensor &input, at::IntArrayRef normalized_shape,
		    const at::Tensor &mean, const at::Tensor &rstd,
		    const c10::optional<at::Tensor> &weight_opt, const c10::optional<at::Tensor> &bias_opt,
		    std::array<bool, 3> mask)
{
	at::Tensor weight = weight_opt.value_or(at::Tensor()), bias = bias_opt.value_or(at::Tensor());
	at::Tensor dx, dw, db;
	bool ok = normalized_shape.size() == 1 && input.dim() >= 1 && input.numel() > 0 &&
		  same_float({ grad, input, mean, rstd }) && grad.sizes() == input.sizes() &&
		  (!weight.defined() || same_float({ input, weight }));

	if (ok) {
		int64_t d = input.size(-1), rows = input.numel() / d;
		at::Tensor x2 = input.reshape({ rows, d }), g2 = grad.reshape({ rows, d });
		at::Tensor xc = binary(x2, mean.reshape({ rows, 1 }), -1.0f, false, at::Tensor(), "sub");
		at::Tensor xhat = xc.defined() ?
			binary(xc, rstd.reshape({ rows, 1 }), 1.0f, true, at::Tensor(), "mul") : xc;
		at::Tensor gy = weight.defined() && xhat.defined() ?
			binary(g2, weight, 1.0f, true, at::Tensor(), "mul") : g2;

		ok = xhat.defined() && gy.defined();
		if (ok && mask[0]) {
			at::Tensor s1 = reduce("sum", MAIA_REDUCE_SUM, gy, at::IntArrayRef(1), true, c10::nullopt);
			at::Tensor gx = binary(gy, xhat, 1.0f, true, at::Tensor(), "mul");
			at::Tensor s2 = reduce("sum", MAIA_REDUCE_SUM, gx, at::IntArrayRef(1), true, c10::nullopt);
			at::Tensor t = binary(xhat, s2, 1.0f, true, at::Tensor(), "mul");
			at::Tensor u = binary(scale(gy, (float)d, 0.0f, "scale"), s1, -1.0f, false,
					      at::Tensor(), "sub");
			u = u.defined() && t.defined() ? binary(u, t, -1.0f, false, at::Tensor(), "sub") : u;
			at::Tensor r = scale(rstd.reshape({ rows, 1 }), 1.0f / (float)d, 0.0f, "scale");
			dx = u.defined() ? binary(u, r, 1.0f, true, at::Tensor(), "mul") : u;
			ok = dx.defined();
			if (ok)
				dx = dx.view(input.sizes());
		}
		if (ok && mask[1] && weight.defined()) {
			at::Tensor gx = binary(g2, xhat, 1.0f, true, at::Tensor(), "mul");

			ok = gx.defined();
			if (ok)
				dw = reduce("sum", MAIA_REDUCE_SUM, gx, at::IntArrayRef(0), false, c10::nullopt);
		}
		if (ok && mask[2] && bias.defined())
			db = reduce("sum", MAIA_REDUCE_SUM, g2, at::IntArrayRef(0), false, c10::nullopt);
	}
	if (!ok) {
		count_fallback("aten::native_layer_norm_backward");
		auto r = at::native_layer_norm_backward(cpu(grad), cpu(input), normalized_shape, cpu(mean),
							cpu(rstd), cpu(weight), cpu(bias), mask);
		auto back = [&](const at::Tensor &t) { return t.defined() ? t.to(input.device()) : t; };
		return std::make_tuple(back(std::get<0>(r)), back(std::get<1>(r)), back(std::get<2>(r)));
	}
	count_device_op("native_layer_norm_backward");
	return std::make_tuple(dx, dw, db);
}

/* Concatenation: each input copied into its slice of the output on the device. */
static at::Tensor cat(const at::ITensorListRef &list, int64_t dim)
{
	std::vector<at::Tensor> ts;
	const at::Tensor *ref = nullptr;
	bool ok = true;

	for (const at::Tensor &t : list)
		ts.push_back(t);
	/* Legacy rule: 1-D empty tensors are skipped whatever dim is. */
	for (const at::Tensor &t : ts)
		if (!(t.dim() == 1 && t.numel() == 0) && !ref)
			ref = &t;
	if (ref) {
		dim = c10::maybe_wrap_dim(dim, ref->dim());
		for (const at::Tensor &t : ts) {
			if (t.dim() == 1 && t.numel() == 0)
				continue;
			ok = ok && on_device(t, *ref) && t.scalar_type() == ref->scalar_type() &&
			     t.dim() == ref->dim();
			for (int64_t i = 0; ok && i < t.dim(); i++)
				ok = i == dim || t.size(i) == ref->size(i);
		}
	}
	if (!ref || !ok)
		return cpu_op("cat", ts.empty() ? c10::Device(c10::DeviceType::PrivateUse1, 0) :
						  ts[0].device(), [&] {
			std::vector<at::Tensor> host;
			for (const at::Tensor &t : ts)
				host.push_back(cpu(t));
			return at::cat(host, dim);
		});
	std::vector<int64_t> shape(ref->sizes().begin(), ref->sizes().end());
	shape[dim] = 0;
	for (const at::Tensor &t : ts)
		if (!(t.dim() == 1 && t.numel() == 0))
			shape[dim] += t.size(dim);
	at::Tensor out = at::empty(shape, ref->options());
	int64_t off = 0;
	for (const at::Tensor &t : ts) {
		if (t.dim() == 1 && t.numel() == 0)
			continue;
		out.narrow(dim, off, t.size(dim)).copy_(t);
		off += t.size(dim);
	}
	count_device_op("cat");
	return out;
}

TORCH_LIBRARY_IMPL(aten, PrivateUse1, m)
{
	m.impl("_softmax_backward_data", softmax_backward);
	m.impl("mse_loss", mse_loss);
	m.impl("mse_loss_backward", mse_loss_backward);
	m.impl("cat", cat);
	m.impl("native_layer_norm_backward", layer_norm_backward);
	m.impl("mm", mm);
	m.impl("bmm", bmm);
	m.impl("addmm", addmm);
	m.impl("_addmm_activation", addmm_activation);
	m.impl("_addmm_activation.out", addmm_activation_out);
	m.impl("bmm.out", bmm_out);
	m.impl("mm.out", mm_out);
	m.impl("addmm.out", addmm_out);
	m.impl("_softmax.out", softmax_out);
	m.impl("add.Tensor", add);
	m.impl("add_.Tensor", add_);
	m.impl("sub.Tensor", sub);
	m.impl("mul.Tensor", mul);
	m.impl("div.Tensor", div);
	m.impl("relu", relu);
	m.impl("silu", silu);
	m.impl("gelu", gelu);
	m.impl("_softmax", softmax);
	m.impl("_log_softmax", log_softmax);
	m.impl("native_layer_norm", layer_norm);
	m.impl("sum.dim_IntList", sum_dim);
	m.impl("sum", sum_all);
	m.impl("mean.dim", mean_dim);
}

} // namespace maia_torch
