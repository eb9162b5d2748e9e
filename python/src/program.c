/* wafer — SPDX-License-Identifier: MIT
 *
 * program.c: wafer.Program (wafer_program: the caller's own kernels,
 * built from sources in several formats, the device taking the first it
 * accepts) and wafer.Kernel (a kernel ref of it, launched with tensors
 * as bindings and a parameter block of bytes; struct.pack makes one). */
#include "wafer_py.h"

#include <string.h>

typedef struct {
	PyObject_HEAD
	ClientObject *client;
	wafer_program *p;
} ProgramObject;

typedef struct {
	PyObject_HEAD
	ProgramObject *program;
	const wafer_kernel_ref *ref;
	uint32_t binding_count;
	size_t params_size;
	PyObject *name;
} KernelObject;

static const struct {
	const char *name;
	wafer_program_format format;
} formats[] = {
	{"cuda", WAFER_PROGRAM_CUDA_C},	    {"cuda-c", WAFER_PROGRAM_CUDA_C},
	{"ptx", WAFER_PROGRAM_PTX},	    {"cubin", WAFER_PROGRAM_CUBIN},
	{"opencl", WAFER_PROGRAM_OPENCL_C}, {"opencl-c", WAFER_PROGRAM_OPENCL_C},
	{"spirv", WAFER_PROGRAM_SPIRV},	    {"host-c", WAFER_PROGRAM_HOST_C},
	{"host-so", WAFER_PROGRAM_HOST_SO},
};

static wafer_program_format format_of(PyObject *key)
{
	const char *s = PyUnicode_Check(key) ? PyUnicode_AsUTF8(key) : NULL;

	for (size_t i = 0; s && i < sizeof formats / sizeof formats[0]; i++)
		if (!strcmp(s, formats[i].name))
			return formats[i].format;
	if (!PyErr_Occurred())
		PyErr_Format(PyExc_ValueError,
			     "program: unknown source format %R (cuda, ptx, "
			     "cubin, opencl, spirv, host-c, host-so)", key);
	return WAFER_PROGRAM_NONE;
}

PyObject *wp_client_program(ClientObject *client, PyObject *args,
			    PyObject *kwds)
{
	static char *kwlist[] = {"sources", "options", NULL};
	PyObject *sources, *keep = NULL, *k, *v;
	const char *options = NULL;
	wafer_program_source *src = NULL;
	Py_ssize_t n, pos = 0, i = 0;
	ProgramObject *self = NULL;
	wafer_status st;

	if (!PyArg_ParseTupleAndKeywords(args, kwds, "O|z:program", kwlist,
					 &sources, &options))
		return NULL;
	if (!PyDict_Check(sources) || PyDict_Size(sources) == 0) {
		PyErr_SetString(PyExc_TypeError, "program: sources is a "
				"non-empty dict {format: source}");
		return NULL;
	}
	n = PyDict_Size(sources);
	src = PyMem_Calloc((size_t)n, sizeof *src);
	keep = PyList_New(0);
	if (!src || !keep)
		goto out;
	while (PyDict_Next(sources, &pos, &k, &v)) {
		PyObject *bytes;
		char *name;

		src[i].struct_size = sizeof src[i];
		src[i].format = format_of(k);
		if (src[i].format == WAFER_PROGRAM_NONE)
			goto out;
		if (PyUnicode_Check(v))
			bytes = PyUnicode_AsUTF8String(v);
		else
			bytes = PyBytes_FromObject(v);
		if (!bytes || PyList_Append(keep, bytes)) {
			Py_XDECREF(bytes);
			goto out;
		}
		Py_DECREF(bytes);
		src[i].data = PyBytes_AS_STRING(bytes);
		src[i].size = (size_t)PyBytes_GET_SIZE(bytes);
		name = (char *)PyUnicode_AsUTF8(k);
		src[i].name = name;
		i++;
	}
	self = PyObject_New(ProgramObject, &WpProgram_Type);
	if (!self)
		goto out;
	Py_INCREF(client);
	self->client = client;
	self->p = NULL;
	Py_BEGIN_ALLOW_THREADS
	st = wafer_program_create(client->c, src, (size_t)n, options,
				  &self->p);
	Py_END_ALLOW_THREADS
	if (st != WAFER_OK) {
		Py_CLEAR(self);
		wp_raise(st, "program");
	}
out:
	PyMem_Free(src);
	Py_XDECREF(keep);
	return (PyObject *)self;
}

static void program_dealloc(ProgramObject *self)
{
	if (self->p)
		wafer_program_release(self->p);
	Py_XDECREF(self->client);
	PyObject_Free(self);
}

static PyObject *program_kernel(ProgramObject *self, PyObject *args,
				PyObject *kwds)
{
	static char *kwlist[] = {"name", "bindings", "params_size", NULL};
	const char *name;
	unsigned int bindings;
	Py_ssize_t params_size = 0;
	KernelObject *k;
	wafer_status st;

	if (!PyArg_ParseTupleAndKeywords(args, kwds, "sI|n:kernel", kwlist,
					 &name, &bindings, &params_size))
		return NULL;
	if (params_size < 0) {
		PyErr_SetString(PyExc_ValueError, "kernel: params_size < 0");
		return NULL;
	}
	k = PyObject_New(KernelObject, &WpKernel_Type);
	if (!k)
		return NULL;
	Py_INCREF(self);
	k->program = self;
	k->binding_count = bindings;
	k->params_size = (size_t)params_size;
	k->name = PyUnicode_FromString(name);
	k->ref = NULL;
	if (!k->name) {
		Py_DECREF(k);
		return NULL;
	}
	st = wafer_program_kernel(self->p, name, bindings, (size_t)params_size,
				  &k->ref);
	if (st != WAFER_OK) {
		Py_DECREF(k);
		return wp_raise(st, "kernel");
	}
	return (PyObject *)k;
}

static PyMethodDef program_methods[] = {
	{"kernel", (PyCFunction)(void (*)(void))program_kernel,
	 METH_VARARGS | METH_KEYWORDS,
	 "kernel(name, bindings, params_size=0) -> Kernel\n\nKernel |name| "
	 "of the program, taking exactly |bindings| tensors and a parameter "
	 "block of exactly |params_size| bytes (wafer_program_kernel)."},
	{NULL, NULL, 0, NULL},
};

PyTypeObject WpProgram_Type = {
	PyVarObject_HEAD_INIT(NULL, 0)
	.tp_name = "wafer.Program",
	.tp_basicsize = sizeof(ProgramObject),
	.tp_dealloc = (destructor)program_dealloc,
	.tp_flags = Py_TPFLAGS_DEFAULT,
	.tp_doc = "A program of the caller's own kernels on a client "
		  "(Client.program); released with its last reference.",
	.tp_methods = program_methods,
};

static void kernel_dealloc(KernelObject *self)
{
	Py_XDECREF(self->name);
	Py_XDECREF(self->program);
	PyObject_Free(self);
}

static PyObject *kernel_repr(KernelObject *self)
{
	return PyUnicode_FromFormat("<wafer.Kernel %U: %u bindings, %zu bytes "
				    "of parameters>", self->name,
				    (unsigned)self->binding_count,
				    self->params_size);
}

/* Parses a launch shape: an int or up to three ints. */
static int parse_dims(PyObject *o, uint64_t *dims, const char *what)
{
	PyObject *seq;
	Py_ssize_t n;

	if (!o || o == Py_None)
		return 0;
	seq = PyIndex_Check(o) ? PyTuple_Pack(1, o)
			       : PySequence_Fast(o, "launch shape");
	if (!seq)
		return -1;
	n = PySequence_Fast_GET_SIZE(seq);
	if (n > 3) {
		Py_DECREF(seq);
		PyErr_Format(PyExc_ValueError, "%s: at most 3 dimensions",
			     what);
		return -1;
	}
	for (Py_ssize_t i = 0; i < n; i++) {
		unsigned long long v = PyLong_AsUnsignedLongLong(
			PySequence_Fast_GET_ITEM(seq, i));

		if (v == (unsigned long long)-1 && PyErr_Occurred()) {
			Py_DECREF(seq);
			return -1;
		}
		dims[i] = v;
	}
	Py_DECREF(seq);
	return 0;
}

static PyObject *kernel_call(KernelObject *self, PyObject *args,
			     PyObject *kwds)
{
	static char *kwlist[] = {"params", "grid", "block", NULL};
	PyObject *params = Py_None, *grid = Py_None, *block = Py_None, *empty;
	wafer_buffer_binding b[16];
	wafer_execute_args ea = {sizeof ea};
	Py_ssize_t n = PyTuple_GET_SIZE(args);
	Py_buffer pb = {0};
	uint64_t local[3] = {0, 0, 0};
	wafer_status st;
	ClientObject *client = self->program->client;

	empty = PyTuple_New(0);
	if (!empty)
		return NULL;
	if (!PyArg_ParseTupleAndKeywords(empty, kwds, "|$OOO:kernel", kwlist,
					 &params, &grid, &block)) {
		Py_DECREF(empty);
		return NULL;
	}
	Py_DECREF(empty);
	if ((size_t)n != self->binding_count ||
	    n > (Py_ssize_t)(sizeof b / sizeof b[0])) {
		PyErr_Format(PyExc_TypeError, "kernel %U takes %u tensors, "
			     "%zd given", self->name,
			     (unsigned)self->binding_count, n);
		return NULL;
	}
	for (Py_ssize_t i = 0; i < n; i++) {
		TensorObject *t = (TensorObject *)PyTuple_GET_ITEM(args, i);
		size_t es;

		if (!WpTensor_Check((PyObject *)t) || t->client != client ||
		    t->state == TENSOR_GONE) {
			PyErr_Format(PyExc_TypeError, "kernel %U: binding "
				     "%zd is not a live tensor of this "
				     "program's client", self->name, i);
			return NULL;
		}
		if (!wp_view_dense(&t->t)) {
			PyErr_Format(PyExc_ValueError, "kernel %U: binding "
				     "%zd is a strided view; a kernel gets "
				     "a pointer, so pass t.copy()",
				     self->name, i);
			return NULL;
		}
		es = wafer_dtype_size(t->t.dtype);
		b[i].handle = t->t.handle;
		b[i].offset = t->t.offset * es;
		b[i].size = wafer_tensor_count(&t->t) * es;
	}
	if (grid == Py_None) {
		PyErr_SetString(PyExc_TypeError, "kernel: grid= (total work "
				"items per dimension) is required");
		return NULL;
	}
	if (parse_dims(grid, ea.global, "grid") ||
	    parse_dims(block, local, "block"))
		return NULL;
	for (int i = 0; i < 3; i++)
		ea.local[i] = (uint32_t)local[i];
	if (params != Py_None &&
	    PyObject_GetBuffer(params, &pb, PyBUF_SIMPLE))
		return NULL;
	if ((size_t)pb.len != self->params_size) {
		PyErr_Format(PyExc_ValueError, "kernel %U takes %zu bytes of "
			     "parameters, %zd given", self->name,
			     self->params_size, pb.len);
		PyBuffer_Release(&pb);
		return NULL;
	}
	ea.kernel_ref = self->ref;
	ea.bindings = b;
	ea.binding_count = (size_t)n;
	ea.params = pb.len ? pb.buf : NULL;
	ea.params_size = (size_t)pb.len;
	Py_BEGIN_ALLOW_THREADS
	st = wafer_execute(client->c, &ea);
	Py_END_ALLOW_THREADS
	PyBuffer_Release(&pb);
	if (st != WAFER_OK)
		return wp_raise(st, NULL);
	Py_RETURN_NONE;
}

PyTypeObject WpKernel_Type = {
	PyVarObject_HEAD_INIT(NULL, 0)
	.tp_name = "wafer.Kernel",
	.tp_basicsize = sizeof(KernelObject),
	.tp_dealloc = (destructor)kernel_dealloc,
	.tp_repr = (reprfunc)kernel_repr,
	.tp_call = (ternaryfunc)kernel_call,
	.tp_flags = Py_TPFLAGS_DEFAULT,
	.tp_doc = "kernel(*tensors, params=b\"\", grid=(n,), block=None)\n\n"
		  "Launches the kernel (wafer_execute) with the tensors as its "
		  "bindings, in order, and params (bytes; struct.pack makes "
		  "them) as its parameter block. It writes into the tensors' "
		  "buffers: every tensor naming a buffer sees what it wrote. "
		  "Bindings must be dense views.",
};
