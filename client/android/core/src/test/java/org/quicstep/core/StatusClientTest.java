package org.quicstep.core;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** The control socket's protocol against a fake engine over a real AF_UNIX socket. */
class StatusClientTest {
    @TempDir
    Path dir;
    final JdkLocalStreams streams = new JdkLocalStreams();

    /** Answers `reply` to one request line and closes, recording the request. */
    Thread fakeEngine(LocalStream.Listener l, String reply, List<String> requests) {
        Thread t = new Thread(() -> {
            try (LocalStream s = l.accept()) {
                StringBuilder line = new StringBuilder();
                byte[] b = new byte[1];
                while (s.read(b) == 1 && b[0] != '\n') line.append((char) b[0]);
                requests.add(line.toString());
                s.write(reply.getBytes(StandardCharsets.UTF_8));
            } catch (IOException e) {
                throw new AssertionError(e);
            }
        });
        t.start();
        return t;
    }

    @Test
    void statusIsOneLineOneReply() throws Exception {
        String path = dir.resolve("control.sock").toString();
        List<String> requests = Collections.synchronizedList(new ArrayList<>());
        try (LocalStream.Listener l = streams.listen(path)) {
            Thread engine = fakeEngine(l, EngineStatusTest.REPLY, requests);
            EngineStatus s = new StatusClient(streams, path, 2000).status();
            engine.join(5000);
            assertEquals(List.of("status"), requests);
            assertEquals(3, s.flows);
        }
    }

    @Test
    void aBadReplyNamesTheSocket() throws Exception {
        String path = dir.resolve("control.sock").toString();
        try (LocalStream.Listener l = streams.listen(path)) {
            Thread engine = fakeEngine(l, "{\"paths\":", new ArrayList<>());
            IOException e = assertThrows(IOException.class, () -> new StatusClient(streams, path, 2000).status());
            assertTrue(e.getMessage().startsWith(path + ": not a status reply: "), e.getMessage());
            engine.join(5000);
        }
        assertThrows(IOException.class, () -> new StatusClient(streams, path, 500).status()); // no engine
    }

    @Test
    void networkChangedIsOneRequestAnsweredOk() throws Exception {
        String path = dir.resolve("control.sock").toString();
        List<String> requests = Collections.synchronizedList(new ArrayList<>());
        try (LocalStream.Listener l = streams.listen(path)) {
            Thread engine = fakeEngine(l, "{\"ok\":true}\n", requests);
            new StatusClient(streams, path, 2000).networkChanged();
            engine.join(5000);
            assertEquals(List.of("network-changed"), requests);
        }
    }

    @Test
    void networkChangedRefusedByAnOlderEngineIsAnError() throws Exception {
        String path = dir.resolve("control.sock").toString();
        try (LocalStream.Listener l = streams.listen(path)) {
            Thread engine = fakeEngine(l, "{\"error\":\"unknown request\"}\n", new ArrayList<>());
            IOException e = assertThrows(IOException.class, () -> new StatusClient(streams, path, 2000).networkChanged());
            assertEquals(path + ": network-changed was answered {\"error\":\"unknown request\"}", e.getMessage());
            engine.join(5000);
        }
    }

    @Test
    void networkChangedWithNoEngineIsAnError() {
        String path = dir.resolve("nobody.sock").toString();
        assertThrows(IOException.class, () -> new StatusClient(streams, path, 2000).networkChanged());
    }
}
