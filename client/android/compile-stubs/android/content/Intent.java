package android.content;

import android.net.Uri;

public class Intent {
    public static final String ACTION_OPEN_DOCUMENT = "android.intent.action.OPEN_DOCUMENT";
    public static final String CATEGORY_OPENABLE = "android.intent.category.OPENABLE";

    public Intent(String action) { throw new RuntimeException("Stub!"); }

    public Intent(Context packageContext, Class<?> cls) { throw new RuntimeException("Stub!"); }

    public String getAction() { throw new RuntimeException("Stub!"); }

    public Intent setAction(String action) { throw new RuntimeException("Stub!"); }

    public Intent addCategory(String category) { throw new RuntimeException("Stub!"); }

    public Intent setType(String type) { throw new RuntimeException("Stub!"); }

    public Uri getData() { throw new RuntimeException("Stub!"); }
}
