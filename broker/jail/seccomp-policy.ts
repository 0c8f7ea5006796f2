/**
 * The jail's seccomp policy, as data: the one source for the BPF filter
 * (broker/jail/seccomp-compile.py builds it with libseccomp) and for its proof
 * (tests/jail/seccomp.test.ts derives every probe from the rules below).
 *
 * A denylist in the spirit of Flatpak's and Docker's: everything is allowed
 * except these calls, which answer an errno instead of running. Kernel
 * interfaces an extension's Deno never needs and that have a history of
 * privilege-escalation bugs; namespaces and the mount API, which the jail has
 * already set up; other processes' memory; and every socket family but AF_UNIX.
 * A foreign ABI (i386 `int 0x80`, x32) is not in the filter at all, so
 * libseccomp's bad-arch action kills the thread that tries it.
 *
 * Each rule carries probes: arguments that are harmless were the call not
 * filtered (bad fds, NULL pointers, invalid flags, pid -1), and what the kernel
 * answers to them inside the jail without the filter (measured on Linux 6.18 in
 * a jail started by a root broker and by an unprivileged one; both answer the same).
 */

/** What a denied call answers. ENOSYS where libc/libuv/tokio fall back to an older call on it. */
export type DenyErrno = "EPERM" | "ENOSYS" | "EAFNOSUPPORT";

/** One argument test; a rule's conditions must all hold (AND). */
export type Condition =
  | { readonly arg: number; readonly op: "EQ" | "NE"; readonly value: number }
  /** (arg & mask) == value. */
  | { readonly arg: number; readonly op: "MASKED_EQ"; readonly mask: number; readonly value: number }
  /** Any one of the mask's bits is set (compiled to one masked compare per bit). */
  | { readonly arg: number; readonly op: "ANY_BIT"; readonly mask: number }
  /** The low 32 bits are none of `values`: the kernel reads this argument as a 32-bit int. */
  | { readonly arg: number; readonly op: "NOT_IN_32"; readonly values: readonly number[] };

/** An argument for the probe: a number, or a pointer to 4 KiB of zeroes. */
export type ProbeArg = number | "buf";

/** What the kernel answered: "OK", an errno name, or a signal name when the call killed the caller. */
export type Answer = string;

export interface Probe {
  /** Unique among all probes. */
  readonly id: string;
  readonly args: readonly ProbeArg[];
  /** How to call it when not by the rule's syscall: "i386:N" (int 0x80) or "x32:N". */
  readonly nr?: string;
  /** The kernel's answers without the filter (any of these). */
  readonly kernel: readonly Answer[];
  /**
   * Repeats the probe with `args[arg]` set to each value from..to
   * (ids get "-<value>"); `except` overrides `kernel` per value.
   */
  readonly sweep?: {
    readonly arg: number;
    readonly from: number;
    readonly to: number;
    readonly except: Readonly<Record<number, readonly Answer[]>>;
  };
}

export interface Rule {
  readonly syscall: string;
  /** The number per `uname -m`, for calls newer than libseccomp 2.5.4 knows. */
  readonly nr?: Readonly<Record<string, number>>;
  readonly errno: DenyErrno;
  readonly when?: readonly Condition[];
  readonly why: string;
  /** At least one must match the rule; those that do not must be answered as without the filter. */
  readonly probes: readonly Probe[];
}

const EINVAL = ["EINVAL"];
const EFAULT = ["EFAULT"];
const EBADF = ["EBADF"];
const EPERM = ["EPERM"];
const OK = ["OK"];
/** The jail has no capabilities; a kernel built without kexec or modules (as here) has no such call. */
const NO_CAP_OR_NOT_BUILT = ["ENOSYS", "EPERM"];

// clone(2) flags.
const CLONE_SIGHAND = 0x800; // without CLONE_VM: EINVAL before anything is created
const CLONE_NEW = {
  ns: 0x00020000,
  cgroup: 0x02000000,
  uts: 0x04000000,
  ipc: 0x08000000,
  user: 0x10000000,
  pid: 0x20000000,
  net: 0x40000000,
} as const;
const CLONE_NEW_ANY = Object.values(CLONE_NEW).reduce((a, b) => a | b, 0);

const TIOCSTI = 0x5412;
const TIOCLINUX = 0x541c;
const TCGETS = 0x5401;
const AF_UNIX = 1;
/**
 * Bits above 32 the kernel ignores for an int argument: a filter
 * comparing all 64 would be bypassed (Flatpak CVE-2019-10063).
 */
const HIGH = 0x1_0000_0000;
const ADDR_NO_RANDOMIZE = 0x0040000;
const READ_IMPLIES_EXEC = 0x0400000;

/** Personas Docker allows: PER_LINUX, PER_LINUX32, UNAME26, both, and the query. */
const PERSONAS = [0, 8, 0x20000, 0x20008, 0xffffffff];

const deny = (syscall: string, errno: DenyErrno, why: string, ...probes: Probe[]): Rule => ({
  syscall,
  errno,
  why,
  probes,
});

/**
 * One ioctl request refused. The kernel compares only the low 32 bits of the
 * request, so the rule masks too, and a probe sets the high bits to prove it.
 */
const denyIoctl = (request: number, name: string, why: string, ...more: Probe[]): Rule => ({
  ...deny(
    "ioctl",
    "EPERM",
    why,
    probe(`ioctl-${name}`, [-1, request, 0], EBADF),
    probe(`ioctl-${name}-high`, [-1, HIGH + request, 0], EBADF),
    ...more,
  ),
  when: [{ arg: 1, op: "MASKED_EQ", mask: 0xffffffff, value: request }],
});
const probe = (id: string, args: readonly ProbeArg[], kernel: readonly Answer[]): Probe => ({ id, args, kernel });

/**
 * What the families that exist here answer without the filter (the jail's fresh network
 * namespace; every other family is EAFNOSUPPORT): 1 unix, 2 inet, 10 inet6, 16 netlink,
 * 17 packet, 40 vsock, 44 xdp.
 */
const SOCKET_KERNEL = {
  stream: { 1: OK, 2: OK, 10: OK, 16: ["ESOCKTNOSUPPORT"], 17: EPERM, 40: OK, 44: EPERM },
  dgram: { 1: OK, 2: OK, 10: OK, 16: OK, 17: EPERM, 40: ["ENODEV"], 44: EPERM },
};
const SOCKETPAIR_KERNEL = {
  stream: {
    1: OK,
    2: ["EOPNOTSUPP"],
    10: ["EOPNOTSUPP"],
    16: ["ESOCKTNOSUPPORT"],
    17: EPERM,
    40: ["EOPNOTSUPP"],
    44: EPERM,
  },
  dgram: { 1: OK, 2: ["EOPNOTSUPP"], 10: ["EOPNOTSUPP"], 16: ["EOPNOTSUPP"], 17: EPERM, 40: ["ENODEV"], 44: EPERM },
};

export const SECCOMP_RULES: readonly Rule[] = [
  // Other processes: reading or steering them.
  deny("ptrace", "EPERM", "inspects and steers other processes", probe("ptrace", [2 /* PEEKDATA */, -1], ["ESRCH"])),
  deny(
    "process_vm_readv",
    "EPERM",
    "reads another process's memory",
    probe("process_vm_readv", [0, 0, 0, 0, 0, 1], EINVAL),
  ),
  deny(
    "process_vm_writev",
    "EPERM",
    "writes another process's memory",
    probe("process_vm_writev", [0, 0, 0, 0, 0, 1], EINVAL),
  ),
  deny(
    "process_madvise",
    "EPERM",
    "advises on another process's memory",
    probe("process_madvise", [-1, 0, 0, 0, 1], EINVAL),
  ),
  deny(
    "pidfd_getfd",
    "EPERM",
    "takes a file descriptor out of another process",
    probe("pidfd_getfd", [-1, -1, 0], EBADF),
  ),
  deny(
    "kcmp",
    "EPERM",
    "compares other processes' kernel objects (Docker: only with CAP_SYS_PTRACE)",
    probe("kcmp", [-1, -1, 0, 0, 0], ["ESRCH"]),
  ),
  // The kernel keyring: not namespaced.
  deny("keyctl", "EPERM", "the kernel keyring is not namespaced", probe("keyctl", [-1], ["EOPNOTSUPP"])),
  deny("add_key", "EPERM", "the kernel keyring is not namespaced", probe("add_key", [0, 0, 0, 0, 0], EFAULT)),
  deny("request_key", "EPERM", "the kernel keyring is not namespaced", probe("request_key", [0, 0, 0, 0], EFAULT)),
  // Large in-kernel attack surfaces.
  deny("bpf", "EPERM", "loads programs into the kernel", probe("bpf", [-1, 0, 0], ["EINVAL", "EPERM"])),
  deny(
    "perf_event_open",
    "EPERM",
    "performance counters: kernel address leaks and a long bug history",
    probe("perf_event_open", [0, 0, -1, -1, -1], EINVAL),
  ),
  deny(
    "userfaultfd",
    "EPERM",
    "stalls the kernel on a page fault: a race-exploit primitive",
    probe("userfaultfd", [-1], ["EINVAL", "EPERM"]),
  ),
  deny(
    "io_uring_setup",
    "ENOSYS",
    "io_uring: a long bug history; libuv and tokio fall back on ENOSYS",
    probe("io_uring_setup", [0, 0], EFAULT),
  ),
  deny("io_uring_enter", "ENOSYS", "io_uring", probe("io_uring_enter", [-1, 0, 0, 0, 0, 0], EBADF)),
  deny("io_uring_register", "ENOSYS", "io_uring", probe("io_uring_register", [-1, 0, 0, 0], ["EINVAL", "EBADF"])),
  // Mounts: the jail's filesystem is built by bwrap before the filter applies.
  deny("mount", "EPERM", "the jail's mounts are final", probe("mount", [0, 0, 0, 0, 0], EFAULT)),
  deny("umount2", "EPERM", "the jail's mounts are final", probe("umount2", [0, -1], EINVAL)),
  deny("pivot_root", "EPERM", "the jail's root is final", probe("pivot_root", [0, 0], EPERM)),
  deny("chroot", "EPERM", "the jail's root is final", probe("chroot", [0], EFAULT)),
  deny(
    "open_tree",
    "ENOSYS",
    "the new mount API; callers fall back to mount(2) on ENOSYS",
    probe("open_tree", [-1, 0, -1], EINVAL),
  ),
  {
    ...deny(
      "open_tree_attr",
      "ENOSYS",
      "the new mount API (Linux 6.15)",
      probe("open_tree_attr", [-1, 0, -1, 0, 0], EINVAL),
    ),
    nr: { x86_64: 467, aarch64: 467 },
  },
  deny("move_mount", "ENOSYS", "the new mount API", probe("move_mount", [-1, 0, -1, 0, -1], ["EPERM", "EINVAL"])),
  deny("fsopen", "ENOSYS", "the new mount API", probe("fsopen", [0, -1], ["EPERM", "EINVAL"])),
  deny("fsconfig", "ENOSYS", "the new mount API", probe("fsconfig", [-1, -1, 0, 0, 0], EINVAL)),
  deny("fsmount", "ENOSYS", "the new mount API", probe("fsmount", [-1, -1, -1], ["EPERM", "EINVAL"])),
  deny("fspick", "ENOSYS", "the new mount API", probe("fspick", [-1, 0, -1], ["EPERM", "EINVAL"])),
  deny("mount_setattr", "ENOSYS", "the new mount API", probe("mount_setattr", [-1, 0, -1, 0, 0], EINVAL)),
  // Namespaces: the jail's are set up; new ones expose code paths (user namespaces above all).
  deny("unshare", "EPERM", "new namespaces", probe("unshare", [0], OK)),
  deny("setns", "EPERM", "joins other namespaces", probe("setns", [-1, 0], EBADF)),
  {
    ...deny(
      "clone",
      "EPERM",
      "new namespaces through clone; plain threads and forks stay allowed",
      // CLONE_SIGHAND without CLONE_VM makes the kernel refuse before creating anything.
      ...Object.entries(CLONE_NEW).map(([name, flag]) =>
        probe(`clone-new${name}`, [flag | CLONE_SIGHAND, 0, 0, 0, 0], EINVAL),
      ),
      probe("clone-plain", [CLONE_SIGHAND, 0, 0, 0, 0], EINVAL),
    ),
    when: [{ arg: 0, op: "ANY_BIT", mask: CLONE_NEW_ANY }],
  },
  // Its flags sit in memory a filter cannot read: ENOSYS makes glibc fall back to clone.
  deny(
    "clone3",
    "ENOSYS",
    "flags a filter cannot see; glibc falls back to clone on ENOSYS",
    probe("clone3", [0, 0], EINVAL),
  ),
  // The machine itself.
  deny("kexec_load", "EPERM", "replaces the kernel", probe("kexec_load", [0, 0, 0, -1], NO_CAP_OR_NOT_BUILT)),
  deny(
    "kexec_file_load",
    "EPERM",
    "replaces the kernel",
    probe("kexec_file_load", [-1, -1, 0, 0, -1], NO_CAP_OR_NOT_BUILT),
  ),
  deny("init_module", "EPERM", "loads kernel code", probe("init_module", [0, 0, 0], NO_CAP_OR_NOT_BUILT)),
  deny("finit_module", "EPERM", "loads kernel code", probe("finit_module", [-1, 0, -1], NO_CAP_OR_NOT_BUILT)),
  deny("delete_module", "EPERM", "unloads kernel code", probe("delete_module", [0, 0], NO_CAP_OR_NOT_BUILT)),
  deny("reboot", "EPERM", "reboots (or kills the pid namespace)", probe("reboot", [0, 0, 0, 0], EPERM)),
  deny("swapon", "EPERM", "the host's swap", probe("swapon", [0, 0], EPERM)),
  deny("swapoff", "EPERM", "the host's swap", probe("swapoff", [0], EPERM)),
  deny("acct", "EPERM", "process accounting to a file", probe("acct", [0], EPERM)),
  deny("quotactl", "EPERM", "filesystem quotas", probe("quotactl", [0, 0, 0, 0], ["ENODEV", "EFAULT"])),
  deny("quotactl_fd", "EPERM", "filesystem quotas", probe("quotactl_fd", [-1, 0, 0, 0], EBADF)),
  deny(
    "syslog",
    "EPERM",
    "the kernel log: addresses and host activity",
    probe("syslog", [10 /* SIZE_BUFFER */, 0, 0], EPERM),
  ),
  deny("vhangup", "EPERM", "hangs up the terminal", probe("vhangup", [], EPERM)),
  deny("uselib", "EPERM", "an obsolete loader", probe("uselib", [0], ["ENOSYS", "EFAULT"])),
  deny(
    "lookup_dcookie",
    "EPERM",
    "an obsolete profiling interface",
    probe("lookup_dcookie", [0, 0, 0], ["ENOSYS", "EPERM"]),
  ),
  // Another process's or the host's memory placement (Docker grants these only with CAP_SYS_NICE; Deno uses none).
  deny("move_pages", "EPERM", "moves another process's pages", probe("move_pages", [0, 0, 0, 0, 0, -1], EINVAL)),
  deny(
    "migrate_pages",
    "EPERM",
    "moves another process's pages",
    probe("migrate_pages", [-1, 0, 0, 0], ["ESRCH", "EINVAL"]),
  ),
  deny("mbind", "EPERM", "NUMA placement", probe("mbind", [0, 0, 0, 0, 0, -1], EINVAL)),
  deny("set_mempolicy", "EPERM", "NUMA placement", probe("set_mempolicy", [-1, 0, 0], EINVAL)),
  deny("get_mempolicy", "EPERM", "NUMA placement", probe("get_mempolicy", [0, 0, 0, 0, -1], EINVAL)),
  // File handles bypass path lookup: the "shocker" container escape.
  deny(
    "name_to_handle_at",
    "EPERM",
    "file handles bypass path lookup",
    probe("name_to_handle_at", [-1, 0, 0, 0, -1], EINVAL),
  ),
  deny(
    "open_by_handle_at",
    "EPERM",
    "opens any inode by handle, outside the jail's root",
    probe("open_by_handle_at", [-1, 0, 0], ["EFAULT", "EPERM"]),
  ),
  {
    ...deny(
      "personality",
      "EPERM",
      "execution domains that weaken ASLR or make data executable; Docker's set stays allowed",
      probe("personality-no-randomize", [ADDR_NO_RANDOMIZE], OK),
      probe("personality-read-implies-exec", [READ_IMPLIES_EXEC], OK),
      probe("personality-high-no-randomize", [HIGH + ADDR_NO_RANDOMIZE], OK),
      probe("personality-svr4", [1], OK),
      ...PERSONAS.map((p) => probe(`personality-allowed-${p.toString(16)}`, [p], OK)),
      probe("personality-high-query", [HIGH + 0xffffffff], OK),
    ),
    when: [{ arg: 0, op: "NOT_IN_32", values: PERSONAS }],
  },
  denyIoctl(TIOCSTI, "tiocsti", "TIOCSTI pushes input into a terminal", probe("ioctl-tcgets", [-1, TCGETS, 0], EBADF)),
  denyIoctl(TIOCLINUX, "tioclinux", "TIOCLINUX reads and pastes the console's selection"),
  // The network: the jail has only a Unix socket; every other family is kernel surface (netlink, packet, vsock, …).
  {
    ...deny("socket", "EAFNOSUPPORT", "every address family but AF_UNIX", ...sweep("socket", null, SOCKET_KERNEL)),
    when: [{ arg: 0, op: "NE", value: AF_UNIX }],
  },
  {
    ...deny(
      "socketpair",
      "EAFNOSUPPORT",
      "every address family but AF_UNIX",
      ...sweep("socketpair", "buf", SOCKETPAIR_KERNEL),
    ),
    when: [{ arg: 0, op: "NE", value: AF_UNIX }],
  },
];

/** Every address family Linux defines (0..45), as a stream and as a datagram socket. */
function sweep(
  syscall: string,
  last: ProbeArg | null,
  kernel: {
    readonly stream: Readonly<Record<number, readonly Answer[]>>;
    readonly dgram: Readonly<Record<number, readonly Answer[]>>;
  },
): Probe[] {
  return (["stream", "dgram"] as const).map((type) => ({
    id: `${syscall}-${type}`,
    args: [0, type === "stream" ? 1 : 2, 0, ...(last === null ? [] : [last])],
    kernel: ["EAFNOSUPPORT"],
    sweep: { arg: 0, from: 0, to: 45, except: kernel[type] },
  }));
}

/** Calls the policy must leave alone: runtimes need them (probes answer as without the filter). */
export const KEPT_ALLOWED: ReadonlyArray<{
  readonly syscall: string;
  readonly why: string;
  readonly probes: readonly Probe[];
}> = [
  { syscall: "membarrier", why: "V8 and glibc", probes: [probe("membarrier", [0 /* QUERY */, 0, 0], OK)] },
  { syscall: "rseq", why: "glibc registers it per thread", probes: [probe("rseq", [0, 0, 0, 0], EINVAL)] },
  { syscall: "pkey_alloc", why: "V8's code-space protection", probes: [probe("pkey_alloc", [0, 0], ["OK", "EINVAL"])] },
  { syscall: "close_range", why: "spawning", probes: [probe("close_range", [1000, 1000, 0], OK)] },
  { syscall: "memfd_create", why: "runtimes' anonymous files", probes: [probe("memfd_create", ["buf", 0], OK)] },
];

/** Foreign ABIs are not in the filter: libseccomp's bad-arch action (its default: kill the thread) meets them. */
export const FOREIGN_ABI_PROBES: readonly Probe[] = [
  // SIGSEGV: no int 0x80 entry on this machine (a PVM guest), so no filter ever sees the call.
  { id: "abi-i386-getpid", nr: "i386:20", args: [], kernel: ["OK", "SIGSEGV"] },
  { id: "abi-x32-getpid", nr: "x32:39", args: [], kernel: ["ENOSYS"] },
];
