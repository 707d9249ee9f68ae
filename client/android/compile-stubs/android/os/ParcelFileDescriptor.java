package android.os;

import java.io.Closeable;
import java.io.FileDescriptor;
import java.io.IOException;

public class ParcelFileDescriptor implements Closeable {
    public static ParcelFileDescriptor dup(FileDescriptor orig) throws IOException { throw new RuntimeException("Stub!"); }

    public FileDescriptor getFileDescriptor() { throw new RuntimeException("Stub!"); }

    public int getFd() { throw new RuntimeException("Stub!"); }

    @Override public void close() throws IOException { throw new RuntimeException("Stub!"); }
}
