# abi/: the ABI baselines and the guard (README, "Packaging").
#   abi/libwafer.abi   libwafer.so.0 as released (abidw)
#   abi/plugin.abi     the structs of <wafer/plugin.h>, through a small
#                      library that uses each one (abi/plugin-abi.c)
# `make abi-check` compares the build with them (abi/abi.sh: additions
# and appended struct fields pass, anything else fails); `make
# abi-update` writes the build's ABI as the new baselines, at a release
# (and debian/libwafer0.symbols, new symbols marked with this version).
# Both need abigail-tools and a build with debug info (-g, the default).
EXTRA_DIST += abi/libwafer.abi abi/plugin.abi abi/abi.sh abi/plugin-abi.c
check_LTLIBRARIES += abi/plugin-abi.la
abi_plugin_abi_la_SOURCES = abi/plugin-abi.c
abi_plugin_abi_la_LDFLAGS = -module -avoid-version -shared -rpath /nowhere

ABI_SH = $(SHELL) $(srcdir)/abi/abi.sh
ABI_INCLUDE = $(srcdir)/include
abi-check: libwafer.la abi/plugin-abi.la
	$(ABI_SH) check $(srcdir)/abi/libwafer.abi .libs/libwafer.so.0 $(ABI_INCLUDE)
	$(ABI_SH) check $(srcdir)/abi/plugin.abi abi/.libs/plugin-abi.so $(ABI_INCLUDE)
abi-update: libwafer.la abi/plugin-abi.la
	$(ABI_SH) dump .libs/libwafer.so.0 $(ABI_INCLUDE) >$(srcdir)/abi/libwafer.abi.tmp
	mv -f $(srcdir)/abi/libwafer.abi.tmp $(srcdir)/abi/libwafer.abi
	$(ABI_SH) dump abi/.libs/plugin-abi.so $(ABI_INCLUDE) >$(srcdir)/abi/plugin.abi.tmp
	mv -f $(srcdir)/abi/plugin.abi.tmp $(srcdir)/abi/plugin.abi
	@if test -d $(srcdir)/debian; then \
	  $(ABI_SH) symbols .libs/libwafer.so.0 $(VERSION) \
		$(srcdir)/debian/libwafer0.symbols >$(srcdir)/debian/libwafer0.symbols.tmp && \
	  mv -f $(srcdir)/debian/libwafer0.symbols.tmp $(srcdir)/debian/libwafer0.symbols && \
	  echo "debian/libwafer0.symbols: new symbols marked $(VERSION)"; \
	fi
	@echo "abi/libwafer.abi and abi/plugin.abi now describe this build; commit them"
.PHONY: abi-check abi-update
