package android.system;

public final class OsConstants {
    private OsConstants() {}

    public static final int SHUT_RDWR = placeholder();

    private static int placeholder() { return 0; }
}
