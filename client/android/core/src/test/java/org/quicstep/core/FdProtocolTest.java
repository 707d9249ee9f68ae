package org.quicstep.core;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.FileDescriptor;
import java.io.IOException;
import java.net.StandardProtocolFamily;
import java.net.UnixDomainSocketAddress;
import java.nio.ByteBuffer;
import java.nio.channels.SocketChannel;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * The fd protocols over real AF_UNIX sockets (the JDK's; descriptors ride beside them, see
 * JdkLocalStreams): the TUN handoff as the supervisor sends it, and the protect server as
 * the engine and the helper use it.
 */
class FdProtocolTest {
    @TempDir
    Path dir;
    final JdkLocalStreams streams = new JdkLocalStreams();

    /** A fake engine's --tun-socket: answers `answer` to one exchange, keeps the descriptor. */
    Thread engineTakingOne(LocalStream.Listener l, byte answer, List<FileDescriptor> taken) {
        Thread t = new Thread(() -> {
            try (LocalStream s = l.accept()) {
                byte[] b = new byte[1];
                assertEquals(1, s.read(b));
                FileDescriptor[] fds = s.takeReceivedFds();
                if (fds != null) Collections.addAll(taken, fds);
                s.write(new byte[] {answer});
            } catch (IOException e) {
                throw new AssertionError(e);
            }
        });
        t.start();
        return t;
    }

    @Test
    void theTunFdReachesTheEngine() throws Exception {
        String path = dir.resolve("tun.sock").toString();
        List<FileDescriptor> taken = Collections.synchronizedList(new ArrayList<>());
        FileDescriptor tun = new FileDescriptor();
        try (LocalStream.Listener l = streams.listen(path)) {
            Thread engine = engineTakingOne(l, FdProtocol.OK, taken);
            FdProtocol.send(streams, path, tun, 2000);
            engine.join(5000);
        }
        assertEquals(1, taken.size());
        assertSame(tun, taken.get(0));
    }

    @Test
    void aRefusalCarriesTheAnswer() throws Exception {
        String path = dir.resolve("tun.sock").toString();
        try (LocalStream.Listener l = streams.listen(path)) {
            Thread engine = engineTakingOne(l, (byte) 7, new ArrayList<>());
            FdProtocol.RefusedException e = assertThrows(FdProtocol.RefusedException.class,
                    () -> FdProtocol.send(streams, path, new FileDescriptor(), 2000));
            assertEquals(7, e.answer);
            assertTrue(e.getMessage().endsWith("refused the descriptor (answer 7)"), e.getMessage());
            engine.join(5000);
        }
    }

    @Test
    void noListenerAndNoAnswerAreErrors() throws Exception {
        String path = dir.resolve("none.sock").toString();
        assertThrows(IOException.class, () -> FdProtocol.send(streams, path, new FileDescriptor(), 500));
        // A listener that accepts and closes without answering.
        String mute = dir.resolve("mute.sock").toString();
        try (LocalStream.Listener l = streams.listen(mute)) {
            Thread t = new Thread(() -> {
                try {
                    l.accept().close();
                } catch (IOException e) {
                    throw new AssertionError(e);
                }
            });
            t.start();
            IOException e = assertThrows(IOException.class, () -> FdProtocol.send(streams, mute, new FileDescriptor(), 2000));
            assertTrue(e.getMessage().startsWith(mute + " closed the connection without an answer"), e.getMessage());
            t.join(5000);
        }
    }

    /** A protector that records, protecting all but the descriptors it is told to refuse. */
    static final class Recorder implements ProtectServer.Protector {
        final List<FileDescriptor> protectedFds = Collections.synchronizedList(new ArrayList<>());
        final List<FileDescriptor> released = Collections.synchronizedList(new ArrayList<>());
        final List<FileDescriptor> refuse = Collections.synchronizedList(new ArrayList<>());

        @Override
        public boolean protect(FileDescriptor fd) {
            if (refuse.contains(fd)) return false;
            protectedFds.add(fd);
            return true;
        }

        @Override
        public void release(FileDescriptor fd) {
            released.add(fd);
        }
    }

    @Test
    void theProtectServerProtectsReleasesAndRefuses() throws Exception {
        String path = dir.resolve("protect.sock").toString();
        Recorder r = new Recorder();
        List<String> errors = Collections.synchronizedList(new ArrayList<>());
        ProtectServer server = new ProtectServer(streams.listen(path), r, errors::add);
        Thread t = new Thread(server);
        t.start();
        FileDescriptor v4 = new FileDescriptor(), v6 = new FileDescriptor(), bad = new FileDescriptor();
        FdProtocol.send(streams, path, v4, 2000);
        FdProtocol.send(streams, path, v6, 2000);
        r.refuse.add(bad);
        FdProtocol.RefusedException e = assertThrows(FdProtocol.RefusedException.class,
                () -> FdProtocol.send(streams, path, bad, 2000));
        assertEquals(FdProtocol.REFUSED, e.answer);
        assertEquals(List.of(v4, v6), r.protectedFds);
        assertEquals(List.of(v4, v6, bad), r.released, "the service's copies are closed, protected or not");
        server.close();
        t.join(5000);
        assertFalse(t.isAlive(), "close() did not end the server");
        assertEquals(2, server.protectedCount());
        assertEquals(1, server.refusedCount());
    }

    @Test
    void aRequestWithoutADescriptorIsRefusedAndASilentOneTimesOut() throws Exception {
        String path = dir.resolve("protect.sock").toString();
        Recorder r = new Recorder();
        List<String> errors = Collections.synchronizedList(new ArrayList<>());
        ProtectServer server = new ProtectServer(streams.listen(path), r, errors::add);
        Thread t = new Thread(server);
        t.start();
        // A client that connects and says nothing: the server gives up on it and goes on.
        CountDownLatch silentDone = new CountDownLatch(1);
        Thread silent = new Thread(() -> {
            try (SocketChannel ch = SocketChannel.open(StandardProtocolFamily.UNIX)) {
                ch.connect(UnixDomainSocketAddress.of(path));
                ByteBuffer b = ByteBuffer.allocate(1);
                ch.read(b); // until the server closes
            } catch (IOException e) {
                // closed by the server
            }
            silentDone.countDown();
        });
        silent.start();
        assertTrue(silentDone.await(ProtectServer.READ_TIMEOUT_MS + 3000, TimeUnit.MILLISECONDS));
        // A byte with no descriptor.
        try (LocalStream s = streams.connect(path)) {
            s.write(new byte[] {0});
            byte[] b = new byte[1];
            s.setReadTimeoutMillis(2000);
            assertEquals(1, s.read(b));
            assertEquals(FdProtocol.REFUSED, b[0]);
        }
        FdProtocol.send(streams, path, new FileDescriptor(), 2000); // still serving
        assertEquals(1, r.protectedFds.size());
        assertTrue(errors.stream().anyMatch(m -> m.contains("timed out")), errors.toString());
        server.close();
        t.join(5000);
    }
}
