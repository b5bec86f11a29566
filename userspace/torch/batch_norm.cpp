// SPDX-License-Identifier: MIT
/*
 * Batch norm (aten::native_batch_norm and its backward) on the tensor
 * engine, over [N, C], [N, C, L] and [N, C, H, W] inputs.
 *
 * Training: per channel, M = N*H*W values. The engine has no reciprocal
 * square root, but RMS norm has one inside (the layer-norm trick of
 * kernels.cpp): the centered values of channel c, scaled by
 * s = sqrt((M + 1) / M), are row c of z [C, M + 1], whose last column is
 * t = sqrt(eps (M + 1)); then mean(z_c^2) = var_c + eps, RMS norm of z
 * gives s * xhat in the first M columns and t * invstd in the last. The
 * output is that times gamma / s plus beta; the running statistics are
 * updated on the device too (unbiased variance from REDUCE SUMSQ). One job.
 *
 * Evaluation: out = x * a + b with a = gamma / sqrt(running_var + eps) and
 * b = beta - running_mean * a, per channel. a and b are computed on the
 * host from the running statistics (C values: the one host read), and kept
 * while those tensors are unchanged (same tensors, same version counters).
 *
 * Backward (training statistics): dx = gamma invstd / M (M dy - sum(dy) -
 * xhat sum(dy xhat)), dgamma = sum(dy xhat), dbeta = sum(dy): one job.
 * Anything else takes the CPU (counted).
 */
#include <torch/library.h>

#include <cmath>
#include <mutex>

#include "tensor_desc.h"

namespace maia_torch {

static at::Tensor host(const at::Tensor &t)
{
	return t.defined() ? t.to(at::kCPU) : t;
}

static at::Tensor dev_or_undef(const at::Tensor &t, const at::Device &d)
{
	return t.defined() ? t.to(d) : t;
}

/* x as 4-D sizes and element strides ([N, C] -> [N, C, 1, 1]; [N, C, L] -> [N, C, 1, L]). */
struct Shape4 {
	int64_t size[4];
	int64_t stride[4];
};

static Shape4 shape4(const at::Tensor &x)
{
	Shape4 s;

	s.size[0] = x.size(0);
	s.size[1] = x.size(1);
	s.stride[0] = x.stride(0);
	s.stride[1] = x.stride(1);
	s.size[2] = x.dim() == 4 ? x.size(2) : 1;
	s.stride[2] = x.dim() == 4 ? x.stride(2) : 0;
	s.size[3] = x.dim() >= 3 ? x.size(-1) : 1;
	s.stride[3] = x.dim() >= 3 ? x.stride(-1) : 0;
	return s;
}

static struct maia_tensor_desc d4(uint64_t va, at::ScalarType type, const int64_t *size,
				  const int64_t *stride)
{
	struct maia_tensor_desc d = {};

	d.addr = va;
	d.dtype = (uint8_t)maia_dtype(type);
	d.rank = 4;
	for (int i = 0; i < 4; i++) {
		d.shape[i] = (uint32_t)size[i];
		d.strides[i] = (uint64_t)stride[i];
	}
	return d;
}

static struct maia_tensor_desc d4(const at::Tensor &t, const Shape4 &s)
{
	return d4(va_of(t), t.scalar_type(), s.size, s.stride);
}

/* A per-channel vector (stride st) broadcast over shape s. */
static struct maia_tensor_desc chan(const at::Tensor &v, const Shape4 &s)
{
	int64_t st[4] = { 0, v.stride(0), 0, 0 };

	return d4(va_of(v), v.scalar_type(), s.size, st);
}

static struct maia_tensor_desc vec(uint64_t va, at::ScalarType type, int64_t n, int64_t stride)
{
	struct maia_tensor_desc d = {};

	d.addr = va;
	d.dtype = (uint8_t)maia_dtype(type);
	d.rank = 1;
	d.shape[0] = (uint32_t)n;
	d.strides[0] = (uint64_t)stride;
	return d;
}

static struct maia_tensor_desc vec(const at::Tensor &t)
{
	return vec(va_of(t), t.scalar_type(), t.size(0), t.stride(0));
}

/* A per-channel tensor the device can use beside x: undefined, or a device vector of C. */
static bool chan_ok(const at::Tensor &v, const at::Tensor &x)
{
	return !v.defined() || (on_device(v, x) && v.scalar_type() == x.scalar_type() && v.dim() == 1 &&
				v.size(0) == x.size(1));
}

static bool bn_ok(const at::Tensor &x, std::initializer_list<at::Tensor> chans)
{
	if (!on_device(x) || !engine_float(x.scalar_type()) || x.dim() < 2 || x.dim() > 4 ||
	    !describable(x) || x.numel() == 0)
		return false;
	for (const at::Tensor &v : chans)
		if (!chan_ok(v, x))
			return false;
	return true;
}

/* ---- evaluation: x * a + b with a, b from the running statistics ---------------- */

struct EvalEntry {
	at::Tensor t[4];	/* held, so that a matching TensorImpl is the same tensor */
	uint32_t version[4];
	double eps;
	at::Tensor a, b;
};

static std::mutex eval_mu;
static std::vector<EvalEntry> eval_cache;	/* under eval_mu */

static uint32_t version_of(const at::Tensor &t)
{
	return t.defined() ? t._version() : 0;
}

static bool same_key(const EvalEntry &e, const at::Tensor *ts, double eps)
{
	if (e.eps != eps)
		return false;
	for (int i = 0; i < 4; i++)
		if (e.t[i].unsafeGetTensorImpl() != ts[i].unsafeGetTensorImpl() ||
		    e.version[i] != version_of(ts[i]))
			return false;
	return true;
}

static std::pair<at::Tensor, at::Tensor> eval_coefficients(const at::Tensor &x, const at::Tensor &w,
							   const at::Tensor &b, const at::Tensor &rm,
							   const at::Tensor &rv, double eps)
{
	const at::Tensor ts[4] = { w, b, rm, rv };
	std::lock_guard<std::mutex> lock(eval_mu);

	for (const EvalEntry &e : eval_cache)
		if (same_key(e, ts, eps))
			return { e.a, e.b };
	at::Tensor a = (host(rv).to(at::kDouble) + eps).rsqrt();
	if (w.defined())
		a = a * host(w).to(at::kDouble);
	at::Tensor c = -host(rm).to(at::kDouble) * a;
	if (b.defined())
		c = c + host(b).to(at::kDouble);
	EvalEntry e;
	for (int i = 0; i < 4; i++) {
		e.t[i] = ts[i];
		e.version[i] = version_of(ts[i]);
	}
	e.eps = eps;
	e.a = a.to(x.scalar_type()).to(x.device());
	e.b = c.to(x.scalar_type()).to(x.device());
	if (eval_cache.size() >= 256)
		eval_cache.erase(eval_cache.begin());
	eval_cache.push_back(e);
	return { e.a, e.b };
}

static at::Tensor bn_eval(const at::Tensor &x, const at::Tensor &w, const at::Tensor &b,
			  const at::Tensor &rm, const at::Tensor &rv, double eps)
{
	auto [a, c] = eval_coefficients(x, w, b, rm, rv, eps);
	Shape4 s = shape4(x);
	at::Tensor out = at::empty(x.sizes(), x.options());
	Shape4 so = shape4(out);
	struct maia_tensor_desc dx = d4(x, s), dout = d4(out, so), da = chan(a, so), dc = chan(c, so);
	Job job(x);

	job.add(maia_cmd_mul(job.cmdbuf(), &dx, &da, &dout, 0), "maia_cmd_mul");
	job.add(maia_cmd_add(job.cmdbuf(), &dout, &dc, &dout, 0), "maia_cmd_add");
	job.run();
	return out;
}

/* ---- training ------------------------------------------------------------------ */

static std::tuple<at::Tensor, at::Tensor, at::Tensor>
bn_train(const at::Tensor &x, const at::Tensor &w, const at::Tensor &b, const at::Tensor &rm,
	 const at::Tensor &rv, double momentum, double eps)
{
	at::ScalarType type = x.scalar_type();
	Shape4 s = shape4(x);
	int64_t C = s.size[1], M = s.size[0] * s.size[2] * s.size[3], hw = s.size[2] * s.size[3];
	double sf = std::sqrt((double)(M + 1) / (double)M), tf = std::sqrt(eps * (double)(M + 1));
	at::TensorOptions opt = x.options();
	at::Tensor out = at::empty(x.sizes(), opt);
	Shape4 so = shape4(out);
	at::Tensor mean = at::empty({ C }, opt), negm = at::empty({ C }, opt);
	at::Tensor invstd = at::empty({ C }, opt);
	at::Tensor z = at::empty({ C, M + 1 }, opt), zn = at::empty({ C, M + 1 }, opt);
	at::Tensor gs = w.defined() ? at::empty({ C }, opt) : at::Tensor();
	at::Tensor t1 = at::empty({ C }, opt), t2 = at::empty({ C }, opt), sq = at::empty({ C }, opt);
	size_t isz = x.itemsize();
	/* z's first M columns as [N, C, H, W]. */
	int64_t zst[4] = { hw, M + 1, s.size[3], 1 };
	struct maia_tensor_desc dx = d4(x, s), dz = d4(va_of(z), type, s.size, zst),
				dzn = d4(va_of(zn), type, s.size, zst), dout = d4(out, so);
	const int64_t csize[4] = { 1, C, 1, 1 }, cstride[4] = { C, 1, 1, 1 };
	struct maia_tensor_desc dmean4 = d4(va_of(mean), type, csize, cstride);
	struct maia_tensor_desc dmean = vec(mean), dnegm = vec(negm), dnegm_b = chan(negm, s);
	struct maia_tensor_desc dzt = vec(va_of(z) + (uint64_t)M * isz, type, C, M + 1),
				dznt = vec(va_of(zn) + (uint64_t)M * isz, type, C, M + 1),
				dinv = vec(invstd);
	struct maia_tensor_desc dz2 = desc(z), dzn2 = desc(zn);
	Job job(x);

	job.add(maia_cmd_reduce(job.cmdbuf(), &dx, &dmean4, MAIA_REDUCE_MEAN, 0xd), "maia_cmd_reduce");
	job.add(maia_cmd_scale(job.cmdbuf(), &dmean, &dnegm, (float)-sf, 0.0f), "maia_cmd_scale");
	job.add(maia_cmd_scale(job.cmdbuf(), &dx, &dz, (float)sf, 0.0f), "maia_cmd_scale");
	job.add(maia_cmd_add(job.cmdbuf(), &dz, &dnegm_b, &dz, 0), "maia_cmd_add");
	job.add(maia_cmd_scale(job.cmdbuf(), &dmean, &dzt, 0.0f, (float)tf), "maia_cmd_scale");
	job.add(maia_cmd_rmsnorm(job.cmdbuf(), &dz2, nullptr, &dzn2, 0.0f), "maia_cmd_rmsnorm");
	job.add(maia_cmd_scale(job.cmdbuf(), &dznt, &dinv, (float)(1.0 / tf), 0.0f), "maia_cmd_scale");
	if (w.defined()) {
		struct maia_tensor_desc dw = vec(w), dgs = vec(gs), dgs_b = chan(gs, so);

		job.add(maia_cmd_scale(job.cmdbuf(), &dw, &dgs, (float)(1.0 / sf), 0.0f), "maia_cmd_scale");
		job.add(maia_cmd_mul(job.cmdbuf(), &dzn, &dgs_b, &dout, 0), "maia_cmd_mul");
	} else {
		job.add(maia_cmd_scale(job.cmdbuf(), &dzn, &dout, (float)(1.0 / sf), 0.0f), "maia_cmd_scale");
	}
	if (b.defined()) {
		struct maia_tensor_desc db_b = chan(b, so);

		job.add(maia_cmd_add(job.cmdbuf(), &dout, &db_b, &dout, 0), "maia_cmd_add");
	}
	if (rm.defined()) {
		struct maia_tensor_desc drm = vec(rm), dt1 = vec(t1), dt2 = vec(t2);

		job.add(maia_cmd_scale(job.cmdbuf(), &dmean, &dt1, (float)momentum, 0.0f), "maia_cmd_scale");
		job.add(maia_cmd_scale(job.cmdbuf(), &drm, &dt2, (float)(1.0 - momentum), 0.0f),
			"maia_cmd_scale");
		job.add(maia_cmd_add(job.cmdbuf(), &dt1, &dt2, &drm, 0), "maia_cmd_add");
	}
	if (rv.defined()) {
		/* sum over the row of (s (x - mean))^2 = (M + 1) var; unbiased = var M / (M - 1). */
		const int64_t zsize[4] = { 1, 1, C, M }, zstride[4] = { 0, 0, M + 1, 1 };
		const int64_t qsize[4] = { 1, 1, C, 1 }, qstride[4] = { 0, 0, 1, 1 };
		struct maia_tensor_desc dzc = d4(va_of(z), type, zsize, zstride),
					dsq = d4(va_of(sq), type, qsize, qstride),
					dsq1 = vec(sq), drv = vec(rv), dt1 = vec(t1), dt2 = vec(t2);
		double f = momentum * (double)M / ((double)(M + 1) * (double)(M - 1));

		job.add(maia_cmd_reduce(job.cmdbuf(), &dzc, &dsq, MAIA_REDUCE_SUMSQ, 0x8), "maia_cmd_reduce");
		job.add(maia_cmd_scale(job.cmdbuf(), &dsq1, &dt1, (float)f, 0.0f), "maia_cmd_scale");
		job.add(maia_cmd_scale(job.cmdbuf(), &drv, &dt2, (float)(1.0 - momentum), 0.0f),
			"maia_cmd_scale");
		job.add(maia_cmd_add(job.cmdbuf(), &dt1, &dt2, &drv, 0), "maia_cmd_add");
	}
	job.run();
	return std::make_tuple(out, mean, invstd);
}

static std::tuple<at::Tensor, at::Tensor, at::Tensor>
native_batch_norm(const at::Tensor &x, const c10::optional<at::Tensor> &w_opt,
		  const c10::optional<at::Tensor> &b_opt, const c10::optional<at::Tensor> &rm_opt,
		  const c10::optional<at::Tensor> &rv_opt, bool training, double momentum, double eps)
{
	at::Tensor w = w_opt.value_or(at::Tensor()), b = b_opt.value_or(at::Tensor());
	at::Tensor rm = rm_opt.value_or(at::Tensor()), rv = rv_opt.value_or(at::Tensor());
	bool ok = bn_ok(x, { w, b, rm, rv }) && eps > 0 && rm.defined() == rv.defined();

	if (ok && training) {
		Shape4 s = shape4(x);
		int64_t M = s.size[0] * s.size[2] * s.size[3];

		if (M > 1 && M + 1 <= (int64_t)MAIA_TENSOR_MAX_DIM) {
			auto r = bn_train(x, w, b, rm, rv, momentum, eps);
			count_device_op("native_batch_norm");
			return r;
		}
	} else if (ok && rm.defined()) {
		at::Tensor out = bn_eval(x, w, b, rm, rv, eps);
		at::Tensor none = at::empty({ 0 }, x.options());

		count_device_op("native_batch_norm");
		return std::make_tuple(out, none, none.clone());
	}
	count_fallback("aten::native_batch_norm");
	at::Tensor crm = host(rm), crv = host(rv);
	auto r = at::native_batch_norm(host(x), host(w), host(b), crm, crv, training, momentum, eps);
	if (training && rm.defined()) {
		rm.copy_(crm);
		rv.copy_(crv);
	}
	return std::make_tuple(std::get<0>(r).to(x.device()), std::get<1>(r).to(x.device()),
			       std::get<2>(r).to(x.device()));
}

static std::tuple<at::Tensor, at::Tensor, at::Tensor>
native_batch_norm_backward(const at::Tensor &gy, const at::Tensor &x,
			   const c10::optional<at::Tensor> &w_opt,
			   const c10::optional<at::Tensor> &rm_opt,
			   const c10::optional<at::Tensor> &rv_opt,
			   const c10::optional<at::Tensor> &sm_opt,
			   const c10::optional<at::Tensor> &si_opt, bool train, double eps,
			   std::array<bool, 3> mask)
{
	at::Tensor w = w_opt.value_or(at::Tensor()), rm = rm_opt.value_or(at::Tensor());
	at::Tensor rv = rv_opt.value_or(at::Tensor()), sm = sm_opt.value_or(at::Tensor());
	at::Tensor si = si_opt.value_or(at::Tensor());
	bool ok = train && sm.defined() && si.defined() && bn_ok(x, { w, sm, si }) && on_device(gy, x) &&
		  gy.scalar_type() == x.scalar_type() && gy.sizes() == x.sizes() && describable(gy);

	if (!ok) {
		count_fallback("aten::native_batch_norm_backward");
		auto r = at::native_batch_norm_backward(host(gy), host(x), host(w), host(rm), host(rv),
							host(sm), host(si), train, eps, mask);
		return std::make_tuple(dev_or_undef(std::get<0>(r), x.device()),
				       dev_or_undef(std::get<1>(r), x.device()),
				       dev_or_undef(std::get<2>(r), x.device()));
	}
	at::ScalarType type = x.scalar_type();
	at::TensorOptions opt = x.options();
	Shape4 s = shape4(x), sg = shape4(gy);
	int64_t C = s.size[1], M = s.size[0] * s.size[2] * s.size[3];
	at::Tensor xhat = at::empty(x.sizes(), opt), t = at::empty(x.sizes(), opt);
	Shape4 sc = shape4(xhat);
	at::Tensor sdy = at::empty({ C }, opt), sdx = at::empty({ C }, opt), negs = at::empty({ C }, opt);
	at::Tensor negm = at::empty({ C }, opt), k = at::empty({ C }, opt), k2 = at::empty({ C }, opt);
	at::Tensor dx = mask[0] ? at::empty(x.sizes(), opt) : at::Tensor();
	const int64_t csize[4] = { 1, C, 1, 1 }, cstride[4] = { C, 1, 1, 1 };
	struct maia_tensor_desc dxx = d4(x, s), dgy = d4(gy, sg), dxh = d4(xhat, sc), dt = d4(t, sc);
	struct maia_tensor_desc dsm = vec(sm), dnegm = vec(negm);
	struct maia_tensor_desc dsdy4 = d4(va_of(sdy), type, csize, cstride),
				dsdx4 = d4(va_of(sdx), type, csize, cstride);
	Job job(x);

	/* xhat = (x - mean) * invstd */
	job.add(maia_cmd_scale(job.cmdbuf(), &dsm, &dnegm, -1.0f, 0.0f), "maia_cmd_scale");
	struct maia_tensor_desc dnegm_b = chan(negm, s), dsi_b = chan(si, sc);
	job.add(maia_cmd_add(job.cmdbuf(), &dxx, &dnegm_b, &dxh, 0), "maia_cmd_add");
	job.add(maia_cmd_mul(job.cmdbuf(), &dxh, &dsi_b, &dxh, 0), "maia_cmd_mul");
	job.add(maia_cmd_reduce(job.cmdbuf(), &dgy, &dsdy4, MAIA_REDUCE_SUM, 0xd), "maia_cmd_reduce");
	job.add(maia_cmd_mul(job.cmdbuf(), &dgy, &dxh, &dt, 0), "maia_cmd_mul");
	job.add(maia_cmd_reduce(job.cmdbuf(), &dt, &dsdx4, MAIA_REDUCE_SUM, 0xd), "maia_cmd_reduce");
	if (mask[0]) {
		Shape4 sd = shape4(dx);
		struct maia_tensor_desc ddx = d4(dx, sd), dsdy = vec(sdy), dnegs = vec(negs),
					dnegs_b = chan(negs, sc), dsdx_b = chan(sdx, sc), dsi = vec(si),
					dk = vec(k), dk2 = vec(k2), dk2_b = chan(k2, sc);

		/* k2 = gamma invstd / M */
		if (w.defined()) {
			struct maia_tensor_desc dw = vec(w);

			job.add(maia_cmd_mul(job.cmdbuf(), &dw, &dsi, &dk, 0), "maia_cmd_mul");
			job.add(maia_cmd_scale(job.cmdbuf(), &dk, &dk2, (float)(1.0 / (double)M), 0.0f),
				"maia_cmd_scale");
		} else {
			job.add(maia_cmd_scale(job.cmdbuf(), &dsi, &dk2, (float)(1.0 / (double)M), 0.0f),
				"maia_cmd_scale");
		}
		/* t = M dy - sum(dy) - xhat sum(dy xhat); dx = t k2 */
		job.add(maia_cmd_scale(job.cmdbuf(), &dsdy, &dnegs, -1.0f, 0.0f), "maia_cmd_scale");
		job.add(maia_cmd_scale(job.cmdbuf(), &dgy, &dt, (float)M, 0.0f), "maia_cmd_scale");
		job.add(maia_cmd_add(job.cmdbuf(), &dt, &dnegs_b, &dt, 0), "maia_cmd_add");
		job.add(maia_cmd_mul(job.cmdbuf(), &dxh, &dsdx_b, &ddx, 0), "maia_cmd_mul");
		job.add(maia_cmd_scale(job.cmdbuf(), &ddx, &dxh, -1.0f, 0.0f), "maia_cmd_scale");
		job.add(maia_cmd_add(job.cmdbuf(), &dt, &dxh, &dt, 0), "maia_cmd_add");
		job.add(maia_cmd_mul(job.cmdbuf(), &dt, &dk2_b, &ddx, 0), "maia_cmd_mul");
	}
	job.run();
	count_device_op("native_batch_norm_backward");
	return std::make_tuple(dx, mask[1] ? sdx : at::Tensor(), mask[2] ? sdy : at::Tensor());
}

TORCH_LIBRARY_IMPL(aten, PrivateUse1, m)
{
	m.impl("native_batch_norm", native_batch_norm);
	m.impl("native_batch_norm_backward", native_batch_norm_backward);
}

} // namespace maia_torch
