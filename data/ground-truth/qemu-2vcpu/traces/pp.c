/* The ground truth's pp: two processes, two pipes, one 1-byte token, N round trips (default
 * 5000); prints microseconds per round trip. Built static by capture.sh for the pp traces. */
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>
#include <time.h>
#include <sys/wait.h>
int main(int argc, char **argv) {
  int n = argc > 1 ? atoi(argv[1]) : 5000;
  int a[2], b[2]; char c = 0;
  if (pipe(a) || pipe(b)) return 1;
  struct timespec t0, t1; clock_gettime(CLOCK_MONOTONIC, &t0);
  pid_t pid = fork();
  if (pid == 0) {
    for (int i = 0; i < n; i++) { if (read(a[0], &c, 1) != 1) return 1; if (write(b[1], &c, 1) != 1) return 1; }
    return 0;
  }
  for (int i = 0; i < n; i++) { if (write(a[1], &c, 1) != 1) return 1; if (read(b[0], &c, 1) != 1) return 1; }
  waitpid(pid, 0, 0);
  clock_gettime(CLOCK_MONOTONIC, &t1);
  printf("pp: %.2f us/rt\n", ((t1.tv_sec - t0.tv_sec) * 1e9 + (t1.tv_nsec - t0.tv_nsec)) / 1e3 / n);
  return 0;
}
