"""A fake of the Java service's protect socket (shadowsocks-android's protect_path
protocol): per connection, one byte with a socket fd (SCM_RIGHTS) in; one byte out, 0 =
protected. It records what each received socket was at the moment it arrived, and keeps a
duplicate so that a test can ask later which port the socket was bound to. With `mark`, it
protects as Android's netd does: the socket gets that SO_MARK, which a policy rule sends to
the main table (root)."""
import os
import socket
import threading
import time


class ProtectServer:
    def __init__(self, path, answer=0, mark=None):
        self.path, self.answer, self.mark = path, answer, mark
        self.received = []  # dicts: type, family, port_on_arrival, at, sock (kept open)
        self.errors = []
        self.lock = threading.Lock()
        self.listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        try:
            self.listener.bind(path)
            self.listener.listen(16)
        except OSError:
            self.listener.close()
            raise
        self.thread = threading.Thread(target=self._serve, daemon=True)
        self.thread.start()

    def _serve(self):
        while True:
            try:
                conn, _ = self.listener.accept()
            except OSError:
                return
            with conn:
                conn.settimeout(5)
                try:
                    data, fds, _, _ = socket.recv_fds(conn, 1, 4)
                except OSError as e:
                    self.errors.append(f"recv: {e}")
                    continue
                if len(data) != 1 or len(fds) != 1:
                    self.errors.append(f"got {data!r} with {len(fds)} fds, want 1 byte, 1 fd")
                    for fd in fds:
                        os.close(fd)
                    conn.sendall(b"\x01")
                    continue
                s = socket.socket(fileno=fds[0])
                if self.mark is not None:
                    s.setsockopt(socket.SOL_SOCKET, socket.SO_MARK, self.mark)
                with self.lock:
                    self.received.append({
                        "type": s.getsockopt(socket.SOL_SOCKET, socket.SO_TYPE),
                        "family": s.family,
                        "port_on_arrival": s.getsockname()[1],
                        "at": time.monotonic(),
                        "sock": s})
                conn.sendall(bytes([self.answer]))

    def sockets(self):
        with self.lock:
            return list(self.received)

    def bound_ports(self):
        """The ports the received sockets are bound to now."""
        ports = set()
        for r in self.sockets():
            try:
                ports.add(r["sock"].getsockname()[1])
            except OSError:
                pass
        return ports

    def close(self):
        # shutdown() wakes the accept() in the thread (close() alone would not).
        try:
            self.listener.shutdown(socket.SHUT_RDWR)
        except OSError:
            pass
        self.thread.join(10)
        self.listener.close()
        for r in self.sockets():
            r["sock"].close()
