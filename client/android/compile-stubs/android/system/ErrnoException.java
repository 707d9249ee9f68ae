package android.system;

public final class ErrnoException extends Exception {
    private static final long serialVersionUID = 1L;

    public ErrnoException(String functionName, int errno) { throw new RuntimeException("Stub!"); }
}
