/* wafer — SPDX-License-Identifier: MIT
 *
 * tensor.c: wafer.Tensor, a view (wafer_tensor) of a buffer of one
 * client: its attributes, the views made without device work (t.T,
 * t.transpose, t[...], t.reshape), the copy to numpy, and the operators
 * (number slots, so `a + b` costs one C call).
 *
 * Tensors are values: an operation makes a new tensor, and the in-place
 * operators (`x += y`) run the operation with WAFER_REUSE_INPUT and
 * rebind x to the result, which is x's own buffer when nothing else (no
 * view) names it. A view therefore never sees a later `+=` of its base;
 * see the README. */
#include "wafer_py.h"

#include <string.h>

#include <wafer/interop.h>

/*===--------------------------------------------------------------------===
 * Helpers other files share
 *===--------------------------------------------------------------------===*/

PyObject *wp_tensor_new(ClientObject *client, const wafer_tensor *t)
{
	TensorObject *o = PyObject_New(TensorObject, &WpTensor_Type);

	if (!o) {
		wafer_tensor_release(client->c, t);
		return NULL;
	}
	Py_INCREF(client);
	o->client = client;
	o->t = *t;
	o->state = TENSOR_LIVE;
	return (PyObject *)o;
}

int wp_tensor_semantics(TensorObject *x)
{
	if (x->state == TENSOR_LIVE)
		return WAFER_ALWAYS_COPY;
	if (x->state == TENSOR_DONATING)
		return WAFER_DONATE_INPUT;
	wp_raise_msg(WAFER_ERROR_DONATED, "the tensor was donated to an "
		     "operation (wafer.donate) and names nothing now");
	return -1;
}

void wp_tensor_after(TensorObject *x, int sem, wafer_status status)
{
	uint32_t refs;

	if (sem != WAFER_DONATE_INPUT)
		return;
	if (status == WAFER_OK) {
		x->state = TENSOR_GONE;
		memset(&x->t.handle, 0, sizeof x->t.handle);
		return;
	}
	/* Nothing was queued: the input is as it was, and keeps living
	 * undonated; but a launch refused late takes a donated buffer with
	 * it (ops.h), which the handle's state tells. */
	x->state = TENSOR_LIVE;
	if (wafer_handle_references(x->client->c, x->t.handle, &refs) !=
	    WAFER_OK) {
		x->state = TENSOR_GONE;
		memset(&x->t.handle, 0, sizeof x->t.handle);
	}
}

void wp_tensor_assign(TensorObject *dst, const wafer_tensor *t)
{
	wafer_tensor old = dst->t;
	int had = dst->state != TENSOR_GONE;

	dst->t = *t;
	dst->state = TENSOR_LIVE;
	if (had)
		wafer_tensor_release(dst->client->c, &old);
}

int wp_same_client(TensorObject *a, TensorObject *b)
{
	if (a->client == b->client)
		return 0;
	PyErr_Format(PyExc_ValueError,
		     "operands are on different clients (%U and %U): move one "
		     "with client.asarray()",
		     a->client->selector, b->client->selector);
	return -1;
}

void wp_view_strided(wafer_tensor *t)
{
	uint64_t s = 1;

	if (t->strided)
		return;
	for (uint32_t d = t->rank; d-- > 0;) {
		t->strides[d] = s;
		s *= t->shape[d];
	}
	t->strided = 1;
}

int wp_view_dense(const wafer_tensor *t)
{
	uint64_t s = 1;

	if (!t->strided)
		return 1;
	for (uint32_t d = t->rank; d-- > 0;) {
		if (t->shape[d] != 1 && t->strides[d] != s)
			return 0;
		s *= t->shape[d];
	}
	return 1;
}

PyObject *wp_shape_tuple(const wafer_tensor *t)
{
	PyObject *tup = PyTuple_New(t->rank);

	for (uint32_t d = 0; tup && d < t->rank; d++) {
		PyObject *v = PyLong_FromUnsignedLongLong(t->shape[d]);

		if (!v) {
			Py_DECREF(tup);
			return NULL;
		}
		PyTuple_SET_ITEM(tup, d, v);
	}
	return tup;
}

int wp_parse_shape(PyObject *obj, uint64_t *shape, uint32_t *rank,
		   uint64_t minus_one_count)
{
	PyObject *seq;
	Py_ssize_t n;
	int minus = -1;
	uint64_t known = 1;

	if (PyIndex_Check(obj)) {
		seq = PyTuple_Pack(1, obj);
	} else {
		seq = PySequence_Fast(obj, "shape: an int or a sequence of "
					   "ints");
	}
	if (!seq)
		return -1;
	n = PySequence_Fast_GET_SIZE(seq);
	if (n > WAFER_MAX_RANK) {
		PyErr_Format(PyExc_ValueError, "shape: rank %zd is more than "
			     "wafer's %d", n, WAFER_MAX_RANK);
		Py_DECREF(seq);
		return -1;
	}
	for (Py_ssize_t i = 0; i < n; i++) {
		long long v = PyLong_AsLongLong(
			PySequence_Fast_GET_ITEM(seq, i));

		if (v == -1 && PyErr_Occurred()) {
			Py_DECREF(seq);
			return -1;
		}
		if (v == -1 && minus_one_count && minus < 0) {
			minus = (int)i;
			shape[i] = 1;
			continue;
		}
		if (v < 1) {
			PyErr_Format(PyExc_ValueError,
				     "shape: dimension %zd is %lld; wafer has "
				     "no empty tensors (each size >= 1)",
				     i, v);
			Py_DECREF(seq);
			return -1;
		}
		shape[i] = (uint64_t)v;
		known *= (uint64_t)v;
	}
	Py_DECREF(seq);
	if (minus >= 0) {
		if (minus_one_count % known) {
			PyErr_Format(PyExc_ValueError,
				     "cannot reshape %llu elements with -1 "
				     "beside sizes making %llu",
				     (unsigned long long)minus_one_count,
				     (unsigned long long)known);
			return -1;
		}
		shape[minus] = minus_one_count / known;
	}
	*rank = (uint32_t)n;
	return 0;
}

/*===--------------------------------------------------------------------===
 * The type
 *===--------------------------------------------------------------------===*/

static void tensor_dealloc(TensorObject *self)
{
	if (self->state != TENSOR_GONE)
		wafer_tensor_release(self->client->c, &self->t);
	Py_DECREF(self->client);
	PyObject_Free(self);
}

static int tensor_live(TensorObject *self)
{
	if (self->state != TENSOR_GONE)
		return 0;
	wp_raise_msg(WAFER_ERROR_DONATED, "the tensor was donated to an "
		     "operation (wafer.donate) and names nothing now");
	return -1;
}

/* A new Tensor of the view |v| of self's handle: one more reference. */
static PyObject *tensor_view(TensorObject *self, const wafer_tensor *v)
{
	wafer_status st = wafer_retain(self->client->c, v->handle);

	if (st != WAFER_OK)
		return wp_raise(st, "view");
	return wp_tensor_new(self->client, v);
}

/* wafer.Tensor([...], dtype=..., device=...) with the values, as numpy
 * shows them (wafer._host.tensor_repr); where they cannot be read (a
 * failed device), the shape and dtype alone. */
static PyObject *tensor_repr(TensorObject *self)
{
	PyObject *shape, *r, *fn;

	if (self->state == TENSOR_GONE)
		return PyUnicode_FromFormat("<wafer.Tensor donated, on %U>",
					    self->client->selector);
	fn = wp_host("tensor_repr");
	r = fn ? PyObject_CallFunctionObjArgs(fn, (PyObject *)self, NULL)
	       : NULL;
	if (r)
		return r;
	PyErr_Clear();
	shape = wp_shape_tuple(&self->t);
	if (!shape)
		return NULL;
	r = PyUnicode_FromFormat("<wafer.Tensor shape=%R dtype=%s on %U>",
				 shape, wp_dtype_name(self->t.dtype),
				 self->client->selector);
	Py_DECREF(shape);
	return r;
}

static PyObject *tensor_numpy(TensorObject *self, PyObject *unused)
{
	PyObject *np, *shape, *arr;
	Py_buffer view;
	wafer_status st;
	wafer_tensor src;
	TensorObject *tmp = NULL;

	(void)unused;
	if (tensor_live(self))
		return NULL;
	np = wp_numpy();
	if (!np)
		return NULL;
	src = self->t;
	/* bfloat16: numpy has no such type; read it as float32. */
	if (src.dtype == WAFER_DTYPE_BF16) {
		tmp = (TensorObject *)wp_cast(self, WAFER_DTYPE_F32);
		if (!tmp)
			return NULL;
		src = tmp->t;
	}
	shape = wp_shape_tuple(&src);
	if (!shape) {
		Py_XDECREF(tmp);
		return NULL;
	}
	arr = PyObject_CallMethod(np, "empty", "NO", shape,
				  wp_dtype_object(src.dtype));
	if (!arr) {
		Py_XDECREF(tmp);
		return NULL;
	}
	if (PyObject_GetBuffer(arr, &view, PyBUF_C_CONTIGUOUS | PyBUF_WRITABLE)) {
		Py_DECREF(arr);
		Py_XDECREF(tmp);
		return NULL;
	}
	if (view.len >= WP_NOGIL_ELEMENTS) {
		Py_BEGIN_ALLOW_THREADS
		st = wafer_tensor_read(self->client->c, &src, view.buf,
				       (size_t)view.len);
		Py_END_ALLOW_THREADS
	} else {
		st = wafer_tensor_read(self->client->c, &src, view.buf,
				       (size_t)view.len);
	}
	PyBuffer_Release(&view);
	Py_XDECREF(tmp);
	if (st != WAFER_OK) {
		Py_DECREF(arr);
		return wp_raise(st, "numpy()");
	}
	return arr;
}

static PyObject *tensor_array(TensorObject *self, PyObject *args,
			      PyObject *kwds)
{
	static char *kwlist[] = {"dtype", "copy", NULL};
	PyObject *dtype = Py_None, *copy = Py_None, *arr, *r;

	if (!PyArg_ParseTupleAndKeywords(args, kwds, "|OO:__array__", kwlist,
					 &dtype, &copy))
		return NULL;
	arr = tensor_numpy(self, NULL);
	if (!arr || dtype == Py_None)
		return arr;
	r = PyObject_CallMethod(arr, "astype", "O", dtype);
	Py_DECREF(arr);
	return r;
}

static PyObject *tensor_item(TensorObject *self, PyObject *unused)
{
	PyObject *arr, *r;

	(void)unused;
	if (tensor_live(self))
		return NULL;
	if (wafer_tensor_count(&self->t) != 1) {
		PyErr_SetString(PyExc_ValueError,
				"item(): only a tensor of one element has one");
		return NULL;
	}
	arr = tensor_numpy(self, NULL);
	if (!arr)
		return NULL;
	r = PyObject_CallMethod(arr, "item", NULL);
	Py_DECREF(arr);
	return r;
}

static PyObject *tensor_tolist(TensorObject *self, PyObject *unused)
{
	PyObject *arr = tensor_numpy(self, unused), *r;

	if (!arr)
		return NULL;
	r = PyObject_CallMethod(arr, "tolist", NULL);
	Py_DECREF(arr);
	return r;
}

/* The view with its dimensions permuted: new dimension i is old
 * perm[i]. */
static PyObject *tensor_permuted(TensorObject *self, const uint32_t *perm)
{
	wafer_tensor v = self->t, src = self->t;

	wp_view_strided(&src);
	v.strided = 1;
	for (uint32_t i = 0; i < src.rank; i++) {
		v.shape[i] = src.shape[perm[i]];
		v.strides[i] = src.strides[perm[i]];
	}
	return tensor_view(self, &v);
}

static PyObject *tensor_transpose(TensorObject *self, PyObject *args)
{
	uint32_t perm[WAFER_MAX_RANK], rank = self->t.rank;
	PyObject *axes = args;

	if (tensor_live(self))
		return NULL;
	if (PyTuple_GET_SIZE(args) == 1 &&
	    !PyIndex_Check(PyTuple_GET_ITEM(args, 0)))
		axes = PyTuple_GET_ITEM(args, 0);
	if (axes == Py_None || (PyTuple_Check(axes) &&
				PyTuple_GET_SIZE(axes) == 0)) {
		for (uint32_t i = 0; i < rank; i++)
			perm[i] = rank - 1 - i;
	} else {
		PyObject *seq = PySequence_Fast(axes, "transpose: axes");
		int seen[WAFER_MAX_RANK] = {0};

		if (!seq)
			return NULL;
		if ((uint32_t)PySequence_Fast_GET_SIZE(seq) != rank) {
			Py_DECREF(seq);
			PyErr_Format(PyExc_ValueError, "transpose: %u axes for "
				     "a tensor of rank %u",
				     (unsigned)PySequence_Fast_GET_SIZE(seq),
				     (unsigned)rank);
			return NULL;
		}
		for (uint32_t i = 0; i < rank; i++) {
			long a = PyLong_AsLong(PySequence_Fast_GET_ITEM(seq, i));

			if (a == -1 && PyErr_Occurred()) {
				Py_DECREF(seq);
				return NULL;
			}
			if (a < 0)
				a += rank;
			if (a < 0 || a >= (long)rank || seen[a]) {
				Py_DECREF(seq);
				PyErr_SetString(PyExc_ValueError,
						"transpose: axes are not a "
						"permutation of the dimensions");
				return NULL;
			}
			seen[a] = 1;
			perm[i] = (uint32_t)a;
		}
		Py_DECREF(seq);
	}
	return tensor_permuted(self, perm);
}

static PyObject *tensor_get_T(TensorObject *self, void *closure)
{
	PyObject *args = PyTuple_New(0), *r;

	(void)closure;
	if (!args)
		return NULL;
	r = tensor_transpose(self, args);
	Py_DECREF(args);
	return r;
}

static PyObject *tensor_reshape(TensorObject *self, PyObject *args)
{
	uint64_t shape[WAFER_MAX_RANK];
	uint32_t rank;
	uint64_t count;
	PyObject *spec = args;
	wafer_tensor v;

	if (tensor_live(self))
		return NULL;
	count = wafer_tensor_count(&self->t);
	if (PyTuple_GET_SIZE(args) == 1 &&
	    !PyIndex_Check(PyTuple_GET_ITEM(args, 0)))
		spec = PyTuple_GET_ITEM(args, 0);
	if (wp_parse_shape(spec, shape, &rank, count))
		return NULL;
	{
		uint64_t n = 1;

		for (uint32_t d = 0; d < rank; d++)
			n *= shape[d];
		if (n != count) {
			PyErr_Format(PyExc_ValueError,
				     "cannot reshape %llu elements into %llu",
				     (unsigned long long)count,
				     (unsigned long long)n);
			return NULL;
		}
	}
	if (wp_view_dense(&self->t)) {
		v = self->t;
		v.strided = 0;
		v.rank = rank;
		memcpy(v.shape, shape, sizeof shape[0] * rank);
		return tensor_view(self, &v);
	}
	/* Not expressible as a view: a dense copy first, as numpy does. */
	{
		wafer_tensor c;
		wafer_status st = wafer_op_copy(self->client->c, &self->t,
						WAFER_ALWAYS_COPY, &c);

		if (st != WAFER_OK)
			return wp_raise(st, "reshape");
		c.rank = rank;
		memcpy(c.shape, shape, sizeof shape[0] * rank);
		return wp_tensor_new(self->client, &c);
	}
}

/* numpy's broadcast_to: a view of |shape| repeating the dimensions of
 * size 1 (and new leading ones) with stride 0; no copy. */
static PyObject *tensor_broadcast_to(TensorObject *self, PyObject *arg)
{
	uint64_t shape[WAFER_MAX_RANK];
	uint32_t rank;
	wafer_tensor src = self->t, v;

	if (tensor_live(self))
		return NULL;
	if (wp_parse_shape(arg, shape, &rank, 0))
		return NULL;
	if (rank < src.rank) {
		PyErr_Format(PyExc_ValueError, "broadcast_to: rank %u is less "
			     "than the tensor's %u", (unsigned)rank,
			     (unsigned)src.rank);
		return NULL;
	}
	wp_view_strided(&src);
	v = src;
	v.rank = rank;
	for (uint32_t i = 0; i < rank; i++) {
		uint32_t lead = rank - src.rank;

		v.shape[i] = shape[i];
		if (i < lead) {
			v.strides[i] = 0;
		} else if (src.shape[i - lead] == shape[i]) {
			v.strides[i] = src.strides[i - lead];
		} else if (src.shape[i - lead] == 1) {
			v.strides[i] = 0;
		} else {
			PyErr_Format(PyExc_ValueError,
				     "broadcast_to: dimension %u of size %llu "
				     "cannot become %llu", (unsigned)(i - lead),
				     (unsigned long long)src.shape[i - lead],
				     (unsigned long long)shape[i]);
			return NULL;
		}
	}
	return tensor_view(self, &v);
}

static PyObject *tensor_astype(TensorObject *self, PyObject *arg)
{
	wafer_dtype dtype = wp_dtype_from(arg);

	if (dtype == WAFER_DTYPE_NONE)
		return NULL;
	return wp_cast(self, dtype);
}

static PyObject *tensor_copy(TensorObject *self, PyObject *unused)
{
	wafer_tensor c;
	wafer_status st;

	(void)unused;
	if (tensor_live(self))
		return NULL;
	st = wafer_op_copy(self->client->c, &self->t, WAFER_ALWAYS_COPY, &c);
	if (st != WAFER_OK)
		return wp_raise(st, "copy");
	return wp_tensor_new(self->client, &c);
}

/* Whether index |tup| needs numpy (wafer._host.getitem): a negative
 * slice step or an array (of ints or bools), which no wafer view
 * expresses. */
static int needs_host(PyObject *tup)
{
	for (Py_ssize_t i = 0; i < PyTuple_GET_SIZE(tup); i++) {
		PyObject *k = PyTuple_GET_ITEM(tup, i);
		Py_ssize_t start, stop, step;

		if (k == Py_None || k == Py_Ellipsis)
			continue;
		if (PySlice_Check(k)) {
			if (PySlice_Unpack(k, &start, &stop, &step) < 0) {
				PyErr_Clear();
				continue; /* the basic path reports it */
			}
			if (step < 0)
				return 1;
			continue;
		}
		if (PyBool_Check(k) || !PyIndex_Check(k))
			return 1;
		if (!PyLong_Check(k)) {
			/* numpy arrays have __index__ too: only a rank-0 one
			 * is a plain index. */
			PyObject *nd = PyObject_GetAttrString(k, "ndim");
			long rank = nd ? PyLong_AsLong(nd) : 0;

			Py_XDECREF(nd);
			PyErr_Clear();
			if (rank != 0)
				return 1;
		}
	}
	return 0;
}

/* t[key]: ints, slices, None and one Ellipsis, as numpy reads them, into
 * a view of the same buffer; negative steps and arrays through numpy
 * (a new tensor). */
static PyObject *tensor_getitem(TensorObject *self, PyObject *key)
{
	wafer_tensor src = self->t, v;
	PyObject *tup;
	Py_ssize_t n, consumed = 0;
	uint32_t d = 0, r = 0;
	int ellipsis = 0;

	if (tensor_live(self))
		return NULL;
	wp_view_strided(&src);
	v = src;
	tup = PyTuple_Check(key) ? (Py_INCREF(key), key) : PyTuple_Pack(1, key);
	if (!tup)
		return NULL;
	n = PyTuple_GET_SIZE(tup);
	if (needs_host(tup)) {
		PyObject *fn = wp_host("getitem"), *r;

		Py_DECREF(tup);
		if (!fn)
			return NULL;
		r = PyObject_CallFunctionObjArgs(fn, (PyObject *)self, key,
						 NULL);
		return r;
	}
	for (Py_ssize_t i = 0; i < n; i++) {
		PyObject *k = PyTuple_GET_ITEM(tup, i);

		if (k != Py_None && k != Py_Ellipsis)
			consumed++;
	}
	if (consumed > (Py_ssize_t)src.rank) {
		PyErr_Format(PyExc_IndexError, "too many indices: %zd for a "
			     "tensor of rank %u", consumed,
			     (unsigned)src.rank);
		goto fail;
	}
	for (Py_ssize_t i = 0; i < n; i++) {
		PyObject *k = PyTuple_GET_ITEM(tup, i);

		if (r >= WAFER_MAX_RANK && k != Py_Ellipsis &&
		    !PyIndex_Check(k)) {
			PyErr_Format(PyExc_IndexError, "more than %d "
				     "dimensions", WAFER_MAX_RANK);
			goto fail;
		}
		if (k == Py_None) {
			v.shape[r] = 1;
			v.strides[r++] = 0;
		} else if (k == Py_Ellipsis) {
			uint32_t keep = src.rank - (uint32_t)consumed;

			if (ellipsis++) {
				PyErr_SetString(PyExc_IndexError,
						"an index can only have a "
						"single ellipsis");
				goto fail;
			}
			if (r + keep > WAFER_MAX_RANK) {
				PyErr_Format(PyExc_IndexError, "more than %d "
					     "dimensions", WAFER_MAX_RANK);
				goto fail;
			}
			for (uint32_t j = 0; j < keep; j++, d++, r++) {
				v.shape[r] = src.shape[d];
				v.strides[r] = src.strides[d];
			}
			consumed += keep;
		} else if (PySlice_Check(k)) {
			Py_ssize_t start, stop, step, len;

			if (PySlice_Unpack(k, &start, &stop, &step) < 0)
				goto fail;
			len = PySlice_AdjustIndices((Py_ssize_t)src.shape[d],
						    &start, &stop, step);
			if (len == 0) {
				PyErr_SetString(PyExc_IndexError,
						"empty slice: wafer has no "
						"empty tensors");
				goto fail;
			}
			v.offset += (uint64_t)start * src.strides[d];
			v.shape[r] = (uint64_t)len;
			v.strides[r++] = src.strides[d] * (uint64_t)step;
			d++;
		} else if (PyIndex_Check(k)) {
			Py_ssize_t i = PyNumber_AsSsize_t(k, PyExc_IndexError);

			if (i == -1 && PyErr_Occurred())
				goto fail;
			if (i < 0)
				i += (Py_ssize_t)src.shape[d];
			if (i < 0 || i >= (Py_ssize_t)src.shape[d]) {
				PyErr_Format(PyExc_IndexError,
					     "index %zd is out of bounds for "
					     "dimension %u of size %llu",
					     i, (unsigned)d,
					     (unsigned long long)src.shape[d]);
				goto fail;
			}
			v.offset += (uint64_t)i * src.strides[d];
			d++;
		} else {
			/* needs_host sent every other kind to numpy. */
			PyErr_Format(PyExc_IndexError,
				     "wafer cannot index with %.100s",
				     Py_TYPE(k)->tp_name);
			goto fail;
		}
	}
	for (; d < src.rank; d++, r++) {
		if (r >= WAFER_MAX_RANK) {
			PyErr_Format(PyExc_IndexError, "more than %d "
				     "dimensions", WAFER_MAX_RANK);
			goto fail;
		}
		v.shape[r] = src.shape[d];
		v.strides[r] = src.strides[d];
	}
	v.rank = r;
	Py_DECREF(tup);
	return tensor_view(self, &v);
fail:
	Py_DECREF(tup);
	return NULL;
}

/* t[key] = value, with numpy's rules (wafer._host.setitem). */
static int tensor_setitem(TensorObject *self, PyObject *key, PyObject *value)
{
	PyObject *fn, *r;

	if (!value) {
		PyErr_SetString(PyExc_TypeError,
				"wafer tensors do not support item deletion");
		return -1;
	}
	if (tensor_live(self))
		return -1;
	fn = wp_host("setitem");
	if (!fn)
		return -1;
	r = PyObject_CallFunctionObjArgs(fn, (PyObject *)self, key, value,
					 NULL);
	Py_XDECREF(r);
	return r ? 0 : -1;
}

/* The elements of the handle the view reaches, first to last: [first,
 * end) in elements. */
static void view_span(const wafer_tensor *t, uint64_t *first, uint64_t *end)
{
	wafer_tensor s = *t;
	uint64_t last = s.offset;

	wp_view_strided(&s);
	for (uint32_t d = 0; d < s.rank; d++)
		last += (s.shape[d] - 1) * s.strides[d];
	*first = s.offset;
	*end = last + 1;
}

/* _read_span() -> (bytes as a numpy uint8 array, first element): the
 * bytes of the handle from the view's first element to its last. */
static PyObject *tensor_read_span(TensorObject *self, PyObject *unused)
{
	size_t es = wafer_dtype_size(self->t.dtype);
	uint64_t first, end;
	PyObject *np, *arr, *r;
	Py_buffer view;
	wafer_status st;

	(void)unused;
	if (tensor_live(self) || !(np = wp_numpy()))
		return NULL;
	view_span(&self->t, &first, &end);
	arr = PyObject_CallMethod(np, "empty", "Ks",
				  (unsigned long long)((end - first) * es),
				  "uint8");
	if (!arr)
		return NULL;
	if (PyObject_GetBuffer(arr, &view, PyBUF_C_CONTIGUOUS | PyBUF_WRITABLE)) {
		Py_DECREF(arr);
		return NULL;
	}
	st = wafer_read(self->client->c, self->t.handle, (size_t)(first * es),
			view.buf, (size_t)view.len);
	PyBuffer_Release(&view);
	if (st != WAFER_OK) {
		Py_DECREF(arr);
		return wp_raise(st, "reading a tensor's elements");
	}
	r = Py_BuildValue("NK", arr, (unsigned long long)first);
	return r;
}

/* _write_span(first, bytes): uploads |bytes| at element |first| of the
 * handle (the other half of _read_span). */
static PyObject *tensor_write_span(TensorObject *self, PyObject *args)
{
	unsigned long long first;
	Py_buffer view;
	wafer_status st;

	if (!PyArg_ParseTuple(args, "Ky*:_write_span", &first, &view))
		return NULL;
	if (tensor_live(self)) {
		PyBuffer_Release(&view);
		return NULL;
	}
	st = wafer_write(self->client->c, self->t.handle,
			 (size_t)(first * wafer_dtype_size(self->t.dtype)),
			 view.buf, (size_t)view.len);
	PyBuffer_Release(&view);
	if (st != WAFER_OK)
		return wp_raise(st, "writing a tensor's elements");
	Py_RETURN_NONE;
}

static Py_ssize_t tensor_len(TensorObject *self)
{
	if (self->t.rank == 0) {
		PyErr_SetString(PyExc_TypeError, "len() of a rank-0 tensor");
		return -1;
	}
	return (Py_ssize_t)self->t.shape[0];
}

/*===--------------------------------------------------------------------===
 * Attributes
 *===--------------------------------------------------------------------===*/

static PyObject *tensor_get_shape(TensorObject *self, void *closure)
{
	(void)closure;
	return wp_shape_tuple(&self->t);
}

static PyObject *tensor_get_dtype(TensorObject *self, void *closure)
{
	PyObject *d = wp_dtype_object(self->t.dtype);

	(void)closure;
	Py_INCREF(d);
	return d;
}

static PyObject *tensor_get_ndim(TensorObject *self, void *closure)
{
	(void)closure;
	return PyLong_FromUnsignedLong(self->t.rank);
}

static PyObject *tensor_get_size(TensorObject *self, void *closure)
{
	(void)closure;
	return PyLong_FromUnsignedLongLong(wafer_tensor_count(&self->t));
}

static PyObject *tensor_get_itemsize(TensorObject *self, void *closure)
{
	(void)closure;
	return PyLong_FromSize_t(wafer_dtype_size(self->t.dtype));
}

static PyObject *tensor_get_nbytes(TensorObject *self, void *closure)
{
	(void)closure;
	return PyLong_FromUnsignedLongLong(wafer_tensor_count(&self->t) *
					   wafer_dtype_size(self->t.dtype));
}

static PyObject *tensor_get_strides(TensorObject *self, void *closure)
{
	wafer_tensor v = self->t;
	PyObject *tup;

	(void)closure;
	wp_view_strided(&v);
	tup = PyTuple_New(v.rank);
	for (uint32_t d = 0; tup && d < v.rank; d++) {
		PyObject *x = PyLong_FromUnsignedLongLong(v.strides[d]);

		if (!x) {
			Py_DECREF(tup);
			return NULL;
		}
		PyTuple_SET_ITEM(tup, d, x);
	}
	return tup;
}

static PyObject *tensor_get_offset(TensorObject *self, void *closure)
{
	(void)closure;
	return PyLong_FromUnsignedLongLong(self->t.offset);
}

static PyObject *tensor_get_contiguous(TensorObject *self, void *closure)
{
	(void)closure;
	return PyBool_FromLong(wp_view_dense(&self->t));
}

static PyObject *tensor_get_client(TensorObject *self, void *closure)
{
	(void)closure;
	Py_INCREF(self->client);
	return (PyObject *)self->client;
}

static PyObject *tensor_get_device(TensorObject *self, void *closure)
{
	(void)closure;
	Py_INCREF(self->client->selector);
	return self->client->selector;
}

static PyObject *tensor_get_handle(TensorObject *self, void *closure)
{
	(void)closure;
	return PyLong_FromUnsignedLongLong(self->t.handle.bits);
}

static PyObject *tensor_get_references(TensorObject *self, void *closure)
{
	uint32_t n;
	wafer_status st;

	(void)closure;
	if (tensor_live(self))
		return NULL;
	st = wafer_handle_references(self->client->c, self->t.handle, &n);
	if (st != WAFER_OK)
		return wp_raise(st, "references");
	return PyLong_FromUnsignedLong(n);
}

static PyObject *tensor_get_donated(TensorObject *self, void *closure)
{
	(void)closure;
	return PyBool_FromLong(self->state == TENSOR_GONE);
}

static PyObject *tensor_native_buffer(TensorObject *self, PyObject *unused)
{
	wafer_native_buffer nb = {sizeof nb};
	wafer_status st;

	(void)unused;
	if (tensor_live(self))
		return NULL;
	Py_BEGIN_ALLOW_THREADS
	st = wafer_handle_native(self->client->c, self->t.handle, &nb);
	Py_END_ALLOW_THREADS
	if (st != WAFER_OK)
		return wp_raise(st, "native_buffer()");
	return Py_BuildValue("{s:s,s:s,s:K,s:K,s:n,s:n,s:i}", "kind",
			     wafer_native_kind_name(nb.kind), "backend",
			     nb.backend ? nb.backend : "", "address",
			     (unsigned long long)nb.address, "object",
			     (unsigned long long)(uintptr_t)nb.object,
			     "offset", (Py_ssize_t)nb.offset, "size",
			     (Py_ssize_t)nb.size, "device_ordinal",
			     nb.device_ordinal);
}

static PyGetSetDef tensor_getset[] = {
	{"shape", (getter)tensor_get_shape, NULL, "The shape, a tuple.", NULL},
	{"dtype", (getter)tensor_get_dtype, NULL,
	 "The element type: a numpy dtype (the str \"bfloat16\" for "
	 "bfloat16).", NULL},
	{"ndim", (getter)tensor_get_ndim, NULL, "The rank.", NULL},
	{"size", (getter)tensor_get_size, NULL, "The number of elements.",
	 NULL},
	{"itemsize", (getter)tensor_get_itemsize, NULL, "Bytes per element.",
	 NULL},
	{"nbytes", (getter)tensor_get_nbytes, NULL, "size * itemsize.", NULL},
	{"element_strides", (getter)tensor_get_strides, NULL,
	 "Strides in elements (numpy's .strides are in bytes).", NULL},
	{"offset", (getter)tensor_get_offset, NULL,
	 "Where the view starts in its buffer, in elements.", NULL},
	{"is_contiguous", (getter)tensor_get_contiguous, NULL,
	 "Whether the view is dense row-major.", NULL},
	{"T", (getter)tensor_get_T, NULL,
	 "The view with its dimensions reversed (no copy).", NULL},
	{"client", (getter)tensor_get_client, NULL, "The Client.", NULL},
	{"device", (getter)tensor_get_device, NULL, "\"backend:index\".",
	 NULL},
	{"handle", (getter)tensor_get_handle, NULL,
	 "The wafer_handle's bits (for diagnostics).", NULL},
	{"references", (getter)tensor_get_references, NULL,
	 "References the buffer holds now: one per tensor naming it "
	 "(wafer_handle_references).", NULL},
	{"donated", (getter)tensor_get_donated, NULL,
	 "Whether the tensor was given up to an operation.", NULL},
	{NULL, NULL, NULL, NULL, NULL},
};

static PyMethodDef tensor_methods[] = {
	{"_read_span", (PyCFunction)tensor_read_span, METH_NOARGS,
	 "_read_span() -> (bytes, first): the handle's bytes the view spans "
	 "(for wafer._host)."},
	{"_write_span", (PyCFunction)tensor_write_span, METH_VARARGS,
	 "_write_span(first, bytes): uploads what _read_span read."},
	{"numpy", (PyCFunction)tensor_numpy, METH_NOARGS,
	 "numpy() -> numpy.ndarray\n\nA copy of the elements on the host, "
	 "dense, waiting for the work issued before (bfloat16 comes back as "
	 "float32)."},
	{"__array__", (PyCFunction)(void (*)(void))tensor_array,
	 METH_VARARGS | METH_KEYWORDS, "numpy.asarray(t) support."},
	{"item", (PyCFunction)tensor_item, METH_NOARGS,
	 "item() -> number\n\nThe one element of a one-element tensor."},
	{"tolist", (PyCFunction)tensor_tolist, METH_NOARGS,
	 "tolist() -> list\n\nThe elements as nested lists."},
	{"transpose", (PyCFunction)tensor_transpose, METH_VARARGS,
	 "transpose(*axes) -> Tensor\n\nA view with the dimensions permuted "
	 "(reversed without axes), as numpy.transpose; no copy."},
	{"reshape", (PyCFunction)tensor_reshape, METH_VARARGS,
	 "reshape(*shape) -> Tensor\n\nThe elements in a new shape (one -1 is "
	 "inferred): a view of a dense tensor, else a dense copy."},
	{"broadcast_to", (PyCFunction)tensor_broadcast_to, METH_O,
	 "broadcast_to(shape) -> Tensor\n\nA view of the tensor in a larger "
	 "shape, as numpy.broadcast_to: dimensions of size 1 and new leading "
	 "ones repeat (stride 0); no copy."},
	{"astype", (PyCFunction)tensor_astype, METH_O,
	 "astype(dtype) -> Tensor\n\nConverted to dtype (wafer_op_cast)."},
	{"copy", (PyCFunction)tensor_copy, METH_NOARGS,
	 "copy() -> Tensor\n\nA dense copy (wafer_op_copy)."},
	{"native_buffer", (PyCFunction)tensor_native_buffer, METH_NOARGS,
	 "native_buffer() -> dict\n\nThe buffer as its backend knows it "
	 "(wafer_handle_native): kind, backend, address (a host or device "
	 "pointer), object (a cl_mem), offset, size, device_ordinal. The "
	 "view starts offset * itemsize bytes past it."},
	{"__dlpack__", (PyCFunction)(void (*)(void))wp_tensor_dlpack,
	 METH_VARARGS | METH_KEYWORDS,
	 "__dlpack__(*, stream=None, max_version=None, dl_device=None, "
	 "copy=None) -> capsule\n\nThe tensor's memory as a DLPack capsule "
	 "(the array API's protocol), without copying; the client's work is "
	 "finished first, so any stream of the consumer may read it. Host "
	 "(cpu), CUDA and Level Zero memory; an OpenCL buffer cannot be "
	 "described (NotSupportedError)."},
	{"__dlpack_device__", (PyCFunction)wp_tensor_dlpack_device,
	 METH_NOARGS, "__dlpack_device__() -> (device_type, device_id)"},
	{NULL, NULL, 0, NULL},
};

/*===--------------------------------------------------------------------===
 * Operators
 *===--------------------------------------------------------------------===*/

#define BINARY_SLOT(name, op)                                                  \
	static PyObject *tensor_##name(PyObject *a, PyObject *b)               \
	{                                                                      \
		return wp_binary(op, a, b, NULL);                              \
	}                                                                      \
	static PyObject *tensor_i##name(PyObject *a, PyObject *b)              \
	{                                                                      \
		return wp_inplace(op, a, b);                                   \
	}
BINARY_SLOT(add, WAFER_BINARY_ADD)
BINARY_SLOT(sub, WAFER_BINARY_SUB)
BINARY_SLOT(mul, WAFER_BINARY_MUL)
BINARY_SLOT(div, WAFER_BINARY_DIV)
#undef BINARY_SLOT

static PyObject *tensor_neg(PyObject *x)
{
	return wp_unary(WAFER_UNARY_NEG, (TensorObject *)x, NULL);
}

static PyObject *tensor_abs(PyObject *x)
{
	return wp_unary(WAFER_UNARY_ABS, (TensorObject *)x, NULL);
}

static PyObject *tensor_pos(PyObject *x)
{
	Py_INCREF(x);
	return x;
}

static PyObject *tensor_matmul(PyObject *a, PyObject *b)
{
	if (!WpTensor_Check(a) || !WpTensor_Check(b))
		Py_RETURN_NOTIMPLEMENTED;
	return wp_matmul((TensorObject *)a, (TensorObject *)b, 0, NULL);
}

static PyObject *tensor_float(PyObject *x)
{
	PyObject *v = tensor_item((TensorObject *)x, NULL), *r;

	if (!v)
		return NULL;
	r = PyNumber_Float(v);
	Py_DECREF(v);
	return r;
}

/* bool(t) and int(t): of a one-element tensor only, as numpy does. */
static int tensor_bool(PyObject *x)
{
	PyObject *v;
	int r;

	if (tensor_live((TensorObject *)x))
		return -1;
	if (wafer_tensor_count(&((TensorObject *)x)->t) != 1) {
		PyErr_SetString(PyExc_ValueError,
				"the truth value of a tensor with more than "
				"one element is ambiguous (use .numpy().any() "
				"or .all())");
		return -1;
	}
	v = tensor_item((TensorObject *)x, NULL);
	if (!v)
		return -1;
	r = PyObject_IsTrue(v);
	Py_DECREF(v);
	return r;
}

static PyObject *tensor_int(PyObject *x)
{
	PyObject *v = tensor_item((TensorObject *)x, NULL), *r;

	if (!v)
		return NULL;
	r = PyNumber_Long(v);
	Py_DECREF(v);
	return r;
}

/* ==, <, ...: element-wise through numpy (wafer._host.compare): a uint8
 * tensor of 0 and 1 on the same client. */
static PyObject *tensor_richcompare(PyObject *a, PyObject *b, int op)
{
	PyObject *fn, *opnum, *r;

	if (!WpTensor_Check(a))
		Py_RETURN_NOTIMPLEMENTED;
	if (tensor_live((TensorObject *)a) ||
	    (WpTensor_Check(b) && tensor_live((TensorObject *)b)))
		return NULL;
	fn = wp_host("compare");
	if (!fn)
		return NULL;
	opnum = PyLong_FromLong(op);
	if (!opnum)
		return NULL;
	r = PyObject_CallFunctionObjArgs(fn, a, b, opnum, NULL);
	Py_DECREF(opnum);
	return r;
}

static PyNumberMethods tensor_as_number = {
	.nb_bool = tensor_bool,
	.nb_int = tensor_int,
	.nb_add = tensor_add,
	.nb_subtract = tensor_sub,
	.nb_multiply = tensor_mul,
	.nb_true_divide = tensor_div,
	.nb_inplace_add = tensor_iadd,
	.nb_inplace_subtract = tensor_isub,
	.nb_inplace_multiply = tensor_imul,
	.nb_inplace_true_divide = tensor_idiv,
	.nb_negative = tensor_neg,
	.nb_absolute = tensor_abs,
	.nb_positive = tensor_pos,
	.nb_matrix_multiply = tensor_matmul,
	.nb_float = tensor_float,
};

static PyMappingMethods tensor_as_mapping = {
	.mp_length = (lenfunc)tensor_len,
	.mp_subscript = (binaryfunc)tensor_getitem,
	.mp_ass_subscript = (objobjargproc)tensor_setitem,
};

PyDoc_STRVAR(tensor_doc,
"A view of a buffer on a client's device: dtype, shape, strides, offset.\n\n"
"Made by client.asarray(), client.empty()/full()/zeros()/ones() and by\n"
"every operation. Operators: + - * / (with broadcasting, and numbers),\n"
"@ (matmul), unary - and abs(); += -= *= /= write into the tensor's\n"
"own buffer when nothing else names it (WAFER_REUSE_INPUT), else\n"
"rebind it to a new one. Views (t.T, t.transpose(), t[...], reshape of\n"
"a dense tensor) share the buffer and copy nothing; negative steps and\n"
"integer or boolean array indices give a new tensor through numpy, as\n"
"does t[key] = value (numpy's rules). == != < <= > >= compare element-\n"
"wise through numpy (the catalogue has no comparison kernels), giving\n"
"uint8 tensors of 0 and 1; bool(), int() and float() take a one-element\n"
"tensor. repr shows the values as numpy does.");

PyTypeObject WpTensor_Type = {
	PyVarObject_HEAD_INIT(NULL, 0)
	.tp_name = "wafer.Tensor",
	.tp_basicsize = sizeof(TensorObject),
	.tp_dealloc = (destructor)tensor_dealloc,
	.tp_repr = (reprfunc)tensor_repr,
	.tp_richcompare = tensor_richcompare,
	.tp_hash = PyObject_HashNotImplemented, /* as numpy: == is element-wise */
	.tp_as_number = &tensor_as_number,
	.tp_as_mapping = &tensor_as_mapping,
	.tp_flags = Py_TPFLAGS_DEFAULT,
	.tp_doc = tensor_doc,
	.tp_methods = tensor_methods,
	.tp_getset = tensor_getset,
};
