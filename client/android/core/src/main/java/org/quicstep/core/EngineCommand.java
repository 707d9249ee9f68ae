package org.quicstep.core;

import java.io.File;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Collections;
import java.util.List;

/**
 * How the service starts the engine: the two binaries ship as "libraries" in the APK's
 * jniLibs (so that Android extracts them executable into nativeLibraryDir), and every
 * socket and file lives in the app's files directory.
 *
 * <pre>
 * libqsengine.so --tun-socket FILES/tun.sock --protect-socket FILES/protect.sock
 *                --control-socket FILES/control.sock --wg-config FILES/channel.conf
 *                --wg-helper NATIVE/libqswg.so
 * </pre>
 *
 * The engine listens on the TUN and control sockets; the service listens on the protect
 * socket, which the engine passes on to the helper it starts (--protect-socket).
 */
public final class EngineCommand {
    public static final String ENGINE = "libqsengine.so";
    public static final String HELPER = "libqswg.so";
    /** sun_path holds 108 bytes with its NUL. */
    static final int MAX_SOCKET_PATH = 107;

    public final String engine, helper;
    public final String tunSocket, protectSocket, controlSocket, wgConfig;

    /** @throws IllegalArgumentException when a socket path would not fit sun_path. */
    public EngineCommand(String nativeLibraryDir, String filesDir) {
        engine = new File(nativeLibraryDir, ENGINE).getPath();
        helper = new File(nativeLibraryDir, HELPER).getPath();
        tunSocket = new File(filesDir, "tun.sock").getPath();
        protectSocket = new File(filesDir, "protect.sock").getPath();
        controlSocket = new File(filesDir, "control.sock").getPath();
        wgConfig = new File(filesDir, "channel.conf").getPath();
        for (String p : Arrays.asList(tunSocket, protectSocket, controlSocket)) {
            if (p.length() > MAX_SOCKET_PATH) {
                throw new IllegalArgumentException("socket path longer than " + MAX_SOCKET_PATH + " bytes: " + p);
            }
        }
    }

    public List<String> argv() {
        List<String> a = new ArrayList<String>();
        Collections.addAll(a, engine, "--tun-socket", tunSocket, "--protect-socket", protectSocket,
                "--control-socket", controlSocket, "--wg-config", wgConfig, "--wg-helper", helper);
        return a;
    }
}
