/* wafer — SPDX-License-Identifier: MIT
 *
 * pin.h: two CPUs for the calling thread to move between, so that wafer's
 * driver calls and the raw counterpart's run on the same CPU.
 *
 * Why: on a virtual machine a thread's calls run at one of two speeds,
 * for seconds at a time, wherever the hypervisor has put its virtual CPU
 * (an H200 host's raw event pair took 245 or 500 ns, on whichever CPU it
 * was pinned to; doc/performance.md). wafer's calls on the mpsc channel
 * run on the client's runner thread, whose speed is its own, so timing
 * them beside the caller's raw calls compares two placements, not two
 * costs. A client opened while the caller is pinned to `driver` starts
 * its runner there (a thread inherits its creator's CPUs); the caller
 * then moves to `caller` for wafer's calls and back to `driver` for the
 * raw ones. Linux only; elsewhere, or with a single CPU allowed, nothing
 * is pinned. */
#ifndef WAFER_TOOLS_BENCH_PIN_H
#define WAFER_TOOLS_BENCH_PIN_H

#include <stdbool.h>

struct bench_pin {
	bool on;    /* false: nothing is pinned, the calls below do nothing */
	int driver; /* the CPU the driver calls run on */
	int caller; /* another one, for the caller of a runner */
	void *all;  /* the CPUs allowed at bench_pin_begin (a cpu_set_t) */
};

/* Pins the calling thread to the CPU it runs on (pin->driver) and picks
 * another it may run on (pin->caller). */
void bench_pin_begin(struct bench_pin *pin);

/* Moves the calling thread to |cpu| (pin->driver or pin->caller). */
void bench_pin_to(const struct bench_pin *pin, int cpu);

/* Gives the calling thread back the CPUs it had at bench_pin_begin. */
void bench_pin_end(struct bench_pin *pin);

#endif
