/* wafer — SPDX-License-Identifier: MIT
 *
 * record.h: recording a client's reserve/release stream (`[memory] trace
 * = PATH`, WAFER_MEMORY_TRACE) in the allocation-trace format that
 * wafer-replay reads (tools/trace.h), so that a real run can be replayed
 * under every strategy and drawn with `wafer-replay --svg`.
 *
 * One file per client: PATH.<pid>.<n>, n counting the recordings this
 * process opened from 0, so that clients on several threads never share
 * a file and each file replays as one memory manager. It starts with
 * comment lines naming the process, the client's device and strategy,
 * then one line per event:
 *
 *   a <id> <bytes> t=<ns>    a reserve of <bytes> for handle slot <id>
 *   f <id> t=<ns>            its release
 *
 * <id> is the handle's slot index (stable when a handle is donated; a
 * slot is reused only after its release, as the format allows), <ns> the
 * nanoseconds since the recording opened.
 *
 * Not thread-safe: the client's bridge owns its recording. */
#ifndef WAFER_CORE_MEMORY_RECORD_H
#define WAFER_CORE_MEMORY_RECORD_H

#include <stddef.h>
#include <stdint.h>

#include <wafer/wafer.h>

#include "lib/config.h"

struct wafer__memory_record;

/* Opens the recording `[memory] trace` of |config| asks for (*out_record
 * NULL when it is unset), headed with |who| (the client's device and
 * strategy). WAFER_ERROR_IO naming the setting's origin and the file when
 * it cannot be created. */
wafer_status wafer__memory_record_open(const struct wafer__config *config,
				       const char *who,
				       struct wafer__memory_record **out_record);

/* The file's name (for messages and tests). */
const char *wafer__memory_record_path(const struct wafer__memory_record *record);

/* One event each; |record| may be NULL (not recording). A write error is
 * logged once and the recording stops. */
void wafer__memory_record_reserve(struct wafer__memory_record *record,
				  uint64_t id, size_t bytes);
void wafer__memory_record_release(struct wafer__memory_record *record,
				  uint64_t id);

/* Flushes what is buffered (the bridge does at every sync the program
 * asks for, so a run that dies later keeps its trace up to there). */
void wafer__memory_record_flush(struct wafer__memory_record *record);

/* Flushes, closes and frees (NULL: nothing). */
void wafer__memory_record_close(struct wafer__memory_record *record);

#endif
