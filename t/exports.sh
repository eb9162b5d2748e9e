#!/bin/sh
# wafer — SPDX-License-Identifier: MIT
#
# exports.sh: what the built shared objects export (TAP). A plugin exports
# exactly wafer_plugin_query; libwafer.so.0 exports only the public wafer_*
# API (plus its version node, WAFER_0). Anything else leaking out would
# become ABI that distros have to keep.

plugin="$T_BUILDDIR/../plugins/cpu/.libs/cpu.so"
cuda="$T_BUILDDIR/../plugins/cuda/.libs/cuda.so"
library="$T_BUILDDIR/../.libs/libwafer.so.0"

if ! command -v nm >/dev/null 2>&1; then
	echo "1..0 # SKIP nm not found"
	exit 0
fi

# Names of the defined dynamic symbols of $1, without @VERSION suffixes.
exports() {
	nm -D --defined-only "$1" |
		awk '{ sub(/@.*/, "", $3); print $3 }' | sort -u
}

echo "1..6"

syms=$(exports "$plugin") || syms="(nm failed on $plugin)"
if [ "$syms" = wafer_plugin_query ]; then
	echo "ok 1 - cpu.so exports only wafer_plugin_query"
else
	echo "not ok 1 - cpu.so exports only wafer_plugin_query"
	echo "$syms" | sed 's/^/# exported: /'
fi

# The cuda plugin, when built: the same rule, and no libcuda (or any CUDA
# library) linked — the driver is dlopened at run time.
if [ -e "$cuda" ]; then
	syms=$(exports "$cuda") || syms="(nm failed on $cuda)"
	if [ "$syms" = wafer_plugin_query ]; then
		echo "ok 2 - cuda.so exports only wafer_plugin_query"
	else
		echo "not ok 2 - cuda.so exports only wafer_plugin_query"
		echo "$syms" | sed 's/^/# exported: /'
	fi
	if command -v readelf >/dev/null 2>&1; then
		needed=$(readelf -d "$cuda" | grep NEEDED | grep -i -e cuda -e cublas)
		if [ -z "$needed" ]; then
			echo "ok 3 - cuda.so links no CUDA library"
		else
			echo "not ok 3 - cuda.so links no CUDA library"
			echo "$needed" | sed 's/^/# /'
		fi
	else
		echo "ok 3 # SKIP readelf not found"
	fi
else
	echo "ok 2 # SKIP the cuda plugin was not built"
	echo "ok 3 # SKIP the cuda plugin was not built"
fi

if syms=$(exports "$library"); then
	stray=$(echo "$syms" | grep -v -e '^wafer_' -e '^WAFER_0$')
else
	stray="(nm failed on $library)"
fi
if [ -z "$stray" ]; then
	echo "ok 4 - libwafer.so.0 exports only wafer_* symbols"
else
	echo "not ok 4 - libwafer.so.0 exports only wafer_* symbols"
	echo "$stray" | sed 's/^/# stray: /'
fi

opencl="$T_BUILDDIR/../plugins/opencl/.libs/opencl.so"
if [ ! -e "$opencl" ]; then
	echo "ok 5 # SKIP the OpenCL plugin was not built"
elif [ "$(exports "$opencl")" = wafer_plugin_query ]; then
	echo "ok 5 - opencl.so exports only wafer_plugin_query"
else
	echo "not ok 5 - opencl.so exports only wafer_plugin_query"
	exports "$opencl" | sed 's/^/# exported: /'
fi

# The calls of <wafer/program.h> (a new header adds exports the version
# script's wafer_* picks up; this checks they are there).
libsyms=$(exports "$library")
missing=
for sym in wafer_program_create wafer_program_kernel wafer_program_release \
	wafer_program_format_name; do
	echo "$libsyms" | grep -qx "$sym" || missing="$missing $sym"
done
if [ -z "$missing" ]; then
	echo "ok 6 - libwafer.so.0 exports the program calls"
else
	echo "not ok 6 - libwafer.so.0 exports the program calls"
	echo "# missing:$missing"
fi
