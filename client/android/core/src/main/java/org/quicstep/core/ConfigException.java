package org.quicstep.core;

/**
 * A configuration the app cannot use. The message names the file and line and quotes the
 * offending text, in wireguard-tools' manner: {@code tunnel.conf:7: PersistentKeepalive is
 * neither 0/off nor 1-65535: `fast'}.
 */
public final class ConfigException extends Exception {
    private static final long serialVersionUID = 1L;

    public ConfigException(String message) {
        super(message);
    }

    /** An error on one line: "file:line: what: `the line'". */
    static ConfigException atLine(String file, int line, String what, String text) {
        return new ConfigException(file + ":" + line + ": " + what + ": `" + text.trim() + "'");
    }
}
