/* wafer — SPDX-License-Identifier: MIT
 *
 * comm_launch.c: wafer_comm_launched (comm.h), the process side of
 * wafer-launch(1). The launcher gives each process WAFER_RANK,
 * WAFER_SIZE and WAFER_COMM_ID_FILE, a path in a directory of its own
 * that no one has written yet. Rank 0 makes the id with the backend
 * (NCCL's ncclGetUniqueId must run in a rank: its bootstrap listens in
 * the process that made it) and writes it there as one line of hex,
 * through a file of its own renamed into place, so a reader sees the
 * whole or nothing; the other ranks poll for it. */
#include "build-config.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <wafer/comm.h>

#include "lib/comm.h"
#include "lib/error.h"

#define FN "wafer_comm_launched"
#define ID_MAGIC "wafer-comm-id 1 "

/* |name|'s value, decimal digits only, as a uint32_t; |*out| untouched
 * on failure. */
static wafer_status env_uint(const char *name, uint32_t *out)
{
	const char *v = getenv(name);
	char *end;
	unsigned long n;

	if (!v)
		return wafer__fail(WAFER_ERROR_NOT_FOUND,
				   FN ": %s is not set (start the program "
				   "with wafer-launch -n N)",
				   name);
	errno = 0;
	n = strtoul(v, &end, 10);
	/* strtoul also takes blanks and a sign, and negates:
	 * "-18446744073709551615" would read as 1. */
	if (*v < '0' || *v > '9' || *end || errno || n > UINT32_MAX)
		return wafer__fail(WAFER_ERROR_INVALID_ARGUMENT,
				   FN ": %s is '%s', not a number", name, v);
	*out = (uint32_t)n;
	return WAFER_OK;
}

static wafer_status write_id(const char *path, const wafer_comm_id *id)
{
	size_t size = strlen(path) + 32;
	char *tmp = malloc(size);
	FILE *f;
	int failed;

	if (!tmp)
		return wafer__fail(WAFER_ERROR_OUT_OF_MEMORY,
				   FN ": out of host memory");
	snprintf(tmp, size, "%s.%ld", path, (long)getpid());
	f = fopen(tmp, "w");
	if (!f) {
		wafer_status status = wafer__fail(
			WAFER_ERROR_IO, FN ": cannot write %s: %s", tmp,
			strerror(errno));
		free(tmp);
		return status;
	}
	fputs(ID_MAGIC, f);
	for (size_t i = 0; i < sizeof id->bytes; i++)
		fprintf(f, "%02x", id->bytes[i]);
	fputc('\n', f);
	failed = ferror(f);
	failed = fclose(f) != 0 || failed;
	if (failed || rename(tmp, path) != 0) {
		wafer_status status = wafer__fail(
			WAFER_ERROR_IO, FN ": cannot write %s: %s", path,
			strerror(errno));
		unlink(tmp);
		free(tmp);
		return status;
	}
	free(tmp);
	return WAFER_OK;
}

static int hex_digit(char c)
{
	if (c >= '0' && c <= '9')
		return c - '0';
	if (c >= 'a' && c <= 'f')
		return c - 'a' + 10;
	if (c >= 'A' && c <= 'F')
		return c - 'A' + 10;
	return -1;
}

/* 1 when |path| held a whole id (now in |id|), 0 when not there yet,
 * -1 when it holds something else: anything but the magic, exactly
 * two hex digits a byte and a newline. */
static int read_id(const char *path, wafer_comm_id *id)
{
	char line[sizeof ID_MAGIC + 2 * sizeof id->bytes + 2];
	FILE *f = fopen(path, "r");
	int got;

	if (!f)
		return 0;
	got = fgets(line, sizeof line, f) != NULL;
	fclose(f);
	if (!got || strncmp(line, ID_MAGIC, strlen(ID_MAGIC)) != 0)
		return -1;
	const char *hex = line + strlen(ID_MAGIC);
	if (strlen(hex) != 2 * sizeof id->bytes + 1 ||
	    hex[2 * sizeof id->bytes] != '\n')
		return -1;
	for (size_t i = 0; i < sizeof id->bytes; i++) {
		int high = hex_digit(hex[2 * i]), low = hex_digit(hex[2 * i + 1]);

		if (high < 0 || low < 0)
			return -1;
		id->bytes[i] = (uint8_t)(high << 4 | low);
	}
	return 1;
}

static double now_s(void)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return (double)t.tv_sec + (double)t.tv_nsec / 1e9;
}

WAFER_API wafer_status wafer_comm_launched(wafer_client *client,
					   wafer_comm_options *options,
					   wafer_comm_id *out_id)
{
	uint32_t rank = 0, size = 0;
	uint64_t timeout_ms;
	const char *path;
	wafer_status status;

	if (!client || !options || !out_id)
		return wafer__fail(WAFER_ERROR_INVALID_ARGUMENT,
				   FN ": %s is NULL",
				   !client ? "client"
					   : !options ? "options" : "out_id");
	memset(out_id, 0, sizeof *out_id);
	status = env_uint(WAFER_LAUNCH_RANK_ENV, &rank);
	if (status == WAFER_OK)
		status = env_uint(WAFER_LAUNCH_SIZE_ENV, &size);
	if (status != WAFER_OK)
		return status;
	path = getenv(WAFER_LAUNCH_ID_FILE_ENV);
	if (!path || !*path)
		return wafer__fail(WAFER_ERROR_NOT_FOUND,
				   FN ": %s is not set (start the program "
				   "with wafer-launch -n N)",
				   WAFER_LAUNCH_ID_FILE_ENV);
	if (size == 0 || rank >= size)
		return wafer__fail(WAFER_ERROR_INVALID_ARGUMENT,
				   FN ": rank %" PRIu32 " of %" PRIu32
				   " (want rank < size)",
				   rank, size);
	status = wafer__comm_timeout(client, &timeout_ms);
	if (status != WAFER_OK)
		return wafer__fail_context(status, FN);
	if (rank == 0) {
		status = wafer_comm_id_create(client, out_id);
		if (status == WAFER_OK)
			status = write_id(path, out_id);
		if (status != WAFER_OK)
			return status;
	} else {
		double start = now_s();
		int got;

		while ((got = read_id(path, out_id)) == 0) {
			if (timeout_ms &&
			    (now_s() - start) * 1000 >= (double)timeout_ms)
				return wafer__fail(
					WAFER_ERROR_IO,
					FN ": rank %" PRIu32 ": no id from "
					"rank 0 in %s after %.3g s ([comm] "
					"timeout)",
					rank, path, (double)timeout_ms / 1000);
			nanosleep(&(struct timespec){0, 10000000}, NULL);
		}
		if (got < 0)
			return wafer__fail(WAFER_ERROR_IO,
					   FN ": %s holds no communicator id "
					   "(not written by wafer_comm_launched)",
					   path);
	}
	*options = (wafer_comm_options){
		.struct_size = sizeof *options,
		.rank = rank,
		.size = size,
		.id = out_id,
	};
	return WAFER_OK;
}
