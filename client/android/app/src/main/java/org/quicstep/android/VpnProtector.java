package org.quicstep.android;

import android.net.VpnService;
import android.os.ParcelFileDescriptor;
import android.system.ErrnoException;
import android.system.Os;
import android.util.Log;
import java.io.FileDescriptor;
import java.io.IOException;
import org.quicstep.core.ProtectServer;

/**
 * Protects the engine's and the helper's UDP sockets with VpnService.protect(int). The
 * descriptor arrives as a FileDescriptor; protect() wants its number, which the public API
 * gives through a ParcelFileDescriptor duplicate (a socket option set through a duplicate
 * is the socket's, so protecting the duplicate protects the original).
 */
final class VpnProtector implements ProtectServer.Protector {
    private final VpnService vpn;

    VpnProtector(VpnService vpn) {
        this.vpn = vpn;
    }

    @Override
    public boolean protect(FileDescriptor socket) {
        try (ParcelFileDescriptor dup = ParcelFileDescriptor.dup(socket)) {
            return vpn.protect(dup.getFd());
        } catch (IOException e) {
            Log.e(QuicstepVpnService.TAG, "protect: cannot duplicate the socket", e);
            return false;
        }
    }

    @Override
    public void release(FileDescriptor socket) {
        try {
            Os.close(socket);
        } catch (ErrnoException e) {
            Log.w(QuicstepVpnService.TAG, "protect: closing our copy of a socket: " + e.getMessage());
        }
    }
}
