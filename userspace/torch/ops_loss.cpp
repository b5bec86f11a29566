// SPDX-License-Identifier: MIT
/*
 * Cross-entropy's parts as TVP programs: _log_softmax_backward_data (the
 * forward, _log_softmax, is the engine's, kernels.cpp) and nll_loss_forward
 * / nll_loss_backward over [N, C] or [C] inputs with int64 or int32
 * targets, an optional class weight, ignore_index and the three reductions.
 *
 * The loss is one instance looping over the rows 1024 at a time (lane-wise
 * float32 sums, then a tree of the lanes: the order differs from CPU
 * torch's, the bound is a float32 sum's). A target out of range is not
 * accessed: it sets a flag word the op reads after its job (a host wait),
 * and a set flag re-runs the op on the CPU for torch's "Target 5 is out of
 * bounds." error. nll_loss2d (images, sequences) is nll_loss over the
 * N H W rows of a permuted copy.
 */
#include <torch/library.h>

#include <ATen/WrapDimUtils.h>

#include "ops_common.h"

namespace maia_torch {
namespace ops {

/* ---- the programs ------------------------------------------------------------ */

static int esize(const std::string &t)
{
	return t == "f32" ? 4 : 2;
}

/*
 * lsmbwd: one instance per row of C contiguous elements (s4): s1 = grad,
 * s2 = the forward's output, s3 = out; out = grad - exp(output) sum(grad).
 */
static std::string lsmbwd(const std::string &t)
{
	std::string e = std::to_string(esize(t)), blk = std::to_string(1024 * esize(t));
	std::string mask = "\tsub s24, s4, s23\n\tvsplat v30, s24\n\tvicmp v29, v31, v30, lt\n";

	return "\tpid s20, 0\n\tmul s21, s20, s4\n\tmuli s22, s21, " + e + "\n"
	       "\tadd s1, s1, s22\n\tadd s2, s2, s22\n\tadd s3, s3, s22\n"
	       "\tviota v31, 0\n\tvsplati v1, 0\n\tli s23, 0\n\tadd s26, s1, s0\n"
	       "sum:\n\tbge s23, s4, summed\n" + mask +
	       "\tvld v2, s26, unit, " + t + ", v29\n\tvfadd v1, v1, v2\n"
	       "\taddi s23, s23, 1024\n\taddi s26, s26, " + blk + "\n\tjmp sum\n"
	       "summed:\n\tvredsum v3, v1, 1\n\tvbcast v3, v3\t# sum(grad) in every lane\n\tli s23, 0\n"
	       "apply:\n\tbge s23, s4, done\n" + mask +
	       "\tvld v2, s1, unit, " + t + ", v29\n\tvld v4, s2, unit, " + t + ", v29\n"
	       "\tvexp v4, v4\n\tvfmul v4, v4, v3\n\tvfsub v2, v2, v4\n\tvst v2, s3, unit, " + t + ", v29\n"
	       "\taddi s23, s23, 1024\n\taddi s1, s1, " + blk + "\n\taddi s2, s2, " + blk + "\n"
	       "\taddi s3, s3, " + blk + "\n\tjmp apply\n"
	       "done:\n\thalt\n";
}

/*
 * Rows r = s23 + lane (v28), v29 = r < s6; v15/v16 = the words of target
 * r (int64, or int32 sign-extended; the target at s2, stride v23); v29
 * drops the rows whose target is ignore_index (v5/v6) and those whose
 * target is not in [0, C = v8), which set the flag word at s<flag> to 1.
 */
static std::string rows_and_targets(bool i64, int flag)
{
	std::string f = "s" + std::to_string(flag);
	std::string s = "\tsub s24, s6, s23\n\tvsplat v30, s24\n\tvicmp v29, v31, v30, lt\n\tvmov v27, v29\n"
			"\tvsplat v30, s23\n\tviadd v28, v31, v30\t# rows\n\tvimul v12, v28, v23\n";

	if (i64)
		s += "\tviadd v14, v12, v12\n\tvld v15, s2, v14, i32, v29\n"
		     "\tvsplati v13, 1\n\tviadd v14, v14, v13\n\tvld v16, s2, v14, i32, v29\n";
	else
		s += "\tvld v15, s2, v12, i32, v29\n\tvsplati v13, 31\n\tvsra v16, v15, v13\n";
	s += "\tvicmp v18, v15, v5, eq\n\tvicmp v19, v16, v6, eq\n\tvand v18, v18, v19\n"
	     "\tvicmp v18, v18, v17, eq\n\tvand v29, v29, v18\t# not ignore_index\n"
	     "\tvicmp v18, v16, v17, eq\n\tvicmp v19, v15, v17, ge\n\tvand v18, v18, v19\n"
	     "\tvicmp v19, v15, v8, lt\n\tvand v18, v18, v19\n"
	     "\tvicmp v19, v18, v17, eq\n\tvand v19, v19, v29\n"
	     "\tvsplati v25, 1\n\tvst v25, " + f + ", v17, i32, v19\t# out of range: flag = 1\n"
	     "\tvand v29, v29, v18\n";
	return s;
}

/* v5/v6 = the words of s<ign>, v8 = C (s7), v23 = the target's stride (s<ts>), v17 = 0, v31 = lanes; s30 = 32. */
static std::string loss_setup(int ign, int ts)
{
	std::string i = "s" + std::to_string(ign);

	return "\tli s30, 32\n\tviota v31, 0\n\tvsplati v17, 0\n\tvsplat v8, s7\n"
	       "\tvsplat v23, s" + std::to_string(ts) + "\n"
	       "\tvsplat v5, " + i + "\n\tshr s22, " + i + ", s30\n\tvsplat v6, s22\n";
}

/*
 * nll (forward, one instance): s1 = x, s2 = target, s3 = weight or 0, s4 =
 * out, s5 = total_weight, s6 = N, s7 = C, s8 = x's strides (row | class <<
 * 32), s9 = ignore_index, s10 = reduction (0 none, 1 mean, 2 sum), s11 =
 * the flag word, s12 = the target's stride, s13 = out's stride (none).
 */
static std::string nll(bool i64, const std::string &t)
{
	return loss_setup(9, 12) +
	       "\tvsplati v1, 0\n\tvsplati v2, 0\n"
	       "\tvsplat v21, s8\n\tshr s22, s8, s30\n\tvsplat v22, s22\n\tvsplat v7, s13\n"
	       "\tli s23, 0\n"
	       "loop:\n\tbge s23, s6, done\n" + rows_and_targets(i64, 11) +
	       "\tvimul v11, v28, v21\n\tvimul v10, v15, v22\n\tviadd v11, v11, v10\n"
	       "\tvld v3, s1, v11, " + t + ", v29\n"
	       "\tvsplati v4, 1.0\n\tbeqz s3, unweighted\n\tvld v4, s3, v15, " + t + ", v29\n"
	       "unweighted:\n\tvsel v4, v4, v17, v29\t# the weight, 0 off the counted rows\n"
	       "\tvfmul v3, v3, v4\n\tvfneg v3, v3\n\tvsel v3, v3, v17, v29\t# -w x, +0 for ignored rows\n"
	       "\tbnez s10, reduce\n\tvimul v9, v28, v7\n\tvst v3, s4, v9, " + t + ", v27\n"
	       "reduce:\n\tvfadd v1, v1, v3\n\tvfadd v2, v2, v4\n"
	       "\taddi s23, s23, 1024\n\tjmp loop\n"
	       "done:\n\tvredsum v1, v1, 1\n\tvredsum v2, v2, 1\n"
	       "\tbeqz s10, none\n\tli s24, 1\n\tsub s24, s10, s24\n\tbnez s24, store\n"
	       "\tvfdiv v1, v1, v2\t# mean\n"
	       "store:\n\tvext s25, v1, 0\n\tsst s25, s4, " + t + "\n"
	       "\tvext s25, v2, 0\n\tsst s25, s5, " + t + "\n\thalt\n"
	       "none:\n\tsst s0, s5, " + t + "\t# total_weight 0, as CPU torch's\n\thalt\n";
}

/*
 * nllb (backward, one instance): s1 = grad_input (zeroed, [N, C]
 * contiguous), s2 = target, s3 = weight or 0, s4 = grad_output, s5 =
 * total_weight, s6 = N, s7 = C, s8 = ignore_index, s9 = reduction, s10 =
 * the flag word, s11 = the target's stride, s12 = grad_output's (none).
 * grad_input[r, t] = w[t] (-(g / total_weight) | -g | -g[r]).
 */
static std::string nllb(bool i64, const std::string &t)
{
	return loss_setup(8, 11) +
	       "\tvsplat v7, s12\n\tbeqz s9, start\n"
	       "\tsld s24, s4, " + t + "\n\tvsplat v20, s24\n"
	       "\tli s25, 1\n\tsub s25, s9, s25\n\tbnez s25, nodiv\n"
	       "\tsld s24, s5, " + t + "\n\tvsplat v21, s24\n\tvfdiv v20, v20, v21\n"
	       "nodiv:\n\tvfneg v20, v20\n"
	       "start:\n\tli s23, 0\n"
	       "loop:\n\tbge s23, s6, done\n" + rows_and_targets(i64, 10) +
	       "\tbnez s9, scalar\n\tvimul v9, v28, v7\n\tvld v3, s4, v9, " + t + ", v29\n\tvfneg v3, v3\n"
	       "\tjmp have\n"
	       "scalar:\n\tvmov v3, v20\n"
	       "have:\n\tbeqz s3, unweighted\n\tvld v4, s3, v15, " + t + ", v29\n\tvfmul v3, v4, v3\n"
	       "unweighted:\n\tvimul v11, v28, v8\n\tviadd v11, v11, v15\n"
	       "\tvst v3, s1, v11, " + t + ", v29\n"
	       "\taddi s23, s23, 1024\n\tjmp loop\n"
	       "done:\n\thalt\n";
}

static std::string family(const std::string &kind, const std::string &t)
{
	if (t != "f32" && t != "bf16" && t != "f16")
		return "";
	if (kind == "lsmbwd")
		return lsmbwd(t);
	bool i64 = kind.back() == '4';

	return kind.rfind("nllb", 0) == 0 ? nllb(i64, t) : nll(i64, t);
}

[[maybe_unused]] static const bool registered =
	tvp::add_family({ "lsmbwd", "nll32", "nll64", "nllb32", "nllb64" }, family);

/* ---- _log_softmax_backward_data ------------------------------------------------------ */

static at::Tensor log_softmax_backward(const at::Tensor &grad, const at::Tensor &output, int64_t dim,
				       at::ScalarType input_dtype)
{
	bool failed = false;

	if (on_device(grad) && on_device(output, grad) && tvp::elem(grad.scalar_type()) &&
	    output.scalar_type() == grad.scalar_type() && input_dtype == grad.scalar_type() &&
	    grad.sizes() == output.sizes() && grad.dim() >= 1 && grad.numel() <= tvp::max_elements()) {
		int64_t d = c10::maybe_wrap_dim(dim, grad.dim()), c = grad.size(d);
		int64_t rows = c ? grad.numel() / c : 0;

		if (grad.numel() == 0) {
			count_device_op("_log_softmax_backward_data");
			return at::empty(grad.sizes(), grad.options());
		}
		if (rows <= (int64_t)MAIA_TVP_MAX_GRID) {
			at::Tensor g = grad.movedim(d, -1).contiguous(), o = output.movedim(d, -1).contiguous();
			at::Tensor out = at::empty(g.sizes(), g.options());

			if (tvp::run(dev_of(grad), { { std::string("lsmbwd.") + tvp::elem(grad.scalar_type()),
						      (uint32_t)rows, { va_of(g), va_of(o), va_of(out), (uint64_t)c } } },
				     "_log_softmax_backward_data") == 1) {
				count_device_op("_log_softmax_backward_data");
				return d == grad.dim() - 1 ? out : out.movedim(-1, d).contiguous();
			}
			failed = true;
		}
	}
	return on_cpu("_log_softmax_backward_data", failed, [&] {
		       return at::_log_softmax_backward_data(cpu(grad), cpu(output), dim, input_dtype);
	       }).to(grad.device());
}

/* ---- nll_loss ------------------------------------------------------------------------- */

/* The shapes CPU torch's nll_loss takes: x [N, C] with target [N], or x [C] with a 0-dim target; weight [C]. */
static bool nll_shapes(const at::Tensor &x, const at::Tensor &target, const at::Tensor &weight)
{
	if (x.dim() == 2 ? (target.dim() != 1 || target.size(0) != x.size(0)) : (x.dim() != 1 || target.dim() != 0))
		return false;
	return !weight.defined() || weight.numel() == x.size(-1);
}

/* x, target (and weight) can go to the nll kernels. */
static bool nll_ok(const at::Tensor &x, const at::Tensor &target, const at::Tensor &weight, int64_t reduction)
{
	return on_device(x) && on_device(target, x) && tvp::elem(x.scalar_type()) &&
	       (target.scalar_type() == at::kLong || target.scalar_type() == at::kInt) &&
	       (!weight.defined() || (on_device(weight, x) && weight.scalar_type() == x.scalar_type())) &&
	       (x.dim() == 1 || x.dim() == 2) && reduction >= 0 && reduction <= 2 && int32_reach(x) &&
	       int32_reach(target);
}

static std::string nll_program(const char *kind, const at::Tensor &x, const at::Tensor &target)
{
	return std::string(kind) + (target.scalar_type() == at::kLong ? "64." : "32.") + tvp::elem(x.scalar_type());
}

/* Run the launch with its flag word at args[flag]: 1 done, 0 the device failed, -1 a target out of range. */
static int run_flagged(tvp::Launch l, size_t flag, const at::Tensor &x, const char *op)
{
	at::Tensor f = at::empty({ 1 }, x.options().dtype(at::kInt));
	int dev = dev_of(x);

	l.args[flag] = va_of(f);
	if (tvp::run(dev, { { "flagclear.i32", 1, { va_of(f) } }, l }, op) != 2)
		return 0;
	int32_t bad = 0;
	copy_from_device(dev, &bad, va_of(f), sizeof(bad));
	return bad ? -1 : 1;
}

static std::tuple<at::Tensor, at::Tensor> nll_loss_forward(const at::Tensor &x, const at::Tensor &target,
							    const c10::optional<at::Tensor> &weight_opt,
							    int64_t reduction, int64_t ignore_index)
{
	at::Tensor weight = weight_opt && weight_opt->defined() ? *weight_opt : at::Tensor();
	auto host = [&] { return at::nll_loss_forward(cpu(x), cpu(target), cpu(weight_opt), reduction, ignore_index); };
	bool failed = false;

	if (nll_ok(x, target, weight, reduction) && nll_shapes(x, target, weight)) {
		int64_t n = x.dim() == 2 ? x.size(0) : 1, c = x.size(-1);
		bool none = reduction == at::Reduction::None;
		at::Tensor out = at::empty(none && x.dim() == 2 ? at::IntArrayRef{ n } : at::IntArrayRef{}, x.options());
		at::Tensor total = at::empty({}, x.options());
		at::Tensor w = weight.defined() ? weight.contiguous() : weight;
		int64_t xs0 = x.dim() == 2 ? x.stride(0) : 0, ts = target.dim() ? target.stride(0) : 0;
		tvp::Launch l = { nll_program("nll", x, target), 1,
				  { va_of(x), va_of(target), w.defined() ? va_of(w) : 0, va_of(out), va_of(total),
				    (uint64_t)n, (uint64_t)c, pack(xs0, x.stride(-1)), (uint64_t)ignore_index,
				    (uint64_t)reduction, 0, (uint64_t)ts, (uint64_t)(out.dim() ? out.stride(0) : 0) } };
		int r = run_flagged(l, 10, x, "nll_loss_forward");

		if (r == 1) {
			count_device_op("nll_loss_forward");
			return { out, total };
		}
		if (r < 0)
			cpu_error("nll_loss_forward", host);
		failed = true;
	}
	auto res = on_cpu("nll_loss_forward", failed, host);
	return { std::get<0>(res).to(x.device()), std::get<1>(res).to(x.device()) };
}

static at::Tensor nll_loss_backward(const at::Tensor &grad, const at::Tensor &x, const at::Tensor &target,
				    const c10::optional<at::Tensor> &weight_opt, int64_t reduction,
				    int64_t ignore_index, const at::Tensor &total_weight)
{
	at::Tensor weight = weight_opt && weight_opt->defined() ? *weight_opt : at::Tensor();
	auto host = [&] {
		return at::nll_loss_backward(cpu(grad), cpu(x), cpu(target), cpu(weight_opt), reduction, ignore_index,
					     cpu(total_weight));
	};
	bool failed = false;
	bool none = reduction == at::Reduction::None;

	if (nll_ok(x, target, weight, reduction) && on_device(grad, x) && grad.scalar_type() == x.scalar_type() &&
	    on_device(total_weight, x) && total_weight.scalar_type() == x.scalar_type() &&
	    total_weight.numel() == 1 && nll_shapes(x, target, weight) &&
	    (none && x.dim() == 2 ? grad.dim() == 1 && grad.size(0) == x.size(0) : grad.numel() == 1)) {
		int64_t n = x.dim() == 2 ? x.size(0) : 1, c = x.size(-1);
		at::Tensor gi = at::zeros(x.sizes(), x.options());
		at::Tensor w = weight.defined() ? weight.contiguous() : weight;
		int64_t ts = target.dim() ? target.stride(0) : 0, gs = grad.dim() ? grad.stride(0) : 0;
		tvp::Launch l = { nll_program("nllb", x, target), 1,
				  { va_of(gi), va_of(target), w.defined() ? va_of(w) : 0, va_of(grad),
				    va_of(total_weight), (uint64_t)n, (uint64_t)c, (uint64_t)ignore_index,
				    (uint64_t)reduction, 0, (uint64_t)ts, (uint64_t)gs } };
		int r = run_flagged(l, 9, x, "nll_loss_backward");

		if (r == 1) {
			count_device_op("nll_loss_backward");
			return gi;
		}
		if (r < 0)
			cpu_error("nll_loss_backward", host);
		failed = true;
	}
	return on_cpu("nll_loss_backward", failed, host).to(x.device());
}

/* nll_loss2d's operands: x [N, C, H, W] and target [N, H, W] on one device. */
static bool image_shapes(const at::Tensor &x, const at::Tensor &target)
{
	return on_device(x) && on_device(target, x) && x.dim() == 4 && target.dim() == 3 &&
	       target.size(0) == x.size(0) && target.size(1) == x.size(2) && target.size(2) == x.size(3);
}

/* nll_loss2d (cross-entropy over images and sequences): nll_loss over the N H W rows, x permuted to [N H W, C]. */
static std::tuple<at::Tensor, at::Tensor> nll_loss2d_forward(const at::Tensor &x, const at::Tensor &target,
							      const c10::optional<at::Tensor> &weight,
							      int64_t reduction, int64_t ignore_index)
{
	if (image_shapes(x, target)) {
		at::Tensor rows = x.permute({ 0, 2, 3, 1 }).reshape({ -1, x.size(1) });
		auto r = maia_torch::ops::nll_loss_forward(rows, target.reshape({ -1 }), weight, reduction, ignore_index);

		if (reduction == at::Reduction::None)
			std::get<0>(r) = std::get<0>(r).view(target.sizes());
		return r;
	}
	auto r = on_cpu("nll_loss2d_forward", false, [&] {
		return at::nll_loss2d_forward(cpu(x), cpu(target), cpu(weight), reduction, ignore_index);
	});
	return { std::get<0>(r).to(x.device()), std::get<1>(r).to(x.device()) };
}

static at::Tensor nll_loss2d_backward(const at::Tensor &grad, const at::Tensor &x, const at::Tensor &target,
				      const c10::optional<at::Tensor> &weight, int64_t reduction, int64_t ignore_index,
				      const at::Tensor &total_weight)
{
	if (image_shapes(x, target) && on_device(grad, x)) {
		int64_t c = x.size(1), n = target.numel();
		/* nll_loss_backward reads only the shape and type of its x: a stride-0 stand-in, no copy */
		at::Tensor like = at::empty({ 1, 1 }, x.options()).expand({ n, c });
		at::Tensor g = reduction == at::Reduction::None ? grad.reshape({ -1 }) : grad;
		at::Tensor gi = maia_torch::ops::nll_loss_backward(g, like, target.reshape({ -1 }), weight, reduction, ignore_index,
						  total_weight);

		return gi.view({ x.size(0), x.size(2), x.size(3), c }).permute({ 0, 3, 1, 2 }).contiguous();
	}
	return on_cpu("nll_loss2d_backward", false, [&] {
		       return at::nll_loss2d_backward(cpu(grad), cpu(x), cpu(target), cpu(weight), reduction,
						      ignore_index, cpu(total_weight));
	       }).to(x.device());
}

TORCH_LIBRARY_IMPL(aten, PrivateUse1, m)
{
	m.impl("nll_loss2d_forward", nll_loss2d_forward);
	m.impl("nll_loss2d_backward", nll_loss2d_backward);
	m.impl("_log_softmax_backward_data", log_softmax_backward);
	m.impl("nll_loss_forward", nll_loss_forward);
	m.impl("nll_loss_backward", nll_loss_backward);
}

} // namespace ops
} // namespace maia_torch
