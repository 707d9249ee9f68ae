package android.view;

import android.content.Context;

public class View {
    public interface OnClickListener {
        void onClick(View v);
    }

    public View(Context context) { throw new RuntimeException("Stub!"); }

    public void setOnClickListener(OnClickListener l) { throw new RuntimeException("Stub!"); }

    public void setEnabled(boolean enabled) { throw new RuntimeException("Stub!"); }

    public void setPadding(int left, int top, int right, int bottom) { throw new RuntimeException("Stub!"); }
}
