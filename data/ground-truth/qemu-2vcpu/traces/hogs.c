/* The ground truth's fair_3on2: three nice-0 busy loops for 2 s (N hogs, S seconds: argv 1, 2),
 * started together by one parent that waits for them. Built static by capture.sh. */
#include <stdlib.h>
#include <time.h>
#include <unistd.h>
#include <sys/wait.h>
static double now(void) { struct timespec t; clock_gettime(CLOCK_MONOTONIC, &t); return t.tv_sec + t.tv_nsec / 1e9; }
int main(int argc, char **argv) {
  int n = argc > 1 ? atoi(argv[1]) : 3;
  double secs = argc > 2 ? atof(argv[2]) : 2.0;
  for (int i = 0; i < n; i++) {
    if (fork() == 0) {
      double end = now() + secs;
      volatile unsigned long x = 0;
      while (now() < end) x++;
      _exit(0);
    }
  }
  while (wait(NULL) > 0) {}
  return 0;
}
