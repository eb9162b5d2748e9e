/* wafer — SPDX-License-Identifier: MIT
 *
 * runtime.c: wafer.Runtime (wafer_runtime: configuration, plugins,
 * devices, autotune statistics) and wafer.Client (wafer_client: a device;
 * tensors are made from it, memory statistics read from it). */
#include "wafer_py.h"
#include <wafer/trace.h>

#include <string.h>

/*===--------------------------------------------------------------------===
 * Device: a struct sequence, so it prints and unpacks like a tuple
 *===--------------------------------------------------------------------===*/

static PyStructSequence_Field device_fields[] = {
	{"selector", "what rt.client() takes for it: \"cpu:0\""},
	{"backend", "plugin name: \"cpu\""},
	{"index", "index within the backend"},
	{"name", "the device's name from its plugin"},
	{"memory_bytes", "device memory in bytes"},
	{"capabilities", "WAFER_CAP_* bits"},
	{"features", "the capability bits by name: {\"f64\", \"programs\", ...}"},
	{NULL, NULL},
};

static PyStructSequence_Desc device_desc = {
	"wafer.Device", "A device as the runtime lists it.", device_fields, 7,
};

static PyTypeObject *device_type;

static const struct {
	uint64_t bit;
	const char *name;
} cap_names[] = {
	{WAFER_CAP_F16, "f16"},
	{WAFER_CAP_BF16, "bf16"},
	{WAFER_CAP_F64, "f64"},
	{WAFER_CAP_HOST_MEMORY, "host_memory"},
	{WAFER_CAP_STREAM_ORDERED_ALLOC, "stream_ordered_alloc"},
	{WAFER_CAP_VIRTUAL_MEMORY, "virtual_memory"},
	{WAFER_CAP_DEVICE_TIMERS, "device_timers"},
	{WAFER_CAP_PROGRAMS, "programs"},
};

static PyObject *device_new(const wafer_device_desc *d)
{
	PyObject *o, *features;

	features = PyFrozenSet_New(NULL);
	if (!features)
		return NULL;
	for (size_t i = 0; i < sizeof cap_names / sizeof cap_names[0]; i++) {
		if (d->capabilities & cap_names[i].bit) {
			PyObject *s = PyUnicode_FromString(cap_names[i].name);

			if (!s || PySet_Add(features, s)) {
				Py_XDECREF(s);
				Py_DECREF(features);
				return NULL;
			}
			Py_DECREF(s);
		}
	}
	o = PyStructSequence_New(device_type);
	if (!o) {
		Py_DECREF(features);
		return NULL;
	}
	PyStructSequence_SET_ITEM(o, 0, PyUnicode_FromFormat(
		"%s:%u", d->backend ? d->backend : "?", (unsigned)d->index));
	PyStructSequence_SET_ITEM(o, 1, PyUnicode_FromString(
		d->backend ? d->backend : ""));
	PyStructSequence_SET_ITEM(o, 2, PyLong_FromUnsignedLong(d->index));
	PyStructSequence_SET_ITEM(o, 3, PyUnicode_FromString(
		d->name ? d->name : ""));
	PyStructSequence_SET_ITEM(o, 4,
				  PyLong_FromUnsignedLongLong(d->memory_bytes));
	PyStructSequence_SET_ITEM(o, 5,
				  PyLong_FromUnsignedLongLong(d->capabilities));
	PyStructSequence_SET_ITEM(o, 6, features);
	for (int i = 0; i < 6; i++) {
		if (!PyStructSequence_GET_ITEM(o, i)) {
			Py_DECREF(o);
			return NULL;
		}
	}
	return o;
}

int wp_runtime_init(PyObject *module)
{
	device_type = PyStructSequence_NewType(&device_desc);
	if (!device_type)
		return -1;
	return PyModule_AddObjectRef(module, "Device", (PyObject *)device_type);
}

/*===--------------------------------------------------------------------===
 * Runtime
 *===--------------------------------------------------------------------===*/

/* Adds (section, key, value) from |k| ("section.key" or a 2-tuple) and
 * |v| to |opts|, keeping the encoded strings alive in |keep|. */
static int add_option(PyObject *keep, wafer_option *opt, PyObject *k,
		      PyObject *v)
{
	PyObject *sec = NULL, *key = NULL, *val = NULL;
	int rc = -1;

	if (PyUnicode_Check(k)) {
		PyObject *parts = PyObject_CallMethod(k, "split", "si", ".",
						      1);
		if (!parts)
			return -1;
		if (PyList_GET_SIZE(parts) != 2) {
			PyErr_Format(PyExc_ValueError,
				     "option %R: want \"section.key\"", k);
			Py_DECREF(parts);
			return -1;
		}
		sec = PyUnicode_AsUTF8String(PyList_GET_ITEM(parts, 0));
		key = PyUnicode_AsUTF8String(PyList_GET_ITEM(parts, 1));
		Py_DECREF(parts);
	} else if (PyTuple_Check(k) && PyTuple_GET_SIZE(k) == 2) {
		sec = PyUnicode_AsUTF8String(PyTuple_GET_ITEM(k, 0));
		key = PyUnicode_AsUTF8String(PyTuple_GET_ITEM(k, 1));
	} else {
		PyErr_Format(PyExc_TypeError,
			     "option key %R: want \"section.key\" or "
			     "(section, key)", k);
		return -1;
	}
	if (!sec || !key)
		goto out;
	{
		PyObject *s = PyObject_Str(v);

		if (!s)
			goto out;
		val = PyUnicode_AsUTF8String(s);
		Py_DECREF(s);
	}
	if (!val || PyList_Append(keep, sec) || PyList_Append(keep, key) ||
	    PyList_Append(keep, val))
		goto out;
	opt->section = PyBytes_AS_STRING(sec);
	opt->key = PyBytes_AS_STRING(key);
	opt->value = PyBytes_AS_STRING(val);
	rc = 0;
out:
	Py_XDECREF(sec);
	Py_XDECREF(key);
	Py_XDECREF(val);
	return rc;
}

static PyObject *runtime_new(PyTypeObject *type, PyObject *args,
			     PyObject *kwds)
{
	static char *kwlist[] = {"options", "autotune", "autotune_cache_dir",
				 "tolerate_config_errors", "no_config_files",
				 NULL};
	PyObject *options = Py_None, *autotune = Py_None,
		 *cache_dir = Py_None, *keep = NULL;
	int tolerate = 0, no_files = 0;
	wafer_option *opts = NULL;
	size_t n = 0, cap;
	wafer_runtime_options ro = {sizeof ro};
	RuntimeObject *self;
	wafer_status st;

	if (!PyArg_ParseTupleAndKeywords(args, kwds, "|O$OOpp", kwlist,
					 &options, &autotune, &cache_dir,
					 &tolerate, &no_files))
		return NULL;
	if (options != Py_None && !PyDict_Check(options)) {
		PyErr_SetString(PyExc_TypeError,
				"options: a dict {\"section.key\": value}");
		return NULL;
	}
	cap = (options != Py_None ? (size_t)PyDict_Size(options) : 0) + 2;
	opts = PyMem_Calloc(cap, sizeof *opts);
	keep = PyList_New(0);
	if (!opts || !keep)
		goto fail;
	if (options != Py_None) {
		Py_ssize_t pos = 0;
		PyObject *k, *v;

		while (PyDict_Next(options, &pos, &k, &v))
			if (add_option(keep, &opts[n++], k, v))
				goto fail;
	}
	if (autotune != Py_None) {
		PyObject *k = Py_BuildValue("(ss)", "autotune", "mode");

		if (!k || add_option(keep, &opts[n++], k, autotune)) {
			Py_XDECREF(k);
			goto fail;
		}
		Py_DECREF(k);
	}
	if (cache_dir != Py_None) {
		PyObject *k = Py_BuildValue("(ss)", "autotune", "cache_dir");

		if (!k || add_option(keep, &opts[n++], k, cache_dir)) {
			Py_XDECREF(k);
			goto fail;
		}
		Py_DECREF(k);
	}
	ro.options = opts;
	ro.option_count = n;
	ro.flags = (tolerate ? WAFER_RUNTIME_TOLERATE_CONFIG_ERRORS : 0) |
		   (no_files ? WAFER_RUNTIME_NO_CONFIG_FILES : 0);
	self = (RuntimeObject *)type->tp_alloc(type, 0);
	if (!self)
		goto fail;
	Py_BEGIN_ALLOW_THREADS
	st = wafer_runtime_open(&ro, &self->rt);
	Py_END_ALLOW_THREADS
	PyMem_Free(opts);
	Py_DECREF(keep);
	if (st != WAFER_OK) {
		Py_DECREF(self);
		return wp_raise(st, "Runtime()");
	}
	return (PyObject *)self;
fail:
	PyMem_Free(opts);
	Py_XDECREF(keep);
	return NULL;
}

static void runtime_dealloc(RuntimeObject *self)
{
	/* Every client holds a reference to its runtime: none is open. */
	if (self->rt)
		wafer_runtime_close(self->rt);
	Py_TYPE(self)->tp_free((PyObject *)self);
}

/* Appends |o|, a new reference or NULL after a failed call, and drops
 * it; -1 with the error set when either failed. */
static int append_new(PyObject *list, PyObject *o)
{
	int rc = o ? PyList_Append(list, o) : -1;

	Py_XDECREF(o);
	return rc;
}

static PyObject *runtime_devices(RuntimeObject *self, PyObject *unused)
{
	size_t n = wafer_runtime_device_count(self->rt);
	PyObject *list = PyList_New(0);

	(void)unused;
	for (size_t i = 0; list && i < n; i++) {
		wafer_device_desc d = {sizeof d};
		wafer_status st = wafer_runtime_device(self->rt, i, &d);
		PyObject *o;

		if (st != WAFER_OK) {
			Py_DECREF(list);
			return wp_raise(st, "devices()");
		}
		o = device_new(&d);
		if (append_new(list, o)) {
			Py_DECREF(list);
			return NULL;
		}
	}
	return list;
}

static PyObject *str_or_none(const char *s)
{
	if (!s)
		Py_RETURN_NONE;
	return PyUnicode_FromString(s);
}

static PyObject *runtime_plugins(RuntimeObject *self, PyObject *unused)
{
	size_t n = wafer_runtime_plugin_count(self->rt);
	PyObject *list = PyList_New(0);

	(void)unused;
	for (size_t i = 0; list && i < n; i++) {
		wafer_plugin_report r = {sizeof r};
		wafer_status st = wafer_runtime_plugin(self->rt, i, &r);
		PyObject *o;

		if (st != WAFER_OK) {
			Py_DECREF(list);
			return wp_raise(st, "plugins()");
		}
		o = Py_BuildValue(
			"{s:N,s:N,s:N,s:O,s:I,s:N}", "name", str_or_none(r.name),
			"path", str_or_none(r.path), "version",
			str_or_none(r.version), "accepted",
			r.accepted ? Py_True : Py_False, "device_count",
			r.device_count, "reason", str_or_none(r.reason));
		if (append_new(list, o)) {
			Py_DECREF(list);
			return NULL;
		}
	}
	return list;
}

static PyObject *runtime_config(RuntimeObject *self, PyObject *args)
{
	const char *section, *key, *origin = NULL, *value;

	if (!PyArg_ParseTuple(args, "ss:config", &section, &key))
		return NULL;
	value = wafer_runtime_config_value(self->rt, section, key, &origin);
	if (!value)
		Py_RETURN_NONE;
	return Py_BuildValue("(ss)", value, origin ? origin : "");
}

static PyObject *runtime_autotune_stats(RuntimeObject *self, PyObject *unused)
{
	wafer_autotune_stats s = {sizeof s};
	wafer_status st = wafer_autotune_stats_get(self->rt, &s);

	(void)unused;
	if (st != WAFER_OK)
		return wp_raise(st, "autotune_stats()");
	return Py_BuildValue("{s:K,s:K,s:K,s:K,s:K,s:K}", "keys_tuned",
			     (unsigned long long)s.keys_tuned, "benchmark_runs",
			     (unsigned long long)s.benchmark_runs, "cache_hits",
			     (unsigned long long)s.cache_hits, "disk_hits",
			     (unsigned long long)s.disk_hits, "disqualified",
			     (unsigned long long)s.disqualified, "default_runs",
			     (unsigned long long)s.default_runs);
}

static PyObject *runtime_client(RuntimeObject *self, PyObject *args,
				PyObject *kwds)
{
	static char *kwlist[] = {"selector", "channel", "memory", NULL};
	const char *selector = "default", *channel = NULL, *memory = NULL;
	wafer_client_options co = {sizeof co};
	ClientObject *c;
	wafer_status st;

	if (!PyArg_ParseTupleAndKeywords(args, kwds, "|s$zz:client", kwlist,
					 &selector, &channel, &memory))
		return NULL;
	co.channel = channel;
	co.memory = memory;
	c = PyObject_New(ClientObject, &WpClient_Type);
	if (!c)
		return NULL;
	c->c = NULL;
	c->selector = NULL;
	Py_INCREF(self);
	c->runtime = self;
	Py_BEGIN_ALLOW_THREADS
	st = wafer_client_open(self->rt, selector, &co, &c->c);
	Py_END_ALLOW_THREADS
	if (st != WAFER_OK) {
		Py_DECREF(c);
		return wp_raise(st, NULL);
	}
	memset(&c->desc, 0, sizeof c->desc);
	c->desc.struct_size = sizeof c->desc;
	st = wafer_client_device(c->c, &c->desc);
	if (st != WAFER_OK) {
		Py_DECREF(c);
		return wp_raise(st, "client device");
	}
	c->selector = PyUnicode_FromFormat("%s:%u", c->desc.backend,
					   (unsigned)c->desc.index);
	if (!c->selector) {
		Py_DECREF(c);
		return NULL;
	}
	return (PyObject *)c;
}

static PyObject *runtime_trace_begin(RuntimeObject *self, PyObject *args)
{
	PyObject *path;

	if (!PyArg_ParseTuple(args, "O&:trace_begin", PyUnicode_FSConverter,
			      &path))
		return NULL;
	wafer_status st = wafer_trace_begin(self->rt, PyBytes_AS_STRING(path));
	Py_DECREF(path);
	if (st != WAFER_OK)
		return wp_raise(st, "trace_begin()");
	Py_RETURN_NONE;
}

static PyObject *runtime_trace_end(RuntimeObject *self, PyObject *unused)
{
	wafer_status st;

	(void)unused;
	Py_BEGIN_ALLOW_THREADS
	st = wafer_trace_end(self->rt);
	Py_END_ALLOW_THREADS
	if (st != WAFER_OK)
		return wp_raise(st, "trace_end()");
	Py_RETURN_NONE;
}

static PyMethodDef runtime_methods[] = {
	{"devices", (PyCFunction)runtime_devices, METH_NOARGS,
	 "devices() -> list[Device]\n\nThe devices of every accepted plugin, "
	 "in the order of the backend list."},
	{"plugins", (PyCFunction)runtime_plugins, METH_NOARGS,
	 "plugins() -> list[dict]\n\nEvery plugin the runtime looked for, "
	 "loaded or not, with the reason when not."},
	{"config", (PyCFunction)runtime_config, METH_VARARGS,
	 "config(section, key) -> (value, origin) | None\n\nThe value a "
	 "configuration key ended up with and where it came from."},
	{"autotune_stats", (PyCFunction)runtime_autotune_stats, METH_NOARGS,
	 "autotune_stats() -> dict\n\nAutotune counts since the runtime was "
	 "opened (wafer_autotune_stats_get): keys_tuned, benchmark_runs, "
	 "cache_hits, disk_hits, disqualified, default_runs."},
	{"trace_begin", (PyCFunction)runtime_trace_begin, METH_VARARGS,
	 "trace_begin(path)\n\nStarts a timeline trace of every client's "
	 "commands (wafer_trace_begin(3)); trace_end() writes it to path. "
	 "wafer.trace(path) does both around a with block."},
	{"trace_end", (PyCFunction)runtime_trace_end, METH_NOARGS,
	 "trace_end()\n\nStops the trace and writes its file (waits for "
	 "the work traced)."},
	{"client", (PyCFunction)(void (*)(void))runtime_client,
	 METH_VARARGS | METH_KEYWORDS,
	 "client(selector=\"default\", *, channel=None, memory=None) -> "
	 "Client\n\nOpens a client on a device: \"default\", \"cpu\", "
	 "\"cuda:0\", \"opencl\". channel: \"direct\", \"mutex\", \"mpsc\", "
	 "\"auto\"; memory: a strategy name (wafer-memory(7))."},
	{NULL, NULL, 0, NULL},
};

PyDoc_STRVAR(runtime_doc,
"Runtime(options=None, *, autotune=None, autotune_cache_dir=None,\n"
"        tolerate_config_errors=False, no_config_files=False)\n\n"
"Reads the configuration chain (wafer.conf(5)) and loads the backend\n"
"plugins. options: {\"section.key\": value} applied last, strongest,\n"
"e.g. {\"core.backend\": \"opencl,cpu\", \"memory.strategy\": \"pool\"}.\n"
"autotune: the autotune mode (\"fast\", \"full\", \"off\"; [autotune]\n"
"mode), autotune_cache_dir: where choices are kept ([autotune]\n"
"cache_dir).");

PyTypeObject WpRuntime_Type = {
	PyVarObject_HEAD_INIT(NULL, 0)
	.tp_name = "wafer.Runtime",
	.tp_basicsize = sizeof(RuntimeObject),
	.tp_dealloc = (destructor)runtime_dealloc,
	.tp_flags = Py_TPFLAGS_DEFAULT,
	.tp_doc = runtime_doc,
	.tp_methods = runtime_methods,
	.tp_new = runtime_new,
};

/*===--------------------------------------------------------------------===
 * Client
 *===--------------------------------------------------------------------===*/

static void client_dealloc(ClientObject *self)
{
	/* Tensors and programs hold a reference to their client: none is
	 * alive. A failure of queued work has no one to go to any more. */
	if (self->c)
		wafer_client_close(self->c);
	Py_XDECREF(self->selector);
	Py_XDECREF(self->runtime);
	PyObject_Free(self);
}

static PyObject *client_repr(ClientObject *self)
{
	return PyUnicode_FromFormat("<wafer.Client %U (%s)>", self->selector,
				    self->desc.name ? self->desc.name : "");
}

/* A C-contiguous numpy array of |obj| (with |dtype| when not NULL). */
static PyObject *as_contiguous(PyObject *obj, PyObject *dtype)
{
	PyObject *np = wp_numpy();

	if (!np)
		return NULL;
	/* asarray(order="C"), not ascontiguousarray: that one turns a
	 * rank-0 array into rank 1. */
	return PyObject_CallMethod(np, "asarray", "OOs", obj,
				   dtype ? dtype : Py_None, "C");
}

/* Uploads a C-contiguous buffer as a new tensor. */
static PyObject *tensor_from_buffer(ClientObject *self, Py_buffer *view,
				    wafer_dtype dtype)
{
	uint64_t shape[WAFER_MAX_RANK];
	wafer_tensor t;
	wafer_status st;

	if (view->ndim > WAFER_MAX_RANK) {
		PyErr_Format(PyExc_ValueError,
			     "asarray: rank %d is more than wafer's %d",
			     view->ndim, WAFER_MAX_RANK);
		return NULL;
	}
	for (int d = 0; d < view->ndim; d++) {
		if (view->shape[d] < 1) {
			PyErr_SetString(PyExc_ValueError,
					"asarray: wafer has no empty tensors "
					"(a dimension of size 0)");
			return NULL;
		}
		shape[d] = (uint64_t)view->shape[d];
	}
	if (view->len >= WP_NOGIL_ELEMENTS) {
		Py_BEGIN_ALLOW_THREADS
		st = wafer_tensor_create(self->c, dtype, (uint32_t)view->ndim,
					 shape, view->buf, &t);
		Py_END_ALLOW_THREADS
	} else {
		st = wafer_tensor_create(self->c, dtype, (uint32_t)view->ndim,
					 shape, view->buf, &t);
	}
	if (st != WAFER_OK)
		return wp_raise(st, "asarray");
	return wp_tensor_new(self, &t);
}

static PyObject *asarray_impl(ClientObject *self, PyObject *obj,
			      wafer_dtype want)
{
	PyObject *arr = NULL, *np_dtype = NULL, *r = NULL;
	wafer_dtype have;
	Py_buffer view;

	if (WpTensor_Check(obj)) {
		TensorObject *t = (TensorObject *)obj;

		if (t->client == self) {
			if (want == WAFER_DTYPE_NONE || want == t->t.dtype) {
				Py_INCREF(obj);
				return obj;
			}
			return PyObject_CallMethod(obj, "astype", "s",
						   wp_dtype_name(want));
		}
		/* Another device: through the host. */
		arr = PyObject_CallMethod(obj, "numpy", NULL);
		if (!arr)
			return NULL;
		obj = arr;
	}
	/* bfloat16 has no numpy type: upload float32, cast on the device. */
	if (want == WAFER_DTYPE_BF16) {
		PyObject *f = asarray_impl(self, obj, WAFER_DTYPE_F32);

		Py_XDECREF(arr);
		if (!f)
			return NULL;
		r = PyObject_CallMethod(f, "astype", "s", "bfloat16");
		Py_DECREF(f);
		return r;
	}
	if (want != WAFER_DTYPE_NONE) {
		np_dtype = wp_dtype_object(want);
	} else if (PyObject_GetBuffer(obj, &view,
				      PyBUF_C_CONTIGUOUS | PyBUF_FORMAT) == 0) {
		have = wp_dtype_from_format(view.format, view.itemsize);
		if (have != WAFER_DTYPE_NONE) {
			r = tensor_from_buffer(self, &view, have);
			PyBuffer_Release(&view);
			Py_XDECREF(arr);
			return r;
		}
		PyBuffer_Release(&view);
	} else {
		PyErr_Clear();
	}
	{
		PyObject *c = as_contiguous(obj, np_dtype);

		Py_XDECREF(arr);
		if (!c)
			return NULL;
		arr = c;
	}
	if (PyObject_GetBuffer(arr, &view, PyBUF_C_CONTIGUOUS | PyBUF_FORMAT)) {
		Py_DECREF(arr);
		return NULL;
	}
	have = wp_dtype_from_format(view.format, view.itemsize);
	if (have == WAFER_DTYPE_NONE) {
		PyErr_Format(PyExc_TypeError,
			     "asarray: wafer has no element type for format "
			     "'%s' (%zd bytes)",
			     view.format ? view.format : "B", view.itemsize);
	} else {
		r = tensor_from_buffer(self, &view, have);
	}
	PyBuffer_Release(&view);
	Py_DECREF(arr);
	return r;
}

static PyObject *client_asarray(ClientObject *self, PyObject *args,
				PyObject *kwds)
{
	static char *kwlist[] = {"obj", "dtype", NULL};
	PyObject *obj, *dtype_obj = Py_None;
	wafer_dtype want = WAFER_DTYPE_NONE;

	if (!PyArg_ParseTupleAndKeywords(args, kwds, "O|O:asarray", kwlist,
					 &obj, &dtype_obj))
		return NULL;
	if (dtype_obj != Py_None) {
		want = wp_dtype_from(dtype_obj);
		if (want == WAFER_DTYPE_NONE)
			return NULL;
	}
	return asarray_impl(self, obj, want);
}

static PyObject *client_full_impl(ClientObject *self, PyObject *shape_obj,
				  double value, PyObject *dtype_obj,
				  int fill)
{
	uint64_t shape[WAFER_MAX_RANK];
	uint32_t rank;
	wafer_dtype dtype = WAFER_DTYPE_F32;
	wafer_tensor t;
	wafer_status st;

	if (dtype_obj && dtype_obj != Py_None) {
		dtype = wp_dtype_from(dtype_obj);
		if (dtype == WAFER_DTYPE_NONE)
			return NULL;
	}
	if (wp_parse_shape(shape_obj, shape, &rank, 0))
		return NULL;
	if (fill)
		st = wafer_op_fill(self->c, dtype, rank, shape, value, &t);
	else
		st = wafer_tensor_empty(self->c, dtype, rank, shape, &t);
	if (st != WAFER_OK)
		return wp_raise(st, fill ? "full" : "empty");
	return wp_tensor_new(self, &t);
}

static PyObject *client_empty(ClientObject *self, PyObject *args,
			      PyObject *kwds)
{
	static char *kwlist[] = {"shape", "dtype", NULL};
	PyObject *shape, *dtype = NULL;

	if (!PyArg_ParseTupleAndKeywords(args, kwds, "O|O:empty", kwlist,
					 &shape, &dtype))
		return NULL;
	return client_full_impl(self, shape, 0, dtype, 0);
}

static PyObject *client_full(ClientObject *self, PyObject *args,
			     PyObject *kwds)
{
	static char *kwlist[] = {"shape", "value", "dtype", NULL};
	PyObject *shape, *dtype = NULL;
	double value;

	if (!PyArg_ParseTupleAndKeywords(args, kwds, "Od|O:full", kwlist,
					 &shape, &value, &dtype))
		return NULL;
	return client_full_impl(self, shape, value, dtype, 1);
}

static PyObject *client_zeros(ClientObject *self, PyObject *args,
			      PyObject *kwds)
{
	static char *kwlist[] = {"shape", "dtype", NULL};
	PyObject *shape, *dtype = NULL;

	if (!PyArg_ParseTupleAndKeywords(args, kwds, "O|O:zeros", kwlist,
					 &shape, &dtype))
		return NULL;
	return client_full_impl(self, shape, 0, dtype, 1);
}

static PyObject *client_ones(ClientObject *self, PyObject *args,
			     PyObject *kwds)
{
	static char *kwlist[] = {"shape", "dtype", NULL};
	PyObject *shape, *dtype = NULL;

	if (!PyArg_ParseTupleAndKeywords(args, kwds, "O|O:ones", kwlist,
					 &shape, &dtype))
		return NULL;
	return client_full_impl(self, shape, 1, dtype, 1);
}

PyObject *wp_memory_usage_dict(const wafer_memory_usage *u)
{
#define F(x) #x, (unsigned long long)u->x
	return Py_BuildValue(
		"{s:K,s:K,s:K,s:K,s:K,s:K,s:K,s:K,s:K,s:K,s:K,s:K}",
		F(bytes_in_use), F(bytes_reserved), F(peak_in_use),
		F(peak_reserved), F(storage_allocs), F(storage_frees),
		F(storage_maps), F(storage_unmaps), F(reuse_hits),
		F(handles_live), F(storage_failures), F(reserve_retries));
#undef F
}

static PyObject *client_memory_usage(ClientObject *self, PyObject *unused)
{
	wafer_memory_usage u = {sizeof u};
	wafer_status st = wafer_memory_usage_get(self->c, &u);

	(void)unused;
	if (st != WAFER_OK)
		return wp_raise(st, "memory_usage()");
	return wp_memory_usage_dict(&u);
}

static PyObject *client_memory_trim(ClientObject *self, PyObject *unused)
{
	wafer_status st;

	(void)unused;
	Py_BEGIN_ALLOW_THREADS
	st = wafer_memory_trim(self->c);
	Py_END_ALLOW_THREADS
	if (st != WAFER_OK)
		return wp_raise(st, "memory_trim()");
	Py_RETURN_NONE;
}

static PyObject *client_sync(ClientObject *self, PyObject *unused)
{
	wafer_status st;

	(void)unused;
	Py_BEGIN_ALLOW_THREADS
	st = wafer_sync(self->c);
	Py_END_ALLOW_THREADS
	/* Producers' deleters that the work just finished released. */
	wp_deferred_run();
	if (st != WAFER_OK)
		return wp_raise(st, "sync()");
	Py_RETURN_NONE;
}

static PyObject *client_has_kernel(ClientObject *self, PyObject *args,
				   PyObject *kwds)
{
	static char *kwlist[] = {"kernel", "dtype", "variant", NULL};
	const char *kernel, *variant = NULL;
	PyObject *dtype_obj = NULL;
	wafer_dtype dtype = WAFER_DTYPE_F32;
	const wafer_kernel_ref *ref;
	wafer_status st;

	if (!PyArg_ParseTupleAndKeywords(args, kwds, "s|Oz:has_kernel", kwlist,
					 &kernel, &dtype_obj, &variant))
		return NULL;
	if (dtype_obj && dtype_obj != Py_None) {
		dtype = wp_dtype_from(dtype_obj);
		if (dtype == WAFER_DTYPE_NONE)
			return NULL;
	}
	st = wafer_kernel_find(self->c, kernel, variant, dtype, &ref);
	if (st == WAFER_OK)
		Py_RETURN_TRUE;
	if (st == WAFER_ERROR_NOT_SUPPORTED || st == WAFER_ERROR_NOT_FOUND)
		Py_RETURN_FALSE;
	return wp_raise(st, "has_kernel");
}

static PyObject *client_get_device(ClientObject *self, void *closure)
{
	(void)closure;
	return device_new(&self->desc);
}

static PyObject *client_get_selector(ClientObject *self, void *closure)
{
	(void)closure;
	Py_INCREF(self->selector);
	return self->selector;
}

static PyObject *client_get_runtime(ClientObject *self, void *closure)
{
	(void)closure;
	Py_INCREF(self->runtime);
	return (PyObject *)self->runtime;
}

static PyMethodDef client_methods[] = {
	{"asarray", (PyCFunction)(void (*)(void))client_asarray,
	 METH_VARARGS | METH_KEYWORDS,
	 "asarray(obj, dtype=None) -> Tensor\n\nUploads a numpy array (or "
	 "anything numpy.asarray takes) to the device: one copy. A Tensor of "
	 "this client comes back as it is (cast when dtype differs); one of "
	 "another client goes through the host."},
	{"empty", (PyCFunction)(void (*)(void))client_empty,
	 METH_VARARGS | METH_KEYWORDS,
	 "empty(shape, dtype=\"float32\") -> Tensor\n\nA tensor of undefined "
	 "contents (wafer_tensor_empty)."},
	{"full", (PyCFunction)(void (*)(void))client_full,
	 METH_VARARGS | METH_KEYWORDS,
	 "full(shape, value, dtype=\"float32\") -> Tensor\n\nEvery element "
	 "value (wafer_op_fill)."},
	{"zeros", (PyCFunction)(void (*)(void))client_zeros,
	 METH_VARARGS | METH_KEYWORDS, "zeros(shape, dtype=\"float32\") -> "
	 "Tensor"},
	{"ones", (PyCFunction)(void (*)(void))client_ones,
	 METH_VARARGS | METH_KEYWORDS, "ones(shape, dtype=\"float32\") -> "
	 "Tensor"},
	{"memory_usage", (PyCFunction)client_memory_usage, METH_NOARGS,
	 "memory_usage() -> dict\n\nThe memory manager's statistics "
	 "(wafer_memory_usage_get): bytes_in_use, bytes_reserved, peaks, "
	 "storage calls, reuse_hits, handles_live, ..."},
	{"memory_trim", (PyCFunction)client_memory_trim, METH_NOARGS,
	 "memory_trim()\n\nReturns cached, unused memory to the device."},
	{"sync", (PyCFunction)client_sync, METH_NOARGS,
	 "sync()\n\nWaits for the work issued on the client; raises the "
	 "first error it raised."},
	{"has_kernel", (PyCFunction)(void (*)(void))client_has_kernel,
	 METH_VARARGS | METH_KEYWORDS,
	 "has_kernel(kernel, dtype=\"float32\", variant=None) -> bool\n\n"
	 "Whether the device's plugin has catalogue kernel |kernel| (\"add\","
	 " \"matmul\", ...) for |dtype|: what operations on that dtype "
	 "need."},
	{"from_dlpack", (PyCFunction)wp_client_from_dlpack, METH_O,
	 "from_dlpack(x) -> Tensor\n\nx's memory (anything with __dlpack__: "
	 "numpy, PyTorch, CuPy, ...) as a tensor of this client, without "
	 "copying; x's producer is told the client's stream, and its "
	 "memory is released when the last tensor naming it goes."},
	{"program", (PyCFunction)(void (*)(void))wp_client_program,
	 METH_VARARGS | METH_KEYWORDS,
	 "program(sources, options=None) -> Program\n\nBuilds the caller's "
	 "own kernels from {format: source} (formats \"cuda\", \"ptx\", "
	 "\"cubin\", \"opencl\", \"spirv\", \"host-c\", \"host-so\"), taking "
	 "the first, in the dict's order, that the device accepts "
	 "(wafer_program_create). options: compiler options."},
	{"begin_capture", (PyCFunction)wp_client_begin_capture, METH_NOARGS,
	 "begin_capture()\n\nFrom now on the work this thread issues on the "
	 "client (kernels, operations, writes) is recorded into a graph, "
	 "not run (wafer_queue_begin_capture); reads and syncs fail "
	 "meanwhile."},
	{"end_capture", (PyCFunction)wp_client_end_capture, METH_NOARGS,
	 "end_capture() -> Graph\n\nEnds the capture and returns the graph "
	 "of what it recorded (wafer_queue_end_capture)."},
	{NULL, NULL, 0, NULL},
};

static PyGetSetDef client_getset[] = {
	{"device", (getter)client_get_device, NULL, "The client's Device.",
	 NULL},
	{"selector", (getter)client_get_selector, NULL,
	 "\"backend:index\" of the client's device.", NULL},
	{"runtime", (getter)client_get_runtime, NULL, "The Runtime.", NULL},
	{NULL, NULL, NULL, NULL, NULL},
};

PyTypeObject WpClient_Type = {
	PyVarObject_HEAD_INIT(NULL, 0)
	.tp_name = "wafer.Client",
	.tp_basicsize = sizeof(ClientObject),
	.tp_dealloc = (destructor)client_dealloc,
	.tp_repr = (reprfunc)client_repr,
	.tp_flags = Py_TPFLAGS_DEFAULT,
	.tp_doc = "A device opened by Runtime.client(): makes tensors "
		  "(asarray, empty, full), programs, and reports memory.",
	.tp_methods = client_methods,
	.tp_getset = client_getset,
};
