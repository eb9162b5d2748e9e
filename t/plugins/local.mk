# t/plugins/: small test plugins the loader and API tests load.

# Test plugins (t/plugins/): loadable modules built for the tests only;
# -rpath makes libtool build a shared object for check_LTLIBRARIES. Each
# is one small file on top of t/plugins/common.c.
T_PLUGIN_LDFLAGS = $(WAFER_PLUGIN_LDFLAGS) -rpath /nowhere
T_PLUGIN_COMMON = t/plugins/common.c t/plugins/common.h
check_LTLIBRARIES += t/plugins/good.la t/plugins/full.la \
	t/plugins/old_minor.la t/plugins/abi_major.la t/plugins/no_symbol.la \
	t/plugins/init_fails.la t/plugins/no_devices.la \
	t/plugins/missing_required.la t/plugins/null_query.la \
	t/plugins/old_struct.la t/plugins/unresolved.la t/plugins/faulty.la \
	t/plugins/half_interop.la t/plugins/new_minor.la \
	t/plugins/newer_cpu.la t/plugins/named.la t/plugins/stale_minor.la
t_plugins_good_la_SOURCES = t/plugins/good.c $(T_PLUGIN_COMMON)
t_plugins_good_la_LDFLAGS = $(T_PLUGIN_LDFLAGS)
t_plugins_full_la_SOURCES = t/plugins/full.c $(T_PLUGIN_COMMON)
t_plugins_full_la_LDFLAGS = $(T_PLUGIN_LDFLAGS)
t_plugins_old_minor_la_SOURCES = t/plugins/old_minor.c $(T_PLUGIN_COMMON)
t_plugins_old_minor_la_LDFLAGS = $(T_PLUGIN_LDFLAGS)
t_plugins_abi_major_la_SOURCES = t/plugins/abi_major.c $(T_PLUGIN_COMMON)
t_plugins_abi_major_la_LDFLAGS = $(T_PLUGIN_LDFLAGS)
t_plugins_init_fails_la_SOURCES = t/plugins/init_fails.c $(T_PLUGIN_COMMON)
t_plugins_init_fails_la_LDFLAGS = $(T_PLUGIN_LDFLAGS)
t_plugins_no_devices_la_SOURCES = t/plugins/no_devices.c $(T_PLUGIN_COMMON)
t_plugins_no_devices_la_LDFLAGS = $(T_PLUGIN_LDFLAGS)
t_plugins_missing_required_la_SOURCES = t/plugins/missing_required.c $(T_PLUGIN_COMMON)
t_plugins_missing_required_la_LDFLAGS = $(T_PLUGIN_LDFLAGS)
t_plugins_old_struct_la_SOURCES = t/plugins/old_struct.c $(T_PLUGIN_COMMON)
t_plugins_old_struct_la_LDFLAGS = $(T_PLUGIN_LDFLAGS)
t_plugins_half_interop_la_SOURCES = t/plugins/half_interop.c $(T_PLUGIN_COMMON)
t_plugins_half_interop_la_LDFLAGS = $(T_PLUGIN_LDFLAGS)
t_plugins_new_minor_la_SOURCES = t/plugins/new_minor.c $(T_PLUGIN_COMMON)
t_plugins_new_minor_la_LDFLAGS = $(T_PLUGIN_LDFLAGS)
t_plugins_stale_minor_la_SOURCES = t/plugins/stale_minor.c $(T_PLUGIN_COMMON)
t_plugins_stale_minor_la_LDFLAGS = $(T_PLUGIN_LDFLAGS)
t_plugins_named_la_SOURCES = t/plugins/named.c $(T_PLUGIN_COMMON)
t_plugins_named_la_LDFLAGS = $(T_PLUGIN_LDFLAGS)
t_plugins_newer_cpu_la_SOURCES = t/plugins/newer_cpu.c
t_plugins_newer_cpu_la_LDFLAGS = $(T_PLUGIN_LDFLAGS)
t_plugins_newer_cpu_la_LIBADD = -ldl
t_plugins_null_query_la_SOURCES = t/plugins/null_query.c
t_plugins_null_query_la_LDFLAGS = $(T_PLUGIN_LDFLAGS)
# No version script: it would hide the near-miss symbol this one exports.
t_plugins_no_symbol_la_SOURCES = t/plugins/no_symbol.c
t_plugins_no_symbol_la_LDFLAGS = -module -avoid-version -shared \
	-no-undefined -rpath /nowhere

# The fault-injecting shim over the cpu plugin (t/internal/faults); it exports its
# call counter, so no version script.
t_plugins_faulty_la_SOURCES = t/plugins/faulty.c
t_plugins_faulty_la_LDFLAGS = -module -avoid-version -shared -rpath /nowhere
t_plugins_faulty_la_LIBADD = -ldl

# Needs a symbol nothing defines: no -no-undefined, which would refuse it.
t_plugins_unresolved_la_SOURCES = t/plugins/unresolved.c
t_plugins_unresolved_la_LDFLAGS = -module -avoid-version -shared -rpath /nowhere

# "not an ELF file": a file named like a plugin that is not a shared object.
check_DATA += t/plugins/not-a-plugin.so
t/plugins/not-a-plugin.so:
	$(AM_V_GEN)$(MKDIR_P) t/plugins && \
	echo 'not a shared object' > $@
CLEANFILES += t/plugins/not-a-plugin.so

# A plugin whose queues run work later on their own threads, like a GPU:
# the channel tests check ordering, errors and release against it.
check_LTLIBRARIES += t/plugins/async.la
t_plugins_async_la_SOURCES = t/plugins/async.c
t_plugins_async_la_LDFLAGS = $(WAFER_PLUGIN_LDFLAGS) -rpath /nowhere
