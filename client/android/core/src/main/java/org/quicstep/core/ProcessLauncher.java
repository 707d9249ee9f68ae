package org.quicstep.core;

import java.io.File;
import java.io.IOException;
import java.util.List;
import java.util.concurrent.TimeUnit;

/**
 * Starts the engine with ProcessBuilder, its output appended to a log file. The child
 * inherits no descriptor but 0-2, which is why the TUN fd travels over --tun-socket.
 */
public final class ProcessLauncher implements EngineSupervisor.Launcher {
    /** After SIGTERM the engine has this long to clean up before SIGKILL. */
    static final long TERM_GRACE_MS = 2000;

    private final File log;

    public ProcessLauncher(File log) {
        this.log = log;
    }

    @Override
    public EngineSupervisor.Process start(List<String> argv) throws IOException {
        final java.lang.Process p = new ProcessBuilder(argv)
                .redirectErrorStream(true)
                .redirectOutput(ProcessBuilder.Redirect.appendTo(log))
                .redirectInput(ProcessBuilder.Redirect.from(new File("/dev/null")))
                .start();
        return new EngineSupervisor.Process() {
            @Override
            public boolean isAlive() {
                return p.isAlive();
            }

            @Override
            public int waitFor() throws InterruptedException {
                return p.waitFor();
            }

            @Override
            public void destroy() {
                p.destroy();
                Thread killer = new Thread(new Runnable() {
                    @Override
                    public void run() {
                        try {
                            if (!p.waitFor(TERM_GRACE_MS, TimeUnit.MILLISECONDS)) p.destroyForcibly();
                        } catch (InterruptedException e) {
                            p.destroyForcibly();
                        }
                    }
                }, "qs-engine-kill");
                killer.setDaemon(true);
                killer.start();
            }
        };
    }
}
