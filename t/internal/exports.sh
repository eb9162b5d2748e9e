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

# WAFER_HAVE_CUDA, WAFER_HAVE_OPENCL (yes or no) and their reasons come
# from configure through t/local.mk's test environment, so a plugin that
# configure built and that is missing fails instead of passing as "not
# built".
if [ -z "${T_BUILDDIR:-}" ] || [ -z "${WAFER_HAVE_CUDA:-}" ] ||
   [ -z "${WAFER_HAVE_OPENCL:-}" ]; then
	echo "Bail out! T_BUILDDIR/WAFER_HAVE_CUDA/WAFER_HAVE_OPENCL not set (run through make check)"
	exit 1
fi
if ! command -v nm >/dev/null 2>&1; then
	echo "1..0 # SKIP nm (binutils) not found on this machine"
	exit 0
fi


# Names of the defined dynamic symbols of $1, without @VERSION suffixes.
exports() {
	nm -D --defined-only "$1" |
		awk '{ sub(/@.*/, "", $3); print $3 }' | sort -u
}

# only_query N NAME SO: point N, "NAME exports only wafer_plugin_query".
only_query() {
	syms=$(exports "$3") || syms="(nm failed on $3)"
	if [ "$syms" = wafer_plugin_query ]; then
		echo "ok $1 - $2 exports only wafer_plugin_query"
	else
		echo "not ok $1 - $2 exports only wafer_plugin_query"
		echo "$syms" | sed 's/^/# exported: /'
	fi
}

echo "1..11"

only_query 1 cpu.so "$plugin"

# The cuda plugin, when built: the same rule, and no libcuda (or any CUDA
# library) linked — the driver is dlopened at run time.
if [ "$WAFER_HAVE_CUDA" != yes ]; then
	echo "ok 2 # SKIP configure did not build the cuda plugin: ${WAFER_CUDA_WHY:-}"
	echo "ok 3 # SKIP configure did not build the cuda plugin: ${WAFER_CUDA_WHY:-}"
elif [ ! -e "$cuda" ]; then
	echo "not ok 2 - cuda.so exports only wafer_plugin_query"
	echo "# configure built the cuda plugin, but $cuda is not there"
	echo "not ok 3 - cuda.so links no CUDA library"
else
	only_query 2 cuda.so "$cuda"
	if command -v readelf >/dev/null 2>&1; then
		needed=$(readelf -d "$cuda" | grep NEEDED | grep -i -e cuda -e cublas)
		if [ -z "$needed" ]; then
			echo "ok 3 - cuda.so links no CUDA library"
		else
			echo "not ok 3 - cuda.so links no CUDA library"
			echo "$needed" | sed 's/^/# /'
		fi
	else
		echo "ok 3 # SKIP readelf (binutils) not found on this machine"
	fi
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
if [ "$WAFER_HAVE_OPENCL" != yes ]; then
	echo "ok 5 # SKIP configure did not build the OpenCL plugin: ${WAFER_OPENCL_WHY:-}"
elif [ ! -e "$opencl" ]; then
	echo "not ok 5 - opencl.so exports only wafer_plugin_query"
	echo "# configure built the OpenCL plugin, but $opencl is not there"
else
	only_query 5 opencl.so "$opencl"
fi

# Calls added after the first release: the version script made from the
# headers picks them up; this checks they are there.
libsyms=$(exports "$library")
# exports_all N WHAT SYMBOL...: point N, "libwafer.so.0 exports WHAT".
exports_all() {
	n=$1 what=$2
	shift 2
	missing=
	for sym in "$@"; do
		echo "$libsyms" | grep -qx "$sym" || missing="$missing $sym"
	done
	if [ -z "$missing" ]; then
		echo "ok $n - libwafer.so.0 exports $what"
	else
		echo "not ok $n - libwafer.so.0 exports $what"
		echo "# missing:$missing"
	fi
}
# <wafer/program.h>
exports_all 6 "the program calls" wafer_program_create wafer_program_kernel \
	wafer_program_release wafer_program_format_name
# The memory calls of <wafer/wafer.h> (wafer-memory(7)).
exports_all 7 "the memory calls" wafer_memory_usage_get wafer_memory_trim \
	wafer_memory_snapshot wafer_memory_set_oom_handler
# The scope calls of <wafer/wafer.h> (wafer_scope_begin(3)).
exports_all 8 "the scope calls" wafer_scope_begin wafer_scope_end \
	wafer_scope_keep
# <wafer/interop.h> (wafer-interop(7)).
exports_all 9 "the interop calls" wafer_handle_native wafer_handle_import \
	wafer_client_native_queue wafer_native_kind_name
# <wafer/dlpack.h> (wafer_tensor_to_dlpack(3)), built with DLPack only;
# the _versioned calls only against a DLPack 1.x header, so not checked.
if [ "${WAFER_HAVE_DLPACK:-no}" = yes ]; then
	exports_all 10 "the DLPack calls" wafer_tensor_to_dlpack \
		wafer_tensor_from_dlpack
else
	echo "ok 10 # SKIP not built with DLPack: ${WAFER_DLPACK_WHY:-}"
fi

# The version script (libwafer.map) is made from the public headers by
# lib/public-symbols.sh: every function they declare WAFER_API, nothing
# else. The library exports exactly that list: no public call is missing
# (declared, not defined) and no internal one leaks out by its name.
map="$T_BUILDDIR/../libwafer.map"
if [ ! -f "$map" ]; then
	echo "not ok 11 - libwafer.so.0 exports exactly the public headers' functions"
	echo "# $map is not there (made by the build from the headers)"
else
	declared=$(awk '/^\t\t[A-Za-z_][A-Za-z0-9_]*;$/ { sub(/;/, ""); print $1 }' "$map" | sort -u)
	exported=$(echo "$libsyms" | grep -vx WAFER_0)
	missing=$(printf '%s\n' "$declared" | grep -vxF "$exported")
	extra=$(printf '%s\n' "$exported" | grep -vxF "$declared")
	if [ -n "$declared" ] && [ -z "$missing$extra" ]; then
		echo "ok 11 - libwafer.so.0 exports exactly the public headers' $(echo "$declared" | wc -l) functions"
	else
		echo "not ok 11 - libwafer.so.0 exports exactly the public headers' functions"
		[ -n "$declared" ] || echo "# $map lists no function"
		printf '%s\n' "$missing" | sed -n 's/^./# declared, not exported: &/p'
		printf '%s\n' "$extra" | sed -n 's/^./# exported, not declared: &/p'
	fi
fi
