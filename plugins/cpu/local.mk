# plugins/cpu: the reference plugin (see wafer-plugin(7)). A loadable module
# that includes only <wafer/plugin.h> and never links libwafer: it reaches
# the core through the host services table it is given.
plugin_LTLIBRARIES += plugins/cpu/cpu.la
plugins_cpu_cpu_la_SOURCES = \
	plugins/cpu/cpu_plugin.h \
	plugins/cpu/plugin.c \
	plugins/cpu/storage.c \
	plugins/cpu/server.c \
	plugins/cpu/event.c plugins/cpu/graph.c plugins/cpu/graph.h \
	plugins/cpu/queue.c \
	plugins/cpu/kernels.c plugins/cpu/kernels.h \
	plugins/cpu/kernel_sets.def \
	plugins/cpu/kernels_math.h plugins/cpu/convert.h \
	plugins/cpu/threadpool.c plugins/cpu/threadpool.h \
	plugins/cpu/program.c lib/file.c lib/file.h \
	lib/plugin_file.c lib/plugin_file.h \
	plugins/cpu/elf_symbols.c plugins/cpu/elf_symbols.h \
	plugins/cpu/comm_inproc.c plugins/cpu/comm_inproc.h \
	plugins/cpu/inproc_comm.c plugins/cpu/inproc_comm.h
# Kernel files, one family each; a new one is listed here and in
# kernel_sets.def (see kernels.h).
plugins_cpu_cpu_la_SOURCES += \
	plugins/cpu/kernels_basic.c \
	plugins/cpu/kernels_elementwise.c \
	plugins/cpu/kernels_strided.c \
	plugins/cpu/kernels_cast.c \
	plugins/cpu/kernels_reduce.c \
	plugins/cpu/kernels_typed.c \
	plugins/cpu/matmul.c
# Further variants for autotune to choose from: matmul on the plugin's own
# GEMM engine (gemm.h) and on OpenBLAS when configure found it, and
# reductions that split long rows.
plugins_cpu_cpu_la_SOURCES += \
	plugins/cpu/gemm.c plugins/cpu/gemm.h plugins/cpu/gemm_ukernel.c \
	plugins/cpu/matmul_blocked.c \
	plugins/cpu/matmul_rows.c \
	plugins/cpu/matmul_openblas.c \
	plugins/cpu/reduce_split.c
# sqrtf becomes one instruction (and vectorises) only when it need not set
# errno, and gcc if-converts the selects of exp, log, tanh (kernels_math.h)
# into vector code only when floating-point operations may be assumed not
# to trap. The kernels read neither errno nor the FP exception flags;
# results are unchanged (gcc 12: every element loop "vectorized using 16
# byte vectors" at -O2 with these, five of nine unary loops without).
plugins_cpu_cpu_la_CFLAGS = $(AM_CFLAGS) -fno-math-errno -fno-trapping-math
plugins_cpu_cpu_la_LDFLAGS = $(WAFER_PLUGIN_LDFLAGS)
# program.c: where <wafer/host_kernel.h> is for host-c programs, installed
# and (for a plugin running from this build tree) in the source tree.
plugins_cpu_cpu_la_CPPFLAGS = $(AM_CPPFLAGS) $(OPENBLAS_CFLAGS) \
	-DWAFER_INCLUDEDIR='"$(includedir)"' \
	-DWAFER_BUILDDIR='"$(abs_top_builddir)"' \
	-DWAFER_SOURCE_INCLUDEDIR='"$(abs_top_srcdir)/include"'

# pthread comes from -pthread in WAFER_CFLAGS; libm for sqrtf's fallback.
plugins_cpu_cpu_la_LIBADD = -lm $(OPENBLAS_LIBS)
EXTRA_plugins_cpu_cpu_la_DEPENDENCIES = $(top_srcdir)/plugins/plugin.map

# Collectives (comm.c) run on MPI in a module of their own, cpu-mpi.so,
# built beside cpu.so when configure found Open MPI (--with-mpi): cpu.so
# dlopens it at the first communicator and never links libmpi itself.
plugins_cpu_cpu_la_SOURCES += plugins/cpu/comm.c plugins/cpu/comm_mpi.h \
	plugins/cpu/half.h
EXTRA_DIST += plugins/cpu/comm_mpi.map
if WAFER_MPI
plugin_LTLIBRARIES += plugins/cpu/cpu-mpi.la
plugins_cpu_cpu_mpi_la_SOURCES = plugins/cpu/comm_mpi.c \
	plugins/cpu/comm_mpi.h plugins/cpu/half.h
plugins_cpu_cpu_mpi_la_CPPFLAGS = $(AM_CPPFLAGS) $(MPI_CFLAGS)
plugins_cpu_cpu_mpi_la_LDFLAGS = -module -avoid-version -shared \
	-no-undefined \
	-Wl,--version-script=$(top_srcdir)/plugins/cpu/comm_mpi.map
plugins_cpu_cpu_mpi_la_LIBADD = $(MPI_LIBS)
EXTRA_plugins_cpu_cpu_mpi_la_DEPENDENCIES = \
	$(top_srcdir)/plugins/cpu/comm_mpi.map
endif
