/*
 * jail-exec: the step between the broker and bwrap.
 *
 *   jail-exec [--keep N] [--cgroup FILE]... [--uid U --gid G] [--fsize BYTES]
 *             [--data BYTES] [--nproc N] [--stage SRC DST]... -- PROGRAM ARG...
 *
 * In this order, each step failing closed (exit 127, a line on stderr):
 *  1. joins every cgroup named (writes "0", itself, to each cgroup.procs), so
 *     bwrap and everything it starts is born inside the satellite's bounds;
 *  2. sets resource limits: no core files, files no larger than --fsize (a write
 *     past it fails with EFBIG: SIGXFSZ is ignored), no more than --data bytes of
 *     data segment and private mappings (a host-side job's allocation bound),
 *     at most --nproc processes for the jail uid;
 *  3. with --stage (a root broker's host-side job only): enters a mount
 *     namespace of its own, private to it, and bind-mounts each SRC (a host
 *     file or folder the jail uid has no path to, such as a database in a
 *     0700 home) onto DST, a placeholder in a folder the jail uid can reach,
 *     so that bwrap, no longer root, can bind DST into the jail; the host's
 *     namespace never sees these mounts;
 *  4. becomes --uid/--gid with no supplementary groups (the broker may be
 *     root; the jail never is) and sets no_new_privs;
 *  5. closes every descriptor from N up (default 3): whatever the broker's
 *     own parent left open without close-on-exec never reaches the jail.
 * Then it executes PROGRAM (bwrap) with the descriptors 0..N-1 the broker
 * passed on purpose.
 */
#define _GNU_SOURCE
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sched.h>
#include <sys/mount.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <unistd.h>

#ifndef SYS_close_range
#define SYS_close_range 436
#endif

static void die(const char *what, const char *detail) {
  dprintf(2, "jail-exec: %s%s%s%s%s\n", what, detail ? ": " : "", detail ? detail : "", errno ? ": " : "", errno ? strerror(errno) : "");
  _exit(127);
}

static unsigned long long number(const char *text, const char *flag) {
  char *end = NULL;
  errno = 0;
  unsigned long long n = strtoull(text, &end, 10);
  if (errno != 0 || end == text || *end != '\0') {
    errno = 0;
    die("not a number", flag);
  }
  return n;
}

static void join_cgroup(const char *procs) {
  int fd = open(procs, O_WRONLY | O_CLOEXEC);
  if (fd < 0) die("cannot join cgroup", procs);
  if (write(fd, "0", 1) != 1) die("cannot join cgroup", procs);
  close(fd);
}

static void limit(int resource, rlim_t value, const char *name) {
  struct rlimit rl = {value, value};
  if (setrlimit(resource, &rl) != 0) die("cannot set limit", name);
}

/* close_range(2) where the kernel has it (5.9+); otherwise every open fd listed in /proc/self/fd. */
static void close_from(int first) {
  if (syscall(SYS_close_range, (unsigned)first, ~0U, 0) == 0) return;
  DIR *dir = opendir("/proc/self/fd");
  if (dir == NULL) die("cannot list descriptors", "/proc/self/fd");
  int own = dirfd(dir);
  int fds[4096];
  int count = 0;
  struct dirent *entry;
  while ((entry = readdir(dir)) != NULL && count < 4096) {
    if (entry->d_name[0] < '0' || entry->d_name[0] > '9') continue;
    int fd = atoi(entry->d_name);
    if (fd >= first && fd != own) fds[count++] = fd;
  }
  closedir(dir);
  for (int i = 0; i < count; i++) close(fds[i]);
  /* Past 4096 open descriptors: close the rest by number up to the limit. */
  if (count == 4096) {
    struct rlimit rl;
    long max = getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur != RLIM_INFINITY ? (long)rl.rlim_cur : 1L << 20;
    for (long fd = first; fd < max; fd++) close((int)fd);
  }
}

int main(int argc, char **argv) {
  int keep = 3;
  long long uid = -1, gid = -1;
  unsigned long long fsize = 0, nproc = 0, data = 0;
  const char *cgroups[8];
  int ncgroups = 0;
  const char *stages[32][2];
  int nstages = 0;
  int i = 1;
  for (; i < argc; i++) {
    const char *a = argv[i];
    if (strcmp(a, "--") == 0) {
      i++;
      break;
    }
    if (i + 1 >= argc) die("option needs a value", a);
    const char *value = argv[++i];
    if (strcmp(a, "--keep") == 0) keep = (int)number(value, a);
    else if (strcmp(a, "--cgroup") == 0) {
      if (ncgroups == 8) die("too many cgroups", value);
      cgroups[ncgroups++] = value;
    } else if (strcmp(a, "--uid") == 0) uid = (long long)number(value, a);
    else if (strcmp(a, "--gid") == 0) gid = (long long)number(value, a);
    else if (strcmp(a, "--fsize") == 0) fsize = number(value, a);
    else if (strcmp(a, "--nproc") == 0) nproc = number(value, a);
    else if (strcmp(a, "--data") == 0) data = number(value, a);
    else if (strcmp(a, "--stage") == 0) {
      if (nstages == 32) die("too many stages", value);
      if (i + 1 >= argc) die("option needs two values", a);
      stages[nstages][0] = value;
      stages[nstages++][1] = argv[++i];
    }
    else die("unknown option", a);
  }
  if (i >= argc) die("no program given", NULL);
  if (keep < 3) die("--keep must be at least 3", NULL);
  if ((uid < 0) != (gid < 0)) die("--uid and --gid go together", NULL);

  for (int c = 0; c < ncgroups; c++) join_cgroup(cgroups[c]);

  limit(RLIMIT_CORE, 0, "core");
  if (fsize > 0) {
    limit(RLIMIT_FSIZE, (rlim_t)fsize, "fsize");
    /* Past the limit a write fails (EFBIG) instead of killing: Deno treats a cache it cannot
       grow as no cache. An ignored signal stays ignored across exec. */
    signal(SIGXFSZ, SIG_IGN);
  }

  if (data > 0) limit(RLIMIT_DATA, (rlim_t)data, "data");

  if (nstages > 0) {
    if (uid < 0) die("--stage is for a root broker's jail (with --uid)", NULL);
    if (unshare(CLONE_NEWNS) != 0) die("cannot make a mount namespace", NULL);
    /* Nothing mounted from here on reaches the host's namespace. */
    if (mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL) != 0) die("cannot make mounts private", NULL);
    for (int s = 0; s < nstages; s++) {
      if (mount(stages[s][0], stages[s][1], NULL, MS_BIND, NULL) != 0) die("cannot stage", stages[s][0]);
    }
  }

  if (uid >= 0) {
    if (nproc > 0) limit(RLIMIT_NPROC, (rlim_t)nproc, "nproc");
    if (setgroups(0, NULL) != 0) die("cannot clear supplementary groups", NULL);
    if (setresgid((gid_t)gid, (gid_t)gid, (gid_t)gid) != 0) die("cannot change group", NULL);
    if (setresuid((uid_t)uid, (uid_t)uid, (uid_t)uid) != 0) die("cannot change user", NULL);
    uid_t r, e, s;
    if (getresuid(&r, &e, &s) != 0 || r != (uid_t)uid || e != (uid_t)uid || s != (uid_t)uid) die("user change did not hold", NULL);
    /* Changing user clears "dumpable", which makes /proc/self root's: bwrap then cannot
       reach the descriptors it binds (/proc/self/fd/N). Nothing of root's is left here. */
    if (prctl(PR_SET_DUMPABLE, 1, 0, 0, 0) != 0) die("cannot set dumpable", NULL);
  }
  if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0) die("cannot set no_new_privs", NULL);

  close_from(keep);
  execv(argv[i], &argv[i]);
  die("cannot execute", argv[i]);
  return 127;
}
