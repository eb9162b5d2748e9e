# plugins/levelzero: Level Zero through the oneAPI loader (libze_loader),
# with kernels written in OpenCL C and compiled to SPIR-V at build time.
# configure builds it when it finds the loader, clang, llvm-spirv and
# spirv-val (--disable-levelzero turns it off; the summary says why it is
# off). See plugins/levelzero/README and wafer-levelzero(7).
EXTRA_DIST += plugins/levelzero/kernels.cl plugins/levelzero/README

if WAFER_LEVELZERO
plugin_LTLIBRARIES += plugins/levelzero/levelzero.la
plugins_levelzero_levelzero_la_SOURCES = \
	plugins/levelzero/lz_plugin.h \
	plugins/levelzero/plugin.c \
	plugins/levelzero/storage.c \
	plugins/levelzero/server.c \
	plugins/levelzero/event.c \
	plugins/levelzero/graph.c \
	plugins/levelzero/kernels.c plugins/levelzero/kernels.h \
	plugins/levelzero/program.c \
	plugins/levelzero/status.c
nodist_plugins_levelzero_levelzero_la_SOURCES = \
	plugins/levelzero/kernels-spirv.c
plugins_levelzero_levelzero_la_CPPFLAGS = $(AM_CPPFLAGS) $(LEVELZERO_CFLAGS)
plugins_levelzero_levelzero_la_LDFLAGS = $(WAFER_PLUGIN_LDFLAGS)
plugins_levelzero_levelzero_la_LIBADD = $(LEVELZERO_LIBS)
EXTRA_plugins_levelzero_levelzero_la_DEPENDENCIES = $(top_srcdir)/plugins/plugin.map

# OpenCL C -> LLVM bitcode (spir64) -> SPIR-V 1.0, validated for the
# OpenCL 2.0 environment before it is embedded. SPIR-V 1.0 is what every
# Level Zero driver takes; llvm-spirv emits no later version than asked.
LEVELZERO_CLFLAGS = -cl-std=CL2.0 -target spir64 -O2 -emit-llvm -Wall
LEVELZERO_SPIRV_FLAGS = --spirv-max-version=1.0
plugins/levelzero/kernels.spv: plugins/levelzero/kernels.cl
	$(AM_V_GEN)$(MKDIR_P) plugins/levelzero && \
	$(LEVELZERO_CLANG) $(LEVELZERO_CLFLAGS) \
		-c $(srcdir)/plugins/levelzero/kernels.cl -o $@.bc && \
	$(LLVM_SPIRV) $(LEVELZERO_SPIRV_FLAGS) $@.bc -o $@.tmp && \
	$(SPIRV_VAL) --target-env opencl2.0 $@.tmp && \
	rm -f $@.bc && mv -f $@.tmp $@

# The module as a C array (a .S with .incbin would need the assembler to
# find the file; a generated array needs nothing but od and sed).
plugins/levelzero/kernels-spirv.c: plugins/levelzero/kernels.spv
	$(AM_V_GEN){ \
	  echo '/* Generated from kernels.cl by plugins/levelzero/local.mk. */'; \
	  echo '#include "build-config.h"'; \
	  echo '#include <stddef.h>'; \
	  echo '#include "plugins/levelzero/kernels.h"'; \
	  echo 'const unsigned char lz_spirv_module[] = {'; \
	  od -An -v -tx1 plugins/levelzero/kernels.spv | \
	    sed -e 's/ *\([0-9a-f][0-9a-f]\)/0x\1,/g'; \
	  echo '};'; \
	  echo 'const size_t lz_spirv_module_size = sizeof lz_spirv_module;'; \
	} > $@.tmp && mv -f $@.tmp $@
CLEANFILES += plugins/levelzero/kernels.spv plugins/levelzero/kernels-spirv.c
endif
