package org.quicstep.core;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;

import java.util.List;
import org.junit.jupiter.api.Test;

class EngineCommandTest {
    @Test
    void theDocumentedCommandLine() {
        EngineCommand c = new EngineCommand("/data/app/x/lib/arm64", "/data/user/0/org.quicstep.android/files");
        assertEquals(List.of("/data/app/x/lib/arm64/libqsengine.so",
                "--tun-socket", "/data/user/0/org.quicstep.android/files/tun.sock",
                "--protect-socket", "/data/user/0/org.quicstep.android/files/protect.sock",
                "--control-socket", "/data/user/0/org.quicstep.android/files/control.sock",
                "--wg-config", "/data/user/0/org.quicstep.android/files/channel.conf",
                "--wg-helper", "/data/app/x/lib/arm64/libqswg.so"), c.argv());
    }

    @Test
    void aSocketPathThatDoesNotFitIsRefused() {
        assertThrows(IllegalArgumentException.class, () -> new EngineCommand("/lib", "/" + "d".repeat(100)));
    }
}
