package org.quicstep.core;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.IOException;
import java.net.InetAddress;
import java.net.UnknownHostException;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;

class EndpointResolverTest {
    static InetAddress ip(String s) {
        return InetNetwork.parseAddress(s);
    }

    /** A resolver from a table, recording what was asked. */
    static final class Table implements EndpointResolver.NameResolver {
        final Map<String, List<InetAddress>> names;
        final List<String> asked = new ArrayList<>();

        Table(Map<String, List<InetAddress>> names) {
            this.names = names;
        }

        @Override
        public List<InetAddress> resolve(String host) throws IOException {
            asked.add(host);
            List<InetAddress> a = names.get(host);
            if (a == null) throw new UnknownHostException(host + ": no such name");
            return a;
        }
    }

    @Test
    void namesBecomeAddressesPreferringIpv4() throws Exception {
        WgQuickConfig c = WgQuickParser.parse(WgQuickParserTest.FILE, "t.conf");
        Table t = new Table(Map.of("vpn.example.net", List.of(ip("2001:db8::5"), ip("192.0.2.5"))));
        WgQuickConfig r = new EndpointResolver(t, true).resolve(c);
        assertEquals(new Endpoint("192.0.2.5", 51820), r.peers.get(0).endpoint);
        assertTrue(r.endpointsNumeric());
        assertSame(c.iface, r.iface);
        WgQuickConfig r6 = new EndpointResolver(t, false).resolve(c);
        assertEquals(ip("2001:db8::5"), r6.peers.get(0).endpoint.numericAddress());
    }

    @Test
    void numericEndpointsAreNotLookedUp() throws Exception {
        WgQuickConfig c = WgQuickParser.parse(WgQuickParserTest.FILE.replace("vpn.example.net", "198.51.100.9"), "t.conf");
        Table t = new Table(Map.of());
        WgQuickConfig r = new EndpointResolver(t, true).resolve(c);
        assertEquals(List.of(), t.asked);
        assertSame(c.peers.get(0), r.peers.get(0));
    }

    @Test
    void anUnknownNameIsAConfigError() throws Exception {
        WgQuickConfig c = WgQuickParser.parse(WgQuickParserTest.FILE, "t.conf");
        ConfigException e = assertThrows(ConfigException.class,
                () -> new EndpointResolver(new Table(Map.of()), true).resolve(c));
        assertEquals("peer 1: cannot resolve the endpoint `vpn.example.net': vpn.example.net: no such name", e.getMessage());
        ConfigException empty = assertThrows(ConfigException.class,
                () -> new EndpointResolver(new Table(Map.of("vpn.example.net", List.of())), true).resolve(c));
        assertEquals("peer 1: the endpoint `vpn.example.net' has no address", empty.getMessage());
    }

    @Test
    void literalsNeverReachTheSystemResolver() {
        // Text that InetAddress.getByName would look up as a name is refused before it.
        for (String s : new String[] {"localhost", "cafe", "1.2.3", "1.2.3.4.5", "::1%lo", "::ffff:192.0.2.1", ""}) {
            assertNull(InetNetwork.parseAddress(s), s);
        }
        assertEquals(ip("::1"), InetNetwork.parseAddress("::1"));
    }
}
