# t/api/: backend-neutral tests, the client API on the default device
# (WAFER_BACKEND); wafer-conformance(1) installs and runs them.

# The list wafer-conformance runs and t/tally.awk counts per backend.
BACKEND_NEUTRAL_TESTS += t/api/client t/api/channels t/api/stress t/api/ops t/api/donation \
	t/api/replay-backend.sh t/api/tensor t/api/ops_wrappers t/api/api_errors t/api/autotune_errors \
	t/api/programs t/api/memory_trace t/api/memory_snapshot t/api/scope t/api/memory_oom \
	t/api/interop t/api/program_images t/api/trace

# Backend-neutral: the client API on the default device (WAFER_BACKEND).
check_PROGRAMS += t/api/client
TESTS += t/api/client
t_api_client_LDADD = libwafer.la

# Backend-neutral: the caller's own kernels (program.h), in every format
# of t/user_kernels/ the device takes. The host-so source is kernels.c built
# into a module; the SPIR-V one is kernels.cl compiled as the levelzero
# plugin compiles its own (plugins/levelzero/local.mk), when configure
# found the tools.
check_PROGRAMS += t/api/programs
TESTS += t/api/programs
t_api_programs_SOURCES = t/api/programs.c t/abi/describe.c t/abi/describe.h
t_api_programs_LDADD = libwafer.la -lm
EXTRA_DIST += t/user_kernels/kernels.cl t/user_kernels/kernels.cu t/user_kernels/sources.h \
	t/user_kernels/kernels.ptx
check_LTLIBRARIES += t/user_kernels/kernels.la
t_user_kernels_kernels_la_SOURCES = t/user_kernels/kernels.c
t_user_kernels_kernels_la_LDFLAGS = -module -avoid-version -shared -rpath /nowhere
if WAFER_LEVELZERO
check_DATA += t/user_kernels/kernels.spv
t/user_kernels/kernels.spv: t/user_kernels/kernels.cl
	$(AM_V_GEN)$(MKDIR_P) t/user_kernels && \
	$(LEVELZERO_CLANG) $(LEVELZERO_CLFLAGS) \
		-c $(srcdir)/t/user_kernels/kernels.cl -o $@.bc && \
	$(LLVM_SPIRV) $(LEVELZERO_SPIRV_FLAGS) $@.bc -o $@.tmp && \
	$(SPIRV_VAL) --target-env opencl2.0 $@.tmp && \
	rm -f $@.bc && mv -f $@.tmp $@
CLEANFILES += t/user_kernels/kernels.spv
endif

# Backend-neutral: what program creation refuses (text with NULs, host-so
# images cut short or malformed, data symbols as kernels) and that two
# programs never alias; each part where the device takes its format.
check_PROGRAMS += t/api/program_images
TESTS += t/api/program_images
t_api_program_images_LDADD = libwafer.la

# Backend-neutral: [memory] limit and the out-of-memory handler through
# the client API, on every channel (t/cuda/cuda.sh runs it on the stand-in).
check_PROGRAMS += t/api/memory_oom
TESTS += t/api/memory_oom
t_api_memory_oom_LDADD = libwafer.la

# Channel semantics on every channel, default backend and async plugin.
check_PROGRAMS += t/api/channels
TESTS += t/api/channels
t_api_channels_LDADD = libwafer.la

# 16 threads x WAFER_STRESS_OPS mixed operations on one client.
check_PROGRAMS += t/api/stress
TESTS += t/api/stress
t_api_stress_LDADD = libwafer.la

# Every operation of ops.h against a host reference (backend-neutral).
check_PROGRAMS += t/api/ops
TESTS += t/api/ops
t_api_ops_LDADD = libwafer.la -lm
# The same on float64, int32, int64 and uint8, and cast between every
# pair of dtypes (judges a backend by the dtypes it keeps and adds).
check_PROGRAMS += t/api/ops_dtypes
TESTS += t/api/ops_dtypes
t_api_ops_dtypes_LDADD = libwafer.la -lm
BACKEND_NEUTRAL_TESTS += t/api/ops_dtypes

# Native handles out and in (interop.h), on every channel; its "not
# supported" points use the good test plugin.
check_PROGRAMS += t/api/interop
TESTS += t/api/interop
t_api_interop_LDADD = libwafer.la

# The copy semantics and donation rules of ops.h, on every channel.
check_PROGRAMS += t/api/donation
TESTS += t/api/donation
t_api_donation_LDADD = libwafer.la

# Scopes (wafer_scope_begin): a scope per iteration reuses the last
# iteration's memory; nesting, keep, errors, threads; on every channel.
check_PROGRAMS += t/api/scope
TESTS += t/api/scope
t_api_scope_LDADD = libwafer.la -lpthread

# wafer-replay against the default backend's real storage.
TESTS += t/api/replay-backend.sh
EXTRA_DIST += t/api/replay-backend.sh

# [memory] trace on the default device: the recording replays with the
# wafer-replay that `all` builds under every strategy, and draws (--svg).
check_PROGRAMS += t/api/memory_trace
TESTS += t/api/memory_trace
t_api_memory_trace_LDADD = libwafer.la

# wafer_memory_snapshot on the default device, on each channel.
check_PROGRAMS += t/api/memory_snapshot
TESTS += t/api/memory_snapshot
t_api_memory_snapshot_LDADD = libwafer.la

# Public calls and documented error paths no other test reached (issue
# 21), one idea per file; backend-neutral (WAFER_BACKEND).
check_PROGRAMS += t/api/tensor t/api/ops_wrappers t/api/api_errors t/api/autotune_errors
TESTS += t/api/tensor t/api/ops_wrappers t/api/api_errors t/api/autotune_errors
t_api_tensor_LDADD = libwafer.la
t_api_ops_wrappers_LDADD = libwafer.la -lm
t_api_api_errors_LDADD = libwafer.la
t_api_autotune_errors_LDADD = libwafer.la

# Backend-neutral: DLPack exchange (include/wafer/dlpack.h), when configure
# found DLPack (else t/configured.sh reports it skipped).
if WAFER_DLPACK
check_PROGRAMS += t/api/dlpack
TESTS += t/api/dlpack
t_api_dlpack_LDADD = libwafer.la
BACKEND_NEUTRAL_TESTS += t/api/dlpack
# The DLPack 1.x calls: lib/dlpack.c compiled again against t/api/dlpack-v1/
# (the installed header plus 1.0's additions), ahead of the library's.
check_PROGRAMS += t/api/dlpack_versioned
TESTS += t/api/dlpack_versioned
t_api_dlpack_versioned_SOURCES = t/api/dlpack_versioned.c lib/dlpack.c
t_api_dlpack_versioned_CPPFLAGS = -I$(top_srcdir)/t/api/dlpack-v1 $(AM_CPPFLAGS)
t_api_dlpack_versioned_LDADD = $(T_CORE_LIBS)
BACKEND_NEUTRAL_TESTS += t/api/dlpack_versioned
endif
EXTRA_DIST += t/api/dlpack-v1/dlpack/dlpack.h

# Scale-out (comm.h): the in-process collective engine the stand-ins share
# with the cpu plugin (plugins/cpu/inproc_comm.c, comm_inproc.c: ranks
# are threads), the test plugin over it with peer copies and the comm
# entries, and the backend-neutral t/api/comm and t/api/peer, which also
# run their multi-device and multi-rank cases on that plugin.
EXTRA_DIST += plugins/cpu/inproc_comm.h t/log_capture.h
check_LTLIBRARIES += t/plugins/collective.la
t_plugins_collective_la_SOURCES = t/plugins/collective.c plugins/cpu/inproc_comm.c \
	plugins/cpu/inproc_comm.h plugins/cpu/comm_inproc.c \
	plugins/cpu/comm_inproc.h $(T_PLUGIN_COMMON)
t_plugins_collective_la_LDFLAGS = $(T_PLUGIN_LDFLAGS)
t_plugins_collective_la_LIBADD = -lpthread -lm
check_PROGRAMS += t/api/comm t/api/peer
TESTS += t/api/comm t/api/peer
t_api_comm_LDADD = libwafer.la -lpthread
t_api_peer_LDADD = libwafer.la -lpthread
BACKEND_NEUTRAL_TESTS += t/api/comm t/api/peer
# Sub-communicators, 2 x 2 (t/comm_split.h, shared with t/cpu/comm_mpi).
check_PROGRAMS += t/api/comm_split
TESTS += t/api/comm_split
t_api_comm_split_LDADD = libwafer.la -lpthread
BACKEND_NEUTRAL_TESTS += t/api/comm_split
# Grouped collectives (wafer_comm_group_begin), two ranks.
check_PROGRAMS += t/api/comm_group
TESTS += t/api/comm_group
t_api_comm_group_LDADD = libwafer.la -lpthread -ldl
BACKEND_NEUTRAL_TESTS += t/api/comm_group
EXTRA_DIST += t/comm_split.h t/comm_backends.h

# Several queues on one client, events and host callbacks (queue.h,
# wafer-queue(7)), on every channel.
check_PROGRAMS += t/api/queues
TESTS += t/api/queues
t_api_queues_LDADD = libwafer.la -lpthread
BACKEND_NEUTRAL_TESTS += t/api/queues

# Registered host memory (wafer_host_register(3)), on every channel.
check_PROGRAMS += t/api/host
TESTS += t/api/host
t_api_host_LDADD = libwafer.la
BACKEND_NEUTRAL_TESTS += t/api/host

# Graphs: capture on a queue and replay (graph.h, wafer_graph(3)).
check_PROGRAMS += t/api/graphs
TESTS += t/api/graphs
t_api_graphs_LDADD = libwafer.la -lpthread
BACKEND_NEUTRAL_TESTS += t/api/graphs

# examples/mlp --graph: a captured step replayed trains as eagerly.
TESTS += t/api/mlp_graph.sh
EXTRA_DIST += t/api/mlp_graph.sh

# Backend-neutral: the timeline trace (wafer_trace_begin(3)) on every
# channel, read back with wafer-trace's own reader and schema check.
check_PROGRAMS += t/api/trace
TESTS += t/api/trace
t_api_trace_SOURCES = t/api/trace.c tools/timeline.c tools/timeline.h
t_api_trace_LDADD = libwafer.la -lm

# Backend-neutral: program ids and kernel refs, released and reused, on
# each channel (links the core to read the program table's size).
check_PROGRAMS += t/api/program_ids
TESTS += t/api/program_ids
t_api_program_ids_LDADD = $(T_CORE_LIBS) -lpthread
BACKEND_NEUTRAL_TESTS += t/api/program_ids
