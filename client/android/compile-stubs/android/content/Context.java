package android.content;

import android.content.pm.ApplicationInfo;
import java.io.File;

public abstract class Context {
    public static final int MODE_PRIVATE = 0;

    public abstract File getFilesDir();

    public abstract ApplicationInfo getApplicationInfo();

    public abstract String getPackageName();

    public abstract ContentResolver getContentResolver();

    public abstract ComponentName startService(Intent service);

    public abstract void startActivity(Intent intent);

    public final <T> T getSystemService(Class<T> serviceClass) { throw new RuntimeException("Stub!"); }
}
