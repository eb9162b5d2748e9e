/* wafer — SPDX-License-Identifier: MIT
 *
 * ops.c: the operations of ops.h as Python functions (wafer.exp, add,
 * sum, softmax, matmul, ...) and behind Tensor's operators. Every
 * function takes out=: the result goes into that tensor (which must have
 * the result's shape and dtype), and when out is also an input the
 * operation runs with WAFER_REUSE_INPUT on it, in its own buffer when
 * nothing else names it. A tensor marked by wafer.donate() is passed with
 * WAFER_DONATE_INPUT and names nothing afterwards.
 *
 * Functions are METH_FASTCALL with their own keyword parsing: the generic
 * parser would cost more than the rest of a small operation. */
#include "wafer_py.h"

#include <string.h>

/* Below this many elements the GIL stays held (see WP_NOGIL_ELEMENTS). */
static int big(const wafer_tensor *t)
{
	uint64_t n = 1;

	for (uint32_t d = 0; d < t->rank; d++)
		n *= t->shape[d];
	return n >= WP_NOGIL_ELEMENTS;
}

#define CALL(big_, expr)                                                       \
	do {                                                                   \
		if (big_) {                                                    \
			Py_BEGIN_ALLOW_THREADS                                 \
			st = (expr);                                           \
			Py_END_ALLOW_THREADS                                   \
		} else {                                                       \
			st = (expr);                                           \
		}                                                              \
	} while (0)

PyObject *wp_finish(ClientObject *client, wafer_tensor *r, TensorObject *out)
{
	if (!out)
		return wp_tensor_new(client, r);
	if (out->t.rank != r->rank || out->t.dtype != r->dtype ||
	    memcmp(out->t.shape, r->shape, sizeof r->shape[0] * r->rank)) {
		PyObject *want = wp_shape_tuple(r), *have = wp_shape_tuple(&out->t);

		wafer_tensor_release(client->c, r);
		if (want && have)
			PyErr_Format(PyExc_ValueError,
				     "out: the result is %R %s, out is %R %s",
				     want, wp_dtype_name(r->dtype), have,
				     wp_dtype_name(out->t.dtype));
		Py_XDECREF(want);
		Py_XDECREF(have);
		return NULL;
	}
	wp_tensor_assign(out, r);
	Py_INCREF(out);
	return (PyObject *)out;
}

/* The semantics of input |x| in an operation writing to |out|. */
static int input_semantics(TensorObject *x, TensorObject *out)
{
	int s = wp_tensor_semantics(x);

	if (s == WAFER_ALWAYS_COPY && x == out)
		return WAFER_REUSE_INPUT;
	return s;
}

static int check_out(PyObject *out)
{
	if (!out || out == Py_None || WpTensor_Check(out))
		return 0;
	PyErr_Format(PyExc_TypeError, "out: a wafer.Tensor, not %.100s",
		     Py_TYPE(out)->tp_name);
	return -1;
}

/* Converts a non-Tensor operand to a Tensor on |like|'s client with its
 * dtype (numpy arrays, numpy scalars, lists). NULL with an exception. */
static TensorObject *operand(TensorObject *like, PyObject *obj)
{
	return (TensorObject *)PyObject_CallMethod(
		(PyObject *)like->client, "asarray", "Os", obj,
		wp_dtype_name(like->t.dtype));
}

static int is_number(PyObject *o)
{
	return PyFloat_Check(o) || PyLong_Check(o);
}

static int is_integer(wafer_dtype dtype)
{
	return dtype == WAFER_DTYPE_I32 || dtype == WAFER_DTYPE_I64 ||
	       dtype == WAFER_DTYPE_U8;
}

/* The dtype numpy computes a op b in, for tensors of |da| and |db|
 * (numpy.result_type; true division of integers in float64); NONE
 * when that is da == db already or either is bfloat16 (no numpy type:
 * the operation then refuses mixed dtypes by name). */
static wafer_dtype result_dtype(wafer_binary_op op, wafer_dtype da,
				wafer_dtype db)
{
	PyObject *np = wp_numpy(), *r;
	wafer_dtype to;

	if (!np || da == WAFER_DTYPE_BF16 || db == WAFER_DTYPE_BF16)
		return WAFER_DTYPE_NONE;
	r = PyObject_CallMethod(np, "result_type", "OO", wp_dtype_object(da),
				wp_dtype_object(db));
	if (!r)
		return WAFER_DTYPE_NONE;
	to = wp_dtype_from(r);
	Py_DECREF(r);
	if (op == WAFER_BINARY_DIV && is_integer(to))
		to = WAFER_DTYPE_F64;
	return to == da && to == db ? WAFER_DTYPE_NONE : to;
}

/* a op b with each tensor operand cast to |to| first (temporaries). */
static PyObject *promoted(wafer_binary_op op, PyObject *a, PyObject *b,
			  wafer_dtype to, TensorObject *out)
{
	PyObject *fa = a, *fb = b, *r = NULL;

	if (WpTensor_Check(a) && ((TensorObject *)a)->t.dtype != to)
		fa = wp_cast((TensorObject *)a, to);
	else
		Py_INCREF(fa);
	if (WpTensor_Check(b) && ((TensorObject *)b)->t.dtype != to)
		fb = wp_cast((TensorObject *)b, to);
	else
		Py_INCREF(fb);
	if (fa && fb)
		r = wp_binary(op, fa, fb, out);
	Py_XDECREF(fa);
	Py_XDECREF(fb);
	return r;
}

PyObject *wp_binary(wafer_binary_op op, PyObject *a, PyObject *b,
		    TensorObject *out)
{
	TensorObject *ta, *tb, *tmp = NULL;
	wafer_tensor r;
	wafer_status st;
	int sa, sb;
	PyObject *res;

	if (WpTensor_Check(a) && WpTensor_Check(b)) {
		ta = (TensorObject *)a;
		tb = (TensorObject *)b;
	} else if (WpTensor_Check(a) || WpTensor_Check(b)) {
		TensorObject *t = (TensorObject *)(WpTensor_Check(a) ? a : b);
		PyObject *other = t == (TensorObject *)a ? b : a;
		uint32_t first = t != (TensorObject *)a;

		if (is_number(other)) {
			double s = PyFloat_AsDouble(other);

			if (s == -1.0 && PyErr_Occurred())
				return NULL;
			if (is_integer(t->t.dtype) &&
			    (op == WAFER_BINARY_DIV || PyFloat_Check(other)))
				return promoted(op, a, b, WAFER_DTYPE_F64, out);
			sa = input_semantics(t, out);
			if (sa < 0)
				return NULL;
			CALL(big(&t->t),
			     wafer_op_binary_scalar(t->client->c, op, &t->t, sa,
						    s, first, &r));
			wp_tensor_after(t, sa, st);
			if (st != WAFER_OK)
				return wp_raise(st, NULL);
			return wp_finish(t->client, &r, out);
		}
		if (PyUnicode_Check(other) || PyBytes_Check(other) ||
		    other == Py_None)
			Py_RETURN_NOTIMPLEMENTED;
		tmp = operand(t, other);
		if (!tmp) {
			/* Not something numpy makes an array of: let Python
			 * try the other operand. */
			if (PyErr_ExceptionMatches(PyExc_TypeError)) {
				PyErr_Clear();
				Py_RETURN_NOTIMPLEMENTED;
			}
			return NULL;
		}
		ta = first ? tmp : t;
		tb = first ? t : tmp;
	} else {
		Py_RETURN_NOTIMPLEMENTED;
	}
	if (ta->t.dtype != tb->t.dtype ||
	    (op == WAFER_BINARY_DIV && is_integer(ta->t.dtype))) {
		wafer_dtype to = result_dtype(op, ta->t.dtype, tb->t.dtype);

		if (to != WAFER_DTYPE_NONE) {
			PyObject *r = promoted(op, (PyObject *)ta,
					       (PyObject *)tb, to, out);
			Py_XDECREF(tmp);
			return r;
		}
		if (PyErr_Occurred()) {
			Py_XDECREF(tmp);
			return NULL;
		}
	}
	res = NULL;
	if (wp_same_client(ta, tb))
		goto done;
	sa = input_semantics(ta, out);
	if (sa < 0)
		goto done;
	sb = ta == tb ? sa : input_semantics(tb, out);
	if (sb < 0)
		goto done;
	CALL(big(&ta->t) || big(&tb->t),
	     wafer_op_binary(ta->client->c, op, &ta->t, sa, &tb->t, sb, &r));
	wp_tensor_after(ta, sa, st);
	if (tb != ta)
		wp_tensor_after(tb, sb, st);
	if (st != WAFER_OK) {
		wp_raise(st, NULL);
		goto done;
	}
	res = wp_finish(ta->client, &r, out);
done:
	Py_XDECREF(tmp);
	return res;
}

PyObject *wp_inplace(wafer_binary_op op, PyObject *self, PyObject *other)
{
	if (!WpTensor_Check(self))
		Py_RETURN_NOTIMPLEMENTED;
	return wp_binary(op, self, other, (TensorObject *)self);
}

PyObject *wp_unary(wafer_unary_op op, TensorObject *x, TensorObject *out)
{
	wafer_tensor r;
	wafer_status st;
	int sx = input_semantics(x, out);

	if (sx < 0)
		return NULL;
	CALL(big(&x->t), wafer_op_unary(x->client->c, op, &x->t, sx, &r));
	wp_tensor_after(x, sx, st);
	if (st != WAFER_OK)
		return wp_raise(st, NULL);
	return wp_finish(x->client, &r, out);
}

PyObject *wp_cast(TensorObject *x, wafer_dtype dtype)
{
	wafer_tensor r;
	wafer_status st;
	int sx = wp_tensor_semantics(x);

	if (sx < 0)
		return NULL;
	CALL(big(&x->t), wafer_op_cast(x->client->c, &x->t, sx, dtype, &r));
	wp_tensor_after(x, sx, st);
	if (st != WAFER_OK)
		return wp_raise(st, "astype");
	return wp_tensor_new(x->client, &r);
}

/* numpy's vector rule, undone on the result [..., m, n]: drops n when b
 * was a vector, m when a was. */
static void drop_dims(wafer_tensor *r, int drop_m, int drop_n)
{
	if (drop_n)
		r->rank--;
	if (drop_m) {
		if (!drop_n)
			r->shape[r->rank - 2] = r->shape[r->rank - 1];
		r->rank--;
	}
}

PyObject *wp_matmul(TensorObject *a, TensorObject *b, uint32_t flags,
		    TensorObject *out)
{
	wafer_tensor va, vb, r;
	wafer_status st;
	int sa, sb, drop_m = 0, drop_n = 0;

	if (wp_same_client(a, b))
		return NULL;
	sa = wp_tensor_semantics(a);
	if (sa < 0)
		return NULL;
	sb = a == b ? sa : wp_tensor_semantics(b);
	if (sb < 0)
		return NULL;
	va = a->t;
	vb = b->t;
	if (va.rank == 0 || vb.rank == 0) {
		PyErr_SetString(PyExc_ValueError,
				"matmul: an operand of rank 0 (use *)");
		return NULL;
	}
	/* numpy's rule for vectors: a [k] is a [1, k] row, b [k] a [k, 1]
	 * column, and that dimension is dropped from the result. */
	if (va.rank == 1) {
		wp_view_strided(&va);
		va.shape[1] = va.shape[0];
		va.strides[1] = va.strides[0];
		va.shape[0] = 1;
		va.strides[0] = 0;
		va.rank = 2;
		flags &= ~WAFER_MATMUL_TRANSPOSE_A;
		drop_m = 1;
	}
	if (vb.rank == 1) {
		wp_view_strided(&vb);
		vb.shape[1] = 1;
		vb.strides[1] = 0;
		vb.rank = 2;
		flags &= ~WAFER_MATMUL_TRANSPOSE_B;
		drop_n = 1;
	}
	CALL(big(&va) || big(&vb),
	     wafer_op_matmul(a->client->c, &va, sa, &vb, sb, flags, &r));
	wp_tensor_after(a, sa, st);
	if (b != a)
		wp_tensor_after(b, sb, st);
	if (st != WAFER_OK)
		return wp_raise(st, NULL);
	drop_dims(&r, drop_m, drop_n);
	return wp_finish(a->client, &r, out);
}

/*===--------------------------------------------------------------------===
 * Argument parsing
 *===--------------------------------------------------------------------===*/

/* Fills values[i] from positional args (at most |npos|) and keywords
 * named names[i]; values not given keep what the caller set. */
static int parse(const char *fname, PyObject *const *args, Py_ssize_t nargs,
		 PyObject *kwnames, Py_ssize_t nmin, Py_ssize_t npos,
		 const char *const *names, PyObject **values)
{
	Py_ssize_t nnames = 0;

	while (names[nnames])
		nnames++;
	if (nargs < nmin && !kwnames) {
		PyErr_Format(PyExc_TypeError, "%s() takes at least %zd "
			     "arguments (%zd given)", fname, nmin, nargs);
		return -1;
	}
	if (nargs > npos) {
		PyErr_Format(PyExc_TypeError, "%s() takes at most %zd "
			     "positional arguments (%zd given)", fname, npos,
			     nargs);
		return -1;
	}
	for (Py_ssize_t i = 0; i < nargs; i++)
		values[i] = args[i];
	if (kwnames) {
		Py_ssize_t nkw = PyTuple_GET_SIZE(kwnames);

		for (Py_ssize_t k = 0; k < nkw; k++) {
			const char *kn = PyUnicode_AsUTF8(
				PyTuple_GET_ITEM(kwnames, k));
			Py_ssize_t i;

			if (!kn)
				return -1;
			for (i = 0; i < nnames; i++)
				if (!strcmp(kn, names[i]))
					break;
			if (i == nnames) {
				PyErr_Format(PyExc_TypeError, "%s() got an "
					     "unexpected keyword argument '%s'",
					     fname, kn);
				return -1;
			}
			if (i < nargs) {
				PyErr_Format(PyExc_TypeError, "%s() got "
					     "multiple values for '%s'",
					     fname, kn);
				return -1;
			}
			values[i] = args[nargs + k];
		}
	}
	for (Py_ssize_t i = 0; i < nmin; i++) {
		if (!values[i]) {
			PyErr_Format(PyExc_TypeError, "%s() missing argument "
				     "'%s'", fname, names[i]);
			return -1;
		}
	}
	return 0;
}

static TensorObject *tensor_arg(const char *fname, PyObject *o)
{
	if (WpTensor_Check(o))
		return (TensorObject *)o;
	PyErr_Format(PyExc_TypeError, "%s(): a wafer.Tensor, not %.100s",
		     fname, Py_TYPE(o)->tp_name);
	return NULL;
}

static TensorObject *out_arg(PyObject *o)
{
	return o && o != Py_None ? (TensorObject *)o : NULL;
}

/*===--------------------------------------------------------------------===
 * Unary and binary functions
 *===--------------------------------------------------------------------===*/

static PyObject *unary_fn(const char *name, wafer_unary_op op,
			  PyObject *const *args, Py_ssize_t nargs,
			  PyObject *kwnames)
{
	static const char *const names[] = {"x", "out", NULL};
	PyObject *v[2] = {NULL, NULL};
	TensorObject *x;

	if (parse(name, args, nargs, kwnames, 1, 1, names, v) || check_out(v[1]))
		return NULL;
	x = tensor_arg(name, v[0]);
	if (!x)
		return NULL;
	return wp_unary(op, x, out_arg(v[1]));
}

static PyObject *binary_fn(const char *name, wafer_binary_op op,
			   PyObject *const *args, Py_ssize_t nargs,
			   PyObject *kwnames)
{
	static const char *const names[] = {"a", "b", "out", NULL};
	PyObject *v[3] = {NULL, NULL, NULL}, *r;

	if (parse(name, args, nargs, kwnames, 2, 2, names, v) || check_out(v[2]))
		return NULL;
	r = wp_binary(op, v[0], v[1], out_arg(v[2]));
	if (r == Py_NotImplemented) {
		Py_DECREF(r);
		PyErr_Format(PyExc_TypeError, "%s(): operands %.100s and "
			     "%.100s (one must be a wafer.Tensor)", name,
			     Py_TYPE(v[0])->tp_name, Py_TYPE(v[1])->tp_name);
		return NULL;
	}
	return r;
}

#define UNARY(name, op, doc)                                                   \
	static PyObject *fn_##name(PyObject *m, PyObject *const *args,         \
				   Py_ssize_t nargs, PyObject *kwnames)        \
	{                                                                      \
		(void)m;                                                       \
		return unary_fn(#name, op, args, nargs, kwnames);              \
	}                                                                      \
	PyDoc_STRVAR(doc_##name, #name "(x, /, *, out=None) -> Tensor\n\n" doc);
UNARY(negative, WAFER_UNARY_NEG, "-x, elementwise (also: -x).")
UNARY(abs, WAFER_UNARY_ABS, "|x|, elementwise (also: abs(x)).")
UNARY(exp, WAFER_UNARY_EXP, "e**x, elementwise.")
UNARY(log, WAFER_UNARY_LOG, "The natural logarithm, elementwise.")
UNARY(sqrt, WAFER_UNARY_SQRT, "The square root, elementwise.")
UNARY(relu, WAFER_UNARY_RELU, "max(x, 0), elementwise.")
UNARY(gelu, WAFER_UNARY_GELU,
      "GELU, elementwise, in the tanh form: 0.5 x (1 + tanh(sqrt(2/pi)\n"
      "(x + 0.044715 x**3))).")
UNARY(sigmoid, WAFER_UNARY_SIGMOID, "1 / (1 + e**-x), elementwise.")
UNARY(tanh, WAFER_UNARY_TANH, "The hyperbolic tangent, elementwise.")
#undef UNARY

#define BINARY(name, op, doc)                                                  \
	static PyObject *fn_##name(PyObject *m, PyObject *const *args,         \
				   Py_ssize_t nargs, PyObject *kwnames)        \
	{                                                                      \
		(void)m;                                                       \
		return binary_fn(#name, op, args, nargs, kwnames);             \
	}                                                                      \
	PyDoc_STRVAR(doc_##name, #name "(a, b, /, *, out=None) -> Tensor\n\n"  \
		     doc "\nShapes broadcast as numpy's do; a or b may be a "  \
		     "number.");
BINARY(add, WAFER_BINARY_ADD, "a + b, elementwise.")
BINARY(subtract, WAFER_BINARY_SUB, "a - b, elementwise.")
BINARY(multiply, WAFER_BINARY_MUL, "a * b, elementwise.")
BINARY(divide, WAFER_BINARY_DIV, "a / b, elementwise.")
BINARY(maximum, WAFER_BINARY_MAX, "The larger of a and b, elementwise.")
BINARY(minimum, WAFER_BINARY_MIN, "The smaller of a and b, elementwise.")
#undef BINARY

/*===--------------------------------------------------------------------===
 * Reductions and softmax, over any axis
 *===--------------------------------------------------------------------===*/

/* Parses axis (None or an int) against |rank|: -1 for None. */
static int parse_axis(PyObject *o, uint32_t rank, int *axis)
{
	long a;

	if (!o || o == Py_None) {
		*axis = -1;
		return 0;
	}
	a = PyLong_AsLong(o);
	if (a == -1 && PyErr_Occurred())
		return -1;
	if (a < 0)
		a += rank;
	if (a < 0 || a >= (long)rank) {
		PyErr_Format(PyExc_ValueError, "axis %R is out of bounds for "
			     "a tensor of rank %u", o, (unsigned)rank);
		return -1;
	}
	*axis = (int)a;
	return 0;
}

/* |t|'s view with dimension |axis| moved last, the others in order;
 * perm receives the order taken. */
static wafer_tensor axis_last(const wafer_tensor *t, int axis, uint32_t *perm)
{
	wafer_tensor v = *t, src = *t;
	uint32_t j = 0;

	wp_view_strided(&src);
	v.strided = 1;
	for (uint32_t d = 0; d < src.rank; d++)
		if ((int)d != axis)
			perm[j++] = d;
	perm[j] = (uint32_t)axis;
	for (uint32_t i = 0; i < src.rank; i++) {
		v.shape[i] = src.shape[perm[i]];
		v.strides[i] = src.strides[perm[i]];
	}
	return v;
}

/* The dtype numpy reduces an integer tensor in: mean in float64, sum of
 * int32 and uint8 in int64; else the tensor's own. */
static wafer_dtype reduce_dtype(wafer_reduce_op op, wafer_dtype dtype)
{
	if (!is_integer(dtype))
		return dtype;
	if (op == WAFER_REDUCE_MEAN)
		return WAFER_DTYPE_F64;
	if (op == WAFER_REDUCE_SUM)
		return WAFER_DTYPE_I64;
	return dtype;
}

static PyObject *reduce_fn(const char *name, wafer_reduce_op op,
			   PyObject *const *args, Py_ssize_t nargs,
			   PyObject *kwnames);

/* reduce_fn again with x cast to reduce_dtype (a temporary). */
static PyObject *reduce_promoted(const char *name, wafer_reduce_op op,
				 TensorObject *x, PyObject *const *args,
				 Py_ssize_t nargs, PyObject *kwnames)
{
	Py_ssize_t total = nargs + (kwnames ? PyTuple_GET_SIZE(kwnames) : 0);
	PyObject *argv[8], *promoted, *r;

	if (total > 8) {
		PyErr_Format(PyExc_TypeError, "%s: too many arguments", name);
		return NULL;
	}
	promoted = wp_cast(x, reduce_dtype(op, x->t.dtype));
	if (!promoted)
		return NULL;
	for (Py_ssize_t i = 0; i < total; i++)
		argv[i] = args[i] == (PyObject *)x ? promoted : args[i];
	r = reduce_fn(name, op, argv, nargs, kwnames);
	Py_DECREF(promoted);
	return r;
}

static PyObject *reduce_fn(const char *name, wafer_reduce_op op,
			   PyObject *const *args, Py_ssize_t nargs,
			   PyObject *kwnames)
{
	static const char *const names[] = {"x", "axis", "keepdims", "out",
					    NULL};
	PyObject *v[4] = {NULL, NULL, NULL, NULL};
	TensorObject *x;
	wafer_tensor in, tmp, r;
	uint64_t final_shape[WAFER_MAX_RANK];
	uint32_t final_rank = 0, perm[WAFER_MAX_RANK];
	int axis, keepdims = 0, sx, have_tmp = 0;
	wafer_status st;

	if (parse(name, args, nargs, kwnames, 1, 3, names, v) || check_out(v[3]))
		return NULL;
	x = tensor_arg(name, v[0]);
	if (!x)
		return NULL;
	if (reduce_dtype(op, x->t.dtype) != x->t.dtype)
		return reduce_promoted(name, op, x, args, nargs, kwnames);
	if (v[2]) {
		keepdims = PyObject_IsTrue(v[2]);
		if (keepdims < 0)
			return NULL;
	}
	if (parse_axis(v[1], x->t.rank, &axis))
		return NULL;
	sx = wp_tensor_semantics(x);
	if (sx < 0)
		return NULL;
	in = x->t;
	if (axis < 0) {
		/* Over every element: a dense [count] view, through a copy
		 * when the view is not dense. */
		if (!wp_view_dense(&in)) {
			CALL(big(&in), wafer_op_copy(x->client->c, &in,
						     WAFER_ALWAYS_COPY, &tmp));
			if (st != WAFER_OK)
				return wp_raise(st, name);
			have_tmp = 1;
			in = tmp;
		}
		in.shape[0] = wafer_tensor_count(&in);
		in.rank = 1;
		in.strided = 0;
		final_rank = keepdims ? x->t.rank : 0;
		for (uint32_t d = 0; d < final_rank; d++)
			final_shape[d] = 1;
	} else {
		in = axis_last(&x->t, axis, perm);
		for (uint32_t d = 0; d < x->t.rank; d++) {
			if ((int)d == axis && !keepdims)
				continue;
			final_shape[final_rank++] =
				(int)d == axis ? 1 : x->t.shape[d];
		}
	}
	/* A copy made here is ours to give; a donated x is given as such. */
	CALL(big(&in), wafer_op_reduce(x->client->c, op, &in,
				       have_tmp ? WAFER_DONATE_INPUT : sx, &r));
	if (have_tmp) {
		if (st != WAFER_OK)
			wafer_tensor_release(x->client->c, &tmp);
		else if (sx == WAFER_DONATE_INPUT)
			wafer_tensor_release(x->client->c, &x->t);
	}
	wp_tensor_after(x, sx, st);
	if (st != WAFER_OK)
		return wp_raise(st, NULL);
	/* r is dense [..., 1]: the final shape is a reshape of it. */
	r.rank = final_rank;
	memcpy(r.shape, final_shape, sizeof final_shape[0] * final_rank);
	return wp_finish(x->client, &r, out_arg(v[3]));
}

#define REDUCE(name, op, doc)                                                  \
	static PyObject *fn_##name(PyObject *m, PyObject *const *args,         \
				   Py_ssize_t nargs, PyObject *kwnames)        \
	{                                                                      \
		(void)m;                                                       \
		return reduce_fn(#name, op, args, nargs, kwnames);             \
	}                                                                      \
	PyDoc_STRVAR(doc_##name, #name "(x, axis=None, keepdims=False, *, "    \
		     "out=None) -> Tensor\n\n" doc " over axis (every element "\
		     "when None), as numpy's.\nThe kernel reduces the last "   \
		     "dimension; another axis is moved last as a\nview "       \
		     "(gathered by the operation).");
REDUCE(sum, WAFER_REDUCE_SUM, "The sum")
REDUCE(max, WAFER_REDUCE_MAX, "The largest element")
REDUCE(mean, WAFER_REDUCE_MEAN, "The mean")
#undef REDUCE

PyDoc_STRVAR(doc_softmax, "softmax(x, axis=-1, *, out=None) -> Tensor\n\n"
	     "exp(x - max) / sum(exp(x - max)) along axis, stable for any finite "
	     "input.\nThe result has x's shape and may reuse its buffer (out=x, "
	     "or donate(x)).");

static PyObject *fn_softmax(PyObject *m, PyObject *const *args,
			    Py_ssize_t nargs, PyObject *kwnames)
{
	static const char *const names[] = {"x", "axis", "out", NULL};
	PyObject *v[3] = {NULL, NULL, NULL};
	TensorObject *x, *out;
	wafer_tensor in, r;
	uint32_t perm[WAFER_MAX_RANK];
	int axis, sx;
	wafer_status st;

	(void)m;
	if (parse("softmax", args, nargs, kwnames, 1, 2, names, v) ||
	    check_out(v[2]))
		return NULL;
	x = tensor_arg("softmax", v[0]);
	if (!x)
		return NULL;
	out = out_arg(v[2]);
	if (x->t.rank == 0) {
		PyErr_SetString(PyExc_ValueError, "softmax: x needs rank >= 1");
		return NULL;
	}
	if (parse_axis(v[1] ? v[1] : NULL, x->t.rank, &axis))
		return NULL;
	if (axis < 0)
		axis = (int)x->t.rank - 1;
	sx = input_semantics(x, out);
	if (sx < 0)
		return NULL;
	if (axis == (int)x->t.rank - 1) {
		CALL(big(&x->t),
		     wafer_op_softmax(x->client->c, &x->t, sx, &r));
		wp_tensor_after(x, sx, st);
		if (st != WAFER_OK)
			return wp_raise(st, NULL);
		return wp_finish(x->client, &r, out);
	}
	/* Another axis: softmax of the view with it last, and the result
	 * viewed back in x's order. */
	in = axis_last(&x->t, axis, perm);
	if (sx == WAFER_REUSE_INPUT)
		sx = WAFER_ALWAYS_COPY; /* the view is not x's layout */
	CALL(big(&in), wafer_op_softmax(x->client->c, &in, sx, &r));
	wp_tensor_after(x, sx, st);
	if (st != WAFER_OK)
		return wp_raise(st, NULL);
	{
		wafer_tensor back = r, dense = r;

		wp_view_strided(&dense);
		back.strided = 1;
		for (uint32_t i = 0; i < r.rank; i++) {
			back.shape[perm[i]] = dense.shape[i];
			back.strides[perm[i]] = dense.strides[i];
		}
		if (out) {
			/* out takes a dense result. */
			wafer_tensor c;

			st = wafer_op_copy(x->client->c, &back,
					   WAFER_ALWAYS_COPY, &c);
			wafer_tensor_release(x->client->c, &r);
			if (st != WAFER_OK)
				return wp_raise(st, NULL);
			return wp_finish(x->client, &c, out);
		}
		return wp_tensor_new(x->client, &back);
	}
}

PyDoc_STRVAR(doc_matmul,
"matmul(a, b, /, *, transpose_a=False, transpose_b=False, out=None) -> Tensor\n\n"
"The matrix product (also: a @ b), batched over leading dimensions that\n"
"broadcast; a vector operand is a row (a) or a column (b), as numpy's.\n"
"transpose_a/transpose_b take the operand's last two dimensions\n"
"swapped, at no cost (so does a .T view).");

static PyObject *fn_matmul(PyObject *m, PyObject *const *args,
			   Py_ssize_t nargs, PyObject *kwnames)
{
	static const char *const names[] = {"a", "b", "transpose_a",
					    "transpose_b", "out", NULL};
	PyObject *v[5] = {NULL, NULL, NULL, NULL, NULL};
	TensorObject *a, *b;
	uint32_t flags = 0;

	(void)m;
	if (parse("matmul", args, nargs, kwnames, 2, 2, names, v) ||
	    check_out(v[4]))
		return NULL;
	a = tensor_arg("matmul", v[0]);
	b = a ? tensor_arg("matmul", v[1]) : NULL;
	if (!b)
		return NULL;
	if (v[2] && PyObject_IsTrue(v[2]))
		flags |= WAFER_MATMUL_TRANSPOSE_A;
	if (v[3] && PyObject_IsTrue(v[3]))
		flags |= WAFER_MATMUL_TRANSPOSE_B;
	if (PyErr_Occurred())
		return NULL;
	return wp_matmul(a, b, flags, out_arg(v[4]));
}

PyDoc_STRVAR(doc_copy, "copy(x, /, *, out=None) -> Tensor\n\n"
	     "A dense copy of any view (wafer_op_copy).");

static PyObject *fn_copy(PyObject *m, PyObject *const *args, Py_ssize_t nargs,
			 PyObject *kwnames)
{
	static const char *const names[] = {"x", "out", NULL};
	PyObject *v[2] = {NULL, NULL};
	TensorObject *x, *out;
	wafer_tensor r;
	wafer_status st;
	int sx;

	(void)m;
	if (parse("copy", args, nargs, kwnames, 1, 1, names, v) ||
	    check_out(v[1]))
		return NULL;
	x = tensor_arg("copy", v[0]);
	if (!x)
		return NULL;
	out = out_arg(v[1]);
	sx = input_semantics(x, out);
	if (sx < 0)
		return NULL;
	CALL(big(&x->t), wafer_op_copy(x->client->c, &x->t, sx, &r));
	wp_tensor_after(x, sx, st);
	if (st != WAFER_OK)
		return wp_raise(st, NULL);
	return wp_finish(x->client, &r, out);
}

#define FN(name)                                                               \
	{#name, (PyCFunction)(void (*)(void))fn_##name,                        \
	 METH_FASTCALL | METH_KEYWORDS, doc_##name}

static PyMethodDef op_functions[] = {
	FN(negative), FN(abs), FN(exp), FN(log), FN(sqrt), FN(relu),
	FN(gelu), FN(sigmoid), FN(tanh), FN(add), FN(subtract),
	FN(multiply), FN(divide), FN(maximum), FN(minimum), FN(sum),
	FN(max), FN(mean), FN(softmax), FN(matmul), FN(copy),
	{NULL, NULL, 0, NULL},
};
#undef FN

int wp_ops_init(PyObject *module)
{
	return PyModule_AddFunctions(module, op_functions);
}
