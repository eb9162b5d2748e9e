# man/: manual pages.
# wafer(7) is the overview and wafer-plugin(7) the vendor guide. Each
# section 3 page documents a group of related calls; the other names of
# the group are one-line .so pages pointing at it.
dist_man_MANS += man/wafer.7 man/wafer-plugin.7
dist_man_MANS += \
	man/wafer_client_open.3 \
	man/wafer_empty.3 \
	man/wafer_execute.3 \
	man/wafer_memory_usage_get.3 \
	man/wafer_retain.3 \
	man/wafer_runtime_device_count.3 \
	man/wafer_runtime_open.3 \
	man/wafer_status_string.3 \
	man/wafer_sync.3
dist_man_MANS += \
	man/wafer_client_close.3 \
	man/wafer_client_device.3 \
	man/wafer_create.3 \
	man/wafer_handle_is_null.3 \
	man/wafer_handle_size.3 \
	man/wafer_host_register.3 \
	man/wafer_host_unregister.3 \
	man/wafer_kernel_find.3 \
	man/wafer_last_error.3 \
	man/wafer_memory_trim.3 \
	man/wafer_memory_set_oom_handler.3 \
	man/wafer_read.3 \
	man/wafer_read_async.3 \
	man/wafer_release.3 \
	man/wafer_runtime_close.3 \
	man/wafer_runtime_config_source.3 \
	man/wafer_runtime_config_source_count.3 \
	man/wafer_runtime_config_value.3 \
	man/wafer_runtime_device.3 \
	man/wafer_runtime_plugin.3 \
	man/wafer_runtime_plugin_count.3 \
	man/wafer_version_string.3 \
	man/wafer_write.3
dist_man_MANS += man/wafer-info.1
dist_man_MANS += man/wafer-launch.1 man/wafer_comm_launched.3
# wafer_memory_snapshot(3): its own page (one call, its own types).
dist_man_MANS += man/wafer_memory_snapshot.3
dist_man_MANS += man/wafer.conf.5

# ops.h (wafer_ops(3), one page for the header; the other names are .so
# links to it) and the donation rules (wafer-donation(7)).
dist_man_MANS += man/wafer_ops.3 man/wafer-donation.7
dist_man_MANS += \
	man/wafer_op_fill.3 \
	man/wafer_op_copy.3 \
	man/wafer_op_cast.3 \
	man/wafer_op_unary.3 \
	man/wafer_op_binary.3 \
	man/wafer_op_binary_scalar.3 \
	man/wafer_op_reduce.3 \
	man/wafer_op_softmax.3 \
	man/wafer_op_matmul.3 \
	man/wafer_tensor_view.3 \
	man/wafer_tensor_empty.3 \
	man/wafer_tensor_create.3 \
	man/wafer_tensor_read.3 \
	man/wafer_tensor_release.3 \
	man/wafer_tensor_transpose.3 \
	man/wafer_tensor_reshape.3 \
	man/wafer_tensor_slice.3 \
	man/wafer_tensor_count.3 \
	man/wafer_dtype_size.3 \
	man/wafer_handle_references.3

dist_man_MANS += man/wafer-bench.1
dist_man_MANS += man/wafer-channels.7
# Autotune: the calls of <wafer/autotune.h> and the [autotune] settings.
dist_man_MANS += man/wafer_execute_autotune.3 man/wafer-autotune.7 \
	man/wafer_autotune_execute_candidate.3 \
	man/wafer_autotune_candidates.3 \
	man/wafer_autotune_cache_file.3 \
	man/wafer_autotune_stats_get.3 \
	man/wafer_autotune_anchor.3
dist_man_MANS += man/wafer-replay.1
dist_man_MANS += man/wafer-trace.1 man/wafer_trace_begin.3 man/wafer_trace_end.3
dist_man_MANS += man/wafer-memory.7
dist_man_MANS += man/wafer-cuda.7
dist_man_MANS += man/wafer-opencl.7
dist_man_MANS += man/wafer-levelzero.7
# Programs: the caller's own kernels (<wafer/program.h>).
dist_man_MANS += man/wafer-program.7 man/wafer_program_create.3 \
	man/wafer_program_kernel.3 man/wafer_program_release.3 \
	man/wafer_program_format_name.3
# Scopes: handles released together (wafer_scope_begin in <wafer/wafer.h>).
dist_man_MANS += man/wafer_scope_begin.3 man/wafer_scope_end.3 \
	man/wafer_scope_keep.3
# Interop: native handles out and in (<wafer/interop.h>).
dist_man_MANS += man/wafer-interop.7 man/wafer_handle_native.3 \
	man/wafer_handle_import.3 man/wafer_client_native_queue.3 \
	man/wafer_native_kind_name.3
# DLPack exchange (<wafer/dlpack.h>), installed with the header only.
if WAFER_DLPACK
dist_man_MANS += man/wafer_tensor_to_dlpack.3 man/wafer_tensor_from_dlpack.3 \
	man/wafer_tensor_to_dlpack_versioned.3 \
	man/wafer_tensor_from_dlpack_versioned.3
else
EXTRA_DIST += man/wafer_tensor_to_dlpack.3 man/wafer_tensor_from_dlpack.3 \
	man/wafer_tensor_to_dlpack_versioned.3 \
	man/wafer_tensor_from_dlpack_versioned.3
endif
dist_man_MANS += man/wafer-torch.7
# Scale-out: peer copies and collectives (<wafer/comm.h>).
dist_man_MANS += man/wafer-comm.7 man/wafer_copy_peer.3 \
	man/wafer_comm_open.3 man/wafer_comm_id_create.3 \
	man/wafer_comm_open_group.3 man/wafer_comm_close.3 \
	man/wafer_comm_rank.3 man/wafer_comm_size.3 \
	man/wafer_comm_all_reduce.3 man/wafer_comm_broadcast.3 \
	man/wafer_comm_all_gather.3 man/wafer_comm_reduce_scatter.3 \
	man/wafer_comm_send.3 man/wafer_comm_recv.3 man/wafer_comm_split.3 \
	man/wafer_comm_group_begin.3 man/wafer_comm_group_end.3
# The cpu plugin's collectives through MPI (plugins/cpu/comm_mpi.c).
dist_man_MANS += man/wafer-mpi.7

# queue.h: several queues on one client, events and host callbacks
# (wafer-queue(7)); the other names are .so links to the two pages.
dist_man_MANS += man/wafer-queue.7 man/wafer_queue_open.3 \
	man/wafer_queue_open_native.3 \
	man/wafer_queue_close.3 man/wafer_client_default_queue.3 \
	man/wafer_queue_select.3 man/wafer_queue_current.3 \
	man/wafer_queue_sync.3 man/wafer_queue_callback.3 \
	man/wafer_event_create.3 man/wafer_event_record.3 \
	man/wafer_queue_wait.3 man/wafer_event_sync.3 \
	man/wafer_event_query.3 man/wafer_event_elapsed.3 \
	man/wafer_event_release.3

# graph.h: capture and replay; the other names are .so links.
dist_man_MANS += man/wafer_graph.3 man/wafer_queue_begin_capture.3 \
	man/wafer_queue_end_capture.3 man/wafer_graph_launch.3 \
	man/wafer_graph_rebind.3 man/wafer_graph_info_get.3 \
	man/wafer_graph_release.3
