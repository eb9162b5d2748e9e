/* wafer — SPDX-License-Identifier: MIT
 *
 * pin.c: moving the bench's thread between two CPUs (pin.h). */
#include "build-config.h"

#include <stdlib.h>

#include "tools/bench/pin.h"

#if defined(__linux__)
#include <pthread.h>
#include <sched.h>

void bench_pin_begin(struct bench_pin *pin)
{
	cpu_set_t *all = malloc(sizeof *all);
	int here = sched_getcpu();

	*pin = (struct bench_pin){.on = false};
	if (!all || here < 0 ||
	    pthread_getaffinity_np(pthread_self(), sizeof *all, all) != 0) {
		free(all);
		return;
	}
	for (int cpu = 0; cpu < CPU_SETSIZE; cpu++) {
		if (cpu != here && CPU_ISSET(cpu, all)) {
			*pin = (struct bench_pin){
				.on = true, .driver = here, .caller = cpu,
				.all = all};
			bench_pin_to(pin, here);
			return;
		}
	}
	free(all);
}

void bench_pin_to(const struct bench_pin *pin, int cpu)
{
	cpu_set_t one;

	if (!pin->on)
		return;
	CPU_ZERO(&one);
	CPU_SET(cpu, &one);
	pthread_setaffinity_np(pthread_self(), sizeof one, &one);
}

void bench_pin_end(struct bench_pin *pin)
{
	if (pin->on)
		pthread_setaffinity_np(pthread_self(), sizeof(cpu_set_t),
				       pin->all);
	free(pin->all);
	*pin = (struct bench_pin){.on = false};
}
#else
void bench_pin_begin(struct bench_pin *pin)
{
	*pin = (struct bench_pin){.on = false};
}

void bench_pin_to(const struct bench_pin *pin, int cpu)
{
	(void)pin;
	(void)cpu;
}

void bench_pin_end(struct bench_pin *pin)
{
	*pin = (struct bench_pin){.on = false};
}
#endif
