package org.quicstep.core;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.ByteArrayInputStream;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

class TunnelSettingsTest {
    @TempDir
    Path dir;

    @Test
    void aGoodImportIsStoredABadOneIsNot() throws Exception {
        TunnelSettings s = new TunnelSettings(dir.toFile());
        ConfigException none = assertThrows(ConfigException.class, s::config);
        assertEquals("no tunnel imported yet: import a wg-quick file", none.getMessage());
        s.importConfig(WgQuickParserTest.FILE, "mullvad.conf");
        assertEquals(WgQuickParserTest.FILE, Files.readString(dir.resolve("tunnel.conf")));
        ConfigException bad = assertThrows(ConfigException.class,
                () -> s.importConfig(WgQuickParserTest.FILE.replace("mtu=1380", "mtu=9"), "bad.conf"));
        assertEquals("bad.conf:6: MTU is not a number in 1280-65535: `mtu=9'", bad.getMessage());
        assertEquals(1380, s.config().iface.effectiveMtu(), "the good tunnel stays");
        assertFalse(Files.exists(dir.resolve("tunnel.conf.tmp")));
    }

    @Test
    void exclusions() throws Exception {
        TunnelSettings s = new TunnelSettings(dir.toFile());
        assertEquals(List.of(), s.exclusions());
        s.saveExclusions("com.example.bank, org.example.game");
        assertEquals(List.of("com.example.bank", "org.example.game"), s.exclusions());
        assertThrows(ConfigException.class, () -> s.saveExclusions("bank"));
        assertEquals(List.of("com.example.bank", "org.example.game"), s.exclusions());
    }

    @Test
    void theEngineCopyHasNumericEndpoints() throws Exception {
        WgQuickConfig c = WgQuickParser.parse(WgQuickParserTest.FILE, "t.conf");
        String path = dir.resolve("channel.conf").toString();
        assertThrows(IllegalArgumentException.class, () -> TunnelSettings.writeEngineConfig(c, path));
        WgQuickConfig r = new WgQuickConfig(c.iface, List.of(c.peers.get(0).withEndpoint(new Endpoint("192.0.2.5", 51820))));
        TunnelSettings.writeEngineConfig(r, path);
        assertTrue(Files.readString(Path.of(path)).contains("Endpoint = 192.0.2.5:51820\n"));
    }

    @Test
    void aHugeFileIsNotRead() throws Exception {
        byte[] big = new byte[TunnelSettings.MAX_IMPORT + 1];
        IOException e = assertThrows(IOException.class,
                () -> TunnelSettings.readLimited(new ByteArrayInputStream(big), TunnelSettings.MAX_IMPORT));
        assertTrue(e.getMessage().contains("not a wg-quick file"));
        assertEquals("abc", TunnelSettings.readLimited(new ByteArrayInputStream("abc".getBytes(StandardCharsets.UTF_8)), 3));
    }
}
