# t/abi/: the plugin-ABI suite (t/abi/abi.c), written once against
# <wafer/plugin.h>, and one description per backend (t/abi/NAME.backend:
# how to load the plugin, its options, what it does not support and why).
# Each description is a test: `make check` runs the suite on every built
# plugin, `make check TESTS=t/abi/cpu.backend` on one. wafer-conformance
# runs the installed suite on an installed plugin (--abi FILE).
TEST_EXTENSIONS = .backend
BACKEND_LOG_DRIVER = $(LOG_DRIVER)
BACKEND_LOG_COMPILER = $(top_builddir)/t/abi/abi
AM_TESTS_ENVIRONMENT += T_PACKAGE_VERSION='$(PACKAGE_VERSION)'; \
	export T_PACKAGE_VERSION;

check_PROGRAMS += t/abi/abi
t_abi_abi_SOURCES = t/abi/abi.c t/abi/describe.c t/abi/describe.h
t_abi_abi_LDADD = -ldl -lpthread
EXTRA_DIST += t/abi/README t/abi/cpu.backend t/abi/cuda.backend \
	t/abi/opencl.backend t/abi/levelzero.backend t/abi/newer_cpu.backend

TESTS += t/abi/cpu.backend
# The cpu plugin declaring a minor newer than the core's (a test plugin).
TESTS += t/abi/newer_cpu.backend
if WAFER_CUDA
TESTS += t/abi/cuda.backend
endif
if WAFER_OPENCL
TESTS += t/abi/opencl.backend
endif
if WAFER_LEVELZERO
TESTS += t/abi/levelzero.backend
endif

# Installed beside the conformance tests: the suite, and the descriptions
# as examples for a vendor's own (they name the build's stand-in drivers,
# so wafer-conformance writes its own unless given --abi FILE).
abiconformancedir = $(conformancedir)/abi
install-exec-local: install-abi
install-abi: t/abi/abi$(EXEEXT)
	@$(MKDIR_P) '$(DESTDIR)$(abiconformancedir)'
	$(AM_V_at)$(LIBTOOL) $(AM_LIBTOOLFLAGS) $(LIBTOOLFLAGS) --quiet \
	  --mode=install $(INSTALL_PROGRAM) t/abi/abi$(EXEEXT) \
	  '$(DESTDIR)$(abiconformancedir)/'
	$(AM_V_at)for f in cpu cuda opencl levelzero; do \
	  $(INSTALL_DATA) '$(srcdir)/t/abi/'$$f.backend \
	    '$(DESTDIR)$(abiconformancedir)/'$$f.backend.example; \
	done
.PHONY: install-abi
all-local: t/abi/abi$(EXEEXT)
