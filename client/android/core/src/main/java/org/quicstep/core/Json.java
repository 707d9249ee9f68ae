package org.quicstep.core;

import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/**
 * A small JSON reader for the engine's status replies (RFC 8259): objects become
 * Map<String, Object>, arrays List<Object>, numbers Double, strings String, true/false
 * Boolean, null null. The whole text must be one value; nesting is bounded; errors give the
 * offset. It exists because the plain-Java core has no JSON library (Android's org.json is
 * not in the JDK).
 */
public final class Json {
    /** Text that is not one JSON value. */
    public static final class ParseException extends Exception {
        private static final long serialVersionUID = 1L;

        ParseException(String what, int offset) {
            super(what + " at offset " + offset);
        }

        /** A valid JSON text that is not what the reader expected. */
        public ParseException(String what) {
            super(what);
        }
    }

    private static final int MAX_DEPTH = 64;
    private final String s;
    private int i;

    private Json(String s) {
        this.s = s;
    }

    public static Object parse(String text) throws ParseException {
        Json j = new Json(text);
        j.space();
        Object v = j.value(0);
        j.space();
        if (j.i != text.length()) throw new ParseException("trailing text", j.i);
        return v;
    }

    private Object value(int depth) throws ParseException {
        if (depth > MAX_DEPTH) throw new ParseException("nested too deeply", i);
        if (i >= s.length()) throw new ParseException("a value expected, end of text", i);
        char c = s.charAt(i);
        switch (c) {
            case '{':
                return object(depth);
            case '[':
                return array(depth);
            case '"':
                return string();
            case 't':
                return literal("true", Boolean.TRUE);
            case 'f':
                return literal("false", Boolean.FALSE);
            case 'n':
                return literal("null", null);
            default:
                if (c == '-' || (c >= '0' && c <= '9')) return number();
                throw new ParseException("unexpected `" + c + "'", i);
        }
    }

    private Map<String, Object> object(int depth) throws ParseException {
        Map<String, Object> m = new LinkedHashMap<String, Object>();
        i++;
        space();
        if (peek() == '}') {
            i++;
            return m;
        }
        while (true) {
            space();
            if (peek() != '"') throw new ParseException("a member name expected", i);
            String key = string();
            space();
            expect(':');
            space();
            m.put(key, value(depth + 1));
            space();
            char c = next();
            if (c == '}') return m;
            if (c != ',') throw new ParseException("`,' or `}' expected", i - 1);
        }
    }

    private List<Object> array(int depth) throws ParseException {
        List<Object> l = new ArrayList<Object>();
        i++;
        space();
        if (peek() == ']') {
            i++;
            return l;
        }
        while (true) {
            space();
            l.add(value(depth + 1));
            space();
            char c = next();
            if (c == ']') return l;
            if (c != ',') throw new ParseException("`,' or `]' expected", i - 1);
        }
    }

    private String string() throws ParseException {
        StringBuilder b = new StringBuilder();
        i++; // the opening quote
        while (true) {
            char c = next();
            if (c == '"') return b.toString();
            if (c < 0x20) throw new ParseException("a control character in a string", i - 1);
            if (c != '\\') {
                b.append(c);
                continue;
            }
            char e = next();
            switch (e) {
                case '"': case '\\': case '/': b.append(e); break;
                case 'b': b.append('\b'); break;
                case 'f': b.append('\f'); break;
                case 'n': b.append('\n'); break;
                case 'r': b.append('\r'); break;
                case 't': b.append('\t'); break;
                case 'u': {
                    if (i + 4 > s.length()) throw new ParseException("a short \\u escape", i);
                    int v = 0;
                    for (int k = 0; k < 4; k++) {
                        int d = Character.digit(s.charAt(i + k), 16);
                        if (d < 0) throw new ParseException("a bad \\u escape", i);
                        v = v * 16 + d;
                    }
                    i += 4;
                    b.append((char) v);
                    break;
                }
                default:
                    throw new ParseException("a bad escape", i - 1);
            }
        }
    }

    private Double number() throws ParseException {
        int start = i;
        if (peek() == '-') i++;
        if (peek() == '0') {
            i++;
        } else if (!digits()) {
            throw new ParseException("a digit expected", i);
        }
        if (peek() == '.') {
            i++;
            if (!digits()) throw new ParseException("a digit expected after `.'", i);
        }
        if (peek() == 'e' || peek() == 'E') {
            i++;
            if (peek() == '+' || peek() == '-') i++;
            if (!digits()) throw new ParseException("a digit expected in the exponent", i);
        }
        return Double.valueOf(s.substring(start, i));
    }

    private boolean digits() {
        int start = i;
        while (i < s.length() && s.charAt(i) >= '0' && s.charAt(i) <= '9') i++;
        return i > start;
    }

    private Object literal(String word, Object v) throws ParseException {
        if (!s.startsWith(word, i)) throw new ParseException("`" + word + "' expected", i);
        i += word.length();
        return v;
    }

    private void space() {
        while (i < s.length() && " \t\r\n".indexOf(s.charAt(i)) >= 0) i++;
    }

    /** The next character without taking it; 0 at the end (never valid where it is asked). */
    private char peek() {
        return i < s.length() ? s.charAt(i) : 0;
    }

    private char next() throws ParseException {
        if (i >= s.length()) throw new ParseException("unexpected end of text", i);
        return s.charAt(i++);
    }

    private void expect(char c) throws ParseException {
        if (next() != c) throw new ParseException("`" + c + "' expected", i - 1);
    }
}
