// SPDX-License-Identifier: GPL-2.0-only
/*
 * Three tasks that each burn 200 us of their own CPU time and sleep 300 us, and one hog, all
 * pinned to CPU 1 and started from one shell (one autogroup), for 10 s; each prints its CPU
 * time. The real-kernel side of docs/fidelity.md "7.3's reweight of a group task keeps its
 * lag"; the model's side is `schedlab run --topology smp:1 rtapp FILE` with three
 * `"run": 200, "sleep": 300` workers and a `"run": 1000000` hog.
 *
 *   cc -O2 -o sleepers-and-hog sleepers-and-hog.c && ./sleepers-and-hog
 *
 * On this repository's host (6.18.44, 2 vCPUs, 2026-12-07): hog 3.631 s, workers 2.113,
 * 2.123, 2.131 s.
 */
#define _GNU_SOURCE
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static double now(clockid_t c)
{
	struct timespec t;

	clock_gettime(c, &t);
	return t.tv_sec + t.tv_nsec * 1e-9;
}

int main(void)
{
	const int workers = 3;
	const double seconds = 10;
	cpu_set_t set;
	pid_t pid[4];

	CPU_ZERO(&set);
	CPU_SET(1, &set);
	if (sched_setaffinity(0, sizeof(set), &set)) {
		perror("sched_setaffinity");
		return 1;
	}
	for (int i = 0; i <= workers; i++) {
		pid[i] = fork();
		if (pid[i] < 0) {
			perror("fork");
			return 1;
		}
		if (pid[i] == 0) {
			double end = now(CLOCK_MONOTONIC) + seconds;
			struct timespec sleep = { 0, 300000 };

			if (i == workers) {
				while (now(CLOCK_MONOTONIC) < end)
					;
			} else {
				while (now(CLOCK_MONOTONIC) < end) {
					double t0 = now(CLOCK_THREAD_CPUTIME_ID);

					while (now(CLOCK_THREAD_CPUTIME_ID) - t0 < 200e-6)
						;
					nanosleep(&sleep, NULL);
				}
			}
			printf("%s %d cpu %.3f s\n", i == workers ? "hog" : "worker", i,
			       now(CLOCK_THREAD_CPUTIME_ID));
			exit(0);
		}
	}
	for (int i = 0; i <= workers; i++)
		waitpid(pid[i], NULL, 0);
	return 0;
}
