package org.quicstep.core;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.net.InetAddress;
import java.util.List;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;
import org.junit.jupiter.api.Test;

class WgQuickParserTest {
    static final String PRIV = "yAnz5TF+lXXJte14tji3zlMNq+hd2rYUIgJBgB3fBmk=";
    static final String PUB = "xTIBA5rboUvnH4htodjb6e697QjLERt1NAB4mZqp8Dg=";
    static final String PSK = "TrMvSoP4jYQlY6RIzBgbssQqY3vxI2Pi+y71lOWWXX0=";

    /** A provider's file as they ship them, comments and odd spacing included. */
    static final String FILE = String.join("\n",
            "# exported by the provider",
            "[Interface]",
            "PrivateKey = " + PRIV,
            "Address = 10.64.0.2/32, fd00:64::2/128",
            "DNS = 10.64.0.1, fd00:64::1, corp.example",
            "mtu=1380",
            "",
            "[Peer]   # the exit",
            "PublicKey = " + PUB,
            "PresharedKey = " + PSK,
            "AllowedIPs = 0.0.0.0/0, ::/0",
            "Endpoint = vpn.example.net:51820",
            "PersistentKeepalive = 25",
            "");

    static WgQuickConfig parse(String text) throws ConfigException {
        return WgQuickParser.parse(text, "t.conf");
    }

    @Test
    void readsAProvidersFile() throws Exception {
        WgQuickConfig c = parse(FILE);
        assertEquals(PRIV, c.iface.privateKey);
        assertEquals(List.of(InetNetwork.parse("10.64.0.2/32"), InetNetwork.parse("fd00:64::2/128")), c.iface.addresses);
        assertEquals(List.of(InetAddress.getByName("10.64.0.1"), InetAddress.getByName("fd00:64::1")), c.iface.dns);
        assertEquals(List.of("corp.example"), c.iface.dnsSearch);
        assertEquals(1380, c.iface.effectiveMtu());
        assertNull(c.iface.listenPort);
        assertEquals(1, c.peers.size());
        WgQuickConfig.Peer p = c.peers.get(0);
        assertEquals(PUB, p.publicKey);
        assertEquals(PSK, p.presharedKey);
        assertEquals(new Endpoint("vpn.example.net", 51820), p.endpoint);
        assertEquals(25, p.persistentKeepalive);
        assertEquals(2, p.allowedIps.size());
        assertTrue(!c.endpointsNumeric());
    }

    @Test
    void defaultsAndRepeatedKeys() throws Exception {
        WgQuickConfig c = parse("[interface]\nprivatekey=" + PRIV + "\nAddress=10.0.0.2\nAddress=fd00::2\r\n"
                + "Table = off\nSaveConfig = true\n[PEER]\nPublicKey=" + PUB
                + "\nAllowedIPs=10.0.0.0/8\nAllowedIPs=::/0\nEndpoint=[2001:db8::1]:443\nPersistentKeepalive=off\n");
        assertEquals(WgQuickConfig.DEFAULT_MTU, c.iface.effectiveMtu());
        assertEquals(2, c.iface.addresses.size());
        assertEquals(32, c.iface.addresses.get(0).prefix);
        assertEquals(128, c.iface.addresses.get(1).prefix);
        assertEquals(2, c.peers.get(0).allowedIps.size());
        assertEquals(0, c.peers.get(0).persistentKeepalive);
        assertTrue(c.endpointsNumeric());
    }

    /** Each bad line is reported with its number and quoted. */
    @ParameterizedTest
    @CsvSource(delimiter = '|', value = {
        "Address = 10.0.0.300/32|3: Address `10.0.0.300/32' is not an IP address with an optional /prefix: `Address = 10.0.0.300/32'",
        "Address = 10.0.0.2/33|3: Address `10.0.0.2/33'",
        "Address = vpn.example/32|3: Address `vpn.example/32'",
        "Address = 010.0.0.2|3: Address `010.0.0.2'",
        "Address = 10.0.0.2,,10.0.0.3|3: an empty item in a list: `Address = 10.0.0.2,,10.0.0.3'",
        "DNS = 10.0.0.1, bad_name|3: DNS `bad_name' is neither an IP address nor a search domain",
        "MTU = 1279|3: MTU is not a number in 1280-65535: `MTU = 1279'",
        "MTU = 1400 |",
        "MTU = +1400|3: MTU is not a number in 1280-65535: `MTU = +1400'",
        "ListenPort = 65536|3: ListenPort is not a number in 0-65535: `ListenPort = 65536'",
        "PostUp = iptables -A OUTPUT -j DROP|3: the app cannot run wg-quick's shell hooks; remove the line: `PostUp = iptables -A OUTPUT -j DROP'",
        "PublicKey = " + PUB + "|3: not a key of [Interface]: `PublicKey = " + PUB + "'",
        "PrivateKey = " + PRIV + "|3: a second PrivateKey",
        "Frobnicate|3: not a `Key = value' line: `Frobnicate'",
        "Address =|3: an empty value: `Address ='",
        "[Interfaces]|3: not a section wg-quick knows: `[Interfaces]'",
    })
    void badInterfaceLinesQuoteTheLine(String line, String expected) {
        String text = "[Interface]\nPrivateKey = " + PRIV + "\n" + line + "\nAddress = 10.0.0.2/32\n[Peer]\n"
                + "PublicKey = " + PUB + "\nAllowedIPs = 0.0.0.0/0\nEndpoint = 192.0.2.1:51820\n";
        if (expected == null) {
            try {
                parse(text);
            } catch (ConfigException e) {
                throw new AssertionError(e.getMessage());
            }
            return;
        }
        ConfigException e = assertThrows(ConfigException.class, () -> parse(text));
        assertTrue(e.getMessage().startsWith("t.conf:" + expected), e.getMessage());
    }

    @ParameterizedTest
    @CsvSource(delimiter = '|', value = {
        "Endpoint = 192.0.2.1|7: Endpoint is not host:port or [IPv6]:port with a port in 1-65535: `Endpoint = 192.0.2.1'",
        "Endpoint = 192.0.2.1:0|7: Endpoint is not",
        "Endpoint = 2001:db8::1:51820|7: Endpoint is not",
        "Endpoint = [vpn.example]:51820|7: Endpoint is not",
        "Endpoint = bad_host:51820|7: Endpoint is not",
        "AllowedIPs = 0.0.0.0/0, ::/129|7: AllowedIPs `::/129' is not an IP network",
        "PersistentKeepalive = fast|7: PersistentKeepalive is neither 0/off nor 1-65535: `PersistentKeepalive = fast'",
        "PresharedKey = abc|7: PresharedKey is not a 32-byte base64 key: `PresharedKey = abc'",
        "PublicKey = " + PUB + "|7: a second PublicKey",
        "Address = 10.0.0.3|7: not a key of [Peer]: `Address = 10.0.0.3'",
    })
    void badPeerLinesQuoteTheLine(String line, String expected) {
        String text = "[Interface]\nPrivateKey = " + PRIV + "\nAddress = 10.0.0.2/32\n[Peer]\nPublicKey = " + PUB
                + "\nAllowedIPs = 0.0.0.0/0\n" + line + "\n"
                + (line.startsWith("Endpoint") ? "" : "Endpoint = 192.0.2.1:51820\n");
        ConfigException e = assertThrows(ConfigException.class, () -> parse(text));
        assertTrue(e.getMessage().startsWith("t.conf:" + expected), e.getMessage());
    }

    @Test
    void badKeysAreRefused() {
        for (String key : new String[] {PRIV.substring(1), PRIV.replace('=', 'A'), "!" + PRIV.substring(1),
                "AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA==" /* 31 bytes */}) {
            ConfigException e = assertThrows(ConfigException.class,
                    () -> parse(FILE.replace(PRIV, key)), key);
            assertTrue(e.getMessage().contains("PrivateKey is not a 32-byte base64 key: `PrivateKey = " + key + "'"),
                    e.getMessage());
        }
    }

    @Test
    void missingPartsAreNamed() {
        assertMessage("t.conf: no [Interface] section", "[Peer]\nPublicKey = " + PUB + "\n");
        assertMessage("t.conf:1: a key before any [Interface] or [Peer]: `PrivateKey = " + PRIV + "'",
                "PrivateKey = " + PRIV + "\n[Interface]\n");
        assertMessage("t.conf:2: [Interface] has no PrivateKey", "\n[Interface]\nAddress = 10.0.0.2\n");
        assertMessage("t.conf:1: [Interface] has no Address", "[Interface]\nPrivateKey = " + PRIV + "\n");
        assertMessage("t.conf: no [Peer] section", "[Interface]\nPrivateKey = " + PRIV + "\nAddress = 10.0.0.2\n");
        assertMessage("t.conf:4: [Peer] has no Endpoint", "[Interface]\nPrivateKey = " + PRIV
                + "\nAddress = 10.0.0.2\n[Peer]\nPublicKey = " + PUB + "\nAllowedIPs = ::/0\n");
        assertMessage("t.conf:4: [Peer] has no AllowedIPs", "[Interface]\nPrivateKey = " + PRIV
                + "\nAddress = 10.0.0.2\n[Peer]\nPublicKey = " + PUB + "\nEndpoint = 192.0.2.1:1\n");
        assertMessage("t.conf:4: [Peer] has no PublicKey", "[Interface]\nPrivateKey = " + PRIV
                + "\nAddress = 10.0.0.2\n[Peer]\nEndpoint = 192.0.2.1:1\n");
        assertMessage("t.conf:4: a second [Interface]", "[Interface]\nPrivateKey = " + PRIV
                + "\nAddress = 10.0.0.2\n[Interface]\n");
    }

    /** Every prefix of a good file either parses or fails with a ConfigException. */
    @Test
    void everyTruncationFailsCleanly() {
        for (int n = 0; n < FILE.length(); n++) {
            try {
                parse(FILE.substring(0, n));
            } catch (ConfigException e) {
                assertTrue(e.getMessage().startsWith("t.conf"), e.getMessage());
            }
        }
    }

    private static void assertMessage(String prefix, String text) {
        ConfigException e = assertThrows(ConfigException.class, () -> parse(text));
        assertTrue(e.getMessage().startsWith(prefix), e.getMessage());
    }
}
