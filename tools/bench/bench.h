/* wafer — SPDX-License-Identifier: MIT
 *
 * bench.h: what the wafer-bench subcommands share: a clock, opening a
 * runtime and client or failing with the library's message, and a fill. Each
 * subcommand is one file under tools/bench/ and prints one line per
 * measurement, `<name> key=value ...`, so results are easy to compare and
 * to grep. */
#ifndef WAFER_TOOLS_BENCH_H
#define WAFER_TOOLS_BENCH_H

#include <stdint.h>
#include <time.h>

#include <wafer/wafer.h>

static inline uint64_t bench_now_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/* Exits with the library's message when |status| is not WAFER_OK. */
void bench_check(wafer_status status, const char *what);

/* Opens a client on the default device with the given channel and memory
 * strategy (NULL: configured). */
wafer_client *bench_open_client(wafer_runtime *runtime, const char *channel,
				const char *memory);

/* Fills |count| f32 elements of |h| with |value| (the standard fill
 * kernel through wafer_execute), or exits naming "fill". */
void bench_fill_f32(wafer_client *client, wafer_handle h, uint64_t count,
		    double value);

/* out = a + b over |count| f32 elements (the standard add kernel), or
 * exits naming "add". */
void bench_add_f32(wafer_client *client, wafer_handle out, wafer_handle a,
		   wafer_handle b, uint64_t count);

/* Argument |text| of benchmark |bench|, |what| it counts: a decimal
 * integer from 1 to |max|, or the program exits with status 2 saying
 * so (a negative or too large count once looped for ever, and 0 divided
 * by zero). */
#define BENCH_MAX_COUNT UINT64_C(1000000000) /* a billion */
uint64_t bench_count(const char *bench, const char *what, const char *text,
		     uint64_t max);

/* Keeps the compiler from dropping a value a benchmark computes. */
extern volatile uint64_t bench_sink;

int bench_dispatch(int argc, char **argv);
int bench_alloc(int argc, char **argv);
int bench_matmul(int argc, char **argv);
int bench_donation(int argc, char **argv);
int bench_compare(int argc, char **argv);
int bench_bandwidth(int argc, char **argv);
int bench_replay(int argc, char **argv);
int bench_allreduce(int argc, char **argv);
int bench_queues(int argc, char **argv);
int bench_graph(int argc, char **argv);
#ifdef WAFER_BENCH_CUDA
int bench_sgemm(int argc, char **argv);
#endif

#endif
