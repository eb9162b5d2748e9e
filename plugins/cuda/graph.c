/* wafer — SPDX-License-Identifier: MIT
 *
 * graph.c: the cuda plugin's native graphs (ABI 1.6). The core issues a
 * run of launches on a queue of its own between graph_begin and
 * graph_end; the stream is captured (cuStreamBeginCapture), the graph
 * instantiated once (cuGraphInstantiate) and the graph it captured freed
 * at once: only the executable graph is kept, and each replay is one
 * cuGraphLaunch. Capture is relaxed: a cuBLAS handle made at a first
 * matmul during capture may allocate (and any failure makes the core
 * replay the run itself). */
#include "build-config.h"

#include "plugins/cuda/cuda_plugin.h"

wafer_status cuda_graph_begin(void *device, void *queue)
{
	struct cuda_device *dev = device;
	struct cuda_queue *q = queue;
	CUDA_ENTER_RETURN(dev, cuStreamBeginCapture, q->stream, CU_STREAM_CAPTURE_MODE_RELAXED);
}

wafer_status cuda_graph_end(void *device, void *queue, void **out_graph)
{
	struct cuda_device *dev = device;
	struct cuda_queue *q = queue;
	wafer_status status = cuda_enter(dev);
	CUgraph graph = NULL;
	CUgraphExec exec = NULL;
	CUresult result;

	*out_graph = NULL;
	if (status != WAFER_OK)
		return status;
	/* Ends the capture whatever happened in it, so the stream is
	 * usable again. */
	result = dev->drv->cuStreamEndCapture(q->stream, &graph);
	if (result != CUDA_SUCCESS)
		return cuda_fail(dev->state, result, "cuStreamEndCapture");
	result = dev->drv->cuGraphInstantiateWithFlags(&exec, graph, 0);
	dev->drv->cuGraphDestroy(graph);
	if (result != CUDA_SUCCESS)
		return cuda_fail(dev->state, result, "cuGraphInstantiate");
	*out_graph = exec;
	return WAFER_OK;
}

wafer_status cuda_graph_launch(void *device, void *queue, void *graph)
{
	struct cuda_device *dev = device;
	struct cuda_queue *q = queue;
	CUDA_ENTER_RETURN(dev, cuGraphLaunch, graph, q->stream);
}

/* CUDA frees an executable graph whose launches are still running once
 * they finished. */
void cuda_graph_destroy(void *device, void *graph)
{
	struct cuda_device *dev = device;

	if (graph && cuda_enter(dev) == WAFER_OK)
		dev->drv->cuGraphExecDestroy(graph);
}
