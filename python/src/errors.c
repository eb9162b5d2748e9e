/* wafer — SPDX-License-Identifier: MIT
 *
 * errors.c: one Python exception class per wafer_status, all below
 * wafer.Error, each carrying wafer_last_error()'s text. Classes that
 * match a built-in meaning also derive from it (InvalidArgumentError is a
 * ValueError, OutOfMemoryError a MemoryError, ...), so code that catches
 * the built-in ones keeps working. The instance's .status is the number,
 * .status_name the C name ("WAFER_ERROR_DONATED"). */
#include "wafer_py.h"

struct error_def {
	wafer_status status;
	const char *name; /* wafer.<name> */
	PyObject **base;  /* a built-in base besides wafer.Error, or NULL */
	const char *doc;
};

static PyObject *error_base;
static PyObject *error_class[WAFER_ERROR_BUILD + 1];

static const struct error_def errors[] = {
	{WAFER_ERROR_INVALID_ARGUMENT, "InvalidArgumentError",
	 &PyExc_ValueError,
	 "An argument is out of its range (a shape, a dtype, a view); nothing "
	 "was changed."},
	{WAFER_ERROR_OUT_OF_MEMORY, "OutOfMemoryError", &PyExc_MemoryError,
	 "Neither the cache nor the device had room; the text gives the "
	 "bytes asked, in use and reserved."},
	{WAFER_ERROR_NOT_FOUND, "NotFoundError", &PyExc_LookupError,
	 "A named thing (plugin, device, kernel, file) does not exist."},
	{WAFER_ERROR_NOT_SUPPORTED, "NotSupportedError", NULL,
	 "The backend lacks the feature, or the kernel for this dtype."},
	{WAFER_ERROR_CONFIG, "ConfigError", NULL,
	 "A configuration file or option is malformed (file:line in the "
	 "text)."},
	{WAFER_ERROR_PLUGIN, "PluginError", NULL,
	 "A plugin could not be loaded or rejected itself."},
	{WAFER_ERROR_NO_DEVICE, "NoDeviceError", NULL,
	 "No loaded plugin has a device matching the selector."},
	{WAFER_ERROR_DEVICE, "DeviceError", NULL,
	 "The device or a kernel failed while running queued work."},
	{WAFER_ERROR_OUT_OF_RANGE, "OutOfRangeError", &PyExc_IndexError,
	 "An offset, size or view reaches past the end of a buffer."},
	{WAFER_ERROR_INVALID_HANDLE, "InvalidHandleError", NULL,
	 "The buffer was released or belongs to another client."},
	{WAFER_ERROR_DONATED, "DonatedError", NULL,
	 "The tensor was given up to an operation (wafer.donate) and names "
	 "nothing any more."},
	{WAFER_ERROR_IO, "IOError", &PyExc_OSError,
	 "Reading or writing a file failed."},
	{WAFER_ERROR_ABI_MISMATCH, "AbiMismatchError", NULL,
	 "A plugin speaks another ABI major than the core."},
	{WAFER_ERROR_INTERNAL, "InternalError", NULL,
	 "A bug inside wafer or a plugin: an invariant did not hold."},
	{WAFER_ERROR_BUILD, "BuildError", NULL,
	 "A program did not compile or link; the text is the compiler's "
	 "log."},
};

int wp_errors_init(PyObject *module)
{
	error_base = PyErr_NewExceptionWithDoc(
		"wafer.Error",
		"Base of every wafer exception. .status is the wafer_status "
		"number, .status_name its C name; str() is wafer_last_error()'s "
		"text.",
		NULL, NULL);
	if (!error_base || PyModule_AddObjectRef(module, "Error", error_base))
		return -1;
	for (size_t i = 0; i < sizeof errors / sizeof errors[0]; i++) {
		const struct error_def *e = &errors[i];
		char qual[64];
		PyObject *bases, *cls, *v;

		snprintf(qual, sizeof qual, "wafer.%s", e->name);
		bases = e->base ? PyTuple_Pack(2, error_base, *e->base)
				: PyTuple_Pack(1, error_base);
		if (!bases)
			return -1;
		cls = PyErr_NewExceptionWithDoc(qual, e->doc, bases, NULL);
		Py_DECREF(bases);
		if (!cls)
			return -1;
		v = PyLong_FromLong(e->status);
		if (!v || PyObject_SetAttrString(cls, "status", v)) {
			Py_XDECREF(v);
			Py_DECREF(cls);
			return -1;
		}
		Py_DECREF(v);
		v = PyUnicode_FromString(wafer_status_string(e->status));
		if (!v || PyObject_SetAttrString(cls, "status_name", v)) {
			Py_XDECREF(v);
			Py_DECREF(cls);
			return -1;
		}
		Py_DECREF(v);
		error_class[e->status] = cls;
		if (PyModule_AddObjectRef(module, e->name, cls))
			return -1;
	}
	return 0;
}

PyObject *wp_raise(wafer_status status, const char *what)
{
	PyObject *cls = error_base;
	const char *detail = wafer_last_error();

	if (status > 0 && status <= WAFER_ERROR_BUILD && error_class[status])
		cls = error_class[status];
	if (!detail || !*detail)
		detail = wafer_status_string(status);
	if (what)
		PyErr_Format(cls, "%s: %s", what, detail);
	else
		PyErr_SetString(cls, detail);
	return NULL;
}

PyObject *wp_raise_msg(wafer_status status, const char *msg)
{
	PyObject *cls = error_base;

	if (status > 0 && status <= WAFER_ERROR_BUILD && error_class[status])
		cls = error_class[status];
	PyErr_SetString(cls, msg);
	return NULL;
}
