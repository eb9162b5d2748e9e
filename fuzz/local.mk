# fuzz/: libFuzzer harnesses for what reads untrusted bytes — the
# configuration parser, the autotune cache file, the allocation-trace
# reader, program images and sources, DLPack tensors — and for the view
# and shape arithmetic. Built only in a tree
# configured with CC=clang-15 --enable-fuzzing (--enable-sanitizers too,
# for ASan+UBSan); ./quickstart check runs each for a short while, and
# `make fuzz` for FUZZ_SECONDS (default 600) each. Seeds live in
# fuzz/corpus/<harness>/; what a run finds goes to fuzz/found/<harness>/
# in the build tree, a crash to fuzz/<harness>-crash-*.
FUZZERS = fuzz/config fuzz/autotune_cache fuzz/trace fuzz/view \
	fuzz/program_image
if WAFER_DLPACK
FUZZERS += fuzz/dlpack
endif
FUZZ_SECONDS = 600
EXTRA_DIST += fuzz/corpus fuzz/run.sh fuzz/cpu_client.h fuzz/input.h

if WAFER_FUZZING
noinst_PROGRAMS += $(FUZZERS)
FUZZER_LINK_FLAGS = -fsanitize=fuzzer
fuzz_config_SOURCES = fuzz/config.c
fuzz_config_LDADD = libwafer-core.la
fuzz_config_LDFLAGS = $(FUZZER_LINK_FLAGS)
fuzz_autotune_cache_SOURCES = fuzz/autotune_cache.c
fuzz_autotune_cache_LDADD = libwafer-core.la
fuzz_autotune_cache_LDFLAGS = $(FUZZER_LINK_FLAGS)
fuzz_trace_SOURCES = fuzz/trace.c tools/trace.c tools/trace.h
fuzz_trace_LDADD = libwafer-core.la
fuzz_trace_LDFLAGS = $(FUZZER_LINK_FLAGS)
fuzz_view_SOURCES = fuzz/view.c
fuzz_view_LDADD = libwafer-core.la
fuzz_view_LDFLAGS = $(FUZZER_LINK_FLAGS)
# These two open a cpu client (fuzz/cpu_client.h): run from the build
# tree's top, where the plugin is.
fuzz_program_image_SOURCES = fuzz/program_image.c
fuzz_program_image_LDADD = libwafer-core.la
fuzz_program_image_LDFLAGS = $(FUZZER_LINK_FLAGS)
fuzz_program_image_DEPENDENCIES = libwafer-core.la plugins/cpu/cpu.la
fuzz_dlpack_SOURCES = fuzz/dlpack.c
fuzz_dlpack_LDADD = libwafer-core.la
fuzz_dlpack_LDFLAGS = $(FUZZER_LINK_FLAGS)
fuzz_dlpack_DEPENDENCIES = libwafer-core.la plugins/cpu/cpu.la

# Runs every harness for FUZZ_SECONDS on a copy of its seed corpus; one
# summary line each ("fuzz <name>: ok, N runs, cov C"), exit 1 on a crash.
fuzz: $(FUZZERS)
	@$(SHELL) $(srcdir)/fuzz/run.sh $(srcdir)/fuzz/corpus $(FUZZ_SECONDS) $(FUZZERS)
else
fuzz:
	@echo "make fuzz: configure a tree with CC=clang-15 --enable-fuzzing" \
		"(and --enable-sanitizers=address,undefined) first" >&2; exit 1
endif
.PHONY: fuzz
