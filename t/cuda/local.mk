# t/cuda/: what only the cuda plugin has, on the stand-in driver.
BACKEND_OWN_TESTS += cuda:t/cuda/plugin cuda:t/cuda/comm cuda:t/cuda/comm_fail cuda:t/cuda/comm_hang cuda:t/cuda/cuda.sh \
	cuda:t/cuda/torch_alloc

# The cuda plugin (when built) through the vendor ABI, on a stand-in
# driver (t/standins/fakecuda.c) that keeps libcuda's contracts strictly and
# injects the failures a GPU machine rarely shows; `t/cuda/plugin --real`
# runs the driver-neutral part on a GPU (dev/gpu-check.sh).
EXTRA_DIST += t/standins/fakecuda.h t/standins/cuda_host.h t/half.h t/cuda/cuda.sh
# It runs tools/wafer-info and t/api/client, t/api/channels, t/api/stress, which are
# built before any test runs.
TESTS += t/cuda/cuda.sh
if WAFER_CUDA
check_LTLIBRARIES += t/standins/fakecuda.la
t_standins_fakecuda_la_SOURCES = t/standins/fakecuda.c t/standins/fakecuda.h t/half.h \
	t/standins/fakecuda_program.c t/standins/fakecuda_program.h \
	t/user_kernels/emulate.c t/user_kernels/emulate.h
t_standins_fakecuda_la_CPPFLAGS = $(AM_CPPFLAGS) $(CUDA_CPPFLAGS)
t_standins_fakecuda_la_LDFLAGS = -module -avoid-version -shared -no-undefined \
	-rpath /nowhere
t_standins_fakecuda_la_LIBADD = -lm

check_PROGRAMS += t/cuda/plugin
TESTS += t/cuda/plugin
t_cuda_plugin_SOURCES = t/cuda/plugin.c t/standins/cuda_host.h t/standins/fakecuda.h t/half.h
t_cuda_plugin_LDADD = -ldl -lm

# The cuda plugin's peer copies and collectives through the vendor ABI:
# on the stand-in driver with FAKECUDA_DEVICES=2 and a stand-in NCCL
# (t/standins/fakenccl.c, over plugins/cpu/inproc_comm); `t/cuda/comm --real` on the GPU
# and the real NCCL (dev/nccl-check.sh).
check_PROGRAMS += t/cuda/comm
TESTS += t/cuda/comm
t_cuda_comm_SOURCES = t/cuda/comm.c t/standins/cuda_host.h t/standins/fakecuda.h t/half.h
t_cuda_comm_LDADD = -ldl -lm -lpthread
# A collective the stand-in NCCL fails (FAKENCCL_FAIL), through the core
# on each channel: a clear error, and the client and communicator go on.
check_PROGRAMS += t/cuda/comm_fail
TESTS += t/cuda/comm_fail
t_cuda_comm_fail_LDADD = libwafer.la -lpthread
# A rank that never takes part, a rank that fails mid-collective
# (fakenccl's FAKENCCL_HANG_RANK, FAKENCCL_ASYNC_FAIL_RANK): the others'
# waits give up ([comm] timeout, ncclCommGetAsyncError), naming the
# communicator, rank and collective, and the clients go on.
check_PROGRAMS += t/cuda/comm_hang
EXTRA_DIST += t/cuda/standin_comm.h
TESTS += t/cuda/comm_hang
t_cuda_comm_hang_LDADD = libwafer.la -lpthread
if WAFER_NCCL
check_LTLIBRARIES += t/standins/fakenccl.la
t_standins_fakenccl_la_SOURCES = t/standins/fakenccl.c t/standins/fakecuda.h \
	plugins/cpu/inproc_comm.c plugins/cpu/inproc_comm.h t/half.h
t_standins_fakenccl_la_CPPFLAGS = $(AM_CPPFLAGS) $(NCCL_CPPFLAGS) $(CUDA_CPPFLAGS)
t_standins_fakenccl_la_LDFLAGS = -module -avoid-version -shared -no-undefined \
	-rpath /nowhere
t_standins_fakenccl_la_LIBADD = -ldl -lpthread -lm
endif
endif

# libwafer-torch.so (torch/) as PyTorch drives it, on the stand-in driver:
# dlopened from the build tree, streams made by the stand-in's own
# cuStreamCreate (skips when the cuda plugin was not built).
check_PROGRAMS += t/cuda/torch_alloc
TESTS += t/cuda/torch_alloc
# torch_catch.cc catches what wafer_torch_alloc throws, as PyTorch does.
t_cuda_torch_alloc_SOURCES = t/cuda/torch_alloc.c t/cuda/torch_catch.cc \
	t/cuda/torch_catch.h
t_cuda_torch_alloc_LDADD = -ldl -lpthread
