#define _GNU_SOURCE
/* The fairness cases untraced, each hog printing its own /proc/self/sched counters before it
 * exits (the exit's switch is not in them): `hogs-counted 3 2` is fair_3on2 (hogs.c), `hogs-counted
 * 2 2 1` pins each child to CPU 0 itself after the fork and renices the second to 5 (a guess at
 * fair_nice's launcher, which the ground truth does not give). Built static; run from a busybox
 * init in the guests of ../README.md (qemu TCG, -smp 2) without ftrace. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <sys/wait.h>
#include <sys/resource.h>
#include <sched.h>
static double now(void) { struct timespec t; clock_gettime(CLOCK_MONOTONIC, &t); return t.tv_sec + t.tv_nsec / 1e9; }
static void dump(const char *tag) {
  FILE *f = fopen("/proc/self/sched", "r"); char line[256]; long sw=0, inv=0, mig=0;
  while (fgets(line, sizeof line, f)) {
    char *c = strchr(line, ':'); if (!c) continue; long v = atol(c+1);
    if (!strncmp(line, "nr_switches", 11)) sw = v;
    else if (!strncmp(line, "nr_involuntary_switches", 23)) inv = v;
    else if (!strncmp(line, "se.nr_migrations", 16)) mig = v;
  }
  fclose(f);
  printf("HOG %s pid %d switches %ld invol %ld migr %ld\n", tag, getpid(), sw, inv, mig); fflush(stdout);
}
int main(int argc, char **argv) {
  int n = atoi(argv[1]); double secs = atof(argv[2]); int mode = argc > 3 ? atoi(argv[3]) : 0;
  for (int i = 0; i < n; i++) {
    if (fork() == 0) {
      if (mode == 1) { cpu_set_t s; CPU_ZERO(&s); CPU_SET(0, &s); sched_setaffinity(0, sizeof s, &s); setpriority(PRIO_PROCESS, 0, i == 0 ? 0 : 5); }
      double end = now() + secs; volatile unsigned long x = 0;
      while (now() < end) x++;
      dump(mode == 1 ? (i == 0 ? "nice0" : "nice5") : "hog");
      _exit(0);
    }
  }
  while (wait(NULL) > 0) {}
  return 0;
}
