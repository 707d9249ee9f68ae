package android.app;

import android.content.ContextWrapper;
import android.content.Intent;
import android.os.Bundle;
import android.view.View;

public class Activity extends ContextWrapper {
    public static final int RESULT_OK = -1;
    public static final int RESULT_CANCELED = 0;

    public Activity() { super(null); throw new RuntimeException("Stub!"); }

    protected void onCreate(Bundle savedInstanceState) { throw new RuntimeException("Stub!"); }

    protected void onResume() { throw new RuntimeException("Stub!"); }

    protected void onPause() { throw new RuntimeException("Stub!"); }

    protected void onActivityResult(int requestCode, int resultCode, Intent data) { throw new RuntimeException("Stub!"); }

    public void startActivityForResult(Intent intent, int requestCode) { throw new RuntimeException("Stub!"); }

    public void setContentView(View view) { throw new RuntimeException("Stub!"); }

    public final void runOnUiThread(Runnable action) { throw new RuntimeException("Stub!"); }
}
