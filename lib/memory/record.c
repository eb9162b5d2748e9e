/* wafer — SPDX-License-Identifier: MIT
 * record.c: recording a client's reserve/release stream (record.h). */
#include "build-config.h"

#include <errno.h>
#include <inttypes.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "lib/error.h"
#include "lib/log.h"
#include "lib/memory/memory.h"
#include "lib/memory/record.h"

struct wafer__memory_record {
	FILE *file;
	uint64_t start_ns;
	bool failed; /* a write failed: logged, nothing more written */
	char path[];
};

/* Recordings this process opened: the <n> of PATH.<pid>.<n>. */
static _Atomic unsigned next_number;

wafer_status wafer__memory_record_open(const struct wafer__config *config,
				       const char *who,
				       struct wafer__memory_record **out_record)
{
	*out_record = NULL;
	const struct wafer__config_entry *e =
		config ? wafer__config_lookup(config, "memory", "trace") : NULL;
	if (!e || !*e->value)
		return WAFER_OK;
	unsigned number = atomic_fetch_add(&next_number, 1);
	long pid = (long)getpid();
	int length = snprintf(NULL, 0, "%s.%ld.%u", e->value, pid, number);
	struct wafer__memory_record *r =
		calloc(1, sizeof *r + (size_t)length + 1);
	if (!r)
		return wafer__fail(WAFER_ERROR_OUT_OF_MEMORY,
				   "memory trace: out of host memory");
	snprintf(r->path, (size_t)length + 1, "%s.%ld.%u", e->value, pid,
		 number);
	r->file = fopen(r->path, "w");
	if (!r->file) {
		wafer_status status = wafer__fail(
			WAFER_ERROR_IO, "%s: [memory] trace: cannot create '%s': %s",
			e->origin, r->path, strerror(errno));
		free(r);
		return status;
	}
	r->start_ns = wafer__memory_clock_ns();
	fprintf(r->file,
		"# wafer memory trace, process %ld, recording %u: %s\n"
		"# a <id> <bytes> / f <id>: reserve and release of handle slot "
		"<id>; t=<ns> since the recording opened. Replay with "
		"wafer-replay(1).\n",
		pid, number, who);
	wafer__log_info("memory", "recording reserves and releases in %s",
			r->path);
	*out_record = r;
	return WAFER_OK;
}

const char *wafer__memory_record_path(const struct wafer__memory_record *record)
{
	return record->path;
}

static void check_write(struct wafer__memory_record *r, int written)
{
	if (written >= 0 || r->failed)
		return;
	r->failed = true;
	wafer__log_warn("memory", "%s: writing the memory trace failed (%s); "
			"recording stops here", r->path, strerror(errno));
}

void wafer__memory_record_reserve(struct wafer__memory_record *r, uint64_t id,
				  size_t bytes)
{
	if (!r || r->failed)
		return;
	check_write(r, fprintf(r->file, "a %" PRIu64 " %zu t=%" PRIu64 "\n",
			       id, bytes, wafer__memory_clock_ns() - r->start_ns));
}

void wafer__memory_record_release(struct wafer__memory_record *r, uint64_t id)
{
	if (!r || r->failed)
		return;
	check_write(r, fprintf(r->file, "f %" PRIu64 " t=%" PRIu64 "\n", id,
			       wafer__memory_clock_ns() - r->start_ns));
}

void wafer__memory_record_flush(struct wafer__memory_record *r)
{
	if (r && !r->failed)
		check_write(r, fflush(r->file) == 0 ? 0 : -1);
}

void wafer__memory_record_close(struct wafer__memory_record *r)
{
	if (!r)
		return;
	wafer__memory_record_flush(r);
	if (fclose(r->file) != 0 && !r->failed)
		wafer__log_warn("memory", "%s: closing the memory trace failed: %s",
				r->path, strerror(errno));
	free(r);
}
