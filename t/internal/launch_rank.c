/* wafer — SPDX-License-Identifier: MIT
 *
 * launch_rank.c: one rank of a job started by wafer-launch(1), for
 * t/internal/launch.sh and dev/nccl-check.sh. It prints
 *   rank R of N pid P
 *   rank R id HEX           (the communicator id, wafer_comm_launched)
 * and then, by its options:
 *   --allreduce     joins the communicator on <backend>:R (the default
 *                   device's backend; "default" when it has fewer
 *                   devices) and all-reduces rank + 1 over |count|
 *                   floats: "rank R all_reduce right" and exit 0, or
 *                   exit 1 saying what is wrong (across processes: NCCL
 *                   on a GPU machine);
 *   --die-at R      rank R exits with status 3 after 0.3 s; the others
 *                   wait for ever (120 s), or, with --allreduce (where
 *                   rank R dies once the communicator is open), in an
 *                   all-reduce rank R never joins: until the launcher
 *                   stops them, or [comm] timeout aborts it (exit 1,
 *                   the error on stderr);
 *   --ignore-term   the waiting ranks ignore SIGTERM (the launcher must
 *                   SIGKILL them).
 * Without a launcher's environment it exits 4 with wafer_comm_launched's
 * error. */
#include "build-config.h"

#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <wafer/comm.h>
#include <wafer/wafer.h>

#define COUNT (1 << 20)

static wafer_client *open_rank_client(wafer_runtime *rt, uint32_t rank)
{
	wafer_device_desc d = {.struct_size = sizeof d};
	wafer_client *c = NULL;
	char sel[64];

	if (wafer_client_open(rt, "default", NULL, &c) != WAFER_OK)
		return NULL;
	if (wafer_client_device(c, &d) != WAFER_OK)
		return c;
	snprintf(sel, sizeof sel, "%s:%u", d.backend, rank);
	wafer_client *mine = NULL;
	if (wafer_client_open(rt, sel, NULL, &mine) != WAFER_OK)
		return c; /* fewer devices: the default one */
	wafer_client_close(c);
	return mine;
}

static int all_reduce(wafer_client *c, wafer_comm *comm, uint32_t rank,
		      uint32_t size)
{
	float *host = malloc(COUNT * sizeof *host);
	float want = (float)size * (float)(size + 1) / 2;
	wafer_handle h;
	wafer_status st;

	for (int i = 0; i < COUNT; i++)
		host[i] = (float)(rank + 1);
	st = wafer_create(c, host, COUNT * sizeof *host, &h);
	if (st == WAFER_OK)
		st = wafer_comm_all_reduce(comm, h, h, COUNT, WAFER_DTYPE_F32,
					   WAFER_REDUCE_SUM);
	if (st == WAFER_OK)
		st = wafer_read(c, h, 0, host, COUNT * sizeof *host);
	if (st != WAFER_OK) {
		fprintf(stderr, "rank %u: all_reduce: %s: %s\n", rank,
			wafer_status_string(st), wafer_last_error());
		free(host);
		return 1;
	}
	for (int i = 0; i < COUNT; i++)
		if (host[i] != want) {
			fprintf(stderr, "rank %u: [%d] is %g, want %g\n", rank,
				i, host[i], want);
			free(host);
			return 1;
		}
	wafer_release(c, h);
	free(host);
	printf("rank %u all_reduce right\n", rank);
	return 0;
}

static void die(uint32_t rank)
{
	usleep(300000);
	fprintf(stderr, "rank %u: exiting with status 3 (--die-at)\n", rank);
	_exit(3);
}

int main(int argc, char **argv)
{
	int allreduce = 0, die_at = -1, ignore_term = 0;
	wafer_runtime *rt;
	wafer_client *c;
	wafer_comm_options o;
	wafer_comm_id id;
	wafer_comm *comm;
	wafer_status st;

	for (int i = 1; i < argc; i++) {
		if (strcmp(argv[i], "--allreduce") == 0)
			allreduce = 1;
		else if (strcmp(argv[i], "--die-at") == 0 && i + 1 < argc)
			die_at = atoi(argv[++i]);
		else if (strcmp(argv[i], "--ignore-term") == 0)
			ignore_term = 1;
		else {
			fprintf(stderr, "launch_rank: unknown '%s'\n", argv[i]);
			return 2;
		}
	}
	setvbuf(stdout, NULL, _IOLBF, 0);
	if (wafer_runtime_open(NULL, &rt) != WAFER_OK) {
		fprintf(stderr, "runtime_open: %s\n", wafer_last_error());
		return 1;
	}
	const char *r_env = getenv("WAFER_RANK");
	c = open_rank_client(rt, r_env ? (uint32_t)atoi(r_env) : 0);
	if (!c) {
		fprintf(stderr, "client_open: %s\n", wafer_last_error());
		wafer_runtime_close(rt);
		return 1;
	}
	st = wafer_comm_launched(c, &o, &id);
	if (st != WAFER_OK) {
		fprintf(stderr, "wafer_comm_launched: %s: %s\n",
			wafer_status_string(st), wafer_last_error());
		wafer_client_close(c);
		wafer_runtime_close(rt);
		return 4;
	}
	printf("rank %u of %u pid %ld\n", o.rank, o.size, (long)getpid());
	printf("rank %u id ", o.rank);
	for (size_t i = 0; i < sizeof id.bytes; i++)
		printf("%02x", id.bytes[i]);
	printf("\n");
	if (ignore_term && (int)o.rank != die_at)
		signal(SIGTERM, SIG_IGN);
	if (!allreduce) {
		if ((int)o.rank == die_at)
			die(o.rank);
		if (die_at >= 0)
			sleep(120); /* waits for a rank that is gone */
		wafer_client_close(c);
		wafer_runtime_close(rt);
		return 0;
	}
	st = wafer_comm_open(c, &o, &comm);
	if (st != WAFER_OK) {
		fprintf(stderr, "rank %u: comm_open: %s: %s\n", o.rank,
			wafer_status_string(st), wafer_last_error());
		wafer_client_close(c);
		wafer_runtime_close(rt);
		return 1;
	}
	/* Dies once every rank joined: the others wait in the all-reduce. */
	if ((int)o.rank == die_at)
		die(o.rank);
	int result = all_reduce(c, comm, o.rank, o.size);
	wafer_comm_close(comm);
	wafer_client_close(c);
	wafer_runtime_close(rt);
	return result;
}
