// SPDX-License-Identifier: MIT
/*
 * maia.Device and maia.Bo: opening a device, its information, telemetry,
 * submission, and buffer objects whose CPU mapping is exported through the
 * buffer protocol (numpy.frombuffer(bo, ...) is a zero-copy view).
 */
#include "maia_py.h"

#include <string.h>

struct maia_device *maia_py_device(PyObject *obj)
{
	MaiaDevice *d = (MaiaDevice *)obj;

	if (!PyObject_TypeCheck(obj, &MaiaDeviceType)) {
		PyErr_SetString(PyExc_TypeError, "expected a maia.Device");
		return NULL;
	}
	if (!d->dev) {
		PyErr_SetString(maia_py_error, "the maia.Device is closed");
		return NULL;
	}
	return d->dev;
}

static int device_init(PyObject *self, PyObject *args, PyObject *kw)
{
	static char *kwlist[] = { "index", "pci", NULL };
	MaiaDevice *d = (MaiaDevice *)self;
	const char *pci = NULL;
	int index = 0, err;

	if (!PyArg_ParseTupleAndKeywords(args, kw, "|iz", kwlist, &index, &pci))
		return -1;
	if (d->dev)
		maia_device_close(d->dev);
	d->dev = NULL;
	Py_BEGIN_ALLOW_THREADS
	err = pci ? maia_device_open_pci(pci, &d->dev) : maia_device_open(index, &d->dev);
	Py_END_ALLOW_THREADS
	if (err < 0) {
		d->dev = NULL;
		maia_py_raise(pci ? "maia_device_open_pci" : "maia_device_open", err);
		return -1;
	}
	return 0;
}

static void device_dealloc(PyObject *self)
{
	MaiaDevice *d = (MaiaDevice *)self;

	if (d->dev)
		maia_device_close(d->dev);
	Py_TYPE(self)->tp_free(self);
}

static PyObject *device_close(PyObject *self, PyObject *unused)
{
	MaiaDevice *d = (MaiaDevice *)self;

	(void)unused;
	if (d->dev)
		maia_device_close(d->dev);
	d->dev = NULL;
	Py_RETURN_NONE;
}

static PyObject *device_enter(PyObject *self, PyObject *unused)
{
	(void)unused;
	if (!maia_py_device(self))
		return NULL;
	Py_INCREF(self);
	return self;
}

static PyObject *device_exit(PyObject *self, PyObject *args)
{
	(void)args;
	return device_close(self, NULL);
}

static PyObject *device_info(PyObject *self, PyObject *unused)
{
	struct maia_device *dev = maia_py_device(self);
	struct maia_device_info i;
	int err;

	(void)unused;
	if (!dev)
		return NULL;
	err = maia_device_info(dev, &i);
	if (err < 0)
		return maia_py_raise("maia_device_info", err);
	return Py_BuildValue("{s:i,s:s,s:s,s:H,s:H,s:I,s:I,s:I,s:I,s:I,s:K,s:I,s:I,s:I,s:I,s:I,s:I,s:s}",
			     "index", i.index, "node", i.node, "pci_address", i.pci_address,
			     "vendor_id", i.vendor_id, "device_id", i.device_id,
			     "revision", i.revision, "link_speed_gts_x10", i.link_speed_gts_x10,
			     "link_width", i.link_width, "fw_version", i.fw_version,
			     "fw_abi", i.fw_abi, "hbm_size", (unsigned long long)i.hbm_size,
			     "clusters", i.clusters, "tiles_per_cluster", i.tiles_per_cluster,
			     "sram_kib", i.sram_kib, "num_queues", i.num_queues,
			     "dtypes", i.dtypes, "capabilities", i.capabilities,
			     "driver_version", i.driver_version);
}

static PyObject *device_query(PyObject *self, PyObject *args)
{
	struct maia_device *dev = maia_py_device(self);
	unsigned int param;
	uint64_t v;
	int err;

	if (!dev || !PyArg_ParseTuple(args, "I", &param))
		return NULL;
	err = maia_query(dev, param, &v);
	if (err < 0)
		return maia_py_raise("maia_query", err);
	return PyLong_FromUnsignedLongLong(v);
}

static PyObject *device_ping(PyObject *self, PyObject *args)
{
	struct maia_device *dev = maia_py_device(self);
	struct maia_ping_result r;
	unsigned long long cookie = 1;
	int err;

	if (!dev || !PyArg_ParseTuple(args, "|K", &cookie))
		return NULL;
	Py_BEGIN_ALLOW_THREADS
	err = maia_ping(dev, cookie, &r);
	Py_END_ALLOW_THREADS
	if (err < 0)
		return maia_py_raise("maia_ping", err);
	return Py_BuildValue("{s:K,s:K,s:K}", "echo", (unsigned long long)r.echo,
			     "round_trip_ns", (unsigned long long)r.round_trip_ns,
			     "device_ns", (unsigned long long)r.device_ns);
}

/* The MAIA_TM_* values present in t, by the names libmaia.h gives them. */
static PyObject *telemetry_dict(const struct maia_telemetry *t)
{
	static const struct { uint64_t bit; const char *name; size_t off; } u64s[] = {
#define TM(bit, field) { bit, #field, offsetof(struct maia_telemetry, field) }
		TM(MAIA_TM_POWER, power_uw), TM(MAIA_TM_POWER_INSTANT, power_instant_uw),
		TM(MAIA_TM_POWER_CAP, power_cap_uw), TM(MAIA_TM_ENERGY, energy_uj),
		TM(MAIA_TM_CLOCK, clock_hz), TM(MAIA_TM_UTILIZATION, utilization_pct),
		TM(MAIA_TM_TENSOR_UTILIZATION, tensor_utilization_pct),
		TM(MAIA_TM_THROTTLE_REASONS, throttle_reasons),
		TM(MAIA_TM_THROTTLE_COUNT, throttle_count),
		TM(MAIA_TM_THROTTLED_TIME, throttled_time_us),
		TM(MAIA_TM_BUSY_TIME, busy_time_us),
		TM(MAIA_TM_TENSOR_BUSY_TIME, tensor_busy_time_us),
		TM(MAIA_TM_VECTOR_BUSY_TIME, vector_busy_time_us),
		TM(MAIA_TM_DMA_BUSY_TIME, dma_busy_time_us),
		TM(MAIA_TM_HBM_READ, hbm_bytes_read), TM(MAIA_TM_HBM_WRITTEN, hbm_bytes_written),
		TM(MAIA_TM_DMA_BYTES, dma_bytes), TM(MAIA_TM_FLOPS, flops),
		TM(MAIA_TM_COMMANDS, commands), TM(MAIA_TM_HBM_USED, hbm_used_bytes),
		TM(MAIA_TM_HBM_FREE, hbm_free_bytes), TM(MAIA_TM_HBM_TOTAL, hbm_total_bytes),
		TM(MAIA_TM_RESET_COUNT, reset_count), TM(MAIA_TM_ECC_CE, ecc_ce_count),
		TM(MAIA_TM_ECC_UE, ecc_ue_count), TM(MAIA_TM_RETIRED_PAGES, retired_pages),
		TM(MAIA_TM_RETIRED_PENDING, retired_pages_pending),
#undef TM
	};
	PyObject *d = PyDict_New(), *v;
	size_t i;
	int bad = 0;

	if (!d)
		return NULL;
	for (i = 0; i < sizeof(u64s) / sizeof(u64s[0]) && !bad; i++) {
		if (!(t->valid & u64s[i].bit))
			continue;
		v = PyLong_FromUnsignedLongLong(*(const uint64_t *)((const char *)t + u64s[i].off));
		bad = !v || PyDict_SetItemString(d, u64s[i].name, v) < 0;
		Py_XDECREF(v);
	}
	if (!bad && (t->valid & MAIA_TM_TEMP)) {
		v = PyLong_FromLongLong(t->temp_mc);
		bad = !v || PyDict_SetItemString(d, "temp_mc", v) < 0;
		Py_XDECREF(v);
	}
	if (!bad && (t->valid & MAIA_TM_TOPOLOGY)) {
		v = Py_BuildValue("(II)", t->clusters, t->tiles_per_cluster);
		bad = !v || PyDict_SetItemString(d, "topology", v) < 0;
		Py_XDECREF(v);
	}
	if (!bad && (t->valid & MAIA_TM_TILES)) {
		PyObject *l = PyList_New(t->num_tiles);

		for (i = 0; l && i < t->num_tiles && !bad; i++) {
			v = PyLong_FromUnsignedLongLong(t->tile_busy_us[i]);
			bad = !v;
			if (v)
				PyList_SET_ITEM(l, i, v);
		}
		bad = bad || !l || PyDict_SetItemString(d, "tile_busy_us", l) < 0;
		Py_XDECREF(l);
	}
	if (!bad) {
		v = Py_BuildValue("{s:i,s:s,s:K}", "index", t->index, "pci_address",
				  t->pci_address, "timestamp_ns",
				  (unsigned long long)t->timestamp_ns);
		bad = !v || PyDict_Update(d, v) < 0;
		Py_XDECREF(v);
	}
	if (bad) {
		Py_DECREF(d);
		return NULL;
	}
	return d;
}

static PyObject *device_telemetry(PyObject *self, PyObject *unused)
{
	struct maia_device *dev = maia_py_device(self);
	struct maia_telemetry *t;
	PyObject *r;
	int err;

	(void)unused;
	if (!dev)
		return NULL;
	t = PyMem_Calloc(1, sizeof(*t));
	if (!t)
		return PyErr_NoMemory();
	err = maia_device_telemetry(dev, t);
	r = err < 0 ? maia_py_raise("maia_device_telemetry", err) : telemetry_dict(t);
	PyMem_Free(t);
	return r;
}

PyObject *maia_py_telemetry_read(PyObject *mod, PyObject *args);
PyObject *maia_py_telemetry_read(PyObject *mod, PyObject *args)
{
	struct maia_telemetry *t;
	const char *pci;
	PyObject *r;
	int err;

	(void)mod;
	if (!PyArg_ParseTuple(args, "s", &pci))
		return NULL;
	t = PyMem_Calloc(1, sizeof(*t));
	if (!t)
		return PyErr_NoMemory();
	err = maia_telemetry_read(pci, t);
	r = err < 0 ? maia_py_raise("maia_telemetry_read", err) : telemetry_dict(t);
	PyMem_Free(t);
	return r;
}

static PyObject *device_bo(PyObject *self, PyObject *args, PyObject *kw)
{
	static char *kwlist[] = { "size", "placement", NULL };
	struct maia_device *dev = maia_py_device(self);
	unsigned long long size;
	int placement = MAIA_BO_HBM, err;
	MaiaBo *b;

	if (!dev || !PyArg_ParseTupleAndKeywords(args, kw, "K|i", kwlist, &size, &placement))
		return NULL;
	if (placement != MAIA_BO_HBM && placement != MAIA_BO_HOST)
		return PyErr_Format(PyExc_ValueError,
				    "placement must be maia.BO_HBM or maia.BO_HOST, not %d", placement);
	b = PyObject_New(MaiaBo, &MaiaBoType);
	if (!b)
		return NULL;
	b->bo = NULL;
	b->cpu = NULL;
	b->exports = 0;
	Py_INCREF(self);
	b->device = self;
	Py_BEGIN_ALLOW_THREADS
	err = maia_bo_create(dev, size, placement, &b->bo);
	Py_END_ALLOW_THREADS
	if (err < 0) {
		b->bo = NULL;
		Py_DECREF(b);
		return maia_py_raise("maia_bo_create", err);
	}
	return (PyObject *)b;
}

static PyObject *device_cmdbuf(PyObject *self, PyObject *args, PyObject *kw)
{
	static char *kwlist[] = { "capacity", NULL };
	struct maia_device *dev = maia_py_device(self);
	unsigned int capacity = 64 * 1024;
	MaiaCmdBuf *c;
	int err;

	if (!dev || !PyArg_ParseTupleAndKeywords(args, kw, "|I", kwlist, &capacity))
		return NULL;
	c = PyObject_New(MaiaCmdBuf, &MaiaCmdBufType);
	if (!c)
		return NULL;
	c->cb = NULL;
	Py_INCREF(self);
	c->device = self;
	err = maia_cmdbuf_create(dev, capacity, &c->cb);
	if (err < 0) {
		c->cb = NULL;
		Py_DECREF(c);
		return maia_py_raise("maia_cmdbuf_create", err);
	}
	return (PyObject *)c;
}

static struct maia_cmdbuf *cmdbuf_arg(PyObject *obj, PyObject *device)
{
	MaiaCmdBuf *c = (MaiaCmdBuf *)obj;

	if (!PyObject_TypeCheck(obj, &MaiaCmdBufType)) {
		PyErr_SetString(PyExc_TypeError, "expected a maia.CmdBuf");
		return NULL;
	}
	if (!c->cb) {
		PyErr_SetString(maia_py_error, "the maia.CmdBuf is closed");
		return NULL;
	}
	if (c->device != device) {
		PyErr_SetString(maia_py_error, "the maia.CmdBuf belongs to another maia.Device");
		return NULL;
	}
	return c->cb;
}

/* Seconds as libmaia's relative nanoseconds, clamped to what int64 holds. */
static int64_t timeout_ns(double seconds)
{
	if (!(seconds > 0))
		return 0;
	if (seconds > 9e9)
		return INT64_MAX;
	return (int64_t)(seconds * 1e9);
}

static PyObject *job_status_dict(const struct maia_job_status *st)
{
	return Py_BuildValue("{s:I,s:s,s:I,s:I}", "status", st->status, "name",
			     maia_job_status_name(st->status), "device_status",
			     st->device_status, "error_offset", st->error_offset);
}

static PyObject *device_submit(PyObject *self, PyObject *args)
{
	struct maia_device *dev = maia_py_device(self);
	struct maia_cmdbuf *cb;
	PyObject *cbo;
	uint64_t seqno;
	int err;

	if (!dev || !PyArg_ParseTuple(args, "O", &cbo))
		return NULL;
	cb = cmdbuf_arg(cbo, self);
	if (!cb)
		return NULL;
	Py_BEGIN_ALLOW_THREADS
	err = maia_submit(dev, cb, NULL, &seqno);
	Py_END_ALLOW_THREADS
	if (err < 0)
		return maia_py_raise("maia_submit", err);
	return PyLong_FromUnsignedLongLong(seqno);
}

static PyObject *device_wait(PyObject *self, PyObject *args)
{
	struct maia_device *dev = maia_py_device(self);
	struct maia_job_status st;
	unsigned long long seqno;
	double timeout = 10.0;
	int err;

	if (!dev || !PyArg_ParseTuple(args, "K|d", &seqno, &timeout))
		return NULL;
	Py_BEGIN_ALLOW_THREADS
	err = maia_wait(dev, seqno, timeout_ns(timeout), &st);
	Py_END_ALLOW_THREADS
	if (err < 0)
		return maia_py_raise("maia_wait", err);
	return job_status_dict(&st);
}

static PyObject *device_run(PyObject *self, PyObject *args)
{
	struct maia_device *dev = maia_py_device(self);
	struct maia_job_status st = { 0 };
	struct maia_cmdbuf *cb;
	double timeout = 10.0;
	PyObject *cbo;
	int err;

	if (!dev || !PyArg_ParseTuple(args, "O|d", &cbo, &timeout))
		return NULL;
	cb = cmdbuf_arg(cbo, self);
	if (!cb)
		return NULL;
	Py_BEGIN_ALLOW_THREADS
	err = maia_run(dev, cb, timeout_ns(timeout), &st);
	Py_END_ALLOW_THREADS
	if (err < 0)
		return maia_py_raise("maia_run", err);
	return job_status_dict(&st);
}

static PyObject *device_context_status(PyObject *self, PyObject *unused)
{
	struct maia_device *dev = maia_py_device(self);
	struct maia_context_status st;
	int err;

	(void)unused;
	if (!dev)
		return NULL;
	err = maia_context_status(dev, &st);
	if (err < 0)
		return maia_py_raise("maia_context_status", err);
	return Py_BuildValue("{s:O,s:I,s:K,s:I,s:K,s:O}", "faulted", st.faulted ? Py_True : Py_False,
			     "asid", st.asid, "fault_addr", (unsigned long long)st.fault_addr,
			     "fault_access", st.fault_access, "device_resets",
			     (unsigned long long)st.device_resets, "fault_addr_known",
			     st.fault_addr_known ? Py_True : Py_False);
}

static PyObject *device_fd(PyObject *self, PyObject *unused)
{
	struct maia_device *dev = maia_py_device(self);

	(void)unused;
	return dev ? PyLong_FromLong(maia_device_fd(dev)) : NULL;
}

static PyMethodDef device_methods[] = {
	{ "close", device_close, METH_NOARGS, "Close the device (idempotent)." },
	{ "__enter__", device_enter, METH_NOARGS, NULL },
	{ "__exit__", device_exit, METH_VARARGS, NULL },
	{ "info", device_info, METH_NOARGS, "maia_device_info() as a dict." },
	{ "query", device_query, METH_VARARGS, "query(param): one DRM_MAIA_PARAM_* value." },
	{ "ping", device_ping, METH_VARARGS, "ping(cookie=1): a queue round trip, as a dict." },
	{ "telemetry", device_telemetry, METH_NOARGS,
	  "maia_device_telemetry() as a dict of the values the driver provides." },
	{ "bo", (PyCFunction)(void (*)(void))device_bo, METH_VARARGS | METH_KEYWORDS,
	  "bo(size, placement=BO_HBM): a new buffer object mapped in the device's address space." },
	{ "cmdbuf", (PyCFunction)(void (*)(void))device_cmdbuf, METH_VARARGS | METH_KEYWORDS,
	  "cmdbuf(capacity=65536): a new, empty command buffer." },
	{ "submit", device_submit, METH_VARARGS, "submit(cmdbuf) -> seqno" },
	{ "wait", device_wait, METH_VARARGS,
	  "wait(seqno, timeout=10.0 s) -> job status dict (a failed job is not an error here)." },
	{ "run", device_run, METH_VARARGS,
	  "run(cmdbuf, timeout=10.0 s): submit and wait; a failed job raises maia.Error." },
	{ "context_status", device_context_status, METH_NOARGS, "maia_context_status() as a dict." },
	{ "fileno", device_fd, METH_NOARGS, "The DRM file descriptor." },
	{ NULL, NULL, 0, NULL }
};

PyTypeObject MaiaDeviceType = {
	PyVarObject_HEAD_INIT(NULL, 0)
	.tp_name = "maia.Device",
	.tp_basicsize = sizeof(MaiaDevice),
	.tp_flags = Py_TPFLAGS_DEFAULT,
	.tp_doc = "Device(index=0, pci=None): an open Maia device (libmaia maia_device_open).",
	.tp_new = PyType_GenericNew,
	.tp_init = device_init,
	.tp_dealloc = device_dealloc,
	.tp_methods = device_methods,
};

/* ---- buffer objects --------------------------------------------------- */

static struct maia_bo *bo_get(MaiaBo *b)
{
	if (!b->bo)
		PyErr_SetString(maia_py_error, "the maia.Bo is closed");
	return b->bo;
}

static void bo_dealloc(PyObject *self)
{
	MaiaBo *b = (MaiaBo *)self;

	if (b->bo)
		maia_bo_destroy(b->bo);
	Py_XDECREF(b->device);
	Py_TYPE(self)->tp_free(self);
}

static PyObject *bo_close(PyObject *self, PyObject *unused)
{
	MaiaBo *b = (MaiaBo *)self;

	(void)unused;
	if (b->exports > 0)
		return PyErr_Format(PyExc_BufferError,
				    "maia.Bo.close: %zd buffer views (numpy arrays, memoryviews) still use its mapping",
				    b->exports);
	if (b->bo)
		maia_bo_destroy(b->bo);
	b->bo = NULL;
	b->cpu = NULL;
	Py_RETURN_NONE;
}

static int bo_getbuffer(PyObject *self, Py_buffer *view, int flags)
{
	MaiaBo *b = (MaiaBo *)self;
	int err;

	if (!bo_get(b))
		return -1;
	if (!b->cpu) {
		err = maia_bo_map(b->bo, &b->cpu);
		if (err < 0) {
			b->cpu = NULL;
			maia_py_raise("maia_bo_map", err);
			return -1;
		}
	}
	if (PyBuffer_FillInfo(view, self, b->cpu, (Py_ssize_t)maia_bo_size(b->bo), 0, flags) < 0)
		return -1;
	b->exports++;
	return 0;
}

static void bo_releasebuffer(PyObject *self, Py_buffer *view)
{
	(void)view;
	((MaiaBo *)self)->exports--;
}

static PyBufferProcs bo_buffer = {
	.bf_getbuffer = bo_getbuffer,
	.bf_releasebuffer = bo_releasebuffer,
};

static PyObject *bo_va(PyObject *self, void *closure)
{
	struct maia_bo *bo = bo_get((MaiaBo *)self);

	(void)closure;
	return bo ? PyLong_FromUnsignedLongLong(maia_bo_va(bo)) : NULL;
}

static PyObject *bo_size(PyObject *self, void *closure)
{
	struct maia_bo *bo = bo_get((MaiaBo *)self);

	(void)closure;
	return bo ? PyLong_FromUnsignedLongLong(maia_bo_size(bo)) : NULL;
}

static PyObject *bo_handle(PyObject *self, void *closure)
{
	struct maia_bo *bo = bo_get((MaiaBo *)self);

	(void)closure;
	return bo ? PyLong_FromUnsignedLong(maia_bo_handle(bo)) : NULL;
}

static PyObject *bo_closed(PyObject *self, void *closure)
{
	(void)closure;
	return PyBool_FromLong(((MaiaBo *)self)->bo == NULL);
}

static PyGetSetDef bo_getset[] = {
	{ "va", bo_va, NULL, "device virtual address", NULL },
	{ "size", bo_size, NULL, "size in bytes (a multiple of 4 KiB)", NULL },
	{ "handle", bo_handle, NULL, "GEM handle", NULL },
	{ "closed", bo_closed, NULL, "True after close()", NULL },
	{ NULL, NULL, NULL, NULL, NULL }
};

static PyObject *bo_enter(PyObject *self, PyObject *unused)
{
	(void)unused;
	if (!bo_get((MaiaBo *)self))
		return NULL;
	Py_INCREF(self);
	return self;
}

static PyObject *bo_exit(PyObject *self, PyObject *args)
{
	(void)args;
	return bo_close(self, NULL);
}

static PyMethodDef bo_methods[] = {
	{ "close", bo_close, METH_NOARGS,
	  "Unmap and free; refused (BufferError) while buffer views exist." },
	{ "__enter__", bo_enter, METH_NOARGS, NULL },
	{ "__exit__", bo_exit, METH_VARARGS, NULL },
	{ NULL, NULL, 0, NULL }
};

PyTypeObject MaiaBoType = {
	PyVarObject_HEAD_INIT(NULL, 0)
	.tp_name = "maia.Bo",
	.tp_basicsize = sizeof(MaiaBo),
	.tp_flags = Py_TPFLAGS_DEFAULT,
	.tp_doc = "A buffer object (Device.bo()); supports the buffer protocol (zero copy).",
	.tp_dealloc = bo_dealloc,
	.tp_methods = bo_methods,
	.tp_getset = bo_getset,
	.tp_as_buffer = &bo_buffer,
};
