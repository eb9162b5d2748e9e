# t/internal/: the core's own units and checks of the build.

# The plugins' compiled-binary cache (lib/binary_cache.c), directly.
check_PROGRAMS += t/internal/binary_cache
TESTS += t/internal/binary_cache
t_internal_binary_cache_LDADD = $(T_CORE_LIBS)

# The plugin loader and the runtime: test plugins, selectors, reports.
# Handles never issued twice (lib/handle_table.c, driven directly).
check_PROGRAMS += t/internal/handle_table
TESTS += t/internal/handle_table
t_internal_handle_table_LDADD = $(T_CORE_LIBS)

check_PROGRAMS += t/internal/loader
TESTS += t/internal/loader t/internal/wafer-info.sh
t_internal_loader_LDADD = $(T_CORE_LIBS)
EXTRA_DIST += t/internal/wafer-info.sh
# t/internal/wafer-info.sh runs the built tool.
t/wafer-info.log: tools/wafer-info$(EXEEXT)

# Fault injection: the k-th storage call or host malloc fails, swept over k.
check_PROGRAMS += t/internal/faults
TESTS += t/internal/faults
t_internal_faults_LDADD = libwafer.la -ldl
# Its malloc wrappers must stand in for the library's and the plugin's.
t_internal_faults_LDFLAGS = -rdynamic

# The configuration chain: syntax, errors, order (lib/config.c).
check_PROGRAMS += t/internal/config
TESTS += t/internal/config
t_internal_config_LDADD = $(T_CORE_LIBS)

# The header-only plugin helpers (<wafer/plugin_util.h>) on a fake host.
check_PROGRAMS += t/internal/plugin_util
TESTS += t/internal/plugin_util

# Symbols the built libraries export.
TESTS += t/internal/exports.sh
EXTRA_DIST += t/internal/exports.sh

# Autotune: choices, cache files, processes (t/plugins/tunable.c gives
# kernel variants of known cost on a fake device clock).
check_LTLIBRARIES += t/plugins/tunable.la
t_plugins_tunable_la_SOURCES = t/plugins/tunable.c t/plugins/tunable.h \
	$(T_PLUGIN_COMMON)
t_plugins_tunable_la_LDFLAGS = $(T_PLUGIN_LDFLAGS)
check_PROGRAMS += t/internal/autotune
TESTS += t/internal/autotune
t_internal_autotune_LDADD = libwafer.la
# Its clock_gettime and nanosleep stand in for libc's in the library and
# the tunable plugin (the host-clock case runs on a fake clock).
t_internal_autotune_LDFLAGS = -rdynamic

# The plugin skeleton, built out of tree with pkg-config and its own
# Makefile, then loaded (t/internal/plugin-skeleton.sh; not part of the main build).
TESTS += t/internal/plugin-skeleton.sh
EXTRA_DIST += t/internal/plugin-skeleton.sh t/internal/plugin-skeleton-dlopen.c \
	t/internal/plugin-skeleton-client.c
# The sim example (examples/plugin-sim) built the same way, then the
# plugin-ABI suite and t/api/programs on it, with its description.
TESTS += t/internal/plugin-sim.sh
EXTRA_DIST += t/internal/plugin-sim.sh
# It needs libwafer and tools/wafer-info, which `all` builds before any
# test runs. (A rule naming t/internal/plugin-skeleton.sh.log here would replace
# automake's own rule for the log and the test would never run.)

# Memory strategies, each on a fake storage (t/standins/fake_storage.h) that backs
# resources with host memory, counts calls and injects failures.
EXTRA_DIST += t/standins/fake_storage.h
check_PROGRAMS += t/internal/memory_chunked
TESTS += t/internal/memory_chunked
t_internal_memory_chunked_LDADD = $(T_CORE_LIBS)
check_PROGRAMS += t/internal/memory_buckets
TESTS += t/internal/memory_buckets
t_internal_memory_buckets_LDADD = $(T_CORE_LIBS)
check_PROGRAMS += t/internal/memory_stream
TESTS += t/internal/memory_stream
t_internal_memory_stream_LDADD = $(T_CORE_LIBS)
check_PROGRAMS += t/internal/memory_direct
TESTS += t/internal/memory_direct
t_internal_memory_direct_LDADD = $(T_CORE_LIBS)
check_PROGRAMS += t/internal/memory_pool
TESTS += t/internal/memory_pool
t_internal_memory_pool_LDADD = $(T_CORE_LIBS)
# [memory] limit and the out-of-memory hook, on the fake storage.
check_PROGRAMS += t/internal/memory_limit
TESTS += t/internal/memory_limit
t_internal_memory_limit_LDADD = $(T_CORE_LIBS)
check_PROGRAMS += t/internal/memory_property
TESTS += t/internal/memory_property
t_internal_memory_property_LDADD = $(T_CORE_LIBS)
check_PROGRAMS += t/internal/memory_null
TESTS += t/internal/memory_null
t_internal_memory_null_LDADD = $(T_CORE_LIBS)

# Calls per storage entry, failures, retries and snapshots, on the fake
# storage (t/standins/fake_storage.h).
check_PROGRAMS += t/internal/memory_observe
TESTS += t/internal/memory_observe
t_internal_memory_observe_LDADD = $(T_CORE_LIBS)

# wafer-replay on a hand-made trace with known answers (t/internal/replay.sh); it
# runs the tools/wafer-replay that `all` builds before any test.
TESTS += t/internal/replay.sh
EXTRA_DIST += t/internal/replay.sh t/replay-small.trace

# wafer-trace on a hand-made timeline with known answers, and check on
# malformed ones (t/internal/trace_report.sh).
TESTS += t/internal/trace_report.sh
EXTRA_DIST += t/internal/trace_report.sh t/trace-small.json

# wafer-bench's argument checks (t/internal/bench_args.sh).
TESTS += t/internal/bench_args.sh
EXTRA_DIST += t/internal/bench_args.sh

# The direct strategy lets ASan catch a kernel writing past its handle.
check_PROGRAMS += t/internal/overrun
TESTS += t/internal/overrun
t_internal_overrun_LDADD = libwafer.la

# The Python package (python/): built into a venv against this build
# tree, its pytest suite on the suite's backend, one TAP point per test.
TESTS += t/internal/python.sh
EXTRA_DIST += t/internal/python.sh

# Every public header compiles alone as C99 and C++.
TESTS += t/internal/headers.sh
EXTRA_DIST += t/internal/headers.sh

# wafer_client_open's NO_DEVICE, DEVICE and PLUGIN errors on test plugins
# (t/plugins/open_fails.c: devices that fail to open or to give a queue).
check_LTLIBRARIES += t/plugins/open_fails.la
t_plugins_open_fails_la_SOURCES = t/plugins/open_fails.c $(T_PLUGIN_COMMON)
t_plugins_open_fails_la_LDFLAGS = $(T_PLUGIN_LDFLAGS)
check_PROGRAMS += t/internal/client_open_errors
TESTS += t/internal/client_open_errors
t_internal_client_open_errors_LDADD = $(T_CORE_LIBS)

# The build tree runs without installing (lib/build_tree.c, ./uninstalled);
# the man pages render without warnings; wafer-bench's usage and progress.
TESTS += t/internal/build_tree.sh t/internal/man.sh t/internal/wafer-bench.sh
EXTRA_DIST += t/internal/build_tree.sh t/internal/man.sh \
	t/internal/wafer-bench.sh

# wafer-launch(1): ranks, the communicator id through the launcher's file
# (wafer_comm_launched), and a failing rank stopping the others.
check_PROGRAMS += t/internal/launch_rank
t_internal_launch_rank_LDADD = libwafer.la
TESTS += t/internal/launch.sh
EXTRA_DIST += t/internal/launch.sh
