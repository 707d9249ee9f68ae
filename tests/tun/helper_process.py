"""qs-wg-helper driven as its engine drives it: the helper inherits a SOCK_SEQPACKET pair's
end as fd 3 (one IP packet per message) and a SOCK_STREAM pair's end as fd 4 (WireGuard's
UAPI); the test keeps the other ends. Started by posix_spawn (which places fds exactly),
ended by its PID only. Keys come from wireguard-tools' `wg`."""
import fcntl
import os
import signal
import socket
import subprocess
import time


def genkey():
    """(private, public) as hex, the UAPI's key form."""
    private = subprocess.run(["wg", "genkey"], capture_output=True, text=True, check=True).stdout
    public = subprocess.run(["wg", "pubkey"], input=private, capture_output=True, text=True,
                            check=True).stdout
    return b64_to_hex(private), b64_to_hex(public)


def b64_to_hex(b64):
    import base64
    return base64.b64decode(b64.strip()).hex()


def high_fd(fd):
    """A close-on-exec duplicate of fd numbered 100 or more, so that placing the child's fds
    at 3 and 4 cannot overwrite one with the other."""
    return fcntl.fcntl(fd, fcntl.F_DUPFD_CLOEXEC, 100)


class Helper:
    """One helper process. argv: the whole command (a launcher such as qemu-aarch64-static
    first, if any). `packets` and `uapi` are the engine's ends."""

    def __init__(self, argv, log_path, *, fd3=None, fd4=None):
        """fd3/fd4: sockets to pass instead of fresh pairs (to test bad fds); False: none."""
        self.log_path = log_path
        self.packets = self.uapi = None
        child = []
        if fd3 is None:
            self.packets, c3 = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
            child.append((c3, 3))
        elif fd3 is not False:
            child.append((fd3, 3))
        if fd4 is None:
            self.uapi, c4 = socket.socketpair(socket.AF_UNIX, socket.SOCK_STREAM)
            child.append((c4, 4))
        elif fd4 is not False:
            child.append((fd4, 4))
        moved = [(high_fd(s.fileno()), target) for s, target in child]
        with open(log_path, "ab") as log:
            actions = [(os.POSIX_SPAWN_OPEN, 0, "/dev/null", os.O_RDONLY, 0),
                       (os.POSIX_SPAWN_DUP2, log.fileno(), 1),
                       (os.POSIX_SPAWN_DUP2, log.fileno(), 2)]
            actions += [(os.POSIX_SPAWN_DUP2, fd, target) for fd, target in moved]
            try:
                self.pid = os.posix_spawn(argv[0], argv, os.environ, file_actions=actions)
            finally:
                for fd, _ in moved:
                    os.close(fd)
        for s, _ in child:
            s.close()
        self.returncode = None

    # -- the process

    def poll(self):
        if self.returncode is None:
            pid, status = os.waitpid(self.pid, os.WNOHANG)
            if pid:
                self.returncode = os.waitstatus_to_exitcode(status)
        return self.returncode

    def wait(self, seconds=10):
        """The exit code (negative: the signal), or None if it still runs after `seconds`."""
        deadline = time.monotonic() + seconds
        while self.poll() is None and time.monotonic() < deadline:
            time.sleep(0.02)
        return self.returncode

    def stop(self, sig=signal.SIGTERM, seconds=10):
        """Signals the helper (by its PID) and waits; SIGKILL if it does not exit."""
        if self.poll() is None:
            os.kill(self.pid, sig)
            if self.wait(seconds) is None:
                os.kill(self.pid, signal.SIGKILL)
                self.wait(seconds)
        for s in (self.packets, self.uapi):
            if s is not None:
                s.close()
        return self.returncode

    def log(self):
        with open(self.log_path, errors="replace") as f:
            return f.read()

    def proc_status(self, field):
        """A field of /proc/<pid>/status ("Seccomp"), None once it is gone."""
        try:
            with open(f"/proc/{self.pid}/status") as f:
                for line in f:
                    if line.startswith(field + ":"):
                        return line.split(":", 1)[1].strip()
        except OSError:
            return None
        return None

    # -- the UAPI on fd 4

    def uapi_request(self, text, seconds=10):
        """Sends one request and returns (errno, {key: [values]}) of its answer."""
        self.uapi.settimeout(seconds)
        self.uapi.sendall(text.encode())
        answer = b""
        while not answer.endswith(b"\n\n"):
            chunk = self.uapi.recv(65536)
            if not chunk:
                raise ConnectionError(f"the helper closed the UAPI socket after {answer!r}")
            answer += chunk
        values = {}
        for line in answer.decode().splitlines():
            if line:
                key, _, value = line.partition("=")
                values.setdefault(key, []).append(value)
        return int(values.pop("errno")[-1]), values

    def set(self, *lines):
        errno, _ = self.uapi_request("set=1\n" + "".join(l + "\n" for l in lines) + "\n")
        return errno

    def get(self):
        errno, values = self.uapi_request("get=1\n\n")
        if errno != 0:
            raise AssertionError(f"get=1 answered errno={errno}")
        return values

    # -- packets on fd 3

    def send_packet(self, pkt):
        self.packets.send(pkt)

    def recv_packet(self, seconds=10):
        """One packet from the helper, or None after `seconds`."""
        self.packets.settimeout(seconds)
        try:
            return self.packets.recv(65536)
        except socket.timeout:
            return None
