// SPDX-License-Identifier: MIT
/*
 * The TVP kernel library (tvp_kernels.h): the programs as assembly text
 * (Documentation/tvp-asm.rst), one per kernel kind and element type,
 * assembled by libmaia the first time a kernel is used and made a
 * maia_kernel once per device; launches append KERNEL commands to a job.
 *
 * Element-wise kernels share one layout: s1..sK are the operands' device
 * addresses, s<K+1> the element count n, float arguments after it as
 * binary32 bits. Instance p (grid axis 0) takes elements [1024 p, 1024 p +
 * 1024); v29 masks the lanes past n, so the last block neither reads nor
 * writes beyond the tensors. Operands are contiguous; float operands are
 * f32, bf16 or f16 (loads widen to binary32, stores round to nearest even),
 * booleans are bytes (i8 0 or 1).
 */
#include "tvp_kernels.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <mutex>
#include <set>

namespace maia_torch {
namespace tvp {

/* ---- the programs ------------------------------------------------------------ */

/* A binary32 constant for vsplati: its exponent form always has an 'e', so it reads as a float. */
static std::string flt(double v)
{
	char buf[32];

	std::snprintf(buf, sizeof(buf), "%.9e", (double)(float)v);
	return buf;
}

/* Bytes per element of a TVP dtype name ("f32?": an optional f32 operand, address 0 when absent). */
static int esize(const std::string &t)
{
	return t.compare(0, 3, "f32") == 0 ? 4 : t == "i8" ? 1 : 2;
}

/*
 * Move pointers s1..s<K> (element types ts) to this instance's block and
 * set v29 = (lane < elements left), n in s<nreg>. Uses s20-s23, v29-v31.
 */
static std::string prologue(const std::vector<std::string> &ts, int nreg)
{
	std::string s = "\tpid s20, 0\n"
			"\tmuli s21, s20, 1024\t# this instance's first element\n"
			"\tsub s23, s" + std::to_string(nreg) + ", s21\t# elements left\n"
			"\tvsplat v30, s23\n"
			"\tviota v31, 0\n"
			"\tvicmp v29, v31, v30, lt\t# v29: the lanes in range (the masked tail)\n";

	for (size_t i = 0; i < ts.size(); i++) {
		std::string r = "s" + std::to_string(i + 1);
		bool optional = ts[i].back() == '?';

		if (optional)	/* an absent operand's 0 stays 0 */
			s += "\tbeqz " + r + ", absent" + std::to_string(i + 1) + "\n";
		s += "\tmuli s22, s21, " + std::to_string(esize(ts[i])) + "\n\tadd " + r + ", " + r +
		     ", s22\n";
		if (optional)
			s += "absent" + std::to_string(i + 1) + ":\n";
	}
	return s;
}

static std::string ld(int v, int s, const std::string &t)
{
	return "\tvld v" + std::to_string(v) + ", s" + std::to_string(s) + ", unit, " + t + ", v29\n";
}

static std::string st(int v, int s, const std::string &t)
{
	return "\tvst v" + std::to_string(v) + ", s" + std::to_string(s) + ", unit, " + t + ", v29\n";
}

/* vd = 1 - e^y for y <= 0 (v20-v28 scratch except vd, y): Taylor's expm1 near 0, where 1 - e^y cancels. */
static std::string one_minus_exp(int vd, int vy)
{
	std::string y = "v" + std::to_string(vy), d = "v" + std::to_string(vd);
	std::string s = "\tvsplati v26, 1.0\n\tvmov v27, v26\t# t = 1\n";

	/* expm1(y) = y (1 + y/2 (1 + y/3 (... (1 + y/9)))): |y| < 0.5 leaves < 1e-9 relative. */
	for (int k = 9; k >= 2; k--)
		s += "\tvsplati v25, " + flt(1.0 / k) + "\n\tvfmul v25, v25, " + y +
		     "\n\tvfma v27, v25, v27, v26\n";
	s += "\tvfmul v27, v27, " + y + "\n\tvfneg v27, v27\t# -expm1(y)\n";
	s += "\tvexp v28, " + y + "\n\tvfsub v28, v26, v28\t# 1 - e^y\n";
	s += "\tvfabs v25, " + y + "\n\tvsplati v24, 0.5\n\tvfcmp v25, v25, v24, lt\n";
	s += "\tvsel " + d + ", v27, v28, v25\n";
	return s;
}

/* What each kind's operands are (element types of s1..sK; T = the float type). */
struct Kind {
	std::string name;
	std::vector<std::string> ptrs;
	std::string body;	/* after the prologue; n is s<ptrs.size() + 1> */
};

static const char *const conds[] = { "eq", "ne", "lt", "le", "gt", "ge" };

/* The element-wise kinds, T standing for the float type. */
static std::vector<Kind> elementwise()
{
	std::vector<Kind> ks;
	const std::pair<const char *, const char *> unary[] = {
		{ "exp", "vexp" }, { "log", "vlog" }, { "sqrt", "vsqrt" }, { "rsqrt", "vrsqrt" },
		{ "reciprocal", "vrcp" }, { "neg", "vfneg" }, { "abs", "vfabs" },
	};

	/* s1 = x, s2 = out, s3 = n */
	for (const auto &u : unary)
		ks.push_back({ u.first, { "T", "T" },
			       ld(1, 1, "T") + "\t" + u.second + " v1, v1\n" + st(1, 2, "T") });
	for (const char *c : conds) {
		/* s1 = a, s2 = b, s3 = out (bool), s4 = n */
		ks.push_back({ std::string("cmp_") + c, { "T", "T", "i8" },
			       ld(1, 1, "T") + ld(2, 2, "T") + "\tvfcmp v3, v1, v2, " + c + "\n" +
				       st(3, 3, "i8") });
		/* s1 = a, s2 = out (bool), s3 = n, s4 = the scalar */
		ks.push_back({ std::string("cmps_") + c, { "T", "i8" },
			       ld(1, 1, "T") + "\tvsplat v2, s4\n\tvfcmp v3, v1, v2, " + c + "\n" +
				       st(3, 2, "i8") });
	}
	/* s1 = cond (bool), s2 = a, s3 = b, s4 = out, s5 = n */
	ks.push_back({ "where", { "i8", "T", "T", "T" },
		       ld(1, 1, "i8") + ld(2, 2, "T") + ld(3, 3, "T") + "\tvsel v4, v2, v3, v1\n" +
			       st(4, 4, "T") });
	/* s1 = grad, s2 = x, s3 = out, s4 = n, s5 = threshold: x <= threshold ? 0 : grad */
	ks.push_back({ "threshold_backward", { "T", "T", "T" },
		       ld(1, 1, "T") + ld(2, 2, "T") +
			       "\tvsplat v5, s5\n\tvfcmp v6, v2, v5, le\n\tvsplati v7, 0\n"
			       "\tvsel v3, v7, v1, v6\n" + st(3, 3, "T") });
	/* s1 = grad, s2 = x, s3 = out, s4 = n: grad (Phi(x) + x phi(x)), as CPU torch */
	ks.push_back({ "gelu_backward", { "T", "T", "T" },
		       ld(1, 1, "T") + ld(2, 2, "T") +
			       "\tvsplati v10, " + flt(M_SQRT1_2) + "\n\tvfmul v3, v2, v10\n\tverf v3, v3\n"
			       "\tvsplati v11, 1.0\n\tvfadd v3, v3, v11\n"
			       "\tvsplati v12, 0.5\n\tvfmul v3, v3, v12\t# cdf\n"
			       "\tvfmul v4, v2, v2\n\tvsplati v13, -0.5\n\tvfmul v4, v4, v13\n\tvexp v4, v4\n"
			       "\tvsplati v14, " + flt(M_2_SQRTPI * M_SQRT1_2 * 0.5) +
			       "\n\tvfmul v4, v4, v14\t# pdf\n"
			       "\tvfmul v4, v4, v2\n\tvfadd v3, v3, v4\n\tvfmul v3, v3, v1\n" +
			       st(3, 3, "T") });
	/* The same for approximate='tanh' (torch's GeluBackward formula, term by term). */
	ks.push_back({ "gelu_tanh_backward", { "T", "T", "T" },
		       ld(1, 1, "T") + ld(2, 2, "T") +
			       "\tvfmul v3, v2, v2\t# x^2\n\tvfmul v4, v3, v2\t# x^3\n"
			       "\tvsplati v10, " + flt(0.044715) + "\n\tvfmul v4, v4, v10\n\tvfadd v4, v2, v4\n"
			       "\tvsplati v11, " + flt(M_SQRT2 * M_2_SQRTPI * 0.5) +
			       "\n\tvfmul v4, v4, v11\t# inner\n\tvtanh v4, v4\n"
			       "\tvsplati v12, 0.5\n\tvfmul v5, v2, v12\t# left\n"
			       "\tvsplati v13, 1.0\n\tvfadd v6, v4, v13\n\tvfmul v6, v6, v12\t# left'\n"
			       "\tvfmul v7, v4, v4\n\tvfsub v7, v13, v7\t# tanh'\n"
			       "\tvsplati v14, " + flt(3 * (double)0.044715f) +
			       "\n\tvfmul v8, v3, v14\n\tvfadd v8, v13, v8\n\tvfmul v8, v8, v11\t# inner'\n"
			       "\tvfmul v9, v5, v7\n\tvfmul v9, v9, v8\n\tvfadd v6, v6, v9\n"
			       "\tvfmul v6, v6, v1\n" + st(6, 3, "T") });
	/* s1 = grad, s2 = x, s3 = out, s4 = n: grad s (1 + x (1 - s)), s = sigmoid(x) */
	ks.push_back({ "silu_backward", { "T", "T", "T" },
		       ld(1, 1, "T") + ld(2, 2, "T") +
			       "\tvfneg v3, v2\n\tvexp v3, v3\n\tvsplati v13, 1.0\n\tvfadd v3, v3, v13\n"
			       "\tvfdiv v3, v13, v3\t# sigmoid\n"
			       "\tvfsub v4, v13, v3\n\tvfmul v4, v2, v4\n\tvfadd v4, v13, v4\n"
			       "\tvfmul v5, v1, v3\n\tvfmul v5, v5, v4\n" + st(5, 3, "T") });
	/* s1 = x, s2 = out, s3 = n, s4 = a: x a */
	ks.push_back({ "muls", { "T", "T" },
		       ld(1, 1, "T") + "\tvsplat v2, s4\n\tvfmul v1, v1, v2\n" + st(1, 2, "T") });
	/* s1 = x, s2 = out, s3 = n, s4 = b: x + b */
	ks.push_back({ "adds", { "T", "T" },
		       ld(1, 1, "T") + "\tvsplat v2, s4\n\tvfadd v1, v1, v2\n" + st(1, 2, "T") });
	/* s1 = x, s2 = out, s3 = n, s4 = address of an f32 scalar a: x a */
	ks.push_back({ "mult", { "T", "T" },
		       ld(1, 1, "T") + "\tsld s9, s4, f32\n\tvsplat v2, s9\n\tvfmul v1, v1, v2\n" +
			       st(1, 2, "T") });
	/* s1 = x, s2 = out, s3 = n, s4 = b: x / b */
	ks.push_back({ "divs", { "T", "T" },
		       ld(1, 1, "T") + "\tvsplat v2, s4\n\tvfdiv v1, v1, v2\n" + st(1, 2, "T") });
	/*
	 * s1 = x, s2 = end, s3 = out, s4 = n, s5 = a, s6 = 0 or 1: lerp as CPU torch
	 * computes it, (end - x) a + (s6 ? end : x) in one rounding, with a = weight
	 * (|weight| < 0.5, from x) or weight - 1 (from end).
	 */
	ks.push_back({ "lerps", { "T", "T", "T" },
		       ld(1, 1, "T") + ld(2, 2, "T") +
			       "\tvsplat v5, s5\n\tvsplat v6, s6\n\tvsel v7, v2, v1, v6\n"
			       "\tvfsub v3, v2, v1\n\tvfma v3, v3, v5, v7\n" + st(3, 3, "T") });
	/* s1 = x, s2 = t1, s3 = t2, s4 = out, s5 = n, s6 = value: x + value t1 t2 */
	ks.push_back({ "addcmul", { "T", "T", "T", "T" },
		       ld(1, 1, "T") + ld(2, 2, "T") + ld(3, 3, "T") +
			       "\tvsplat v5, s6\n\tvfmul v4, v5, v2\n\tvfmul v4, v4, v3\n"
			       "\tvfadd v4, v1, v4\n" + st(4, 4, "T") });
	/* s1 = x, s2 = t1, s3 = t2, s4 = out, s5 = n, s6 = value: x + value (t1 / t2) */
	ks.push_back({ "addcdiv", { "T", "T", "T", "T" },
		       ld(1, 1, "T") + ld(2, 2, "T") + ld(3, 3, "T") +
			       "\tvsplat v5, s6\n\tvfdiv v4, v2, v3\n\tvfmul v4, v5, v4\n"
			       "\tvfadd v4, v1, v4\n" + st(4, 4, "T") });
	/* s1 = x, s2 = out, s3 = n, s4 = lo, s5 = hi: min(max(x, lo), hi), NaN stays NaN */
	ks.push_back({ "clamp", { "T", "T" },
		       ld(1, 1, "T") + "\tvsplat v2, s4\n\tvsplat v3, s5\n"
				       "\tvfmax v4, v1, v2\n\tvfmin v4, v4, v3\n"
				       "\tvfcmp v5, v1, v1, ne\t# NaN: minimumNumber would drop it\n"
				       "\tvsel v4, v1, v4, v5\n" + st(4, 2, "T") });
	/*
	 * AdamW, one parameter tensor (f32): s1 = param, s2 = grad, s3 = exp_avg,
	 * s4 = exp_avg_sq, s5 = max_exp_avg_sq (amsgrad) or 0, s6 = n, s7 = address
	 * of the step (f32, already incremented), then binary32: s8 = lr, s9 = 1 -
	 * beta1, s10 = beta2, s11 = 1 - beta2, s12 = 1 - lr weight_decay, s13 = eps,
	 * s14 = +1 or -1 (maximize), s15 = ln beta1, s16 = ln beta2. The bias
	 * corrections come from the step on the device (no host read).
	 */
	ks.push_back({ "adamw", { "f32", "f32", "f32", "f32", "f32?" },
		       "\tshape 1, 1\t# the per-tensor scalars, in lane 0\n"
		       "\tsld s17, s7, f32\n\tvsplat v16, s17\t# step\n"
		       "\tvsplat v17, s15\n\tvfmul v17, v17, v16\t# step ln beta1\n" +
			       one_minus_exp(18, 17) +
			       "\tvsplat v17, s16\n\tvfmul v17, v17, v16\t# step ln beta2\n" +
			       one_minus_exp(19, 17) +
			       "\tvsplat v20, s8\n\tvfdiv v20, v20, v18\n\tvfneg v20, v20\t# -lr / bc1\n"
			       "\tvsqrt v19, v19\t# sqrt(bc2)\n"
			       "\tshape 1, 1024\n\tvbcast v20, v20\n\tvbcast v19, v19\n" +
			       ld(1, 1, "f32") + ld(2, 2, "f32") + ld(3, 3, "f32") + ld(4, 4, "f32") +
			       "\tvsplat v10, s14\n\tvfmul v2, v2, v10\t# maximize: -grad\n"
			       "\tvsplat v10, s12\n\tvfmul v1, v1, v10\t# decoupled weight decay\n"
			       "\tvsplat v11, s9\n\tvfsub v5, v2, v3\n\tvfma v3, v5, v11, v3\t# lerp\n"
			       "\tvsplat v12, s10\n\tvsplat v13, s11\n\tvfmul v4, v4, v12\n"
			       "\tvfmul v6, v2, v2\n\tvfma v4, v6, v13, v4\n"
			       "\tvmov v7, v4\n"
			       "\tbeqz s5, noams\n" + ld(8, 5, "f32") +
			       "\tvfmax v7, v8, v4\n" + st(7, 5, "f32") +
			       "noams:\n"
			       "\tvsqrt v8, v7\n\tvfdiv v8, v8, v19\n\tvsplat v14, s13\n\tvfadd v8, v8, v14\n"
			       "\tvfdiv v9, v3, v8\n\tvfmul v9, v9, v20\n\tvfadd v1, v1, v9\n" +
			       st(1, 1, "f32") + st(3, 3, "f32") + st(4, 4, "f32") });
	return ks;
}

/*
 * norm2: one instance, s1 = x, s2 = out (an f32 scalar), s3 = n: sqrt of
 * the sum of squares, lane-wise FP32 accumulation over the 1024-element
 * blocks, then a tree of the lanes (VREDSUM).
 */
static std::string norm2(const std::string &t)
{
	return "\tvsplati v1, 0\n\tviota v31, 0\n\tli s4, 0\n"
	       "loop:\n\tbge s4, s3, done\n\tsub s5, s3, s4\n\tvsplat v30, s5\n"
	       "\tvicmp v29, v31, v30, lt\n" + ld(2, 1, t) +
	       "\tvfma v1, v2, v2, v1\n\taddi s4, s4, 1024\n\taddi s1, s1, " +
	       std::to_string(1024 * esize(t)) + "\n\tjmp loop\n"
	       "done:\n\tvredsum v3, v1, 1\n\tvsqrt v3, v3\n\tvext s6, v3, 0\n\tsst s6, s2, f32\n\thalt\n";
}

/* The families of other files, by kind; filled before main, read-only after. */
static std::map<std::string, Family> &families()
{
	static std::map<std::string, Family> f;

	return f;
}

bool add_family(const std::vector<std::string> &ks, Family gen)
{
	for (const std::string &k : ks)
		families()[k] = gen;
	return true;
}

std::vector<std::string> kinds()
{
	std::vector<std::string> names;

	for (const Kind &k : elementwise())
		names.push_back(k.name);
	names.push_back("norm2");
	for (const auto &f : families())
		names.push_back(f.first);
	return names;
}

std::string source(const std::string &program)
{
	size_t dot = program.find('.');
	std::string kind = program.substr(0, dot), t = program.substr(dot + 1);
	auto fam = families().find(kind);

	if (dot != std::string::npos && fam != families().end()) {
		std::string s = fam->second(kind, t);

		TORCH_CHECK(!s.empty(), "maia: no TVP program ", program);
		return s;
	}
	TORCH_CHECK(dot != std::string::npos && (t == "f32" || t == "bf16" || t == "f16"),
		    "maia: no TVP program ", program);
	if (kind == "norm2")
		return norm2(t);
	for (const Kind &k : elementwise()) {
		if (kind != k.name)
			continue;
		std::vector<std::string> ts;
		for (const std::string &p : k.ptrs)
			ts.push_back(p == "T" ? t : p);
		std::string s = prologue(ts, (int)ts.size() + 1) + k.body + "\thalt\n";
		for (size_t at; (at = s.find(", T,")) != std::string::npos;)
			s.replace(at, 4, ", " + t + ",");
		return s;
	}
	TORCH_CHECK(false, "maia: no TVP program ", program);
}

/* ---- kernels and launches ----------------------------------------------------- */

const char *elem(at::ScalarType t)
{
	switch (t) {
	case at::kFloat: return "f32";
	case at::kBFloat16: return "bf16";
	case at::kHalf: return "f16";
	default: return nullptr;
	}
}

uint32_t blocks(int64_t n)
{
	return (uint32_t)std::max<int64_t>(1, (n + MAIA_TVP_VLEN - 1) / MAIA_TVP_VLEN);
}

int64_t max_elements()
{
	return (int64_t)MAIA_TVP_MAX_GRID * MAIA_TVP_VLEN;
}

uint64_t f32_bits(double v)
{
	float f = (float)v;
	uint32_t u;

	std::memcpy(&u, &f, sizeof(u));
	return u;
}

/* mu protects everything below. */
static std::mutex mu;
static std::map<std::string, std::vector<struct maia_tvp_insn>> programs;	/* assembled */
static std::map<std::pair<int, std::string>, struct maia_kernel *> kernels;	/* per device */
static std::set<std::pair<int, std::string>> proven;	/* launched once without a device error */
static std::multiset<std::string> faults;		/* injected, by kind */
static const bool sync_env = std::getenv("MAIA_TORCH_SYNC") &&
			     std::strcmp(std::getenv("MAIA_TORCH_SYNC"), "0");

/* Program's kernel on device dev, assembled and created on first use; under mu. */
static struct maia_kernel *kernel_locked(int dev, const std::string &program)
{
	auto k = kernels.find({ dev, program });

	if (k != kernels.end())
		return k->second;
	auto p = programs.find(program);
	if (p == programs.end()) {
		struct maia_tvp_insn *insns = nullptr;
		uint32_t count = 0;
		std::string src = source(program);

		check(maia_tvp_assemble(src.c_str(), &insns, &count), ("maia_tvp_assemble " + program).c_str());
		p = programs.emplace(program, std::vector<struct maia_tvp_insn>(insns, insns + count)).first;
		std::free(insns);
	}
	struct maia_kernel *made = nullptr;
	check(maia_kernel_create(device(dev), p->second.data(), (uint32_t)p->second.size(), &made),
	      "maia_kernel_create");
	kernels[{ dev, program }] = made;
	return made;
}

void inject_fault(const std::string &kind)
{
	std::vector<std::string> all = kinds();

	TORCH_CHECK(std::find(all.begin(), all.end(), kind) != all.end(),
		    "maia::tvp_inject_fault: no TVP kernel '", kind, "'");
	std::lock_guard<std::mutex> guard(mu);
	faults.insert(kind);
}

/* Launches per job: their commands (about 170 bytes each) stay well inside a job's buffer. */
static const size_t max_per_job = 256;

/* Launches [from, to) as one job; how many of them completed (see run()). */
static size_t run_job(int dev, const std::vector<Launch> &launches, size_t from, size_t to,
		      const char *op)
{
	std::vector<struct maia_kernel *> ks;
	std::vector<uint32_t> budgets, offsets;
	bool wait = sync_env;

	{
		std::lock_guard<std::mutex> guard(mu);

		for (size_t i = from; i < to; i++) {
			const std::string &program = launches[i].program;
			auto f = faults.find(program.substr(0, program.find('.')));
			bool fault = f != faults.end();

			if (fault)
				faults.erase(f);
			ks.push_back(kernel_locked(dev, program));
			budgets.push_back(fault ? 1 : 0);
			wait = wait || fault || !proven.count({ dev, program });
		}
	}
	/* An earlier job's failure raises here, not blamed on these kernels. */
	if (wait)
		synchronize(dev);
	Job job(dev);
	for (size_t i = from; i < to; i++) {
		const Launch &l = launches[i];
		const uint32_t grid[3] = { l.grid, 1, 1 };

		offsets.push_back(maia_cmdbuf_size(job.cmdbuf()));
		job.add(maia_cmd_kernel(job.cmdbuf(), ks[i - from], grid, l.args.data(),
					(uint32_t)l.args.size(), budgets[i - from]),
			"maia_cmd_kernel");
	}
	if (!wait) {
		job.run();
		return to - from;
	}
	struct maia_job_status status;
	int err = job.run_status(&status);
	if (err == 0) {
		std::lock_guard<std::mutex> guard(mu);

		for (size_t i = from; i < to; i++)
			proven.insert({ dev, launches[i].program });
		return to - from;
	}
	if (status.status == 0)
		check(err, "maia_wait");	/* the host's error, not the device's: raise */
	/* The failed command is the last one starting at or before the error's offset. */
	size_t failed = 0;
	while (failed + 1 < offsets.size() && offsets[failed + 1] <= status.error_offset)
		failed++;
	std::fprintf(stderr, "maia: aten::%s: TVP kernel %s failed on maia:%d (job %s, device status %u: "
			     "%s): falling back to the CPU\n", op, launches[from + failed].program.c_str(),
		     dev, maia_job_status_name(status.status), status.device_status,
		     maia_device_status_name(status.device_status));
	return failed;
}

size_t run(int dev, const std::vector<Launch> &launches, const char *op)
{
	for (size_t from = 0; from < launches.size(); from += max_per_job) {
		size_t to = std::min(launches.size(), from + max_per_job);
		size_t done = run_job(dev, launches, from, to, op);

		if (done < to - from)
			return from + done;
	}
	return launches.size();
}

} // namespace tvp
} // namespace maia_torch
