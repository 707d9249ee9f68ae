package android.widget;

import android.content.Context;
import android.view.View;

public class TextView extends View {
    public TextView(Context context) { super(context); throw new RuntimeException("Stub!"); }

    public final void setText(CharSequence text) { throw new RuntimeException("Stub!"); }

    public void setTextIsSelectable(boolean selectable) { throw new RuntimeException("Stub!"); }
}
