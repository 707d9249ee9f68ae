package android.system;

import java.io.FileDescriptor;

public final class Os {
    private Os() {}

    public static void close(FileDescriptor fd) throws ErrnoException { throw new RuntimeException("Stub!"); }

    public static void shutdown(FileDescriptor fd, int how) throws ErrnoException { throw new RuntimeException("Stub!"); }
}
