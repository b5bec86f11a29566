// SPDX-License-Identifier: MIT
/*
 * maia.Tensor (a struct maia_tensor_desc) and maia.CmdBuf (a libmaia
 * command buffer with one method per command builder). The builders check
 * their arguments as the device would; their messages become maia.Error.
 */
#include "maia_py.h"

#include <stdio.h>
#include <string.h>

/* ---- tensor descriptors ----------------------------------------------- */

/* A sequence of at most MAIA_TENSOR_MAX_RANK non-negative integers. */
static int dims_arg(PyObject *seq, const char *what, uint64_t *out, unsigned int *n)
{
	PyObject *fast = PySequence_Fast(seq, "");
	Py_ssize_t i, len;

	if (!fast) {
		PyErr_Format(PyExc_TypeError, "maia.Tensor: %s must be a sequence of integers", what);
		return -1;
	}
	len = PySequence_Fast_GET_SIZE(fast);
	if (len < 1 || len > (Py_ssize_t)MAIA_TENSOR_MAX_RANK) {
		Py_DECREF(fast);
		PyErr_Format(PyExc_ValueError, "maia.Tensor: %s has %zd dimensions, the device takes 1 to %u",
			     what, len, MAIA_TENSOR_MAX_RANK);
		return -1;
	}
	for (i = 0; i < len; i++) {
		unsigned long long v = PyLong_AsUnsignedLongLong(PySequence_Fast_GET_ITEM(fast, i));

		if (PyErr_Occurred()) {
			Py_DECREF(fast);
			PyErr_Format(PyExc_ValueError,
				     "maia.Tensor: %s[%zd] is not a non-negative integer", what, i);
			return -1;
		}
		out[i] = v;
	}
	*n = (unsigned int)len;
	Py_DECREF(fast);
	return 0;
}

static int tensor_init(PyObject *self, PyObject *args, PyObject *kw)
{
	static char *kwlist[] = { "va", "dtype", "shape", "strides", "scale", "scale_addr", NULL };
	MaiaTensor *t = (MaiaTensor *)self;
	uint64_t dims[MAIA_TENSOR_MAX_RANK], strides[MAIA_TENSOR_MAX_RANK];
	uint32_t shape[MAIA_TENSOR_MAX_RANK];
	PyObject *shape_o, *strides_o = Py_None;
	unsigned long long va, scale_addr = 0;
	unsigned int dtype, rank, nstrides, i;
	double scale = 0.0;
	int err;

	if (!PyArg_ParseTupleAndKeywords(args, kw, "KIO|OdK", kwlist, &va, &dtype, &shape_o,
					 &strides_o, &scale, &scale_addr))
		return -1;
	if (dims_arg(shape_o, "shape", dims, &rank) < 0)
		return -1;
	for (i = 0; i < rank; i++) {
		if (dims[i] > UINT32_MAX) {
			PyErr_Format(PyExc_ValueError, "maia.Tensor: shape[%u] = %llu is too large",
				     i, (unsigned long long)dims[i]);
			return -1;
		}
		shape[i] = (uint32_t)dims[i];
	}
	err = maia_tensor_init(&t->desc, va, dtype, rank, shape);
	if (err < 0) {
		maia_py_raise("maia_tensor_init", err);
		return -1;
	}
	if (strides_o != Py_None) {
		if (dims_arg(strides_o, "strides", strides, &nstrides) < 0)
			return -1;
		if (nstrides != rank) {
			PyErr_Format(PyExc_ValueError,
				     "maia.Tensor: %u strides for a rank-%u shape", nstrides, rank);
			return -1;
		}
		for (i = 0; i < rank; i++)
			t->desc.strides[i] = strides[i];
	}
	if (scale != 0.0) {
		err = maia_tensor_set_scale(&t->desc, (float)scale);
		if (err < 0) {
			maia_py_raise("maia_tensor_set_scale", err);
			return -1;
		}
	}
	if (scale_addr) {
		err = maia_tensor_set_scale_addr(&t->desc, scale_addr);
		if (err < 0) {
			maia_py_raise("maia_tensor_set_scale_addr", err);
			return -1;
		}
	}
	return 0;
}

static PyObject *tuple_of(const void *v, unsigned int n, int wide)
{
	PyObject *t = PyTuple_New(n), *x;
	unsigned int i;

	for (i = 0; t && i < n; i++) {
		x = PyLong_FromUnsignedLongLong(wide ? ((const uint64_t *)v)[i] :
						       ((const uint32_t *)v)[i]);
		if (!x) {
			Py_DECREF(t);
			return NULL;
		}
		PyTuple_SET_ITEM(t, i, x);
	}
	return t;
}

static PyObject *tensor_get(PyObject *self, void *closure)
{
	const struct maia_tensor_desc *d = &((MaiaTensor *)self)->desc;
	const char *what = closure;

	if (!strcmp(what, "va"))
		return PyLong_FromUnsignedLongLong(d->addr);
	if (!strcmp(what, "dtype"))
		return PyLong_FromLong(d->dtype);
	if (!strcmp(what, "shape"))
		return tuple_of(d->shape, d->rank, 0);
	if (!strcmp(what, "strides"))
		return tuple_of(d->strides, d->rank, 1);
	if (!strcmp(what, "scale_addr"))
		return PyLong_FromUnsignedLongLong(d->scale_addr);
	return PyLong_FromUnsignedLongLong(maia_tensor_elems(d));
}

static PyGetSetDef tensor_getset[] = {
	{ "va", tensor_get, NULL, "device address", "va" },
	{ "dtype", tensor_get, NULL, "maia.DTYPE_*", "dtype" },
	{ "shape", tensor_get, NULL, "dimensions, outermost first", "shape" },
	{ "strides", tensor_get, NULL, "strides in elements", "strides" },
	{ "scale_addr", tensor_get, NULL, "block-scale address (MX types)", "scale_addr" },
	{ "elems", tensor_get, NULL, "number of elements", "elems" },
	{ NULL, NULL, NULL, NULL, NULL }
};

static PyObject *tensor_repr(PyObject *self)
{
	const struct maia_tensor_desc *d = &((MaiaTensor *)self)->desc;
	const char *name = maia_dtype_name(d->dtype);
	char buf[96];

	snprintf(buf, sizeof(buf), "maia.Tensor(va=0x%llx, dtype=%s, rank=%u)",
		 (unsigned long long)d->addr, name ? name : "?", d->rank);
	return PyUnicode_FromString(buf);
}

PyTypeObject MaiaTensorType = {
	PyVarObject_HEAD_INIT(NULL, 0)
	.tp_name = "maia.Tensor",
	.tp_basicsize = sizeof(MaiaTensor),
	.tp_flags = Py_TPFLAGS_DEFAULT,
	.tp_doc = "Tensor(va, dtype, shape, strides=None, scale=0.0, scale_addr=0): a device "
		  "tensor descriptor; strides in elements, contiguous when None.",
	.tp_new = PyType_GenericNew,
	.tp_init = tensor_init,
	.tp_repr = tensor_repr,
	.tp_getset = tensor_getset,
};

/* The descriptor of a maia.Tensor argument; None gives NULL when allowed. */
static int desc_arg(PyObject *o, const struct maia_tensor_desc **out, const char *name, int optional)
{
	if (optional && o == Py_None) {
		*out = NULL;
		return 0;
	}
	if (!PyObject_TypeCheck(o, &MaiaTensorType)) {
		PyErr_Format(PyExc_TypeError, "%s must be a maia.Tensor%s, not %s", name,
			     optional ? " or None" : "", Py_TYPE(o)->tp_name);
		return -1;
	}
	*out = &((MaiaTensor *)o)->desc;
	return 0;
}

/* ---- command buffers -------------------------------------------------- */

static struct maia_cmdbuf *cb_get(PyObject *self)
{
	MaiaCmdBuf *c = (MaiaCmdBuf *)self;

	if (!c->cb)
		PyErr_SetString(maia_py_error, "the maia.CmdBuf is closed");
	return c->cb;
}

static void cb_dealloc(PyObject *self)
{
	MaiaCmdBuf *c = (MaiaCmdBuf *)self;

	if (c->cb)
		maia_cmdbuf_destroy(c->cb);
	Py_XDECREF(c->device);
	Py_TYPE(self)->tp_free(self);
}

static PyObject *done(const char *fn, int err)
{
	if (err < 0)
		return maia_py_raise(fn, err);
	Py_RETURN_NONE;
}

static PyObject *cb_close(PyObject *self, PyObject *unused)
{
	MaiaCmdBuf *c = (MaiaCmdBuf *)self;

	(void)unused;
	if (c->cb)
		maia_cmdbuf_destroy(c->cb);
	c->cb = NULL;
	Py_RETURN_NONE;
}

static PyObject *cb_reset(PyObject *self, PyObject *unused)
{
	struct maia_cmdbuf *cb = cb_get(self);

	(void)unused;
	if (!cb)
		return NULL;
	maia_cmdbuf_reset(cb);
	Py_RETURN_NONE;
}

static PyObject *cb_size(PyObject *self, void *closure)
{
	struct maia_cmdbuf *cb = cb_get(self);

	(void)closure;
	return cb ? PyLong_FromUnsignedLong(maia_cmdbuf_size(cb)) : NULL;
}

static PyObject *cb_nop(PyObject *self, PyObject *unused)
{
	struct maia_cmdbuf *cb = cb_get(self);

	(void)unused;
	return cb ? done("maia_cmd_nop", maia_cmd_nop(cb)) : NULL;
}

static PyObject *cb_copy(PyObject *self, PyObject *args)
{
	struct maia_cmdbuf *cb = cb_get(self);
	unsigned long long dst, src, n;

	if (!cb || !PyArg_ParseTuple(args, "KKK", &dst, &src, &n))
		return NULL;
	return done("maia_cmd_copy", maia_cmd_copy(cb, dst, src, n));
}

static PyObject *cb_fill(PyObject *self, PyObject *args)
{
	struct maia_cmdbuf *cb = cb_get(self);
	unsigned long long dst, n;
	unsigned int pattern;

	if (!cb || !PyArg_ParseTuple(args, "KKI", &dst, &n, &pattern))
		return NULL;
	return done("maia_cmd_fill", maia_cmd_fill(cb, dst, n, pattern));
}

static PyObject *cb_fence_write(PyObject *self, PyObject *args)
{
	struct maia_cmdbuf *cb = cb_get(self);
	unsigned long long addr, value;

	if (!cb || !PyArg_ParseTuple(args, "KK", &addr, &value))
		return NULL;
	return done("maia_cmd_fence_write", maia_cmd_fence_write(cb, addr, value));
}

static PyObject *cb_timestamp(PyObject *self, PyObject *args)
{
	struct maia_cmdbuf *cb = cb_get(self);
	unsigned long long addr;

	if (!cb || !PyArg_ParseTuple(args, "K", &addr))
		return NULL;
	return done("maia_cmd_timestamp", maia_cmd_timestamp(cb, addr));
}

static PyObject *cb_gemm(PyObject *self, PyObject *args, PyObject *kw)
{
	static char *kwlist[] = { "a", "b", "c", "alpha", "beta", "bias", "activation",
				  "trans_a", "trans_b", NULL };
	struct maia_cmdbuf *cb = cb_get(self);
	PyObject *ao, *bo, *co, *biaso = Py_None;
	struct maia_gemm_args g = { 0 };
	int trans_a = 0, trans_b = 0;
	float alpha = 1.0f, beta = 0.0f;

	if (!cb || !PyArg_ParseTupleAndKeywords(args, kw, "OOO|ffOIpp", kwlist, &ao, &bo, &co,
						&alpha, &beta, &biaso, &g.activation, &trans_a,
						&trans_b))
		return NULL;
	if (desc_arg(ao, &g.a, "a", 0) || desc_arg(bo, &g.b, "b", 0) ||
	    desc_arg(co, &g.c, "c", 0) || desc_arg(biaso, &g.bias, "bias", 1))
		return NULL;
	g.alpha = alpha;
	g.beta = beta;
	g.flags = (trans_a ? MAIA_GEMM_F_TRANS_A : 0) | (trans_b ? MAIA_GEMM_F_TRANS_B : 0);
	return done("maia_cmd_gemm_ex", maia_cmd_gemm_ex(cb, &g));
}

static PyObject *cb_binary(PyObject *self, PyObject *args, int mul)
{
	struct maia_cmdbuf *cb = cb_get(self);
	const struct maia_tensor_desc *x, *y, *out;
	PyObject *xo, *yo, *oo;

	if (!cb || !PyArg_ParseTuple(args, "OOO", &xo, &yo, &oo))
		return NULL;
	if (desc_arg(xo, &x, "x", 0) || desc_arg(yo, &y, "y", 0) || desc_arg(oo, &out, "out", 0))
		return NULL;
	if (mul)
		return done("maia_cmd_mul", maia_cmd_mul(cb, x, y, out, 0));
	return done("maia_cmd_add", maia_cmd_add(cb, x, y, out, 0));
}

static PyObject *cb_add(PyObject *self, PyObject *args)
{
	return cb_binary(self, args, 0);
}

static PyObject *cb_mul(PyObject *self, PyObject *args)
{
	return cb_binary(self, args, 1);
}

static PyObject *cb_scale(PyObject *self, PyObject *args)
{
	struct maia_cmdbuf *cb = cb_get(self);
	const struct maia_tensor_desc *x, *out;
	float alpha, beta = 0.0f;
	PyObject *xo, *oo;

	if (!cb || !PyArg_ParseTuple(args, "OOf|f", &xo, &oo, &alpha, &beta))
		return NULL;
	if (desc_arg(xo, &x, "x", 0) || desc_arg(oo, &out, "out", 0))
		return NULL;
	return done("maia_cmd_scale", maia_cmd_scale(cb, x, out, alpha, beta));
}

static PyObject *cb_activation(PyObject *self, PyObject *args)
{
	struct maia_cmdbuf *cb = cb_get(self);
	const struct maia_tensor_desc *x, *out;
	unsigned int act;
	PyObject *xo, *oo;

	if (!cb || !PyArg_ParseTuple(args, "OOI", &xo, &oo, &act))
		return NULL;
	if (desc_arg(xo, &x, "x", 0) || desc_arg(oo, &out, "out", 0))
		return NULL;
	return done("maia_cmd_activation", maia_cmd_activation(cb, x, out, act));
}

static PyObject *cb_softmax(PyObject *self, PyObject *args, PyObject *kw)
{
	static char *kwlist[] = { "x", "out", "scale", "causal", "causal_offset", "log", NULL };
	struct maia_cmdbuf *cb = cb_get(self);
	const struct maia_tensor_desc *x, *out;
	int causal = 0, offset = 0, log = 0;
	float scale = 1.0f;
	PyObject *xo, *oo;

	if (!cb || !PyArg_ParseTupleAndKeywords(args, kw, "OO|fpip", kwlist, &xo, &oo, &scale,
						&causal, &offset, &log))
		return NULL;
	if (desc_arg(xo, &x, "x", 0) || desc_arg(oo, &out, "out", 0))
		return NULL;
	return done("maia_cmd_softmax",
		    maia_cmd_softmax(cb, x, out, scale, offset,
				     (causal ? MAIA_SOFTMAX_F_CAUSAL : 0) | (log ? MAIA_SOFTMAX_F_LOG : 0)));
}

static PyObject *cb_layernorm(PyObject *self, PyObject *args, PyObject *kw)
{
	static char *kwlist[] = { "x", "out", "gamma", "beta", "eps", NULL };
	struct maia_cmdbuf *cb = cb_get(self);
	const struct maia_tensor_desc *x, *out, *gamma, *beta;
	PyObject *xo, *oo, *go = Py_None, *bo = Py_None;
	float eps = 1e-5f;

	if (!cb || !PyArg_ParseTupleAndKeywords(args, kw, "OO|OOf", kwlist, &xo, &oo, &go, &bo, &eps))
		return NULL;
	if (desc_arg(xo, &x, "x", 0) || desc_arg(oo, &out, "out", 0) ||
	    desc_arg(go, &gamma, "gamma", 1) || desc_arg(bo, &beta, "beta", 1))
		return NULL;
	return done("maia_cmd_layernorm", maia_cmd_layernorm(cb, x, gamma, beta, out, eps));
}

static PyObject *cb_rmsnorm(PyObject *self, PyObject *args, PyObject *kw)
{
	static char *kwlist[] = { "x", "out", "gamma", "eps", NULL };
	struct maia_cmdbuf *cb = cb_get(self);
	const struct maia_tensor_desc *x, *out, *gamma;
	PyObject *xo, *oo, *go = Py_None;
	float eps = 1e-6f;

	if (!cb || !PyArg_ParseTupleAndKeywords(args, kw, "OO|Of", kwlist, &xo, &oo, &go, &eps))
		return NULL;
	if (desc_arg(xo, &x, "x", 0) || desc_arg(oo, &out, "out", 0) ||
	    desc_arg(go, &gamma, "gamma", 1))
		return NULL;
	return done("maia_cmd_rmsnorm", maia_cmd_rmsnorm(cb, x, gamma, out, eps));
}

static PyObject *cb_attention(PyObject *self, PyObject *args, PyObject *kw)
{
	static char *kwlist[] = { "q", "k", "v", "out", "scale", "causal", NULL };
	struct maia_cmdbuf *cb = cb_get(self);
	const struct maia_tensor_desc *q, *k, *v, *out;
	PyObject *qo, *ko, *vo, *oo;
	float scale = 0.0f;
	int causal = 0;

	if (!cb || !PyArg_ParseTupleAndKeywords(args, kw, "OOOO|fp", kwlist, &qo, &ko, &vo, &oo,
						&scale, &causal))
		return NULL;
	if (desc_arg(qo, &q, "q", 0) || desc_arg(ko, &k, "k", 0) || desc_arg(vo, &v, "v", 0) ||
	    desc_arg(oo, &out, "out", 0))
		return NULL;
	return done("maia_cmd_attention", maia_cmd_attention(cb, q, k, v, out, scale,
							     causal ? MAIA_ATTN_F_CAUSAL : 0));
}

static PyObject *cb_quantize(PyObject *self, PyObject *args, PyObject *kw)
{
	static char *kwlist[] = { "x", "out", "scale_out", "dynamic", "sat", NULL };
	struct maia_cmdbuf *cb = cb_get(self);
	const struct maia_tensor_desc *x, *out;
	unsigned long long scale_out = 0;
	int dynamic = 0, sat = 0;
	PyObject *xo, *oo;

	if (!cb || !PyArg_ParseTupleAndKeywords(args, kw, "OO|Kpp", kwlist, &xo, &oo, &scale_out,
						&dynamic, &sat))
		return NULL;
	if (desc_arg(xo, &x, "x", 0) || desc_arg(oo, &out, "out", 0))
		return NULL;
	return done("maia_cmd_quantize",
		    maia_cmd_quantize(cb, x, out, scale_out,
				      (dynamic ? MAIA_QUANT_F_DYNAMIC : 0) | (sat ? MAIA_QUANT_F_SAT : 0)));
}

static PyObject *cb_unary(PyObject *self, PyObject *args, int dequantize)
{
	struct maia_cmdbuf *cb = cb_get(self);
	const struct maia_tensor_desc *x, *out;
	PyObject *xo, *oo;

	if (!cb || !PyArg_ParseTuple(args, "OO", &xo, &oo))
		return NULL;
	if (desc_arg(xo, &x, "x", 0) || desc_arg(oo, &out, "out", 0))
		return NULL;
	if (dequantize)
		return done("maia_cmd_dequantize", maia_cmd_dequantize(cb, x, out));
	return done("maia_cmd_tensor_copy", maia_cmd_tensor_copy(cb, x, out));
}

static PyObject *cb_dequantize(PyObject *self, PyObject *args)
{
	return cb_unary(self, args, 1);
}

static PyObject *cb_tensor_copy(PyObject *self, PyObject *args)
{
	return cb_unary(self, args, 0);
}

static PyObject *cb_reduce(PyObject *self, PyObject *args)
{
	struct maia_cmdbuf *cb = cb_get(self);
	const struct maia_tensor_desc *x, *out;
	unsigned int op, axes;
	PyObject *xo, *oo;

	if (!cb || !PyArg_ParseTuple(args, "OOII", &xo, &oo, &op, &axes))
		return NULL;
	if (desc_arg(xo, &x, "x", 0) || desc_arg(oo, &out, "out", 0))
		return NULL;
	return done("maia_cmd_reduce", maia_cmd_reduce(cb, x, out, op, axes));
}

static PyObject *cb_transpose(PyObject *self, PyObject *args)
{
	struct maia_cmdbuf *cb = cb_get(self);
	const struct maia_tensor_desc *x, *out;
	uint64_t p[MAIA_TENSOR_MAX_RANK];
	uint8_t perm[MAIA_TENSOR_MAX_RANK];
	PyObject *xo, *oo, *po, *fast;
	unsigned int i, n;

	if (!cb || !PyArg_ParseTuple(args, "OOO", &xo, &oo, &po))
		return NULL;
	if (desc_arg(xo, &x, "x", 0) || desc_arg(oo, &out, "out", 0))
		return NULL;
	fast = PySequence_Fast(po, "perm must be a sequence");
	if (!fast)
		return NULL;
	n = (unsigned int)PySequence_Fast_GET_SIZE(fast);
	if (n != x->rank) {
		Py_DECREF(fast);
		return PyErr_Format(PyExc_ValueError, "maia_cmd_transpose: perm has %u entries for rank %u",
				    n, x->rank);
	}
	for (i = 0; i < n; i++) {
		p[i] = PyLong_AsUnsignedLongLong(PySequence_Fast_GET_ITEM(fast, i));
		if (PyErr_Occurred() || p[i] >= MAIA_TENSOR_MAX_RANK) {
			Py_DECREF(fast);
			PyErr_Clear();
			return PyErr_Format(PyExc_ValueError, "maia_cmd_transpose: perm[%u] is not 0..%u",
					    i, MAIA_TENSOR_MAX_RANK - 1);
		}
		perm[i] = (uint8_t)p[i];
	}
	Py_DECREF(fast);
	return done("maia_cmd_transpose", maia_cmd_transpose(cb, x, out, perm));
}

#define KW(f) ((PyCFunction)(void (*)(void))(f))
static PyMethodDef cb_methods[] = {
	{ "close", cb_close, METH_NOARGS, "Free the command buffer (idempotent)." },
	{ "reset", cb_reset, METH_NOARGS, "Empty it for reuse." },
	{ "nop", cb_nop, METH_NOARGS, NULL },
	{ "copy", cb_copy, METH_VARARGS, "copy(dst_va, src_va, nbytes): DMA." },
	{ "fill", cb_fill, METH_VARARGS, "fill(dst_va, nbytes, pattern32): DMA fill." },
	{ "fence_write", cb_fence_write, METH_VARARGS, "fence_write(va, value64)" },
	{ "timestamp", cb_timestamp, METH_VARARGS, "timestamp(va): device clock, 8 bytes." },
	{ "gemm", KW(cb_gemm), METH_VARARGS | METH_KEYWORDS,
	  "gemm(a, b, c, alpha=1, beta=0, bias=None, activation=ACT_NONE, trans_a=False, "
	  "trans_b=False): C = act(alpha op(A) op(B) + beta C + bias); rank 2 or 3." },
	{ "add", cb_add, METH_VARARGS, "add(x, y, out)" },
	{ "mul", cb_mul, METH_VARARGS, "mul(x, y, out)" },
	{ "scale", cb_scale, METH_VARARGS, "scale(x, out, alpha, beta=0): alpha x + beta" },
	{ "activation", cb_activation, METH_VARARGS, "activation(x, out, ACT_*)" },
	{ "softmax", KW(cb_softmax), METH_VARARGS | METH_KEYWORDS,
	  "softmax(x, out, scale=1, causal=False, causal_offset=0, log=False)" },
	{ "layernorm", KW(cb_layernorm), METH_VARARGS | METH_KEYWORDS,
	  "layernorm(x, out, gamma=None, beta=None, eps=1e-5)" },
	{ "rmsnorm", KW(cb_rmsnorm), METH_VARARGS | METH_KEYWORDS,
	  "rmsnorm(x, out, gamma=None, eps=1e-6)" },
	{ "attention", KW(cb_attention), METH_VARARGS | METH_KEYWORDS,
	  "attention(q, k, v, out, scale=0 (1/sqrt(D)), causal=False)" },
	{ "quantize", KW(cb_quantize), METH_VARARGS | METH_KEYWORDS,
	  "quantize(x, out, scale_out=0, dynamic=False, sat=False)" },
	{ "dequantize", cb_dequantize, METH_VARARGS, "dequantize(x, out)" },
	{ "tensor_copy", cb_tensor_copy, METH_VARARGS, "tensor_copy(x, out): strided, converting." },
	{ "reduce", cb_reduce, METH_VARARGS, "reduce(x, out, REDUCE_*, axes_bitmask)" },
	{ "transpose", cb_transpose, METH_VARARGS, "transpose(x, out, perm)" },
	{ "kernel", KW(maia_py_cb_kernel), METH_VARARGS | METH_KEYWORDS,
	  "kernel(kernel, grid, args=(), budget=0): run a maia.Kernel over grid (1 to 3 "
	  "sizes), args into s1.. (VAs, integers, float bits)." },
	{ NULL, NULL, 0, NULL }
};

static PyGetSetDef cb_getset[] = {
	{ "size", cb_size, NULL, "bytes of commands appended", NULL },
	{ NULL, NULL, NULL, NULL, NULL }
};

PyTypeObject MaiaCmdBufType = {
	PyVarObject_HEAD_INIT(NULL, 0)
	.tp_name = "maia.CmdBuf",
	.tp_basicsize = sizeof(MaiaCmdBuf),
	.tp_flags = Py_TPFLAGS_DEFAULT,
	.tp_doc = "A command buffer (Device.cmdbuf()); append commands, then Device.run().",
	.tp_dealloc = cb_dealloc,
	.tp_methods = cb_methods,
	.tp_getset = cb_getset,
};
