package org.quicstep.core;

import java.io.Closeable;
import java.io.FileDescriptor;
import java.io.IOException;

/**
 * A connected AF_UNIX stream socket whose writes can carry file descriptors (SCM_RIGHTS).
 * On Android it is a LocalSocket; the JDK has unix sockets but cannot pass descriptors, so
 * its tests use a double whose descriptors travel beside the socket. The protocols
 * (TunHandoff, ProtectServer, StatusClient) are written against this interface only.
 */
public interface LocalStream extends Closeable {
    /** Writes `data`; `fds` (possibly none) go with its first byte. */
    void write(byte[] data, FileDescriptor... fds) throws IOException;

    /** Reads up to buf.length bytes; -1 at the end of the stream. */
    int read(byte[] buf) throws IOException;

    /** The descriptors that came with the bytes read so far and not taken yet. */
    FileDescriptor[] takeReceivedFds() throws IOException;

    /** A bound on each later read (SocketTimeoutException, an IOException, when it passes). */
    void setReadTimeoutMillis(int ms) throws IOException;

    /** Opens connections to a path. */
    interface Connector {
        LocalStream connect(String path) throws IOException;
    }

    /** A listening socket at a path. close() makes a blocked accept() throw. */
    interface Listener extends Closeable {
        LocalStream accept() throws IOException;
    }

    /** Makes a Listener at a path, replacing a stale socket file. */
    interface ListenerFactory {
        Listener listen(String path) throws IOException;
    }
}
