# examples/: small programs a user can copy (built, not installed).
# examples/plugin-skeleton/: an out-of-tree plugin for vendors to copy. It
# has its own plain Makefile and is shipped, not built here (see
# wafer-plugin(7); t/plugin-skeleton.sh builds it against this tree).
EXTRA_DIST += \
	examples/plugin-skeleton/README \
	examples/plugin-skeleton/Makefile \
	examples/plugin-skeleton/skeleton.c \
	examples/plugin-skeleton/skeleton.map
