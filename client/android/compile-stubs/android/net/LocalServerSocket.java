package android.net;

import java.io.Closeable;
import java.io.FileDescriptor;
import java.io.IOException;

public class LocalServerSocket implements Closeable {
    public LocalServerSocket(String name) throws IOException { throw new RuntimeException("Stub!"); }

    public LocalServerSocket(FileDescriptor fd) throws IOException { throw new RuntimeException("Stub!"); }

    public LocalSocket accept() throws IOException { throw new RuntimeException("Stub!"); }

    @Override public void close() throws IOException { throw new RuntimeException("Stub!"); }
}
