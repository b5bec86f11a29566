// SPDX-License-Identifier: MIT
/*
 * The _maia extension module: maia.Error, module functions and constants.
 * The Python package maia (maia/__init__.py) re-exports all of it.
 */
#include "maia_py.h"

#include <errno.h>
#include <string.h>

#include "drm/maia_accel.h"
#include "maia/hw/queue.h"	/* MAIA_STATUS_* */

PyObject *maia_py_error;

PyObject *maia_py_raise(const char *fn, int err)
{
	const char *why = maia_last_error();
	PyObject *args;

	if (!why || !*why)
		why = maia_strerror(err);
	/* libmaia's messages usually start with the function's name already. */
	if (!strncmp(why, fn, strlen(fn)))
		args = Py_BuildValue("(is)", -err, why);
	else
		args = Py_BuildValue("(iN)", -err, PyUnicode_FromFormat("%s: %s", fn, why));
	if (args) {
		PyErr_SetObject(maia_py_error, args);
		Py_DECREF(args);
	}
	return NULL;
}

static PyObject *py_device_count(PyObject *mod, PyObject *unused)
{
	int n = maia_device_count();

	(void)mod;
	(void)unused;
	return n < 0 ? maia_py_raise("maia_device_count", n) : PyLong_FromLong(n);
}

static PyObject *py_device_list(PyObject *mod, PyObject *unused)
{
	struct maia_device_entry e[64];
	PyObject *l;
	int n, i;

	(void)mod;
	(void)unused;
	n = maia_device_list(e, 64);
	if (n < 0)
		return maia_py_raise("maia_device_list", n);
	l = PyList_New(n);
	for (i = 0; l && i < n; i++) {
		PyObject *t = Py_BuildValue("(is)", e[i].index, e[i].pci_address);

		if (!t) {
			Py_DECREF(l);
			return NULL;
		}
		PyList_SET_ITEM(l, i, t);
	}
	return l;
}

static PyObject *py_dtype_bytes(PyObject *mod, PyObject *args)
{
	unsigned long long elems;
	uint64_t data, scale;
	unsigned int dtype;
	int err;

	(void)mod;
	if (!PyArg_ParseTuple(args, "IK", &dtype, &elems))
		return NULL;
	err = maia_dtype_bytes(dtype, elems, &data, &scale);
	if (err < 0)
		return maia_py_raise("maia_dtype_bytes", err);
	return Py_BuildValue("(KK)", (unsigned long long)data, (unsigned long long)scale);
}

static PyObject *py_dtype_name(PyObject *mod, PyObject *args)
{
	unsigned int dtype;
	const char *name;

	(void)mod;
	if (!PyArg_ParseTuple(args, "I", &dtype))
		return NULL;
	name = maia_dtype_name(dtype);
	if (!name)
		return PyErr_Format(PyExc_ValueError, "maia_dtype_name: no data type %u", dtype);
	return PyUnicode_FromString(name);
}

PyObject *maia_py_telemetry_read(PyObject *mod, PyObject *args);

static PyMethodDef module_methods[] = {
	{ "device_count", py_device_count, METH_NOARGS, "Number of Maia devices." },
	{ "device_list", py_device_list, METH_NOARGS,
	  "[(index, pci_address)] of the Maia devices, from sysfs." },
	{ "telemetry_read", maia_py_telemetry_read, METH_VARARGS,
	  "telemetry_read(pci_address): a device's telemetry from sysfs, without opening it." },
	{ "dtype_bytes", py_dtype_bytes, METH_VARARGS,
	  "dtype_bytes(dtype, elems) -> (data_bytes, scale_bytes)" },
	{ "dtype_name", py_dtype_name, METH_VARARGS, "dtype_name(dtype) -> 'bf16', ..." },
	{ "tvp_assemble", maia_py_tvp_assemble, METH_VARARGS,
	  "tvp_assemble(text) -> bytes: TVP assembly to instruction words (maia.Error with "
	  "'line N: ...')." },
	{ "tvp_disassemble", maia_py_tvp_disassemble, METH_VARARGS,
	  "tvp_disassemble(binary) -> str: instruction words back to assembly." },
	{ NULL, NULL, 0, NULL }
};

static struct PyModuleDef module_def = {
	PyModuleDef_HEAD_INIT,
	.m_name = "maia._maia",
	.m_doc = "libmaia bindings (use the maia package).",
	.m_size = -1,
	.m_methods = module_methods,
};

static int add_constants(PyObject *m)
{
	static const struct { const char *name; long long value; } k[] = {
#define K(prefix, name) { #name, prefix##name }
		K(MAIA_, DTYPE_FP32), K(MAIA_, DTYPE_FP16), K(MAIA_, DTYPE_BF16),
		K(MAIA_, DTYPE_FP8_E4M3), K(MAIA_, DTYPE_FP8_E5M2), K(MAIA_, DTYPE_INT8),
		K(MAIA_, DTYPE_INT32), K(MAIA_, DTYPE_MXFP8_E4M3), K(MAIA_, DTYPE_MXFP8_E5M2),
		K(MAIA_, DTYPE_MXFP6_E3M2), K(MAIA_, DTYPE_MXFP6_E2M3), K(MAIA_, DTYPE_MXFP4_E2M1),
		K(MAIA_, DTYPE_MXINT8), K(MAIA_, DTYPE_MX9), K(MAIA_, DTYPE_MX6), K(MAIA_, DTYPE_MX4),
		K(MAIA_, DTYPE_COUNT),
		K(MAIA_, ACT_NONE), K(MAIA_, ACT_RELU), K(MAIA_, ACT_GELU), K(MAIA_, ACT_SILU),
		K(MAIA_, ACT_GELU_ERF),
		K(MAIA_, REDUCE_SUM), K(MAIA_, REDUCE_MEAN), K(MAIA_, REDUCE_MAX),
		K(MAIA_, REDUCE_MIN), K(MAIA_, REDUCE_SUMSQ),
		K(MAIA_, BO_HBM), K(MAIA_, BO_HOST),
		K(MAIA_, TENSOR_MAX_RANK), K(MAIA_, MX_BLOCK),
		K(DRM_MAIA_, JOB_OK), K(DRM_MAIA_, JOB_ERROR), K(DRM_MAIA_, JOB_FAULT),
		K(DRM_MAIA_, JOB_TIMEOUT), K(DRM_MAIA_, JOB_ABORTED),
		K(DRM_MAIA_, PARAM_DEVICE_ID), K(DRM_MAIA_, PARAM_REVISION),
		K(DRM_MAIA_, PARAM_FW_VERSION), K(DRM_MAIA_, PARAM_HBM_SIZE),
		K(DRM_MAIA_, PARAM_NUM_CLUSTERS), K(DRM_MAIA_, PARAM_DTYPES),
		K(DRM_MAIA_, PARAM_NUM_QUEUES),
		K(MAIA_, TVP_VLEN), K(MAIA_, TVP_MAX_INSNS), K(MAIA_, TVP_MAX_ARGS),
		K(MAIA_, TVP_MAX_GRID), K(MAIA_, TVP_DEFAULT_BUDGET),
		K(MAIA_, STATUS_MMU_FAULT), K(MAIA_, STATUS_KERNEL_INVALID),
		K(MAIA_, STATUS_KERNEL_WATCHDOG),
		{ "VERSION_MAJOR", LIBMAIA_VERSION_MAJOR }, { "VERSION_MINOR", LIBMAIA_VERSION_MINOR },
#undef K
	};
	size_t i;

	for (i = 0; i < sizeof(k) / sizeof(k[0]); i++)
		if (PyModule_AddObject(m, k[i].name, PyLong_FromLongLong(k[i].value)) < 0)
			return -1;
	return 0;
}

PyMODINIT_FUNC PyInit__maia(void);
PyMODINIT_FUNC PyInit__maia(void)
{
	PyTypeObject *types[] = { &MaiaDeviceType, &MaiaBoType, &MaiaTensorType, &MaiaCmdBufType,
				  &MaiaKernelType };
	const char *names[] = { "Device", "Bo", "Tensor", "CmdBuf", "Kernel" };
	PyObject *m;
	size_t i;

	for (i = 0; i < 5; i++)
		if (PyType_Ready(types[i]) < 0)
			return NULL;
	m = PyModule_Create(&module_def);
	if (!m)
		return NULL;
	maia_py_error = PyErr_NewExceptionWithDoc("maia.Error",
						  "A libmaia call failed: (errno, message).",
						  PyExc_OSError, NULL);
	if (!maia_py_error || PyModule_AddObject(m, "Error", maia_py_error) < 0)
		goto fail;
	Py_INCREF(maia_py_error);
	for (i = 0; i < 5; i++) {
		Py_INCREF(types[i]);
		if (PyModule_AddObject(m, names[i], (PyObject *)types[i]) < 0)
			goto fail;
	}
	if (add_constants(m) < 0)
		goto fail;
	return m;
fail:
	Py_DECREF(m);
	return NULL;
}
