/* wafer — SPDX-License-Identifier: MIT
 *
 * dlpack.c: DLPack exchange (the Python array API's protocol), on
 * libwafer's wafer_tensor_to_dlpack / wafer_tensor_from_dlpack
 * (wafer/dlpack.h): Tensor.__dlpack__ and __dlpack_device__ give a
 * tensor's memory to numpy, PyTorch, CuPy, JAX ... and Client.from_dlpack
 * takes theirs, both without copying.
 *
 * Built when setup.py finds that libwafer has DLPack (WP_HAVE_DLPACK);
 * otherwise the same names raise wafer.NotSupportedError saying so.
 *
 * Two wrappers around the deleters, for Python's sake:
 *  - export: the consumer may keep the memory past the last Tensor naming
 *    it, but the memory goes when the client closes; the record given out
 *    holds a reference to the Client, dropped after wafer's deleter ran
 *    (as below when the consumer lets go on a thread without the GIL).
 *  - import: wafer calls the producer's deleter on whichever thread drops
 *    the last reference (the runner thread of an mpsc channel, without
 *    the GIL), and a Python producer's deleter needs the GIL (numpy's
 *    drops a Python reference). Where the GIL is held it runs at once,
 *    elsewhere it is queued for the interpreter (Py_AddPendingCall)
 *    rather than waited for: the thread holding the GIL may itself be
 *    waiting for that runner (a read), and waiting both ways would
 *    deadlock. */
#include "wafer_py.h"

#ifdef WP_HAVE_DLPACK

#include <pthread.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include <wafer/dlpack.h>
#include <wafer/interop.h>

/*===--------------------------------------------------------------------===
 * Work for the GIL
 *===--------------------------------------------------------------------===*/

/* Deleters waiting for the GIL: an unbounded list (Py_AddPendingCall's
 * own queue holds 32 and then refuses), drained under the GIL by one
 * pending call, and by Client.sync() and from_dlpack. */
struct deferred {
	struct deferred *next;
	void (*run)(struct deferred *self);
};

static pthread_mutex_t deferred_lock = PTHREAD_MUTEX_INITIALIZER;
static struct deferred *deferred_head;
static int deferred_scheduled;

void wp_deferred_run(void)
{
	struct deferred *list, *next, *rev = NULL;

	pthread_mutex_lock(&deferred_lock);
	list = deferred_head;
	deferred_head = NULL;
	deferred_scheduled = 0;
	pthread_mutex_unlock(&deferred_lock);
	for (; list; list = next) { /* oldest first */
		next = list->next;
		list->next = rev;
		rev = list;
	}
	for (; rev; rev = next) {
		next = rev->next;
		rev->run(rev);
	}
}

static int deferred_pending_call(void *unused)
{
	(void)unused;
	wp_deferred_run();
	return 0;
}

/* Runs |d| now when this thread holds the GIL, else queues it; never
 * waits for the GIL. */
static void defer(struct deferred *d)
{
	int schedule;

	if (PyGILState_Check()) {
		d->run(d);
		return;
	}
	pthread_mutex_lock(&deferred_lock);
	d->next = deferred_head;
	deferred_head = d;
	schedule = !deferred_scheduled;
	deferred_scheduled = 1;
	pthread_mutex_unlock(&deferred_lock);
	/* A refusal (the interpreter's queue is full) leaves the list to
	 * the next defer, sync() or from_dlpack. */
	if (schedule && Py_AddPendingCall(deferred_pending_call, NULL) != 0) {
		pthread_mutex_lock(&deferred_lock);
		deferred_scheduled = 0;
		pthread_mutex_unlock(&deferred_lock);
	}
}

/*===--------------------------------------------------------------------===
 * Export
 *===--------------------------------------------------------------------===*/

/* The record a consumer gets: wafer's own inside, the client kept. */
struct export_legacy {
	DLManagedTensor outer; /* first: the consumer calls its deleter */
	DLManagedTensor *inner;
	PyObject *client;
	struct deferred d;
};

static void drop_legacy_export(struct deferred *d)
{
	struct export_legacy *e = (struct export_legacy *)
		((char *)d - offsetof(struct export_legacy, d));

	Py_XDECREF(e->client);
	free(e);
}

/* wafer's deleter needs no GIL; dropping the client does (under the GIL
 * now, or queued: see defer). */
static void export_legacy_deleter(DLManagedTensor *self)
{
	struct export_legacy *e = (struct export_legacy *)self;

	if (e->inner && e->inner->deleter)
		e->inner->deleter(e->inner);
	e->d.run = drop_legacy_export;
	defer(&e->d);
}

static void capsule_legacy_destructor(PyObject *cap)
{
	/* Only a capsule nobody consumed (still named "dltensor") owns its
	 * tensor. */
	if (PyCapsule_IsValid(cap, "dltensor")) {
		DLManagedTensor *m = PyCapsule_GetPointer(cap, "dltensor");

		if (m && m->deleter)
			m->deleter(m);
	} else {
		PyErr_Clear();
	}
}

#if defined(DLPACK_MAJOR_VERSION)
struct export_versioned {
	DLManagedTensorVersioned outer;
	DLManagedTensorVersioned *inner;
	PyObject *client;
	struct deferred d;
};

static void drop_versioned_export(struct deferred *d)
{
	struct export_versioned *e = (struct export_versioned *)
		((char *)d - offsetof(struct export_versioned, d));

	Py_XDECREF(e->client);
	free(e);
}

static void export_versioned_deleter(DLManagedTensorVersioned *self)
{
	struct export_versioned *e = (struct export_versioned *)self;

	if (e->inner && e->inner->deleter)
		e->inner->deleter(e->inner);
	e->d.run = drop_versioned_export;
	defer(&e->d);
}

static void capsule_versioned_destructor(PyObject *cap)
{
	if (PyCapsule_IsValid(cap, "dltensor_versioned")) {
		DLManagedTensorVersioned *m =
			PyCapsule_GetPointer(cap, "dltensor_versioned");

		if (m && m->deleter)
			m->deleter(m);
	} else {
		PyErr_Clear();
	}
}
#endif

/* (device_type, device_id) of |client|'s memory, from a handle's native
 * description when there is one. */
static int device_of(TensorObject *t, int *type, int *id)
{
	const char *b = t->client->desc.backend ? t->client->desc.backend : "";
	wafer_native_buffer nb = {sizeof nb};

	*id = 0;
	if (!strcmp(b, "cpu")) {
		*type = kDLCPU;
		return 0;
	}
	if (!strcmp(b, "cuda"))
		*type = kDLCUDA;
	else if (!strcmp(b, "levelzero"))
		*type = WAFER_DLPACK_ONEAPI;
	else if (!strcmp(b, "opencl"))
		*type = kDLOpenCL; /* a cl_mem: __dlpack__ refuses it */
	else
		*type = kDLExtDev;
	*id = (int)t->client->desc.index;
	if (t->state != TENSOR_GONE &&
	    wafer_handle_native(t->client->c, t->t.handle, &nb) == WAFER_OK)
		*id = nb.device_ordinal;
	return 0;
}

PyObject *wp_tensor_dlpack_device(PyObject *self, PyObject *unused)
{
	int type, id;

	(void)unused;
	device_of((TensorObject *)self, &type, &id);
	return Py_BuildValue("(ii)", type, id);
}

PyObject *wp_tensor_dlpack(PyObject *self, PyObject *args, PyObject *kwds)
{
	static char *kwlist[] = {"stream", "max_version", "dl_device", "copy",
				 NULL};
	PyObject *stream = Py_None, *max_version = Py_None,
		 *dl_device = Py_None, *copy = Py_None, *cap;
	void *m = NULL; /* DLManagedTensor or DLManagedTensorVersioned */
	TensorObject *t = (TensorObject *)self;
	wafer_tensor src = t->t, tmp;
	int have_tmp = 0, versioned = 0, type, id;
	wafer_status st;

	if (!PyArg_ParseTupleAndKeywords(args, kwds, "|$OOOO:__dlpack__",
					 kwlist, &stream, &max_version,
					 &dl_device, &copy))
		return NULL;
	if (wp_tensor_semantics(t) < 0)
		return NULL;
	device_of(t, &type, &id);
	if (dl_device != Py_None) {
		int want_type, want_id;

		if (!PyArg_ParseTuple(dl_device, "ii", &want_type, &want_id))
			return NULL;
		if (want_type != type || want_id != id) {
			PyErr_Format(PyExc_BufferError,
				     "__dlpack__: the tensor is on (%d, %d), "
				     "not (%d, %d); wafer does not copy across "
				     "devices here", type, id, want_type,
				     want_id);
			return NULL;
		}
	}
	/* stream: wafer_tensor_to_dlpack finishes the client's work before
	 * it returns, so the memory is ready on any stream of the
	 * consumer's; nothing to order. */
	(void)stream;
	if (max_version != Py_None) {
		PyObject *first = PySequence_GetItem(max_version, 0);
		long major = first ? PyLong_AsLong(first) : -1;

		Py_XDECREF(first);
		PyErr_Clear();
		versioned = major >= 1;
	}
#if !defined(DLPACK_MAJOR_VERSION)
	versioned = 0;
#endif
	if (copy == Py_True) {
		Py_BEGIN_ALLOW_THREADS
		st = wafer_op_copy(t->client->c, &t->t, WAFER_ALWAYS_COPY,
				   &tmp);
		Py_END_ALLOW_THREADS
		if (st != WAFER_OK)
			return wp_raise(st, "__dlpack__(copy=True)");
		src = tmp;
		have_tmp = 1;
	}
	/* One call for both kinds; the record holds its own reference, so
	 * the copy goes either way. */
	Py_BEGIN_ALLOW_THREADS
#if defined(DLPACK_MAJOR_VERSION)
	if (versioned)
		st = wafer_tensor_to_dlpack_versioned(
			t->client->c, &src, (DLManagedTensorVersioned **)&m);
	else
#endif
		st = wafer_tensor_to_dlpack(t->client->c, &src,
					    (DLManagedTensor **)&m);
	Py_END_ALLOW_THREADS
	if (have_tmp)
		wafer_tensor_release(t->client->c, &src);
	if (st != WAFER_OK)
		return wp_raise(st, "__dlpack__");
#if defined(DLPACK_MAJOR_VERSION)
	if (versioned) {
		DLManagedTensorVersioned *vm = m;
		struct export_versioned *e = calloc(1, sizeof *e);

		if (!e) {
			if (vm->deleter)
				vm->deleter(vm);
			return PyErr_NoMemory();
		}
		e->outer = *vm;
		e->inner = vm;
		e->outer.deleter = export_versioned_deleter;
		Py_INCREF(t->client);
		e->client = (PyObject *)t->client;
		cap = PyCapsule_New(&e->outer, "dltensor_versioned",
				    capsule_versioned_destructor);
		if (!cap)
			export_versioned_deleter(&e->outer);
		return cap;
	}
#endif
	{
		DLManagedTensor *lm = m;
		struct export_legacy *e = calloc(1, sizeof *e);

		(void)versioned;
		if (!e) {
			if (lm->deleter)
				lm->deleter(lm);
			return PyErr_NoMemory();
		}
		e->outer = *lm;
		e->inner = lm;
		e->outer.deleter = export_legacy_deleter;
		Py_INCREF(t->client);
		e->client = (PyObject *)t->client;
		cap = PyCapsule_New(&e->outer, "dltensor",
				    capsule_legacy_destructor);
		if (!cap)
			export_legacy_deleter(&e->outer);
		return cap;
	}
}

/*===--------------------------------------------------------------------===
 * Import
 *===--------------------------------------------------------------------===*/

struct import_legacy {
	DLManagedTensor outer; /* first: wafer calls outer.deleter(&outer) */
	DLManagedTensor *inner;
	struct deferred d;
};

static void run_legacy_deleter(struct deferred *d)
{
	struct import_legacy *w = (struct import_legacy *)
		((char *)d - offsetof(struct import_legacy, d));

	if (w->inner->deleter)
		w->inner->deleter(w->inner);
	free(w);
}

static void import_legacy_deleter(DLManagedTensor *self)
{
	struct import_legacy *w = (struct import_legacy *)self;

	w->d.run = run_legacy_deleter;
	defer(&w->d);
}

#if defined(DLPACK_MAJOR_VERSION)
struct import_versioned {
	DLManagedTensorVersioned outer;
	DLManagedTensorVersioned *inner;
	struct deferred d;
};

static void run_versioned_deleter(struct deferred *d)
{
	struct import_versioned *w = (struct import_versioned *)
		((char *)d - offsetof(struct import_versioned, d));

	if (w->inner->deleter)
		w->inner->deleter(w->inner);
	free(w);
}

static void import_versioned_deleter(DLManagedTensorVersioned *self)
{
	struct import_versioned *w = (struct import_versioned *)self;

	w->d.run = run_versioned_deleter;
	defer(&w->d);
}
#endif

/* The stream argument for the producer: the client's own queue, so that
 * the producer orders its work before wafer's. */
static PyObject *consumer_stream(ClientObject *client)
{
	wafer_native_queue q = {sizeof q};

	if (strcmp(client->desc.backend, "cuda") ||
	    wafer_client_native_queue(client->c, &q) != WAFER_OK)
		Py_RETURN_NONE;
	/* DLPack's numbering: 1 is CUDA's legacy default stream (a NULL
	 * CUstream), 0 is not allowed. */
	return PyLong_FromVoidPtr(q.queue ? q.queue : (void *)1);
}

/* Asks |obj| for a capsule, versioned first where wafer has it. */
static PyObject *ask_capsule(ClientObject *client, PyObject *obj)
{
	PyObject *meth, *kw, *stream, *cap;

	if (PyCapsule_CheckExact(obj)) {
		Py_INCREF(obj);
		return obj;
	}
	meth = PyObject_GetAttrString(obj, "__dlpack__");
	if (!meth) {
		PyErr_Format(PyExc_TypeError, "from_dlpack: %.100s has no "
			     "__dlpack__", Py_TYPE(obj)->tp_name);
		return NULL;
	}
	stream = consumer_stream(client);
	if (!stream) {
		Py_DECREF(meth);
		return NULL;
	}
	kw = PyDict_New();
	if (!kw || PyDict_SetItemString(kw, "stream", stream)) {
		Py_XDECREF(kw);
		Py_DECREF(stream);
		Py_DECREF(meth);
		return NULL;
	}
	Py_DECREF(stream);
#if defined(DLPACK_MAJOR_VERSION)
	{
		PyObject *v = Py_BuildValue("(ii)", 1, 0);

		if (v && PyDict_SetItemString(kw, "max_version", v) == 0) {
			PyObject *empty = PyTuple_New(0);

			cap = empty ? PyObject_Call(meth, empty, kw) : NULL;
			Py_XDECREF(empty);
			Py_DECREF(v);
			if (cap || !PyErr_ExceptionMatches(PyExc_TypeError)) {
				Py_DECREF(kw);
				Py_DECREF(meth);
				return cap;
			}
			/* An older producer: no max_version. */
			PyErr_Clear();
			PyDict_DelItemString(kw, "max_version");
		} else {
			Py_XDECREF(v);
			PyErr_Clear();
		}
	}
#endif
	{
		PyObject *empty = PyTuple_New(0);

		cap = empty ? PyObject_Call(meth, empty, kw) : NULL;
		Py_XDECREF(empty);
	}
	Py_DECREF(kw);
	Py_DECREF(meth);
	return cap;
}

PyObject *wp_client_from_dlpack(PyObject *self, PyObject *obj)
{
	ClientObject *client = (ClientObject *)self;
	PyObject *cap, *r = NULL;
	wafer_tensor t;
	wafer_status st;

	wp_deferred_run();
	cap = ask_capsule(client, obj);
	if (!cap)
		return NULL;
	if (PyCapsule_IsValid(cap, "dltensor")) {
		DLManagedTensor *m = PyCapsule_GetPointer(cap, "dltensor");
		struct import_legacy *w = malloc(sizeof *w);

		if (!w) {
			Py_DECREF(cap);
			return PyErr_NoMemory();
		}
		w->outer = *m;
		w->inner = m;
		w->outer.manager_ctx = m->manager_ctx;
		w->outer.deleter = import_legacy_deleter;
		st = wafer_tensor_from_dlpack(client->c, &w->outer, &t);
		if (st != WAFER_OK) {
			free(w); /* the capsule still owns m */
			Py_DECREF(cap);
			return wp_raise(st, "from_dlpack");
		}
		/* Consumed: wafer calls the deleter now, not the capsule. */
		PyCapsule_SetName(cap, "used_dltensor");
		r = wp_tensor_new(client, &t);
#if defined(DLPACK_MAJOR_VERSION)
	} else if (PyCapsule_IsValid(cap, "dltensor_versioned")) {
		DLManagedTensorVersioned *m =
			PyCapsule_GetPointer(cap, "dltensor_versioned");
		struct import_versioned *w = malloc(sizeof *w);

		if (!w) {
			Py_DECREF(cap);
			return PyErr_NoMemory();
		}
		w->outer = *m;
		w->inner = m;
		w->outer.deleter = import_versioned_deleter;
		st = wafer_tensor_from_dlpack_versioned(client->c, &w->outer,
							&t);
		if (st != WAFER_OK) {
			free(w);
			Py_DECREF(cap);
			return wp_raise(st, "from_dlpack");
		}
		PyCapsule_SetName(cap, "used_dltensor_versioned");
		r = wp_tensor_new(client, &t);
#endif
	} else {
		PyErr_Clear();
		PyErr_SetString(PyExc_TypeError, "from_dlpack: not a DLPack "
				"capsule (\"dltensor\") or one already used");
	}
	Py_DECREF(cap);
	return r;
}

#else /* !WP_HAVE_DLPACK */

static PyObject *no_dlpack(void)
{
	return wp_raise_msg(WAFER_ERROR_NOT_SUPPORTED,
			    "DLPack: libwafer was built without it "
			    "(dlpack/dlpack.h, Debian: libdlpack-dev)");
}

PyObject *wp_tensor_dlpack_device(PyObject *self, PyObject *unused)
{
	(void)self;
	(void)unused;
	return no_dlpack();
}

PyObject *wp_tensor_dlpack(PyObject *self, PyObject *args, PyObject *kwds)
{
	(void)self;
	(void)args;
	(void)kwds;
	return no_dlpack();
}

PyObject *wp_client_from_dlpack(PyObject *self, PyObject *obj)
{
	(void)self;
	(void)obj;
	return no_dlpack();
}

void wp_deferred_run(void)
{
}

#endif /* WP_HAVE_DLPACK */
