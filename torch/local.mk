# torch/: libwafer-torch.so, PyTorch's CUDA memory on wafer (wafer-torch(7)).
# Installed beside the plugins' directory, in $(pkglibdir), for
#   torch.cuda.memory.CUDAPluggableAllocator(
#       "$(pkglibdir)/libwafer-torch.so", "wafer_torch_alloc", "wafer_torch_free")
# The allocation entry is C++ (raise.cc: a failure is thrown, which
# PyTorch raises in Python). Built whether or not this build has the cuda
# plugin: it uses only the public client API (the stream is a void *), links no CUDA library, and
# the plugin may come from another package. It is a module (no soname, no
# version): PyTorch dlopens it by path. The version script exports only
# the wafer_torch_* entry points; the pointer map is lib/memory/u64map.c
# compiled in (libwafer keeps its own copy private).
pkglib_LTLIBRARIES += torch/libwafer-torch.la
torch_libwafer_torch_la_SOURCES = torch/allocator.c torch/wafer_torch.h \
	torch/raise.cc torch/raise.h torch/graph_pool.cc \
	lib/memory/u64map.c lib/memory/u64map.h
# Own flags, so automake builds its own objects of u64map.c.
torch_libwafer_torch_la_CPPFLAGS = $(AM_CPPFLAGS)
torch_libwafer_torch_la_LDFLAGS = -module -avoid-version -shared -no-undefined \
	-Wl,--version-script=$(top_srcdir)/torch/torch.map
torch_libwafer_torch_la_LIBADD = libwafer.la -lpthread
EXTRA_torch_libwafer_torch_la_DEPENDENCIES = $(top_srcdir)/torch/torch.map
EXTRA_DIST += torch/torch.map dev/torch-train.py dev/torch-oom.py
