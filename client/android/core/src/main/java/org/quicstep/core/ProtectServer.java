package org.quicstep.core;

import java.io.FileDescriptor;
import java.io.IOException;

/**
 * The service's side of the protect socket (--protect-socket): for each connection, one
 * FdProtocol exchange whose descriptor is a UDP socket of the engine or the helper, protected
 * with VpnService.protect(fd) and released. Runs on a thread of its own until close().
 */
public final class ProtectServer implements Runnable, AutoCloseable {
    /** Protects and releases sockets; VpnService on Android. */
    public interface Protector {
        /** Keeps the socket out of the VPN; true on success. */
        boolean protect(FileDescriptor socket);

        /** Closes the service's copy of the descriptor (the sender keeps its own). */
        void release(FileDescriptor socket);
    }

    /** Reports what the server does, for the service's log. */
    public interface Log {
        void error(String message);
    }

    /** A sender has this long to send its byte: a stuck one must not stop the others. */
    static final int READ_TIMEOUT_MS = 2000;

    private final LocalStream.Listener listener;
    private final Protector protector;
    private final Log log;
    private volatile boolean closed;
    private long protectedCount, refusedCount;

    public ProtectServer(LocalStream.Listener listener, Protector protector, Log log) {
        this.listener = listener;
        this.protector = protector;
        this.log = log;
    }

    @Override
    public void run() {
        while (!closed) {
            LocalStream s;
            try {
                s = listener.accept();
            } catch (IOException e) {
                if (!closed) log.error("protect socket: accept: " + e.getMessage());
                return;
            }
            serve(s);
        }
    }

    private void serve(LocalStream s) {
        try (LocalStream conn = s) {
            boolean ok = FdProtocol.receive(conn, READ_TIMEOUT_MS, new FdProtocol.Handler() {
                @Override
                public boolean handle(FileDescriptor fd) {
                    try {
                        return protector.protect(fd);
                    } finally {
                        protector.release(fd);
                    }
                }

                @Override
                public void release(FileDescriptor fd) {
                    protector.release(fd);
                }
            });
            synchronized (this) {
                if (ok) protectedCount++; else refusedCount++;
            }
            if (!ok) log.error("protect socket: a request was refused");
        } catch (IOException e) {
            log.error("protect socket: " + e.getMessage());
        }
    }

    /** Sockets protected so far. */
    public synchronized long protectedCount() {
        return protectedCount;
    }

    /** Requests answered with a refusal so far. */
    public synchronized long refusedCount() {
        return refusedCount;
    }

    @Override
    public void close() throws IOException {
        closed = true;
        listener.close();
    }
}
