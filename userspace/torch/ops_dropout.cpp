// SPDX-License-Identifier: MIT
/*
 * Dropout on the device (native_dropout, native_dropout_backward) with a
 * counter-based generator per device: element i of a call keeps its value
 * when the first word of Threefry-2x32-20 (Salmon et al., "Parallel random
 * numbers: as easy as 1, 2, 3", SC 2011; Random123's threefry2x32 with 20
 * rounds) of the counter (i, offset) under the key (the seed's low and high
 * words) is below (1 - p) 2^32. Threefry needs only 32-bit add, rotate and
 * xor, which the TVP has (Philox needs a 32x32 -> 64-bit multiply, which it
 * has not). So a mask depends on the seed, the call's offset and the
 * element's index alone, not on the grid or the instance order;
 * torch.manual_seed(s) sets every device's seed to s and its offset to 0,
 * and each call takes the next offset. The values cannot be CPU torch's
 * (its bernoulli_ draws from the CPU generator's Mersenne twister): tests
 * check the statistics, the reproducibility and that backward applies the
 * mask forward drew (torch saves it: the bool mask native_dropout returns).
 */
#include <torch/library.h>

#include <algorithm>
#include <cmath>
#include <mutex>

#include "ops_common.h"

namespace maia_torch {
namespace ops {

/* ---- the programs ------------------------------------------------------------ */

static int esize(const std::string &t)
{
	return t == "f32" ? 4 : 2;
}

/* Threefry-2x32's rotation constants, round r taking kRot[r % 8]. */
static const int kRot[8] = { 13, 15, 26, 6, 17, 29, 16, 24 };

/*
 * dropout: s1 = x, s2 = out, s3 = mask (bool bytes), s4 = n, s5..s7 = the
 * key schedule (k0, k1, k2 = 0x1BD11BDA ^ k0 ^ k1), s8 = the call's offset
 * (the counter's second word), s9 = the threshold ((1 - p) 2^32, unsigned),
 * s10 = the scale (binary32 bits). out = (x keep) scale, as CPU torch's
 * input.mul(mask).mul_(scale).
 */
static std::string dropout(const std::string &t)
{
	std::string s = "\tpid s20, 0\n\tmuli s21, s20, 1024\n\tviota v31, 0\n\tvsplat v30, s21\n"
			"\tviadd v28, v31, v30\t# the element index: the counter's first word\n"
			"\tvsplat v30, s4\n\tvicmp v29, v28, v30, lt\n"
			"\tmuli s22, s21, " + std::to_string(esize(t)) + "\n\tadd s1, s1, s22\n\tadd s2, s2, s22\n"
			"\tadd s3, s3, s21\n"
			"\tvsplat v10, s5\n\tvsplat v11, s6\n\tvsplat v12, s7\n"
			"\tvmov v0, v28\n\tvsplat v1, s8\n\tviadd v0, v0, v10\n\tviadd v1, v1, v11\n";
	const char *ks[3] = { "v10", "v11", "v12" };

	for (int r = 0; r < 20; r++) {
		s += "\tviadd v0, v0, v1\n\tvsplati v13, " + std::to_string(kRot[r % 8]) +
		     "\n\tvsplati v14, " + std::to_string(32 - kRot[r % 8]) +
		     "\n\tvshl v15, v1, v13\n\tvshr v16, v1, v14\n\tvor v1, v15, v16\n\tvxor v1, v1, v0\n";
		if (r % 4 == 3) {
			int inj = (r + 1) / 4;

			s += std::string("\tviadd v0, v0, ") + ks[inj % 3] + "\n\tviadd v1, v1, " +
			     ks[(inj + 1) % 3] + "\n\tvsplati v13, " + std::to_string(inj) + "\n\tviadd v1, v1, v13\n";
		}
	}
	return s + "\tvsplat v13, s9\n\tvicmp v17, v0, v13, ult\t# keep\n"
		   "\tvld v2, s1, unit, " + t + ", v29\n"
		   "\tvsplati v18, 1.0\n\tvsplati v19, 0\n\tvsel v18, v18, v19, v17\n"
		   "\tvfmul v2, v2, v18\n\tvsplat v20, s10\n\tvfmul v2, v2, v20\n"
		   "\tvst v2, s2, unit, " + t + ", v29\n\tvst v17, s3, unit, i8, v29\n\thalt\n";
}

/* dropbwd: s1 = grad, s2 = mask, s3 = out, s4 = n, s5 = scale: (grad mask) scale. */
static std::string dropbwd(const std::string &t)
{
	return "\tpid s20, 0\n\tmuli s21, s20, 1024\n\tviota v31, 0\n\tvsplat v30, s21\n"
	       "\tviadd v28, v31, v30\n\tvsplat v30, s4\n\tvicmp v29, v28, v30, lt\n"
	       "\tmuli s22, s21, " + std::to_string(esize(t)) + "\n\tadd s1, s1, s22\n\tadd s3, s3, s22\n"
	       "\tadd s2, s2, s21\n"
	       "\tvld v1, s1, unit, " + t + ", v29\n\tvld v2, s2, unit, i8, v29\n\tvcvt v2, v2, i2f\n"
	       "\tvfmul v1, v1, v2\n\tvsplat v3, s5\n\tvfmul v1, v1, v3\n"
	       "\tvst v1, s3, unit, " + t + ", v29\n\thalt\n";
}

static std::string family(const std::string &kind, const std::string &t)
{
	if (t != "f32" && t != "bf16" && t != "f16")
		return "";
	return kind == "dropout" ? dropout(t) : dropbwd(t);
}

[[maybe_unused]] static const bool registered = tvp::add_family({ "dropout", "dropbwd" }, family);

/* ---- the generator ------------------------------------------------------------ */

/* A device's generator: the seed, and the offset the next call takes. */
struct Rng {
	uint64_t seed = 67280421310721ull;	/* CPU torch's default seed */
	uint64_t offset = 0;
};

/* rng_mu protects rng. */
static std::mutex rng_mu;
static Rng rng[kMaxDevices];

static void manual_seed(int64_t seed, int64_t dev)
{
	std::lock_guard<std::mutex> guard(rng_mu);

	TORCH_CHECK(dev >= -1 && dev < kMaxDevices, "maia: no device ", dev);
	for (int d = 0; d < kMaxDevices; d++)
		if (dev == -1 || d == dev)
			rng[d] = { (uint64_t)seed, 0 };
}

static std::vector<int64_t> rng_state(int64_t dev)
{
	std::lock_guard<std::mutex> guard(rng_mu);

	TORCH_CHECK(dev >= 0 && dev < kMaxDevices, "maia: no device ", dev);
	return { (int64_t)rng[dev].seed, (int64_t)rng[dev].offset };
}

static void set_rng_state(int64_t dev, int64_t seed, int64_t offset)
{
	std::lock_guard<std::mutex> guard(rng_mu);

	TORCH_CHECK(dev >= 0 && dev < kMaxDevices, "maia: no device ", dev);
	rng[dev] = { (uint64_t)seed, (uint64_t)offset };
}

/* The seed and the offset of a call on device dev (the generator moves on). */
static Rng take(int dev)
{
	std::lock_guard<std::mutex> guard(rng_mu);
	Rng r = rng[dev];

	rng[dev].offset++;
	return r;
}

/* ---- the ops ------------------------------------------------------------------ */

static std::tuple<at::Tensor, at::Tensor> native_dropout(const at::Tensor &x, double p, c10::optional<bool> train)
{
	bool failed = false;

	if (x.numel() == 0)
		return { x, at::empty_like(x) };
	if (on_device(x) && tvp::elem(x.scalar_type()) && x.numel() <= tvp::max_elements() && p >= 0 && p <= 1) {
		at::Tensor mask = at::empty(x.sizes(), x.options().dtype(at::kBool));

		if (train.has_value() && !*train) {	/* evaluation: the input, every element kept */
			count_device_op("native_dropout");
			return { x.clone(), mask.fill_(true) };
		}
		if (p == 0) {	/* CPU torch draws bernoulli(1): all kept */
			count_device_op("native_dropout");
			return { x.clone(), mask.fill_(true) };
		}
		at::Tensor xc = x.contiguous(), out = at::empty(x.sizes(), x.options());
		double keep = 1.0 - p, scale = keep == 0 ? 0.0 : 1.0 / keep;
		double thr = std::min(std::ldexp(keep, 32), 4294967295.0);
		int dev = dev_of(x);
		Rng r = take(dev);
		uint32_t k0 = (uint32_t)r.seed, k1 = (uint32_t)(r.seed >> 32);

		if (tvp::run(dev, { { std::string("dropout.") + tvp::elem(x.scalar_type()), tvp::blocks(x.numel()),
				      { va_of(xc), va_of(out), va_of(mask), (uint64_t)x.numel(), k0, k1,
					0x1BD11BDAu ^ k0 ^ k1, (uint32_t)r.offset, (uint64_t)thr,
					tvp::f32_bits(scale) } } },
			     "native_dropout") == 1) {
			count_device_op("native_dropout");
			return { out, mask };
		}
		failed = true;
	}
	auto res = on_cpu("native_dropout", failed, [&] { return at::native_dropout(cpu(x), p, train); });
	return { std::get<0>(res).to(x.device()), std::get<1>(res).to(x.device()) };
}

static at::Tensor native_dropout_backward(const at::Tensor &grad, const at::Tensor &mask, double scale)
{
	bool failed = false;

	if (on_device(grad) && on_device(mask, grad) && tvp::elem(grad.scalar_type()) &&
	    mask.scalar_type() == at::kBool && mask.sizes() == grad.sizes() && grad.numel() <= tvp::max_elements()) {
		at::Tensor gc = grad.contiguous(), mc = mask.contiguous(), out = at::empty(grad.sizes(), grad.options());

		if (grad.numel() == 0 ||
		    tvp::run(dev_of(grad), { { std::string("dropbwd.") + tvp::elem(grad.scalar_type()),
					      tvp::blocks(grad.numel()),
					      { va_of(gc), va_of(mc), va_of(out), (uint64_t)grad.numel(),
						tvp::f32_bits(scale) } } },
			     "native_dropout_backward") == 1) {
			count_device_op("native_dropout_backward");
			return out;
		}
		failed = true;
	}
	return on_cpu("native_dropout_backward", failed,
		      [&] { return at::native_dropout_backward(cpu(grad), cpu(mask), scale); })
		.to(grad.device());
}

TORCH_LIBRARY_IMPL(aten, PrivateUse1, m)
{
	m.impl("native_dropout", native_dropout);
	m.impl("native_dropout_backward", native_dropout_backward);
}

TORCH_LIBRARY_FRAGMENT(maia, m)
{
	m.def("manual_seed(int seed, int device) -> ()", manual_seed);
	m.def("rng_state(int device) -> int[]", rng_state);
	m.def("set_rng_state(int device, int seed, int offset) -> ()", set_rng_state);
}

} // namespace ops
} // namespace maia_torch
