package android.content.pm;

public abstract class PackageManager {
    public static class NameNotFoundException extends Exception {
        private static final long serialVersionUID = 1L;

        public NameNotFoundException(String name) { throw new RuntimeException("Stub!"); }
    }
}
