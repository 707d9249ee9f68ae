package org.quicstep.core;

import java.io.FileDescriptor;
import java.io.IOException;
import java.net.SocketTimeoutException;
import java.net.StandardProtocolFamily;
import java.net.UnixDomainSocketAddress;
import java.nio.ByteBuffer;
import java.nio.channels.SelectionKey;
import java.nio.channels.Selector;
import java.nio.channels.ServerSocketChannel;
import java.nio.channels.SocketChannel;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.Deque;
import java.util.HashMap;
import java.util.List;
import java.util.Map;

/**
 * LocalStream over the JDK's real AF_UNIX stream sockets (JDK 16+), for tests. The JDK
 * cannot pass descriptors, so this double carries them beside the socket: each connection
 * gets a slot when it connects, the listener hands slots out in accept order (the kernel
 * accepts in connect order), a write's descriptors go into its slot and the other end takes
 * them once it has read a byte. The bytes, the framing and the connection handling are real.
 */
final class JdkLocalStreams implements LocalStream.Connector, LocalStream.ListenerFactory {
    /** The descriptors one connection's writes carried, each way. */
    private static final class Slot {
        final Deque<FileDescriptor> toServer = new ArrayDeque<>();
        final Deque<FileDescriptor> toClient = new ArrayDeque<>();
    }

    private final Map<String, Deque<Slot>> pending = new HashMap<>();
    /** Every descriptor that was written, in order, for assertions. */
    final List<FileDescriptor> sent = new ArrayList<>();

    @Override
    public LocalStream connect(String path) throws IOException {
        Slot slot = new Slot();
        synchronized (this) {
            SocketChannel ch = SocketChannel.open(StandardProtocolFamily.UNIX);
            try {
                ch.connect(UnixDomainSocketAddress.of(path));
            } catch (IOException e) {
                ch.close();
                throw e;
            }
            pending.computeIfAbsent(path, k -> new ArrayDeque<>()).add(slot);
            return new Stream(ch, slot, true);
        }
    }

    @Override
    public LocalStream.Listener listen(String path) throws IOException {
        Files.deleteIfExists(Path.of(path));
        ServerSocketChannel server = ServerSocketChannel.open(StandardProtocolFamily.UNIX);
        server.bind(UnixDomainSocketAddress.of(path));
        return new LocalStream.Listener() {
            @Override
            public LocalStream accept() throws IOException {
                SocketChannel ch = server.accept();
                Slot slot;
                synchronized (JdkLocalStreams.this) {
                    Deque<Slot> q = pending.get(path);
                    slot = q == null || q.isEmpty() ? new Slot() : q.poll();
                }
                return new Stream(ch, slot, false);
            }

            @Override
            public void close() throws IOException {
                server.close();
                Files.deleteIfExists(Path.of(path));
            }
        };
    }

    private final class Stream implements LocalStream {
        final SocketChannel ch;
        final Slot slot;
        final boolean client;
        int timeoutMs;
        boolean readSome;

        Stream(SocketChannel ch, Slot slot, boolean client) {
            this.ch = ch;
            this.slot = slot;
            this.client = client;
        }

        @Override
        public void write(byte[] data, FileDescriptor... fds) throws IOException {
            synchronized (JdkLocalStreams.this) {
                for (FileDescriptor fd : fds) {
                    (client ? slot.toServer : slot.toClient).add(fd);
                    sent.add(fd);
                }
            }
            ByteBuffer b = ByteBuffer.wrap(data);
            while (b.hasRemaining()) ch.write(b);
        }

        @Override
        public int read(byte[] buf) throws IOException {
            if (timeoutMs > 0) {
                ch.configureBlocking(false);
                try (Selector sel = Selector.open()) {
                    ch.register(sel, SelectionKey.OP_READ);
                    if (sel.select(timeoutMs) == 0) throw new SocketTimeoutException("read timed out");
                }
                ch.configureBlocking(true);
            }
            int n = ch.read(ByteBuffer.wrap(buf));
            if (n > 0) readSome = true;
            return n;
        }

        @Override
        public FileDescriptor[] takeReceivedFds() {
            synchronized (JdkLocalStreams.this) {
                if (!readSome) return null;
                Deque<FileDescriptor> q = client ? slot.toClient : slot.toServer;
                if (q.isEmpty()) return null;
                FileDescriptor[] out = q.toArray(new FileDescriptor[0]);
                q.clear();
                return out;
            }
        }

        @Override
        public void setReadTimeoutMillis(int ms) {
            timeoutMs = ms;
        }

        @Override
        public void close() throws IOException {
            ch.close();
        }
    }
}
