# plugins/cpu: the reference plugin (see wafer-plugin(7)). A loadable module
# that includes only <wafer/plugin.h> and never links libwafer: it reaches
# the core through the host services table it is given.
plugin_LTLIBRARIES += plugins/cpu/cpu.la
plugins_cpu_cpu_la_SOURCES = \
	plugins/cpu/cpu.h \
	plugins/cpu/plugin.c \
	plugins/cpu/storage.c \
	plugins/cpu/server.c \
	plugins/cpu/kernels.c plugins/cpu/kernels.h \
	plugins/cpu/threadpool.c plugins/cpu/threadpool.h
plugins_cpu_cpu_la_LDFLAGS = $(WAFER_PLUGIN_LDFLAGS)
# pthread comes from -pthread in WAFER_CFLAGS; the kernels need no libm.
EXTRA_plugins_cpu_cpu_la_DEPENDENCIES = $(top_srcdir)/plugins/plugin.map
