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
	UBSAN_OPTIONS="print_stacktrace=1:halt_on_error=1$${UBSAN_OPTIONS:+:$$UBSAN_OPTIONS}"; \
	export WAFER_PLUGIN_PATH WAFER_SYSCONFDIR XDG_CONFIG_HOME XDG_CACHE_HOME T_BUILDDIR T_SRCDIR LSAN_OPTIONS UBSAN_OPTIONS;
# UBSAN_OPTIONS: a report stops the test with its stack (a test that only
# printed one would still pass), whoever runs `make check` in a sanitizer
# build; the build's -fno-sanitize-recover does the same for the checks
# it covers.
# LSAN_OPTIONS, for runs on the OpenCL plugin (PoCL in CI); harmless
# without sanitizers, and a caller's own LSAN_OPTIONS come after them:
#  - intercept_tls_get_addr=0: LeakSanitizer's final scan crashes
#    ("Tracer caught signal 11") walking the dynamic TLS of libraries the
#    driver dlopened and dlclosed (PoCL loads each compiled kernel as a
#    shared object). Untracked, such TLS is not scanned, which can only
#    add leak reports, never hide one.
#  - t/lsan-opencl.supp: what PoCL and its LLVM leak while compiling
#    (driver frames only; the file says why).
EXTRA_DIST += t/README t/tap.h t/tap.sh t/allocator_may_fail.h t/standins/fake_host.h t/catalogue.h t/client_util.h t/dtypes.h \
	t/lsan-opencl.supp t/valgrind.supp
# Test programs link the convenience library to reach internals.
T_CORE_LIBS = libwafer-core.la

# What each test runs on, for ./quickstart check's per-stage counts
# (t/tally.awk): the backend-neutral tests open the default device, so
# they run on the backend WAFER_BACKEND names and each of their points is
# a check per backend and channel; each backend's own tests drive that
# plugin (or its test driver) whatever WAFER_BACKEND says. Each folder's
# local.mk adds its tests (BACKEND_NEUTRAL_TESTS: t/api/, also the list
# wafer-conformance runs; BACKEND_OWN_TESTS: PLUGIN:t/PLUGIN/NAME).
BACKEND_NEUTRAL_TESTS =
BACKEND_OWN_TESTS =

# One local.mk per folder (t/README says what each holds and where a new
# test goes).
include t/plugins/local.mk
include t/api/local.mk
include t/internal/local.mk
include t/cpu/local.mk
include t/opencl/local.mk
include t/cuda/local.mk
include t/levelzero/local.mk
include t/standins/local.mk
include t/abi/local.mk

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

# Autotune's cache files of the tests that tune through the ops layer.
clean-local: clean-local-t
clean-local-t:
	-rm -rf t/xdg-cache
.PHONY: clean-local-t

# The tests' XDG_CACHE_HOME: the OpenCL plugin's program binaries and
# PoCL's compiled kernels, made by make check.
clean-local: clean-local-t-cache
clean-local-t-cache:
	-rm -rf t/xdg-cache
.PHONY: clean-local-t-cache
EXTRA_DIST += t/backend-opencl.conf

# `make check-valgrind`: the client and operations tests under valgrind
# memcheck; any error, or any byte definitely lost, fails the test.
# ./quickstart check runs it in the plain build.
VALGRIND_TESTS = t/api/client t/api/ops t/api/donation
VALGRIND = valgrind --quiet --error-exitcode=99 --leak-check=full \
	--suppressions=$(abs_top_srcdir)/t/valgrind.supp \
	--errors-for-leak-kinds=definite --show-leak-kinds=definite
check-valgrind:
	$(MAKE) $(AM_MAKEFLAGS) check TESTS='$(VALGRIND_TESTS)' \
		LOG_COMPILER='$(LIBTOOL) --mode=execute $(VALGRIND)'
.PHONY: check-valgrind

print-test-classes:
	@echo "neutral $(BACKEND_NEUTRAL_TESTS)"
	@echo "own $(BACKEND_OWN_TESTS)"
.PHONY: print-test-classes
