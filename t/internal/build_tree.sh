#!/bin/sh
# wafer — SPDX-License-Identifier: MIT
#
# build_tree.sh: what was just built runs without installing. A program
# linked against the build tree's libwafer (the tools, or one built with
# PKG_CONFIG_PATH=<builddir>) finds the build tree's plugins and the
# source tree's etc/ by itself (lib/build_tree.c), and ./uninstalled
# runs such a program, which needs libwafer.so.0 from the build tree.
set -u

if [ -z "${T_BUILDDIR:-}" ]; then
	echo "Bail out! T_BUILDDIR is not set (run through make check)"
	exit 1
fi
top=$T_BUILDDIR/..
# The program below opens cpu, which every build has, whatever backend
# the suite runs on (WAFER_BACKEND=opencl, cuda, ... would hide it).
unset WAFER_BACKEND
tmp=$(mktemp -d "${TMPDIR:-/tmp}/build_tree.XXXXXX") || exit 1
trap 'rm -rf "$tmp"' EXIT
echo "1..5"

# Nothing says where the plugins are: the built-in directories.
out=$(env -u WAFER_PLUGIN_PATH -u WAFER_SYSCONFDIR -u WAFER_BACKEND \
	"$top/tools/wafer-info" 2>&1)
case $out in
*"path:    $(cd "$top" && pwd -P)/plugins/cpu/.libs/cpu.so"*)
	echo "ok 1 - wafer-info from the build tree loads the build tree's cpu plugin" ;;
*) echo "not ok 1 - wafer-info from the build tree loads the build tree's cpu plugin"
   echo "$out" | sed 's/^/# /' ;;
esac
case $out in
*"read    "*"/etc/wafer.conf"*) case $out in *"/etc/wafer/wafer.conf"*)
	echo "not ok 2 - the source tree's etc/wafer.conf, not an installed one" ;;
	*) echo "ok 2 - the source tree's etc/wafer.conf, not an installed one" ;; esac ;;
*) echo "not ok 2 - the source tree's etc/wafer.conf, not an installed one" ;;
esac

# A program of the user's, built against wafer-uninstalled.pc.
cc=${CC:-cc}
cat > "$tmp/myprog.c" <<'C'
#include <stdio.h>
#include <wafer/wafer.h>
int main(void)
{
	wafer_runtime *rt;
	wafer_client *c;
	if (wafer_runtime_open(NULL, &rt) != WAFER_OK ||
	    wafer_client_open(rt, "cpu", NULL, &c) != WAFER_OK) {
		printf("%s\n", wafer_last_error());
		return 1;
	}
	printf("opened cpu\n");
	wafer_client_close(c);
	wafer_runtime_close(rt);
	return 0;
}
C
# shellcheck disable=SC2046
# With the sanitizers the library was built with (SANITIZER_FLAGS), whose
# runtime must come first in a program that loads it.
if ! $cc ${SANITIZER_FLAGS:-} -o "$tmp/myprog" "$tmp/myprog.c" \
	$(PKG_CONFIG_PATH="$top" pkg-config --cflags --libs wafer) 2>"$tmp/cc.log"; then
	sed 's/^/# /' "$tmp/cc.log"
	echo "Bail out! cannot build a program against wafer-uninstalled.pc"
	exit 1
fi
echo "ok 3 - a program builds against wafer-uninstalled.pc"
out=$(cd "$tmp" && "$top/uninstalled" ./myprog 2>&1)
if [ "$out" = "opened cpu" ]; then
	echo "ok 4 - ./uninstalled ./myprog finds libwafer.so.0 and the plugins"
else
	echo "not ok 4 - ./uninstalled ./myprog finds libwafer.so.0 and the plugins"
	echo "$out" | sed 's/^/# /'
fi
out=$(cd "$tmp" && env -u WAFER_PLUGIN_PATH -u WAFER_SYSCONFDIR \
	LD_LIBRARY_PATH="$top/.libs" ./myprog 2>&1)
if [ "$out" = "opened cpu" ]; then
	echo "ok 5 - with only the library path, the build tree's libwafer finds its plugins"
else
	echo "not ok 5 - with only the library path, the build tree's libwafer finds its plugins"
	echo "$out" | sed 's/^/# /'
fi
