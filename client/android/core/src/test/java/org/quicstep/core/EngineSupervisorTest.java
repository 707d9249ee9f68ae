package org.quicstep.core;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.IOException;
import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.Test;

/** The supervisor's schedule in simulated time, with fake engines and a fake TUN sender. */
class EngineSupervisorTest {
    /** Simulated time: sleeping advances it at once. */
    static final class FakeClock implements EngineSupervisor.Clock {
        long now;

        @Override
        public long nowMillis() {
            return now;
        }

        @Override
        public void sleepMillis(long ms) {
            now += ms;
        }
    }

    /** One scripted engine run. */
    static final class Run {
        final long listensAfterMs; // takes the TUN fd only this long after its start
        final long livesMs;        // then exits this long after its start (with `code`)
        final int code;
        final boolean refuses;

        Run(long listensAfterMs, long livesMs, int code, boolean refuses) {
            this.listensAfterMs = listensAfterMs;
            this.livesMs = livesMs;
            this.code = code;
            this.refuses = refuses;
        }
    }

    /** The engines, the TUN sender and the record of what happened, on one fake clock. */
    static final class World implements EngineSupervisor.Launcher, EngineSupervisor.TunSender {
        final FakeClock clock = new FakeClock();
        final List<Run> script = new ArrayList<>();
        final List<Long> startTimes = new ArrayList<>();
        final List<Long> tunSentAt = new ArrayList<>();
        final List<String> events = new ArrayList<>();
        long startedAt;
        Run current;
        boolean destroyed;
        int failStarts;
        EngineSupervisor supervisor;
        int stopAfterStarts = Integer.MAX_VALUE;

        @Override
        public EngineSupervisor.Process start(List<String> argv) throws IOException {
            if (failStarts > 0) {
                failStarts--;
                throw new IOException("exec failed");
            }
            if (startTimes.size() == stopAfterStarts || script.isEmpty()) {
                supervisor.stop();
                current = new Run(0, 0, 0, false);
            } else {
                current = script.remove(0);
            }
            startTimes.add(clock.now);
            startedAt = clock.now;
            destroyed = false;
            final Run run = current;
            return new EngineSupervisor.Process() {
                @Override
                public boolean isAlive() {
                    return !destroyed && clock.now - startedAt < run.livesMs;
                }

                @Override
                public int waitFor() {
                    if (destroyed) return 143;
                    clock.now = Math.max(clock.now, startedAt + run.livesMs);
                    return run.code;
                }

                @Override
                public void destroy() {
                    destroyed = true;
                }
            };
        }

        @Override
        public void sendTun() throws IOException {
            if (clock.now - startedAt < current.listensAfterMs) throw new IOException("connection refused");
            if (current.refuses) throw new FdProtocol.RefusedException("tun.sock refused the descriptor (answer 1)", 1);
            tunSentAt.add(clock.now);
        }

        EngineSupervisor supervise() {
            supervisor = new EngineSupervisor(this, List.of("libqsengine.so", "--tun-socket", "t"), this, clock,
                    EngineSupervisor.defaultBackoff(), (e, detail) -> events.add(e + (detail.isEmpty() ? "" : ": " + detail)));
            return supervisor;
        }
    }

    @Test
    void crashesRestartWithDoublingDelaysAndEveryEngineGetsTheTun() {
        World w = new World();
        for (int i = 0; i < 9; i++) w.script.add(new Run(0, 100, 1, false)); // crashes after 0.1 s
        w.supervise().run();
        // start at 0, crash at 100, restart 500 later, then 1000, 2000, ... capped at 30000.
        List<Long> want = new ArrayList<>();
        long t = 0;
        long delay = 500;
        for (int i = 0; i < 10; i++) {
            want.add(t);
            t += 100 + delay;
            delay = Math.min(30_000, delay * 2);
        }
        assertEquals(want, w.startTimes);
        assertEquals(want.subList(0, 9), w.tunSentAt, "each engine got the TUN fd as it started");
        assertTrue(w.events.contains("EXITED: the engine exited with code 1 after 100 ms"), w.events.toString());
        assertTrue(w.events.contains("RESTARTING: restarting in 30000 ms"), w.events.toString());
        assertEquals("STOPPED", w.events.get(w.events.size() - 1));
    }

    @Test
    void aLongRunResetsTheBackoff() {
        World w = new World();
        w.script.add(new Run(0, 100, 1, false));
        w.script.add(new Run(0, 100, 1, false));
        w.script.add(new Run(0, 120_000, 0, false)); // two minutes of service
        w.script.add(new Run(0, 100, 1, false));
        w.supervise().run();
        // delays: 500, 1000, then (after the long run) 500 again, then 1000.
        assertEquals(List.of(0L, 600L, 1700L, 1700L + 120_000 + 500, 1700L + 120_000 + 500 + 100 + 1000),
                w.startTimes);
    }

    @Test
    void theTunIsRetriedUntilTheEngineListens() {
        World w = new World();
        w.script.add(new Run(300, 10_000, 0, false)); // listens 0.3 s after its start
        w.supervise().run();
        // retries at 20, 40, 80, 160 ms: sent at 20+40+80+160 = 300 ms.
        assertEquals(List.of(300L), w.tunSentAt);
    }

    @Test
    void anEngineThatNeverTakesTheTunIsEndedAndRestarted() {
        World w = new World();
        w.script.add(new Run(Long.MAX_VALUE, Long.MAX_VALUE, 0, false));
        w.script.add(new Run(0, 100, 0, true)); // answers, but refuses
        w.script.add(new Run(0, 100, 0, false));
        w.supervise().run();
        assertTrue(w.events.stream().anyMatch(e -> e.startsWith(
                "EXITED: the engine did not take the TUN fd within 5000 ms: connection refused")), w.events.toString());
        assertTrue(w.events.stream().anyMatch(e -> e.startsWith(
                "EXITED: the engine refused the TUN fd: tun.sock refused the descriptor (answer 1)")), w.events.toString());
        assertEquals(4, w.startTimes.size());
        assertEquals(1, w.tunSentAt.size());
        assertTrue(w.startTimes.get(1) >= EngineSupervisor.HANDOFF_TIMEOUT_MS - 640, w.startTimes.toString());
    }

    @Test
    void aFailedExecIsRetriedWithBackoff() {
        World w = new World();
        w.failStarts = 2;
        w.script.add(new Run(0, 100, 0, false));
        w.supervise().run();
        assertEquals(List.of(1500L, 1500L + 100 + 2000), w.startTimes);
        assertEquals("EXITED: cannot start the engine: exec failed", w.events.get(0));
    }

    @Test
    void stopEndsTheEngineAndTheLoopOnARealClock() throws Exception {
        // Real time and a thread: stop() must interrupt a backoff sleep and end a running engine.
        List<Boolean> destroyed = new ArrayList<>();
        EngineSupervisor.Launcher launcher = argv -> new EngineSupervisor.Process() {
            final Object lock = new Object();
            boolean dead;

            @Override
            public boolean isAlive() {
                synchronized (lock) {
                    return !dead;
                }
            }

            @Override
            public int waitFor() throws InterruptedException {
                synchronized (lock) {
                    while (!dead) lock.wait();
                }
                return 143;
            }

            @Override
            public void destroy() {
                synchronized (lock) {
                    dead = true;
                    lock.notifyAll();
                }
                synchronized (destroyed) {
                    destroyed.add(true);
                }
            }
        };
        EngineSupervisor s = new EngineSupervisor(launcher, List.of("x"), () -> {}, EngineSupervisor.SYSTEM_CLOCK,
                EngineSupervisor.defaultBackoff(), (e, d) -> {});
        s.start();
        long deadline = System.currentTimeMillis() + 5000;
        while (s.starts() == 0 && System.currentTimeMillis() < deadline) Thread.sleep(10);
        s.stop();
        s.join(5000);
        assertEquals(1, s.starts());
        synchronized (destroyed) {
            assertFalse(destroyed.isEmpty(), "the engine was not ended");
        }
    }
}
