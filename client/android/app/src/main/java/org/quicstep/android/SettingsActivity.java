package org.quicstep.android;

import android.app.Activity;
import android.content.Intent;
import android.net.Uri;
import android.net.VpnService;
import android.os.Bundle;
import android.os.Handler;
import android.os.Looper;
import android.view.View;
import android.widget.Button;
import android.widget.CompoundButton;
import android.widget.EditText;
import android.widget.LinearLayout;
import android.widget.ScrollView;
import android.widget.Switch;
import android.widget.TextView;
import java.io.IOException;
import java.io.InputStream;
import org.quicstep.core.AppExclusions;
import org.quicstep.core.ConfigException;
import org.quicstep.core.EngineStatus;
import org.quicstep.core.ServiceStatus;
import org.quicstep.core.StatusClient;
import org.quicstep.core.TunnelSettings;
import org.quicstep.core.WgQuickConfig;

/**
 * The settings screen: import a wg-quick file, switch the VPN on and off, the apps that
 * bypass it, and the status (the service's state; once the engine runs, its native and
 * channel bytes, load ratio and flows from its control socket). Laid out in code: no
 * resources to keep in step.
 */
public final class SettingsActivity extends Activity {
    private static final int REQUEST_IMPORT = 1;
    private static final int REQUEST_VPN = 2;
    private static final long REFRESH_MS = 1000;

    private TunnelSettings settings;
    private TextView tunnelView, statusView;
    private Switch onOff;
    private EditText exclusions;
    private Handler handler;
    private final Runnable refresh = new Runnable() {
        @Override
        public void run() {
            refreshStatus();
            handler.postDelayed(this, REFRESH_MS);
        }
    };

    @Override
    protected void onCreate(Bundle savedInstanceState) {
        super.onCreate(savedInstanceState);
        settings = new TunnelSettings(getFilesDir());
        handler = new Handler(Looper.getMainLooper());

        LinearLayout column = new LinearLayout(this);
        column.setOrientation(LinearLayout.VERTICAL);
        column.setPadding(32, 32, 32, 32);

        Button importButton = new Button(this);
        importButton.setText("Import a wg-quick file");
        importButton.setOnClickListener(new View.OnClickListener() {
            @Override
            public void onClick(View v) {
                Intent pick = new Intent(Intent.ACTION_OPEN_DOCUMENT);
                pick.addCategory(Intent.CATEGORY_OPENABLE);
                pick.setType("*/*");
                startActivityForResult(pick, REQUEST_IMPORT);
            }
        });
        tunnelView = new TextView(this);
        tunnelView.setTextIsSelectable(true);

        onOff = new Switch(this);
        onOff.setText("VPN");
        onOff.setChecked(QuicstepVpnService.STATUS.state() != ServiceStatus.State.OFF);
        onOff.setOnCheckedChangeListener(new CompoundButton.OnCheckedChangeListener() {
            @Override
            public void onCheckedChanged(CompoundButton button, boolean on) {
                if (on) {
                    Intent consent = VpnService.prepare(SettingsActivity.this);
                    if (consent != null) {
                        startActivityForResult(consent, REQUEST_VPN);
                    } else {
                        startVpn();
                    }
                } else {
                    startService(new Intent(SettingsActivity.this, QuicstepVpnService.class)
                            .setAction(QuicstepVpnService.ACTION_DISCONNECT));
                }
            }
        });

        TextView exclusionsLabel = new TextView(this);
        exclusionsLabel.setText("Apps that bypass the VPN (package names, one per line); applied at the next connect");
        exclusions = new EditText(this);
        exclusions.setMinLines(3);
        exclusions.setHint("com.example.bank");
        Button saveExclusions = new Button(this);
        saveExclusions.setText("Save the excluded apps");
        saveExclusions.setOnClickListener(new View.OnClickListener() {
            @Override
            public void onClick(View v) {
                try {
                    settings.saveExclusions(exclusions.getText().toString());
                    tunnelView.setText(describeTunnel());
                } catch (ConfigException | IOException e) {
                    tunnelView.setText(e.getMessage());
                }
            }
        });
        statusView = new TextView(this);
        statusView.setTextIsSelectable(true);

        column.addView(importButton);
        column.addView(tunnelView);
        column.addView(onOff);
        column.addView(exclusionsLabel);
        column.addView(exclusions);
        column.addView(saveExclusions);
        column.addView(statusView);
        ScrollView scroll = new ScrollView(this);
        scroll.addView(column);
        setContentView(scroll);

        tunnelView.setText(describeTunnel());
        try {
            exclusions.setText(AppExclusions.format(settings.exclusions()));
        } catch (ConfigException | IOException e) {
            exclusions.setText("");
        }
    }

    @Override
    protected void onResume() {
        super.onResume();
        handler.post(refresh);
    }

    @Override
    protected void onPause() {
        handler.removeCallbacks(refresh);
        super.onPause();
    }

    @Override
    protected void onActivityResult(int requestCode, int resultCode, Intent data) {
        super.onActivityResult(requestCode, resultCode, data);
        if (requestCode == REQUEST_VPN) {
            if (resultCode == RESULT_OK) {
                startVpn();
            } else {
                onOff.setChecked(false);
            }
        } else if (requestCode == REQUEST_IMPORT && resultCode == RESULT_OK && data != null && data.getData() != null) {
            importTunnel(data.getData());
        }
    }

    private void startVpn() {
        startService(new Intent(this, QuicstepVpnService.class).setAction(QuicstepVpnService.ACTION_CONNECT));
    }

    private void importTunnel(Uri uri) {
        String name = uri.getLastPathSegment() == null ? "the picked file" : uri.getLastPathSegment();
        try (InputStream in = getContentResolver().openInputStream(uri)) {
            if (in == null) throw new IOException("cannot open " + name);
            settings.importConfig(TunnelSettings.readLimited(in, TunnelSettings.MAX_IMPORT), name);
            tunnelView.setText(describeTunnel() + "\n(imported; applied at the next connect)");
        } catch (ConfigException | IOException e) {
            tunnelView.setText("Not imported: " + e.getMessage());
        }
    }

    private String describeTunnel() {
        try {
            WgQuickConfig c = settings.config();
            StringBuilder b = new StringBuilder("Tunnel: ");
            b.append(c.iface.addresses).append(", MTU ").append(c.iface.effectiveMtu());
            for (WgQuickConfig.Peer p : c.peers) b.append("\nprovider ").append(p.endpoint);
            b.append("\nbypassing the VPN: ").append(settings.exclusions());
            return b.toString();
        } catch (ConfigException | IOException e) {
            return e.getMessage();
        }
    }

    /** The service's state at once; the engine's counters from a background thread. */
    private void refreshStatus() {
        final String state = QuicstepVpnService.STATUS.text();
        final String socket = QuicstepVpnService.controlSocket;
        statusView.setText("Status: " + state);
        if (socket == null || QuicstepVpnService.STATUS.state() != ServiceStatus.State.RUNNING) return;
        new Thread(new Runnable() {
            @Override
            public void run() {
                String text;
                try {
                    EngineStatus s = new StatusClient(new AndroidLocalStreams(), socket, 500).status();
                    text = "Status: " + state + "\n" + s.summary();
                } catch (IOException e) {
                    text = "Status: " + state + "\nengine status: " + e.getMessage();
                }
                final String shown = text;
                runOnUiThread(new Runnable() {
                    @Override
                    public void run() {
                        statusView.setText(shown);
                    }
                });
            }
        }, "qs-status").start();
    }
}
