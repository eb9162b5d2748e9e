# core/: libwafer. Built once as a convenience library (tests of internals
# link it directly) and wrapped into the installed libwafer.so.0, whose
# version script exports only the public API (made from the headers).
noinst_LTLIBRARIES += libwafer-core.la
libwafer_core_la_CPPFLAGS = $(AM_CPPFLAGS) -DWAFER_BUILDING_LIBRARY
libwafer_core_la_SOURCES = \
	core/error.c core/error.h \
	core/log.c core/log.h \
	core/config.c core/config.h \
	core/status.c \
	core/memory/storage.c core/memory/storage.h \
	core/memory/memory.c core/memory/memory.h \
	core/memory/common.c core/memory/common.h \
	core/memory/limit.c core/memory/limit.h \
	core/memory/registry.c \
	core/memory/exact.c \
	core/memory/direct.c \
	core/memory/chunked.c \
	core/memory/buckets.c \
	core/memory/stream.c \
	core/memory/pool.c core/memory/bitmap.h \
	core/memory/record.c core/memory/record.h \
	core/memory/snapshot.c core/memory/snapshot.h \
	core/memory/null_storage.c core/memory/null_storage.h \
	core/memory/u64map.c core/memory/u64map.h \
	core/handle_table.c core/handle_table.h \
	core/kernel_table.c core/kernel_table.h core/hash.h \
	core/plugin_file.c core/plugin_file.h \
	core/bridge.c core/bridge.h core/command.def \
	core/lanes.c core/lanes.h \
	core/queue.c core/queue.h core/event.c core/event.h \
	core/channel/channel.c core/channel/channel.h \
	core/channel/direct.c \
	core/channel/mutex.c \
	core/channel/mpsc.c \
	core/client.c core/client.h core/runtime.h \
	core/client_watch.c core/client_watch.h \
	core/interop.c core/interop.h \
	core/program.c core/program_table.h \
	core/binary_cache.c core/binary_cache.h \
	core/file.c core/file.h

lib_LTLIBRARIES += libwafer.la
libwafer_la_SOURCES =
nodist_EXTRA_libwafer_la_SOURCES = dummy.c
libwafer_la_LIBADD = libwafer-core.la
libwafer_la_LDFLAGS = -version-info $(WAFER_LT_VERSION) -no-undefined \
	-Wl,--version-script=libwafer.map
EXTRA_libwafer_la_DEPENDENCIES = libwafer.map

# The version script, made from the public headers: libwafer.so.0 exports
# exactly the functions they declare WAFER_API (t/internal/exports.sh checks it).
# <wafer/plugin.h> and <wafer/plugin_util.h> are the plugins' side of the
# plugin ABI: their one exported name belongs to each plugin.
libwafer_public_headers = $(filter-out %/plugin.h %/plugin_util.h,$(waferinclude_HEADERS))
libwafer.map: $(libwafer_public_headers) $(top_srcdir)/core/public-symbols.sh
	$(AM_V_GEN)$(SHELL) $(top_srcdir)/core/public-symbols.sh --map -- \
		$(CC) $(AM_CPPFLAGS) $(CPPFLAGS) -- \
		$(libwafer_public_headers:%=$(top_srcdir)/%) >$@-t && mv -f $@-t $@
CLEANFILES += libwafer.map
EXTRA_DIST += core/public-symbols.sh

# Scopes: handles released together (wafer_scope_begin, core/scope.h).
libwafer_core_la_SOURCES += core/scope.c core/scope.h

# Scale-out (include/wafer/comm.h): peer copies, communicators and
# collectives over the plugin's 1.4 entries.
libwafer_core_la_SOURCES += core/comm.c core/comm.h core/copy_peer.c

# The runtime: configuration chain, plugin loader, devices.
libwafer_core_la_SOURCES += core/loader.c core/loader.h core/runtime.c \
	core/build_tree.c core/build_tree.h

# Autotune: choosing among candidates by measuring (include/wafer/autotune.h).
libwafer_core_la_SOURCES += \
	core/autotune/autotune.c core/autotune/autotune.h \
	core/autotune/settings.c \
	core/autotune/key.c \
	core/autotune/index.c \
	core/autotune/file.c \
	core/autotune/bench.c

# The ops layer (include/wafer/ops.h): views, donation, operations.
libwafer_core_la_SOURCES += \
	core/ops/internal.h \
	core/ops/view.c \
	core/ops/call.c \
	core/ops/launch.c \
	core/ops/elementwise.c \
	core/ops/reduce.c \
	core/ops/matmul.c \
	core/ops/tuned.c

# DLPack exchange (include/wafer/dlpack.h), when configure found DLPack.
if WAFER_DLPACK
libwafer_core_la_SOURCES += core/dlpack.c
else
EXTRA_DIST += core/dlpack.c
endif
