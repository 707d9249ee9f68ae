package org.quicstep.core;

import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import org.junit.jupiter.api.Test;

/** When the engine is told that the network changed, over sequences of callbacks. */
class DefaultNetworkTrackerTest {
    static final long WIFI = 100, CELL = 101, OTHER_WIFI = 102;

    @Test
    void theFirstNetworkIsWhereTheEngineStarted() {
        DefaultNetworkTracker t = new DefaultNetworkTracker();
        assertFalse(t.available(WIFI));
        assertFalse(t.available(WIFI), "a repeated report of the same network");
    }

    @Test
    void wifiToCellularAndBackAreChanges() {
        DefaultNetworkTracker t = new DefaultNetworkTracker();
        t.available(WIFI);
        assertTrue(t.available(CELL));
        assertTrue(t.available(WIFI));
        assertTrue(t.available(OTHER_WIFI));
    }

    @Test
    void aDropoutOfTheSameNetworkIsNoChange() {
        DefaultNetworkTracker t = new DefaultNetworkTracker();
        t.available(WIFI);
        t.lost(WIFI);
        assertTrue(t.offline());
        assertFalse(t.available(WIFI));
        assertFalse(t.offline());
    }

    @Test
    void lostThenAnotherNetworkIsAChange() {
        DefaultNetworkTracker t = new DefaultNetworkTracker();
        t.available(WIFI);
        t.lost(WIFI);
        assertTrue(t.available(CELL));
    }

    @Test
    void losingANetworkThatIsNotTheDefaultChangesNothing() {
        DefaultNetworkTracker t = new DefaultNetworkTracker();
        t.available(CELL);
        t.lost(WIFI);
        assertFalse(t.offline());
        assertFalse(t.available(CELL));
    }
}
