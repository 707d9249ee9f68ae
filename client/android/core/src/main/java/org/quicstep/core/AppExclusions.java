package org.quicstep.core;

import java.util.ArrayList;
import java.util.List;

/**
 * The per-app exclusion setting: Android package names, one per line or separated by
 * commas or spaces ("org.example.bank, com.example.game"). Each must be a valid package
 * name; an error quotes the bad entry.
 */
public final class AppExclusions {
    private AppExclusions() {}

    public static List<String> parse(String text) throws ConfigException {
        List<String> out = new ArrayList<String>();
        for (String item : text.split("[,\\s]+")) {
            if (item.isEmpty()) continue;
            if (!isPackageName(item)) {
                throw new ConfigException("excluded apps: `" + item + "' is not an Android package name");
            }
            if (!out.contains(item)) out.add(item);
        }
        return out;
    }

    /** Two or more Java identifiers joined by dots (what Android requires of a package). */
    static boolean isPackageName(String s) {
        String[] parts = s.split("\\.", -1);
        if (parts.length < 2) return false;
        for (String p : parts) {
            if (p.isEmpty() || !Character.isJavaIdentifierStart(p.charAt(0))) return false;
            for (int i = 1; i < p.length(); i++) {
                if (!Character.isJavaIdentifierPart(p.charAt(i))) return false;
            }
        }
        return true;
    }

    /** One package per line, for the settings field. */
    public static String format(List<String> apps) {
        StringBuilder b = new StringBuilder();
        for (String a : apps) b.append(a).append('\n');
        return b.toString();
    }
}
