#!/usr/bin/python3
"""Compiles the jail's seccomp policy (broker/jail/seccomp-policy.ts, as JSON on
stdin) into the raw BPF program bwrap loads with --seccomp, using libseccomp.

  seccomp-compile.py --out FILE [--mark-errno N]
  seccomp-compile.py --resolve          # prints {"name": nr} for the native arch

--mark-errno N (a test aid only): every rule answers errno N instead of its own,
except the ENOSYS ones, so a probe can tell "this rule matched" from anything the
kernel itself answers.

Run with the system's /usr/bin/python3 (Debian's python3-seccomp); a pyenv or
venv python does not see that module.
"""
import argparse
import errno
import itertools
import json
import platform
import sys

try:
    import seccomp
except ImportError:
    sys.stderr.write("python3-seccomp is missing: apt-get install -y python3-seccomp\n")
    sys.exit(3)

MASK32 = 0xFFFFFFFF


def syscall_nr(rule):
    """libseccomp's number for the name; the policy's own for calls newer than libseccomp."""
    nr = seccomp.resolve_syscall(0, rule["syscall"])
    if nr >= 0:
        return nr
    own = rule.get("nr", {}).get(platform.machine())
    if own is None:
        raise SystemExit("unknown syscall %r for %s and no nr in the policy" % (rule["syscall"], platform.machine()))
    return own


def blocks(lo, hi):
    """[lo, hi] as aligned power-of-two blocks: (mask, value) pairs for MASKED_EQ."""
    out = []
    while lo <= hi:
        size = lo & -lo if lo else 1 << 32
        while size > hi - lo + 1:
            size >>= 1
        out.append(((MASK32 & ~(size - 1)), lo))
        lo += size
    return out


def alternatives(cond):
    """One condition as a list of libseccomp Args, any one of which matching means the condition holds."""
    arg, op = cond["arg"], cond["op"]
    if op == "EQ":
        return [seccomp.Arg(arg, seccomp.EQ, cond["value"])]
    if op == "NE":
        return [seccomp.Arg(arg, seccomp.NE, cond["value"])]
    if op == "MASKED_EQ":
        return [seccomp.Arg(arg, seccomp.MASKED_EQ, cond["mask"], cond["value"])]
    if op == "ANY_BIT":
        bits = [1 << b for b in range(64) if cond["mask"] >> b & 1]
        return [seccomp.Arg(arg, seccomp.MASKED_EQ, bit, bit) for bit in bits]
    if op == "NOT_IN_32":
        # libseccomp allows one comparison per argument in a rule, so "none of these values"
        # becomes the gaps between them, each a few aligned blocks of the low 32 bits.
        out, lo = [], 0
        for v in sorted(set(cond["values"])) + [MASK32 + 1]:
            if v > lo:
                out += [seccomp.Arg(arg, seccomp.MASKED_EQ, m, val) for m, val in blocks(lo, v - 1)]
            lo = v + 1
        return out
    raise SystemExit("unknown op %r" % op)


def build(policy, mark):
    # Default ALLOW (a denylist). Only the native arch is added: a foreign ABI (i386 int 0x80,
    # x32) meets libseccomp's bad-arch action, which kills.
    f = seccomp.SyscallFilter(seccomp.ALLOW)
    for rule in policy["rules"]:
        code = getattr(errno, rule["errno"])
        if mark is not None and code != errno.ENOSYS:
            code = mark
        nr = syscall_nr(rule)
        conds = [alternatives(c) for c in rule.get("when", [])]
        for args in itertools.product(*conds):
            f.add_rule_exactly(seccomp.ERRNO(code), nr, *args)
    return f


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--out")
    p.add_argument("--mark-errno", type=int)
    p.add_argument("--resolve", action="store_true")
    opts = p.parse_args()
    policy = json.load(sys.stdin)
    if opts.resolve:
        json.dump({r["syscall"]: syscall_nr(r) for r in policy["rules"] + policy.get("resolveOnly", [])}, sys.stdout)
        return
    if not opts.out:
        raise SystemExit("--out FILE is required")
    if opts.mark_errno is not None and not 0 < opts.mark_errno < 4096:
        raise SystemExit("--mark-errno must be 1..4095")
    f = build(policy, opts.mark_errno)
    with open(opts.out, "wb") as out:
        f.export_bpf(out)


main()
