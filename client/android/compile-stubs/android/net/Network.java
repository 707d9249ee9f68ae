package android.net;

public class Network {
    public long getNetworkHandle() { throw new RuntimeException("Stub!"); }
}
