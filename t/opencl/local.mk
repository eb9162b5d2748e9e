# t/opencl/: what only the OpenCL plugin has.
BACKEND_OWN_TESTS += opencl:t/opencl/plugin opencl:t/opencl/cache

# The OpenCL plugin through the vendor ABI alone: options, storage, every
# kernel against a reference, errors, timers, threads (skips without a
# device).
if WAFER_OPENCL
check_PROGRAMS += t/opencl/plugin
TESTS += t/opencl/plugin
t_opencl_plugin_LDADD = $(T_CORE_LIBS) -ldl -lm -lpthread
# The binary cache across processes, the build-log error path, and no
# OpenCL platform at all.
check_PROGRAMS += t/opencl/cache
TESTS += t/opencl/cache
t_opencl_cache_LDADD = $(T_CORE_LIBS) -ldl -lpthread
endif
EXTRA_DIST += t/standins/opencl_host.h
