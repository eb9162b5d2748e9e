# tools/: command-line programs installed with the library.

bin_PROGRAMS += tools/wafer-bench
tools_wafer_bench_SOURCES = tools/wafer-bench.c tools/bench/bench.h \
	tools/bench/dispatch.c tools/bench/alloc.c
tools_wafer_bench_LDADD = libwafer.la
