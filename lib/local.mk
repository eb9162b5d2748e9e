# lib/: libwafer. Built once as a convenience library (tests of internals
# link it directly) and wrapped into the installed libwafer.so.0, whose
# version script exports only the public API (made from the headers).
noinst_LTLIBRARIES += libwafer-core.la
libwafer_core_la_CPPFLAGS = $(AM_CPPFLAGS) -DWAFER_BUILDING_LIBRARY
libwafer_core_la_SOURCES = \
	lib/error.c lib/error.h lib/list.h \
	lib/log.c lib/log.h \
	lib/config.c lib/config.h \
	lib/status.c \
	lib/memory/storage.c lib/memory/storage.h \
	lib/memory/memory.c lib/memory/memory.h \
	lib/memory/common.c lib/memory/common.h \
	lib/memory/limit.c lib/memory/limit.h \
	lib/memory/registry.c \
	lib/memory/record.c lib/memory/record.h \
	lib/memory/snapshot.c lib/memory/snapshot.h \
	lib/memory/null_storage.c lib/memory/null_storage.h \
	lib/memory/u64map.c lib/memory/u64map.h \
	lib/handle_table.c lib/handle_table.h \
	lib/kernel_table.c lib/kernel_table.h lib/hash.h \
	lib/plugin_file.c lib/plugin_file.h \
	lib/bridge.c lib/bridge.h lib/command.def \
	lib/lanes.c lib/lanes.h \
	lib/queue.c lib/queue.h lib/event.c lib/event.h \
	lib/graph.c lib/graph.h \
	lib/host.c lib/host.h \
	lib/channel/channel.c lib/channel/channel.h \
	lib/channel/direct.c \
	lib/channel/mutex.c \
	lib/channel/mpsc.c \
	lib/client.c lib/client.h lib/runtime.h \
	lib/client_watch.c lib/client_watch.h \
	lib/interop.c lib/interop.h \
	lib/value_names.c lib/value_names.h \
	lib/program.c lib/program_table.h \
	lib/binary_cache.c lib/binary_cache.h \
	lib/file.c lib/file.h \
	lib/tls.h lib/trace.c lib/trace.h lib/trace_json.c lib/trace_json.h

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
# <wafer/catalogue.def> is a table, not a header: it declares nothing.
libwafer_public_headers = $(filter-out %/plugin.h %/plugin_util.h %.def,$(waferinclude_HEADERS))
libwafer.map: $(libwafer_public_headers) $(top_srcdir)/lib/public-symbols.sh
	$(AM_V_GEN)$(SHELL) $(top_srcdir)/lib/public-symbols.sh --map -- \
		$(CC) $(AM_CPPFLAGS) $(CPPFLAGS) -- \
		$(libwafer_public_headers:%=$(top_srcdir)/%) >$@-t && mv -f $@-t $@
CLEANFILES += libwafer.map
EXTRA_DIST += lib/public-symbols.sh

# The memory strategies, one file each (lib/memory/registry.c lists them).
libwafer_core_la_SOURCES += lib/memory/exact.c lib/memory/direct.c \
	lib/memory/chunked.c lib/memory/buckets.c lib/memory/stream.c \
	lib/memory/pool.c lib/memory/bitmap.h

# Scopes: handles released together (wafer_scope_begin, lib/scope.h).
libwafer_core_la_SOURCES += lib/scope.c lib/scope.h

# Scale-out (include/wafer/comm.h): peer copies, communicators and
# collectives over the plugin's 1.4 entries.
libwafer_core_la_SOURCES += lib/comm.c lib/comm.h lib/comm_launch.c lib/copy_peer.c

# The runtime: configuration chain, plugin loader, devices.
libwafer_core_la_SOURCES += lib/loader.c lib/loader.h lib/runtime.c \
	lib/build_tree.c lib/build_tree.h

# Autotune: choosing among candidates by measuring (include/wafer/autotune.h).
libwafer_core_la_SOURCES += lib/autotune/autotune.c lib/autotune/autotune.h \
	lib/autotune/settings.c lib/autotune/key.c lib/autotune/index.c \
	lib/autotune/file.c lib/autotune/bench.c

# The ops layer (include/wafer/ops.h): views, donation, operations.
libwafer_core_la_SOURCES += lib/ops/internal.h lib/ops/view.c \
	lib/ops/call.c lib/ops/launch.c lib/ops/tuned.c \
	lib/ops/elementwise.c lib/ops/reduce.c lib/ops/matmul.c

# DLPack exchange (include/wafer/dlpack.h), when configure found DLPack.
if WAFER_DLPACK
libwafer_core_la_SOURCES += lib/dlpack.c
else
EXTRA_DIST += lib/dlpack.c
endif
