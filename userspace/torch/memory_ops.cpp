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
 * another type is not the COPY's, except int8 to int32 (every int8 is exact).
 */
static bool exact_convert(at::ScalarType from, at::ScalarType to)
{
	return from == to || !at::isIntegralType(to, true) || (from == at::kChar && to == at::kInt);
}

/* ---- conversions into integer types: TVP programs "cvt<to>.<from>" ------------- */

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
 * s1 = source, s2 = destination (both contiguous), s3 = n; a lane per
 * element, 1024 per instance, v29 masking the lanes past n. Sources f32,
 * bf16, f16 (widened to binary32 exactly by the load), i32, i16 (its two
 * bytes), i8, u8 (uint8 and bool); kinds cvti32, cvti16, cvti8 (int8 and
 * uint8: the same byte), cvtb (bool).
 */
static int cvt_size(const std::string &t)
{
	return t == "f32" || t == "i32" ? 4 : t == "i8" || t == "u8" ? 1 : 2;
}

static std::string cvt_program(const std::string &kind, const std::string &t)
{
	bool flt = t == "f32" || t == "bf16" || t == "f16";
	std::string to = kind.substr(3);

	if (!flt && t != "i32" && t != "i16" && t != "i8" && t != "u8")
		return "";
	if (to != "i32" && to != "i16" && to != "i8" && to != "b")
		return "";
	std::string s = "\tpid s20, 0\n\tmuli s21, s20, 1024\t# this instance's first element\n"
			"\tsub s23, s3, s21\n\tvsplat v30, s23\n\tviota v31, 0\n"
			"\tvicmp v29, v31, v30, lt\t# the lanes in range\n"
			"\tmuli s22, s21, " + std::to_string(cvt_size(t)) + "\n\tadd s1, s1, s22\n"
			"\tmuli s22, s21, " + std::to_string(cvt_size(to == "b" ? "i8" : to)) +
			"\n\tadd s2, s2, s22\n";

	if (t == "i16")	/* its two bytes: the high one sign-extended, the low one not */
		s += "\tviadd v10, v31, v31\n\tvld v1, s1, v10, i8, v29\n\tvsplati v11, 1\n"
		     "\tviadd v10, v10, v11\n\tvld v2, s1, v10, i8, v29\n\tvsplati v3, 255\n\tvand v1, v1, v3\n"
		     "\tvsplati v3, 8\n\tvshl v2, v2, v3\n\tvor v1, v1, v2\n";
	else
		s += "\tvld v1, s1, unit, " + (t == "u8" ? "i8" : t) + ", v29\n";
	if (t == "u8")	/* i8 loads sign-extend */
		s += "\tvsplati v3, 255\n\tvand v1, v1, v3\n";
	if (to == "b")
		return s + "\tvsplati v3, 0\n" + (flt ? "\tvfcmp v2, v1, v3, ne\t# NaN too\n" :
							"\tvicmp v2, v1, v3, ne\n") +
		       "\tvst v2, s2, unit, i8, v29\n\thalt\n";
	if (flt)
		s += "\tvcvt v2, v1, f2i\n"
		     "\tvsplati v3, -2.147483648e+09\n\tvfcmp v4, v1, v3, ge\n"
		     "\tvsplati v3, 2.147483648e+09\n\tvfcmp v5, v1, v3, lt\n"
		     "\tvand v4, v4, v5\t# in range (not NaN)\n"
		     "\tvsplati v3, -2147483648\n\tvsel v2, v2, v3, v4\n";
	else
		s += "\tvmov v2, v1\n";
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
	tvp::add_family({ "cvti32", "cvti16", "cvti8", "cvtb" }, cvt_program);

/* The program's source and kind names for a conversion, or false. */
static bool cvt_names(at::ScalarType from, at::ScalarType to, std::string *kind, std::string *t)
{
	switch (from) {
	case at::kFloat: *t = "f32"; break;
	case at::kBFloat16: *t = "bf16"; break;
	case at::kHalf: *t = "f16"; break;
	case at::kInt: *t = "i32"; break;
	case at::kShort: *t = "i16"; break;
	case at::kChar: *t = "i8"; break;
	case at::kByte: case at::kBool: *t = "u8"; break;
	default: return false;
	}
	switch (to) {
	case at::kInt: *kind = "cvti32"; break;
	case at::kShort: *kind = "cvti16"; break;
	case at::kChar: case at::kByte: *kind = "cvti8"; break;
	case at::kBool: *kind = "cvtb"; break;
	default: return false;
	}
	return from != to;
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
	if (!exact_convert(src.scalar_type(), dst.scalar_type()) &&
	    at::has_internal_overlap(dst) != at::MemOverlap::Yes && convert_on_device(src, dst))
		return;
	/* Types no device op converts (int64, double): by the host. */
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
