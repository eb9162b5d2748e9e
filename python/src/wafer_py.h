/* wafer — SPDX-License-Identifier: MIT
 *
 * wafer_py.h: what the files of the CPython extension wafer._wafer share.
 * One file per idea: module.c (the module, dtypes), errors.c (the
 * exception per status), runtime.c (Runtime and Client), tensor.c (the
 * Tensor type: views, operators), ops.c (the functions of ops.h),
 * program.c (programs and their kernels), dlpack.c (DLPack), bench.c (a C loop the
 * benchmark compares Python's calls with).
 *
 * Ownership: a Client holds a reference to its Runtime, a Tensor, Program
 * or Kernel one to its Client (Kernel: to its Program), so Python's
 * reference counting closes them in the order wafer needs (handles and
 * programs before their client, clients before their runtime). Each live
 * Tensor holds exactly one wafer reference to its handle; a view made in
 * Python (t.T, t[1:], t.reshape) takes one more with wafer_retain. */
#ifndef WAFER_PY_H
#define WAFER_PY_H

#define PY_SSIZE_T_CLEAN
#include <Python.h>

#include <wafer/wafer.h>
#include <wafer/ops.h>
#include <wafer/program.h>
#include <wafer/autotune.h>

typedef struct {
	PyObject_HEAD
	wafer_runtime *rt;
} RuntimeObject;

typedef struct {
	PyObject_HEAD
	wafer_client *c;
	RuntimeObject *runtime;
	wafer_device_desc desc;
	PyObject *selector; /* "cpu:0" */
} ClientObject;

/* TensorObject.state */
enum {
	TENSOR_LIVE = 0,
	/* wafer.donate(t): the next operation taking t gives its reference
	 * up (WAFER_DONATE_INPUT). */
	TENSOR_DONATING = 1,
	/* Given up to an operation: t names nothing any more. */
	TENSOR_GONE = 2,
};

typedef struct {
	PyObject_HEAD
	ClientObject *client;
	wafer_tensor t;
	int state;
} TensorObject;

extern PyTypeObject WpRuntime_Type;
extern PyTypeObject WpClient_Type;
extern PyTypeObject WpTensor_Type;
extern PyTypeObject WpProgram_Type;
extern PyTypeObject WpKernel_Type;
extern PyTypeObject WpGraph_Type;

#define WpTensor_Check(o) (Py_TYPE(o) == &WpTensor_Type)

/* Operations on more elements than this run with the GIL released: below
 * it the release and re-acquire would cost more than the kernel. */
#define WP_NOGIL_ELEMENTS 65536

/* errors.c */
int wp_errors_init(PyObject *module);
/* Raises the exception of |status| with wafer_last_error()'s text,
 * prefixed with |what| when it is not NULL. Returns NULL. */
PyObject *wp_raise(wafer_status status, const char *what);
/* The exception of |status| with the extension's own text |msg| (for
 * what the extension finds itself, where wafer_last_error() is stale). */
PyObject *wp_raise_msg(wafer_status status, const char *msg);

/* module.c: dtypes */
/* The numpy dtype object of |dtype| (borrowed), or the str "bfloat16". */
PyObject *wp_dtype_object(wafer_dtype dtype);
/* A wafer dtype from a numpy dtype, a type, a str; WAFER_DTYPE_NONE with
 * an exception set when it has none. */
wafer_dtype wp_dtype_from(PyObject *obj);
/* From a buffer's struct format and item size; NONE (no exception) when
 * wafer has no such type. */
wafer_dtype wp_dtype_from_format(const char *format, Py_ssize_t itemsize);
const char *wp_dtype_name(wafer_dtype dtype);
/* The numpy module (borrowed), imported on first use; NULL with an
 * exception when it is missing. */
PyObject *wp_numpy(void);
/* Function |name| of wafer._host (what Tensor does through numpy),
 * borrowed; NULL with an exception when it cannot be imported. */
PyObject *wp_host(const char *name);

/* tensor.c */
/* A new Tensor owning |t|'s reference (released on failure). */
PyObject *wp_tensor_new(ClientObject *client, const wafer_tensor *t);
/* The copy semantics an input is passed with, checking it is usable;
 * -1 with an exception for a donated-away tensor. */
int wp_tensor_semantics(TensorObject *x);
/* After an operation: a tensor passed with |sem| == DONATE is gone
 * (status OK), or stays as it was (failure: nothing was queued). */
void wp_tensor_after(TensorObject *x, int sem, wafer_status status);
/* Replaces |dst|'s view with |t| (whose reference it takes over),
 * releasing the old one. */
void wp_tensor_assign(TensorObject *dst, const wafer_tensor *t);
/* |t|'s view made strided (explicit strides of a dense view). */
void wp_view_strided(wafer_tensor *t);
/* 1 when |t| is dense row-major (strides or not). */
int wp_view_dense(const wafer_tensor *t);
/* A shape tuple. */
PyObject *wp_shape_tuple(const wafer_tensor *t);
/* Parses a shape (int or sequence of ints >= 1) into |shape|; -1 with an
 * exception. |minus_one_count|, when not 0, lets one entry be -1 and
 * resolves it against that element count. */
int wp_parse_shape(PyObject *obj, uint64_t *shape, uint32_t *rank,
		   uint64_t minus_one_count);
/* The client of a binary operation's operands, checking they match. */
int wp_same_client(TensorObject *a, TensorObject *b);

/* ops.c */
int wp_ops_init(PyObject *module);
/* The number protocol's binary operation: a and b Tensors or numbers. */
PyObject *wp_binary(wafer_binary_op op, PyObject *a, PyObject *b,
		    TensorObject *out);
PyObject *wp_inplace(wafer_binary_op op, PyObject *self, PyObject *other);
PyObject *wp_unary(wafer_unary_op op, TensorObject *x, TensorObject *out);
PyObject *wp_matmul(TensorObject *a, TensorObject *b, uint32_t flags,
		    TensorObject *out);
PyObject *wp_cast(TensorObject *x, wafer_dtype dtype);
/* A new Tensor from an operation's result |r|, or |out| taking it over
 * (checked to have the result's shape and dtype). */
PyObject *wp_finish(ClientObject *client, wafer_tensor *r, TensorObject *out);

/* runtime.c */
/* Adds wafer.Device (a struct sequence type). */
int wp_runtime_init(PyObject *module);
PyObject *wp_memory_usage_dict(const wafer_memory_usage *u);

/* bench.c: wafer._wafer._c_loop, for python -m wafer.bench. */
int wp_bench_init(PyObject *module);

/* dlpack.c: the DLPack protocol (raising NotSupportedError when
 * libwafer has no DLPack). */
PyObject *wp_tensor_dlpack(PyObject *self, PyObject *args, PyObject *kwds);
PyObject *wp_tensor_dlpack_device(PyObject *self, PyObject *unused);
PyObject *wp_client_from_dlpack(PyObject *self, PyObject *obj);
/* Runs the producers' deleters that released imports queued for the GIL
 * (the caller holds it). */
void wp_deferred_run(void);

/* program.c */
PyObject *wp_client_program(ClientObject *client, PyObject *args,
			    PyObject *kwds);

/* graph.c */
PyObject *wp_client_begin_capture(ClientObject *client, PyObject *unused);
PyObject *wp_client_end_capture(ClientObject *client, PyObject *unused);

#endif /* WAFER_PY_H */
