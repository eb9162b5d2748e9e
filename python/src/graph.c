/* wafer — SPDX-License-Identifier: MIT
 *
 * graph.c: wafer.Graph (wafer_graph(3)): Client.begin_capture() starts
 * recording the work the calling thread issues on the client (its
 * current queue), Client.end_capture() ends it and returns the graph;
 * Graph.launch() replays it there, Graph.rebind() moves its steps from
 * one tensor's memory to another's, Graph.info() says what it holds. */
#include "wafer_py.h"

#include <wafer/graph.h>

typedef struct {
	PyObject_HEAD
	ClientObject *client;
	wafer_graph *g;
} GraphObject;

PyObject *wp_client_begin_capture(ClientObject *client, PyObject *unused)
{
	wafer_status st;

	(void)unused;
	Py_BEGIN_ALLOW_THREADS
	st = wafer_queue_begin_capture(wafer_queue_current(client->c));
	Py_END_ALLOW_THREADS
	if (st != WAFER_OK)
		return wp_raise(st, "begin_capture()");
	Py_RETURN_NONE;
}

PyObject *wp_client_end_capture(ClientObject *client, PyObject *unused)
{
	GraphObject *self;
	wafer_graph *g = NULL;
	wafer_status st;

	(void)unused;
	Py_BEGIN_ALLOW_THREADS
	st = wafer_queue_end_capture(wafer_queue_current(client->c), &g);
	Py_END_ALLOW_THREADS
	if (st != WAFER_OK)
		return wp_raise(st, "end_capture()");
	self = PyObject_New(GraphObject, &WpGraph_Type);
	if (!self) {
		wafer_graph_release(g);
		return NULL;
	}
	Py_INCREF(client);
	self->client = client;
	self->g = g;
	return (PyObject *)self;
}

static void graph_dealloc(GraphObject *self)
{
	wafer_graph_release(self->g);
	Py_XDECREF(self->client);
	PyObject_Free(self);
}

static PyObject *graph_launch(GraphObject *self, PyObject *unused)
{
	wafer_status st;

	(void)unused;
	Py_BEGIN_ALLOW_THREADS
	st = wafer_graph_launch(self->g, wafer_queue_current(self->client->c));
	Py_END_ALLOW_THREADS
	if (st != WAFER_OK)
		return wp_raise(st, "Graph.launch()");
	Py_RETURN_NONE;
}

/* A handle given to rebind: a tensor of the graph's client (its
 * handle) or a handle's bits (Tensor.handle) of one gone since. */
static int handle_of(GraphObject *self, PyObject *o, wafer_handle *h,
		     const char *what)
{
	if (WpTensor_Check(o)) {
		TensorObject *t = (TensorObject *)o;

		if (t->client != self->client || t->state == TENSOR_GONE) {
			PyErr_Format(PyExc_TypeError, "Graph.rebind: %s is "
				     "not a live tensor of the graph's "
				     "client", what);
			return -1;
		}
		*h = t->t.handle;
		return 0;
	}
	h->bits = PyLong_AsUnsignedLongLong(o);
	if (h->bits == (unsigned long long)-1 && PyErr_Occurred()) {
		PyErr_Format(PyExc_TypeError, "Graph.rebind: %s is a Tensor "
			     "or a handle's bits (Tensor.handle)", what);
		return -1;
	}
	return 0;
}

static PyObject *graph_rebind(GraphObject *self, PyObject *args)
{
	PyObject *from_o, *to_o;
	wafer_handle from, to;
	wafer_status st;

	if (!PyArg_ParseTuple(args, "OO:rebind", &from_o, &to_o) ||
	    handle_of(self, from_o, &from, "from") ||
	    handle_of(self, to_o, &to, "to"))
		return NULL;
	Py_BEGIN_ALLOW_THREADS
	st = wafer_graph_rebind(self->g, from, to);
	Py_END_ALLOW_THREADS
	if (st != WAFER_OK)
		return wp_raise(st, "Graph.rebind()");
	Py_RETURN_NONE;
}

static PyObject *graph_info(GraphObject *self, PyObject *unused)
{
	wafer_graph_info info = {sizeof info};
	wafer_status st;

	(void)unused;
	Py_BEGIN_ALLOW_THREADS
	st = wafer_graph_info_get(self->g, &info);
	Py_END_ALLOW_THREADS
	if (st != WAFER_OK)
		return wp_raise(st, "Graph.info()");
	return Py_BuildValue("{sIsIsIsIsK}", "steps", info.steps, "launches",
			     info.launches, "native_launches",
			     info.native_launches, "handles", info.handles,
			     "held_bytes",
			     (unsigned long long)info.held_bytes);
}

static PyMethodDef graph_methods[] = {
	{"launch", (PyCFunction)graph_launch, METH_NOARGS,
	 "launch()\n\nReplays the graph on the calling thread's queue of its "
	 "client, after the work issued before (wafer_graph_launch). "
	 "Returns at once; sync() reports a failure of the work."},
	{"rebind", (PyCFunction)graph_rebind, METH_VARARGS,
	 "rebind(old, new)\n\nFrom the next launch on, the steps that used "
	 "old's memory use new's (tensors, or handle bits from "
	 "Tensor.handle; the same number of bytes): wafer_graph_rebind."},
	{"info", (PyCFunction)graph_info, METH_NOARGS,
	 "info() -> dict\n\nsteps, launches (kernel launches), "
	 "native_launches (those the device replays as a native graph), "
	 "handles, held_bytes: wafer_graph_info_get."},
	{NULL, NULL, 0, NULL},
};

PyTypeObject WpGraph_Type = {
	PyVarObject_HEAD_INIT(NULL, 0)
	.tp_name = "wafer.Graph",
	.tp_basicsize = sizeof(GraphObject),
	.tp_dealloc = (destructor)graph_dealloc,
	.tp_flags = Py_TPFLAGS_DEFAULT,
	.tp_doc = "The work recorded between Client.begin_capture() and "
		  "Client.end_capture() (wafer_graph(3)): launch() replays "
		  "it; released with the object.",
	.tp_methods = graph_methods,
};
