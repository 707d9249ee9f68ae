package org.quicstep.core;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;

import java.util.Arrays;
import java.util.LinkedHashMap;
import java.util.Map;
import org.junit.jupiter.api.Test;

class JsonTest {
    @Test
    void readsEveryKindOfValue() throws Exception {
        Object v = Json.parse(" {\"a\": [1, -2.5e3, 0.25, true, false, null], \"s\": \"q\\\"\\\\\\/\\n\\u00e9\", \"o\": {}} ");
        Map<String, Object> want = new LinkedHashMap<>();
        want.put("a", Arrays.asList(1.0, -2500.0, 0.25, true, false, null));
        want.put("s", "q\"\\/\n\u00e9");
        want.put("o", new LinkedHashMap<>());
        assertEquals(want, v);
        assertEquals(Arrays.asList(), Json.parse("[]"));
        assertEquals(7.0, Json.parse("7"));
    }

    @Test
    void refusesWhatIsNotJson() {
        for (String bad : new String[] {"", "{", "{\"a\" 1}", "{\"a\":1,}", "[1 2]", "01", "1.", "-", "1e",
                "tru", "\"\\x\"", "\"\\u12g4\"", "\"a\nb\"", "{} x", "{a:1}", "[".repeat(100) + "]".repeat(100)}) {
            assertThrows(Json.ParseException.class, () -> Json.parse(bad), bad);
        }
    }

    /** Every prefix of a real status reply is refused, none crashes the reader. */
    @Test
    void everyTruncationOfAReplyIsRefused() {
        String reply = EngineStatusTest.REPLY;
        for (int n = 0; n < reply.length() - 1; n++) { // all but the closing brace's prefixes
            String prefix = reply.substring(0, n);
            assertThrows(Json.ParseException.class, () -> Json.parse(prefix), prefix);
        }
    }
}
