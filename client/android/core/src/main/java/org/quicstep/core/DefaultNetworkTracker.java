package org.quicstep.core;

/**
 * Tells when the phone's default network really changed, from ConnectivityManager's default
 * network callbacks (onAvailable when a network becomes the default, onLost when it goes):
 * the engine is told "network-changed" then, and only then (its relays and its helper's
 * socket are opened again on the new network, which costs every flow a migration).
 *
 * The first network reported after registering is the one the engine started on: no
 * change. A network lost and the same one back (a short Wi-Fi dropout) is no change either;
 * a different one is. Networks are compared by their handle (Network.getNetworkHandle()).
 * Thread-safe.
 */
public final class DefaultNetworkTracker {
    private boolean seen;        // a default network was reported since registering
    private long current;        // its handle, when seen
    private boolean lost;        // the current one was lost, and no other came yet

    /** A network became the default; true when the engine must be told. */
    public synchronized boolean available(long handle) {
        boolean changed = seen && handle != current;
        seen = true;
        current = handle;
        lost = false;
        return changed;
    }

    /** The default network `handle` went away (another may follow, or none). */
    public synchronized void lost(long handle) {
        if (seen && handle == current) lost = true;
    }

    /** Whether the phone has no default network now (between a loss and the next one). */
    public synchronized boolean offline() {
        return lost;
    }
}
