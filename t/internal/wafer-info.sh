#!/bin/sh
# wafer — SPDX-License-Identifier: MIT
#
# wafer-info.sh: runs the built wafer-info (through its libtool wrapper)
# with WAFER_CONFIG naming a file with a broken line and a plugin path
# holding the bad test plugins. It must name the file and line, give each
# bad plugin's reason, and still list the devices and the default one.
# The device is cpu:0.
set -u

# shellcheck source=t/tap.sh
. "${T_SRCDIR:?is not set (run through make check)}/tap.sh"
tap_tool wafer-info

# The cpu plugin is always built: without it the build is broken, not
# the machine short of something.
if [ ! -e "$T_BUILDDIR/../plugins/cpu/.libs/cpu.so" ]; then
	echo "Bail out! no $T_BUILDDIR/../plugins/cpu/.libs/cpu.so (always built)"
	exit 1
fi
device=cpu

conf=$tmp/broken.conf
cat > "$conf" <<CONF
[core]
backend = nosuch, abi_major, init_fails, no_devices, not-a-plugin, $device
this line is broken
[good]
name = Good From File
CONF

WAFER_CONFIG=$conf
WAFER_PLUGIN_PATH=$T_BUILDDIR/plugins/.libs:$T_BUILDDIR/plugins:${WAFER_PLUGIN_PATH:-}
export WAFER_CONFIG WAFER_PLUGIN_PATH
unset WAFER_BACKEND WAFER_LOG WAFER_CHANNEL WAFER_MEMORY

has() { # has TEXT: the last output holds TEXT (a fixed string)
	grep -F -e "$1" "$tmp/out" > /dev/null
}
show_output() {
	sed 's/^/# /' "$tmp/out" "$tmp/err"
}

echo "1..32"

"$tool" > "$tmp/out" 2> "$tmp/err"
status=$?
check "exit status 0 with a default device (got $status)" test "$status" -eq 0
check "header names the version" has "wafer "
check "config file FAILED" has "FAILED  $conf:"
check "broken line named as file:line" has "$conf:3"
check "backend setting from the file, with its origin" \
	has "[core] backend"
check "backend origin is $conf:2" has "($conf:2)"
check "nosuch: not found in" has "  nosuch: not found in: $T_BUILDDIR/plugins/.libs:"
check "abi_major: ABI reason" has "  abi_major: ABI major 999, core speaks 1"
check "abi_major: ABI 999.7 shown" has "ABI:     999.7"
check "init_fails: init reason" \
	has "  init_fails: init failed: WAFER_ERROR_DEVICE: cannot reach the widget (code 42)"
check "no_devices: no devices reason" has "  no_devices: no devices: fake driver missing"
check "not-a-plugin: checked before dlopen" has "  not-a-plugin: not loaded: not an ELF file"
check "$device accepted" has "  $device: accepted"
check "$device:0 listed among devices" has "  $device:0 "
check "capabilities line" has "capabilities: "
# The dtypes come from the kernels (an add of each), not from the
# hardware's capability bits, which the capabilities line leaves out.
check "computes-in line: the cpu plugin's dtypes by name" \
	has "computes in:  float32 float64 int32 int64 uint8"
check "capabilities line names no dtype" sh -c \
	"! grep 'capabilities:.*\\(f64\\|f16\\|bf16\\)' '$tmp/out'"
check "default device is $device:0" has "Default device: $device:0"
check "skipped backends say why" has "  skipped abi_major: ABI major 999, core speaks 1"
[ "$failed" -eq 0 ] || show_output

"$tool" --quiet > "$tmp/out" 2> "$tmp/err"
status=$?
check "--quiet: exit 0" test "$status" -eq 0
check "--quiet: one line, the default device" \
	test "$(wc -l < "$tmp/out")" -eq 1 -a "$(cut -d' ' -f1 < "$tmp/out")" = "$device:0"

"$tool" --backend "nosuch, no_devices" > "$tmp/out" 2> "$tmp/err"
status=$?
check "--backend without a usable backend: exit 1 (got $status)" test "$status" -eq 1
check "--backend: no default device" has "Default device: none"

# The capabilities the core derives from the 1.4 entries, by name.
"$tool" --backend collective > "$tmp/out" 2> "$tmp/err"
check "collective test plugin: peer-copy and collectives shown" \
	has "host-memory peer-copy collectives"

# What the loader warns about a plugin it accepts is in the report too,
# not only on stderr: part of a group, a minor newer than the core's.
"$tool" --backend half_interop > "$tmp/out" 2> "$tmp/err"
check "half_interop: the interop group's warning in the report" \
	has "      warning: interop entries come together; it has native import queue_wrap but not forget queue_native: interop off"
check "half_interop: the program group's warning in the report" \
	has "      warning: program entries come together;"
minor=$(sed -n 's/^#define WAFER_PLUGIN_ABI_MINOR_LATEST \([0-9]*\).*/\1/p' "$T_SRCDIR/../include/wafer/plugin.h")
"$tool" --backend new_minor > "$tmp/out" 2> "$tmp/err"
check "new_minor: ABI 1.99 beside the core's 1.$minor" \
	has "      ABI:     1.99 (newer than the core's 1.$minor: see the warning)"
check "new_minor: the warning in the report" \
	has "      warning: built for ABI 1.99, newer than this core's 1.$minor:"

# The names a plugin gives its vendor values (ABI 1.7), and the entries
# the loader did not take.
"$tool" --backend named > "$tmp/out" 2> "$tmp/err"
check "named: its vendor format's name in the report" \
	has "      names:   acme-isa (program format 0x10001)"
check "named: its vendor kind's name in the report" \
	has "      names:   acme-buffer (native kind 0x10002)"
check "named: a name it did not get is a warning" \
	has "      warning: vendor_names[3]: program format 0x10003: name 'host-c' is one the core uses"

"$tool" --no-such-option > "$tmp/out" 2> "$tmp/err"
status=$?
check "unknown option: exit 2 (got $status)" test "$status" -eq 2

[ "$failed" -eq 0 ] || show_output
exit 0
