#!/bin/sh
# wafer — SPDX-License-Identifier: MIT
#
# Each public header compiles on its own, as C99 and as C++, with strict
# warnings: a program can include any one of them first.
set -u
if [ -z "${T_SRCDIR:-}" ]; then
	echo "Bail out! T_SRCDIR not set (run through make check)"
	exit 1
fi
include=$T_SRCDIR/../include
CC=${CC:-cc}
CXX=${CXX:-c++}
n=0
check() { # compiler-and-flags, header, label
	n=$((n + 1))
	# T_CPPFLAGS: configure's CPPFLAGS, where it found <dlpack/dlpack.h>
	# outside the default paths.
	# shellcheck disable=SC2086 # the flags are words
	if out=$($1 -Wall -Wextra -pedantic -Werror -fsyntax-only -I"$include" ${T_CPPFLAGS:-} "$2" 2>&1); then
		echo "ok $n - $3"
	else
		echo "not ok $n - $3"
		echo "$out" | sed 's/^/# /'
	fi
}
for h in "$include"/wafer/*.h; do
	name=wafer/$(basename "$h")
	# <wafer/dlpack.h> needs DLPack's own header (configure's WAFER_DLPACK).
	if [ "$name" = wafer/dlpack.h ] && [ "${WAFER_HAVE_DLPACK:-no}" != yes ]; then
		n=$((n + 2))
		echo "ok $((n - 1)) # SKIP $name as C99: ${WAFER_DLPACK_WHY:-DLPack not configured}"
		echo "ok $n # SKIP $name as C++11: ${WAFER_DLPACK_WHY:-DLPack not configured}"
		continue
	fi
	check "$CC -std=c99 -x c" "$h" "$name alone as C99"
	if command -v "$CXX" >/dev/null 2>&1; then
		check "$CXX -std=c++11 -x c++" "$h" "$name alone as C++11"
	else
		# A C++ compiler is optional; say that the check did not run.
		n=$((n + 1))
		echo "ok $n # SKIP $name as C++11: no C++ compiler ($CXX) on this machine"
	fi
done

# plugin_util.h's example of the descriptor macros compiles as written:
# its lines from the storage table to WAFER_PLUGIN_QUERY_RETURNS, after
# declarations of the acme_ functions it names; the program entries are
# declared with WAFER_PLUGIN_STATIC_PROGRAM_ENTRIES and defined static.
example=$(mktemp "${TMPDIR:-/tmp}/wafer-example.XXXXXX") || exit 1
trap 'rm -f "$example" "$example.c" "$example.old.c" "$example.new.c"' EXIT
{
	cat <<'EOF'
#include <wafer/plugin_util.h>
wafer_status acme_init(const struct wafer_plugin_init_args *, void **);
void acme_shutdown(void *);
wafer_status acme_device_count(void *, uint32_t *);
wafer_status acme_device_info(void *, uint32_t, struct wafer_device_info *);
wafer_status acme_device_open(void *, uint32_t, void **);
void acme_device_close(void *);
wafer_status acme_device_kernels(void *, const struct wafer_kernel **, size_t *);
wafer_status acme_storage_alloc(void *, size_t, wafer_resource *);
void acme_storage_free(void *, wafer_resource);
wafer_status acme_storage_copy_in(void *, void *, wafer_resource, size_t, const void *, size_t);
wafer_status acme_storage_copy_out(void *, void *, wafer_resource, size_t, void *, size_t);
wafer_status acme_storage_copy(void *, void *, wafer_resource, size_t, wafer_resource, size_t, size_t);
wafer_status acme_storage_vm_reserve(void *, size_t, wafer_resource *);
wafer_status acme_server_queue_create(void *, void **);
void acme_server_queue_destroy(void *, void *);
wafer_status acme_server_launch(void *, void *, const struct wafer_launch *);
wafer_status acme_server_sync(void *, void *);
wafer_status acme_server_timer_begin(void *, void *, void **);
WAFER_PLUGIN_STATIC_PROGRAM_ENTRIES(acme);
static wafer_status acme_program_formats(void *d, const wafer_program_format **f, size_t *n) { (void)d; *f = NULL; *n = 0; return WAFER_OK; }
static wafer_status acme_program_load(void *d, const struct wafer_program_source *s, const char *o, void **p) { (void)d; (void)s; (void)o; *p = NULL; return WAFER_OK; }
static wafer_status acme_program_kernel(void *d, void *p, const char *n, uint32_t b, size_t s, const struct wafer_kernel **k) { (void)d; (void)p; (void)n; (void)b; (void)s; *k = NULL; return WAFER_OK; }
static void acme_program_release(void *d, void *p) { (void)d; (void)p; }
EOF
	sed -n '/^ \*   static const struct wafer_storage_ops acme_storage_ops/,/^ \*   WAFER_PLUGIN_QUERY_RETURNS/s/^ \*   //p' \
		"$include/wafer/plugin_util.h"
} >"$example.c"
n=$((n + 1))
# shellcheck disable=SC2086 # the flags are words
if ! grep -q '^WAFER_PLUGIN_QUERY_RETURNS(acme_plugin)' "$example.c"; then
	echo "not ok $n - plugin_util.h's example found (its first or last line changed?)"
elif out=$($CC -std=c99 -Wall -Wextra -pedantic -Werror -c -o "$example" -I"$include" ${T_CPPFLAGS:-} "$example.c" 2>&1); then
	echo "ok $n - plugin_util.h's example compiles as written, with static program entries"
else
	echo "not ok $n - plugin_util.h's example compiles as written"
	echo "$out" | sed 's/^/# /'
fi

# A plugin built for an older minor defines WAFER_PLUGIN_ABI_MINOR: both
# plugin headers compile for every minor, and the structs end where that
# minor's did (1.1's server table is its four required entries).
minor=$(sed -n 's/^#define WAFER_PLUGIN_ABI_MINOR_LATEST \([0-9]*\).*/\1/p' "$include/wafer/plugin.h")
m=0
while [ "$m" -le "$minor" ]; do
	for h in plugin.h plugin_util.h; do
		check "$CC -std=c99 -x c -DWAFER_PLUGIN_ABI_MINOR=$m" \
			"$include/wafer/$h" "wafer/$h for ABI 1.$m"
	done
	m=$((m + 1))
done
n=$((n + 1))
printf '#include <wafer/plugin.h>\n_Static_assert(sizeof(struct wafer_server_ops) == 6 * sizeof(void *) + sizeof(size_t), "1.1: the required entries and the timers");\n' >"$example.old.c"
if out=$($CC -std=c11 -fsyntax-only -DWAFER_PLUGIN_ABI_MINOR=1 -I"$include" "$example.old.c" 2>&1); then
	echo "ok $n - for ABI 1.1 the server table is 1.1's"
else
	echo "not ok $n - for ABI 1.1 the server table is 1.1's"
	echo "$out" | sed 's/^/# /'
fi
n=$((n + 1))
printf '#include <wafer/plugin.h>\n' >"$example.new.c"
if $CC -std=c99 -fsyntax-only -DWAFER_PLUGIN_ABI_MINOR=$((minor + 1)) -I"$include" "$example.new.c" >/dev/null 2>&1; then
	echo "not ok $n - a minor newer than the header's is an error"
else
	echo "ok $n - a minor newer than the header's is an error"
fi
echo "1..$n"
