// SPDX-License-Identifier: GPL-2.0
/* tcx_attach: attaches a tc program to a device with a tcx link (kernel 6.6 or later), for
 * bench_hook_cost.py.
 *
 *   tcx_attach NETNS_PATH DEVICE ingress|egress OBJECT PIN_PATH
 *
 * Loads OBJECT's first program as SCHED_CLS, attaches it to DEVICE in the network namespace
 * NETNS_PATH (/run/netns/NAME) with BPF_LINK_CREATE, pins the link at PIN_PATH (on a bpffs)
 * and prints the program's id (bpftool finds its maps by it). Removing the pin detaches the
 * program. Exit status 3: the kernel has no tcx (the benchmark then skips the tcx modes).
 *
 * libbpf before 1.3 has no bpf_program__attach_tcx and uapi headers before 6.6 have no
 * BPF_TCX_INGRESS / BPF_TCX_EGRESS, so the attach types are spelled out here; the raw
 * bpf_link_create call passes them through.
 */
#define _GNU_SOURCE
#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include <errno.h>
#include <fcntl.h>
#include <net/if.h>
#include <sched.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

/* enum bpf_attach_type in linux/bpf.h since 6.6 */
enum { TCX_ATTACH_INGRESS = 46, TCX_ATTACH_EGRESS = 47 };

int main(int argc, char **argv) {
  if (argc != 6 || (strcmp(argv[3], "ingress") != 0 && strcmp(argv[3], "egress") != 0)) {
    fprintf(stderr, "usage: tcx_attach NETNS_PATH DEVICE ingress|egress OBJECT PIN_PATH\n");
    return 2;
  }
  const char *netns = argv[1], *device = argv[2], *object = argv[4], *pin = argv[5];
  int attach_type = strcmp(argv[3], "ingress") == 0 ? TCX_ATTACH_INGRESS : TCX_ATTACH_EGRESS;

  struct bpf_object *obj = bpf_object__open_file(object, NULL);
  if (!obj) {
    fprintf(stderr, "tcx_attach: open %s: %s\n", object, strerror(errno));
    return 1;
  }
  struct bpf_program *prog = bpf_object__next_program(obj, NULL);
  if (!prog) {
    fprintf(stderr, "tcx_attach: %s has no program\n", object);
    return 1;
  }
  bpf_program__set_type(prog, BPF_PROG_TYPE_SCHED_CLS);
  int err = bpf_object__load(obj);
  if (err) {
    fprintf(stderr, "tcx_attach: load %s: %s\n", object, strerror(-err));
    return 1;
  }

  /* The program is loaded in this namespace (programs belong to none); the device is
   * looked up and the link created in the benchmark's. */
  int ns_fd = open(netns, O_RDONLY | O_CLOEXEC);
  if (ns_fd < 0 || setns(ns_fd, CLONE_NEWNET) != 0) {
    fprintf(stderr, "tcx_attach: enter %s: %s\n", netns, strerror(errno));
    return 1;
  }
  unsigned ifindex = if_nametoindex(device);
  if (ifindex == 0) {
    fprintf(stderr, "tcx_attach: no device %s in %s\n", device, netns);
    return 1;
  }
  int link_fd = bpf_link_create(bpf_program__fd(prog), (int)ifindex, attach_type, NULL);
  if (link_fd < 0) {
    fprintf(stderr, "tcx_attach: tcx link on %s: %s\n", device, strerror(-link_fd));
    /* an attach type the kernel does not know */
    return link_fd == -EINVAL || link_fd == -EOPNOTSUPP ? 3 : 1;
  }
  if (bpf_obj_pin(link_fd, pin) != 0) {
    fprintf(stderr, "tcx_attach: pin %s: %s\n", pin, strerror(errno));
    return 1;
  }
  struct bpf_prog_info info;
  memset(&info, 0, sizeof info);
  __u32 len = sizeof info;
  if (bpf_obj_get_info_by_fd(bpf_program__fd(prog), &info, &len) != 0) {
    fprintf(stderr, "tcx_attach: program info: %s\n", strerror(errno));
    unlink(pin);
    return 1;
  }
  printf("%u\n", info.id);
  return 0;
}
