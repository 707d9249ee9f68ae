package org.quicstep.core;

import java.io.FileDescriptor;
import java.io.IOException;
import java.net.SocketTimeoutException;

/**
 * The one-descriptor exchange that both fd protocols of docs/DESIGN.md use ("TUN fd" and
 * "protect", the latter shadowsocks-android's protect_path): the sender connects, writes one
 * data byte (0) carrying one descriptor by SCM_RIGHTS, and reads one byte back; 0 means the
 * receiver took (or protected) it, anything else that it refused. One connection per
 * descriptor.
 */
public final class FdProtocol {
    private FdProtocol() {}

    /** The data byte that carries the descriptor; its value means nothing. */
    public static final byte CARRIER = 0;
    /** The answers. */
    public static final byte OK = 0;
    public static final byte REFUSED = 1;

    /** Why an exchange failed; the message says which step. */
    public static final class RefusedException extends IOException {
        private static final long serialVersionUID = 1L;
        public final int answer;

        RefusedException(String message, int answer) {
            super(message);
            this.answer = answer;
        }
    }

    /**
     * Sends `fd` to the listener at `path` and waits up to timeoutMs for its answer.
     *
     * @throws IOException when the connection fails (the listener is not there yet), the
     *     peer closes without answering, or the wait passes; RefusedException when it
     *     answers other than 0.
     */
    public static void send(LocalStream.Connector connector, String path, FileDescriptor fd, int timeoutMs)
            throws IOException {
        try (LocalStream s = connector.connect(path)) {
            s.setReadTimeoutMillis(timeoutMs);
            byte[] answer = new byte[1];
            int n;
            try {
                s.write(new byte[] {CARRIER}, fd);
                n = s.read(answer);
            } catch (SocketTimeoutException e) {
                throw new IOException(path + ": no answer within " + timeoutMs + " ms", e);
            } catch (IOException e) {
                throw new IOException(path + " closed the connection without an answer (" + e.getMessage() + ")", e);
            }
            if (n != 1) throw new IOException(path + " closed the connection without an answer");
            if (answer[0] != OK) {
                throw new RefusedException(path + " refused the descriptor (answer " + (answer[0] & 0xff) + ")", answer[0] & 0xff);
            }
        }
    }

    /**
     * Receives one exchange on an accepted connection: reads the data byte, takes the one
     * descriptor it carried, lets `handler` decide, writes the answer. A message without
     * exactly one descriptor is refused (and any descriptors are released).
     *
     * @return true when the handler accepted the descriptor.
     */
    public static boolean receive(LocalStream s, int timeoutMs, Handler handler) throws IOException {
        s.setReadTimeoutMillis(timeoutMs);
        byte[] b = new byte[1];
        if (s.read(b) != 1) throw new IOException("the sender closed before its byte");
        FileDescriptor[] fds = s.takeReceivedFds();
        boolean ok = false;
        if (fds != null && fds.length == 1) {
            ok = handler.handle(fds[0]);
        } else if (fds != null) {
            for (FileDescriptor fd : fds) handler.release(fd);
        }
        s.write(new byte[] {ok ? OK : REFUSED});
        return ok;
    }

    /** What the receiving side does with a descriptor. */
    public interface Handler {
        /** Takes or protects `fd`; true on success. Owns fd from here on. */
        boolean handle(FileDescriptor fd);

        /** Closes a descriptor that came in a malformed message. */
        void release(FileDescriptor fd);
    }
}
