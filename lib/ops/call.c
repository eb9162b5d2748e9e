/* wafer — SPDX-License-Identifier: MIT
 *
 * call.c: one operation's inputs and output, and the donation rules of
 * ops.h in one place (see internal.h for the steps).
 *
 * Which input's buffer the output may take:
 *   - the operation says which inputs its kernels may write over
 *     (|can_alias|: the catalogue allows exact aliasing for them);
 *   - the input asked for it (REUSE_INPUT or DONATE_INPUT);
 *   - its view is dense at offset 0 with the output's dtype and element
 *     count (so the kernel reads each element where it writes it), and
 *     covers its whole handle (the output is exactly the buffer: a slice
 *     would leave the rest of the handle alive under the output);
 *   - no other input of the call reads the same handle through another
 *     view (it would read elements already overwritten);
 *   - the caller holds the only reference: checked by a snapshot for
 *     REUSE_INPUT (the caller promises no concurrent retain), and by the
 *     handle table's atomic donation for DONATE_INPUT (race-free against
 *     concurrent retains; see handle_table.h).
 * The first input that passes is reused. A donated input that is not
 * reused is dropped after the launches, with a debug line saying why. */
#include "build-config.h"

#include <inttypes.h>
#include <stdarg.h>
#include <string.h>

#include "lib/client.h"
#include "lib/error.h"
#include "lib/log.h"
#include "lib/ops/internal.h"
#include "lib/scope.h"

static const char *semantics_name(wafer_copy_semantics s)
{
	switch (s) {
	case WAFER_ALWAYS_COPY: return "ALWAYS_COPY";
	case WAFER_REUSE_INPUT: return "REUSE_INPUT";
	case WAFER_DONATE_INPUT: return "DONATE_INPUT";
	}
	return "unknown";
}

static bool same_view(const wafer_tensor *a, const wafer_tensor *b)
{
	return a->handle.bits == b->handle.bits && a->dtype == b->dtype &&
	       a->rank == b->rank && a->offset == b->offset &&
	       memcmp(a->shape, b->shape, sizeof a->shape) == 0 &&
	       memcmp(a->strides, b->strides, sizeof a->strides) == 0;
}

/* Donating one handle twice, or donating it and reading it through a
 * non-donated input of the same call, would leave the call reading a
 * buffer it gave away. */
static wafer_status check_donation_rules(const struct wafer__op_call *call)
{
	for (size_t i = 0; i < call->input_count; i++) {
		const struct wafer__op_input *a = &call->inputs[i];
		for (size_t j = i + 1; j < call->input_count; j++) {
			const struct wafer__op_input *b = &call->inputs[j];
			if (a->view.t.handle.bits != b->view.t.handle.bits)
				continue;
			bool da = a->semantics == WAFER_DONATE_INPUT;
			bool db = b->semantics == WAFER_DONATE_INPUT;
			if (da && db)
				return wafer__fail(
					WAFER_ERROR_INVALID_ARGUMENT,
					"%s: handle 0x%016" PRIx64
					" is donated twice (inputs %s and %s)",
					call->op, a->view.t.handle.bits,
					a->name, b->name);
			if (da || db)
				return wafer__fail(
					WAFER_ERROR_INVALID_ARGUMENT,
					"%s: handle 0x%016" PRIx64
					" is donated as input %s and also "
					"passed as input %s (%s)",
					call->op, a->view.t.handle.bits,
					da ? a->name : b->name,
					da ? b->name : a->name,
					semantics_name(da ? b->semantics
							  : a->semantics));
		}
	}
	return WAFER_OK;
}

void wafer__op_clear_out(wafer_tensor *out, const wafer_tensor *const *inputs,
			 size_t count)
{
	if (!out)
		return;
	for (size_t i = 0; i < count; i++)
		if (inputs[i] == out)
			return;
	memset(out, 0, sizeof *out);
}

wafer_status wafer__op_begin(struct wafer__op_call *call, wafer_client *client,
			     const char *op, const wafer_tensor *const *views,
			     const wafer_copy_semantics *semantics,
			     const char *const *names, size_t count,
			     wafer_tensor *out)
{
	memset(call, 0, sizeof *call);
	call->client = client;
	call->op = op;
	call->reused_input = -1;
	if (!out)
		return wafer__fail(WAFER_ERROR_INVALID_ARGUMENT,
				   "%s: out is NULL", op);
	for (size_t i = 0; i < count; i++)
		call->out_is_input |= views[i] == out;
	if (!client) {
		wafer__op_clear_out(out, views, count);
		return wafer__fail(WAFER_ERROR_INVALID_ARGUMENT,
				   "%s: client is NULL", op);
	}
	/* Copy every view before *out is cleared: out may be an input. */
	wafer_status status = WAFER_OK;
	for (size_t i = 0; i < count && status == WAFER_OK; i++) {
		struct wafer__op_input *in = &call->inputs[i];
		in->name = names[i];
		in->semantics = semantics[i];
		if ((unsigned)semantics[i] > WAFER_DONATE_INPUT)
			status = wafer__fail(WAFER_ERROR_INVALID_ARGUMENT,
					     "%s: input %s: copy semantics %d "
					     "is not one of ALWAYS_COPY, "
					     "REUSE_INPUT, DONATE_INPUT",
					     op, names[i], (int)semantics[i]);
		else
			status = wafer__view_check(client, op, names[i],
						   views[i], &in->view);
		in->live = in->view.t.handle;
		call->input_count = i + 1;
	}
	wafer__op_clear_out(out, views, count);
	if (status != WAFER_OK)
		return status;
	return check_donation_rules(call);
}

/* Why input |i| cannot become the output, or NULL when it can (apart from
 * its reference count, which the caller checks last). */
static const char *reuse_obstacle(const struct wafer__op_call *call, size_t i,
				  wafer_dtype dtype, uint64_t count,
				  unsigned can_alias)
{
	const struct wafer__op_input *in = &call->inputs[i];

	if (!(can_alias & (1u << i)))
		return "the operation's kernel cannot write over this input";
	if (call->reuse != WAFER_OP_NEW)
		return "the output already reuses another input";
	if (in->view.t.dtype != dtype)
		return "the output has another dtype";
	if (in->view.count != count)
		return "the output has another shape (broadcast)";
	if (!in->view.dense)
		return "the view is not dense at offset 0";
	if (in->view.handle_size != count * in->view.element_size)
		return "the view does not cover its whole handle";
	for (size_t j = 0; j < call->input_count; j++) {
		const struct wafer__op_input *other = &call->inputs[j];
		if (j != i &&
		    other->view.t.handle.bits == in->view.t.handle.bits &&
		    !same_view(&other->view.t, &in->view.t))
			return "another input reads the same handle through "
			       "another view";
	}
	return NULL;
}

static void log_not_reused(const struct wafer__op_call *call,
			   const struct wafer__op_input *in, const char *why)
{
	wafer__log_debug("ops", "%s: %s input %s (handle 0x%016" PRIx64
			       ") not reused: %s; %s",
			call->op, semantics_name(in->semantics), in->name,
			in->view.t.handle.bits, why,
			in->semantics == WAFER_DONATE_INPUT
				? "the output gets a new buffer and the input "
				  "is released after the operation"
				: "the output gets a new buffer");
}

/* Tries to make input |i| the output; true when it did. */
static bool try_reuse(struct wafer__op_call *call, size_t i)
{
	struct wafer__op_input *in = &call->inputs[i];
	struct wafer__handle_table *handles = wafer__client_handles(call->client);
	wafer_handle handle = in->view.t.handle;
	uint32_t count;

	if (in->semantics == WAFER_REUSE_INPUT) {
		if (wafer__handle_table_refcount(handles, handle, call->op,
						 &count) != WAFER_OK ||
		    count != 1) {
			log_not_reused(call, in, "the handle is shared");
			return false;
		}
		if (wafer_retain(call->client, handle) != WAFER_OK)
			return false;
		call->reuse = WAFER_OP_REUSED;
		call->out.handle = handle;
	} else {
		struct wafer__handle_slot *slot;
		wafer_handle fresh;
		bool donated;
		if (wafer__handle_table_donate(handles, handle, call->op, &slot,
					       &fresh, &donated) != WAFER_OK ||
		    !donated) {
			log_not_reused(call, in, "the handle is shared");
			return false;
		}
		call->reuse = WAFER_OP_DONATED;
		call->out.handle = fresh;
		/* The same slot under its new name: bind that from now on,
		 * for every input that named the old one. */
		for (size_t j = 0; j < call->input_count; j++)
			if (call->inputs[j].live.bits == handle.bits)
				call->inputs[j].live = fresh;
		in->drop = false;
	}
	call->reused_input = (int)i;
	wafer__log_debug("ops", "%s: output written over input %s (%s)",
			 call->op, in->name, semantics_name(in->semantics));
	return true;
}

wafer_status wafer__op_begin_one(struct wafer__op_call *call,
				 wafer_client *client, const char *op,
				 const char *name, const wafer_tensor *x,
				 wafer_copy_semantics sx, wafer_tensor *out)
{
	const wafer_tensor *views[1] = {x};
	const char *names[1] = {name};

	return wafer__op_begin(call, client, op, views, &sx, names, 1, out);
}

wafer_status wafer__op_begin_two(struct wafer__op_call *call,
				 wafer_client *client, const char *op,
				 const wafer_tensor *a, wafer_copy_semantics sa,
				 const wafer_tensor *b, wafer_copy_semantics sb,
				 wafer_tensor *out)
{
	const wafer_tensor *views[2] = {a, b};
	const wafer_copy_semantics semantics[2] = {sa, sb};
	const char *names[2] = {"a", "b"};

	return wafer__op_begin(call, client, op, views, semantics, names, 2,
			       out);
}

wafer_status wafer__op_known(wafer_tensor *out,
			     const wafer_tensor *const *inputs, size_t n_inputs,
			     const char *fn, unsigned op, size_t count)
{
	if (op < count)
		return WAFER_OK;
	return wafer__op_reject(out, inputs, n_inputs,
				"%s: unknown operation %d", fn, (int)op);
}

wafer_status wafer__op_reject(wafer_tensor *out,
			      const wafer_tensor *const *inputs, size_t n_inputs,
			      const char *format, ...)
{
	va_list ap;

	wafer__op_clear_out(out, inputs, n_inputs);
	va_start(ap, format);
	wafer_status status =
		wafer__vfail(WAFER_ERROR_INVALID_ARGUMENT, format, ap);
	va_end(ap);
	return status;
}

wafer_status wafer__op_output(struct wafer__op_call *call, wafer_dtype dtype,
			      uint32_t rank, const uint64_t *shape,
			      unsigned can_alias)
{
	uint64_t count = wafer__view_shape_count(rank, shape);

	/* An output that takes an input's buffer over is a new reference of
	 * the caller's innermost scope, as a new buffer is (wafer_empty
	 * enters those): room for its entry first, since a donation cannot
	 * be undone once made. */
	wafer_status room = wafer__scopes_room(wafer__client_scopes(call->client));
	if (room != WAFER_OK)
		return wafer__fail_context(room, "%s: output", call->op);
	for (size_t i = 0; i < call->input_count; i++) {
		struct wafer__op_input *in = &call->inputs[i];
		if (in->semantics == WAFER_DONATE_INPUT)
			in->drop = true;
	}
	for (size_t i = 0; i < call->input_count; i++) {
		struct wafer__op_input *in = &call->inputs[i];
		if (in->semantics == WAFER_ALWAYS_COPY)
			continue;
		const char *why =
			reuse_obstacle(call, i, dtype, count, can_alias);
		if (why)
			log_not_reused(call, in, why);
		else
			try_reuse(call, i);
	}

	wafer_tensor out = wafer_tensor_view(call->out.handle, dtype, rank,
					     shape);
	if (call->reuse != WAFER_OP_NEW) {
		wafer_status entered = wafer__scopes_enter(
			wafer__client_scopes(call->client), out.handle);
		if (entered != WAFER_OK) {
			/* Not after the room above; as a refused launch. */
			wafer__client_drop(call->client, out.handle, NULL);
			for (size_t i = 0; i < call->input_count; i++)
				call->inputs[i].drop = false;
			return entered;
		}
	} else {
		/* An input given up (donated, but shared, so not reused) is
		 * dropped once the call succeeds: then the output's memory
		 * must be known to be there, on a queueing channel too, or
		 * the call would succeed and lose the input while its output
		 * has none (mutex and direct fail the call instead). */
		bool gives_up = false;
		for (size_t i = 0; i < call->input_count; i++)
			gives_up |= call->inputs[i].drop;
		wafer_status status =
			gives_up ? wafer__op_tensor_empty_now(call->client,
							      dtype, rank,
							      shape, &out)
				 : wafer_tensor_empty(call->client, dtype,
						      rank, shape, &out);
		if (status != WAFER_OK) {
			/* Nothing was given up yet: the inputs stay. */
			for (size_t i = 0; i < call->input_count; i++)
				call->inputs[i].drop = false;
			return wafer__fail_context(status, "%s: output", call->op);
		}
	}
	call->out = out;
	call->have_out = true;
	return WAFER_OK;
}

wafer_status wafer__op_finish(struct wafer__op_call *call, wafer_status status,
			      wafer_tensor *out)
{
	if (status != WAFER_OK) {
		/* A launch failed. The output goes; a donated input that the
		 * output had taken over goes with it (its old handle already
		 * reports the donation), the others are left to the caller. */
		if (call->have_out)
			wafer__client_drop(call->client, call->out.handle, NULL);
		if (!call->out_is_input)
			memset(out, 0, sizeof *out);
		return status;
	}
	for (size_t i = 0; i < call->input_count; i++) {
		struct wafer__op_input *in = &call->inputs[i];
		if (!in->drop)
			continue;
		/* Ordered after the launches: the memory is reused only
		 * once they have read it. The handle ends as donated. */
		wafer_status dropped = wafer__client_drop(
			call->client, in->view.t.handle, call->op);
		if (dropped != WAFER_OK && status == WAFER_OK)
			status = dropped;
	}
	*out = call->out;
	return status;
}

WAFER_API wafer_status wafer_handle_references(wafer_client *client,
					       wafer_handle handle,
					       uint32_t *out_count)
{
	if (out_count)
		*out_count = 0;
	if (!out_count || !client)
		return wafer__fail(WAFER_ERROR_INVALID_ARGUMENT,
				   "wafer_handle_references: %s is NULL",
				   out_count ? "client" : "out_count");
	return wafer__handle_table_refcount(wafer__client_handles(client), handle,
					    "handle_references", out_count);
}
