# t/levelzero/: what only the Level Zero plugin has, on the test driver.
BACKEND_OWN_TESTS += levelzero:t/levelzero/plugin levelzero:t/levelzero/client \
	levelzero:t/levelzero/intercept.sh levelzero:t/levelzero/nodriver.sh \
	levelzero:t/levelzero/spirv.sh levelzero:t/levelzero/kernels_cl \
	levelzero:t/levelzero/model levelzero:t/levelzero/ops.sh \
	levelzero:t/levelzero/programs.sh levelzero:t/levelzero/interop.sh \
	levelzero:t/levelzero/queues.sh levelzero:t/levelzero/queues_regular.sh

# The Level Zero plugin, without Level Zero hardware: a test driver
# (t/standins/levelzero/driver.c, host memory) that the real oneAPI loader loads
# through ZE_ENABLE_ALT_DRIVERS. Only these tests name it; nothing else in
# the suite, and no run of wafer-info outside them, sees it.
EXTRA_DIST += t/standins/levelzero/fakeze.h t/standins/levelzero/spirv.h t/standins/levelzero/emulate.h \
	t/levelzero/nodriver.sh t/levelzero/spirv.sh t/levelzero/intercept.sh \
	t/levelzero/ops.sh t/levelzero/programs.sh t/levelzero/interop.sh \
	t/levelzero/queues.sh t/levelzero/queues_regular.sh
if WAFER_LEVELZERO
check_LTLIBRARIES += t/levelzero/fakeze.la
t_levelzero_fakeze_la_SOURCES = t/standins/levelzero/driver.c t/standins/levelzero/fakeze.h \
	t/standins/levelzero/spirv.c t/standins/levelzero/spirv.h \
	t/standins/levelzero/emulate.h t/standins/levelzero/emulate_plugin.c \
	t/standins/levelzero/program.c t/standins/levelzero/program.h \
	t/user_kernels/emulate.c t/user_kernels/emulate.h
t_levelzero_fakeze_la_CPPFLAGS = $(AM_CPPFLAGS) $(LEVELZERO_CFLAGS)
# No version script: the loader looks up the zeGet*ProcAddrTable exports.
t_levelzero_fakeze_la_LDFLAGS = -module -avoid-version -shared \
	-no-undefined -rpath /nowhere
t_levelzero_fakeze_la_LIBADD = -lm

# The plugin through the vendor ABI alone, on the test driver.
check_PROGRAMS += t/levelzero/plugin
TESTS += t/levelzero/plugin
t_levelzero_plugin_SOURCES = t/levelzero/plugin.c t/standins/levelzero/fakeze.h
t_levelzero_plugin_LDADD = -ldl

# The plugin through libwafer: every memory strategy, every channel.
check_PROGRAMS += t/levelzero/client
TESTS += t/levelzero/client
t_levelzero_client_SOURCES = t/levelzero/client.c t/standins/levelzero/fakeze.h
t_levelzero_client_LDADD = $(T_CORE_LIBS) -ldl

# The same with the loader's intercept layer on (several drivers).
TESTS += t/levelzero/intercept.sh

# The test driver's execution model: what a careless host program gets
# wrong (no barrier, no sync, wrong arguments) shows.
check_PROGRAMS += t/levelzero/model
TESTS += t/levelzero/model
t_levelzero_model_SOURCES = t/levelzero/model.c t/standins/levelzero/fakeze.h
nodist_t_levelzero_model_SOURCES = plugins/levelzero/kernels-spirv.c
t_levelzero_model_CPPFLAGS = $(AM_CPPFLAGS) $(LEVELZERO_CFLAGS)
t_levelzero_model_LDADD = $(LEVELZERO_LIBS) -ldl -lpthread

# t/api/ops (every operation against host references) on the test driver,
# which runs the kernels by emulation.
TESTS += t/levelzero/ops.sh
# t/api/programs (the caller's own SPIR-V kernels, emulated by name:
# t/standins/levelzero/program.c) the same way.
TESTS += t/levelzero/programs.sh
# t/api/interop (native handles out and in) the same way.
TESTS += t/levelzero/interop.sh
# t/api/queues, t/api/graphs and t/api/trace (events, native graphs,
# device spans) the same way, on immediate and on regular command lists.
TESTS += t/levelzero/queues.sh t/levelzero/queues_regular.sh

# wafer-info without a driver and with the test driver; the embedded
# SPIR-V module validated.
TESTS += t/levelzero/nodriver.sh t/levelzero/spirv.sh
AM_TESTS_ENVIRONMENT += SPIRV_VAL='$(SPIRV_VAL)'; export SPIRV_VAL;
endif

# What the Level Zero plugin's kernels compute, on an OpenCL device (pocl's
# CPU device in CI): kernels.cl built by the device's own compiler and
# launched as the plugin's kernels.c prepares each launch. Not the SPIR-V
# module, not Intel hardware (see the test's comment).
EXTRA_DIST += t/levelzero/kernels_cl.c
if WAFER_LEVELZERO
if WAFER_OPENCL
check_PROGRAMS += t/levelzero/kernels_cl
TESTS += t/levelzero/kernels_cl
t_levelzero_kernels_cl_SOURCES = t/levelzero/kernels_cl.c \
	plugins/levelzero/kernels.c
t_levelzero_kernels_cl_CPPFLAGS = $(AM_CPPFLAGS) $(LEVELZERO_CFLAGS) \
	$(OPENCL_CFLAGS)
t_levelzero_kernels_cl_LDADD = $(OPENCL_LIBS) -lm
endif
endif

# t/api/dlpack on the Level Zero test driver, when both are built.
if WAFER_DLPACK
if WAFER_LEVELZERO
TESTS += t/levelzero/dlpack.sh
BACKEND_OWN_TESTS += levelzero:t/levelzero/dlpack.sh
endif
endif
EXTRA_DIST += t/levelzero/dlpack.sh
