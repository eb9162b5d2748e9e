# t/: TAP tests (make check; prove). Tests run against the build tree's
# plugins and read no installed configuration.
LOG_DRIVER = env AM_TAP_AWK='$(AWK)' $(SHELL) $(top_srcdir)/build-aux/tap-driver.sh
AM_TESTS_ENVIRONMENT = \
	WAFER_PLUGIN_PATH='$(abs_top_builddir)/plugins/cpu/.libs:$(abs_top_builddir)/plugins/cuda/.libs:$(abs_top_builddir)/plugins/opencl/.libs:$(abs_top_builddir)/plugins/levelzero/.libs'; \
	WAFER_SYSCONFDIR='$(abs_top_srcdir)/etc'; \
	XDG_CONFIG_HOME='$(abs_top_builddir)/t/xdg-config'; \
	XDG_CACHE_HOME='$(abs_top_builddir)/t/xdg-cache'; \
	T_BUILDDIR='$(abs_top_builddir)/t'; T_SRCDIR='$(abs_top_srcdir)/t'; \
	export WAFER_PLUGIN_PATH WAFER_SYSCONFDIR XDG_CONFIG_HOME XDG_CACHE_HOME T_BUILDDIR T_SRCDIR;
EXTRA_DIST += t/tap.h
# Test programs link the convenience library to reach internals.
T_CORE_LIBS = libwafer-core.la

# Backend-neutral: the client API on the default device (WAFER_BACKEND).
check_PROGRAMS += t/client
TESTS += t/client
t_client_LDADD = libwafer.la

# A plugin whose queues run work later on their own threads, like a GPU:
# the channel tests check ordering, errors and release against it.
check_LTLIBRARIES += t/plugins/async.la
t_plugins_async_la_SOURCES = t/plugins/async.c
t_plugins_async_la_LDFLAGS = $(WAFER_PLUGIN_LDFLAGS) -rpath /nowhere

# Channel semantics on every channel, default backend and async plugin.
check_PROGRAMS += t/channels
TESTS += t/channels
t_channels_LDADD = libwafer.la

# 16 threads x WAFER_STRESS_OPS mixed operations on one client.
check_PROGRAMS += t/stress
TESTS += t/stress
t_stress_LDADD = libwafer.la

# The configuration chain: syntax, errors, order (core/config.c).
check_PROGRAMS += t/config
TESTS += t/config
t_config_LDADD = $(T_CORE_LIBS)
