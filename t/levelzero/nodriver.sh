#!/bin/sh
# wafer — SPDX-License-Identifier: MIT
#
# levelzero_nodriver.sh: the levelzero plugin as wafer-info shows it.
#  - With no Level Zero driver (ZE_ENABLE_ALT_DRIVERS naming a file that
#    does not exist, so the loader tries nothing else), the plugin loads,
#    has no devices, and says why: zeInit's result and what to install.
#  - Its description says the kernels are not verified on Intel hardware.
#  - With the test driver, wafer-info lists the driver's GPUs.
#  - Without ZE_ENABLE_ALT_DRIVERS the test driver is never seen: it is
#    not a device any run outside these tests can pick.
set -u

if [ -z "${T_BUILDDIR:-}" ] || [ -z "${T_SRCDIR:-}" ]; then
	echo "1..0 # SKIP T_BUILDDIR is not set (run through make check)"
	exit 0
fi
tool=$T_BUILDDIR/../tools/wafer-info
driver=$T_BUILDDIR/levelzero/.libs/fakeze.so
# shellcheck source=t/tap.sh
. "$T_SRCDIR/tap.sh"
tap_tmpdir levelzero-nodriver
unset WAFER_BACKEND WAFER_CONFIG WAFER_LOG FAKEZE_NO_VM FAKEZE_BUILD_FAIL
unset FAKEZE_DEVICES FAKEZE_VPU FAKEZE_NO_IMMEDIATE

tap_show=$tmp/out
has() { grep -F -e "$1" "$tmp/out" > /dev/null; }
hasnt() { ! has "$1"; }

echo "1..13"

ZE_ENABLE_ALT_DRIVERS=$tmp/no-such-driver.so "$tool" --backend levelzero \
	> "$tmp/out" 2>&1
check "no driver: the plugin is listed with its path" \
	has "plugins/levelzero/.libs/levelzero.so"
check "no driver: no devices, with zeInit's result" \
	has "levelzero: no devices: levelzero: zeInit: ZE_RESULT_ERROR_UNINITIALIZED"
check "no driver: the reason says what an Intel GPU needs" \
	has "libze_intel_gpu.so.1"
check "the description says the kernels are unverified" \
	has "(kernels not yet verified on Intel hardware)"
ZE_ENABLE_ALT_DRIVERS=$tmp/no-such-driver.so "$tool" -q --backend levelzero \
	> "$tmp/out" 2>&1
check "no driver: wafer-info -q exits 1 (no default device)" test $? = 1

ZE_ENABLE_ALT_DRIVERS=$driver FAKEZE_DEVICES=2 "$tool" --backend levelzero \
	> "$tmp/out" 2>&1
check "test driver: accepted with 2 devices" \
	has "levelzero: accepted, 2 devices"
check "test driver: levelzero:1 is its second GPU" \
	has "levelzero:1 wafer test GPU 1 (host memory)"
check "test driver: virtual memory and timers (pinned-host is retired)" \
	has "virtual-memory device-timers"
check "test driver: no pinned-host capability since ABI 1.1" \
	hasnt "pinned-host"
ZE_ENABLE_ALT_DRIVERS=$driver "$tool" -q --backend levelzero \
	> "$tmp/out" 2>&1
check "test driver: wafer-info -q exits 0" test $? = 0
check "test driver: -q prints the default device" \
	has "levelzero:0"

# What quickstart's per-backend loop runs: no ZE_ENABLE_ALT_DRIVERS.
(unset ZE_ENABLE_ALT_DRIVERS; "$tool" --backend levelzero) > "$tmp/out" 2>&1
check "without ZE_ENABLE_ALT_DRIVERS the test driver is not seen" \
	hasnt "wafer test GPU"
(unset ZE_ENABLE_ALT_DRIVERS; "$tool" -q --backend levelzero) \
	> "$tmp/out" 2>&1
status=$?
if grep -q "wafer test GPU" "$tmp/out"; then status=99; fi
check "  ... so wafer-info -q finds no test device (a real one only)" \
	test $status != 99
exit $failed
