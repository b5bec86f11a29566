// SPDX-License-Identifier: MIT
/*
 * Convolution and pooling on the tensor engine.
 *
 * Convolution (1-D and 2-D; stride, padding, dilation, groups, bias) is
 * im2col + one strided-batch GEMM, all in one job: the input is copied
 * (zero-padded when there is padding) and, for each kernel offset (kh, kw),
 * the strided view x[n, c, kh*dh + oh*sh, kw*dw + ow*sw] is copied by the
 * tensor engine's COPY into the column matrix cols[c][kh][kw][n][oh][ow]
 * (a descriptor with strides, no host work). Grouped as
 * [G, C/G*KH*KW, N*OH*OW], the GEMM W[G, O/G, C/G*KH*KW] @ cols gives
 * [G, O/G, N*OH*OW], and one ADD (the bias broadcast by stride 0) or COPY
 * writes it as NCHW. Depthwise convolution is the same with G = C.
 *
 * Backward: grad_weight = gy @ cols^T (TRANS_B), grad_input = col2im of
 * W^T @ gy (TRANS_A; each kernel offset's slice ADDed into a strided view
 * of the zeroed, padded gradient), grad_bias a REDUCE over N, H, W.
 *
 * Pooling: the same column copies (padding -inf for max, 0 for avg) and a
 * REDUCE (MAX or MEAN) over the kernel axis; avg-pool backward is col2im
 * of gy / (KH*KW). Adaptive average pooling whose input size is a multiple
 * of the output size is average pooling with kernel = stride = in/out.
 * max_pool2d_with_indices needs int64 indices the engine cannot produce:
 * it takes the CPU fallback; aten::max_pool2d without autograd (inference)
 * runs on the device (registered for PrivateUse1 and AutogradPrivateUse1).
 *
 * Anything else (3-D, transposed convolution, other dtypes, ceil_mode that
 * changes the output size, count_include_pad=False with padding) runs on
 * the CPU, counted as a fallback (strict mode raises).
 */
#include <ATen/core/LegacyTypeDispatch.h>
#include <ATen/native/Pool.h>
#include <torch/library.h>

#include <cmath>
#include <cstring>
#include <limits>

#include "tensor_desc.h"

namespace maia_torch {

static at::Tensor to_cpu(const at::Tensor &t)
{
	return t.defined() ? t.to(at::kCPU) : t;
}

static at::Tensor back_to(const at::Tensor &t, const at::Device &dev)
{
	return t.defined() ? t.to(dev) : t;
}

/* A descriptor of the elements at va with these sizes and strides (elements). */
static struct maia_tensor_desc rawdesc(uint64_t va, at::ScalarType type,
				       std::initializer_list<int64_t> sizes,
				       std::initializer_list<int64_t> strides)
{
	struct maia_tensor_desc d = {};
	size_t i = 0;

	d.addr = va;
	d.dtype = (uint8_t)maia_dtype(type);
	d.rank = (uint8_t)sizes.size();
	for (int64_t s : sizes)
		d.shape[i++] = (uint32_t)s;
	i = 0;
	for (int64_t s : strides)
		d.strides[i++] = (uint64_t)s;
	return d;
}

static bool dims_fit(std::initializer_list<int64_t> dims)
{
	for (int64_t d : dims)
		if (d <= 0 || d > (int64_t)MAIA_TENSOR_MAX_DIM)
			return false;
	return true;
}

/* Fill a contiguous tensor with one value (pattern repeats every 4 bytes). */
static void fill(Job &job, const at::Tensor &t, double value)
{
	at::Tensor one = at::full({ 2 }, value, at::TensorOptions().dtype(t.scalar_type()));
	uint32_t pattern;
	size_t bytes = (t.nbytes() + 3) & ~(size_t)3;	/* blocks are >= 512 bytes */

	std::memcpy(&pattern, one.data_ptr(), 4);
	if (t.itemsize() == 4 || t.itemsize() == 2)
		job.add(maia_cmd_fill(job.cmdbuf(), va_of(t), bytes, pattern), "maia_cmd_fill");
	else
		TORCH_CHECK(false, "maia: fill of a ", t.scalar_type(), " tensor");
}

/* The 2-D geometry of a convolution or pooling window over a 4-D input. */
struct Geom {
	int64_t N, C, H, W;
	int64_t KH, KW, sh, sw, ph, pw, dh, dw;
	int64_t OH, OW;
	int64_t Hp() const { return H + 2 * ph; }
	int64_t Wp() const { return W + 2 * pw; }
	int64_t KK() const { return KH * KW; }
	int64_t M() const { return N * OH * OW; }
};

/* Input element strides as 4-D (a 1-D input gets H = 1). */
static std::array<int64_t, 4> strides4(const at::Tensor &x)
{
	if (x.dim() == 3)
		return { x.stride(0), x.stride(1), x.size(2) * x.stride(2), x.stride(2) };
	return { x.stride(0), x.stride(1), x.stride(2), x.stride(3) };
}

/*
 * Where the windows read from: x itself (no padding), or a zero-padded
 * (pad_value) contiguous copy made in job. Returns the source VA and strides.
 */
struct Source {
	at::Tensor keep;
	uint64_t va;
	std::array<int64_t, 4> st;
};

static Source padded(Job &job, const at::Tensor &x, const Geom &g, double pad_value)
{
	Source s;

	if (!g.ph && !g.pw) {
		s.va = va_of(x);
		s.st = strides4(x);
		return s;
	}
	int64_t hp = g.Hp(), wp = g.Wp();
	s.keep = at::empty({ g.N, g.C, hp, wp }, x.options());
	s.va = va_of(s.keep);
	s.st = { g.C * hp * wp, hp * wp, wp, 1 };
	fill(job, s.keep, pad_value);
	std::array<int64_t, 4> xs = strides4(x);
	size_t isz = x.itemsize();
	struct maia_tensor_desc src = rawdesc(va_of(x), x.scalar_type(), { g.N, g.C, g.H, g.W },
					      { xs[0], xs[1], xs[2], xs[3] });
	struct maia_tensor_desc dst = rawdesc(s.va + (uint64_t)((g.ph * wp + g.pw) * isz), x.scalar_type(),
					      { g.N, g.C, g.H, g.W }, { s.st[0], s.st[1], s.st[2], 1 });
	job.add(maia_cmd_tensor_copy(job.cmdbuf(), &src, &dst), "maia_cmd_tensor_copy");
	return s;
}

/*
 * cols[c][k][n][oh][ow] (k = kh*KW + kw) from the source windows: one COPY
 * per kernel offset. cols_st gives the column layout's strides for (n, c)
 * and k; oh and ow are innermost (OW, 1).
 */
static void im2col(Job &job, const Source &s, at::ScalarType type, const Geom &g, uint64_t cols_va,
		   int64_t stride_n, int64_t stride_c, int64_t stride_k)
{
	size_t isz = c10::elementSize(type);

	for (int64_t kh = 0; kh < g.KH; kh++)
		for (int64_t kw = 0; kw < g.KW; kw++) {
			int64_t k = kh * g.KW + kw;
			int64_t off = kh * g.dh * s.st[2] + kw * g.dw * s.st[3];
			struct maia_tensor_desc src = rawdesc(s.va + (uint64_t)(off * (int64_t)isz), type,
							      { g.N, g.C, g.OH, g.OW },
							      { s.st[0], s.st[1], s.st[2] * g.sh,
								s.st[3] * g.sw });
			struct maia_tensor_desc dst = rawdesc(cols_va + (uint64_t)(k * stride_k * (int64_t)isz),
							      type, { g.N, g.C, g.OH, g.OW },
							      { stride_n, stride_c, g.OW, 1 });
			job.add(maia_cmd_tensor_copy(job.cmdbuf(), &src, &dst), "maia_cmd_tensor_copy");
		}
}

/*
 * The padded gradient dxp [N, C, Hp, Wp] (zeroed in job) plus, for each
 * kernel offset, the slice of cols at k (layout as for im2col) ADDed into
 * its window view.
 */
static void col2im(Job &job, const at::Tensor &dxp, const Geom &g, uint64_t cols_va,
		   int64_t stride_n, int64_t stride_c, int64_t stride_k)
{
	at::ScalarType type = dxp.scalar_type();
	size_t isz = dxp.itemsize();
	int64_t hp = g.Hp(), wp = g.Wp();

	fill(job, dxp, 0.0);
	for (int64_t kh = 0; kh < g.KH; kh++)
		for (int64_t kw = 0; kw < g.KW; kw++) {
			int64_t k = kh * g.KW + kw;
			struct maia_tensor_desc win = rawdesc(va_of(dxp) + (uint64_t)((kh * g.dh * wp + kw * g.dw) * (int64_t)isz),
							      type, { g.N, g.C, g.OH, g.OW },
							      { g.C * hp * wp, hp * wp, g.sh * wp, g.sw });
			struct maia_tensor_desc y = rawdesc(cols_va + (uint64_t)(k * stride_k * (int64_t)isz), type,
							    { g.N, g.C, g.OH, g.OW },
							    { stride_n, stride_c, g.OW, 1 });
			job.add(maia_cmd_add(job.cmdbuf(), &win, &y, &win, 0), "maia_cmd_add");
		}
}

/* The interior (unpadded part) of dxp as a new contiguous tensor, or dxp itself. */
static at::Tensor unpad(Job &job, const at::Tensor &dxp, const Geom &g)
{
	if (!g.ph && !g.pw)
		return dxp;
	at::Tensor out = at::empty({ g.N, g.C, g.H, g.W }, dxp.options());
	int64_t hp = g.Hp(), wp = g.Wp();
	struct maia_tensor_desc src = rawdesc(va_of(dxp) + (uint64_t)((g.ph * wp + g.pw) * (int64_t)dxp.itemsize()),
					      dxp.scalar_type(), { g.N, g.C, g.H, g.W },
					      { g.C * hp * wp, hp * wp, wp, 1 }),
				dst = desc(out);

	job.add(maia_cmd_tensor_copy(job.cmdbuf(), &src, &dst), "maia_cmd_tensor_copy");
	return out;
}

/* ---- convolution ------------------------------------------------------------- */

static int64_t at_or_last(at::IntArrayRef v, size_t i)
{
	return v.empty() ? 0 : v[std::min(i, v.size() - 1)];
}

/* The geometry of a 1-D/2-D convolution the device can run, or false. */
static bool conv_geom(const at::Tensor &x, const at::Tensor &w, const at::Tensor &bias,
		      at::IntArrayRef stride, at::IntArrayRef padding, at::IntArrayRef dilation,
		      bool transposed, int64_t groups, Geom &g)
{
	if (transposed || groups < 1 || (x.dim() != 3 && x.dim() != 4) || w.dim() != x.dim())
		return false;
	if (!on_device(x) || !on_device(w, x) || !engine_float(x.scalar_type()) ||
	    w.scalar_type() != x.scalar_type() || x.numel() == 0 || w.numel() == 0)
		return false;
	if (bias.defined() && (!on_device(bias, x) || bias.scalar_type() != x.scalar_type() ||
			       bias.dim() != 1 || bias.size(0) != w.size(0)))
		return false;
	bool one_d = x.dim() == 3;
	g.N = x.size(0);
	g.C = x.size(1);
	g.H = one_d ? 1 : x.size(2);
	g.W = x.size(-1);
	g.KH = one_d ? 1 : w.size(2);
	g.KW = w.size(-1);
	g.sh = one_d ? 1 : at_or_last(stride, 0);
	g.sw = at_or_last(stride, one_d ? 0 : 1);
	g.ph = one_d ? 0 : at_or_last(padding, 0);
	g.pw = at_or_last(padding, one_d ? 0 : 1);
	g.dh = one_d ? 1 : at_or_last(dilation, 0);
	g.dw = at_or_last(dilation, one_d ? 0 : 1);
	if (g.sh < 1 || g.sw < 1 || g.dh < 1 || g.dw < 1 || g.ph < 0 || g.pw < 0)
		return false;
	if (g.C % groups || w.size(0) % groups || w.size(1) * groups != g.C)
		return false;
	g.OH = (g.Hp() - g.dh * (g.KH - 1) - 1) / g.sh + 1;
	g.OW = (g.Wp() - g.dw * (g.KW - 1) - 1) / g.sw + 1;
	if (g.OH < 1 || g.OW < 1)
		return false;
	int64_t cgkk = g.C / groups * g.KK();
	return dims_fit({ g.N, g.C, g.Hp(), g.Wp(), g.M(), cgkk, w.size(0), groups, g.C * g.KK() });
}

static std::vector<int64_t> out_shape(const at::Tensor &x, const Geom &g, int64_t channels)
{
	if (x.dim() == 3)
		return { g.N, channels, g.OW };
	return { g.N, channels, g.OH, g.OW };
}

/* W as [G, O/G, C/G*KH*KW] (contiguous), the GEMM's A. */
static struct maia_tensor_desc weight_desc(const at::Tensor &wc, int64_t groups, int64_t og, int64_t cgkk)
{
	return rawdesc(va_of(wc), wc.scalar_type(), { groups, og, cgkk }, { og * cgkk, cgkk, 1 });
}

static at::Tensor conv_forward(const at::Tensor &x, const at::Tensor &w, const at::Tensor &bias,
			       const Geom &g, int64_t groups)
{
	at::ScalarType type = x.scalar_type();
	int64_t O = w.size(0), og = O / groups, cgkk = g.C / groups * g.KK(), M = g.M();
	int64_t ohow = g.OH * g.OW;
	at::Tensor wc = w.contiguous();
	at::Tensor cols = at::empty({ g.C * g.KK() * M }, x.options());
	at::Tensor tmp = at::empty({ groups * og * M }, x.options());
	at::Tensor out = at::empty(out_shape(x, g, O), x.options());
	Job job(x);
	Source s = padded(job, x, g, 0.0);

	im2col(job, s, type, g, va_of(cols), ohow, g.KK() * M, M);
	struct maia_tensor_desc da = weight_desc(wc, groups, og, cgkk),
				db = rawdesc(va_of(cols), type, { groups, cgkk, M }, { cgkk * M, M, 1 }),
				dc = rawdesc(va_of(tmp), type, { groups, og, M }, { og * M, M, 1 });
	struct maia_gemm_args ga = {};

	ga.a = &da;
	ga.b = &db;
	ga.c = &dc;
	ga.alpha = 1.0f;
	job.add(maia_cmd_gemm_ex(job.cmdbuf(), &ga), "maia_cmd_gemm_ex");
	/* tmp [G][og][n][oh][ow] = channel o = g*og + og' at o * M: NCHW by strides. */
	struct maia_tensor_desc src = rawdesc(va_of(tmp), type, { g.N, O, g.OH, g.OW },
					      { ohow, M, g.OW, 1 }),
				dst = rawdesc(va_of(out), type, { g.N, O, g.OH, g.OW },
					      { O * ohow, ohow, g.OW, 1 });
	if (bias.defined()) {
		struct maia_tensor_desc db4 = rawdesc(va_of(bias), type, { g.N, O, g.OH, g.OW },
						      { 0, bias.stride(0), 0, 0 });

		job.add(maia_cmd_add(job.cmdbuf(), &src, &db4, &dst, 0), "maia_cmd_add");
	} else {
		job.add(maia_cmd_tensor_copy(job.cmdbuf(), &src, &dst), "maia_cmd_tensor_copy");
	}
	job.run();
	count_device_op("convolution");
	return out;
}

static at::Tensor convolution(const at::Tensor &x, const at::Tensor &w,
			      const c10::optional<at::Tensor> &bias_opt, at::IntArrayRef stride,
			      at::IntArrayRef padding, at::IntArrayRef dilation, bool transposed,
			      at::IntArrayRef output_padding, int64_t groups)
{
	at::Tensor bias = bias_opt.value_or(at::Tensor());
	Geom g;

	if (conv_geom(x, w, bias, stride, padding, dilation, transposed, groups, g))
		return conv_forward(x, w, bias, g, groups);
	count_fallback("aten::convolution_overrideable");
	return at::convolution(to_cpu(x), to_cpu(w), to_cpu(bias), stride, padding, dilation,
			       transposed, output_padding, groups)
		.to(x.device());
}

static std::tuple<at::Tensor, at::Tensor, at::Tensor>
convolution_backward(const at::Tensor &gy, const at::Tensor &x, const at::Tensor &w,
		     at::IntArrayRef stride, at::IntArrayRef padding, at::IntArrayRef dilation,
		     bool transposed, at::IntArrayRef output_padding, int64_t groups,
		     std::array<bool, 3> mask)
{
	Geom g;
	bool ok = conv_geom(x, w, at::Tensor(), stride, padding, dilation, transposed, groups, g) &&
		  on_device(gy, x) && gy.scalar_type() == x.scalar_type() && gy.dim() == x.dim();

	if (ok)
		ok = gy.sizes() == at::IntArrayRef(out_shape(x, g, w.size(0)));
	if (!ok) {
		count_fallback("aten::convolution_backward_overrideable");
		auto bias_sizes = std::vector<int64_t>{ w.size(0) };
		auto r = at::convolution_backward(to_cpu(gy), to_cpu(x), to_cpu(w), bias_sizes, stride,
						  padding, dilation, transposed, output_padding, groups,
						  mask);
		return std::make_tuple(back_to(std::get<0>(r), x.device()),
				       back_to(std::get<1>(r), x.device()),
				       back_to(std::get<2>(r), x.device()));
	}
	at::ScalarType type = x.scalar_type();
	int64_t O = w.size(0), og = O / groups, cgkk = g.C / groups * g.KK(), M = g.M();
	int64_t ohow = g.OH * g.OW;
	std::array<int64_t, 4> gs = strides4(gy);
	at::Tensor gi, gw, gb, cols, dcols, dxp;
	at::Tensor wc = w.contiguous();
	at::Tensor gyt = at::empty({ groups * og * M }, x.options());
	Job job(x);

	/* gy as [G, og, N*OH*OW]. */
	struct maia_tensor_desc gsrc = rawdesc(va_of(gy), type, { g.N, O, g.OH, g.OW },
					       { gs[0], gs[1], gs[2], gs[3] }),
				gdst = rawdesc(va_of(gyt), type, { g.N, O, g.OH, g.OW },
					       { ohow, M, g.OW, 1 });
	job.add(maia_cmd_tensor_copy(job.cmdbuf(), &gsrc, &gdst), "maia_cmd_tensor_copy");
	struct maia_tensor_desc dgy = rawdesc(va_of(gyt), type, { groups, og, M }, { og * M, M, 1 });
	if (mask[1]) {
		cols = at::empty({ g.C * g.KK() * M }, x.options());
		gw = at::empty(w.sizes(), w.options());
		Source s = padded(job, x, g, 0.0);

		im2col(job, s, type, g, va_of(cols), ohow, g.KK() * M, M);
		struct maia_tensor_desc db = rawdesc(va_of(cols), type, { groups, cgkk, M },
						     { cgkk * M, M, 1 }),
					dc = weight_desc(gw, groups, og, cgkk);
		struct maia_gemm_args ga = {};

		ga.a = &dgy;
		ga.b = &db;
		ga.c = &dc;
		ga.alpha = 1.0f;
		ga.flags = MAIA_GEMM_F_TRANS_B;
		job.add(maia_cmd_gemm_ex(job.cmdbuf(), &ga), "maia_cmd_gemm_ex");
	}
	if (mask[0]) {
		/* Commands run in order: the weight GEMM has read cols before this reuses them. */
		dcols = cols.defined() ? cols : at::empty({ g.C * g.KK() * M }, x.options());
		dxp = at::empty({ g.N, g.C, g.Hp(), g.Wp() }, x.options());
		struct maia_tensor_desc da = weight_desc(wc, groups, og, cgkk),
					dc = rawdesc(va_of(dcols), type, { groups, cgkk, M },
						     { cgkk * M, M, 1 });
		struct maia_gemm_args ga = {};

		ga.a = &da;
		ga.b = &dgy;
		ga.c = &dc;
		ga.alpha = 1.0f;
		ga.flags = MAIA_GEMM_F_TRANS_A;
		job.add(maia_cmd_gemm_ex(job.cmdbuf(), &ga), "maia_cmd_gemm_ex");
		col2im(job, dxp, g, va_of(dcols), ohow, g.KK() * M, M);
		gi = unpad(job, dxp, g);
		if (x.dim() == 3)
			gi = gi.view(x.sizes());
	}
	if (mask[2]) {
		at::Tensor sum = at::empty({ 1, O, 1, 1 }, x.options());
		struct maia_tensor_desc dsum = desc(sum);

		job.add(maia_cmd_reduce(job.cmdbuf(), &gsrc, &dsum, MAIA_REDUCE_SUM, 0xd),
			"maia_cmd_reduce");
		gb = sum.view({ O });
	}
	job.run();
	count_device_op("convolution_backward");
	return std::make_tuple(gi, gw, gb);
}

/* ---- pooling --------------------------------------------------------------------- */

/* Pooling geometry over a 3-D (C, H, W) or 4-D input; false when the device cannot. */
static bool pool_geom(const at::Tensor &x, at::IntArrayRef k, at::IntArrayRef stride,
		      at::IntArrayRef padding, at::IntArrayRef dilation, bool ceil_mode, Geom &g)
{
	if (!on_device(x) || !engine_float(x.scalar_type()) || (x.dim() != 3 && x.dim() != 4) ||
	    x.numel() == 0 || k.empty())
		return false;
	bool batched = x.dim() == 4;
	g.N = batched ? x.size(0) : 1;
	g.C = x.size(batched ? 1 : 0);
	g.H = x.size(-2);
	g.W = x.size(-1);
	g.KH = at_or_last(k, 0);
	g.KW = at_or_last(k, 1);
	g.sh = stride.empty() ? g.KH : at_or_last(stride, 0);
	g.sw = stride.empty() ? g.KW : at_or_last(stride, 1);
	g.ph = at_or_last(padding, 0);
	g.pw = at_or_last(padding, 1);
	g.dh = dilation.empty() ? 1 : at_or_last(dilation, 0);
	g.dw = dilation.empty() ? 1 : at_or_last(dilation, 1);
	if (g.KH < 1 || g.KW < 1 || g.sh < 1 || g.sw < 1 || g.dh < 1 || g.dw < 1 || g.ph < 0 ||
	    g.pw < 0 || 2 * g.ph > g.KH || 2 * g.pw > g.KW)
		return false;
	g.OH = at::native::pooling_output_shape<int64_t>(g.H, g.KH, g.ph, g.sh, g.dh, ceil_mode);
	g.OW = at::native::pooling_output_shape<int64_t>(g.W, g.KW, g.pw, g.sw, g.dw, ceil_mode);
	/* ceil_mode only when it gives the floor size (no window past the padding). */
	if (ceil_mode &&
	    (g.OH != at::native::pooling_output_shape<int64_t>(g.H, g.KH, g.ph, g.sh, g.dh, false) ||
	     g.OW != at::native::pooling_output_shape<int64_t>(g.W, g.KW, g.pw, g.sw, g.dw, false)))
		return false;
	return g.OH >= 1 && g.OW >= 1 && dims_fit({ g.N * g.C, g.Hp(), g.Wp(), g.KK() });
}

/* 4-D strides of a pooling input (an unbatched input gets N = 1). */
static at::Tensor as4(const at::Tensor &x)
{
	return x.dim() == 4 ? x : x.unsqueeze(0);
}

/* out[n, c, oh, ow] = op over the window (MAIA_REDUCE_MAX or MEAN). */
static at::Tensor pool_forward(const at::Tensor &x, const Geom &g, uint32_t op)
{
	at::ScalarType type = x.scalar_type();
	int64_t kk = g.KK(), ohow = g.OH * g.OW;
	at::Tensor x4 = as4(x);
	at::Tensor cols = at::empty({ g.N * g.C * ohow * kk }, x.options());
	at::Tensor out = at::empty({ g.N, g.C, g.OH, g.OW }, x.options());
	Job job(x);
	Source s = padded(job, x4, g, op == MAIA_REDUCE_MAX ? -std::numeric_limits<double>::infinity() : 0.0);

	/* cols [n][c][oh][ow][k]: strides n C*ohow*kk, c ohow*kk, k 1 (oh, ow scaled by kk below). */
	size_t isz = x.itemsize();
	for (int64_t kh = 0; kh < g.KH; kh++)
		for (int64_t kw = 0; kw < g.KW; kw++) {
			int64_t k = kh * g.KW + kw;
			int64_t off = kh * g.dh * s.st[2] + kw * g.dw * s.st[3];
			struct maia_tensor_desc src = rawdesc(s.va + (uint64_t)(off * (int64_t)isz), type,
							      { g.N, g.C, g.OH, g.OW },
							      { s.st[0], s.st[1], s.st[2] * g.sh, s.st[3] * g.sw });
			struct maia_tensor_desc dst = rawdesc(va_of(cols) + (uint64_t)(k * (int64_t)isz), type,
							      { g.N, g.C, g.OH, g.OW },
							      { g.C * ohow * kk, ohow * kk, g.OW * kk, kk });
			job.add(maia_cmd_tensor_copy(job.cmdbuf(), &src, &dst), "maia_cmd_tensor_copy");
		}
	struct maia_tensor_desc dcols = rawdesc(va_of(cols), type, { g.N * g.C, ohow, kk }, { ohow * kk, kk, 1 }),
				dout = rawdesc(va_of(out), type, { g.N * g.C, ohow, 1 }, { ohow, 1, 1 });
	job.add(maia_cmd_reduce(job.cmdbuf(), &dcols, &dout, op, 4), "maia_cmd_reduce");
	job.run();
	return x.dim() == 4 ? out : out.squeeze(0);
}

/* grad of average pooling (count_include_pad): col2im of gy / (KH*KW). */
static at::Tensor avg_pool_backward(const at::Tensor &gy, const at::Tensor &x, const Geom &g,
				    double divisor)
{
	at::ScalarType type = x.scalar_type();
	at::Tensor gy4 = as4(gy);
	at::Tensor gys = at::empty({ g.N, g.C, g.OH, g.OW }, x.options());
	at::Tensor dxp = at::empty({ g.N, g.C, g.Hp(), g.Wp() }, x.options());
	std::array<int64_t, 4> gs = strides4(gy4);
	Job job(x);
	struct maia_tensor_desc dgy = rawdesc(va_of(gy4), type, { g.N, g.C, g.OH, g.OW },
					      { gs[0], gs[1], gs[2], gs[3] }),
				dgys = desc(gys);

	job.add(maia_cmd_scale(job.cmdbuf(), &dgy, &dgys, (float)(1.0 / divisor), 0.0f),
		"maia_cmd_scale");
	/* Every kernel offset reads the same gys: its k stride is 0. */
	col2im(job, dxp, g, va_of(gys), g.C * g.OH * g.OW, g.OH * g.OW, 0);
	at::Tensor gi = unpad(job, dxp, g);
	job.run();
	return x.dim() == 4 ? gi : gi.squeeze(0);
}

static bool avg_ok(const at::Tensor &x, at::IntArrayRef k, at::IntArrayRef stride,
		   at::IntArrayRef padding, bool ceil_mode, bool count_include_pad,
		   c10::optional<int64_t> divisor, Geom &g)
{
	return !divisor && pool_geom(x, k, stride, padding, {}, ceil_mode, g) &&
	       (count_include_pad || (g.ph == 0 && g.pw == 0));
}

static at::Tensor avg_pool2d(const at::Tensor &x, at::IntArrayRef k, at::IntArrayRef stride,
			     at::IntArrayRef padding, bool ceil_mode, bool count_include_pad,
			     c10::optional<int64_t> divisor)
{
	Geom g;

	if (!avg_ok(x, k, stride, padding, ceil_mode, count_include_pad, divisor, g)) {
		count_fallback("aten::avg_pool2d");
		return at::avg_pool2d(to_cpu(x), k, stride, padding, ceil_mode, count_include_pad,
				      divisor)
			.to(x.device());
	}
	at::Tensor out = pool_forward(x, g, MAIA_REDUCE_MEAN);
	count_device_op("avg_pool2d");
	return out;
}

static at::Tensor avg_pool2d_backward(const at::Tensor &gy, const at::Tensor &x, at::IntArrayRef k,
				      at::IntArrayRef stride, at::IntArrayRef padding, bool ceil_mode,
				      bool count_include_pad, c10::optional<int64_t> divisor)
{
	Geom g;

	if (!avg_ok(x, k, stride, padding, ceil_mode, count_include_pad, divisor, g) ||
	    !on_device(gy, x) || gy.scalar_type() != x.scalar_type() || gy.dim() != x.dim()) {
		count_fallback("aten::avg_pool2d_backward");
		return at::avg_pool2d_backward(to_cpu(gy), to_cpu(x), k, stride, padding, ceil_mode,
					       count_include_pad, divisor)
			.to(x.device());
	}
	at::Tensor gi = avg_pool_backward(gy, x, g, (double)g.KK());
	count_device_op("avg_pool2d_backward");
	return gi;
}

/* Adaptive average pooling as average pooling, when in is a multiple of out. */
static bool adaptive_geom(const at::Tensor &x, at::IntArrayRef out_size, Geom &g)
{
	if (out_size.size() != 2 || (x.dim() != 3 && x.dim() != 4) || out_size[0] < 1 ||
	    out_size[1] < 1)
		return false;
	int64_t h = x.size(-2), w = x.size(-1);
	if (h % out_size[0] || w % out_size[1])
		return false;
	int64_t kh = h / out_size[0], kw = w / out_size[1];
	std::array<int64_t, 2> k = { kh, kw };
	return pool_geom(x, k, k, std::array<int64_t, 2>{ 0, 0 }, {}, false, g);
}

static at::Tensor adaptive_avg_pool2d(const at::Tensor &x, c10::SymIntArrayRef out_sym)
{
	std::vector<int64_t> out_size;
	Geom g;

	for (const c10::SymInt &s : out_sym)
		out_size.push_back(s.expect_int());
	if (!adaptive_geom(x, out_size, g)) {
		count_fallback("aten::_adaptive_avg_pool2d");
		return at::_adaptive_avg_pool2d(to_cpu(x), out_size).to(x.device());
	}
	at::Tensor out = pool_forward(x, g, MAIA_REDUCE_MEAN);
	count_device_op("_adaptive_avg_pool2d");
	return out;
}

static at::Tensor adaptive_avg_pool2d_backward(const at::Tensor &gy, const at::Tensor &x)
{
	Geom g;
	std::vector<int64_t> out_size = { gy.size(-2), gy.size(-1) };

	if (!adaptive_geom(x, out_size, g) || !on_device(gy, x) || gy.scalar_type() != x.scalar_type() ||
	    gy.dim() != x.dim()) {
		count_fallback("aten::_adaptive_avg_pool2d_backward");
		return at::_adaptive_avg_pool2d_backward(to_cpu(gy), to_cpu(x)).to(x.device());
	}
	at::Tensor gi = avg_pool_backward(gy, x, g, (double)g.KK());
	count_device_op("_adaptive_avg_pool2d_backward");
	return gi;
}

/* aten::max_pool2d below autograd (no gradient wanted): values on the device. */
static at::Tensor device_max_pool2d(const at::Tensor &x, at::IntArrayRef k, at::IntArrayRef stride,
			     at::IntArrayRef padding, at::IntArrayRef dilation, bool ceil_mode)
{
	Geom g;

	if (!pool_geom(x, k, stride, padding, dilation, ceil_mode, g))
		return std::get<0>(at::max_pool2d_with_indices(x, k, stride, padding, dilation, ceil_mode));
	at::Tensor out = pool_forward(x, g, MAIA_REDUCE_MAX);
	count_device_op("max_pool2d");
	return out;
}

/*
 * aten::max_pool2d at the autograd key: with a gradient to record, the
 * differentiable max_pool2d_with_indices (the CPU fallback gives the
 * indices); without, the device kernel.
 */
static at::Tensor max_pool2d_autograd(const at::Tensor &x, at::IntArrayRef k, at::IntArrayRef stride,
				      at::IntArrayRef padding, at::IntArrayRef dilation, bool ceil_mode)
{
	if (at::GradMode::is_enabled() && x.requires_grad())
		return std::get<0>(at::max_pool2d_with_indices(x, k, stride, padding, dilation, ceil_mode));
	at::AutoDispatchBelowADInplaceOrView guard;
	return device_max_pool2d(x, k, stride, padding, dilation, ceil_mode);
}

TORCH_LIBRARY_IMPL(aten, PrivateUse1, m)
{
	m.impl("convolution_overrideable", convolution);
	m.impl("convolution_backward_overrideable", convolution_backward);
	m.impl("avg_pool2d", avg_pool2d);
	m.impl("avg_pool2d_backward", avg_pool2d_backward);
	m.impl("_adaptive_avg_pool2d", adaptive_avg_pool2d);
	m.impl("_adaptive_avg_pool2d_backward", adaptive_avg_pool2d_backward);
	m.impl("max_pool2d", device_max_pool2d);
}

TORCH_LIBRARY_IMPL(aten, AutogradPrivateUse1, m)
{
	m.impl("max_pool2d", max_pool2d_autograd);
}

} // namespace maia_torch
