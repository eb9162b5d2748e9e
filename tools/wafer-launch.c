/* wafer — SPDX-License-Identifier: MIT
 *
 * wafer-launch: starts N processes of one program as the ranks of a job
 * on this machine, for machines without an MPI launcher
 * (wafer-launch(1)). Each gets WAFER_RANK, WAFER_SIZE and
 * WAFER_COMM_ID_FILE, a path in a directory the launcher made for the
 * job, through which rank 0 hands the others the communicator id
 * (wafer_comm_launched(3)); the directory goes when the job ends.
 *
 * Each rank is a process group of its own, so what it starts goes with
 * it. The first rank that exits with a failure (a status other than 0,
 * or a signal) ends the job: the others get SIGTERM, and SIGKILL after
 * the grace time, so a rank that died never leaves the others waiting
 * in a collective. SIGINT, SIGTERM and SIGHUP to the launcher are passed
 * on the same way. The exit status is the first failure's (128 + the
 * signal for a signal), 0 when every rank exited 0. */
#include "build-config.h"

#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define MAX_RANKS 1024

static volatile sig_atomic_t stop_signal;

static void on_signal(int sig)
{
	stop_signal = sig;
}

static void usage(FILE *to)
{
	fprintf(to,
		"usage: wafer-launch -n N [--grace SECONDS] [--] PROGRAM "
		"[ARGS...]\n"
		"Starts N processes of PROGRAM as ranks 0..N-1 of one job "
		"(WAFER_RANK,\nWAFER_SIZE, WAFER_COMM_ID_FILE); when one fails, "
		"stops the others\n(SIGTERM, then SIGKILL after the grace "
		"time, default 5 s). See wafer-launch(1).\n");
}

static double now_s(void)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return (double)t.tv_sec + (double)t.tv_nsec / 1e9;
}

/* The exit status the launcher gives for a rank's wait status. */
static int exit_code(int wstatus)
{
	if (WIFEXITED(wstatus))
		return WEXITSTATUS(wstatus);
	if (WIFSIGNALED(wstatus))
		return 128 + WTERMSIG(wstatus);
	return 1;
}

static void describe(char *buf, size_t size, int wstatus)
{
	if (WIFSIGNALED(wstatus))
		snprintf(buf, size, "was killed by signal %d (%s)",
			 WTERMSIG(wstatus), strsignal(WTERMSIG(wstatus)));
	else
		snprintf(buf, size, "exited with status %d",
			 exit_code(wstatus));
}

/* Starts rank |r| of |n|: its own process group, the job's variables. */
static pid_t start_rank(unsigned r, unsigned n, const char *id_file,
			char **argv)
{
	pid_t pid = fork();

	if (pid != 0)
		return pid;
	char value[32];

	setpgid(0, 0);
	signal(SIGINT, SIG_DFL);
	signal(SIGTERM, SIG_DFL);
	signal(SIGHUP, SIG_DFL);
	snprintf(value, sizeof value, "%u", r);
	setenv("WAFER_RANK", value, 1);
	snprintf(value, sizeof value, "%u", n);
	setenv("WAFER_SIZE", value, 1);
	setenv("WAFER_COMM_ID_FILE", id_file, 1);
	execvp(argv[0], argv);
	fprintf(stderr, "wafer-launch: rank %u: cannot run %s: %s\n", r,
		argv[0], strerror(errno));
	_exit(127);
}

/* Signals every rank still running (its whole process group). */
static void signal_all(const pid_t *pids, const int *running, unsigned n,
		       int sig)
{
	for (unsigned r = 0; r < n; r++)
		if (running[r])
			kill(-pids[r], sig);
}

int main(int argc, char **argv)
{
	unsigned n = 0, left, r;
	double grace = 5, stop_at = 0;
	int first = 1, status = 0, failed_rank = -1, killed = 0;
	char dir[4096], id_file[4200], what[128];
	const char *tmp = getenv("TMPDIR");
	pid_t pids[MAX_RANKS];
	int running[MAX_RANKS];

	while (first < argc && argv[first][0] == '-') {
		const char *a = argv[first];
		char *end;

		if (strcmp(a, "--") == 0) {
			first++;
			break;
		}
		if (strcmp(a, "-h") == 0 || strcmp(a, "--help") == 0) {
			usage(stdout);
			return 0;
		}
		if ((strcmp(a, "-n") == 0 || strcmp(a, "--grace") == 0) &&
		    first + 1 < argc) {
			const char *v = argv[first + 1];

			errno = 0;
			if (a[1] == 'n') {
				unsigned long x = strtoul(v, &end, 10);
				if (!*v || *end || errno || x < 1 ||
				    x > MAX_RANKS) {
					fprintf(stderr,
						"wafer-launch: -n %s: want 1 "
						"to %d ranks\n",
						v, MAX_RANKS);
					return 2;
				}
				n = (unsigned)x;
			} else {
				grace = strtod(v, &end);
				/* Not "nan": no time would reach it. */
				if (!*v || *end || errno || !(grace >= 0)) {
					fprintf(stderr,
						"wafer-launch: --grace %s: "
						"want seconds, 0 or more\n",
						v);
					return 2;
				}
			}
			first += 2;
			continue;
		}
		fprintf(stderr, "wafer-launch: unknown option '%s'\n", a);
		usage(stderr);
		return 2;
	}
	if (n == 0 || first >= argc) {
		fprintf(stderr, "wafer-launch: %s\n",
			n == 0 ? "-n N is required" : "no program given");
		usage(stderr);
		return 2;
	}
	snprintf(dir, sizeof dir, "%s/wafer-launch.XXXXXX",
		 tmp && *tmp ? tmp : "/tmp");
	if (!mkdtemp(dir)) {
		fprintf(stderr, "wafer-launch: cannot make a directory %s: %s\n",
			dir, strerror(errno));
		return 1;
	}
	snprintf(id_file, sizeof id_file, "%s/comm-id", dir);

	struct sigaction sa = {.sa_handler = on_signal};
	sigemptyset(&sa.sa_mask);
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGTERM, &sa, NULL);
	sigaction(SIGHUP, &sa, NULL);

	for (r = 0; r < n; r++) {
		pids[r] = start_rank(r, n, id_file, argv + first);
		running[r] = pids[r] > 0;
		if (pids[r] < 0) {
			fprintf(stderr, "wafer-launch: cannot start rank %u: "
				"%s; stopping the others\n",
				r, strerror(errno));
			status = 1;
			failed_rank = (int)r;
			n = r; /* only those started */
			signal_all(pids, running, n, SIGTERM);
			stop_at = now_s() + grace;
			break;
		}
		/* Also here: a signal to the group must not miss a rank
		 * that has not run setpgid yet. */
		setpgid(pids[r], pids[r]);
	}

	for (left = n; left > 0;) {
		int wstatus;
		pid_t pid = waitpid(-1, &wstatus, WNOHANG);

		if (pid > 0) {
			for (r = 0; r < n && pids[r] != pid; r++)
				;
			if (r == n || !running[r])
				continue;
			running[r] = 0;
			left--;
			if (failed_rank < 0 && exit_code(wstatus) != 0) {
				failed_rank = (int)r;
				status = exit_code(wstatus);
				describe(what, sizeof what, wstatus);
				fprintf(stderr,
					"wafer-launch: rank %u (pid %ld) %s: "
					"stopping the other %u rank%s\n",
					r, (long)pid, what, left,
					left == 1 ? "" : "s");
				signal_all(pids, running, n, SIGTERM);
				stop_at = now_s() + grace;
			}
			continue;
		}
		if (stop_signal && !stop_at) {
			fprintf(stderr, "wafer-launch: %s: stopping the %u "
				"rank%s\n",
				strsignal(stop_signal), left,
				left == 1 ? "" : "s");
			status = 128 + stop_signal;
			signal_all(pids, running, n, stop_signal);
			stop_at = now_s() + grace;
		}
		if (stop_at && !killed && now_s() >= stop_at) {
			fprintf(stderr, "wafer-launch: %u rank%s still running "
				"%.3g s after SIGTERM: SIGKILL\n",
				left, left == 1 ? "" : "s", grace);
			signal_all(pids, running, n, SIGKILL);
			killed = 1;
		}
		nanosleep(&(struct timespec){0, 10000000}, NULL);
	}
	unlink(id_file);
	rmdir(dir);
	return status;
}
