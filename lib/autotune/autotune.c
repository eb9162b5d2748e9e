/* wafer — SPDX-License-Identifier: MIT
 *
 * autotune.c: the public entries of autotune.h, operation states, and the
 * way from a key to a choice (see lib/autotune/autotune.h for the parts).
 *
 * wafer_execute_autotune's fast path — key function, anchoring, hash,
 * lock-free probe, run — takes no lock and allocates nothing. A miss
 * takes the tuner's lock and, in order: looks again (another thread may
 * have just tuned the key), finds or creates the operation's state on the
 * device, sees which candidates the device has for the key, and then
 * takes the default (mode off), the cache file's choice, or measures. */
#include "build-config.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lib/autotune/autotune.h"
#include "lib/hash.h"
#include "lib/client.h"
#include "lib/queue.h"
#include "lib/error.h"
#include "lib/kernel_table.h"
#include "lib/log.h"

/*===----------------------------------------------------------------------===
 * The tuner
 *===----------------------------------------------------------------------===*/

wafer_status wafer__tuner_create(const struct wafer__config *config,
				 bool tolerant, struct wafer__tuner **out_tuner)
{
	struct wafer__tuner *t = calloc(1, sizeof *t);
	pthread_mutexattr_t attr;
	wafer_status status;

	*out_tuner = NULL;
	if (!t)
		return wafer__fail(WAFER_ERROR_OUT_OF_MEMORY,
				   "autotune: out of host memory");
	status = wafer__tune_settings_load(config, tolerant, &t->settings);
	if (status != WAFER_OK) {
		free(t);
		return status;
	}
	status = wafer__tune_index_init(&t->index);
	if (status != WAFER_OK) {
		wafer__tune_settings_fini(&t->settings);
		free(t);
		return status;
	}
	pthread_mutexattr_init(&attr);
	pthread_mutexattr_settype(&attr, PTHREAD_MUTEX_RECURSIVE);
	pthread_mutex_init(&t->lock, &attr);
	pthread_mutexattr_destroy(&attr);
	wafer__log_debug("autotune", "mode %s, warmup %u, samples %u, "
			 "eliminate_ratio %g, cache %s (%s)",
			 wafer__tune_mode_name(t->settings.mode),
			 t->settings.warmup, t->settings.samples,
			 t->settings.eliminate_ratio,
			 t->settings.cache_dir ? t->settings.cache_dir : "none",
			 t->settings.cache_dir ? t->settings.cache_dir_origin
					      : "no directory");
	*out_tuner = t;
	return WAFER_OK;
}

static void op_free(struct wafer__tune_op *op)
{
	for (size_t i = 0; i < op->candidate_count; i++) {
		free(op->candidates[i].name);
		free(op->candidates[i].kernel);
		free(op->candidates[i].variant);
	}
	free(op->candidates);
	free(op->entries);
	free(op->path);
	free(op);
}

void wafer__tuner_destroy(struct wafer__tuner *tuner)
{
	if (!tuner)
		return;
	wafer__tune_index_fini(&tuner->index);
	while (tuner->ops) {
		struct wafer__tune_op *op = tuner->ops;
		tuner->ops = op->next;
		op_free(op);
	}
	pthread_mutex_destroy(&tuner->lock);
	wafer__tune_settings_fini(&tuner->settings);
	free(tuner);
}

/*===----------------------------------------------------------------------===
 * Checking a tunable
 *===----------------------------------------------------------------------===*/

static bool is_name_char(char c, bool candidate)
{
	return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
	       (c >= '0' && c <= '9') || c == '_' || c == '.' || c == '-' ||
	       (candidate && (c == ':' || c == '+'));
}

/* Operation names go into file names: [A-Za-z0-9_.-]; candidate names
 * also take ':' and '+' ("openblas", "tile:64x64"). */
static bool valid_name(const char *name, bool candidate)
{
	size_t n = 0;

	if (!name || !name[0] || (!candidate && name[0] == '.'))
		return false;
	for (; name[n]; n++)
		if (n >= WAFER_TUNE_NAME_MAX || !is_name_char(name[n], candidate))
			return false;
	return true;
}

/* Candidate |i| of the caller's array, stepped by the struct_size the
 * caller compiled with (a later header may have appended fields). */
static const wafer_autotune_candidate *listed(const wafer_tunable *t, size_t i)
{
	return (const wafer_autotune_candidate *)((const char *)t->candidates +
						  i * t->candidates[0].struct_size);
}

/* Candidate |i|'s name is not one of an earlier candidate's. */
static wafer_status check_unique(const wafer_tunable *t, size_t i)
{
	const char *name = listed(t, i)->name;
	for (size_t k = 0; k < i; k++)
		if (strcmp(listed(t, k)->name, name) == 0)
			return wafer__fail(WAFER_ERROR_INVALID_ARGUMENT,
					   "autotune %s: two candidates are "
					   "named %s",
					   t->name, name);
	return WAFER_OK;
}

/* The first candidate struct had no kernel_ref. */
#define CANDIDATE_MIN_SIZE offsetof(wafer_autotune_candidate, kernel_ref)

/* The candidate's kernel_ref where its struct has one, else NULL. */
static const wafer_kernel_ref *listed_ref(const wafer_autotune_candidate *c)
{
	return WAFER_STRUCT_HAS(c, wafer_autotune_candidate, kernel_ref)
		       ? c->kernel_ref
		       : NULL;
}

static wafer_status check_candidate(const wafer_tunable *t, size_t i)
{
	const wafer_autotune_candidate *c = listed(t, i);

	if (c->struct_size < CANDIDATE_MIN_SIZE)
		return wafer__fail(WAFER_ERROR_INVALID_ARGUMENT,
				   "autotune %s: candidate %zu has struct_size "
				   "%zu, expected %zu",
				   t->name, i, c->struct_size, sizeof *c);
	const wafer_kernel_ref *ref = listed_ref(c);
	if (!valid_name(c->name, true))
		return wafer__fail(WAFER_ERROR_INVALID_ARGUMENT,
				   "autotune %s: candidate %zu has no valid name "
				   "(1 to %d of A-Z a-z 0-9 _ . - : +)",
				   t->name, i, WAFER_TUNE_NAME_MAX);
	if (!(c->variant || ref) == !c->run)
		return wafer__fail(WAFER_ERROR_INVALID_ARGUMENT,
				   "autotune %s: candidate %s must set exactly "
				   "one of variant or kernel_ref (a kernel) and "
				   "run (a function)",
				   t->name, c->name);
	if (ref && !t->bind)
		return wafer__fail(WAFER_ERROR_INVALID_ARGUMENT,
				   "autotune %s: kernel candidate %s needs the "
				   "operation's bind function",
				   t->name, c->name);
	if (ref)
		return check_unique(t, i);
	if (c->variant && !(c->kernel || t->kernel))
		return wafer__fail(WAFER_ERROR_INVALID_ARGUMENT,
				   "autotune %s: kernel candidate %s names no "
				   "kernel, and the operation has none",
				   t->name, c->name);
	if (c->variant && !t->bind)
		return wafer__fail(WAFER_ERROR_INVALID_ARGUMENT,
				   "autotune %s: kernel candidate %s needs the "
				   "operation's bind function",
				   t->name, c->name);
	return check_unique(t, i);
}

static wafer_status check_tunable(const wafer_tunable *t)
{
	if (t->struct_size < sizeof *t)
		return wafer__fail(WAFER_ERROR_INVALID_ARGUMENT,
				   "autotune: tunable struct_size is %zu, "
				   "expected %zu",
				   t->struct_size, sizeof *t);
	if (!valid_name(t->name, false))
		return wafer__fail(WAFER_ERROR_INVALID_ARGUMENT,
				   "autotune: the operation has no valid name (1 "
				  "to %d of A-Z a-z 0-9 _ . -)",
				  WAFER_TUNE_NAME_MAX);
	if (!t->key)
		return wafer__fail(WAFER_ERROR_INVALID_ARGUMENT,
				   "autotune %s: no key function", t->name);
	if (t->candidate_count && !t->candidates)
		return wafer__fail(WAFER_ERROR_INVALID_ARGUMENT,
				   "autotune %s: %zu candidates but the array "
				   "is NULL",
				   t->name, t->candidate_count);
	if (!t->candidate_count && !(t->flags & WAFER_TUNABLE_KERNEL_VARIANTS))
		return wafer__fail(WAFER_ERROR_INVALID_ARGUMENT,
				   "autotune %s: no candidates", t->name);
	if ((t->flags & WAFER_TUNABLE_KERNEL_VARIANTS) &&
	    (!t->kernel || !t->bind))
		return wafer__fail(WAFER_ERROR_INVALID_ARGUMENT,
				   "autotune %s: WAFER_TUNABLE_KERNEL_VARIANTS "
				   "needs kernel and bind",
				   t->name);
	if (t->flags & ~WAFER_TUNABLE_KERNEL_VARIANTS)
		return wafer__fail(WAFER_ERROR_INVALID_ARGUMENT,
				   "autotune %s: unknown flags 0x%x", t->name,
				   (unsigned)(t->flags &
					      ~WAFER_TUNABLE_KERNEL_VARIANTS));
	if (t->candidate_count > WAFER_TUNE_MAX_CANDIDATES)
		return wafer__fail(WAFER_ERROR_INVALID_ARGUMENT,
				   "autotune %s: %zu candidates, at most %d",
				   t->name, t->candidate_count,
				   WAFER_TUNE_MAX_CANDIDATES);
	for (size_t i = 0; i < t->candidate_count; i++) {
		wafer_status status = check_candidate(t, i);
		if (status != WAFER_OK)
			return status;
	}
	return WAFER_OK;
}

/*===----------------------------------------------------------------------===
 * Operation states
 *===----------------------------------------------------------------------===*/

bool wafer__tune_has_candidate(const struct wafer__tune_op *op,
			       const char *name)
{
	for (size_t i = 0; i < op->candidate_count; i++)
		if (strcmp(op->candidates[i].name, name) == 0)
			return true;
	return false;
}

static char *copy_or_null(const char *s, bool *failed)
{
	char *copy = s ? strdup(s) : NULL;

	if (s && !copy)
		*failed = true;
	return copy;
}

/* |by_ref|: a kernel candidate by ref, the tunable's candidate
 * |listed|. */
static wafer_status add_candidate(struct wafer__tune_op *op, const char *name,
				  const char *kernel, const char *variant,
				  bool by_ref, size_t listed,
				  wafer_autotune_run_fn run, const void *data)
{
	struct wafer__tune_candidate *c = &op->candidates[op->candidate_count];
	bool failed = false;

	*c = (struct wafer__tune_candidate){
		.name = copy_or_null(name, &failed),
		.kernel = copy_or_null(kernel, &failed),
		.variant = copy_or_null(variant, &failed),
		.by_ref = by_ref,
		.listed = listed,
		.run = run,
		.data = data,
	};
	op->candidate_count++; /* freed with the op, also when incomplete */
	if (failed)
		return wafer__fail(WAFER_ERROR_OUT_OF_MEMORY,
				   "autotune: out of host memory");
	return WAFER_OK;
}

/* The listed candidates, then the plugin's variants of t->kernel that no
 * listed candidate is named after. */
static wafer_status resolve_candidates(wafer_client *client,
				       struct wafer__tune_op *op)
{
	const wafer_tunable *t = op->tunable;
	const struct wafer__kernel_table *kernels = wafer__client_kernels(client);
	wafer_status status = WAFER_OK;

	op->candidates = calloc(WAFER_TUNE_MAX_CANDIDATES,
				sizeof *op->candidates);
	if (!op->candidates)
		return wafer__fail(WAFER_ERROR_OUT_OF_MEMORY,
				   "autotune: out of host memory");
	for (size_t i = 0; i < t->candidate_count && status == WAFER_OK; i++) {
		const wafer_autotune_candidate *c = listed(t, i);
		if (listed_ref(c))
			status = add_candidate(op, c->name, NULL, NULL, true, i,
					       NULL, NULL);
		else
			status = add_candidate(
				op, c->name,
				c->variant ? (c->kernel ? c->kernel : t->kernel)
					   : NULL,
				c->variant, false, 0, c->run, c->data);
	}
	if (!(t->flags & WAFER_TUNABLE_KERNEL_VARIANTS))
		return status;
	for (size_t i = 0; i < kernels->kernel_count && status == WAFER_OK;
	     i++) {
		const struct wafer_kernel *k = wafer__kernel_table_at(kernels, i);
		if (strcmp(k->op, t->kernel) != 0 ||
		    wafer__tune_has_candidate(op, k->variant))
			continue;
		if (!valid_name(k->variant, true)) {
			wafer__log_warn("autotune",
					"%s: variant '%s' of kernel %s is not "
					"usable as a candidate name; skipped",
					op->device->backend, k->variant, k->op);
			continue;
		}
		if (op->candidate_count == WAFER_TUNE_MAX_CANDIDATES) {
			wafer__log_warn("autotune",
					"%s: more than %d candidates; the rest "
					"are skipped",
					t->name, WAFER_TUNE_MAX_CANDIDATES);
			break;
		}
		status = add_candidate(op, k->variant, t->kernel, k->variant,
				       false, 0,
				       NULL, NULL);
	}
	return status;
}

/* Names the cache file: what must match for a choice to carry over. */
static uint64_t op_checksum(const struct wafer__tune_op *op)
{
	const struct wafer_runtime_device *d = op->device;
	const char *parts[] = {
		"wafer-autotune 1", op->tunable->name, d->backend,
		d->plugin->version ? d->plugin->version : "?", d->info.name,
	};
	uint64_t h = WAFER_FNV_INIT;

	for (size_t i = 0; i < sizeof parts / sizeof parts[0]; i++)
		h = wafer__fnv_bytes(h, parts[i], strlen(parts[i]) + 1);
	for (size_t i = 0; i < op->candidate_count; i++)
		h = wafer__fnv_bytes(h, op->candidates[i].name,
				   strlen(op->candidates[i].name) + 1);
	return h;
}

/* The state of |t| on the client's device, created on first use. Called
 * with the tuner's lock held. */
static wafer_status find_op(struct wafer__tuner *tuner, wafer_client *client,
			    const wafer_tunable *t, struct wafer__tune_op **out)
{
	const struct wafer_runtime_device *device =
		wafer__client_runtime_device(client);
	struct wafer__tune_op *op;
	wafer_status status;

	for (op = tuner->ops; op; op = op->next) {
		if (op->tunable == t && op->device == device) {
			*out = op;
			return WAFER_OK;
		}
	}
	*out = NULL;
	status = check_tunable(t);
	if (status != WAFER_OK)
		return status;
	op = calloc(1, sizeof *op);
	if (!op)
		return wafer__fail(WAFER_ERROR_OUT_OF_MEMORY,
				   "autotune: out of host memory");
	op->tunable = t;
	op->device = device;
	status = resolve_candidates(client, op);
	if (status == WAFER_OK) {
		op->checksum = op_checksum(op);
		status = wafer__tune_file_path(&tuner->settings, op);
	}
	if (status != WAFER_OK) {
		op_free(op);
		return status;
	}
	if (!op->path && tuner->settings.mode != WAFER_TUNE_OFF &&
	    !tuner->warned_no_dir) {
		tuner->warned_no_dir = true;
		wafer__log_warn("autotune",
				"no cache directory (neither [autotune] "
			       "cache_dir, XDG_CACHE_HOME nor HOME is set): "
			       "choices last only for this process");
	}
	wafer__log_debug("autotune", "%s on %s:%u: %zu candidates, cache %s",
			 t->name, device->backend, device->index,
			 op->candidate_count, op->path ? op->path : "none");
	op->next = tuner->ops;
	tuner->ops = op;
	*out = op;
	return WAFER_OK;
}

static const struct wafer__tune_candidate *
candidate_named(const struct wafer__tune_op *op, const char *name)
{
	for (size_t i = 0; i < op->candidate_count; i++)
		if (strcmp(op->candidates[i].name, name) == 0)
			return &op->candidates[i];
	return NULL;
}

/*===----------------------------------------------------------------------===
 * Running a candidate
 *===----------------------------------------------------------------------===*/

wafer_status wafer__tune_run(wafer_client *client, const wafer_tunable *tunable,
			     const struct wafer__tune_candidate *candidate,
			     const void *inputs)
{
	wafer_execute_args args;
	wafer_status status;

	if (candidate->run)
		return candidate->run(client, inputs, candidate->data);
	memset(&args, 0, sizeof args);
	args.struct_size = sizeof args;
	status = tunable->bind(inputs, &args);
	if (status != WAFER_OK)
		return wafer__fail(status, "autotune %s: bind failed (%s)",
				   tunable->name, wafer_status_string(status));
	args.kernel = candidate->kernel;
	args.variant = candidate->variant;
	if (candidate->by_ref) {
		args.kernel_ref = listed_ref(listed(tunable, candidate->listed));
		if (!args.kernel_ref)
			return wafer__fail(WAFER_ERROR_INVALID_ARGUMENT,
					   "autotune %s: candidate %s has no "
					   "kernel_ref any more",
					   tunable->name, candidate->name);
	}
	return wafer_execute(client, &args);
}

/* Marks in |available| (indices into op->candidates) those the device
 * can run for |inputs|: every client-side one, every one by ref (a ref
 * that fails, of a released program or another client, disqualifies its
 * candidate when it runs), and the kernel ones whose (kernel, variant)
 * exists for the dtype bind gives. */
static wafer_status find_available(wafer_client *client,
				   const struct wafer__tune_op *op,
				   const void *inputs, size_t *available,
				   size_t *out_count)
{
	struct wafer__kernel_table *kernels = wafer__client_kernels(client);
	wafer_execute_args bound;
	bool have_bound = false;
	size_t n = 0;

	for (size_t i = 0; i < op->candidate_count; i++) {
		const struct wafer__tune_candidate *c = &op->candidates[i];
		if (c->variant && !have_bound) {
			memset(&bound, 0, sizeof bound);
			bound.struct_size = sizeof bound;
			wafer_status status = op->tunable->bind(inputs, &bound);
			if (status != WAFER_OK)
				return wafer__fail(status,
						   "autotune %s: bind failed "
						   "(%s)",
						   op->tunable->name,
						   wafer_status_string(status));
			have_bound = true;
		}
		if (c->variant && !wafer__kernel_table_find(kernels, c->kernel,
							    c->variant,
							    bound.dtype))
			continue;
		available[n++] = i;
	}
	wafer__error_clear(); /* the misses recorded their "not supported" */
	*out_count = n;
	return WAFER_OK;
}

static wafer_status none_available(const struct wafer__tune_op *op,
				   const char *key_text)
{
	char names[512];
	size_t used = 0;

	names[0] = '\0';
	for (size_t i = 0; i < op->candidate_count && used < sizeof names; i++)
		used += (size_t)snprintf(names + used, sizeof names - used,
					 "%s%s", i ? ", " : "",
					 op->candidates[i].name);
	return wafer__fail(WAFER_ERROR_NOT_SUPPORTED,
			   "autotune %s [%s]: no candidate is available on "
			   "%s:%u (candidates: %s)",
			   op->tunable->name, key_text, op->device->backend,
			   op->device->index, names[0] ? names : "none");
}

/*===----------------------------------------------------------------------===
 * From a key to a choice
 *===----------------------------------------------------------------------===*/

struct lookup {
	const wafer_tunable *tunable;
	const struct wafer_runtime_device *device;
	struct wafer__tune_key key;
	uint64_t hash;
};

/* Mode off: the named default when available, else the first. */
static size_t default_candidate(const struct wafer__tune_op *op,
				const size_t *available, size_t n)
{
	const char *name = op->tunable->default_candidate;

	for (size_t i = 0; name && i < n; i++)
		if (strcmp(op->candidates[available[i]].name, name) == 0)
			return available[i];
	return available[0];
}

/* The cache file's choice for the key, when it names a candidate that is
 * available; SIZE_MAX otherwise. */
static size_t from_file(struct wafer__tune_op *op, const struct lookup *l,
			const size_t *available, size_t n, uint64_t *out_ns)
{
	wafer__tune_file_load(op);
	const struct wafer__tune_file_entry *e = wafer__tune_file_find(op, &l->key);
	if (!e)
		return SIZE_MAX;
	for (size_t i = 0; i < n; i++) {
		if (strcmp(op->candidates[available[i]].name, e->winner) == 0) {
			*out_ns = e->best_ns;
			return available[i];
		}
	}
	return SIZE_MAX;
}

static wafer_status measure(struct wafer__tuner *tuner, wafer_client *client,
			    struct wafer__tune_op *op, const struct lookup *l,
			    const void *inputs, const size_t *available,
			    size_t n, const char *key_text,
			    size_t *out_winner, uint64_t *out_ns)
{
	const struct wafer_runtime_device *device = op->device;
	struct wafer__tune_bench bench = {
		.client = client,
		.tunable = op->tunable,
		.op = op,
		.inputs = inputs,
		.settings = &tuner->settings,
		.stats = &tuner->stats,
		.available = available,
		.available_count = n,
		.key_text = key_text,
		.device_timers = !tuner->settings.host_timer &&
				 (device->info.capabilities &
				  WAFER_CAP_DEVICE_TIMERS),
	};

	/* Work issued before this call must neither be timed nor have its
	 * failure blamed on a candidate: it is the caller's, as from
	 * wafer_sync. */
	wafer_status status = wafer_sync(client);
	if (status != WAFER_OK)
		return status;
	status = wafer__tune_measure(&bench, out_winner, out_ns);
	if (status != WAFER_OK)
		return status;
	atomic_fetch_add_explicit(&tuner->stats.keys_tuned, 1,
				  memory_order_relaxed);
	return WAFER_OK;
}

/* How many levels of a tuner's (recursive) lock this thread holds: what
 * measure_unlocked releases and takes again. One tuner per runtime, and
 * a thread holds the lock of one at a time. */
static _Thread_local unsigned lock_depth;

static void tuner_lock(struct wafer__tuner *tuner)
{
	pthread_mutex_lock(&tuner->lock);
	lock_depth++;
}

static void tuner_unlock(struct wafer__tuner *tuner)
{
	lock_depth--;
	pthread_mutex_unlock(&tuner->lock);
}

/* With the lock held: the measured winner into |op|'s cache file. */
static void store_measured(struct wafer__tune_op *op, const struct lookup *l,
			   size_t winner, uint64_t best_ns)
{
	struct wafer__tune_file_entry entry = {
		.key = l->key,
		.best_ns = best_ns,
		.tuned_here = true,
	};
	snprintf(entry.winner, sizeof entry.winner, "%s",
		 op->candidates[winner].name);
	if (wafer__tune_file_store(op, &entry) != WAFER_OK)
		wafer__error_clear(); /* logged; the choice stands */
}

/* With the lock held, on |op|'s device: 0 when this thread may measure
 * (nobody does, or this thread already does, one level up), 1 when
 * another thread is measuring there. */
static int measured_elsewhere(const struct wafer__tune_op *op)
{
	return op->measuring_depth &&
	       !pthread_equal(op->measuring_owner, pthread_self());
}

/* Measures with the lock released (see autotune.h, Locking), then takes
 * it again and records the result. */
static wafer_status measure_unlocked(struct wafer__tuner *tuner,
				     wafer_client *client,
				     struct wafer__tune_op *op,
				     const struct lookup *l, const void *inputs,
				     const size_t *available, size_t n,
				     const char *key_text, size_t *out_winner,
				     uint64_t *out_ns)
{
	unsigned held = lock_depth;
	wafer_status status;

	op->measuring_owner = pthread_self();
	op->measuring_depth++;
	/* The lock is recursive: release every level this thread holds. */
	for (unsigned i = 0; i < held; i++)
		tuner_unlock(tuner);
	status = measure(tuner, client, op, l, inputs, available, n, key_text,
			 out_winner, out_ns);
	for (unsigned i = 0; i < held; i++)
		tuner_lock(tuner);
	op->measuring_depth--;
	if (status == WAFER_OK)
		store_measured(op, l, *out_winner, *out_ns);
	return status;
}

/* The slow path: with the lock held, find or make the choice for |l|. */
static wafer_status choose_locked(struct wafer__tuner *tuner,
				  wafer_client *client, const struct lookup *l,
				  const void *inputs,
				  struct wafer__tune_choice *scratch,
				  const struct wafer__tune_choice **out)
{
	size_t available[WAFER_TUNE_MAX_CANDIDATES];
	struct wafer__tune_op *op;
	char key_text[256];
	size_t n, winner;
	uint64_t best_ns = 0;
	wafer_autotune_source source;

	wafer_status status = find_op(tuner, client, l->tunable, &op);
	if (status == WAFER_OK)
		status = find_available(client, op, inputs, available, &n);
	if (status != WAFER_OK)
		return status;
	wafer__tune_key_describe(&l->key, key_text, sizeof key_text);
	if (n == 0)
		return none_available(op, key_text);

	if (tuner->settings.mode == WAFER_TUNE_OFF || n == 1) {
		/* Nothing to choose from with one candidate: it runs as the
		 * default would, with nothing measured or written. */
		winner = default_candidate(op, available, n);
		source = WAFER_AUTOTUNE_SOURCE_DEFAULT;
	} else if ((winner = from_file(op, l, available, n, &best_ns)) !=
		   SIZE_MAX) {
		source = WAFER_AUTOTUNE_SOURCE_DISK;
		atomic_fetch_add_explicit(&tuner->stats.disk_hits, 1,
					  memory_order_relaxed);
	} else if (measured_elsewhere(op) ||
		   wafer__queue_capturing(wafer__client_queues(client))) {
		/* Another thread is measuring on this device, or the queue
		 * captures a graph (a measurement would be recorded, not
		 * run): the default this once, untuned and not recorded
		 * (autotune.h, Locking). */
		*scratch = (struct wafer__tune_choice){
			.hash = l->hash,
			.tunable = l->tunable,
			.device = l->device,
			.key = l->key,
			.winner = &op->candidates[default_candidate(op, available,
								    n)],
			.source = WAFER_AUTOTUNE_SOURCE_DEFAULT,
		};
		*out = scratch;
		wafer__log_debug("autotune", "%s %s: measured by another "
				 "thread; the default this time",
				 op->tunable->name, key_text);
		return WAFER_OK;
	} else {
		status = measure_unlocked(tuner, client, op, l, inputs,
					  available, n, key_text, &winner,
					  &best_ns);
		if (status != WAFER_OK)
			return status;
		/* Measured meanwhile by a thread that read the file? */
		*out = wafer__tune_index_find(&tuner->index, l->hash,
					      l->tunable, l->device, &l->key);
		if (*out)
			return WAFER_OK;
		source = WAFER_AUTOTUNE_SOURCE_TUNED;
	}
	struct wafer__tune_choice choice = {
		.hash = l->hash,
		.tunable = l->tunable,
		.device = l->device,
		.key = l->key,
		.winner = &op->candidates[winner],
		.source = source,
		.best_ns = best_ns,
	};
	return wafer__tune_index_insert(&tuner->index, &choice, out);
}

/* Counts a hit on an existing choice and says where it came from. */
static wafer_autotune_source hit(struct wafer__tuner *tuner,
				 const struct wafer__tune_choice *c)
{
	if (c->source == WAFER_AUTOTUNE_SOURCE_DEFAULT) {
		atomic_fetch_add_explicit(&tuner->stats.default_runs, 1,
					  memory_order_relaxed);
		return WAFER_AUTOTUNE_SOURCE_DEFAULT;
	}
	atomic_fetch_add_explicit(&tuner->stats.cache_hits, 1,
				  memory_order_relaxed);
	return WAFER_AUTOTUNE_SOURCE_MEMORY;
}

/* |scratch|: where a choice made for one call only is kept (the default
 * while another thread measures). */
static wafer_status choose(struct wafer__tuner *tuner, wafer_client *client,
			   const struct lookup *l, const void *inputs,
			   struct wafer__tune_choice *scratch,
			   const struct wafer__tune_choice **out,
			   wafer_autotune_source *out_source)
{
	wafer_status status = WAFER_OK;

	tuner_lock(tuner);
	*out = wafer__tune_index_find(&tuner->index, l->hash, l->tunable,
				      l->device, &l->key);
	if (*out) {
		*out_source = hit(tuner, *out);
	} else {
		status = choose_locked(tuner, client, l, inputs, scratch,
				       out);
		if (status == WAFER_OK) {
			*out_source = (*out)->source;
			if (*out_source == WAFER_AUTOTUNE_SOURCE_DEFAULT)
				atomic_fetch_add_explicit(
					&tuner->stats.default_runs, 1,
					memory_order_relaxed);
		}
	}
	tuner_unlock(tuner);
	return status;
}

/* Reduces |inputs| to the anchored key of |tunable| on the client's
 * device. */
static wafer_status make_lookup(wafer_client *client,
				const wafer_tunable *tunable,
				const void *inputs, struct lookup *out)
{
	wafer_autotune_key key;
	wafer_status status;

	out->tunable = tunable;
	out->device = wafer__client_runtime_device(client);
	memset(&key, 0, sizeof key);
	key.struct_size = sizeof key;
	status = tunable->key(inputs, &key);
	if (status != WAFER_OK)
		return wafer__fail(status, "autotune %s: the key function "
				   "returned %s",
				   tunable->name, wafer_status_string(status));
	status = wafer__tune_key_make(tunable, &key, &out->key);
	if (status != WAFER_OK)
		return status;
	out->hash = wafer__tune_key_hash(&out->key, tunable, out->device);
	return WAFER_OK;
}

/*===----------------------------------------------------------------------===
 * Public entries
 *===----------------------------------------------------------------------===*/

static wafer_status check_call(const char *what, wafer_client *client,
			       const wafer_tunable *op)
{
	if (!client || !op)
		return wafer__fail(WAFER_ERROR_INVALID_ARGUMENT, "%s: %s is NULL",
				   what, client ? "op" : "client");
	if (op->struct_size < sizeof *op || !op->key)
		return check_tunable(op);
	return WAFER_OK;
}

WAFER_API wafer_status wafer_execute_autotune(wafer_client *client,
					      const wafer_tunable *op,
					      const void *inputs,
					      wafer_autotune_result *out_result)
{
	const struct wafer__tune_choice *choice;
	struct wafer__tune_choice scratch;
	wafer_autotune_source source;
	struct lookup l;

	if (out_result) {
		if (out_result->struct_size < sizeof *out_result)
			return wafer__fail(WAFER_ERROR_INVALID_ARGUMENT,
					   "wafer_execute_autotune: "
					   "out_result->struct_size is %zu",
					   out_result->struct_size);
		out_result->candidate = NULL;
		out_result->source = WAFER_AUTOTUNE_SOURCE_MEMORY;
		out_result->best_ns = 0;
	}
	wafer_status status = check_call("wafer_execute_autotune", client, op);
	if (status != WAFER_OK)
		return status;
	struct wafer__tuner *tuner =
		wafer__runtime_tuner(wafer__client_runtime(client));

	status = make_lookup(client, op, inputs, &l);
	if (status != WAFER_OK)
		return status;
	choice = wafer__tune_index_find(&tuner->index, l.hash, op, l.device,
					&l.key);
	if (choice)
		source = hit(tuner, choice);
	else if ((status = choose(tuner, client, &l, inputs, &scratch,
				  &choice, &source)) != WAFER_OK)
		return status;
	if (out_result) {
		out_result->candidate = choice->winner->name;
		out_result->source = source;
		out_result->best_ns = choice->best_ns;
	}
	return wafer__tune_run(client, op, choice->winner, inputs);
}

/* The operation's state, for the calls below. */
static wafer_status op_state(wafer_client *client, const wafer_tunable *op,
			     struct wafer__tune_op **out)
{
	struct wafer__tuner *tuner =
		wafer__runtime_tuner(wafer__client_runtime(client));

	tuner_lock(tuner);
	wafer_status status = find_op(tuner, client, op, out);
	tuner_unlock(tuner);
	return status;
}

/* check_call, then op_state. */
static wafer_status call_state(const char *what, wafer_client *client,
			       const wafer_tunable *op,
			       struct wafer__tune_op **out)
{
	wafer_status status = check_call(what, client, op);
	return status == WAFER_OK ? op_state(client, op, out) : status;
}

WAFER_API wafer_status wafer_autotune_execute_candidate(wafer_client *client,
							const wafer_tunable *op,
							const void *inputs,
							const char *candidate)
{
	size_t available[WAFER_TUNE_MAX_CANDIDATES], n;
	struct wafer__tune_op *state;

	wafer_status status =
		check_call("wafer_autotune_execute_candidate", client, op);
	if (status == WAFER_OK && !candidate)
		status = wafer__fail(WAFER_ERROR_INVALID_ARGUMENT,
				     "wafer_autotune_execute_candidate: "
				     "candidate is NULL");
	if (status == WAFER_OK)
		status = op_state(client, op, &state);
	if (status != WAFER_OK)
		return status;
	const struct wafer__tune_candidate *c = candidate_named(state, candidate);
	if (!c)
		return wafer__fail(WAFER_ERROR_NOT_FOUND,
				   "autotune %s: no candidate %s on %s:%u",
				   op->name, candidate, state->device->backend,
				   state->device->index);
	status = find_available(client, state, inputs, available, &n);
	if (status != WAFER_OK)
		return status;
	for (size_t i = 0; i < n; i++)
		if (&state->candidates[available[i]] == c)
			return wafer__tune_run(client, op, c, inputs);
	return wafer__fail(WAFER_ERROR_NOT_SUPPORTED,
			   "autotune %s: candidate %s (kernel %s, variant %s) "
			   "is not available on %s:%u for these inputs",
			   op->name, c->name, c->kernel, c->variant,
			   state->device->backend, state->device->index);
}

WAFER_API wafer_status wafer_autotune_candidates(wafer_client *client,
						 const wafer_tunable *op,
						 const char **out_names,
						 size_t capacity,
						 size_t *out_count)
{
	struct wafer__tune_op *state;

	if (!out_count)
		return wafer__fail(WAFER_ERROR_INVALID_ARGUMENT,
				   "wafer_autotune_candidates: out_count is "
				   "NULL");
	*out_count = 0;
	if (capacity && !out_names)
		return wafer__fail(WAFER_ERROR_INVALID_ARGUMENT,
				   "wafer_autotune_candidates: out_names is "
				   "NULL");
	wafer_status status =
		call_state("wafer_autotune_candidates", client, op, &state);
	if (status != WAFER_OK)
		return status;
	for (size_t i = 0; i < state->candidate_count && i < capacity; i++)
		out_names[i] = state->candidates[i].name;
	*out_count = state->candidate_count;
	return WAFER_OK;
}

WAFER_API wafer_status wafer_autotune_cache_file(wafer_client *client,
						 const wafer_tunable *op,
						 char *buf, size_t size)
{
	struct wafer__tune_op *state;

	if (!buf || !size)
		return wafer__fail(WAFER_ERROR_INVALID_ARGUMENT,
				   "wafer_autotune_cache_file: no buffer");
	buf[0] = '\0';
	wafer_status status =
		call_state("wafer_autotune_cache_file", client, op, &state);
	if (status != WAFER_OK)
		return status;
	if (!state->path)
		return wafer__fail(WAFER_ERROR_NOT_FOUND,
				   "autotune %s: no cache file (%s)", op->name,
				   wafer__runtime_tuner(wafer__client_runtime(client))
							  ->settings.mode ==
						  WAFER_TUNE_OFF
					  ? "mode off"
					  : "no cache directory");
	if (strlen(state->path) >= size)
		return wafer__fail(WAFER_ERROR_OUT_OF_RANGE,
				   "autotune %s: the cache file's path needs "
				   "%zu bytes, the buffer has %zu",
				   op->name, strlen(state->path) + 1, size);
	memcpy(buf, state->path, strlen(state->path) + 1);
	return WAFER_OK;
}

WAFER_API wafer_status wafer_autotune_stats_get(const wafer_runtime *runtime,
						wafer_autotune_stats *out_stats)
{
	wafer_status checked = WAFER__CHECK_OUT_STRUCT(
		"wafer_autotune_stats_get", runtime, out_stats);
	if (checked != WAFER_OK)
		return checked;
	struct wafer__tune_stats *s = &wafer__runtime_tuner(runtime)->stats;
	wafer_autotune_stats all = {
		.struct_size = sizeof all,
		.keys_tuned = atomic_load(&s->keys_tuned),
		.benchmark_runs = atomic_load(&s->benchmark_runs),
		.cache_hits = atomic_load(&s->cache_hits),
		.disk_hits = atomic_load(&s->disk_hits),
		.disqualified = atomic_load(&s->disqualified),
		.default_runs = atomic_load(&s->default_runs),
	};
	wafer__copy_out_struct(out_stats, &all, sizeof all);
	return WAFER_OK;
}
