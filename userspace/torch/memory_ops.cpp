// SPDX-License-Identifier: MIT
/*
 * Tensor creation, views, resize, copies and fills for Maia (PrivateUse1)
 * tensors: the ops every backend must have. Views are torch's generic
 * implementations (they only touch sizes and strides); copies between host
 * and device are DMA; copies on the device are the tensor engine's COPY
 * (any strides, converting dtypes).
 */
#include <ATen/EmptyTensor.h>
#include <ATen/MemoryOverlap.h>
#include <ATen/ops/_reshape_alias_native.h>
#include <ATen/ops/_unsafe_view_native.h>
#include <ATen/ops/as_strided_native.h>
#include <ATen/ops/view_native.h>
#include <torch/library.h>

#include <cstring>

#include "tensor_desc.h"
#include "tvp_kernels.h"

namespace maia_torch {

static const c10::DispatchKeySet maia_keys(c10::DispatchKey::PrivateUse1);

static at::Tensor empty_memory_format(at::IntArrayRef size, c10::optional<at::ScalarType> dtype,
				      c10::optional<at::Layout> layout,
				      c10::optional<at::Device> device, c10::optional<bool> pin,
				      c10::optional<at::MemoryFormat> memory_format)
{
	(void)layout;
	(void)pin;
	return at::detail::empty_generic(size, allocator(device_index(device.value_or(c10::Device(
						 c10::DeviceType::PrivateUse1)))), maia_keys,
					 c10::dtype_or_default(dtype), memory_format);
}

at::Tensor empty_on(int dev, at::IntArrayRef size, at::ScalarType dtype)
{
	return at::detail::empty_generic(size, allocator(dev), maia_keys, dtype, c10::nullopt);
}

static at::Tensor empty_strided(at::IntArrayRef size, at::IntArrayRef stride,
				c10::optional<at::ScalarType> dtype, c10::optional<at::Layout> layout,
				c10::optional<at::Device> device, c10::optional<bool> pin)
{
	(void)layout;
	(void)pin;
	return at::detail::empty_strided_generic(size, stride, allocator(device_index(device.value_or(
							 c10::Device(c10::DeviceType::PrivateUse1)))),
						 maia_keys,
						 c10::dtype_or_default(dtype));
}

static const at::Tensor &resize_(const at::Tensor &self, at::IntArrayRef size,
				 c10::optional<at::MemoryFormat> memory_format)
{
	auto *impl = self.unsafeGetTensorImpl();
	int64_t numel = c10::multiply_integers(size);
	size_t need = (size_t)(self.storage_offset() + numel) * self.itemsize();
	at::Storage storage = self.storage();

	TORCH_CHECK(!memory_format || *memory_format == at::MemoryFormat::Contiguous ||
			    *memory_format == at::MemoryFormat::Preserve,
		    "maia: resize_ supports the contiguous memory format only");
	if (need > storage.nbytes())
		resize_storage(storage, need);
	impl->set_sizes_contiguous(size);
	return self;
}

/* The whole storage of a device tensor, downloaded into a CPU tensor of its dtype. */
static at::Tensor download_storage(const at::Tensor &t)
{
	size_t bytes = t.storage().nbytes();
	at::Tensor host = at::empty({(int64_t)(bytes / t.itemsize())}, t.options().device(at::kCPU));

	if (bytes)
		copy_from_device(device_index(t.device()), host.data_ptr(),
				 reinterpret_cast<uint64_t>(t.storage().data()), bytes);
	return host;
}

static bool dense_contiguous(const at::Tensor &t)
{
	return t.is_contiguous() && t.numel() > 0;
}

static void copy_device_to_device(const at::Tensor &src, const at::Tensor &dst);

static void copy_host_to_device(const at::Tensor &self, const at::Tensor &dst)
{
	at::Tensor src = self.to(dst.scalar_type()).expand(dst.sizes()).contiguous();

	if (dst.numel() == 0)
		return;
	if (dense_contiguous(dst)) {
		copy_to_device(device_index(dst.device()), va_of(dst), src.data_ptr(), src.nbytes());
		return;
	}
	if (describable(dst)) {
		at::Tensor tmp = at::empty(dst.sizes(), dst.options());

		copy_to_device(device_index(dst.device()), va_of(tmp), src.data_ptr(), src.nbytes());
		copy_device_to_device(tmp, dst);
		return;
	}
	/* A strided tensor no descriptor describes: edit its storage on the host. */
	at::Tensor host = download_storage(dst);

	host.as_strided(dst.sizes(), dst.strides(), dst.storage_offset()).copy_(src);
	copy_to_device(device_index(dst.device()), reinterpret_cast<uint64_t>(dst.storage().data()),
		       host.data_ptr(), dst.storage().nbytes());
}

static void copy_device_to_host(const at::Tensor &self, const at::Tensor &dst)
{
	at::Tensor host;

	if (self.numel() == 0)
		return;
	if (dense_contiguous(self)) {
		host = at::empty(self.sizes(), self.options().device(at::kCPU));
		copy_from_device(device_index(self.device()), host.data_ptr(), va_of(self), self.nbytes());
	} else if (describable(self)) {
		at::Tensor tmp = at::empty(self.sizes(), self.options());

		copy_device_to_device(self, tmp);
		host = at::empty(self.sizes(), self.options().device(at::kCPU));
		copy_from_device(device_index(self.device()), host.data_ptr(), va_of(tmp), tmp.nbytes());
	} else {
		host = download_storage(self).as_strided(self.sizes(), self.strides(),
							 self.storage_offset());
	}
	dst.copy_(host);
}

/*
 * The tensor engine's COPY converts into an integer type as a quantizer
 * does: rounding to nearest and saturating. CPU torch truncates toward zero
 * and wraps when narrowing, so a conversion into an integer type from
 * another type is not the COPY's, except int8 to int32 (every int8 is exact);
 * nor is one from int64 (no device dtype: the TVP's cvt programs below).
 */
static bool exact_convert(at::ScalarType from, at::ScalarType to)
{
	return from == to || (from != at::kLong && !at::isIntegralType(to, true)) ||
	       (from == at::kChar && to == at::kInt);
}

/*
 * A tensor of an 8-byte type (int64, float64, complex64) as int32 words:
 * its shape and a last dimension of 2, for a COPY that moves the bits
 * (rank <= 3 then). False when that does not describe it.
 */
static bool word_desc(const at::Tensor &t, struct maia_tensor_desc *d)
{
	if (!on_device(t) || t.itemsize() != 8 || t.dim() + 1 > (int64_t)MAIA_TENSOR_MAX_RANK)
		return false;
	*d = {};
	d->addr = va_of(t);
	d->dtype = MAIA_DTYPE_INT32;
	d->rank = (uint8_t)(t.dim() + 1);
	for (int64_t i = 0; i < t.dim(); i++) {
		if (t.size(i) <= 0 || t.size(i) > (int64_t)MAIA_TENSOR_MAX_DIM || t.stride(i) < 0)
			return false;
		d->shape[i] = (uint32_t)t.size(i);
		d->strides[i] = 2 * (uint64_t)t.stride(i);
	}
	d->shape[t.dim()] = 2;
	d->strides[t.dim()] = 1;
	return true;
}

/* ---- conversions: TVP programs "cvt<to>.<from>" ----------------------------------- */

/*
 * CPU torch on x86 (this host and the guest) converts a float into an
 * integer type as CVTTSS2SI does: toward zero, and NaN, +-inf and anything
 * outside [-2^31, 2^31) to INT32_MIN; into int16, int8 and uint8 through
 * that int32, keeping its low bits (so 300.5 -> int8 is 44, 1e10 is 0); into
 * bool, x != 0 (NaN is true). Integer narrowing keeps the low bits. VCVT
 * F2I is toward zero but saturates (NaN -> 0), so the lanes outside
 * [-2^31, 2^31) (ordered compares: NaN is outside) are set to INT32_MIN
 * after it; narrowing is a shift left and an arithmetic shift right, so a
 * saturating i8 store keeps the byte. The TVP has no 16-bit stores: an int16
 * is stored as its two bytes (two i8 scatters).
 *
 * int64 is two int32 words, the low one first (loaded and stored as i32
 * gathers and scatters at 2i and 2i + 1). Into int64: integers sign-extended
 * (uint8 and bool zero-extended); a float as the 64-bit CVTTSS2SI does,
 * toward zero, NaN, +-inf and anything outside [-2^63, 2^63) to INT64_MIN:
 * below 2^31 in magnitude VCVT F2I's int32 sign-extended, above it the
 * significand shifted into place from the bits (every such float is an
 * integer) and negated as a 64-bit pair. From int64: into the narrower
 * integers its low word as an int32 is taken; into bool, (lo | hi) != 0;
 * into float32 rounded to nearest even once, as CVTSI2SS does: the top 32
 * bits of the magnitude (its leading bit at bit 31; the bit length of the
 * high word from the exponent of an exact U2F) with a sticky bit for those
 * below, VCVT U2F, times 2^shift, the sign put back. Into bfloat16 and
 * float16 CPU torch goes through float32, and so does the program (the
 * store rounds the binary32 once more).
 *
 * s1 = source, s2 = destination (both contiguous), s3 = n; a lane per
 * element, 1024 per instance, v29 masking the lanes past n. Sources f32,
 * bf16, f16 (widened to binary32 exactly by the load), i64, i32, i16 (its
 * two bytes), i8, u8 (uint8 and bool); kinds cvti64, cvti32, cvti16, cvti8
 * (int8 and uint8: the same byte), cvtb (bool), and from i64 only cvtf32,
 * cvtbf16, cvtf16.
 */
static int cvt_size(const std::string &t)
{
	return t == "i64" ? 8 : t == "f32" || t == "i32" ? 4 : t == "i8" || t == "u8" || t == "b" ? 1 : 2;
}

/* v1 (binary32) to int64 in (v1 low, v2 high), as CVTTSS2SI r64; v3-v21 scratch. */
static const char *const f2i64 =
	"\tvcvt v2, v1, f2i\n\tvsplati v3, 31\n\tvsra v4, v2, v3\t# below 2^31: its int32, sign-extended\n"
	"\tvfabs v5, v1\n\tvsplati v6, 0x4f000000\n\tvfcmp v7, v5, v6, lt\t# |x| < 2^31 (NaN: not)\n"
	"\tvsplati v6, 23\n\tvshr v8, v5, v6\n\tvsplati v6, 0x7fffff\n\tvand v9, v5, v6\n"
	"\tvsplati v6, 0x800000\n\tvor v9, v9, v6\t# significand m\n"
	"\tvsplati v6, 150\n\tvisub v8, v8, v6\t# |x| = m 2^sh, sh 8 .. 39 up to 2^63\n"
	"\tvsplati v6, 32\n\tvisub v10, v6, v8\n\tvshr v11, v9, v10\n\tvshl v12, v9, v8\t# sh < 32\n"
	"\tvisub v13, v8, v6\n\tvshl v14, v9, v13\t# sh >= 32: the high word alone\n"
	"\tvicmp v15, v8, v6, lt\n\tvsplati v16, 0\n\tvsel v11, v11, v14, v15\n\tvsel v12, v12, v16, v15\n"
	"\tvicmp v17, v1, v16, lt\t# negative\n\tvisub v18, v16, v12\n\tvsplati v6, -1\n"
	"\tvxor v19, v11, v6\n\tvicmp v20, v12, v16, eq\n\tviadd v19, v19, v20\t# -(hi, lo)\n"
	"\tvsel v12, v18, v12, v17\n\tvsel v11, v19, v11, v17\n"
	"\tvsplati v6, 0x5f000000\n\tvfcmp v21, v5, v6, lt\t# |x| < 2^63 (NaN: not)\n"
	"\tvsplati v6, -2147483648\n\tvsel v11, v11, v6, v21\n\tvsel v12, v12, v16, v21\t# else INT64_MIN\n"
	"\tvsel v1, v2, v12, v7\n\tvsel v2, v4, v11, v7\n";

/* int64 (v1 low, v2 high) to binary32 in v10, rounded once to nearest even; v3-v16 scratch. */
static const char *const i642f =
	"\tvsplati v16, 0\n\tvicmp v3, v2, v16, lt\t# negative\n"
	"\tvisub v4, v16, v1\n\tvsplati v6, -1\n\tvxor v5, v2, v6\n\tvicmp v7, v1, v16, eq\n"
	"\tviadd v5, v5, v7\n\tvsel v1, v4, v1, v3\n\tvsel v2, v5, v2, v3\t# the magnitude (2^63 unsigned too)\n"
	"\tvsplati v6, 256\n\tvicmp v7, v2, v6, uge\n\tvsplati v6, 8\n\tvshr v8, v2, v6\n"
	"\tvsel v8, v8, v2, v7\t# hi >> 8 or hi: below 2^24, exact in binary32\n"
	"\tvcvt v8, v8, u2f\n\tvsplati v6, 23\n\tvshr v8, v8, v6\n\tvsplati v6, 126\n\tvisub v8, v8, v6\n"
	"\tvsplati v6, 3\n\tvshl v7, v7, v6\n\tviadd v8, v8, v7\t# k: the bit length of hi (1 .. 32)\n"
	"\tvsplati v6, 32\n\tvisub v9, v6, v8\n\tvshl v10, v2, v9\n"
	"\tvsplati v6, 1\n\tvisub v11, v8, v6\n\tvshr v12, v1, v11\n\tvshr v12, v12, v6\n"
	"\tvor v10, v10, v12\t# the top 32 bits (|x| >> k)\n"
	"\tvshl v12, v1, v9\n\tvicmp v12, v12, v16, ne\n\tvor v10, v10, v12\t# and a sticky bit for the rest\n"
	"\tvcvt v10, v10, u2f\n\tvsplati v6, 127\n\tviadd v13, v8, v6\n\tvsplati v6, 23\n"
	"\tvshl v13, v13, v6\n\tvfmul v10, v10, v13\t# times 2^k, exact\n"
	"\tvcvt v14, v1, u2f\n\tvicmp v7, v2, v16, eq\n\tvsel v10, v14, v10, v7\t# hi 0: the low word\n"
	"\tvfneg v14, v10\n\tvsel v10, v14, v10, v3\n";

/* The int64 pair (lo, hi) at element i of s (a store when st): i32 words 2i, 2i + 1. */
static std::string pair64(bool st, const std::string &lo, const std::string &hi, const std::string &s)
{
	std::string op = st ? "\tvst " : "\tvld ";

	return "\tviadd v10, v31, v31\n" + op + lo + ", " + s + ", v10, i32, v29\n\tvsplati v11, 1\n"
	       "\tviadd v10, v10, v11\n" + op + hi + ", " + s + ", v10, i32, v29\n";
}

static std::string cvt_program(const std::string &kind, const std::string &t)
{
	bool flt = t == "f32" || t == "bf16" || t == "f16";
	std::string to = kind.substr(3);
	bool to_flt = to == "f32" || to == "bf16" || to == "f16";

	if (!flt && t != "i64" && t != "i32" && t != "i16" && t != "i8" && t != "u8")
		return "";
	if (to != "i64" && to != "i32" && to != "i16" && to != "i8" && to != "b" && !to_flt)
		return "";
	if (to_flt && t != "i64")	/* floats from the others: the COPY */
		return "";
	std::string s = "\tpid s20, 0\n\tmuli s21, s20, 1024\t# this instance's first element\n"
			"\tsub s23, s3, s21\n\tvsplat v30, s23\n\tviota v31, 0\n"
			"\tvicmp v29, v31, v30, lt\t# the lanes in range\n"
			"\tmuli s22, s21, " + std::to_string(cvt_size(t)) + "\n\tadd s1, s1, s22\n"
			"\tmuli s22, s21, " + std::to_string(cvt_size(to)) + "\n\tadd s2, s2, s22\n";

	if (t == "i64")
		s += pair64(false, "v1", "v2", "s1");
	else if (t == "i16")	/* its two bytes: the high one sign-extended, the low one not */
		s += "\tviadd v10, v31, v31\n\tvld v1, s1, v10, i8, v29\n\tvsplati v11, 1\n"
		     "\tviadd v10, v10, v11\n\tvld v2, s1, v10, i8, v29\n\tvsplati v3, 255\n\tvand v1, v1, v3\n"
		     "\tvsplati v3, 8\n\tvshl v2, v2, v3\n\tvor v1, v1, v2\n";
	else
		s += "\tvld v1, s1, unit, " + (t == "u8" ? "i8" : t) + ", v29\n";
	if (t == "u8")	/* i8 loads sign-extend */
		s += "\tvsplati v3, 255\n\tvand v1, v1, v3\n";
	if (to_flt)
		return s + i642f + "\tvst v10, s2, unit, " + to + ", v29\n\thalt\n";
	if (to == "i64")
		return s + (flt ? f2i64 : "\tvsplati v3, 31\n\tvsra v2, v1, v3\n") + pair64(true, "v1", "v2", "s2") +
		       "\thalt\n";
	if (to == "b") {
		if (t == "i64")
			s += "\tvor v1, v1, v2\n";
		return s + "\tvsplati v3, 0\n" + (flt ? "\tvfcmp v2, v1, v3, ne\t# NaN too\n" :
							"\tvicmp v2, v1, v3, ne\n") +
		       "\tvst v2, s2, unit, i8, v29\n\thalt\n";
	}
	if (flt)
		s += "\tvcvt v2, v1, f2i\n"
		     "\tvsplati v3, -2.147483648e+09\n\tvfcmp v4, v1, v3, ge\n"
		     "\tvsplati v3, 2.147483648e+09\n\tvfcmp v5, v1, v3, lt\n"
		     "\tvand v4, v4, v5\t# in range (not NaN)\n"
		     "\tvsplati v3, -2147483648\n\tvsel v2, v2, v3, v4\n";
	else
		s += "\tvmov v2, v1\t# an integer (int64: its low word)\n";
	if (to == "i32")
		return s + "\tvst v2, s2, unit, i32, v29\n\thalt\n";
	s += "\tvsplati v6, 24\n";
	if (to == "i8")
		return s + "\tvshl v2, v2, v6\n\tvsra v2, v2, v6\t# the low byte, signed\n"
			   "\tvst v2, s2, unit, i8, v29\n\thalt\n";
	return s + "\tvshl v7, v2, v6\n\tvsra v7, v7, v6\t# low byte\n"
		   "\tvsplati v8, 16\n\tvshl v9, v2, v8\n\tvsra v9, v9, v6\t# high byte\n"
		   "\tviadd v10, v31, v31\n\tvst v7, s2, v10, i8, v29\n"
		   "\tvsplati v11, 1\n\tviadd v10, v10, v11\n\tvst v9, s2, v10, i8, v29\n\thalt\n";
}

[[maybe_unused]] static const bool registered =
	tvp::add_family({ "cvti64", "cvti32", "cvti16", "cvti8", "cvtb", "cvtf32", "cvtbf16", "cvtf16" },
			cvt_program);

/* The program's source and kind names for a conversion, or false. */
static bool cvt_names(at::ScalarType from, at::ScalarType to, std::string *kind, std::string *t)
{
	switch (from) {
	case at::kFloat: *t = "f32"; break;
	case at::kBFloat16: *t = "bf16"; break;
	case at::kHalf: *t = "f16"; break;
	case at::kLong: *t = "i64"; break;
	case at::kInt: *t = "i32"; break;
	case at::kShort: *t = "i16"; break;
	case at::kChar: *t = "i8"; break;
	case at::kByte: case at::kBool: *t = "u8"; break;
	default: return false;
	}
	switch (to) {
	case at::kLong: *kind = "cvti64"; break;
	case at::kInt: *kind = "cvti32"; break;
	case at::kShort: *kind = "cvti16"; break;
	case at::kChar: case at::kByte: *kind = "cvti8"; break;
	case at::kBool: *kind = "cvtb"; break;
	case at::kFloat: *kind = "cvtf32"; break;
	case at::kBFloat16: *kind = "cvtbf16"; break;
	case at::kHalf: *kind = "cvtf16"; break;
	default: return false;
	}
	return from != to && (from == at::kLong || at::isIntegralType(to, true));
}

/*
 * src (dst's shape) converted into dst by a TVP program, as CPU torch
 * converts; false when no program does this pair (or the device failed it:
 * logged, the caller goes by the host).
 */
static bool convert_on_device(const at::Tensor &src, const at::Tensor &dst)
{
	std::string kind, t;

	if (!cvt_names(src.scalar_type(), dst.scalar_type(), &kind, &t) || dst.numel() > tvp::max_elements())
		return false;
	at::Tensor x = src.contiguous();
	bool direct = dst.is_contiguous() && at::get_overlap_status(x, dst) == at::MemOverlapStatus::No;
	at::Tensor out = direct ? dst : at::empty(dst.sizes(), dst.options());
	int64_t n = dst.numel();
	tvp::Launch l = { kind + "." + t, tvp::blocks(n), { va_of(x), va_of(out), (uint64_t)n } };

	if (tvp::run(device_index(dst.device()), { l }, "_copy_from") != 1)
		return false;
	count_device_op("copy_convert");
	if (!direct)
		copy_device_to_device(out, dst);
	return true;
}

static void copy_device_to_device(const at::Tensor &self, const at::Tensor &dst)
{
	if (dst.numel() == 0)
		return;
	at::Tensor src = self.expand(dst.sizes());

	if (describable(src) && describable(dst) && exact_convert(src.scalar_type(), dst.scalar_type()) &&
	    at::has_internal_overlap(dst) != at::MemOverlap::Yes) {
		Job job(dst);
		struct maia_tensor_desc x = desc(src), out = desc(dst);

		job.add(maia_cmd_tensor_copy(job.cmdbuf(), &x, &out), "maia_cmd_tensor_copy");
		job.run();
		count_device_op("copy_");
		return;
	}
	if (src.scalar_type() == dst.scalar_type() && dense_contiguous(src) &&
	    dense_contiguous(dst)) {
		copy_on_device(device_index(dst.device()), va_of(dst), va_of(src), dst.nbytes());
		return;
	}
	struct maia_tensor_desc xw, ow;
	if (src.scalar_type() == dst.scalar_type() && word_desc(src, &xw) && word_desc(dst, &ow) &&
	    at::has_internal_overlap(dst) != at::MemOverlap::Yes) {
		Job job(dst);

		job.add(maia_cmd_tensor_copy(job.cmdbuf(), &xw, &ow), "maia_cmd_tensor_copy");
		job.run();
		count_device_op("copy_");
		return;
	}
	if (!exact_convert(src.scalar_type(), dst.scalar_type()) &&
	    at::has_internal_overlap(dst) != at::MemOverlap::Yes && convert_on_device(src, dst))
		return;
	/* Types no device op converts (float64, complex): by the host. */
	if (!exact_convert(src.scalar_type(), dst.scalar_type()) && describable(src) && describable(dst))
		count_fallback("aten::_copy_from");
	copy_host_to_device(self.to(at::kCPU), dst);
}

static at::Tensor copy_from(const at::Tensor &self, const at::Tensor &dst, bool non_blocking)
{
	(void)non_blocking;	/* every copy completes before it returns */
	TORCH_CHECK(self.device().type() == c10::DeviceType::PrivateUse1 || self.is_cpu(),
		    "maia: cannot copy from ", self.device());
	TORCH_CHECK(dst.device().type() == c10::DeviceType::PrivateUse1 || dst.is_cpu(),
		    "maia: cannot copy to ", dst.device());
	if (on_device(self) && on_device(dst) && self.device() != dst.device())
		copy_host_to_device(self.to(at::kCPU), dst);	/* between devices: through the host */
	else if (on_device(self) && on_device(dst))
		copy_device_to_device(self, dst);
	else if (on_device(dst))
		copy_host_to_device(self, dst);
	else
		copy_device_to_host(self, dst);
	return dst;
}

static at::Tensor copy_from_and_resize(const at::Tensor &self, const at::Tensor &dst)
{
	if (on_device(dst))
		resize_(dst, self.sizes(), c10::nullopt);
	else
		dst.resize_(self.sizes());
	return copy_from(self, dst, false);
}

/* The 32-bit fill pattern of value in dtype t, if the element pattern repeats in 32 bits. */
static bool fill_pattern(at::ScalarType t, const at::Scalar &value, uint32_t *pattern)
{
	at::Tensor one = at::full({1}, value, at::TensorOptions().dtype(t));
	const uint8_t *b = static_cast<const uint8_t *>(one.data_ptr());
	size_t sz = one.itemsize(), i;
	uint8_t bytes[8];

	if (sz > sizeof(bytes))		/* complex128: not a 32-bit pattern */
		return false;
	std::memcpy(bytes, b, sz);
	for (i = 0; i < 4; i++)
		reinterpret_cast<uint8_t *>(pattern)[i] = bytes[i % std::min<size_t>(sz, 4)];
	if (sz <= 4)
		return true;
	for (i = 4; i < sz; i++)
		if (bytes[i] != bytes[i % 4])
			return false;
	return true;
}

static at::Tensor &fill_scalar(at::Tensor &self, const at::Scalar &value)
{
	uint32_t pattern;

	if (self.numel() == 0)
		return self;
	if (dense_contiguous(self) && self.nbytes() % 4 == 0 &&
	    va_of(self) % 4 == 0 && fill_pattern(self.scalar_type(), value, &pattern)) {
		Job job(self);

		job.add(maia_cmd_fill(job.cmdbuf(), va_of(self), self.nbytes(), pattern),
			"maia_cmd_fill");
		job.run();
		count_device_op("fill_");
		return self;
	}
	/* No compute: the filled values are made on the host and copied over. */
	copy_host_to_device(at::full({}, value, self.options().device(at::kCPU)), self);
	return self;
}

static at::Tensor &zero(at::Tensor &self)
{
	return fill_scalar(self, 0);
}

static at::Scalar local_scalar_dense(const at::Tensor &self)
{
	return at::_local_scalar_dense(self.to(at::kCPU));
}

TORCH_LIBRARY_IMPL(aten, PrivateUse1, m)
{
	m.impl("empty.memory_format", empty_memory_format);
	m.impl("empty_strided", empty_strided);
	m.impl("as_strided", at::native::as_strided_tensorimpl);
	m.impl("view", at::native::view);
	m.impl("_reshape_alias", at::native::_reshape_alias);
	m.impl("_unsafe_view", at::native::_unsafe_view);
	m.impl("resize_", resize_);
	m.impl("_copy_from", copy_from);
	m.impl("_copy_from_and_resize", copy_from_and_resize);
	m.impl("fill_.Scalar", fill_scalar);
	m.impl("zero_", zero);
	m.impl("_local_scalar_dense", local_scalar_dense);
}

} // namespace maia_torch
