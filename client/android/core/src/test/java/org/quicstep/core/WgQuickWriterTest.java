package org.quicstep.core;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import org.junit.jupiter.api.Test;

class WgQuickWriterTest {
    @Test
    void writingAndParsingAgainGivesTheSameConfig() throws Exception {
        WgQuickConfig c = WgQuickParser.parse(WgQuickParserTest.FILE, "t.conf");
        WgQuickConfig numeric = new WgQuickConfig(c.iface,
                java.util.List.of(c.peers.get(0).withEndpoint(new Endpoint("2001:db8::7", 51820))));
        String text = WgQuickWriter.write(numeric);
        assertTrue(text.contains("Endpoint = [2001:db8:0:0:0:0:0:7]:51820\n"), text);
        WgQuickConfig again = WgQuickParser.parse(text, "w.conf");
        assertEquals(text, WgQuickWriter.write(again));
        assertEquals(numeric.iface.addresses, again.iface.addresses);
        assertEquals(numeric.iface.dns, again.iface.dns);
        assertEquals(numeric.iface.dnsSearch, again.iface.dnsSearch);
        assertEquals(numeric.iface.mtu, again.iface.mtu);
        WgQuickConfig.Peer p = again.peers.get(0);
        assertEquals(WgQuickParserTest.PUB, p.publicKey);
        assertEquals(WgQuickParserTest.PSK, p.presharedKey);
        assertEquals(25, p.persistentKeepalive);
        assertEquals(numeric.peers.get(0).allowedIps, p.allowedIps);
        assertEquals(p.endpoint.numericAddress(), numeric.peers.get(0).endpoint.numericAddress());
    }
}
