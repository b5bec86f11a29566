// SPDX-License-Identifier: MIT
/*
 * max_pool2d_with_indices as a TVP program: what torch calls for max
 * pooling when a gradient is to be recorded (conv.cpp's max_pool2d, on the
 * engine, serves inference), so a CNN's training step keeps its pooling on
 * the device; the backward is ops_index.cpp's scatter of the gradient by
 * these indices.
 *
 * One lane per output element: it walks its window (the kernel offsets are
 * a scalar loop), skipping the padding, and keeps the first element that
 * is greater than the maximum so far or NaN, as CPU torch does (so the last
 * NaN of a window wins, and a window of -inf answers its first element).
 * The indices are int64 offsets h W + w within each plane, as CPU torch's.
 */
#include <torch/library.h>

#include "ops_common.h"

namespace maia_torch {
namespace ops {

/*
 * maxpool: s1 = x (contiguous [planes, H, W]), s2 = out, s3 = indices
 * (int64), s4 = n (output elements), then (W-direction | H-direction << 32):
 * s5 = OW | OH, s6 = W | H, s7 = kernel, s8 = stride, s9 = padding, s10 =
 * dilation.
 */
static std::string maxpool(const std::string &t)
{
	auto lo_hi = [](const char *s, int vlo, int vhi) {
		return "\tvsplat v" + std::to_string(vlo) + ", " + s + "\n\tshr s22, " + s + ", s30\n\tvsplat v" +
		       std::to_string(vhi) + ", s22\n";
	};

	return "\tpid s20, 0\n\tmuli s21, s20, 1024\n\tli s30, 32\n"
	       "\tviota v31, 0\n\tvsplat v30, s21\n\tviadd v28, v31, v30\n"
	       "\tvsplat v30, s4\n\tvicmp v29, v28, v30, lt\n" +
	       lo_hi("s5", 1, 2) + lo_hi("s6", 3, 4) + lo_hi("s8", 5, 6) + lo_hi("s9", 7, 8) + lo_hi("s10", 9, 10) +
	       "\tvirem v11, v28, v1\t# ow\n\tvidiv v12, v28, v1\n\tvirem v13, v12, v2\t# oh\n"
	       "\tvidiv v14, v12, v2\t# the plane\n"
	       "\tvimul v15, v3, v4\n\tvimul v15, v14, v15\t# the plane's first element\n"
	       "\tvimul v16, v13, v6\n\tvisub v16, v16, v8\t# the window's first row\n"
	       "\tvimul v17, v11, v5\n\tvisub v17, v17, v7\t# its first column\n"
	       "\tvsplati v18, -inf\t# the maximum\n\tvsplati v19, -1\t# its index\n"
	       "\tvsplati v27, -1\n\tvsplati v26, 0\n"
	       "\tshr s23, s7, s30\t# kH\n\tli s24, 0\n"
	       "rows:\n\tbge s24, s23, done\n"
	       "\tvsplat v20, s24\n\tvimul v20, v20, v10\n\tviadd v20, v16, v20\t# ih\n"
	       "\tvicmp v21, v20, v26, ge\n\tvicmp v22, v20, v4, lt\n\tvand v21, v21, v22\n\tvand v21, v21, v29\n"
	       "\tshl s25, s7, s30\n\tshr s25, s25, s30\t# kW\n\tli s26, 0\n"
	       "cols:\n\tbge s26, s25, nextrow\n"
	       "\tvsplat v22, s26\n\tvimul v22, v22, v9\n\tviadd v22, v17, v22\t# iw\n"
	       "\tvicmp v23, v22, v26, ge\n\tvicmp v24, v22, v3, lt\n\tvand v23, v23, v24\n"
	       "\tvand v23, v23, v21\t# inside the image\n"
	       "\tvimul v24, v20, v3\n\tviadd v24, v24, v22\t# h W + w\n"
	       "\tviadd v25, v24, v15\n\tvld v25, s1, v25, " + t + ", v23\n"
	       "\tvicmp v30, v19, v27, eq\n\tvand v30, v30, v23\n\tvsel v19, v24, v19, v30\t# the first one\n"
	       "\tvfcmp v30, v25, v18, gt\n\tvfcmp v0, v25, v25, ne\n\tvor v30, v30, v0\n\tvand v30, v30, v23\n"
	       "\tvsel v18, v25, v18, v30\n\tvsel v19, v24, v19, v30\n"
	       "\taddi s26, s26, 1\n\tjmp cols\n"
	       "nextrow:\n\taddi s24, s24, 1\n\tjmp rows\n"
	       "done:\n\tvst v18, s2, v28, " + t + ", v29\n"
	       "\tviadd v24, v28, v28\n\tvst v19, s3, v24, i32, v29\n"
	       "\tvsplati v0, 1\n\tviadd v24, v24, v0\n\tvst v26, s3, v24, i32, v29\t# high words 0\n\thalt\n";
}

static std::string family(const std::string &, const std::string &t)
{
	return t == "f32" || t == "bf16" || t == "f16" ? maxpool(t) : "";
}

[[maybe_unused]] static const bool registered = tvp::add_family({ "maxpool" }, family);

/* CPU torch's pooling output size (ATen/native/Pool.h's pooling_output_shape); < 1 when the input is too small. */
static int64_t out_size(int64_t in, int64_t k, int64_t pad, int64_t stride, int64_t dil, bool ceil_mode)
{
	int64_t num = in + 2 * pad - dil * (k - 1) - 1 + (ceil_mode ? stride - 1 : 0);
	int64_t o = (num >= 0 ? num / stride : -((-num + stride - 1) / stride)) + 1;

	if (ceil_mode && (o - 1) * stride >= in + pad)
		o--;
	return o;
}

/* v's (H, W) pair: one value for both, or two. */
static bool pair(at::IntArrayRef v, int64_t dflt, int64_t *h, int64_t *w)
{
	if (v.empty()) {
		*h = *w = dflt;
		return dflt > 0;
	}
	if (v.size() > 2)
		return false;
	*h = v[0];
	*w = v.size() == 2 ? v[1] : v[0];
	return true;
}

static std::tuple<at::Tensor, at::Tensor> max_pool2d_with_indices(const at::Tensor &x, at::IntArrayRef kernel_size,
								  at::IntArrayRef stride, at::IntArrayRef padding,
								  at::IntArrayRef dilation, bool ceil_mode)
{
	int64_t kh = 0, kw = 0, sh = 0, sw = 0, ph = 0, pw = 0, dh = 0, dw = 0;
	bool ok = on_device(x) && tvp::elem(x.scalar_type()) && (x.dim() == 3 || x.dim() == 4) &&
		  !kernel_size.empty() && pair(kernel_size, 0, &kh, &kw) && kh > 0 && kw > 0 &&
		  pair(stride, 0, &sh, &sw) && (stride.empty() || (sh > 0 && sw > 0)) &&
		  pair(padding, 0, &ph, &pw) && pair(dilation, 1, &dh, &dw) && dh > 0 && dw > 0 && ph >= 0 &&
		  pw >= 0 && x.numel() > 0 && x.numel() < ((int64_t)1 << 31);
	bool failed = false;

	if (ok && stride.empty()) {
		sh = kh;
		sw = kw;
	}
	ok = ok && ph <= ((kh - 1) * dh + 1) / 2 && pw <= ((kw - 1) * dw + 1) / 2;
	if (ok) {
		int64_t h = x.size(-2), w = x.size(-1);
		int64_t oh = out_size(h, kh, ph, sh, dh, ceil_mode), ow = out_size(w, kw, pw, sw, dw, ceil_mode);
		std::vector<int64_t> shape = x.sizes().vec();

		shape[shape.size() - 2] = oh;
		shape[shape.size() - 1] = ow;
		if (oh >= 1 && ow >= 1) {
			at::Tensor xc = x.contiguous(), out = at::empty(shape, x.options());
			at::Tensor idx = at::empty(shape, x.options().dtype(at::kLong));
			int64_t n = out.numel();

			if (n <= tvp::max_elements() &&
			    tvp::run(dev_of(x), { { std::string("maxpool.") + tvp::elem(x.scalar_type()), tvp::blocks(n),
						   { va_of(xc), va_of(out), va_of(idx), (uint64_t)n, pack(ow, oh),
						     pack(w, h), pack(kw, kh), pack(sw, sh), pack(pw, ph),
						     pack(dw, dh) } } },
				     "max_pool2d_with_indices") == 1) {
				count_device_op("max_pool2d_with_indices");
				return { out, idx };
			}
			failed = n <= tvp::max_elements();
		}
	}
	auto r = on_cpu("max_pool2d_with_indices", failed, [&] {
		return at::max_pool2d_with_indices(cpu(x), kernel_size, stride, padding, dilation, ceil_mode);
	});
	return { std::get<0>(r).to(x.device()), std::get<1>(r).to(x.device()) };
}

TORCH_LIBRARY_IMPL(aten, PrivateUse1, m)
{
	m.impl("max_pool2d_with_indices", max_pool2d_with_indices);
}

} // namespace ops
} // namespace maia_torch
