# tools/: command-line programs installed with the library.
# wafer-info: what wafer sees — configuration, plugins, devices (wafer-info(1)).
bin_PROGRAMS += tools/wafer-info
tools_wafer_info_SOURCES = tools/wafer-info.c
tools_wafer_info_LDADD = libwafer.la

# wafer-launch: N processes of a program as the ranks of a job, where
# no MPI launcher is (wafer-launch(1)).
bin_PROGRAMS += tools/wafer-launch
tools_wafer_launch_SOURCES = tools/wafer-launch.c

bin_PROGRAMS += tools/wafer-bench
tools_wafer_bench_SOURCES = tools/wafer-bench.c tools/bench/bench.h \
	tools/bench/dispatch.c tools/bench/alloc.c tools/bench/donation.c \
	tools/bench/matmul.c tools/bench/compare.c tools/bench/bandwidth.c \
	tools/bench/raw.h tools/bench/replay.c tools/bench/allreduce.c \
	tools/bench/queues.c tools/bench/graph.c tools/bench/pin.c \
	tools/bench/pin.h \
	tools/trace.c tools/trace.h \
	tools/trace_file.c tools/trace_file.h \
	tools/replay_backend.c tools/replay_backend.h
# OpenBLAS, when configure found it, is matmul's reference. `replay`
# drives a memory strategy on a device's storage directly, as
# wafer-replay does: the core's internals, so the core is linked in
# (libwafer-core.la, which libwafer.la wraps) like wafer-replay's.
tools_wafer_bench_LDADD = libwafer-core.la $(OPENBLAS_LIBS) $(ZLIB_LIBS) -lm
tools_wafer_bench_CPPFLAGS = $(AM_CPPFLAGS) $(OPENBLAS_CFLAGS) $(BENCH_CUDA_CPPFLAGS)
tools_wafer_bench_CFLAGS = $(AM_CFLAGS) $(ZLIB_CFLAGS)
# Raw vendor counterparts (tools/bench/raw.h): with the cuda plugin, the
# driver and cuBLAS called directly (loaded with the plugin's own dlopen
# loader) and the `sgemm` benchmark; its baseline kernels are compiled by
# nvcc and embedded like the plugin's.
EXTRA_DIST += tools/bench/raw_kernels.cu
if WAFER_CUDA
tools_wafer_bench_SOURCES += tools/bench/cuda_raw.c tools/bench/raw_fatbin.S \
	tools/bench/nccl_raw.c \
	plugins/cuda/driver.c plugins/cuda/driver.h
BENCH_CUDA_CPPFLAGS = $(NCCL_CPPFLAGS) $(CUDA_CPPFLAGS) \
	-DWAFER_BENCH_CUDA -DWAFER_CUDA_LIBDIR='"$(CUDA_HOME)/lib64"'
tools_wafer_bench_CCASFLAGS = -Wa,-I,$(abs_top_builddir)
BENCH_RAW_FATBIN = tools/bench/raw_kernels.fatbin
BENCH_RAW_OBJECT = tools/bench/wafer_bench-raw_fatbin.$(OBJEXT)
$(BENCH_RAW_OBJECT): $(BENCH_RAW_FATBIN)
$(BENCH_RAW_FATBIN): tools/bench/raw_kernels.cu
	$(AM_V_GEN)$(MKDIR_P) tools/bench && \
	$(NVCC) --fatbin -no-compress $(NVCC_GENCODE) $(NVCCFLAGS) -o $@ \
		`test -f tools/bench/raw_kernels.cu || echo '$(srcdir)/'`tools/bench/raw_kernels.cu
CLEANFILES += $(BENCH_RAW_FATBIN)
else
tools_wafer_bench_SOURCES += tools/bench/raw_none.c
endif

bin_PROGRAMS += tools/wafer-replay
tools_wafer_replay_SOURCES = tools/wafer-replay.c tools/trace.c tools/trace.h \
	tools/trace_file.c tools/trace_file.h \
	tools/replay_svg.c tools/replay_svg.h \
	tools/replay_backend.c tools/replay_backend.h
tools_wafer_replay_CFLAGS = $(AM_CFLAGS) $(ZLIB_CFLAGS)
tools_wafer_replay_LDADD = libwafer-core.la $(ZLIB_LIBS) -lm

# wafer-trace: checks and summarises a timeline trace (wafer-trace(1)).
bin_PROGRAMS += tools/wafer-trace
tools_wafer_trace_SOURCES = tools/wafer-trace.c tools/timeline.c tools/timeline.h \
	tools/timeline_svg.c
tools_wafer_trace_LDADD = -lm
