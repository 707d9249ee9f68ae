package android.net;

public class ConnectivityManager {
    public static class NetworkCallback {
        public NetworkCallback() { throw new RuntimeException("Stub!"); }

        public void onAvailable(Network network) { throw new RuntimeException("Stub!"); }

        public void onLost(Network network) { throw new RuntimeException("Stub!"); }
    }

    public void registerDefaultNetworkCallback(NetworkCallback networkCallback) { throw new RuntimeException("Stub!"); }

    public void unregisterNetworkCallback(NetworkCallback networkCallback) { throw new RuntimeException("Stub!"); }
}
