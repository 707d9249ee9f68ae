package org.quicstep.core;

import java.io.IOException;
import java.util.ArrayList;
import java.util.List;

/**
 * Keeps the engine running for as long as the VPN is on: starts it, hands it the TUN fd
 * (retrying while the engine is not listening yet), waits for it to exit, and starts it
 * again after a backoff; every new engine gets the TUN fd again. The TUN stays established
 * in between, so a dead engine means no traffic, never traffic around the VPN (with
 * Android's always-on VPN and "block connections without VPN", not even while the service
 * itself restarts). The helper is the engine's child: the engine restarts it; when the
 * engine dies the helper sees its sockets close and exits.
 *
 * Time comes from a Clock, so that tests run the whole restart schedule in simulated time.
 * run() is the loop (tests call it directly); start() runs it on a thread of its own.
 */
public final class EngineSupervisor implements Runnable {
    /** Time, and waiting for it. */
    public interface Clock {
        long nowMillis();

        void sleepMillis(long ms) throws InterruptedException;
    }

    public static final Clock SYSTEM_CLOCK = new Clock() {
        @Override
        public long nowMillis() {
            return System.nanoTime() / 1_000_000;
        }

        @Override
        public void sleepMillis(long ms) throws InterruptedException {
            Thread.sleep(ms);
        }
    };

    /** Starts engine processes. */
    public interface Launcher {
        Process start(List<String> argv) throws IOException;
    }

    /** A running engine. */
    public interface Process {
        boolean isAlive();

        /** Blocks until it exits; its exit code. */
        int waitFor() throws InterruptedException;

        /** Ends it (SIGTERM, then SIGKILL); returns at once. */
        void destroy();
    }

    /** Sends the TUN fd to the engine's --tun-socket: FdProtocol.send on Android. */
    public interface TunSender {
        void sendTun() throws IOException;
    }

    /** What happened, for the service's log and the settings screen. */
    public interface Listener {
        void onEvent(Event event, String detail);
    }

    public enum Event { STARTED, TUN_SENT, EXITED, RESTARTING, STOPPED }

    /** Restart delays: doubling from `initialMs` to `maxMs`, back to `initialMs` after a run
     *  of at least `healthyMs`. */
    public static final class Backoff {
        final long initialMs, maxMs, healthyMs;
        private long nextMs;

        public Backoff(long initialMs, long maxMs, long healthyMs) {
            this.initialMs = initialMs;
            this.maxMs = maxMs;
            this.healthyMs = healthyMs;
            this.nextMs = initialMs;
        }

        /** The delay before the next start, after a run of `ranMs`. */
        public long next(long ranMs) {
            if (ranMs >= healthyMs) nextMs = initialMs;
            long d = nextMs;
            nextMs = Math.min(maxMs, nextMs * 2);
            return d;
        }
    }

    /** The defaults: 0.5 s doubling to 30 s; a minute of running resets. */
    public static Backoff defaultBackoff() {
        return new Backoff(500, 30_000, 60_000);
    }

    /** The engine has this long after its start to take the TUN fd. */
    public static final long HANDOFF_TIMEOUT_MS = 5000;
    static final long FIRST_HANDOFF_RETRY_MS = 20, MAX_HANDOFF_RETRY_MS = 640;

    private final Launcher launcher;
    private final List<String> argv;
    private final TunSender tun;
    private final Clock clock;
    private final Backoff backoff;
    private final Listener listener;

    private volatile boolean stopped;
    private Process current; // guarded by this
    private Thread thread;   // guarded by this
    private int starts;      // guarded by this

    public EngineSupervisor(Launcher launcher, List<String> argv, TunSender tun, Clock clock,
                            Backoff backoff, Listener listener) {
        this.launcher = launcher;
        this.argv = new ArrayList<String>(argv);
        this.tun = tun;
        this.clock = clock;
        this.backoff = backoff;
        this.listener = listener;
    }

    /** Runs the loop on a new thread. */
    public synchronized void start() {
        thread = new Thread(this, "qs-engine-supervisor");
        thread.start();
    }

    /** Ends the loop and the engine; the loop thread ends soon after. */
    public void stop() {
        stopped = true;
        Process p;
        Thread t;
        synchronized (this) {
            p = current;
            t = thread;
        }
        if (p != null) p.destroy();
        if (t != null && t != Thread.currentThread()) t.interrupt();
    }

    /** Waits for the loop thread to end. */
    public void join(long ms) throws InterruptedException {
        Thread t;
        synchronized (this) {
            t = thread;
        }
        if (t != null) t.join(ms);
    }

    /** How many engines were started. */
    public synchronized int starts() {
        return starts;
    }

    @Override
    public void run() {
        try {
            while (!stopped) {
                runOnce();
            }
        } catch (InterruptedException e) {
            // stop() interrupted a wait
        }
        listener.onEvent(Event.STOPPED, "");
    }

    private void runOnce() throws InterruptedException {
        long started = clock.nowMillis();
        Process p;
        try {
            p = launcher.start(argv);
        } catch (IOException e) {
            listener.onEvent(Event.EXITED, "cannot start the engine: " + e.getMessage());
            scheduleRestart(0);
            return;
        }
        synchronized (this) {
            starts++;
            current = p;
        }
        if (stopped) { // stop() came before `current` was set
            p.destroy();
            return;
        }
        listener.onEvent(Event.STARTED, String.join(" ", argv));
        String failure = handOff(p);
        if (stopped) {
            p.destroy();
            p.waitFor();
            synchronized (this) {
                current = null;
            }
            return;
        }
        if (failure != null) {
            listener.onEvent(Event.EXITED, failure);
            p.destroy();
        } else {
            listener.onEvent(Event.TUN_SENT, "");
        }
        int code = p.waitFor();
        synchronized (this) {
            current = null;
        }
        if (stopped) return;
        long ran = clock.nowMillis() - started;
        if (failure == null) listener.onEvent(Event.EXITED, "the engine exited with code " + code + " after " + ran + " ms");
        scheduleRestart(ran);
    }

    private void scheduleRestart(long ranMs) throws InterruptedException {
        long delay = backoff.next(ranMs);
        listener.onEvent(Event.RESTARTING, "restarting in " + delay + " ms");
        clock.sleepMillis(delay);
    }

    /** Sends the TUN fd; null when the engine took it, else why not. */
    private String handOff(Process p) throws InterruptedException {
        long deadline = clock.nowMillis() + HANDOFF_TIMEOUT_MS;
        long wait = FIRST_HANDOFF_RETRY_MS;
        IOException last = null;
        while (!stopped) {
            if (!p.isAlive()) return "the engine exited before it took the TUN fd";
            try {
                tun.sendTun();
                return null;
            } catch (FdProtocol.RefusedException e) {
                return "the engine refused the TUN fd: " + e.getMessage();
            } catch (IOException e) {
                last = e; // not listening yet
            }
            if (clock.nowMillis() + wait > deadline) {
                return "the engine did not take the TUN fd within " + HANDOFF_TIMEOUT_MS + " ms: "
                        + (last == null ? "" : last.getMessage());
            }
            clock.sleepMillis(wait);
            wait = Math.min(MAX_HANDOFF_RETRY_MS, wait * 2);
        }
        return "stopped";
    }
}
