/* wafer — SPDX-License-Identifier: MIT
 *
 * bench.c: wafer._wafer._c_loop, for python -m wafer.bench: the same
 * operation as a Python statement runs, timed in a C loop with no
 * Python in it, so the bench can tell the binding's own cost (Python's
 * time minus this) from the library's. */
#include "wafer_py.h"

#include <string.h>
#include <time.h>

static double now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

/* _c_loop(kind, a, b, n) -> seconds per iteration; kind "add" (a + b),
 * "exp" (exp(a)) or "add_scalar" (a + 1.0); each iteration releases its
 * result, as Python's dropping the result does. */
static PyObject *c_loop(PyObject *m, PyObject *args)
{
	const char *kind;
	TensorObject *a, *b;
	Py_ssize_t n;
	wafer_status st = WAFER_OK;
	wafer_tensor r;
	double t0, t1;
	int k;

	(void)m;
	if (!PyArg_ParseTuple(args, "sO!O!n:_c_loop", &kind, &WpTensor_Type,
			      &a, &WpTensor_Type, &b, &n))
		return NULL;
	if (!strcmp(kind, "add"))
		k = 0;
	else if (!strcmp(kind, "exp"))
		k = 1;
	else if (!strcmp(kind, "add_scalar"))
		k = 2;
	else {
		PyErr_Format(PyExc_ValueError, "_c_loop: unknown kind %s", kind);
		return NULL;
	}
	if (a->state != TENSOR_LIVE || b->state != TENSOR_LIVE ||
	    wp_same_client(a, b))
		return PyErr_Occurred() ? NULL : wp_raise_msg(WAFER_ERROR_DONATED,
					"_c_loop: a donated tensor");
	t0 = now();
	for (Py_ssize_t i = 0; i < n && st == WAFER_OK; i++) {
		if (k == 0)
			st = wafer_op_binary(a->client->c, WAFER_BINARY_ADD,
					     &a->t, WAFER_ALWAYS_COPY, &b->t,
					     WAFER_ALWAYS_COPY, &r);
		else if (k == 1)
			st = wafer_op_unary(a->client->c, WAFER_UNARY_EXP,
					    &a->t, WAFER_ALWAYS_COPY, &r);
		else
			st = wafer_op_binary_scalar(a->client->c,
						    WAFER_BINARY_ADD, &a->t,
						    WAFER_ALWAYS_COPY, 1.0, 0,
						    &r);
		if (st == WAFER_OK)
			wafer_tensor_release(a->client->c, &r);
	}
	t1 = now();
	if (st != WAFER_OK)
		return wp_raise(st, "_c_loop");
	return PyFloat_FromDouble((t1 - t0) / (double)(n > 0 ? n : 1));
}

static PyMethodDef bench_methods[] = {
	{"_c_loop", c_loop, METH_VARARGS,
	 "_c_loop(kind, a, b, n) -> float\n\nSeconds per iteration of the "
	 "C calls behind a Python operation, for wafer.bench."},
	{NULL, NULL, 0, NULL},
};

int wp_bench_init(PyObject *module)
{
	return PyModule_AddFunctions(module, bench_methods);
}
