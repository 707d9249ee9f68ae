package org.quicstep.core;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;

import java.util.List;
import org.junit.jupiter.api.Test;

class TunnelPlanTest {
    @Test
    void everythingIsRoutedAndTheAppComesFirstAmongTheExcluded() throws Exception {
        WgQuickConfig c = WgQuickParser.parse(WgQuickParserTest.FILE, "t.conf");
        TunnelPlan p = TunnelPlan.of(c, "org.quicstep.android", List.of("com.example.bank", "org.quicstep.android"));
        assertEquals(c.iface.addresses, p.addresses);
        assertEquals(c.iface.dns, p.dnsServers);
        assertEquals(List.of("corp.example"), p.searchDomains);
        assertEquals(List.of(InetNetwork.parse("0.0.0.0/0"), InetNetwork.parse("::/0")), p.routes);
        assertEquals(1380, p.mtu);
        assertEquals(List.of("org.quicstep.android", "com.example.bank"), p.disallowedApps);
    }

    @Test
    void exclusionsAreCheckedAndQuoted() throws Exception {
        assertEquals(List.of("com.example.bank", "org.example.game"),
                AppExclusions.parse(" com.example.bank,\norg.example.game  com.example.bank\n"));
        assertEquals(List.of(), AppExclusions.parse("\n \n"));
        for (String bad : new String[] {"bank", "com..bank", "com.1bank", "com.bank-app", ".com.bank"}) {
            ConfigException e = assertThrows(ConfigException.class, () -> AppExclusions.parse("com.ok.app " + bad));
            assertEquals("excluded apps: `" + bad + "' is not an Android package name", e.getMessage());
        }
        assertEquals("a.b\nc.d\n", AppExclusions.format(List.of("a.b", "c.d")));
    }
}
