/* wafer — SPDX-License-Identifier: MIT
 * graph.c: the cpu plugin's native graphs (see graph.h). */
#include "build-config.h"

#include <stdlib.h>
#include <string.h>

#include "plugins/cpu/graph.h"

struct cpu_graph_launch {
	const struct cpu_kernel_impl *impl;
	struct cpu_kernel_args args;
	void *params; /* the copy args.params points at once sealed */
};

struct cpu_graph {
	struct cpu_graph_launch *launches;
	size_t count, cap;
};

struct cpu_graph *cpu_graph_new(void)
{
	return calloc(1, sizeof(struct cpu_graph));
}

void cpu_graph_free(struct cpu_graph *graph)
{
	if (!graph)
		return;
	for (size_t i = 0; i < graph->count; i++)
		free(graph->launches[i].params);
	free(graph->launches);
	free(graph);
}

wafer_status cpu_graph_record(struct cpu_graph *graph,
			      const struct cpu_kernel_impl *impl,
			      const struct cpu_kernel_args *args,
			      size_t params_size)
{
	if (graph->count == graph->cap) {
		size_t cap = graph->cap ? 2 * graph->cap : 16;
		struct cpu_graph_launch *l =
			realloc(graph->launches, cap * sizeof *l);
		if (!l)
			return WAFER_ERROR_OUT_OF_MEMORY;
		graph->launches = l;
		graph->cap = cap;
	}
	struct cpu_graph_launch *l = &graph->launches[graph->count];
	l->impl = impl;
	l->args = *args;
	l->params = NULL;
	if (params_size) {
		l->params = malloc(params_size);
		if (!l->params)
			return WAFER_ERROR_OUT_OF_MEMORY;
		memcpy(l->params, args->params, params_size);
	}
	graph->count++;
	return WAFER_OK;
}

/* The arguments point into themselves (reach.sizes) and at the copy of
 * the parameters: right only once the array stopped moving. */
void cpu_graph_seal(struct cpu_graph *graph)
{
	for (size_t i = 0; i < graph->count; i++) {
		struct cpu_graph_launch *l = &graph->launches[i];
		l->args.params = l->params;
		l->args.reach.sizes = l->args.size;
	}
}

wafer_status cpu_graph_run(const struct cpu_graph *graph,
			   const char **out_kernel)
{
	for (size_t i = 0; i < graph->count; i++) {
		const struct cpu_graph_launch *l = &graph->launches[i];
		wafer_status status = l->impl->run(&l->args);
		if (status != WAFER_OK) {
			*out_kernel = l->args.reach.kernel;
			return status;
		}
	}
	return WAFER_OK;
}
