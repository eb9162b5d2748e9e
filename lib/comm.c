/* wafer — SPDX-License-Identifier: MIT
 *
 * comm.c: communicators and collectives (include/wafer/comm.h) over the
 * plugin's comm entries (plugin.h, ABI 1.4). The core checks every
 * argument once, in the caller's thread, so the plugin's comm_run only
 * ever sees a known kind, a SUM or MAX, a root below the size and ranges
 * inside their resources; a collective then goes through the client's
 * channel as a command (the COLLECTIVE row of lib/command.def, run by
 * wafer__comm_run_collective at the end of this file), ordered with the
 * kernels on every channel.
 *
 * Every open communicator is in one list (under |open_lock|): a
 * collective on a closed or made-up communicator is refused instead of
 * followed, and closing a client closes those it still has. The
 * wafer_comm pointer a caller holds is not the record's address but a
 * token made of an id no other communicator of the process gets (as
 * handles carry generations): malloc hands a closed record's address to
 * the next one, and a stale pointer must not name the new communicator.
 * A token is never dereferenced, only looked up in the list. */
#include "build-config.h"

#include <inttypes.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include <wafer/comm.h>
#include <wafer/ops.h>

#include "lib/bridge.h"
#include "lib/client.h"
#include "lib/comm.h"
#include "lib/config.h"
#include "lib/error.h"
#include "lib/loader.h"
#include "lib/kernel_table.h"
#include "lib/log.h"

struct wafer_comm {
	wafer_client *client;
	struct wafer_runtime_device *device;
	void *native; /* the plugin's */
	uint32_t rank;
	uint32_t size;
	unsigned group_depth; /* atomic: wafer_comm_group_begin's open */
	uintptr_t token; /* what the caller holds (a wafer_comm *) */
	struct wafer_comm *next; /* in open_comms */
};

/* [comm] timeout when unset: longer than any one collective takes, so
 * only a rank that is gone reaches it (PyTorch's NCCL default too). */
#define COMM_TIMEOUT_DEFAULT_S 600.0

static pthread_mutex_t open_lock = PTHREAD_MUTEX_INITIALIZER;
static struct wafer_comm *open_comms;
/* Odd, so a token is never NULL nor a record's (aligned) address; it
 * would come round only after 2^63 opens (2^31 on 32-bit systems). */
static uintptr_t next_token = 1;

static wafer_comm *comm_token(const struct wafer_comm *comm)
{
	return (wafer_comm *)comm->token;
}

static void comm_register(struct wafer_comm *comm)
{
	pthread_mutex_lock(&open_lock);
	comm->token = next_token;
	next_token += 2;
	comm->next = open_comms;
	open_comms = comm;
	pthread_mutex_unlock(&open_lock);
}

/* Takes the communicator |token| names out of the list and returns it;
 * NULL when none open has that token. */
static struct wafer_comm *comm_unregister(const wafer_comm *token)
{
	struct wafer_comm **p, *found = NULL;

	pthread_mutex_lock(&open_lock);
	for (p = &open_comms; *p; p = &(*p)->next)
		if ((*p)->token == (uintptr_t)token) {
			found = *p;
			*p = found->next;
			break;
		}
	pthread_mutex_unlock(&open_lock);
	return found;
}

/* The open communicator |token| names, or NULL. */
static struct wafer_comm *comm_find(const wafer_comm *token)
{
	struct wafer_comm *c;

	pthread_mutex_lock(&open_lock);
	for (c = open_comms; c && c->token != (uintptr_t)token; c = c->next)
		;
	pthread_mutex_unlock(&open_lock);
	return c;
}

bool wafer__comm_is_open(const wafer_comm *token)
{
	return comm_find(token) != NULL;
}

static bool has_collectives(const struct wafer_runtime_device *device)
{
	return device->info.capabilities & WAFER_CAP_COLLECTIVES;
}

static wafer_status not_supported(const char *fn,
				  const struct wafer_runtime_device *device)
{
	return wafer__fail(WAFER_ERROR_NOT_SUPPORTED,
			   "%s: collectives not supported by %s (its plugin "
			  "has no comm entries)%s",
			  fn, device->backend,
			  wafer__loader_minor_note(device->plugin, 4));
}

WAFER_API wafer_status wafer_comm_id_create(wafer_client *client,
					    wafer_comm_id *out_id)
{
	struct wafer_runtime_device *device;
	wafer_status status;

	if (!client || !out_id)
		return wafer__fail(WAFER_ERROR_INVALID_ARGUMENT,
				   "wafer_comm_id_create: %s is NULL",
				   client ? "out_id" : "client");
	memset(out_id, 0, sizeof *out_id);
	device = wafer__client_runtime_device(client);
	if (!has_collectives(device))
		return not_supported("wafer_comm_id_create", device);
	wafer__error_clear();
	status = device->plugin->server->comm_id(device->device, out_id);
	if (status != WAFER_OK) {
		memset(out_id, 0, sizeof *out_id);
		return wafer__fail_context(status, "wafer_comm_id_create: %s:%u",
					   device->backend, device->index);
	}
	return WAFER_OK;
}

/* [comm] timeout (wafer.conf(5)) in milliseconds, 0 for ever. */
wafer_status wafer__comm_timeout(wafer_client *client, uint64_t *out_ms)
{
	const struct wafer__config *config =
		wafer__runtime_get_config(wafer__client_runtime(client));
	double seconds;
	wafer_status status = wafer__config_get_double(
		config, "comm", "timeout", COMM_TIMEOUT_DEFAULT_S, &seconds);

	if (status == WAFER_OK && (seconds < 0 || seconds > 1e9))
		status = wafer__fail(WAFER_ERROR_CONFIG,
				     "%s: [comm] timeout is %g s: want 0 (for "
				     "ever) to 1e9",
				     wafer__config_lookup(config, "comm",
							  "timeout")
					     ->origin,
				     seconds);
	*out_ms = status == WAFER_OK ? (uint64_t)(seconds * 1000 + 0.5) : 0;
	if (status == WAFER_OK && seconds > 0 && *out_ms == 0)
		*out_ms = 1; /* below a millisecond, not for ever */
	return status;
}

/* The plugin's comm_open for one rank, and the communicator around it.
 * |fn| names the public call in errors. */
static wafer_status comm_open(const char *fn, wafer_client *client,
			      uint32_t rank, uint32_t size,
			      const wafer_comm_id *id, void *native,
			      struct wafer_comm **out_comm)
{
	static const wafer_comm_id zeros;
	struct wafer_runtime_device *device = wafer__client_runtime_device(client);
	struct wafer_comm_open_args args = {
		.struct_size = sizeof args,
		.rank = rank,
		.size = size,
		.id = id ? id : &zeros,
		.native = native,
	};
	struct wafer_comm *comm;
	wafer_status status = wafer__comm_timeout(client, &args.timeout_ms);

	if (status != WAFER_OK)
		return wafer__fail_context(status, "%s", fn);
	comm = calloc(1, sizeof *comm);
	if (!comm)
		return wafer__fail(WAFER_ERROR_OUT_OF_MEMORY,
				   "%s: out of host memory", fn);
	wafer__error_clear(); /* a plugin that sets no text leaves none */
	status = device->plugin->server->comm_open(device->device, &args,
						   &comm->native);
	if (status != WAFER_OK) {
		free(comm);
		return wafer__fail_context(status, "%s: %s:%u, rank %u of %u",
					   fn, device->backend, device->index,
					   rank, size);
	}
	comm->client = client;
	comm->device = device;
	comm->rank = rank;
	comm->size = size;
	comm_register(comm);
	*out_comm = comm;
	return WAFER_OK;
}

WAFER_API wafer_status wafer_comm_open(wafer_client *client,
				       const wafer_comm_options *options,
				       wafer_comm **out_comm)
{
	struct wafer_runtime_device *device;
	wafer_status status = wafer__check_not_null(
		"wafer_comm_open", client, "client", options, "options",
		out_comm, "out_comm");

	if (out_comm)
		*out_comm = NULL;
	if (status != WAFER_OK)
		return status;
	if (options->struct_size < offsetof(wafer_comm_options, id))
		return wafer__fail(WAFER_ERROR_INVALID_ARGUMENT,
				   "wafer_comm_open: options->struct_size is "
				   "%zu, at least %zu needed",
				   options->struct_size,
				   offsetof(wafer_comm_options, id));
	device = wafer__client_runtime_device(client);
	if (!has_collectives(device))
		return not_supported("wafer_comm_open", device);
	if (options->size == 0 || options->rank >= options->size)
		return wafer__fail(WAFER_ERROR_INVALID_ARGUMENT,
				   "wafer_comm_open: rank %u of size %u (want "
				  "rank < size)",
				  options->rank, options->size);
	struct wafer_comm *comm = NULL;
	status = comm_open(
		"wafer_comm_open", client, options->rank, options->size,
		WAFER_STRUCT_HAS(options, wafer_comm_options, id) ? options->id
								  : NULL,
		WAFER_STRUCT_HAS(options, wafer_comm_options, native)
			? options->native
			: NULL,
		&comm);
	if (status == WAFER_OK)
		*out_comm = comm_token(comm);
	return status;
}

/* The ranks of wafer_comm_open_group wait at this gate until every
 * thread has started: the plugin's comm_open blocks until all ranks
 * joined, so a rank must not call it while another might never come. */
struct group_gate {
	pthread_mutex_t lock;
	pthread_cond_t opened;
	enum { GATE_SHUT, GATE_GO, GATE_ABORT } state;
};

/* One rank of wafer_comm_open_group, on its own thread (rank 0 on the
 * caller's). */
struct group_rank {
	struct group_gate *gate;
	wafer_client *client;
	uint32_t rank;
	uint32_t size;
	const wafer_comm_id *id;
	struct wafer_comm *comm;
	wafer_status status;
	char *detail; /* the failure's, from this thread's error text */
};

static void *group_rank_main(void *data)
{
	struct group_rank *r = data;
	struct group_gate *gate = r->gate;
	bool go;

	pthread_mutex_lock(&gate->lock);
	while (gate->state == GATE_SHUT)
		pthread_cond_wait(&gate->opened, &gate->lock);
	go = gate->state == GATE_GO;
	pthread_mutex_unlock(&gate->lock);
	if (!go)
		return NULL;
	r->status = comm_open("wafer_comm_open_group", r->client, r->rank,
			      r->size, r->id, NULL, &r->comm);
	if (r->status != WAFER_OK)
		r->detail = strdup(wafer__error_detail());
	return NULL;
}

/* The clients of a group: all there, one runtime, one plugin with
 * collectives, each once (two ranks on one client would queue one's
 * collective behind the other's, which waits for it). */
static wafer_status check_group(wafer_client *const *clients, size_t count)
{
	struct wafer_runtime_device *first;

	for (size_t i = 0; i < count; i++)
		if (!clients[i])
			return wafer__fail(WAFER_ERROR_INVALID_ARGUMENT,
					   "wafer_comm_open_group: clients[%zu] "
					   "is NULL",
					   i);
	first = wafer__client_runtime_device(clients[0]);
	if (!has_collectives(first))
		return not_supported("wafer_comm_open_group", first);
	for (size_t i = 1; i < count; i++) {
		struct wafer_runtime_device *d =
			wafer__client_runtime_device(clients[i]);

		if (wafer__client_runtime(clients[i]) !=
		    wafer__client_runtime(clients[0]))
			return wafer__fail(WAFER_ERROR_INVALID_ARGUMENT,
					   "wafer_comm_open_group: clients[%zu] "
					   "and clients[0] are of two runtimes",
					   i);
		if (d->plugin != first->plugin)
			return wafer__fail(WAFER_ERROR_INVALID_ARGUMENT,
					   "wafer_comm_open_group: clients[%zu] "
					   "is on %s:%u, clients[0] on %s:%u: "
					   "one backend per communicator",
					   i, d->backend, d->index,
					   first->backend, first->index);
		for (size_t j = 0; j < i; j++)
			if (clients[j] == clients[i])
				return wafer__fail(
					WAFER_ERROR_INVALID_ARGUMENT,
					"wafer_comm_open_group: clients[%zu] "
					"and clients[%zu] are the same client "
					"(one rank per client)",
					j, i);
	}
	return WAFER_OK;
}

static void comm_free(struct wafer_comm *comm);

/* Starts a thread per rank but the first, opens the gate (or, when a
 * thread could not start, aborts them all), opens rank 0 here and joins
 * the others. */
static wafer_status open_ranks(struct group_rank *ranks, size_t count)
{
	struct group_gate gate = {.state = GATE_SHUT};
	pthread_t *threads = calloc(count, sizeof *threads);
	wafer_status status = WAFER_OK;
	size_t started;

	if (!threads)
		return wafer__fail(WAFER_ERROR_OUT_OF_MEMORY,
				   "wafer_comm_open_group: out of host memory");
	pthread_mutex_init(&gate.lock, NULL);
	pthread_cond_init(&gate.opened, NULL);
	for (size_t i = 0; i < count; i++)
		ranks[i].gate = &gate;
	for (started = 1; started < count; started++) {
		int err = pthread_create(&threads[started], NULL,
					 group_rank_main, &ranks[started]);
		if (err) {
			status = wafer__fail(WAFER_ERROR_INTERNAL,
					     "wafer_comm_open_group: cannot "
					     "start a thread for rank %zu of "
					     "%zu: %s",
					     started, count, strerror(err));
			break;
		}
	}
	pthread_mutex_lock(&gate.lock);
	gate.state = status == WAFER_OK ? GATE_GO : GATE_ABORT;
	pthread_cond_broadcast(&gate.opened);
	pthread_mutex_unlock(&gate.lock);
	if (status == WAFER_OK)
		group_rank_main(&ranks[0]);
	for (size_t i = 1; i < started; i++)
		pthread_join(threads[i], NULL);
	pthread_cond_destroy(&gate.opened);
	pthread_mutex_destroy(&gate.lock);
	free(threads);
	return status;
}

WAFER_API wafer_status wafer_comm_open_group(wafer_client *const *clients,
					     size_t count,
					     wafer_comm **out_comms)
{
	struct group_rank *ranks;
	wafer_comm_id id;
	wafer_status status;

	if (!clients || !out_comms)
		return wafer__fail(WAFER_ERROR_INVALID_ARGUMENT,
				   "wafer_comm_open_group: %s is NULL",
				   clients ? "out_comms" : "clients");
	if (count == 0 || count > UINT32_MAX)
		return wafer__fail(WAFER_ERROR_INVALID_ARGUMENT,
				   "wafer_comm_open_group: count is %zu",
				   count);
	memset(out_comms, 0, count * sizeof *out_comms);
	status = check_group(clients, count);
	if (status == WAFER_OK)
		status = wafer_comm_id_create(clients[0], &id);
	if (status != WAFER_OK)
		return status;
	ranks = calloc(count, sizeof *ranks);
	if (!ranks)
		return wafer__fail(WAFER_ERROR_OUT_OF_MEMORY,
				   "wafer_comm_open_group: out of host memory");
	for (size_t i = 0; i < count; i++)
		ranks[i] = (struct group_rank){
			.client = clients[i],
			.rank = (uint32_t)i,
			.size = (uint32_t)count,
			.id = &id,
		};
	status = open_ranks(ranks, count);
	/* The first rank that failed speaks for the group. */
	for (size_t i = 0; i < count && status == WAFER_OK; i++)
		if (ranks[i].status != WAFER_OK)
			status = wafer__fail(
				ranks[i].status, "%s",
				ranks[i].detail
					? ranks[i].detail
					: wafer_status_string(ranks[i].status));
	for (size_t i = 0; i < count; i++) {
		if (status == WAFER_OK)
			out_comms[i] = comm_token(ranks[i].comm);
		else if (ranks[i].comm)
			comm_free(ranks[i].comm);
		free(ranks[i].detail);
	}
	free(ranks);
	return status;
}

/* The COMM_GROUP command on |comm|'s client; nothing where the plugin has
 * no groups. */
static wafer_status comm_group_submit(struct wafer_comm *comm, bool begin)
{
	if (!comm->device->plugin->server->comm_group_begin)
		return WAFER_OK;
	struct wafer__command command = {
		.kind = WAFER_COMMAND_COMM_GROUP,
		.comm_group = {.begin = begin},
	};
	return wafer__client_submit(comm->client, &command);
}

/* Ends the groups |comm| left open (a close inside wafer_comm_group_begin):
 * their collectives go out, and the transport's group, the client's, no
 * longer holds back the collectives of its other communicators. */
static wafer_status end_groups(struct wafer_comm *comm)
{
	unsigned depth = __atomic_exchange_n(&comm->group_depth, 0,
					     __ATOMIC_RELAXED);
	wafer_status status = WAFER_OK;

	if (depth)
		wafer__log_warn("core",
				"communicator %p (rank %u of %u) closed with %u "
				"group%s begun and not ended: ending %s (call "
				"wafer_comm_group_end before wafer_comm_close)",
				(void *)comm_token(comm), comm->rank,
				comm->size, depth, depth == 1 ? "" : "s",
				depth == 1 ? "it" : "them");
	while (depth--) {
		wafer_status s = comm_group_submit(comm, false);

		if (status == WAFER_OK)
			status = s;
	}
	return status;
}

/* Ends the groups left open, synchronises the client's queue (the
 * collectives issued are done) and frees the plugin's communicator; the
 * first failure of these. */
static wafer_status comm_finish(struct wafer_comm *comm)
{
	struct wafer__command sync = {.kind = WAFER_COMMAND_SYNC};
	wafer_status ended = end_groups(comm);
	wafer_status status = wafer__client_submit(comm->client, &sync);

	if (ended != WAFER_OK)
		status = ended;
	comm->device->plugin->server->comm_close(comm->device->device,
						 comm->native);
	free(comm);
	return status;
}

/* Closes a communicator that was never handed out, keeping the calling
 * thread's error text (the failure being reported). */
static void comm_free(struct wafer_comm *comm)
{
	char *detail = strdup(wafer__error_detail());
	wafer_status kept = WAFER_ERROR_INTERNAL;

	comm_unregister(comm_token(comm));
	comm_finish(comm);
	if (detail)
		wafer__fail(kept, "%s", detail);
	free(detail);
}

WAFER_API wafer_status wafer_comm_close(wafer_comm *token)
{
	if (!token)
		return WAFER_OK;
	struct wafer_comm *comm = comm_unregister(token);
	if (!comm)
		return wafer__fail(WAFER_ERROR_INVALID_ARGUMENT,
				   "wafer_comm_close: communicator %p is not "
				   "open (closed twice, or its client closed)",
				   (void *)token);
	return comm_finish(comm);
}

void wafer__comm_client_closing(wafer_client *client)
{
	struct wafer_comm *mine = NULL, **p;

	pthread_mutex_lock(&open_lock);
	for (p = &open_comms; *p;) {
		struct wafer_comm *c = *p;

		if (c->client == client) {
			*p = c->next;
			c->next = mine;
			mine = c;
		} else {
			p = &c->next;
		}
	}
	pthread_mutex_unlock(&open_lock);
	while (mine) {
		struct wafer_comm *next = mine->next;

		wafer__log_warn("core",
				"client on %s:%u closed with communicator %p "
				"(rank %u of %u) still open: closing it "
				"(close communicators before their client)",
				mine->device->backend, mine->device->index,
				(void *)comm_token(mine), mine->rank,
				mine->size);
		comm_finish(mine);
		mine = next;
	}
}

/* The plugin's comm_split for one rank of |parent|, after the
 * collectives issued on its client ran (the split is a collective of
 * the transport, issued here on the caller's thread, so nothing of
 * |parent| may still be in flight on the client's own). */
WAFER_API wafer_status wafer_comm_split(wafer_comm *token, int32_t color,
					int32_t key, wafer_comm **out_comm)
{
	struct wafer_comm *parent, *comm;
	struct wafer__command sync = {.kind = WAFER_COMMAND_SYNC};
	wafer_status status;

	if (out_comm)
		*out_comm = NULL;
	if (!token || !out_comm)
		return wafer__fail(WAFER_ERROR_INVALID_ARGUMENT,
				   "wafer_comm_split: %s is NULL",
				   token ? "out_comm" : "comm");
	parent = comm_find(token);
	if (!parent)
		return wafer__fail(WAFER_ERROR_INVALID_ARGUMENT,
				   "wafer_comm_split: communicator %p is not "
				   "open (closed, or its client closed)",
				   (void *)token);
	if (color < WAFER_COMM_SPLIT_NONE)
		return wafer__fail(WAFER_ERROR_INVALID_ARGUMENT,
				   "wafer_comm_split: colour %" PRId32 " (want "
				   "0 or more, or WAFER_COMM_SPLIT_NONE)",
				   color);
	struct wafer_runtime_device *device = parent->device;
	if (!device->plugin->server->comm_split)
		return wafer__fail(WAFER_ERROR_NOT_SUPPORTED,
				   "wafer_comm_split: sub-communicators not "
				   "supported by %s (its plugin has no "
				   "comm_split, ABI 1.7)",
				   device->backend);
	status = wafer__client_submit(parent->client, &sync);
	if (status != WAFER_OK)
		return wafer__fail_context(status, "wafer_comm_split: rank %u "
					   "of %u, waiting for its collectives",
					   parent->rank, parent->size);
	comm = calloc(1, sizeof *comm);
	if (!comm)
		return wafer__fail(WAFER_ERROR_OUT_OF_MEMORY,
				   "wafer_comm_split: out of host memory");
	wafer__error_clear();
	status = device->plugin->server->comm_split(
		device->device, parent->native, color, key, &comm->native,
		&comm->rank, &comm->size);
	if (status != WAFER_OK || !comm->native) {
		free(comm);
		if (status != WAFER_OK)
			return wafer__fail_context(
				status,
				"wafer_comm_split: %s:%u, rank %u of %u, colour "
				"%" PRId32 ", key %" PRId32,
				device->backend, device->index, parent->rank,
				parent->size, color, key);
		return WAFER_OK; /* WAFER_COMM_SPLIT_NONE */
	}
	comm->client = parent->client;
	comm->device = device;
	comm_register(comm);
	*out_comm = comm_token(comm);
	return WAFER_OK;
}

WAFER_API uint32_t wafer_comm_rank(const wafer_comm *token)
{
	const struct wafer_comm *comm = token ? comm_find(token) : NULL;
	return comm ? comm->rank : 0;
}

WAFER_API uint32_t wafer_comm_size(const wafer_comm *token)
{
	const struct wafer_comm *comm = token ? comm_find(token) : NULL;
	return comm ? comm->size : 0;
}

/*===----------------------------------------------------------------------===
 * Collectives
 *===----------------------------------------------------------------------===*/

/* A handle of the communicator's client holding at least |count| *
 * |multiple| elements of |elem| bytes. */
static wafer_status check_operand(const char *fn, const char *name,
				  struct wafer_comm *comm, wafer_handle handle,
				  size_t count, size_t multiple, size_t elem,
				  struct wafer__handle_slot **out_slot)
{
	struct wafer__handle_slot *slot;
	size_t bytes;
	wafer_status status = wafer__handle_table_lookup(
		wafer__client_handles(comm->client), handle, name, &slot);

	if (status != WAFER_OK)
		return wafer__fail_context(status, "%s", fn);
	if (__builtin_mul_overflow(count, multiple, &bytes) ||
	    __builtin_mul_overflow(bytes, elem, &bytes))
		return wafer__fail(WAFER_ERROR_INVALID_ARGUMENT,
				   "%s: %s: %zu x %zu elements of %zu bytes "
				   "overflow",
				   fn, name, count, multiple, elem);
	if (slot->size < bytes)
		return wafer__fail(WAFER_ERROR_OUT_OF_RANGE,
				   "%s: %s handle 0x%016" PRIx64 " holds %zu "
				   "bytes, %zu needed",
				   fn, name, handle.bits, slot->size, bytes);
	*out_slot = slot;
	return WAFER_OK;
}

/* A send's or recv's |peer|: another rank of |comm|, on a plugin that
 * knows the point-to-point kinds (ABI 1.6). */
static wafer_status check_peer(const char *fn, const struct wafer_comm *comm,
			       uint32_t peer)
{
	if (comm->device->plugin->abi_minor < 6)
		return wafer__fail(WAFER_ERROR_NOT_SUPPORTED,
				   "%s: send and recv not supported by %s (its "
				   "plugin is built for ABI 1.%u, they need "
				   "1.6)",
				   fn, comm->device->backend,
				   comm->device->plugin->abi_minor);
	if (peer >= comm->size || peer == comm->rank)
		return wafer__fail(WAFER_ERROR_INVALID_ARGUMENT,
				   "%s: peer %u, this is rank %u of %u (the "
				   "peer is another rank)",
				   fn, peer, comm->rank, comm->size);
	return WAFER_OK;
}

/* Checks a collective and queues it. |src_multiple| and |dst_multiple|
 * are how many times |count| elements each side holds (all_gather's dst
 * and reduce_scatter's src hold size times). */
static wafer_status collective(const char *fn, wafer_comm *token,
			       wafer_collective_kind kind, wafer_handle src,
			       wafer_handle dst, size_t count,
			       wafer_dtype dtype, wafer_reduce_op op,
			       uint32_t root)
{
	struct wafer__handle_slot *src_slot = NULL, *dst_slot;
	size_t elem, src_multiple = 1, dst_multiple = 1;
	bool reduces = kind == WAFER_COLLECTIVE_ALL_REDUCE ||
		       kind == WAFER_COLLECTIVE_REDUCE_SCATTER;
	bool point_to_point = kind == WAFER_COLLECTIVE_SEND ||
			      kind == WAFER_COLLECTIVE_RECV;
	wafer_status status;

	if (!token)
		return wafer__fail(WAFER_ERROR_INVALID_ARGUMENT, "%s: comm is NULL",
				   fn);
	struct wafer_comm *comm = comm_find(token);
	if (!comm)
		return wafer__fail(WAFER_ERROR_INVALID_ARGUMENT,
				   "%s: communicator %p is not open (closed, "
				  "or its client closed)",
				  fn, (void *)token);
	elem = wafer_dtype_size(dtype);
	if (!elem)
		return wafer__fail(WAFER_ERROR_INVALID_ARGUMENT,
				   "%s: dtype %d is no element type", fn,
				   (int)dtype);
	if (reduces && op != WAFER_REDUCE_SUM && op != WAFER_REDUCE_MAX)
		return wafer__fail(WAFER_ERROR_INVALID_ARGUMENT,
				   "%s: op %d: collectives reduce with "
				   "WAFER_REDUCE_SUM or WAFER_REDUCE_MAX (for a "
				  "mean, SUM and divide by the size)",
				  fn, (int)op);
	if (kind == WAFER_COLLECTIVE_BROADCAST && root >= comm->size)
		return wafer__fail(WAFER_ERROR_INVALID_ARGUMENT,
				   "%s: root %u, communicator of size %u", fn,
				   root, comm->size);
	if (point_to_point) {
		status = check_peer(fn, comm, root);
		if (status != WAFER_OK)
			return status;
	}
	if (count == 0)
		return WAFER_OK;
	if (kind == WAFER_COLLECTIVE_ALL_GATHER)
		dst_multiple = comm->size;
	if (kind == WAFER_COLLECTIVE_REDUCE_SCATTER)
		src_multiple = comm->size;
	if ((kind == WAFER_COLLECTIVE_ALL_GATHER ||
	     kind == WAFER_COLLECTIVE_REDUCE_SCATTER) &&
	    src.bits == dst.bits)
		return wafer__fail(WAFER_ERROR_INVALID_ARGUMENT,
				   "%s: src and dst are the same handle "
				   "0x%016" PRIx64 " (in place only for "
				  "all_reduce and broadcast)",
				  fn, src.bits);
	if (kind == WAFER_COLLECTIVE_SEND) {
		/* Only src is read; it stands for dst on the queue. */
		status = check_operand(fn, "src", comm, src, count, 1, elem,
				       &src_slot);
		dst_slot = src_slot;
	} else {
		status = check_operand(fn, "dst", comm, dst, count,
				       dst_multiple, elem, &dst_slot);
	}
	/* A broadcast reads src on the root only, a recv never. */
	if (status == WAFER_OK && !point_to_point &&
	    (kind != WAFER_COLLECTIVE_BROADCAST || root == comm->rank))
		status = check_operand(fn, "src", comm, src, count,
				       src_multiple, elem, &src_slot);
	if (status != WAFER_OK)
		return status;

	struct wafer__command command = {
		.kind = WAFER_COMMAND_COLLECTIVE,
		.collective = {
			.comm = comm->native,
			.token = token,
			.src = src_slot,
			.dst = dst_slot,
			.args = {
				.struct_size = sizeof(struct wafer_collective),
				.kind = kind,
				.op = reduces ? op : WAFER_REDUCE_SUM,
				.dtype = dtype,
				.count = count,
				.root = root,
			},
		},
	};
	return wafer__client_submit(comm->client, &command);
}

WAFER_API wafer_status wafer_comm_all_reduce(wafer_comm *comm,
					     wafer_handle src, wafer_handle dst,
					     size_t count, wafer_dtype dtype,
					     wafer_reduce_op op)
{
	return collective("wafer_comm_all_reduce", comm,
			  WAFER_COLLECTIVE_ALL_REDUCE, src, dst, count, dtype,
			  op, 0);
}

WAFER_API wafer_status wafer_comm_broadcast(wafer_comm *comm,
					    wafer_handle src, wafer_handle dst,
					    size_t count, wafer_dtype dtype,
					    uint32_t root)
{
	return collective("wafer_comm_broadcast", comm,
			  WAFER_COLLECTIVE_BROADCAST, src, dst, count, dtype,
			  WAFER_REDUCE_SUM, root);
}

WAFER_API wafer_status wafer_comm_all_gather(wafer_comm *comm,
					     wafer_handle src, wafer_handle dst,
					     size_t count, wafer_dtype dtype)
{
	return collective("wafer_comm_all_gather", comm,
			  WAFER_COLLECTIVE_ALL_GATHER, src, dst, count, dtype,
			  WAFER_REDUCE_SUM, 0);
}

WAFER_API wafer_status wafer_comm_reduce_scatter(wafer_comm *comm,
						 wafer_handle src,
						 wafer_handle dst,
						 size_t count,
						 wafer_dtype dtype,
						 wafer_reduce_op op)
{
	return collective("wafer_comm_reduce_scatter", comm,
			  WAFER_COLLECTIVE_REDUCE_SCATTER, src, dst, count,
			  dtype, op, 0);
}

WAFER_API wafer_status wafer_comm_send(wafer_comm *comm, wafer_handle src,
				       size_t count, wafer_dtype dtype,
				       uint32_t peer)
{
	return collective("wafer_comm_send", comm, WAFER_COLLECTIVE_SEND, src,
			  src, count, dtype, WAFER_REDUCE_SUM, peer);
}

WAFER_API wafer_status wafer_comm_recv(wafer_comm *comm, wafer_handle dst,
				       size_t count, wafer_dtype dtype,
				       uint32_t peer)
{
	return collective("wafer_comm_recv", comm, WAFER_COLLECTIVE_RECV, dst,
			  dst, count, dtype, WAFER_REDUCE_SUM, peer);
}

/* begin or end of a group: a command on the client's channel, so the
 * plugin's comm_group_begin/end run on the thread that issues the
 * collectives, in their order; nothing where the plugin has none. */
static wafer_status comm_group(const char *fn, wafer_comm *token, bool begin)
{
	struct wafer_comm *comm = token ? comm_find(token) : NULL;

	if (!comm)
		return wafer__fail(WAFER_ERROR_INVALID_ARGUMENT,
				   token ? "%s: communicator %p is not open "
					   "(closed, or its client closed)"
					 : "%s: comm is NULL",
				   fn, (void *)token);
	if (begin) {
		__atomic_add_fetch(&comm->group_depth, 1, __ATOMIC_RELAXED);
	} else {
		unsigned depth = __atomic_load_n(&comm->group_depth,
						 __ATOMIC_RELAXED);
		do {
			if (depth == 0)
				return wafer__fail(
					WAFER_ERROR_INVALID_ARGUMENT,
					"%s: no group begun on communicator "
					"%p (rank %u of %u): call "
					"wafer_comm_group_begin first",
					fn, (void *)token, comm->rank,
					comm->size);
		} while (!__atomic_compare_exchange_n(
			&comm->group_depth, &depth, depth - 1, false,
			__ATOMIC_RELAXED, __ATOMIC_RELAXED));
	}
	return comm_group_submit(comm, begin);
}

WAFER_API wafer_status wafer_comm_group_begin(wafer_comm *comm)
{
	return comm_group("wafer_comm_group_begin", comm, true);
}

WAFER_API wafer_status wafer_comm_group_end(wafer_comm *comm)
{
	return comm_group("wafer_comm_group_end", comm, false);
}

wafer_status wafer__comm_run_group(struct wafer__bridge *bridge,
				   struct wafer__command *c)
{
	const struct wafer_server_ops *server = bridge->device->plugin->server;
	wafer_status status =
		c->comm_group.begin
			? server->comm_group_begin(bridge->plugin_device)
			: server->comm_group_end(bridge->plugin_device);

	if (status != WAFER_OK)
		return wafer__fail_context(status, "%s on %s:%u",
					   c->comm_group.begin
						   ? "comm_group_begin"
						   : "comm_group_end",
					   bridge->device->backend,
					   bridge->device->index);
	return WAFER_OK;
}

/* The device side (the COLLECTIVE row of lib/command.def), on the
 * client's bridge. */

static const char *collective_name(wafer_collective_kind kind)
{
	switch (kind) {
	case WAFER_COLLECTIVE_ALL_REDUCE:
		return "all_reduce";
	case WAFER_COLLECTIVE_BROADCAST:
		return "broadcast";
	case WAFER_COLLECTIVE_ALL_GATHER:
		return "all_gather";
	case WAFER_COLLECTIVE_REDUCE_SCATTER:
		return "reduce_scatter";
	case WAFER_COLLECTIVE_SEND:
		return "send";
	case WAFER_COLLECTIVE_RECV:
		return "recv";
	}
	return "collective";
}

/* A collective on the queue: its handles become resources now, as a
 * launch's bindings do. A broadcast's missing src (off the root) reads
 * as dst: the plugin reads src on the root only. */
wafer_status wafer__comm_run_collective(struct wafer__bridge *bridge,
					struct wafer__command *c)
{
	struct wafer__handle_slot *src = c->collective.src, *dst =
							   c->collective.dst;
	struct wafer_collective *args = &c->collective.args;
	const char *name = collective_name(args->kind);
	wafer_status status = wafer__bridge_check_backed(dst, name);

	if (status == WAFER_OK && src)
		status = wafer__bridge_check_backed(src, name);
	if (status != WAFER_OK)
		return status;
	if (!src)
		src = dst;
	uint32_t l = wafer__command_lane(c);
	struct wafer__handle_slot *touched[2] = {src, dst};
	status = wafer__lanes_touch(&bridge->lanes, l, touched, 2);
	if (status != WAFER_OK)
		return status;
	args->src = src->slice.resource;
	args->src_offset = src->slice.offset;
	args->dst = dst->slice.resource;
	args->dst_offset = dst->slice.offset;
	bridge->lanes.lane[l].dirty = true;
	status = bridge->device->plugin->server->comm_run(
		bridge->plugin_device, bridge->lanes.lane[l].queue,
		c->collective.comm, args);
	if (status != WAFER_OK)
		return wafer__fail_context(status, "%s of %zu elements on %s:%u",
					   name, args->count,
					   bridge->device->backend,
					   bridge->device->index);
	return WAFER_OK;
}

