# plugins/cuda: NVIDIA GPUs through the CUDA driver API (wafer-cuda(7)).
# Built when configure finds nvcc and cuda.h (--disable-cuda skips it). The
# plugin compiles against the toolkit's headers but links nothing of it:
# libcuda.so.1 and cuBLAS are loaded with dlopen at run time, so the plugin
# loads, and reports zero devices, on a machine without the driver.
CUDA_KERNEL_CU = \
	plugins/cuda/kernels/elementwise.cu \
	plugins/cuda/kernels/strided.cu \
	plugins/cuda/kernels/reduce.cu \
	plugins/cuda/kernels/matmul.cu \
	plugins/cuda/kernels/typed.cu
CUDA_KERNEL_INC = \
	plugins/cuda/kernels/common.cuh \
	plugins/cuda/kernels/args.h
EXTRA_DIST += $(CUDA_KERNEL_CU) $(CUDA_KERNEL_INC)

if WAFER_CUDA
plugin_LTLIBRARIES += plugins/cuda/cuda.la
plugins_cuda_cuda_la_SOURCES = \
	plugins/cuda/cuda_plugin.h \
	plugins/cuda/driver.c plugins/cuda/driver.h \
	plugins/cuda/plugin.c \
	plugins/cuda/storage.c \
	plugins/cuda/staging.c \
	plugins/cuda/server.c \
	plugins/cuda/kernels.c plugins/cuda/kernels.h \
	plugins/cuda/cublas.c plugins/cuda/cublas.h \
	plugins/cuda/program.c \
	plugins/cuda/nvrtc.c plugins/cuda/nvrtc.h \
	plugins/cuda/peer.c \
	plugins/cuda/event.c plugins/cuda/graph.c \
	plugins/cuda/nccl.c \
	plugins/cuda/fatbins.S
plugins_cuda_cuda_la_CPPFLAGS = $(AM_CPPFLAGS) $(NCCL_CPPFLAGS) $(CUDA_CPPFLAGS) \
	-DWAFER_CUDA_LIBDIR='"$(CUDA_HOME)/lib64"'
# .incbin finds the fatbins relative to the build directory.
plugins_cuda_cuda_la_CCASFLAGS = -Wa,-I,$(abs_top_builddir)
plugins_cuda_cuda_la_LDFLAGS = $(WAFER_PLUGIN_LDFLAGS)
EXTRA_plugins_cuda_cuda_la_DEPENDENCIES = $(top_srcdir)/plugins/plugin.map

# Device code: nvcc compiles each .cu to a fatbin (SASS and PTX for the
# targets in NVCC_GENCODE; uncompressed, so the kernel names stay
# readable to the tests' fake driver), embedded by fatbins.S.
CUDA_FATBINS = $(CUDA_KERNEL_CU:.cu=.fatbin)
CLEANFILES += $(CUDA_FATBINS)
# The object that embeds them; named through a variable so automake keeps
# its own compile rule for it (.incbin is invisible to gcc's -MD).
CUDA_EMBED_OBJECT = plugins/cuda/cuda_la-fatbins.lo
$(CUDA_EMBED_OBJECT): $(CUDA_FATBINS)
plugins/cuda/kernels/%.fatbin: plugins/cuda/kernels/%.cu \
		$(CUDA_KERNEL_INC) $(top_srcdir)/include/wafer/plugin.h
	$(AM_V_GEN)$(MKDIR_P) plugins/cuda/kernels && \
	$(NVCC) --fatbin -no-compress $(NVCC_GENCODE) $(NVCCFLAGS) \
		-I$(top_srcdir) -I$(top_srcdir)/include -o $@ $<
endif
