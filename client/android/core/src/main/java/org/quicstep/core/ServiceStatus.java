package org.quicstep.core;

/**
 * The VPN's state as the settings screen shows it, fed by the service and by the engine
 * supervisor's events. Thread-safe; read from the UI, written from the service's threads.
 */
public final class ServiceStatus implements EngineSupervisor.Listener {
    public enum State { OFF, CONNECTING, RUNNING, RESTARTING, FAILED }

    private State state = State.OFF;
    private String detail = "";

    public synchronized void set(State s, String d) {
        state = s;
        detail = d == null ? "" : d;
    }

    public synchronized State state() {
        return state;
    }

    @Override
    public synchronized void onEvent(EngineSupervisor.Event event, String d) {
        switch (event) {
            case STARTED:
                set(State.CONNECTING, "engine started");
                break;
            case TUN_SENT:
                set(State.RUNNING, "");
                break;
            case EXITED:
                set(State.RESTARTING, d);
                break;
            case RESTARTING:
                set(State.RESTARTING, detail.isEmpty() ? d : detail + "; " + d);
                break;
            case STOPPED:
                set(State.OFF, "");
                break;
        }
    }

    /** "running", "restarting: the engine exited with code 1 after 100 ms; restarting in 500 ms". */
    public synchronized String text() {
        String name = state.name().toLowerCase(java.util.Locale.ROOT);
        return detail.isEmpty() ? name : name + ": " + detail;
    }
}
