/*
 * syscall-probe: proof that the jail's seccomp filter applies (tests/jail/seccomp.test.ts).
 *
 * Reads lines "id nr a0 a1 a2 a3 a4 a5" on stdin (missing args are 0; an arg "buf"
 * is a pointer to 4 KiB of zeroes; nr "i386:N" makes the call through int 0x80 and
 * "x32:N" through the x32 ABI) and prints "id result" for each: 0 on success, the
 * errno, or "sigN" when the call killed the process. It first prints its own
 * "status Seccomp…" lines from /proc/self/status.
 *
 * Each call runs in a fresh child, so a call that kills (foreign ABI) or changes the
 * caller (personality) affects only that child. Callers choose arguments that are
 * harmless were the call not filtered.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

static char scratch[4096] __attribute__((aligned(64)));

static void print_status(void) {
  FILE *f = fopen("/proc/self/status", "r");
  char line[256];
  if (f == NULL) {
    printf("status unreadable %d\n", errno);
    return;
  }
  while (fgets(line, sizeof line, f) != NULL) {
    if (strncmp(line, "Seccomp", 7) == 0) printf("status %s", line);
  }
  fclose(f);
}

static long parse_arg(const char *s) {
  if (strcmp(s, "buf") == 0) return (long)scratch;
  return (long)strtoull(s, NULL, 0);
}

/* Returns 0 or the errno the call answered. */
static int call(const char *nr, const long a[6]) {
  long r;
#if defined(__x86_64__)
  if (strncmp(nr, "i386:", 5) == 0) {
    /* The 32-bit ABI from a 64-bit process: what a foreign-ABI escape would use. */
    long n = strtol(nr + 5, NULL, 0);
    /* The compat entry zeroes r8-r11. */
    __asm__ volatile("int $0x80" : "=a"(r) : "a"(n), "b"(a[0]), "c"(a[1]), "d"(a[2]), "S"(a[3]), "D"(a[4]) : "memory", "r8", "r9", "r10", "r11");
    return r < 0 && r > -4096 ? (int)-r : 0;
  }
  if (strncmp(nr, "x32:", 4) == 0) {
    r = syscall(strtol(nr + 4, NULL, 0) | 0x40000000L, a[0], a[1], a[2], a[3], a[4], a[5]);
    return r == -1 ? errno : 0;
  }
#endif
  r = syscall(strtol(nr, NULL, 0), a[0], a[1], a[2], a[3], a[4], a[5]);
  return r == -1 ? errno : 0;
}

int main(void) {
  /* A killed child must not leave a core file in the jail. */
  struct rlimit none = {0, 0};
  setrlimit(RLIMIT_CORE, &none);
  /* The child's answer comes back through shared memory: errnos above 255 do not fit an exit code. */
  int *answer = mmap(NULL, sizeof(int), PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
  if (answer == MAP_FAILED) {
    perror("mmap");
    return 1;
  }
  setvbuf(stdout, NULL, _IOLBF, 0);
  print_status();

  char line[512];
  while (fgets(line, sizeof line, stdin) != NULL) {
    char *tok[8] = {0};
    int n = 0;
    for (char *t = strtok(line, " \t\n"); t != NULL && n < 8; t = strtok(NULL, " \t\n")) tok[n++] = t;
    if (n < 2) continue;
    long a[6] = {0};
    for (int i = 2; i < n; i++) a[i - 2] = parse_arg(tok[i]);

    *answer = -1;
    memset(scratch, 0, sizeof scratch);
    pid_t child = fork();
    if (child < 0) {
      printf("%s fork-failed-%d\n", tok[0], errno);
      continue;
    }
    if (child == 0) {
      pid_t self = getpid();
      alarm(5); /* a call that blocks dies with SIGALRM instead of hanging the probe */
      int e = call(tok[1], a);
      /* A clone that succeeded returns here in a second process too: only the caller answers. */
      if (getpid() == self) *answer = e;
      _exit(0);
    }
    int status = 0;
    while (waitpid(child, &status, 0) < 0 && errno == EINTR) {
    }
    if (WIFSIGNALED(status)) printf("%s sig%d\n", tok[0], WTERMSIG(status));
    else printf("%s %d\n", tok[0], *answer);
  }
  return 0;
}
