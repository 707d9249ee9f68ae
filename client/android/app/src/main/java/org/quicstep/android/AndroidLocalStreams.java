package org.quicstep.android;

import android.net.LocalServerSocket;
import android.net.LocalSocket;
import android.net.LocalSocketAddress;
import android.system.ErrnoException;
import android.system.Os;
import android.system.OsConstants;
import java.io.File;
import java.io.FileDescriptor;
import java.io.IOException;
import org.quicstep.core.LocalStream;

/**
 * LocalStream on Android's LocalSocket: filesystem-namespace unix stream sockets whose
 * writes carry descriptors (setFileDescriptorsForSend) and whose reads return them
 * (getAncillaryFileDescriptors). The only place the app touches SCM_RIGHTS.
 */
final class AndroidLocalStreams implements LocalStream.Connector, LocalStream.ListenerFactory {
    @Override
    public LocalStream connect(String path) throws IOException {
        LocalSocket s = new LocalSocket();
        try {
            s.connect(new LocalSocketAddress(path, LocalSocketAddress.Namespace.FILESYSTEM));
        } catch (IOException e) {
            s.close();
            throw e;
        }
        return new Stream(s);
    }

    @Override
    public LocalStream.Listener listen(final String path) throws IOException {
        final File file = new File(path);
        file.delete(); // a socket file left by an earlier run refuses the bind
        final LocalSocket bound = new LocalSocket();
        bound.bind(new LocalSocketAddress(path, LocalSocketAddress.Namespace.FILESYSTEM));
        final LocalServerSocket server = new LocalServerSocket(bound.getFileDescriptor());
        return new LocalStream.Listener() {
            @Override
            public LocalStream accept() throws IOException {
                return new Stream(server.accept());
            }

            @Override
            public void close() throws IOException {
                // LocalServerSocket.close() does not wake a blocked accept(); shutdown() does.
                try {
                    Os.shutdown(bound.getFileDescriptor(), OsConstants.SHUT_RDWR);
                } catch (ErrnoException e) {
                    // already shut down
                }
                server.close();
                bound.close();
                file.delete();
            }
        };
    }

    private static final class Stream implements LocalStream {
        private final LocalSocket s;

        Stream(LocalSocket s) {
            this.s = s;
        }

        @Override
        public void write(byte[] data, FileDescriptor... fds) throws IOException {
            if (fds.length > 0) s.setFileDescriptorsForSend(fds); // sent with the next write
            s.getOutputStream().write(data);
        }

        @Override
        public int read(byte[] buf) throws IOException {
            return s.getInputStream().read(buf);
        }

        @Override
        public FileDescriptor[] takeReceivedFds() throws IOException {
            return s.getAncillaryFileDescriptors();
        }

        @Override
        public void setReadTimeoutMillis(int ms) throws IOException {
            s.setSoTimeout(ms);
        }

        @Override
        public void close() throws IOException {
            s.close();
        }
    }
}
