package org.quicstep.core;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import org.junit.jupiter.api.Test;

class EngineStatusTest {
    /** quicstepd's status reply, abridged: the vocabulary the engine keeps. */
    static final String REPLY = "{\"paths\":{\"channel\":{\"packets\":120,\"bytes\":14000,\"in_packets\":90,"
            + "\"in_bytes\":7616},\"native\":{\"packets\":9000,\"bytes\":957035,\"in_packets\":8000,"
            + "\"in_bytes\":10000000}},\"channel_load_ratio\":0.0019685,\"flows\":{\"tracked\":3,"
            + "\"created\":5},\"watchdog\":{\"moved_native\":2}}\n";

    @Test
    void readsTheVocabulary() throws Exception {
        EngineStatus s = EngineStatus.fromJson(REPLY);
        assertEquals(21616, s.channelBytes);
        assertEquals(10957035, s.nativeBytes);
        assertEquals(0.0019685, s.channelLoadRatio, 1e-12);
        assertEquals(3, s.flows);
        assertEquals("native 11.0 MB, channel 21.6 kB, load ratio 0.20%, 3 flows", s.summary());
        assertEquals(null, s.channelHealth);
    }

    @Test
    void theChannelsHealthLeadsTheSummary() throws Exception {
        String working = REPLY.replace("\"flows\":{", "\"channel\":{\"health\":\"working\",\"dns\":[]},\"flows\":{");
        EngineStatus s = EngineStatus.fromJson(working);
        assertEquals("working", s.channelHealth);
        assertEquals("Channel working. native 11.0 MB, channel 21.6 kB, load ratio 0.20%, 3 flows", s.summary());
        String blocked = working.replace("\"working\"", "\"unanswered\"");
        assertTrue(EngineStatus.fromJson(blocked).summary().startsWith(
                "Channel unanswered: WireGuard sends and nothing comes back"), EngineStatus.fromJson(blocked).summary());
        assertMessage("channel.health is not a string", working.replace("\"working\"", "3"));
    }

    @Test
    void aMissingOrWrongFieldIsNamed() {
        assertMessage("no paths.native.in_bytes", REPLY.replace(",\"in_bytes\":10000000", ""));
        assertMessage("flows.tracked is not a number", REPLY.replace("\"tracked\":3", "\"tracked\":\"3\""));
        assertMessage("flows.tracked is not a count: 2.5", REPLY.replace("\"tracked\":3", "\"tracked\":2.5"));
        assertMessage("channel_load_ratio 1.5 is not in 0-1", REPLY.replace("0.0019685", "1.5"));
        assertMessage("no paths.channel.bytes", "[]");
    }

    @Test
    void byteUnits() {
        assertEquals("999 B", EngineStatus.bytes(999));
        assertEquals("1.0 kB", EngineStatus.bytes(1000));
        assertEquals("1.5 GB", EngineStatus.bytes(1_500_000_000L));
        assertEquals("1 flow", new EngineStatus(0, 0, 0, 1).summary().replaceAll(".*, ", ""));
    }

    private static void assertMessage(String message, String text) {
        Json.ParseException e = assertThrows(Json.ParseException.class, () -> EngineStatus.fromJson(text));
        assertTrue(e.getMessage().startsWith(message), e.getMessage());
    }
}
