/* wafer — SPDX-License-Identifier: MIT
 *
 * module.c: the module wafer._wafer (the package wafer re-exports it)
 * and the element types: wafer's dtypes as numpy dtype objects.
 *
 * Why a C extension: Python calls a C function of an extension type for
 * some 50-100 ns; ctypes spends several microseconds converting its
 * arguments on every call, which would be most of a small operation's
 * cost. The operators of Tensor are the extension's number slots, so
 * `a + b` goes from the interpreter to wafer_op_binary with no Python
 * frame in between. */
#include "wafer_py.h"

#include <wafer/plugin_util.h>

#include <string.h>

static PyObject *numpy_module;
/* Indexed by wafer_dtype. */
static PyObject *dtype_objects[WAFER_DTYPE_I64 + 1];

/* The name of a wafer dtype as numpy spells it (plugin_util.h keeps the
 * one list), NULL for none and unknown values. */
static const char *dtype_names_at(int dtype)
{
	const char *n = wafer_plugin_dtype_name((uint32_t)dtype);

	return strcmp(n, "none") && strcmp(n, "unknown") ? n : NULL;
}

PyObject *wp_numpy(void)
{
	if (!numpy_module)
		numpy_module = PyImport_ImportModule("numpy");
	return numpy_module;
}

PyObject *wp_host(const char *name)
{
	static PyObject *host;
	PyObject *fn;

	if (!host)
		host = PyImport_ImportModule("wafer._host");
	if (!host)
		return NULL;
	fn = PyObject_GetAttrString(host, name);
	Py_XDECREF(fn); /* the module keeps it */
	return fn;
}

const char *wp_dtype_name(wafer_dtype dtype)
{
	if ((unsigned)dtype <= WAFER_DTYPE_I64 && dtype_names_at(dtype))
		return dtype_names_at(dtype);
	return "none";
}

PyObject *wp_dtype_object(wafer_dtype dtype)
{
	if ((unsigned)dtype > WAFER_DTYPE_I64 || !dtype_names_at(dtype))
		return Py_None;
	if (!dtype_objects[dtype]) {
		PyObject *np = wp_numpy(), *d;

		/* bfloat16 has no numpy dtype: its name stands for it. */
		if (dtype == WAFER_DTYPE_BF16 || !np) {
			PyErr_Clear();
			d = PyUnicode_FromString(dtype_names_at(dtype));
		} else {
			d = PyObject_CallMethod(np, "dtype", "s",
						dtype_names_at(dtype));
		}
		if (!d) {
			PyErr_Clear();
			return Py_None;
		}
		dtype_objects[dtype] = d;
	}
	return dtype_objects[dtype];
}

wafer_dtype wp_dtype_from_format(const char *format, Py_ssize_t itemsize)
{
	char c;

	if (!format)
		format = "B";
	while (*format == '<' || *format == '=' || *format == '@' ||
	       *format == '!' || *format == '>')
		format++;
	c = format[0];
	if (!c || format[1])
		return WAFER_DTYPE_NONE;
	switch (c) {
	case 'e':
		return WAFER_DTYPE_F16;
	case 'f':
		return WAFER_DTYPE_F32;
	case 'd':
		return WAFER_DTYPE_F64;
	case 'b': case 'h': case 'i': case 'l': case 'q': case 'n':
		return itemsize == 4 ? WAFER_DTYPE_I32 :
		       itemsize == 8 ? WAFER_DTYPE_I64 : WAFER_DTYPE_NONE;
	case 'B': case '?':
		return itemsize == 1 ? WAFER_DTYPE_U8 : WAFER_DTYPE_NONE;
	}
	return WAFER_DTYPE_NONE;
}

wafer_dtype wp_dtype_from(PyObject *obj)
{
	PyObject *np, *d = NULL, *str = NULL;
	wafer_dtype r = WAFER_DTYPE_NONE;

	if (PyUnicode_Check(obj)) {
		const char *s = PyUnicode_AsUTF8(obj);

		if (!s)
			return WAFER_DTYPE_NONE;
		for (int i = 1; i <= WAFER_DTYPE_I64; i++)
			if (dtype_names_at(i) && !strcmp(s, dtype_names_at(i)))
				return (wafer_dtype)i;
		if (!strcmp(s, "bf16"))
			return WAFER_DTYPE_BF16;
	}
	np = wp_numpy();
	if (!np)
		return WAFER_DTYPE_NONE;
	d = PyObject_CallMethod(np, "dtype", "O", obj);
	if (!d)
		return WAFER_DTYPE_NONE;
	str = PyObject_GetAttrString(d, "name");
	if (str && PyUnicode_Check(str)) {
		const char *s = PyUnicode_AsUTF8(str);

		for (int i = 1; s && i <= WAFER_DTYPE_I64; i++)
			if (dtype_names_at(i) && !strcmp(s, dtype_names_at(i)))
				r = (wafer_dtype)i;
		if (r == WAFER_DTYPE_NONE)
			PyErr_Format(PyExc_TypeError,
				     "wafer has no element type %s (it has "
				     "float32, float16, bfloat16, float64, "
				     "int32, int64, uint8)",
				     s ? s : "?");
	}
	Py_XDECREF(str);
	Py_DECREF(d);
	return r;
}

PyDoc_STRVAR(donate_doc,
"donate(t) -> t\n\n"
"Marks tensor t to be given up by the next operation that takes it\n"
"(WAFER_DONATE_INPUT, wafer-donation(7)): the operation's output takes\n"
"t's buffer over when nothing else names it, and t names nothing from\n"
"then on (using it raises wafer.DonatedError). Returns t, so that\n"
"    y = wafer.exp(wafer.donate(x))\n"
"runs in x's memory.");

static PyObject *mod_donate(PyObject *m, PyObject *arg)
{
	TensorObject *t = (TensorObject *)arg;

	(void)m;
	if (!WpTensor_Check(arg)) {
		PyErr_Format(PyExc_TypeError, "donate() takes a wafer.Tensor, "
			     "not %.100s", Py_TYPE(arg)->tp_name);
		return NULL;
	}
	if (t->state == TENSOR_GONE)
		return wp_raise_msg(WAFER_ERROR_DONATED,
				    "donate(): the tensor was donated already");
	t->state = TENSOR_DONATING;
	Py_INCREF(arg);
	return arg;
}

static PyObject *mod_version(PyObject *m, PyObject *unused)
{
	(void)m;
	(void)unused;
	return PyUnicode_FromString(wafer_version_string());
}

static PyMethodDef module_methods[] = {
	{"donate", mod_donate, METH_O, donate_doc},
	{"library_version", mod_version, METH_NOARGS,
	 "library_version() -> str\n\nThe version of the libwafer loaded "
	 "(wafer_version_string)."},
	{NULL, NULL, 0, NULL},
};

static struct PyModuleDef module_def = {
	PyModuleDef_HEAD_INIT,
	.m_name = "wafer._wafer",
	.m_doc = "The C extension behind the wafer package; import wafer.",
	.m_size = -1,
	.m_methods = module_methods,
};

static int add_type(PyObject *m, PyTypeObject *type, const char *name)
{
	if (PyType_Ready(type) < 0)
		return -1;
	return PyModule_AddObjectRef(m, name, (PyObject *)type);
}

PyMODINIT_FUNC PyInit__wafer(void)
{
	PyObject *m = PyModule_Create(&module_def);

	if (!m)
		return NULL;
	if (wp_errors_init(m) || wp_runtime_init(m) ||
	    add_type(m, &WpRuntime_Type, "Runtime") ||
	    add_type(m, &WpClient_Type, "Client") ||
	    add_type(m, &WpTensor_Type, "Tensor") ||
	    add_type(m, &WpProgram_Type, "Program") ||
	    add_type(m, &WpKernel_Type, "Kernel") ||
	    add_type(m, &WpGraph_Type, "Graph") || wp_ops_init(m) ||
	    wp_bench_init(m)) {
		Py_DECREF(m);
		return NULL;
	}
	/* numpy's operators give way to Tensor's (ndarray + Tensor is
	 * Tensor.__radd__), and numpy's ufuncs refuse a Tensor instead of
	 * turning it into an object array. */
	if (PyDict_SetItemString(WpTensor_Type.tp_dict, "__array_ufunc__",
				 Py_None)) {
		Py_DECREF(m);
		return NULL;
	}
	PyType_Modified(&WpTensor_Type);
	return m;
}
