# examples/: small programs a user can copy (built, not installed). Run
# them from the build tree with ./uninstalled examples/hello.
noinst_PROGRAMS += examples/hello
examples_hello_SOURCES = examples/hello.c
examples_hello_LDADD = libwafer.la -lm

# Trains an MLP on two spirals with ops.h, with and without donation:
# ./uninstalled examples/mlp
noinst_PROGRAMS += examples/mlp
examples_mlp_SOURCES = examples/mlp.c
examples_mlp_LDADD = libwafer.la -lm

# A kernel of your own (program.h) in CUDA C, OpenCL C and host C, run on
# the default device: ./uninstalled examples/custom-kernel
noinst_PROGRAMS += examples/custom-kernel
examples_custom_kernel_SOURCES = examples/custom-kernel.c
examples_custom_kernel_LDADD = libwafer.la -lm

# examples/plugin-skeleton/: an out-of-tree plugin for vendors to copy. It
# has its own plain Makefile and is shipped, not built here (see
# wafer-plugin(7); t/internal/plugin-skeleton.sh builds it against this tree). It is
# installed with the documentation, $(docdir)/examples/plugin-skeleton
# (/usr/share/doc/wafer/examples/plugin-skeleton), so that a -dev package
# gives a vendor the sources wafer-plugin(7) sends them to.
skeletondir = $(docdir)/examples/plugin-skeleton
dist_skeleton_DATA = \
	examples/plugin-skeleton/README \
	examples/plugin-skeleton/Makefile \
	examples/plugin-skeleton/skeleton.c \
	examples/plugin-skeleton/skeleton.map

# examples/plugin-sim/: a fuller out-of-tree plugin, installed beside the
# skeleton: programs in a format of its own with its name (ABI 1.7), peer
# copy, and its description for wafer-conformance --abi
# (dev/package-check.sh builds it from the installed files and runs the
# installed wafer-conformance on it).
simdir = $(docdir)/examples/plugin-sim
dist_sim_DATA = \
	examples/plugin-sim/README \
	examples/plugin-sim/Makefile \
	examples/plugin-sim/sim.c \
	examples/plugin-sim/sim.map \
	examples/plugin-sim/sim.backend

# One all-reduce across the processes of an MPI job, on the default
# device; built when configure found MPI (wafer-mpi(7)):
# mpirun -np 4 ./uninstalled examples/allreduce
if WAFER_MPI
noinst_PROGRAMS += examples/allreduce
examples_allreduce_SOURCES = examples/allreduce.c
examples_allreduce_CPPFLAGS = $(AM_CPPFLAGS) $(MPI_CFLAGS)
examples_allreduce_LDADD = libwafer.la $(MPI_LIBS)
else
EXTRA_DIST += examples/allreduce.c
endif
