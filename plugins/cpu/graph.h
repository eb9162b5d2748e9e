/* wafer — SPDX-License-Identifier: MIT
 *
 * graph.h: the cpu plugin's native graphs (ABI 1.6): a list of prepared
 * catalogue launches — the kernel's run function and its arguments,
 * checked once when recorded — that a replay runs one after the other
 * with nothing resolved or checked again. server.c records into the
 * list while a queue records (graph_begin .. graph_end). */
#ifndef WAFER_PLUGINS_CPU_GRAPH_H
#define WAFER_PLUGINS_CPU_GRAPH_H

#include <stddef.h>

#include "plugins/cpu/kernels.h"

struct cpu_graph;

struct cpu_graph *cpu_graph_new(void);
void cpu_graph_free(struct cpu_graph *graph);

/* Appends a launch of |impl| on |args| (prepared and checked), copying
 * its |params_size| bytes of parameters. WAFER_ERROR_OUT_OF_MEMORY. */
wafer_status cpu_graph_record(struct cpu_graph *graph,
			      const struct cpu_kernel_impl *impl,
			      const struct cpu_kernel_args *args,
			      size_t params_size);

/* Makes the recorded launches ready to run (no more records). */
void cpu_graph_seal(struct cpu_graph *graph);

/* Runs the launches in order; the first that fails stops the replay and
 * its status is returned, with |*out_kernel| its kernel's name. */
wafer_status cpu_graph_run(const struct cpu_graph *graph,
			   const char **out_kernel);

#endif
