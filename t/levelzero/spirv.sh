#!/bin/sh
# wafer — SPDX-License-Identifier: MIT
#
# levelzero_spirv.sh: the SPIR-V module the levelzero plugin embeds, as
# the build made it from plugins/levelzero/kernels.cl.
#  - spirv-val accepts it for the OpenCL 2.0 environment (the build
#    checked that too, before embedding it; this runs on what was
#    embedded);
#  - it is SPIR-V 1.0 and declares neither Float64 nor Float16 (many Intel
#    GPUs have no fp64; half is only loaded and stored: Float16Buffer);
#  - its kernels are exactly those plugins/levelzero/kernels.h lists.
# The disassembly checks need spirv-dis (SPIRV-Tools, next to spirv-val).
set -u

if [ -z "${T_BUILDDIR:-}" ] || [ -z "${T_SRCDIR:-}" ]; then
	echo "1..0 # SKIP T_BUILDDIR is not set (run through make check)"
	exit 0
fi
spv=$T_BUILDDIR/../plugins/levelzero/kernels.spv
header=$T_SRCDIR/../plugins/levelzero/kernels.h
val=${SPIRV_VAL:-spirv-val}
dis=$(dirname "$val")/spirv-dis
[ -x "$dis" ] || dis=$(command -v spirv-dis 2>/dev/null || true)
# shellcheck source=t/tap.sh
. "$T_SRCDIR/tap.sh"
tap_tmpdir levelzero-spirv

skip() { n=$((n + 1)); echo "ok $n # SKIP $1"; }

echo "1..6"
check "the module was built: $spv" test -s "$spv"
check "spirv-val --target-env opencl2.0 accepts it" \
	"$val" --target-env opencl2.0 "$spv"

if [ -z "$dis" ]; then
	for what in version capabilities "entry points" "every kernel"; do
		skip "$what: spirv-dis not found"
	done
	exit $failed
fi
"$dis" "$spv" > "$tmp/dis" 2>&1
check "SPIR-V version 1.0" grep -q '^; Version: 1.0$' "$tmp/dis"
if grep -Eq 'OpCapability (Float64|Float16)$' "$tmp/dis"; then
	grep -E 'OpCapability' "$tmp/dis" | sed 's/^/# /'
	check "no Float64 or Float16 capability" false
else
	check "no Float64 or Float16 capability" true
fi

# Entry points, against the list in kernels.h (LZ_SPIRV_KERNELS).
sed -n 's/.*OpEntryPoint Kernel %[0-9a-zA-Z_]* "\([a-z0-9_]*\)".*/\1/p' \
	"$tmp/dis" | sort > "$tmp/module"
sed -n '/#define LZ_SPIRV_KERNELS/,/^$/p' "$header" |
	grep -o 'X([a-z0-9_]*)' | sed 's/X(\(.*\))/\1/' | sort > "$tmp/header"
check "the module has $(wc -l < "$tmp/header") kernels" \
	test "$(wc -l < "$tmp/module")" = "$(wc -l < "$tmp/header")"
if cmp -s "$tmp/module" "$tmp/header"; then
	check "they are exactly the kernels kernels.h lists" true
else
	diff "$tmp/header" "$tmp/module" | sed 's/^/# /'
	check "they are exactly the kernels kernels.h lists" false
fi
exit $failed
