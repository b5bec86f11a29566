// SPDX-License-Identifier: MIT
/*
 * maia._maia_launch: a Triton kernel's launch on a maia device without
 * torch's dispatcher and without Python per argument. runner() makes, once
 * per kernel, a C function with the signature of Triton's launcher
 * (gridX, gridY, gridZ, stream, function, packed_metadata,
 * launch_metadata, enter_hook, exit_hook, *args) that packs the arguments
 * itself (a maia tensor's data pointer, fp32 bits, a 64-bit integer) and
 * appends the KERNEL command (../kernel_launch.cpp), with the kernel's
 * spill area allocated as the Python launcher does. Whatever it does not
 * take as is (a hook, None, a tensor of another device, an integer past
 * 64 bits, a float out of fp32's range) goes to the Python launcher it was
 * made from (maia_triton.driver.MaiaLauncher), which gives the same words
 * or the error: one behaviour, two speeds. maia.inductor puts it into
 * Inductor's launchers. empty_strided() is the allocation of Inductor's
 * wrapper for a maia buffer, without Python's argument parser.
 */
#include <torch/csrc/Dtype.h>
#include <torch/csrc/autograd/python_variable.h>
#include <torch/csrc/utils/pybind.h>

#include <cmath>
#include <cstring>
#include <string>

#include "../kernel_launch.h"
#include "libmaia.h"

namespace {

/*
 * One kernel's runner: what a launch needs besides its arguments. Its
 * launches hold the GIL throughout, which serializes them (kernel, binary).
 */
struct Runner {
	PyObject *slow;			/* the Python launcher (a reference) */
	std::string key;		/* the binary's name (its hash) */
	std::string binary;		/* TVP instructions, until the kernel is made */
	struct maia_kernel *kernel;	/* made at the first launch (needs the device) */
	int dev;
	uint32_t budget;
	uint32_t scratch;		/* spill bytes per program instance */
	std::string kinds;		/* per argument: p pointer, f fp32, i integer, - none */
};

const char kCapsule[] = "maia._maia_launch.Runner";

void drop(PyObject *capsule)
{
	auto *r = static_cast<Runner *>(PyCapsule_GetPointer(capsule, kCapsule));

	Py_XDECREF(r->slow);
	delete r;
}

/* The argument's word, or false when the Python launcher must handle it. */
bool word(char kind, PyObject *arg, int dev, uint64_t *w)
{
	switch (kind) {
	case 'p': {
		if (!THPVariable_Check(arg))
			return false;
		const at::Tensor &t = THPVariable_Unpack(arg);
		if (!t.defined() || !t.device().is_privateuseone() || t.get_device() != dev ||
		    !t.has_storage())
			return false;
		*w = (uint64_t)(uintptr_t)t.data_ptr();
		return true;
	}
	case 'f': {
		double d = PyFloat_AsDouble(arg);
		if (d == -1.0 && PyErr_Occurred())
			return false;
		if (std::isfinite(d) && std::fabs(d) > 3.4028234663852886e38)
			return false;	/* struct.pack's OverflowError, from Python */
		float f = (float)d;
		uint32_t bits;
		std::memcpy(&bits, &f, sizeof(bits));
		*w = bits;
		return true;
	}
	case 'i': {
		if (!PyLong_Check(arg))
			return false;
		int overflow = 0;
		long long v = PyLong_AsLongLongAndOverflow(arg, &overflow);
		if (overflow || (v == -1 && PyErr_Occurred()))
			return false;
		*w = (uint64_t)v;
		return true;
	}
	}
	return false;
}

PyObject *launch(PyObject *capsule, PyObject *const *args, Py_ssize_t nargs)
{
	auto *r = static_cast<Runner *>(PyCapsule_GetPointer(capsule, kCapsule));
	uint64_t words[MAIA_TVP_MAX_ARGS];
	uint32_t grid[3], n = 0;

	if (!r)
		return nullptr;
	if (nargs != 9 + (Py_ssize_t)r->kinds.size() || args[7] != Py_None || args[8] != Py_None)
		goto slow;
	for (int i = 0; i < 3; i++) {
		if (!PyLong_Check(args[i]))
			goto slow;
		long long g = PyLong_AsLongLong(args[i]);
		if (g < 0 || g > (long long)MAIA_TVP_MAX_GRID)
			goto slow;
		grid[i] = (uint32_t)g;
	}
	for (size_t i = 0; i < r->kinds.size(); i++) {
		if (r->kinds[i] == '-')
			continue;
		if (n == MAIA_TVP_MAX_ARGS || !word(r->kinds[i], args[9 + i], r->dev, &words[n++]))
			goto slow;
	}
	/* Triton launches nothing for an empty grid. */
	if (!grid[0] || !grid[1] || !grid[2])
		Py_RETURN_NONE;
	if (r->scratch && n == MAIA_TVP_MAX_ARGS)
		goto slow;
	try {
		if (!r->kernel) {
			r->kernel = maia_torch::triton_kernel(r->dev, r->key, r->binary.data(),
							      r->binary.size());
			r->binary.clear();
		}
		/*
		 * The spill area, a slot per program instance, as the Python
		 * launcher makes it: freed to the caching allocator after the
		 * launch (what reuses it runs after the kernel on the stream).
		 */
		at::Tensor area;
		if (r->scratch) {
			area = at::empty({ (int64_t)r->scratch * grid[0] * grid[1] * grid[2] },
					 at::TensorOptions().dtype(at::kByte).device(
						 c10::Device(c10::DeviceType::PrivateUse1, (c10::DeviceIndex)r->dev)));
			words[n++] = (uint64_t)(uintptr_t)area.data_ptr();
		}
		maia_torch::triton_launch_words(r->dev, r->kernel, grid, words, n, r->budget);
	} catch (const std::exception &e) {
		PyErr_SetString(PyExc_RuntimeError, e.what());
		return nullptr;
	}
	Py_RETURN_NONE;
slow:
	PyErr_Clear();
	return PyObject_Vectorcall(r->slow, args, (size_t)nargs, nullptr);
}

/* A tuple of n Python ints into v (false: something else). */
bool int_tuple(PyObject *t, c10::SmallVector<int64_t, 6> &v)
{
	if (!PyTuple_Check(t))
		return false;
	Py_ssize_t n = PyTuple_GET_SIZE(t);

	v.resize((size_t)n);
	for (Py_ssize_t i = 0; i < n; i++) {
		PyObject *o = PyTuple_GET_ITEM(t, i);
		int overflow = 0;

		if (!PyLong_Check(o))
			return false;
		v[(size_t)i] = PyLong_AsLongLongAndOverflow(o, &overflow);
		if (overflow || (v[(size_t)i] == -1 && PyErr_Occurred()))
			return false;
	}
	return true;
}

/*
 * empty_strided(size, stride, dtype): torch.empty_strided(size, stride,
 * device="maia", dtype=dtype) on the current maia device, what Inductor's
 * wrapper allocates its buffers with, without Python's argument parser
 * (Inductor's empty_strided_cuda for CUDA). Anything but two tuples of ints
 * of one length and a dtype is a TypeError.
 */
PyObject *empty_strided(PyObject *, PyObject *const *args, Py_ssize_t nargs)
{
	c10::SmallVector<int64_t, 6> size, stride;

	if (nargs != 3 || !int_tuple(args[0], size) || !int_tuple(args[1], stride) ||
	    size.size() != stride.size() || !THPDtype_Check(args[2])) {
		if (!PyErr_Occurred())
			PyErr_SetString(PyExc_TypeError,
					"empty_strided(size, stride, dtype): two tuples of ints of one length and a dtype");
		return nullptr;
	}
	try {
		return THPVariable_Wrap(at::empty_strided(
			size, stride,
			at::TensorOptions()
				.dtype(reinterpret_cast<THPDtype *>(args[2])->scalar_type)
				.device(c10::DeviceType::PrivateUse1)));
	} catch (const std::exception &e) {
		PyErr_SetString(PyExc_RuntimeError, e.what());
		return nullptr;
	}
}

PyMethodDef empty_strided_def = { "empty_strided",
				  reinterpret_cast<PyCFunction>(reinterpret_cast<void (*)()>(empty_strided)),
				  METH_FASTCALL,
				  "empty_strided(size, stride, dtype): torch.empty_strided on the current maia device "
				  "(Inductor's buffers)." };

PyMethodDef launch_def = { "maia_triton_runner", reinterpret_cast<PyCFunction>(reinterpret_cast<void (*)()>(launch)),
			   METH_FASTCALL, "A Triton kernel's launch on a maia device (maia._maia_launch.runner)." };

} // namespace

PYBIND11_MODULE(_maia_launch, m)
{
	PyObject *alloc = PyCFunction_NewEx(&empty_strided_def, nullptr, m.ptr());

	if (!alloc || PyModule_AddObject(m.ptr(), "empty_strided", alloc) < 0) {
		Py_XDECREF(alloc);
		throw pybind11::error_already_set();
	}
	m.def("runner",
	      [](pybind11::object slow, const std::string &key, pybind11::bytes binary, int device,
		 uint32_t budget, const std::string &kinds, uint32_t scratch) {
		      for (char c : kinds)
			      if (c != 'p' && c != 'f' && c != 'i' && c != '-')
				      throw pybind11::value_error("maia: argument kind '" + std::string(1, c) +
								  "' is not p, f, i or -");
		      auto *r = new Runner{ slow.release().ptr(), key, std::string(binary), nullptr, device,
					    budget, scratch, kinds };
		      PyObject *capsule = PyCapsule_New(r, kCapsule, drop);
		      if (!capsule) {
			      Py_DECREF(r->slow);
			      delete r;
			      throw pybind11::error_already_set();
		      }
		      PyObject *fn = PyCFunction_NewEx(&launch_def, capsule, nullptr);
		      Py_DECREF(capsule);
		      if (!fn)
			      throw pybind11::error_already_set();
		      return pybind11::reinterpret_steal<pybind11::object>(fn);
	      },
	      pybind11::arg("slow"), pybind11::arg("key"), pybind11::arg("binary"), pybind11::arg("device"),
	      pybind11::arg("budget"), pybind11::arg("kinds"), pybind11::arg("scratch") = 0,
	      "Kernel key's launcher on maia:device: a C function called as Triton's launcher is, the "
	      "arguments by kinds (p pointer, f fp32, i integer, - none) and a spill area of scratch bytes "
	      "per program instance, slow for anything else.");
}
