package org.quicstep.core;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** ProcessLauncher with real processes (/bin/sh standing in for the engine). */
class ProcessLauncherTest {
    @TempDir
    Path dir;

    @Test
    void exitCodesAndOutputReachTheSupervisor() throws Exception {
        Path log = dir.resolve("engine.log");
        ProcessLauncher l = new ProcessLauncher(log.toFile());
        EngineSupervisor.Process p = l.start(List.of("/bin/sh", "-c", "echo to-stdout; echo to-stderr >&2; exit 3"));
        assertEquals(3, p.waitFor());
        assertFalse(p.isAlive());
        EngineSupervisor.Process again = l.start(List.of("/bin/sh", "-c", "echo second"));
        assertEquals(0, again.waitFor());
        String text = new String(Files.readAllBytes(log), StandardCharsets.UTF_8);
        assertEquals("to-stdout\nto-stderr\nsecond\n", text, "the log is appended to, both streams");
    }

    @Test
    void destroyTerminatesThenKills() throws Exception {
        ProcessLauncher l = new ProcessLauncher(dir.resolve("engine.log").toFile());
        // An engine that ignores SIGTERM is SIGKILLed after the grace period.
        EngineSupervisor.Process p = l.start(List.of("/bin/sh", "-c", "trap '' TERM; while :; do sleep 0.1; done"));
        Thread.sleep(200);
        assertTrue(p.isAlive());
        long t0 = System.nanoTime();
        p.destroy();
        int code = p.waitFor();
        double s = (System.nanoTime() - t0) / 1e9;
        assertEquals(137, code, "SIGKILL");
        assertTrue(s >= ProcessLauncher.TERM_GRACE_MS / 1000.0 - 0.1 && s < 10, "took " + s + " s");
    }
}
