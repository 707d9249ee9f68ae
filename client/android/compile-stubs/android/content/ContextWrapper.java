package android.content;

import android.content.pm.ApplicationInfo;
import java.io.File;

public class ContextWrapper extends Context {
    public ContextWrapper(Context base) { throw new RuntimeException("Stub!"); }

    @Override public File getFilesDir() { throw new RuntimeException("Stub!"); }

    @Override public ApplicationInfo getApplicationInfo() { throw new RuntimeException("Stub!"); }

    @Override public String getPackageName() { throw new RuntimeException("Stub!"); }

    @Override public ContentResolver getContentResolver() { throw new RuntimeException("Stub!"); }

    @Override public ComponentName startService(Intent service) { throw new RuntimeException("Stub!"); }

    @Override public void startActivity(Intent intent) { throw new RuntimeException("Stub!"); }
}
