# tools/: command-line programs installed with the library.
# wafer-info: what wafer sees — configuration, plugins, devices (wafer-info(1)).
bin_PROGRAMS += tools/wafer-info
tools_wafer_info_SOURCES = tools/wafer-info.c
tools_wafer_info_LDADD = libwafer.la

bin_PROGRAMS += tools/wafer-bench
tools_wafer_bench_SOURCES = tools/wafer-bench.c tools/bench/bench.h \
	tools/bench/dispatch.c tools/bench/alloc.c tools/bench/donation.c
tools_wafer_bench_LDADD = libwafer.la

bin_PROGRAMS += tools/wafer-replay
tools_wafer_replay_SOURCES = tools/wafer-replay.c \
	tools/replay_svg.c tools/replay_svg.h \
	tools/replay_backend.c tools/replay_backend.h
tools_wafer_replay_CFLAGS = $(AM_CFLAGS) $(ZLIB_CFLAGS)
tools_wafer_replay_LDADD = libwafer-core.la $(ZLIB_LIBS) -lm
