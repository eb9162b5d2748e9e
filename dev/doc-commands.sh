#!/bin/bash
# wafer — SPDX-License-Identifier: MIT
#
# doc-commands.sh OUT: runs the commands the documentation gives, as a
# user would type them, on a fresh copy of the tree — so the README and
# the man pages cannot drift from what works.
#
#  - README.md: each ```sh block runs as one script from the top of the
#    copy (a `cd` inside a block lasts to its end), in order; the first
#    ```c block is saved as myprog.c first (the README builds it), and
#    each ```python block that imports wafer runs with venv/bin/python
#    (made by the README's own pip commands); one of PyTorch is skipped.
#  - the man pages' EXAMPLES (sections 1, 5 and 7): each line that is a
#    command runs from the copy's build/, where ./uninstalled is.
#
# A command that needs what CI has not (a GPU, several processes under
# mpirun, PyTorch) is not run: it is listed with the reason (SKIP_RULES).
# The copy holds the tracked files of the working tree, built by the
# README's commands (so a user-prefix install is tested too), with HOME
# and the XDG directories inside OUT. Output: TAP on stdout, each block's
# or line's log in OUT/logs/, and OUT/points ("name RESULT" a line).
set -u
out=${1:?usage: dev/doc-commands.sh OUT}
top=$(cd "$(dirname "$0")/.." && pwd)
rm -rf "$out"
mkdir -p "$out/tree" "$out/home" "$out/logs" || exit 1
out=$(cd "$out" && pwd)
tree=$out/tree
(cd "$top" && git ls-files -z | tar --null -T - -cf -) | (cd "$tree" && tar xf -) ||
	{ echo "Bail out! cannot copy the tree"; exit 1; }
export HOME=$out/home XDG_CONFIG_HOME=$out/home/.config XDG_CACHE_HOME=$out/home/.cache
# The README installs into ~/.local: its tools are on the PATH, as a
# user's would be.
export PATH=$HOME/.local/bin:$PATH
unset WAFER_BACKEND WAFER_PLUGIN_PATH WAFER_SYSCONFDIR WAFER_CONFIG PKG_CONFIG_PATH

# pattern<TAB>reason: a command matching the (extended) regex is not run.
SKIP_RULES=$(printf '%s\t%s\n' \
	'^\./quickstart' 'this stage runs inside ./quickstart' \
	'mpirun' 'needs several processes under mpirun (t/mpi.sh runs them)' \
	'WAFER_BACKEND=(cuda|levelzero)|cuda:[0-9]' 'needs an NVIDIA or Intel GPU' \
	'data-parallel=2' 'needs two GPUs' \
	'\.trace(\.gz|\.\*)?( |\.|$)' 'needs a recorded trace file' \
	'--backend acme' 'needs a vendor'"'"'s own plugin (acme is an example)' \
	'--backend sim' 'runs in a copy of examples/plugin-sim (the packaging stage builds it and runs it so)' \
	'wafer-launch .*\./train' 'needs your own program (train is an example; t/internal/launch.sh runs the launcher)' \
	'dpkg-buildpackage|lintian|make dist|tar xf wafer' 'the packaging stage runs these' \
	'abi-update' 'rewrites the ABI baselines' \
	'^(ldconfig|sudo|apt)' 'changes the machine')

: >"$out/points"
point() { # RESULT NAME [DETAIL]: numbered from the points file, as the
	# man pages' loop runs in a subshell
	n=$(($(wc -l <"$out/points") + 1))
	case $1 in
	PASS) echo "ok $n - $2" ;;
	SKIP) echo "ok $n - $2 # SKIP $3" ;;
	*) echo "not ok $n - $2"; [ -n "${3:-}" ] && sed 's/^/# /' "$3" | tail -20 ;;
	esac
	printf '%s\t%s\n' "$2" "$1" >>"$out/points"
}
skip_reason() { # COMMAND: the reason it is not run, or nothing
	printf '%s\n' "$SKIP_RULES" | while IFS=$'\t' read -r re why; do
		if printf '%s\n' "$1" | grep -Eq -- "$re"; then
			echo "$why"
			break
		fi
	done
}

# README.md: blocks of one language, separated by NUL, in order.
blocks() { # LANG
	awk -v lang="$1" '
		$0 == "```" lang { inblock = 1; text = ""; next }
		/^```/ && inblock { printf "%s%c", text, 0; inblock = 0; next }
		inblock { text = text $0 "\n" }' "$top/README.md"
}
blocks c | { IFS= read -r -d '' first && printf '%s' "$first" >"$tree/myprog.c"; }

b=0
while IFS= read -r -d '' block; do
	b=$((b + 1))
	script=$out/logs/readme-sh-$b.sh
	: >"$script"
	while IFS= read -r line; do
		why=$(skip_reason "$line")
		if [ -n "$why" ]; then
			point SKIP "README sh block $b: ${line%%#*}" "$why"
			echo ": skipped: $line" >>"$script"
		else
			printf '%s\n' "$line" >>"$script"
		fi
	done <<<"$block"
	first=$(grep -v '^: skipped' "$script" | head -n 1)
	[ -z "$first" ] && continue
	if (cd "$tree" && bash -ex "$script") >"$out/logs/readme-sh-$b.log" 2>&1; then
		point PASS "README sh block $b: ${first%%#*}"
	else
		point FAIL "README sh block $b: ${first%%#*}" "$out/logs/readme-sh-$b.log"
	fi
done < <(blocks sh)

b=0
while IFS= read -r -d '' block; do
	b=$((b + 1))
	case $block in *wafer*) ;; *) continue ;; esac
	# Only PyTorch's is skipped: the others name GPUs in comments only.
	why=
	case $block in *"import torch"*) why="needs PyTorch and an NVIDIA GPU" ;; esac
	if [ -n "$why" ]; then
		point SKIP "README python block $b" "$why"
		continue
	fi
	printf '%s' "$block" >"$out/logs/readme-py-$b.py"
	if (cd "$tree" && venv/bin/python "$out/logs/readme-py-$b.py") >"$out/logs/readme-py-$b.log" 2>&1; then
		point PASS "README python block $b"
	else
		point FAIL "README python block $b" "$out/logs/readme-py-$b.log"
	fi
done < <(blocks python)

# The man pages' EXAMPLES: a line continued by a final \e joined with the
# next, roff unescaped; a line is a command when it starts like one.
l=0
for page in "$top"/man/*.1 "$top"/man/*.5 "$top"/man/*.7; do
	name=${page##*/}
	awk '
		/^\.SH/ { examples = ($0 ~ /EXAMPLES?/) }
		examples && /^\.EX/ { inex = 1; next }
		examples && /^\.EE/ { inex = 0; next }
		inex && /\\e$/ { sub(/\\e$/, " "); held = held $0; next }
		inex { print held $0; held = "" }' "$page" |
		sed -e 's/\\-/-/g' -e 's/\\&//g' -e "s/\\\\(aq/'/g" -e 's/\\e/\\/g' -e 's/^\$ //' |
		grep -E '^(\./|[A-Z_]+=[^ ]* +\./|wafer-|make |cc |python)' |
		while IFS= read -r line; do
			l=$((l + 1))
			why=$(skip_reason "$line")
			if [ -n "$why" ]; then
				point SKIP "$name: $line" "$why"
			elif (cd "$tree/build" && bash -ec "$line") >"$out/logs/man-$name-$l.log" 2>&1; then
				point PASS "$name: $line"
			else
				point FAIL "$name: $line" "$out/logs/man-$name-$l.log"
			fi
		done
done
echo "1..$(wc -l <"$out/points")"
