package org.quicstep.core;

import java.io.ByteArrayOutputStream;
import java.io.File;
import java.io.FileOutputStream;
import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.util.Collections;
import java.util.List;

/**
 * What the settings screen stores, as files in the app's private directory: the imported
 * wg-quick file (tunnel.conf, exactly as imported, once it parses) and the apps excluded
 * from the VPN (excluded_apps.txt). Writes go to a temporary file renamed into place, so a
 * crash never leaves half a file.
 */
public final class TunnelSettings {
    /** A wg-quick file is a few hundred bytes; anything this large is not one. */
    public static final int MAX_IMPORT = 64 * 1024;
    static final String TUNNEL = "tunnel.conf";
    static final String EXCLUDED = "excluded_apps.txt";

    private final File dir;

    public TunnelSettings(File dir) {
        this.dir = dir;
    }

    /**
     * Checks `text` (the picked file, called `name` in messages) and stores it.
     *
     * @throws ConfigException when it does not parse: nothing is stored then.
     */
    public WgQuickConfig importConfig(String text, String name) throws ConfigException, IOException {
        WgQuickConfig c = WgQuickParser.parse(text, name);
        write(TUNNEL, text);
        return c;
    }

    /** The stored tunnel. @throws ConfigException when none was imported yet. */
    public WgQuickConfig config() throws ConfigException, IOException {
        File f = new File(dir, TUNNEL);
        if (!f.isFile()) throw new ConfigException("no tunnel imported yet: import a wg-quick file");
        return WgQuickParser.parse(read(f), TUNNEL);
    }

    public List<String> exclusions() throws ConfigException, IOException {
        File f = new File(dir, EXCLUDED);
        return f.isFile() ? AppExclusions.parse(read(f)) : Collections.<String>emptyList();
    }

    /** Checks and stores the exclusion list. @throws ConfigException quoting a bad entry. */
    public List<String> saveExclusions(String text) throws ConfigException, IOException {
        List<String> apps = AppExclusions.parse(text);
        write(EXCLUDED, AppExclusions.format(apps));
        return apps;
    }

    /** Reads a picked file, refusing more than `max` bytes. */
    public static String readLimited(InputStream in, int max) throws IOException {
        ByteArrayOutputStream out = new ByteArrayOutputStream();
        byte[] buf = new byte[4096];
        int n;
        while ((n = in.read(buf)) > 0) {
            out.write(buf, 0, n);
            if (out.size() > max) throw new IOException("the file is larger than " + max + " bytes: not a wg-quick file");
        }
        return new String(out.toByteArray(), StandardCharsets.UTF_8);
    }

    private static String read(File f) throws IOException {
        return new String(Files.readAllBytes(f.toPath()), StandardCharsets.UTF_8);
    }

    private void write(String name, String text) throws IOException {
        File tmp = new File(dir, name + ".tmp");
        try (OutputStream o = new FileOutputStream(tmp)) {
            o.write(text.getBytes(StandardCharsets.UTF_8));
            o.flush();
        }
        if (!tmp.renameTo(new File(dir, name))) throw new IOException("cannot rename " + tmp + " into place");
    }

    /** Writes the engine's copy of the tunnel (numeric endpoints) to `path`. */
    public static void writeEngineConfig(WgQuickConfig resolved, String path) throws IOException {
        if (!resolved.endpointsNumeric()) throw new IllegalArgumentException("endpoints not resolved");
        File f = new File(path);
        File tmp = new File(path + ".tmp");
        try (OutputStream o = new FileOutputStream(tmp)) {
            o.write(WgQuickWriter.write(resolved).getBytes(StandardCharsets.UTF_8));
        }
        if (!tmp.renameTo(f)) throw new IOException("cannot rename " + tmp + " into place");
    }
}
