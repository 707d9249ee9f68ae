"""Runs a program under a seccomp filter like the one Android's app zygote installs, as far
as a static glibc program meets it: set_robust_list, rseq and clone3 raise SIGSYS
(SECCOMP_RET_TRAP), everything else is allowed. x86_64 only (the syscall numbers and the
audit arch below); qemu-user does not emulate a guest's seccomp.

    python3 -m tests.tun.android_seccomp PROGRAM [ARGS...]

sets PR_SET_NO_NEW_PRIVS, installs the filter and execs PROGRAM, which inherits every fd
that is not close-on-exec."""
import ctypes
import os
import platform
import struct
import sys

PR_SET_NO_NEW_PRIVS = 38
PR_SET_SECCOMP = 22
SECCOMP_MODE_FILTER = 2
AUDIT_ARCH_X86_64 = 0xC000003E
SECCOMP_RET_KILL_PROCESS = 0x80000000
SECCOMP_RET_TRAP = 0x00030000
SECCOMP_RET_ALLOW = 0x7FFF0000
# x86_64 syscall numbers
TRAPPED = {"set_robust_list": 273, "rseq": 334, "clone3": 435}

BPF_LD_W_ABS = 0x20
BPF_JEQ_K = 0x15
BPF_RET_K = 0x06


def insn(code, jt, jf, k):
    return struct.pack("HBBI", code, jt, jf, k)


def program():
    """seccomp_data: nr at offset 0, arch at 4."""
    out = [insn(BPF_LD_W_ABS, 0, 0, 4),
           insn(BPF_JEQ_K, 1, 0, AUDIT_ARCH_X86_64),
           insn(BPF_RET_K, 0, 0, SECCOMP_RET_KILL_PROCESS),
           insn(BPF_LD_W_ABS, 0, 0, 0)]
    numbers = list(TRAPPED.values())
    for i, nr in enumerate(numbers):
        out.append(insn(BPF_JEQ_K, len(numbers) - i, 0, nr))  # to the TRAP after ALLOW
    out.append(insn(BPF_RET_K, 0, 0, SECCOMP_RET_ALLOW))
    out.append(insn(BPF_RET_K, 0, 0, SECCOMP_RET_TRAP))
    return b"".join(out), len(out)


def install():
    if platform.machine() != "x86_64":
        raise OSError(f"the filter is written for x86_64, not {platform.machine()}")
    libc = ctypes.CDLL(None, use_errno=True)
    libc.prctl.argtypes = [ctypes.c_int, ctypes.c_ulong, ctypes.c_void_p, ctypes.c_ulong,
                           ctypes.c_ulong]
    code, count = program()
    filters = ctypes.create_string_buffer(code, len(code))

    class SockFprog(ctypes.Structure):
        _fields_ = [("len", ctypes.c_ushort), ("filter", ctypes.c_void_p)]

    prog = SockFprog(count, ctypes.cast(filters, ctypes.c_void_p))
    if libc.prctl(PR_SET_NO_NEW_PRIVS, 1, None, 0, 0) != 0:
        raise OSError(ctypes.get_errno(), "prctl(PR_SET_NO_NEW_PRIVS)")
    if libc.prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, ctypes.addressof(prog), 0, 0) != 0:
        raise OSError(ctypes.get_errno(), "prctl(PR_SET_SECCOMP)")


def main(argv):
    if not argv:
        sys.stderr.write(__doc__)
        return 2
    install()
    os.execv(argv[0], argv)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
