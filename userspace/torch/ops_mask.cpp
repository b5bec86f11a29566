// SPDX-License-Identifier: MIT
/*
 * Boolean masks on the device: nonzero (so torch.where(cond), argwhere,
 * and the index tensors of x[mask] in ops_advindex.cpp), masked_select and
 * masked_scatter_ (so masked_select's backward).
 *
 * A compaction in three TVP programs over the mask's elements in row-major
 * order (any strides, rank <= 5), one 1024-lane block per instance:
 * "mskcnt" finds each block's inclusive prefix sum of (element != 0) by
 * two 32 x 32 matrix products, keeps it for the block's set lanes in a
 * scratch buffer and stores the block's count; "mskscan" (one instance)
 * turns the counts into each block's first output row and the total; the
 * host reads the total (the result's size depends on the data: one host
 * wait per op) and allocates the result; "mskidx" writes each set element's coordinates
 * (int64) at its row, "msksel" its value of x. Counts are int32: masks of
 * up to 2^24 elements (more take the CPU path).
 */
#include <torch/library.h>

#include <ATen/ExpandUtils.h>
#include <ATen/MemoryOverlap.h>

#include "ops_mask.h"

namespace maia_torch {
namespace ops {

using tvp::Launch;

/* ---- the programs ------------------------------------------------------------ */

/*
 * v<x> (int32) = its inclusive prefix sum over the 1024 lanes, through the
 * 4 KiB at s<scr>: log2(1024) steps of x[lane] += x[lane - k]. Uses
 * v19-v22; v17 = 0, v31 = the lane.
 */
static std::string scan(int x, int scr)
{
	std::string v = "v" + std::to_string(x), s = "s" + std::to_string(scr), r;

	for (int k = 1; k < 1024; k *= 2)
		r += "\tvst " + v + ", " + s + ", unit, i32\n\tvsplati v19, " + std::to_string(k) +
		     "\n\tvisub v20, v31, v19\n\tvicmp v21, v20, v17, ge\n\tvld v22, " + s +
		     ", v20, i32, v21\n\tviadd " + v + ", " + v + ", v22\n";
	return r;
}

/*
 * v1 = the inclusive prefix sum of v18 (int32 0/1) over the 1024 lanes as
 * a 32 x 32 matrix X in the tensor unit, exact in binary32: X U (U[k][c] =
 * k <= c) sums along each row, L T (L[r][k] = k < r, T[k][c] = row k's
 * total) adds the rows before. Sets the shape to 32 x 32; uses v19-v25.
 */
static std::string scan_dot()
{
	return "\tshape 32, 32\n\tvsplati v19, 32\n\tvidiv v20, v31, v19\n\tvirem v21, v31, v19\t# r, c\n"
	       "\tvicmp v22, v20, v21, le\n\tvcvt v22, v22, i2f\t# U\n"
	       "\tvicmp v23, v21, v20, lt\n\tvcvt v23, v23, i2f\t# L\n"
	       "\tvcvt v24, v18, i2f\n\tvsplati v1, 0.0\n\tvdot v1, v24, v22, 32\t# X U\n"
	       "\tvredsum v25, v24, 1\n\tvbcol v25, v25\t# T\n\tvdot v1, v23, v25, 32\n\tvcvt v1, v1, f2i\n";
}

/*
 * mskcnt: s1 = mask, s2 = counts (int32 per block), s3 = scratch (int32
 * per element, whole blocks), s4 = n, s5/s6 = the shape, s7-s9 = the
 * mask's strides. scratch[f] = f's row + 1 within its block when set, else 0.
 */
static std::string mskcnt(const std::string &t)
{
	bool flt = t == "f32" || t == "bf16" || t == "f16";

	return tvp_asm_coords5(4, 5) + tvp_asm_dot5(12, 7) + "\tvld v15, s1, v12, " + t + ", v29\n" +
	       "\tvsplati v17, 0\n\t" + (flt ? "vfcmp" : "vicmp") + " v18, v15, v17, ne\t# a NaN is set too\n" +
	       "\tvand v18, v18, v29\n\tmuli s23, s20, 4096\n\tadd s3, s3, s23\n" + scan_dot() +
	       "\tvsel v2, v1, v17, v18\n\tvst v2, s3, unit, i32\n"
	       "\tvext s24, v1, 1023\n\tmuli s23, s20, 4\n\tadd s23, s2, s23\n\tsst s24, s23, i32\n\thalt\n";
}

/*
 * mskscan (one instance): s1 = the counts of s2 = nb blocks, in a buffer
 * of whole 1024-word chunks past nb; each becomes the block's first row,
 * counts[nb] the total. The scan works in the chunk itself (log steps in
 * int32: a total may pass binary32's exact integers).
 */
static std::string mskscan()
{
	return "\tviota v31, 0\n\tvsplati v17, 0\n\tli s5, 0\t# carry\n\tli s6, 0\t# chunk start\n"
	       "chunk:\n\tsub s7, s2, s6\n\tvsplat v30, s7\n\tvicmp v29, v31, v30, lt\n"
	       "\tmuli s8, s6, 4\n\tadd s9, s1, s8\n\tvld v1, s9, unit, i32, v29\n\tvmov v2, v1\n" + scan(1, 9) +
	       "\tvisub v3, v1, v2\n\tvsplat v4, s5\n\tviadd v3, v3, v4\n\tvst v3, s9, unit, i32, v29\n"
	       "\tvext s10, v1, 1023\n\tadd s5, s5, s10\n\taddi s6, s6, 1024\n\tblt s6, s2, chunk\n"
	       "\tmuli s8, s2, 4\n\tadd s9, s1, s8\n\tsst s5, s9, i32\n\thalt\n";
}

/* v18 = the set lanes, v20 = their rows: s1 = scratch, s2 = counts (first rows), s4 = n, s5/s6 = the shape. */
static std::string rows()
{
	return tvp_asm_coords5(4, 5) + "\tvld v15, s1, v28, i32, v29\n\tvsplati v17, 0\n\tvicmp v18, v15, v17, gt\n"
	       "\tvand v18, v18, v29\n\tmuli s23, s20, 4\n\tadd s23, s2, s23\n\tsld s24, s23, i32\n"
	       "\tvsplat v19, s24\n\tviadd v20, v15, v19\n\tvsplati v21, -1\n\tviadd v20, v20, v21\t# the row\n";
}

/* mskidx: s3 = out (int64 [count, r]), s7 = r; the coordinates of the last r of the 5 dimensions. */
static std::string mskidx()
{
	std::string s = rows() + "\tvsplat v21, s7\n\tvimul v20, v20, v21\n\tli s25, 5\n\tsub s25, s25, s7\n"
			"\tvsplat v21, s25\n\tvisub v20, v20, v21\n\tviadd v20, v20, v20\t# word of c0\n";

	for (int d = 0; d < 5; d++) {
		std::string l = "skip" + std::to_string(d);

		s += "\tli s26, " + std::to_string(d) + "\n\tblt s26, s25, " + l + "\n\tvsplati v21, " +
		     std::to_string(2 * d) + "\n\tviadd v22, v20, v21\n\tvst v" + std::to_string(d) +
		     ", s3, v22, i32, v18\n\tvsplati v21, 1\n\tviadd v22, v22, v21\n\tvst v17, s3, v22, i32, v18\n" +
		     l + ":\n";
	}
	return s + "\thalt\n";
}

/* msksel: s3 = out (contiguous), s7-s9 = x's strides, s10 = x. */
static std::string msksel(const std::string &t)
{
	return rows() + tvp_asm_dot5(11, 7) + "\tvld v24, s10, v11, " + t + ", v18\n\tvst v24, s3, v20, " + t +
	       ", v18\n\thalt\n";
}

static std::string family(const std::string &kind, const std::string &t)
{
	bool any = t == "f32" || t == "bf16" || t == "f16" || t == "i32" || t == "i8";

	if (kind == "mskcnt")
		return any ? mskcnt(t) : "";
	if (kind == "msksel")
		return any ? msksel(t) : "";
	if (t != "i32")
		return "";
	return kind == "mskscan" ? mskscan() : mskidx();
}

[[maybe_unused]] static const bool registered = tvp::add_family({ "mskcnt", "mskscan", "mskidx", "msksel" }, family);

/* ---- the compaction ------------------------------------------------------------ */

/* Counts are int32 and the scan of the block counts one instance's loop. */
static constexpr int64_t max_mask = (int64_t)1 << 24;

static std::vector<int64_t> vec(at::IntArrayRef a)
{
	return std::vector<int64_t>(a.begin(), a.end());
}

struct Compaction {
	at::Tensor scratch, counts;
	int64_t total = 0;
};

/*
 * Count mask's set elements on the device: 1 (c filled, the total read
 * back: a host wait), 0 (not for the device), -1 (a kernel failed).
 */
static int count(const at::Tensor &mask, Compaction &c, const char *op)
{
	const char *t = mask.scalar_type() == at::kBool || mask.scalar_type() == at::kByte ? "i8"
										 : elem_exact(mask.scalar_type());

	if (!on_device(mask) || !t || mask.dim() < 1 || mask.dim() > 5 || mask.numel() > max_mask ||
	    !int32_reach(mask))
		return 0;
	int64_t n = mask.numel(), nb = tvp::blocks(n);
	int dev = dev_of(mask);
	at::TensorOptions i32 = mask.options().dtype(at::kInt);

	c.total = 0;
	if (n == 0)
		return 1;
	c.scratch = at::empty({ nb * 1024 }, i32);
	c.counts = at::empty({ (nb + 1 + 1023) / 1024 * 1024 }, i32);
	std::vector<Launch> l = {
		{ std::string("mskcnt.") + t, (uint32_t)nb,
		  std::vector<uint64_t>{ va_of(mask), va_of(c.counts), va_of(c.scratch), (uint64_t)n } +
			  tvp_pack_shape5(vec(mask.sizes())) + tvp_pack_strides5(vec(mask.strides())) },
		{ "mskscan.i32", 1, { va_of(c.counts), (uint64_t)nb } },
	};
	if (tvp::run(dev, l, op) != l.size())
		return -1;
	int32_t total = 0;
	copy_from_device(dev, &total, va_of(c.counts) + 4 * nb, sizeof(total));
	c.total = total;
	return 1;
}

int nonzero_on_device(const at::Tensor &mask, at::Tensor &out, const char *op)
{
	Compaction c;
	int r = count(mask, c, op);

	if (r != 1)
		return r;
	out = at::empty({ c.total, mask.dim() }, mask.options().dtype(at::kLong));
	if (c.total == 0)
		return 1;
	Launch l = { "mskidx.i32", tvp::blocks(mask.numel()),
		     std::vector<uint64_t>{ va_of(c.scratch), va_of(c.counts), va_of(out), (uint64_t)mask.numel() } +
			     tvp_pack_shape5(vec(mask.sizes())) + std::vector<uint64_t>{ (uint64_t)mask.dim() } };
	return tvp::run(dev_of(mask), { l }, op) == 1 ? 1 : -1;
}

/* ---- the ops ------------------------------------------------------------------ */

static at::Tensor nonzero(const at::Tensor &self)
{
	at::Tensor out;
	int r = nonzero_on_device(self, out, "nonzero");

	if (r == 1) {
		count_device_op("nonzero");
		return out;
	}
	return on_cpu("nonzero", r < 0, [&] { return cpu(self).nonzero(); }).to(self.device());
}

static at::Tensor &nonzero_out(const at::Tensor &self, at::Tensor &out)
{
	at::Tensor r = ops::nonzero(self);

	TORCH_CHECK(out.scalar_type() == at::kLong,
		    "nonzero: Expected out tensor to have scalar type Long but got scalar type ", out.scalar_type());
	out.resize_(r.sizes());
	return out.copy_(r);
}

/* self[mask] with both broadcast: 1 done (out set), 0 not for the device, -1 a kernel failed. */
static int select_on_device(const at::Tensor &self, const at::Tensor &mask, at::Tensor &out)
{
	if (!on_device(self) || !on_device(mask, self) || mask.scalar_type() != at::kBool ||
	    !elem_exact(self.scalar_type()))
		return 0;
	at::DimVector shape;
	try {
		shape = at::infer_size_dimvector(self.sizes(), mask.sizes());
	} catch (const std::exception &) {
		return 0;
	}
	at::Tensor x = self.expand(shape), m = mask.expand(shape);
	Compaction c;

	if (!int32_reach(x))
		return 0;
	int r = count(m, c, "masked_select");
	if (r != 1)
		return r;
	out = at::empty({ c.total }, self.options());
	if (c.total == 0)
		return 1;
	Launch l = { std::string("msksel.") + elem_exact(self.scalar_type()), tvp::blocks(m.numel()),
		     std::vector<uint64_t>{ va_of(c.scratch), va_of(c.counts), va_of(out), (uint64_t)m.numel() } +
			     tvp_pack_shape5(vec(m.sizes())) + tvp_pack_strides5(vec(x.strides())) +
			     std::vector<uint64_t>{ va_of(x) } };
	return tvp::run(dev_of(self), { l }, "masked_select") == 1 ? 1 : -1;
}

static at::Tensor masked_select(const at::Tensor &self, const at::Tensor &mask)
{
	at::Tensor out;
	int r = select_on_device(self, mask, out);

	if (r == 1) {
		count_device_op("masked_select");
		return out;
	}
	return on_cpu("masked_select", r < 0, [&] { return at::masked_select(cpu(self), cpu(mask)); })
		.to(self.device());
}

static at::Tensor &masked_select_out(const at::Tensor &self, const at::Tensor &mask, at::Tensor &out)
{
	TORCH_CHECK(out.scalar_type() == self.scalar_type(),
		    "masked_select(): self and result must have the same scalar type");
	at::Tensor r = ops::masked_select(self, mask);

	out.resize_(r.sizes());
	return out.copy_(r);
}

/*
 * self[mask] = source[:count] in row-major order, mask broadcast to self:
 * the set elements' coordinates by nonzero, then index_put_ on the device.
 */
static at::Tensor &masked_scatter_(at::Tensor &self, const at::Tensor &mask, const at::Tensor &source)
{
	auto ref = [&] { return cpu(self).masked_scatter_(cpu(mask), cpu(source)); };
	int r = 0;

	if (on_device(self) && on_device(mask, self) && on_device(source, self) && mask.scalar_type() == at::kBool &&
	    source.scalar_type() == self.scalar_type() && elem_exact(self.scalar_type()) &&
	    at::is_expandable_to(mask.sizes(), self.sizes()) && self.dim() >= 1) {
		at::Tensor nz;

		r = nonzero_on_device(mask.expand(self.sizes()), nz, "masked_scatter_");
		if (r == 1) {
			int64_t n = nz.size(0);

			if (source.numel() < n)
				cpu_error("masked_scatter_", ref);
			c10::List<c10::optional<at::Tensor>> ix;
			for (int64_t j = 0; j < self.dim(); j++)
				ix.push_back(nz.select(1, j));
			if (n)
				at::index_put_(self, ix, source.reshape({ -1 }).narrow(0, 0, n));
			count_device_op("masked_scatter_");
			return self;
		}
	}
	return self.copy_(on_cpu("masked_scatter_", r < 0, ref));
}

TORCH_LIBRARY_IMPL(aten, PrivateUse1, m)
{
	m.impl("nonzero", nonzero);
	m.impl("nonzero.out", nonzero_out);
	m.impl("masked_select", masked_select);
	m.impl("masked_select.out", masked_select_out);
	m.impl("masked_scatter_", masked_scatter_);
}

} // namespace ops
} // namespace maia_torch
