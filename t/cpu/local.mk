# t/cpu/: what only the cpu plugin has.
BACKEND_OWN_TESTS += cpu:t/cpu/plugin cpu:t/cpu/variants cpu:t/cpu/mpi.sh

# The cpu plugin through the vendor ABI alone: dlopen and a fake host.
check_PROGRAMS += t/cpu/plugin
TESTS += t/cpu/plugin
t_cpu_plugin_LDADD = -ldl

# The cpu plugin's collectives on MPI (plugins/cpu/comm_mpi.c): t/cpu/mpi.sh
# runs t/cpu/comm_mpi (and examples/mlp --data-parallel) under mpirun -np 4,
# then the in-process communicators of [cpu] devices = N (comm_inproc.c:
# examples/mlp --data-parallel=N, t/api/comm);
# skipped, with configure's reason, when wafer was configured without MPI.
TESTS += t/cpu/mpi.sh
EXTRA_DIST += t/cpu/mpi.sh
if WAFER_MPI
check_PROGRAMS += t/cpu/comm_mpi
t_cpu_comm_mpi_CPPFLAGS = $(AM_CPPFLAGS) $(MPI_CFLAGS)
t_cpu_comm_mpi_LDADD = libwafer.la $(MPI_LIBS) -ldl
endif
AM_TESTS_ENVIRONMENT += \
	WAFER_HAVE_MPI='$(WAFER_HAVE_MPI)' WAFER_MPI_WHY='$(WAFER_MPI_WHY)' \
	MPIRUN='$(MPIRUN)'; export WAFER_HAVE_MPI WAFER_MPI_WHY MPIRUN;

# The cpu plugin's matmul and reduction variants against a reference, and
# the ops layer's tuned launches.
check_PROGRAMS += t/cpu/variants
TESTS += t/cpu/variants
t_cpu_variants_LDADD = libwafer.la -lm
