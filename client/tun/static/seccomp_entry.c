/* seccomp_entry.c: lets a static glibc program start under Android's app seccomp filter.
 *
 * Android's filter for app processes makes some calls that glibc makes while it starts
 * (set_robust_list, rseq; clone3 from posix_spawn on x86_64) raise SIGSYS, which kills a
 * program that has no handler yet (../../../../shared/notes, and tests/tun/android_seccomp.py
 * emulates the filter). This is the executable's ELF entry point (-Wl,-e,qs_entry): before
 * glibc's _start runs, it installs a SIGSYS handler with raw system calls (no libc, no TLS,
 * no relocations yet in a static-pie: only PC-relative addresses), which makes a trapped call
 * return -ENOSYS. glibc treats ENOSYS from each of them as "not available" and goes on
 * (no robust list, no rseq, clone instead of clone3). Then it jumps to _start with the
 * registers and stack exactly as the kernel gave them.
 *
 * This works because the engine starts no thread: a new thread calls set_robust_list with
 * every signal blocked, and a blocked SIGSYS from seccomp kills the process. The engine is
 * single-threaded by design (client/tun/io/engine_loop.hpp).
 *
 * Compiled with -fno-stack-protector (the canary lives in TLS, which does not exist yet) and
 * without sanitizers. */
#define _GNU_SOURCE 1 /* REG_RAX */
#include <errno.h>
#include <signal.h>
#include <stddef.h>
#include <ucontext.h>

#include <asm/unistd.h>

#define QS_SA_SIGINFO 0x00000004UL
#define QS_SA_RESTORER 0x04000000UL
#define QS_SA_ONSTACK 0x08000000UL

/* The kernel's struct sigaction for rt_sigaction (not glibc's). */
struct qs_kernel_sigaction {
  void (*handler)(int, siginfo_t*, void*);
  unsigned long flags;
  void (*restorer)(void);
  unsigned long mask;
};

/* Makes the trapped call return -ENOSYS: the result register of the interrupted syscall. */
__attribute__((visibility("hidden"))) void qs_on_sigsys(int sig, siginfo_t* info, void* context) {
  (void)sig;
  (void)info;
  ucontext_t* uc = (ucontext_t*)context;
#if defined(__x86_64__)
  uc->uc_mcontext.gregs[REG_RAX] = -ENOSYS;
#elif defined(__aarch64__)
  uc->uc_mcontext.regs[0] = (unsigned long long)-ENOSYS;
#else
#error "seccomp_entry.c: x86_64 and aarch64 only"
#endif
}

#if defined(__x86_64__)
/* x86_64 needs its own sigreturn trampoline (SA_RESTORER); glibc's is not usable yet. */
__attribute__((visibility("hidden"), naked)) void qs_sigreturn(void) {
  __asm__ volatile("mov $15, %eax\n\t" /* __NR_rt_sigreturn */
                   "syscall\n\t");
}

static long qs_raw_rt_sigaction(long sig, const struct qs_kernel_sigaction* act) {
  long ret;
  register long r10 __asm__("r10") = 8; /* sizeof(sigset_t) as the kernel knows it */
  __asm__ volatile("syscall"
                   : "=a"(ret)
                   : "0"((long)__NR_rt_sigaction), "D"(sig), "S"(act), "d"(0L), "r"(r10)
                   : "rcx", "r11", "memory");
  return ret;
}
#else
static long qs_raw_rt_sigaction(long sig, const struct qs_kernel_sigaction* act) {
  register long x8 __asm__("x8") = __NR_rt_sigaction;
  register long x0 __asm__("x0") = sig;
  register long x1 __asm__("x1") = (long)act;
  register long x2 __asm__("x2") = 0;
  register long x3 __asm__("x3") = 8;
  __asm__ volatile("svc #0" : "+r"(x0) : "r"(x8), "r"(x1), "r"(x2), "r"(x3) : "memory");
  return x0;
}
#endif

/* Called from qs_entry on an aligned stack. A failure is ignored: without the handler the
 * program starts as it would have anyway. */
__attribute__((visibility("hidden"))) void qs_install_sigsys(void) {
  struct qs_kernel_sigaction act = {0};
  act.handler = qs_on_sigsys;
  act.flags = QS_SA_SIGINFO;
#if defined(__x86_64__)
  act.flags |= QS_SA_RESTORER;
  act.restorer = qs_sigreturn;
#endif
  (void)qs_raw_rt_sigaction(SIGSYS, &act);
}

#if defined(__x86_64__)
/* glibc 2.36 on x86_64 tries clone3 first in posix_spawn, with every signal blocked: a
 * trapped clone3 would then kill the process. This build has no clone3, as Debian's aarch64
 * glibc has none: __clone_internal falls back to clone. */
__attribute__((visibility("hidden"))) int __clone3(void* cl_args, size_t size, int (*fn)(void*),
                                                   void* arg) {
  (void)cl_args;
  (void)size;
  (void)fn;
  (void)arg;
  errno = ENOSYS;
  return -1;
}

__asm__(".globl qs_entry\n"
        ".type qs_entry,@function\n"
        "qs_entry:\n\t"
        "mov %rdx, %r15\n\t" /* rtld_fini (0 in a static program), kept for _start */
        "mov %rsp, %r14\n\t"
        "and $-16, %rsp\n\t"
        "call qs_install_sigsys\n\t"
        "mov %r14, %rsp\n\t"
        "mov %r15, %rdx\n\t"
        "xor %r14d, %r14d\n\t"
        "xor %r15d, %r15d\n\t"
        "jmp _start\n");
#else
__asm__(".globl qs_entry\n"
        ".type qs_entry,%function\n"
        "qs_entry:\n\t"
        "mov x19, x0\n\t" /* rtld_fini, kept for _start */
        "mov x20, sp\n\t"
        "bl qs_install_sigsys\n\t"
        "mov sp, x20\n\t"
        "mov x0, x19\n\t"
        "mov x19, xzr\n\t"
        "mov x20, xzr\n\t"
        "b _start\n");
#endif
