/* wafer — SPDX-License-Identifier: MIT
 * wafer-trace: checks and summarises a timeline trace written by
 * wafer_trace_begin(3) or `[core] trace` (wafer-trace(1)). */
#include "build-config.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tools/timeline.h"

static int usage(FILE *out, int status)
{
	fprintf(out,
		"usage: wafer-trace report [--top N] FILE\n"
		"       wafer-trace check FILE\n"
		"       wafer-trace svg FILE > PICTURE.svg\n"
		"\n"
		"report  per kernel: count, total/mean/max device time and share "
		"of the step;\n"
		"        per queue: host and device busy time, launch-bound or "
		"not;\n"
		"        the kernels whose buffers hold the most memory\n"
		"check   whether FILE is a well-formed trace (trace-event JSON, "
		"spans\n"
		"        ordered and nested per lane, inside the trace)\n"
		"svg     the trace drawn as one SVG picture: a row per lane, "
		"spans as\n"
		"        boxes (hover for args), waits as arrows, errors in red,"
		" memory\n"
		"        as a line\n"
		"See wafer-trace(1).\n");
	return status;
}

int main(int argc, char **argv)
{
	if (argc >= 2 && (!strcmp(argv[1], "-h") || !strcmp(argv[1], "--help")))
		return usage(stdout, 0);
	if (argc < 3)
		return usage(stderr, 2);
	const char *mode = argv[1];
	size_t top = 10;
	int at = 2;
	if (!strcmp(mode, "report") && !strcmp(argv[at], "--top") &&
	    argc > at + 2) {
		char *end;
		top = strtoul(argv[at + 1], &end, 10);
		if (*end || !top) {
			fprintf(stderr, "wafer-trace: --top takes a number > 0, "
					"not '%s'\n", argv[at + 1]);
			return 2;
		}
		at += 2;
	}
	if ((strcmp(mode, "report") && strcmp(mode, "check") &&
	     strcmp(mode, "svg")) ||
	    argc != at + 1)
		return usage(stderr, 2);
	const char *path = argv[at];
	char *text = timeline_read_file(path);
	if (!text) {
		fprintf(stderr, "wafer-trace: cannot read '%s': %s\n", path,
			strerror(errno));
		return 1;
	}
	char error[256];
	struct json *root = json_parse(text, error, sizeof error);
	free(text);
	if (!root) {
		fprintf(stderr, "wafer-trace: %s: not JSON: %s\n", path, error);
		return 1;
	}
	if (!timeline_check(root, error, sizeof error)) {
		fprintf(stderr, "wafer-trace: %s: not a well-formed trace: %s\n",
			path, error);
		json_free(root);
		return 1;
	}
	int status = 0;
	if (!strcmp(mode, "check"))
		printf("%s: a well-formed trace of %zu events\n", path,
		       json_get(root, "traceEvents")->count);
	else if (!strcmp(mode, "svg"))
		status = timeline_svg(root, stdout);
	else
		timeline_report(root, stdout, top);
	json_free(root);
	return status;
}
