package android.net;

import java.io.Closeable;
import java.io.FileDescriptor;
import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;

public class LocalSocket implements Closeable {
    public LocalSocket() { throw new RuntimeException("Stub!"); }

    public void connect(LocalSocketAddress endpoint) throws IOException { throw new RuntimeException("Stub!"); }

    public void bind(LocalSocketAddress bindpoint) throws IOException { throw new RuntimeException("Stub!"); }

    public InputStream getInputStream() throws IOException { throw new RuntimeException("Stub!"); }

    public OutputStream getOutputStream() throws IOException { throw new RuntimeException("Stub!"); }

    @Override public void close() throws IOException { throw new RuntimeException("Stub!"); }

    public void setSoTimeout(int n) throws IOException { throw new RuntimeException("Stub!"); }

    public void setFileDescriptorsForSend(FileDescriptor[] fds) { throw new RuntimeException("Stub!"); }

    public FileDescriptor[] getAncillaryFileDescriptors() throws IOException { throw new RuntimeException("Stub!"); }

    public FileDescriptor getFileDescriptor() { throw new RuntimeException("Stub!"); }
}
