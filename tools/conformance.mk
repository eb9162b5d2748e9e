# wafer-conformance (wafer-conformance(1)): the backend-neutral tests of
# t/ (BACKEND_NEUTRAL_TESTS, t/local.mk) installed with the files they
# read, and a runner that runs them on an installed library and plugin,
# without the source tree. `make check` runs the same programs in place.
#
# Installed layout under $(conformancedir):
#   t/NAME           each test (programs relinked against the installed
#                    libwafer by libtool; scripts as they are)
#   src/PATH         files the tests read under T_SRCDIR (t/PATH here)
#   build/PATH       files the build makes that they read under T_BUILDDIR
#                    (a libtool module's .libs/NAME.so is installed as
#                    build/DIR/NAME.so; the runner lays the build tree's
#                    shape over them again, DIR/.libs included)
# In the library's directory, not libexec: most of it is data, and a
# package tool (dh_fixperms) makes everything under libexec executable.
conformancedir = $(pkglibdir)/conformance

# What the backend-neutral tests read besides themselves, relative to t/.
# A new backend-neutral test that opens a file of t/ (T_SRCDIR) or one
# the build makes (T_BUILDDIR) lists it here; the test list itself comes
# from BACKEND_NEUTRAL_TESTS alone.
CONFORMANCE_SRC_FILES = replay-small.trace tap.sh user_kernels/kernels.c \
	user_kernels/kernels.cl user_kernels/kernels.cu user_kernels/kernels.ptx
CONFORMANCE_BUILT_FILES = plugins/async.la plugins/good.la plugins/full.la \
	plugins/half_interop.la plugins/collective.la user_kernels/kernels.la
if WAFER_LEVELZERO
CONFORMANCE_BUILT_FILES += user_kernels/kernels.spv
endif

CONFORMANCE_BINARIES = $(addsuffix $(EXEEXT),$(filter-out %.sh,$(BACKEND_NEUTRAL_TESTS)))

# `make all` builds what `make install` installs: the test programs and
# their data (otherwise built by `make check` only) and the runner.
bin_SCRIPTS = tools/wafer-conformance
all-local: $(CONFORMANCE_BINARIES) $(addprefix t/,$(CONFORMANCE_BUILT_FILES))

# The runner, with the test list and the installation directories filled
# in at build time (make, not configure: the directories are expanded).
EXTRA_DIST += tools/wafer-conformance.in
CLEANFILES += tools/wafer-conformance
tools/wafer-conformance: tools/wafer-conformance.in Makefile
	$(AM_V_GEN)$(MKDIR_P) tools && \
	sed -e 's|@CONFORMANCE_TESTS[@]|$(BACKEND_NEUTRAL_TESTS)|' \
	    -e 's|@conformancedir[@]|$(conformancedir)|' \
	    -e 's|@bindir[@]|$(bindir)|' \
	    -e 's|@libdir[@]|$(libdir)|' \
	    -e 's|@plugindir[@]|$(plugindir)|' \
	    -e 's|@sysconfdir[@]|$(sysconfdir)|' \
	    -e 's|@includedir[@]|$(includedir)|' \
	    -e 's|@VERSION[@]|$(VERSION)|' \
		$(srcdir)/tools/wafer-conformance.in >$@.tmp && \
	chmod +x $@.tmp && mv -f $@.tmp $@

# `make print-conformance`: the tests the runner runs, one per line.
print-conformance:
	@for t in $(BACKEND_NEUTRAL_TESTS); do echo $$t; done
.PHONY: print-conformance

install-exec-local: install-conformance
install-conformance: all-local
	@set -e; for t in $(BACKEND_NEUTRAL_TESTS); do \
	  $(MKDIR_P) "$(DESTDIR)$(conformancedir)/`dirname $$t`"; \
	  case $$t in \
	  *.sh) echo " INSTALL  $$t"; \
	        $(INSTALL_SCRIPT) '$(srcdir)/'$$t "$(DESTDIR)$(conformancedir)/`dirname $$t`/" ;; \
	  *) $(LIBTOOL) $(AM_LIBTOOLFLAGS) $(LIBTOOLFLAGS) --quiet --mode=install \
	        $(INSTALL_PROGRAM) $$t$(EXEEXT) "$(DESTDIR)$(conformancedir)/`dirname $$t`/" ;; \
	  esac; \
	done
	@set -e; for f in $(CONFORMANCE_SRC_FILES); do \
	  d='$(DESTDIR)$(conformancedir)/src/'`dirname $$f`; \
	  $(MKDIR_P) "$$d"; $(INSTALL_DATA) '$(srcdir)/t/'$$f "$$d/"; \
	done
	@set -e; for f in $(CONFORMANCE_BUILT_FILES); do \
	  d='$(DESTDIR)$(conformancedir)/build/'`dirname $$f`; \
	  $(MKDIR_P) "$$d"; \
	  case $$f in \
	  *.la) $(INSTALL_DATA) t/`dirname $$f`/.libs/`basename $$f .la`.so "$$d/" ;; \
	  *) $(INSTALL_DATA) t/$$f "$$d/" ;; \
	  esac; \
	done
.PHONY: install-conformance

uninstall-local: uninstall-conformance
uninstall-conformance:
	-rm -rf '$(DESTDIR)$(conformancedir)'
.PHONY: uninstall-conformance

dist_man_MANS += man/wafer-conformance.1
