/* wafer — SPDX-License-Identifier: MIT
 *
 * tunable.h: the kernel of the `tunable` test plugin (t/plugins/tunable.c),
 * shared with t/internal/autotune.c. One operation, "work", in several variants
 * whose cost is known exactly, so the tuner's choices are deterministic.
 *
 *   work — bindings {out, in}; params struct tunable_params;
 *          out[i] = 2 * in[i] for i < count.
 *
 * Every launch advances the queue's fake device clock by
 * cost x factor x TUNABLE_UNIT_NS, and the plugin's timers read that
 * clock; with the option `sleep = 1` a launch also sleeps
 * cost x factor x TUNABLE_SLEEP_NS of real time, for the host clock.
 *
 *   f32 variants (factor): fast (2, the default), medium (6), slow (80),
 *                          broken (launch fails), late (fails at sync),
 *                          wrong (1: the cheapest, but writes 2x+1)
 *   f64 variants:          medium (6) */
#ifndef WAFER_T_PLUGINS_TUNABLE_H
#define WAFER_T_PLUGINS_TUNABLE_H

#include <stdint.h>

#define TUNABLE_KERNEL "work"
#define TUNABLE_UNIT_NS 1000u
#define TUNABLE_SLEEP_NS 100000u

struct tunable_params {
	uint64_t count;
	uint64_t cost;
};

#endif
