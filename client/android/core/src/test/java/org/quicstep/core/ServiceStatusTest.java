package org.quicstep.core;

import static org.junit.jupiter.api.Assertions.assertEquals;

import org.junit.jupiter.api.Test;

class ServiceStatusTest {
    @Test
    void supervisorEventsBecomeTheScreensText() {
        ServiceStatus s = new ServiceStatus();
        assertEquals("off", s.text());
        s.onEvent(EngineSupervisor.Event.STARTED, "libqsengine.so ...");
        assertEquals("connecting: engine started", s.text());
        s.onEvent(EngineSupervisor.Event.TUN_SENT, "");
        assertEquals(ServiceStatus.State.RUNNING, s.state());
        s.onEvent(EngineSupervisor.Event.EXITED, "the engine exited with code 1 after 100 ms");
        s.onEvent(EngineSupervisor.Event.RESTARTING, "restarting in 500 ms");
        assertEquals("restarting: the engine exited with code 1 after 100 ms; restarting in 500 ms", s.text());
        s.onEvent(EngineSupervisor.Event.STOPPED, "");
        assertEquals("off", s.text());
    }
}
