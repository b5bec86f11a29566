/* SPDX-License-Identifier: MIT */
/*
 * The maia Python extension (_maia): what its files share. The
 * extension is compiled against libmaia.h and the maia/hw/ headers, so the structures
 * it fills (tensor descriptors, device info, telemetry, TVP words) come from the one
 * hardware ABI header set and are never restated by hand.
 */
#ifndef MAIA_PY_H
#define MAIA_PY_H

#define PY_SSIZE_T_CLEAN
#include <Python.h>

#include "libmaia.h"

/* maia.Error, an OSError: (errno, "function: libmaia's message"). */
extern PyObject *maia_py_error;

/* Raise maia.Error for a negative errno returned by libmaia's function fn. */
PyObject *maia_py_raise(const char *fn, int err);

typedef struct {
	PyObject_HEAD
	struct maia_device *dev;	/* NULL once closed */
} MaiaDevice;

typedef struct {
	PyObject_HEAD
	struct maia_bo *bo;		/* NULL once closed */
	PyObject *device;		/* the Device, kept alive while the BO lives */
	void *cpu;			/* CPU mapping, made on the first buffer request */
	Py_ssize_t exports;		/* live buffer views: close() refuses while > 0 */
} MaiaBo;

typedef struct {
	PyObject_HEAD
	struct maia_tensor_desc desc;
} MaiaTensor;

typedef struct {
	PyObject_HEAD
	struct maia_cmdbuf *cb;		/* NULL once closed */
	PyObject *device;
} MaiaCmdBuf;

typedef struct {
	PyObject_HEAD
	struct maia_kernel *k;		/* NULL once closed */
	PyObject *device;
} MaiaKernel;

extern PyTypeObject MaiaDeviceType;
extern PyTypeObject MaiaBoType;
extern PyTypeObject MaiaTensorType;
extern PyTypeObject MaiaCmdBufType;
extern PyTypeObject MaiaKernelType;

/* tvp.c: maia.tvp_assemble, maia.tvp_disassemble, CmdBuf.kernel */
PyObject *maia_py_tvp_assemble(PyObject *mod, PyObject *args);
PyObject *maia_py_tvp_disassemble(PyObject *mod, PyObject *args);
PyObject *maia_py_cb_kernel(PyObject *self, PyObject *args, PyObject *kw);

/* A Device argument still open, or NULL with maia.Error set. */
struct maia_device *maia_py_device(PyObject *obj);

#endif /* MAIA_PY_H */
