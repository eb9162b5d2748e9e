# t/: TAP tests (make check; prove). Tests run against the build tree's
# plugins and read no installed configuration.
LOG_DRIVER = env AM_TAP_AWK='$(AWK)' $(SHELL) $(top_srcdir)/build-aux/tap-driver.sh
# A WAFER_PLUGIN_PATH set by the caller is searched after the build tree,
# so a vendor runs the suite against an out-of-tree plugin with
#   WAFER_BACKEND=acme WAFER_PLUGIN_PATH=/path/to/dir make check
AM_TESTS_ENVIRONMENT = \
	WAFER_PLUGIN_PATH='$(abs_top_builddir)/plugins/cpu/.libs:$(abs_top_builddir)/plugins/cuda/.libs:$(abs_top_builddir)/plugins/opencl/.libs:$(abs_top_builddir)/plugins/levelzero/.libs'"$${WAFER_PLUGIN_PATH:+:$$WAFER_PLUGIN_PATH}"; \
	WAFER_SYSCONFDIR='$(abs_top_srcdir)/etc'; \
	XDG_CONFIG_HOME='$(abs_top_builddir)/t/xdg-config'; \
	XDG_CACHE_HOME='$(abs_top_builddir)/t/xdg-cache'; \
	T_BUILDDIR='$(abs_top_builddir)/t'; T_SRCDIR='$(abs_top_srcdir)/t'; \
	SANITIZER_FLAGS='$(SANITIZER_FLAGS)'; export SANITIZER_FLAGS; \
	LSAN_OPTIONS="intercept_tls_get_addr=0:print_suppressions=0:suppressions=$(abs_top_srcdir)/t/lsan-opencl.supp$${LSAN_OPTIONS:+:$$LSAN_OPTIONS}"; \
	export WAFER_PLUGIN_PATH WAFER_SYSCONFDIR XDG_CONFIG_HOME XDG_CACHE_HOME T_BUILDDIR T_SRCDIR LSAN_OPTIONS;
# LSAN_OPTIONS, for runs on the OpenCL plugin (PoCL in CI); harmless
# without sanitizers, and a caller's own LSAN_OPTIONS come after them:
#  - intercept_tls_get_addr=0: LeakSanitizer's final scan crashes
#    ("Tracer caught signal 11") walking the dynamic TLS of libraries the
#    driver dlopened and dlclosed (PoCL loads each compiled kernel as a
#    shared object). Untracked, such TLS is not scanned, which can only
#    add leak reports, never hide one.
#  - t/lsan-opencl.supp: what PoCL and its LLVM leak while compiling
#    (driver frames only; the file says why).
EXTRA_DIST += t/tap.h t/fake_host.h t/catalogue.h t/client_util.h \
	t/lsan-opencl.supp t/valgrind.supp
# Test programs link the convenience library to reach internals.
T_CORE_LIBS = libwafer-core.la

# Backend-neutral: the client API on the default device (WAFER_BACKEND).
check_PROGRAMS += t/client
TESTS += t/client
t_client_LDADD = libwafer.la

# Backend-neutral: the caller's own kernels (program.h), in every format
# of t/user_kernels/ the device takes. The host-so source is kernels.c built
# into a module; the SPIR-V one is kernels.cl compiled as the levelzero
# plugin compiles its own (plugins/levelzero/local.mk), when configure
# found the tools.
check_PROGRAMS += t/programs
TESTS += t/programs
t_programs_LDADD = libwafer.la -lm
EXTRA_DIST += t/user_kernels/kernels.cl t/user_kernels/kernels.cu \
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

# Backend-neutral: [memory] limit and the out-of-memory handler through
# the client API, on every channel (t/cuda.sh runs it on the stand-in).
check_PROGRAMS += t/memory_oom
TESTS += t/memory_oom
t_memory_oom_LDADD = libwafer.la

# The plugins' compiled-binary cache (core/binary_cache.c), directly.
check_PROGRAMS += t/binary_cache
TESTS += t/binary_cache
t_binary_cache_LDADD = $(T_CORE_LIBS)

# The plugin loader and the runtime: test plugins, selectors, reports.
# Handles never issued twice (core/handle_table.c, driven directly).
check_PROGRAMS += t/handle_table
TESTS += t/handle_table
t_handle_table_LDADD = $(T_CORE_LIBS)

check_PROGRAMS += t/loader
TESTS += t/loader t/wafer-info.sh
t_loader_LDADD = $(T_CORE_LIBS)
EXTRA_DIST += t/wafer-info.sh
# t/wafer-info.sh runs the built tool.
t/wafer-info.log: tools/wafer-info$(EXEEXT)

# Test plugins (t/plugins/): loadable modules built for the tests only;
# -rpath makes libtool build a shared object for check_LTLIBRARIES. Each
# is one small file on top of t/plugins/common.c.
T_PLUGIN_LDFLAGS = $(WAFER_PLUGIN_LDFLAGS) -rpath /nowhere
T_PLUGIN_COMMON = t/plugins/common.c t/plugins/common.h
check_LTLIBRARIES += t/plugins/good.la t/plugins/full.la \
	t/plugins/old_minor.la t/plugins/abi_major.la t/plugins/no_symbol.la \
	t/plugins/init_fails.la t/plugins/no_devices.la \
	t/plugins/missing_required.la t/plugins/null_query.la \
	t/plugins/old_struct.la t/plugins/unresolved.la t/plugins/faulty.la \
	t/plugins/half_interop.la
t_plugins_good_la_SOURCES = t/plugins/good.c $(T_PLUGIN_COMMON)
t_plugins_good_la_LDFLAGS = $(T_PLUGIN_LDFLAGS)
t_plugins_full_la_SOURCES = t/plugins/full.c $(T_PLUGIN_COMMON)
t_plugins_full_la_LDFLAGS = $(T_PLUGIN_LDFLAGS)
t_plugins_old_minor_la_SOURCES = t/plugins/old_minor.c $(T_PLUGIN_COMMON)
t_plugins_old_minor_la_LDFLAGS = $(T_PLUGIN_LDFLAGS)
t_plugins_abi_major_la_SOURCES = t/plugins/abi_major.c $(T_PLUGIN_COMMON)
t_plugins_abi_major_la_LDFLAGS = $(T_PLUGIN_LDFLAGS)
t_plugins_init_fails_la_SOURCES = t/plugins/init_fails.c $(T_PLUGIN_COMMON)
t_plugins_init_fails_la_LDFLAGS = $(T_PLUGIN_LDFLAGS)
t_plugins_no_devices_la_SOURCES = t/plugins/no_devices.c $(T_PLUGIN_COMMON)
t_plugins_no_devices_la_LDFLAGS = $(T_PLUGIN_LDFLAGS)
t_plugins_missing_required_la_SOURCES = t/plugins/missing_required.c $(T_PLUGIN_COMMON)
t_plugins_missing_required_la_LDFLAGS = $(T_PLUGIN_LDFLAGS)
t_plugins_old_struct_la_SOURCES = t/plugins/old_struct.c $(T_PLUGIN_COMMON)
t_plugins_old_struct_la_LDFLAGS = $(T_PLUGIN_LDFLAGS)
t_plugins_half_interop_la_SOURCES = t/plugins/half_interop.c $(T_PLUGIN_COMMON)
t_plugins_half_interop_la_LDFLAGS = $(T_PLUGIN_LDFLAGS)
t_plugins_null_query_la_SOURCES = t/plugins/null_query.c
t_plugins_null_query_la_LDFLAGS = $(T_PLUGIN_LDFLAGS)
# No version script: it would hide the near-miss symbol this one exports.
t_plugins_no_symbol_la_SOURCES = t/plugins/no_symbol.c
t_plugins_no_symbol_la_LDFLAGS = -module -avoid-version -shared \
	-no-undefined -rpath /nowhere

# The fault-injecting shim over the cpu plugin (t/faults); it exports its
# call counter, so no version script.
t_plugins_faulty_la_SOURCES = t/plugins/faulty.c
t_plugins_faulty_la_LDFLAGS = -module -avoid-version -shared -rpath /nowhere
t_plugins_faulty_la_LIBADD = -ldl

# Fault injection: the k-th storage call or host malloc fails, swept over k.
check_PROGRAMS += t/faults
TESTS += t/faults
t_faults_LDADD = libwafer.la -ldl
# Its malloc wrappers must stand in for the library's and the plugin's.
t_faults_LDFLAGS = -rdynamic

# Needs a symbol nothing defines: no -no-undefined, which would refuse it.
t_plugins_unresolved_la_SOURCES = t/plugins/unresolved.c
t_plugins_unresolved_la_LDFLAGS = -module -avoid-version -shared -rpath /nowhere

# "not an ELF file": a file named like a plugin that is not a shared object.
check_DATA += t/plugins/not-a-plugin.so
t/plugins/not-a-plugin.so:
	$(AM_V_GEN)$(MKDIR_P) t/plugins && \
	echo 'not a shared object' > $@
CLEANFILES += t/plugins/not-a-plugin.so

# A plugin whose queues run work later on their own threads, like a GPU:
# the channel tests check ordering, errors and release against it.
check_LTLIBRARIES += t/plugins/async.la
t_plugins_async_la_SOURCES = t/plugins/async.c
t_plugins_async_la_LDFLAGS = $(WAFER_PLUGIN_LDFLAGS) -rpath /nowhere

# Channel semantics on every channel, default backend and async plugin.
check_PROGRAMS += t/channels
TESTS += t/channels
t_channels_LDADD = libwafer.la

# 16 threads x WAFER_STRESS_OPS mixed operations on one client.
check_PROGRAMS += t/stress
TESTS += t/stress
t_stress_LDADD = libwafer.la

# The configuration chain: syntax, errors, order (core/config.c).
check_PROGRAMS += t/config
TESTS += t/config
t_config_LDADD = $(T_CORE_LIBS)

# The header-only plugin helpers (<wafer/plugin_util.h>) on a fake host.
check_PROGRAMS += t/plugin_util
TESTS += t/plugin_util

# The cpu plugin through the vendor ABI alone: dlopen and a fake host.
check_PROGRAMS += t/cpu_plugin
TESTS += t/cpu_plugin
t_cpu_plugin_LDADD = -ldl

# The OpenCL plugin through the vendor ABI alone: options, storage, every
# kernel against a reference, errors, timers, threads (skips without a
# device).
if WAFER_OPENCL
check_PROGRAMS += t/opencl_plugin
TESTS += t/opencl_plugin
t_opencl_plugin_LDADD = $(T_CORE_LIBS) -ldl -lm -lpthread
# The binary cache across processes, the build-log error path, and no
# OpenCL platform at all.
check_PROGRAMS += t/opencl_cache
TESTS += t/opencl_cache
t_opencl_cache_LDADD = $(T_CORE_LIBS) -ldl -lpthread
endif
EXTRA_DIST += t/opencl_host.h

# The cpu plugin's collectives on MPI (plugins/cpu/comm_mpi.c): t/mpi.sh
# runs t/comm_mpi (and examples/mlp --data-parallel) under mpirun -np 4;
# skipped, with configure's reason, when wafer was configured without MPI.
TESTS += t/mpi.sh
EXTRA_DIST += t/mpi.sh
if WAFER_MPI
check_PROGRAMS += t/comm_mpi
t_comm_mpi_CPPFLAGS = $(AM_CPPFLAGS) $(MPI_CFLAGS)
t_comm_mpi_LDADD = libwafer.la $(MPI_LIBS) -ldl
endif
AM_TESTS_ENVIRONMENT += \
	WAFER_HAVE_MPI='$(WAFER_HAVE_MPI)' WAFER_MPI_WHY='$(WAFER_MPI_WHY)' \
	MPIRUN='$(MPIRUN)'; export WAFER_HAVE_MPI WAFER_MPI_WHY MPIRUN;

# The test programs a backend conditional below leaves out, each reported
# as skipped with configure's reason (t/configured.sh).
TESTS += t/configured.sh
EXTRA_DIST += t/configured.sh
AM_TESTS_ENVIRONMENT += \
	WAFER_HAVE_CUDA='$(WAFER_HAVE_CUDA)' WAFER_CUDA_WHY='$(WAFER_CUDA_WHY)' \
	WAFER_HAVE_OPENCL='$(WAFER_HAVE_OPENCL)' WAFER_OPENCL_WHY='$(WAFER_OPENCL_WHY)' \
	WAFER_HAVE_LEVELZERO='$(WAFER_HAVE_LEVELZERO)' WAFER_LEVELZERO_WHY='$(WAFER_LEVELZERO_WHY)' \
	WAFER_HAVE_DLPACK='$(WAFER_HAVE_DLPACK)' WAFER_DLPACK_WHY='$(WAFER_DLPACK_WHY)' \
	T_CPPFLAGS='$(CPPFLAGS)'; \
	export WAFER_HAVE_CUDA WAFER_CUDA_WHY WAFER_HAVE_OPENCL WAFER_OPENCL_WHY \
	WAFER_HAVE_LEVELZERO WAFER_LEVELZERO_WHY WAFER_HAVE_DLPACK WAFER_DLPACK_WHY \
	T_CPPFLAGS;

# Symbols the built libraries export.
TESTS += t/exports.sh
EXTRA_DIST += t/exports.sh

# Autotune: choices, cache files, processes (t/plugins/tunable.c gives
# kernel variants of known cost on a fake device clock).
check_LTLIBRARIES += t/plugins/tunable.la
t_plugins_tunable_la_SOURCES = t/plugins/tunable.c t/plugins/tunable.h \
	$(T_PLUGIN_COMMON)
t_plugins_tunable_la_LDFLAGS = $(T_PLUGIN_LDFLAGS)
check_PROGRAMS += t/autotune
TESTS += t/autotune
t_autotune_LDADD = libwafer.la
# Its clock_gettime and nanosleep stand in for libc's in the library and
# the tunable plugin (the host-clock case runs on a fake clock).
t_autotune_LDFLAGS = -rdynamic

# The cpu plugin's matmul and reduction variants against a reference, and
# the ops layer's tuned launches.
check_PROGRAMS += t/cpu_variants
TESTS += t/cpu_variants
t_cpu_variants_LDADD = libwafer.la -lm

# Autotune's cache files of the tests that tune through the ops layer.
clean-local: clean-local-t
clean-local-t:
	-rm -rf t/xdg-cache
.PHONY: clean-local-t

# Every operation of ops.h against a host reference (backend-neutral).
check_PROGRAMS += t/ops
TESTS += t/ops
t_ops_LDADD = libwafer.la -lm

# Native handles out and in (interop.h), on every channel; its "not
# supported" points use the good test plugin.
check_PROGRAMS += t/interop
TESTS += t/interop
t_interop_LDADD = libwafer.la

# The copy semantics and donation rules of ops.h, on every channel.
check_PROGRAMS += t/donation
TESTS += t/donation
t_donation_LDADD = libwafer.la

# Scopes (wafer_scope_begin): a scope per iteration reuses the last
# iteration's memory; nesting, keep, errors, threads; on every channel.
check_PROGRAMS += t/scope
TESTS += t/scope
t_scope_LDADD = libwafer.la -lpthread

# The plugin skeleton, built out of tree with pkg-config and its own
# Makefile, then loaded (t/plugin-skeleton.sh; not part of the main build).
TESTS += t/plugin-skeleton.sh
EXTRA_DIST += t/plugin-skeleton.sh t/plugin-skeleton-dlopen.c \
	t/plugin-skeleton-client.c
# It needs libwafer and tools/wafer-info, which `all` builds before any
# test runs. (A rule naming t/plugin-skeleton.sh.log here would replace
# automake's own rule for the log and the test would never run.)

# Memory strategies, each on a fake storage (t/fake_storage.h) that backs
# resources with host memory, counts calls and injects failures.
EXTRA_DIST += t/fake_storage.h
check_PROGRAMS += t/memory_chunked
TESTS += t/memory_chunked
t_memory_chunked_LDADD = $(T_CORE_LIBS)
check_PROGRAMS += t/memory_buckets
TESTS += t/memory_buckets
t_memory_buckets_LDADD = $(T_CORE_LIBS)
check_PROGRAMS += t/memory_stream
TESTS += t/memory_stream
t_memory_stream_LDADD = $(T_CORE_LIBS)
check_PROGRAMS += t/memory_direct
TESTS += t/memory_direct
t_memory_direct_LDADD = $(T_CORE_LIBS)
check_PROGRAMS += t/memory_pool
TESTS += t/memory_pool
t_memory_pool_LDADD = $(T_CORE_LIBS)
# [memory] limit and the out-of-memory hook, on the fake storage.
check_PROGRAMS += t/memory_limit
TESTS += t/memory_limit
t_memory_limit_LDADD = $(T_CORE_LIBS)
check_PROGRAMS += t/memory_property
TESTS += t/memory_property
t_memory_property_LDADD = $(T_CORE_LIBS)
check_PROGRAMS += t/memory_null
TESTS += t/memory_null
t_memory_null_LDADD = $(T_CORE_LIBS)

# Calls per storage entry, failures, retries and snapshots, on the fake
# storage (t/fake_storage.h).
check_PROGRAMS += t/memory_observe
TESTS += t/memory_observe
t_memory_observe_LDADD = $(T_CORE_LIBS)

# wafer-replay on a hand-made trace with known answers (t/replay.sh); it
# runs the tools/wafer-replay that `all` builds before any test.
TESTS += t/replay.sh
EXTRA_DIST += t/replay.sh t/replay-small.trace

# wafer-replay against the default backend's real storage.
TESTS += t/replay-backend.sh
EXTRA_DIST += t/replay-backend.sh

# [memory] trace on the default device: the recording replays with the
# wafer-replay that `all` builds under every strategy, and draws (--svg).
check_PROGRAMS += t/memory_trace
TESTS += t/memory_trace
t_memory_trace_LDADD = libwafer.la

# wafer_memory_snapshot on the default device, on each channel.
check_PROGRAMS += t/memory_snapshot
TESTS += t/memory_snapshot
t_memory_snapshot_LDADD = libwafer.la

# The direct strategy lets ASan catch a kernel writing past its handle.
check_PROGRAMS += t/overrun
TESTS += t/overrun
t_overrun_LDADD = libwafer.la

# The Python package (python/): built into a venv against this build
# tree, its pytest suite on the suite's backend, one TAP point per test.
TESTS += t/python.sh
EXTRA_DIST += t/python.sh

# Every public header compiles alone as C99 and C++.
TESTS += t/headers.sh
EXTRA_DIST += t/headers.sh

# The cuda plugin (when built) through the vendor ABI, on a stand-in
# driver (t/fakecuda.c) that keeps libcuda's contracts strictly and
# injects the failures a GPU machine rarely shows; `t/cuda_plugin --real`
# runs the driver-neutral part on a GPU (dev/gpu-check.sh).
EXTRA_DIST += t/fakecuda.h t/cuda_host.h t/half.h t/cuda.sh
# It runs tools/wafer-info and t/client, t/channels, t/stress, which are
# built before any test runs.
TESTS += t/cuda.sh
if WAFER_CUDA
check_LTLIBRARIES += t/fakecuda.la
t_fakecuda_la_SOURCES = t/fakecuda.c t/fakecuda.h t/half.h \
	t/fakecuda_program.c t/fakecuda_program.h \
	t/user_kernels/emulate.c t/user_kernels/emulate.h
t_fakecuda_la_CPPFLAGS = $(AM_CPPFLAGS) $(CUDA_CPPFLAGS)
t_fakecuda_la_LDFLAGS = -module -avoid-version -shared -no-undefined \
	-rpath /nowhere
t_fakecuda_la_LIBADD = -lm

check_PROGRAMS += t/cuda_plugin
TESTS += t/cuda_plugin
t_cuda_plugin_SOURCES = t/cuda_plugin.c t/cuda_host.h t/fakecuda.h t/half.h
t_cuda_plugin_LDADD = -ldl -lm

# The cuda plugin's peer copies and collectives through the vendor ABI:
# on the stand-in driver with FAKECUDA_DEVICES=2 and a stand-in NCCL
# (t/fakenccl.c, over t/inproc_comm); `t/cuda_comm --real` on the GPU
# and the real NCCL (dev/nccl-check.sh).
check_PROGRAMS += t/cuda_comm
TESTS += t/cuda_comm
t_cuda_comm_SOURCES = t/cuda_comm.c t/cuda_host.h t/fakecuda.h t/half.h
t_cuda_comm_LDADD = -ldl -lm -lpthread
if WAFER_NCCL
check_LTLIBRARIES += t/fakenccl.la
t_fakenccl_la_SOURCES = t/fakenccl.c t/fakecuda.h \
	t/inproc_comm.c t/inproc_comm.h t/half.h
t_fakenccl_la_CPPFLAGS = $(AM_CPPFLAGS) $(NCCL_CPPFLAGS) $(CUDA_CPPFLAGS)
t_fakenccl_la_LDFLAGS = -module -avoid-version -shared -no-undefined \
	-rpath /nowhere
t_fakenccl_la_LIBADD = -ldl -lpthread -lm
endif
endif

# libwafer-torch.so (torch/) as PyTorch drives it, on the stand-in driver:
# dlopened from the build tree, streams made by the stand-in's own
# cuStreamCreate (skips when the cuda plugin was not built).
check_PROGRAMS += t/torch_alloc
TESTS += t/torch_alloc
t_torch_alloc_LDADD = -ldl -lpthread

# The tests' XDG_CACHE_HOME: the OpenCL plugin's program binaries and
# PoCL's compiled kernels, made by make check.
clean-local: clean-local-t-cache
clean-local-t-cache:
	-rm -rf t/xdg-cache
.PHONY: clean-local-t-cache
EXTRA_DIST += t/backend-opencl.conf
# The Level Zero plugin, without Level Zero hardware: a test driver
# (t/levelzero/driver.c, host memory) that the real oneAPI loader loads
# through ZE_ENABLE_ALT_DRIVERS. Only these tests name it; nothing else in
# the suite, and no run of wafer-info outside them, sees it.
EXTRA_DIST += t/levelzero/fakeze.h t/levelzero/spirv.h t/levelzero/emulate.h \
	t/levelzero_nodriver.sh t/levelzero_spirv.sh t/levelzero_intercept.sh \
	t/levelzero_ops.sh t/levelzero_programs.sh t/levelzero_interop.sh
if WAFER_LEVELZERO
check_LTLIBRARIES += t/levelzero/fakeze.la
t_levelzero_fakeze_la_SOURCES = t/levelzero/driver.c t/levelzero/fakeze.h \
	t/levelzero/spirv.c t/levelzero/spirv.h \
	t/levelzero/emulate.h t/levelzero/emulate_plugin.c \
	t/levelzero/program.c t/levelzero/program.h \
	t/user_kernels/emulate.c t/user_kernels/emulate.h
t_levelzero_fakeze_la_CPPFLAGS = $(AM_CPPFLAGS) $(LEVELZERO_CFLAGS)
# No version script: the loader looks up the zeGet*ProcAddrTable exports.
t_levelzero_fakeze_la_LDFLAGS = -module -avoid-version -shared \
	-no-undefined -rpath /nowhere
t_levelzero_fakeze_la_LIBADD = -lm

# The plugin through the vendor ABI alone, on the test driver.
check_PROGRAMS += t/levelzero_plugin
TESTS += t/levelzero_plugin
t_levelzero_plugin_SOURCES = t/levelzero_plugin.c t/levelzero/fakeze.h
t_levelzero_plugin_LDADD = -ldl

# The plugin through libwafer: every memory strategy, every channel.
check_PROGRAMS += t/levelzero_client
TESTS += t/levelzero_client
t_levelzero_client_SOURCES = t/levelzero_client.c t/levelzero/fakeze.h
t_levelzero_client_LDADD = $(T_CORE_LIBS) -ldl

# The same with the loader's intercept layer on (several drivers).
TESTS += t/levelzero_intercept.sh

# The test driver's execution model: what a careless host program gets
# wrong (no barrier, no sync, wrong arguments) shows.
check_PROGRAMS += t/levelzero_model
TESTS += t/levelzero_model
t_levelzero_model_SOURCES = t/levelzero_model.c t/levelzero/fakeze.h
nodist_t_levelzero_model_SOURCES = plugins/levelzero/kernels-spirv.c
t_levelzero_model_CPPFLAGS = $(AM_CPPFLAGS) $(LEVELZERO_CFLAGS)
t_levelzero_model_LDADD = $(LEVELZERO_LIBS) -ldl

# t/ops (every operation against host references) on the test driver,
# which runs the kernels by emulation.
TESTS += t/levelzero_ops.sh
# t/programs (the caller's own SPIR-V kernels, emulated by name:
# t/levelzero/program.c) the same way.
TESTS += t/levelzero_programs.sh
# t/interop (native handles out and in) the same way.
TESTS += t/levelzero_interop.sh

# wafer-info without a driver and with the test driver; the embedded
# SPIR-V module validated.
TESTS += t/levelzero_nodriver.sh t/levelzero_spirv.sh
AM_TESTS_ENVIRONMENT += SPIRV_VAL='$(SPIRV_VAL)'; export SPIRV_VAL;
endif

# What the Level Zero plugin's kernels compute, on an OpenCL device (pocl's
# CPU device in CI): kernels.cl built by the device's own compiler and
# launched as the plugin's kernels.c prepares each launch. Not the SPIR-V
# module, not Intel hardware (see the test's comment).
EXTRA_DIST += t/levelzero_kernels_cl.c
if WAFER_LEVELZERO
if WAFER_OPENCL
check_PROGRAMS += t/levelzero_kernels_cl
TESTS += t/levelzero_kernels_cl
t_levelzero_kernels_cl_SOURCES = t/levelzero_kernels_cl.c \
	plugins/levelzero/kernels.c
t_levelzero_kernels_cl_CPPFLAGS = $(AM_CPPFLAGS) $(LEVELZERO_CFLAGS) \
	$(OPENCL_CFLAGS)
t_levelzero_kernels_cl_LDADD = $(OPENCL_LIBS) -lm
endif
endif

# `make check-valgrind`: the client and operations tests under valgrind
# memcheck; any error, or any byte definitely lost, fails the test.
# ./quickstart check runs it in the plain build.
VALGRIND_TESTS = t/client t/ops t/donation
VALGRIND = valgrind --quiet --error-exitcode=99 --leak-check=full \
	--suppressions=$(abs_top_srcdir)/t/valgrind.supp \
	--errors-for-leak-kinds=definite --show-leak-kinds=definite
check-valgrind:
	$(MAKE) $(AM_MAKEFLAGS) check TESTS='$(VALGRIND_TESTS)' \
		LOG_COMPILER='$(LIBTOOL) --mode=execute $(VALGRIND)'
.PHONY: check-valgrind

# Public calls and documented error paths no other test reached, one
# idea per file; backend-neutral (WAFER_BACKEND).
check_PROGRAMS += t/tensor t/ops_wrappers t/api_errors t/autotune_errors
TESTS += t/tensor t/ops_wrappers t/api_errors t/autotune_errors
t_tensor_LDADD = libwafer.la
t_ops_wrappers_LDADD = libwafer.la -lm
t_api_errors_LDADD = libwafer.la
t_autotune_errors_LDADD = libwafer.la
# wafer_client_open's NO_DEVICE, DEVICE and PLUGIN errors on test plugins
# (t/plugins/open_fails.c: devices that fail to open or to give a queue).
check_LTLIBRARIES += t/plugins/open_fails.la
t_plugins_open_fails_la_SOURCES = t/plugins/open_fails.c $(T_PLUGIN_COMMON)
t_plugins_open_fails_la_LDFLAGS = $(T_PLUGIN_LDFLAGS)
check_PROGRAMS += t/client_open_errors
TESTS += t/client_open_errors
t_client_open_errors_LDADD = $(T_CORE_LIBS)

# What each test runs on, for ./quickstart check's per-stage counts
# (t/tally.awk): the backend-neutral tests open the default device, so
# they run on the backend WAFER_BACKEND names and each of their points is
# a check per backend and channel; each backend's own tests drive that
# plugin (or its test driver) whatever WAFER_BACKEND says.
BACKEND_NEUTRAL_TESTS = t/client t/channels t/stress t/ops t/donation \
	t/replay-backend.sh t/tensor t/ops_wrappers t/api_errors t/autotune_errors \
	t/programs t/memory_trace t/memory_snapshot t/scope t/memory_oom \
	t/interop
# Backend-neutral: DLPack exchange (include/wafer/dlpack.h), when configure
# found DLPack (else t/configured.sh reports it skipped).
if WAFER_DLPACK
check_PROGRAMS += t/dlpack
TESTS += t/dlpack
t_dlpack_LDADD = libwafer.la
BACKEND_NEUTRAL_TESTS += t/dlpack
# The DLPack 1.x calls: core/dlpack.c compiled again against t/dlpack-v1/
# (the installed header plus 1.0's additions), ahead of the library's.
check_PROGRAMS += t/dlpack_versioned
TESTS += t/dlpack_versioned
t_dlpack_versioned_SOURCES = t/dlpack_versioned.c core/dlpack.c
t_dlpack_versioned_CPPFLAGS = -I$(top_srcdir)/t/dlpack-v1 $(AM_CPPFLAGS)
t_dlpack_versioned_LDADD = $(T_CORE_LIBS)
BACKEND_NEUTRAL_TESTS += t/dlpack_versioned
endif
EXTRA_DIST += t/dlpack-v1/dlpack/dlpack.h
BACKEND_OWN_TESTS = cpu:t/cpu_plugin cpu:t/cpu_variants cpu:t/mpi.sh \
	opencl:t/opencl_plugin opencl:t/opencl_cache \
	cuda:t/cuda_plugin cuda:t/cuda_comm cuda:t/cuda.sh cuda:t/torch_alloc \
	levelzero:t/levelzero_plugin levelzero:t/levelzero_client \
	levelzero:t/levelzero_intercept.sh levelzero:t/levelzero_nodriver.sh \
	levelzero:t/levelzero_spirv.sh levelzero:t/levelzero_kernels_cl \
	levelzero:t/levelzero_model levelzero:t/levelzero_ops.sh \
	levelzero:t/levelzero_programs.sh levelzero:t/levelzero_interop.sh
# t/dlpack on the Level Zero test driver, when both are built.
if WAFER_DLPACK
if WAFER_LEVELZERO
TESTS += t/levelzero_dlpack.sh
BACKEND_OWN_TESTS += levelzero:t/levelzero_dlpack.sh
endif
endif
EXTRA_DIST += t/levelzero_dlpack.sh
print-test-classes:
	@echo "neutral $(BACKEND_NEUTRAL_TESTS)"
	@echo "own $(BACKEND_OWN_TESTS)"
.PHONY: print-test-classes

# Scale-out (comm.h): the in-process collective engine the stand-ins share
# (t/inproc_comm.c: ranks are threads), the test plugin over it with peer
# copies and the comm entries, and the backend-neutral t/comm and t/peer,
# which also run their multi-device and multi-rank cases on that plugin.
EXTRA_DIST += t/inproc_comm.h t/log_capture.h
check_LTLIBRARIES += t/plugins/collective.la
t_plugins_collective_la_SOURCES = t/plugins/collective.c t/inproc_comm.c \
	t/inproc_comm.h t/half.h $(T_PLUGIN_COMMON)
t_plugins_collective_la_LDFLAGS = $(T_PLUGIN_LDFLAGS)
t_plugins_collective_la_LIBADD = -lpthread -lm
check_PROGRAMS += t/comm t/peer
TESTS += t/comm t/peer
t_comm_LDADD = libwafer.la -lpthread
t_peer_LDADD = libwafer.la -lpthread
BACKEND_NEUTRAL_TESTS += t/comm t/peer
# The engine on its own: joins, every dtype, mismatched calls.
check_PROGRAMS += t/inproc_engine
TESTS += t/inproc_engine
t_inproc_engine_SOURCES = t/inproc_engine.c t/inproc_comm.c t/inproc_comm.h \
	t/half.h
t_inproc_engine_LDADD = -lpthread -lm
# Its own objects: the plugin compiles inproc_comm.c with libtool.
t_inproc_engine_CFLAGS = $(AM_CFLAGS)
# The build tree runs without installing (core/build_tree.c, ./uninstalled);
# the man pages render without warnings; wafer-bench's usage and progress.
TESTS += t/build_tree.sh t/man.sh t/wafer-bench.sh
EXTRA_DIST += t/build_tree.sh t/man.sh t/wafer-bench.sh
