// SPDX-License-Identifier: MIT
/*
 * TVP programs from Python: maia.tvp_assemble(text) -> bytes,
 * maia.tvp_disassemble(bytes) -> str, maia.Kernel(device, binary) (a program
 * in device memory) and CmdBuf.kernel(), over libmaia's API of the same
 * names (Documentation/tvp-asm.rst).
 */
#include "maia_py.h"

#include <stdlib.h>
#include <string.h>

PyObject *maia_py_tvp_assemble(PyObject *mod, PyObject *args)
{
	struct maia_tvp_insn *insns;
	const char *src;
	uint32_t count;
	PyObject *out;
	int err;

	(void)mod;
	if (!PyArg_ParseTuple(args, "s", &src))
		return NULL;
	Py_BEGIN_ALLOW_THREADS
	err = maia_tvp_assemble(src, &insns, &count);
	Py_END_ALLOW_THREADS
	if (err < 0)
		return maia_py_raise("maia_tvp_assemble", err);
	out = PyBytes_FromStringAndSize((const char *)insns, (Py_ssize_t)count * sizeof(*insns));
	free(insns);
	return out;
}

/* A bytes-like of whole instruction words, copied to aligned memory. */
static struct maia_tvp_insn *words_of(Py_buffer *b, const char *fn, uint32_t *count)
{
	struct maia_tvp_insn *insns;

	if (b->len <= 0 || b->len % sizeof(*insns) ||
	    b->len / sizeof(*insns) > MAIA_TVP_MAX_INSNS) {
		PyErr_Format(PyExc_ValueError, "%s: %zd bytes is not 1..%u instruction words of %zu "
			     "bytes", fn, b->len, MAIA_TVP_MAX_INSNS, sizeof(*insns));
		return NULL;
	}
	insns = malloc(b->len);
	if (!insns) {
		PyErr_NoMemory();
		return NULL;
	}
	memcpy(insns, b->buf, b->len);
	*count = (uint32_t)(b->len / sizeof(*insns));
	return insns;
}

PyObject *maia_py_tvp_disassemble(PyObject *mod, PyObject *args)
{
	struct maia_tvp_insn *insns;
	PyObject *out = NULL;
	uint32_t count;
	char *text;
	Py_buffer b;
	int err;

	(void)mod;
	if (!PyArg_ParseTuple(args, "y*", &b))
		return NULL;
	insns = words_of(&b, "maia.tvp_disassemble", &count);
	PyBuffer_Release(&b);
	if (!insns)
		return NULL;
	err = maia_tvp_disassemble(insns, count, &text);
	free(insns);
	if (err < 0)
		return maia_py_raise("maia_tvp_disassemble", err);
	out = PyUnicode_FromString(text);
	free(text);
	return out;
}

/* ---- maia.Kernel ------------------------------------------------------ */

static struct maia_kernel *kernel_get(PyObject *self)
{
	MaiaKernel *k = (MaiaKernel *)self;

	if (!k->k)
		PyErr_SetString(maia_py_error, "the maia.Kernel is closed");
	return k->k;
}

static PyObject *kernel_new(PyTypeObject *type, PyObject *args, PyObject *kw)
{
	static char *kwlist[] = { "device", "binary", NULL };
	struct maia_tvp_insn *insns;
	struct maia_device *dev;
	PyObject *devobj;
	MaiaKernel *self;
	uint32_t count;
	Py_buffer b;
	int err;

	if (!PyArg_ParseTupleAndKeywords(args, kw, "O!y*", kwlist, &MaiaDeviceType, &devobj, &b))
		return NULL;
	dev = maia_py_device(devobj);
	insns = dev ? words_of(&b, "maia.Kernel", &count) : NULL;
	PyBuffer_Release(&b);
	if (!insns)
		return NULL;
	self = (MaiaKernel *)type->tp_alloc(type, 0);
	if (!self) {
		free(insns);
		return NULL;
	}
	err = maia_kernel_create(dev, insns, count, &self->k);
	free(insns);
	if (err < 0) {
		Py_DECREF(self);
		return maia_py_raise("maia_kernel_create", err);
	}
	Py_INCREF(devobj);
	self->device = devobj;
	return (PyObject *)self;
}

static void kernel_dealloc(PyObject *self)
{
	MaiaKernel *k = (MaiaKernel *)self;

	maia_kernel_destroy(k->k);
	Py_XDECREF(k->device);
	Py_TYPE(self)->tp_free(self);
}

static PyObject *kernel_close(PyObject *self, PyObject *unused)
{
	MaiaKernel *k = (MaiaKernel *)self;

	(void)unused;
	maia_kernel_destroy(k->k);
	k->k = NULL;
	Py_RETURN_NONE;
}

static PyObject *kernel_va(PyObject *self, void *closure)
{
	struct maia_kernel *k = kernel_get(self);

	(void)closure;
	return k ? PyLong_FromUnsignedLongLong(maia_kernel_va(k)) : NULL;
}

static PyObject *kernel_count(PyObject *self, void *closure)
{
	struct maia_kernel *k = kernel_get(self);

	(void)closure;
	return k ? PyLong_FromUnsignedLong(maia_kernel_count(k)) : NULL;
}

static PyGetSetDef kernel_getset[] = {
	{ "va", kernel_va, NULL, "device address of the program", NULL },
	{ "count", kernel_count, NULL, "instruction words", NULL },
	{ NULL, NULL, NULL, NULL, NULL }
};

static PyMethodDef kernel_methods[] = {
	{ "close", kernel_close, METH_NOARGS, "Free the program's device memory (idempotent)." },
	{ NULL, NULL, 0, NULL }
};

PyTypeObject MaiaKernelType = {
	PyVarObject_HEAD_INIT(NULL, 0)
	.tp_name = "maia.Kernel",
	.tp_basicsize = sizeof(MaiaKernel),
	.tp_flags = Py_TPFLAGS_DEFAULT,
	.tp_doc = "Kernel(device, binary): a TVP program (maia.tvp_assemble's bytes) in device "
		  "memory, for CmdBuf.kernel().",
	.tp_new = kernel_new,
	.tp_dealloc = kernel_dealloc,
	.tp_methods = kernel_methods,
	.tp_getset = kernel_getset,
};

/* CmdBuf.kernel(kernel, grid, args=(), budget=0) */
PyObject *maia_py_cb_kernel(PyObject *self, PyObject *args, PyObject *kw)
{
	static char *kwlist[] = { "kernel", "grid", "args", "budget", NULL };
	MaiaCmdBuf *c = (MaiaCmdBuf *)self;
	PyObject *kobj, *grid_o, *args_o = NULL, *fast;
	uint64_t vals[MAIA_TVP_MAX_ARGS];
	uint32_t grid[3] = { 1, 1, 1 }, budget = 0;
	struct maia_kernel *k;
	Py_ssize_t n, i;
	int err;

	if (!PyArg_ParseTupleAndKeywords(args, kw, "O!O|OI", kwlist, &MaiaKernelType, &kobj,
					 &grid_o, &args_o, &budget))
		return NULL;
	if (!c->cb)
		return PyErr_Format(maia_py_error, "the maia.CmdBuf is closed");
	k = kernel_get(kobj);
	if (!k)
		return NULL;
	fast = PySequence_Fast(grid_o, "CmdBuf.kernel: grid must be a sequence of 1 to 3 integers");
	if (!fast)
		return NULL;
	n = PySequence_Fast_GET_SIZE(fast);
	for (i = 0; i < n && i < 3; i++) {
		unsigned long v = PyLong_AsUnsignedLong(PySequence_Fast_GET_ITEM(fast, i));

		if (PyErr_Occurred() || v > UINT32_MAX)
			break;
		grid[i] = (uint32_t)v;
	}
	Py_DECREF(fast);
	if (n < 1 || n > 3 || i < n) {
		PyErr_Clear();
		return PyErr_Format(PyExc_ValueError,
				    "CmdBuf.kernel: grid must be 1 to 3 non-negative integers");
	}
	n = 0;
	if (args_o) {
		fast = PySequence_Fast(args_o, "CmdBuf.kernel: args must be a sequence of integers");
		if (!fast)
			return NULL;
		n = PySequence_Fast_GET_SIZE(fast);
		for (i = 0; i < n && i < (Py_ssize_t)MAIA_TVP_MAX_ARGS; i++) {
			PyObject *x = PySequence_Fast_GET_ITEM(fast, i);
			long long sv;

			/* Negative integers as their two's complement, like the s registers. */
			sv = PyLong_AsLongLong(x);
			if (PyErr_Occurred()) {
				PyErr_Clear();
				vals[i] = PyLong_AsUnsignedLongLong(x);
				if (PyErr_Occurred())
					break;
			} else {
				vals[i] = (uint64_t)sv;
			}
		}
		Py_DECREF(fast);
		if (n > (Py_ssize_t)MAIA_TVP_MAX_ARGS || i < n) {
			PyErr_Clear();
			return PyErr_Format(PyExc_ValueError, "CmdBuf.kernel: args must be at most "
					    "%u 64-bit integers", MAIA_TVP_MAX_ARGS);
		}
	}
	err = maia_cmd_kernel(c->cb, k, grid, vals, (uint32_t)n, budget);
	if (err < 0)
		return maia_py_raise("maia_cmd_kernel", err);
	Py_RETURN_NONE;
}
