package org.quicstep.android;

import android.content.Intent;
import android.content.pm.PackageManager;
import android.net.ConnectivityManager;
import android.net.Network;
import android.net.VpnService;
import android.os.ParcelFileDescriptor;
import android.util.Log;
import java.io.File;
import java.io.IOException;
import java.net.InetAddress;
import java.util.List;
import org.quicstep.core.ConfigException;
import org.quicstep.core.DefaultNetworkTracker;
import org.quicstep.core.EndpointResolver;
import org.quicstep.core.EngineCommand;
import org.quicstep.core.EngineSupervisor;
import org.quicstep.core.FdProtocol;
import org.quicstep.core.InetNetwork;
import org.quicstep.core.ProcessLauncher;
import org.quicstep.core.ProtectServer;
import org.quicstep.core.ServiceStatus;
import org.quicstep.core.StatusClient;
import org.quicstep.core.TunnelPlan;
import org.quicstep.core.TunnelSettings;
import org.quicstep.core.WgQuickConfig;

/**
 * The VPN service: the platform's two jobs and nothing else. It establishes the TUN
 * (TunnelPlan: the tunnel's addresses and DNS, routes for all of IPv4 and IPv6, the app and
 * the user's exclusions left out), answers protect requests on the protect socket, and
 * keeps the engine running (EngineSupervisor), handing every engine the TUN fd, and tells
 * the engine when the phone's default network changes (DefaultNetworkTracker). Deciding
 * channel or native, WireGuard and the relay are the engine's and its helper's.
 *
 * Started with ACTION_CONNECT by the settings screen, or by the system for an always-on
 * VPN (then with no action of ours); ACTION_DISCONNECT or a revoke stops it.
 */
public final class QuicstepVpnService extends VpnService {
    static final String TAG = "QuicstepVpn";
    public static final String ACTION_CONNECT = "org.quicstep.android.CONNECT";
    public static final String ACTION_DISCONNECT = "org.quicstep.android.DISCONNECT";
    /** Read by the settings screen. */
    static final ServiceStatus STATUS = new ServiceStatus();
    static volatile String controlSocket;

    /** The running tunnel: the TUN, the protect server and the supervisor. */
    private static final class Running {
        ParcelFileDescriptor tun;
        ProtectServer protect;
        EngineSupervisor supervisor;
        ConnectivityManager.NetworkCallback network;
    }

    private Running running;    // guarded by this
    private Thread starter;     // guarded by this
    private boolean cancelled;  // guarded by this: a stop came while the starter ran

    @Override
    public int onStartCommand(Intent intent, int flags, int startId) {
        String action = intent == null ? null : intent.getAction();
        if (ACTION_DISCONNECT.equals(action)) {
            stopTunnel();
            stopSelf();
            return START_NOT_STICKY;
        }
        startTunnel();
        return START_STICKY;
    }

    @Override
    public void onRevoke() {
        stopTunnel();
        stopSelf();
    }

    @Override
    public void onDestroy() {
        stopTunnel();
        super.onDestroy();
    }

    /** Starts the tunnel on a thread of its own: the endpoint's name lookup must not run on
     *  the main thread. */
    private synchronized void startTunnel() {
        if (running != null || starter != null) return;
        cancelled = false;
        STATUS.set(ServiceStatus.State.CONNECTING, "");
        starter = new Thread(new Runnable() {
            @Override
            public void run() {
                try {
                    Running r = establish();
                    boolean stop;
                    synchronized (QuicstepVpnService.this) {
                        stop = cancelled;
                        if (!stop) running = r;
                        starter = null;
                    }
                    if (stop) tearDown(r);
                } catch (ConfigException | IOException | RuntimeException e) {
                    Log.e(TAG, "cannot start the VPN", e);
                    STATUS.set(ServiceStatus.State.FAILED, e.getMessage());
                    synchronized (QuicstepVpnService.this) {
                        starter = null;
                    }
                    stopSelf();
                }
            }
        }, "qs-vpn-start");
        starter.start();
    }

    private Running establish() throws ConfigException, IOException {
        TunnelSettings settings = new TunnelSettings(getFilesDir());
        WgQuickConfig config = settings.config();
        List<String> excluded = settings.exclusions();
        final EngineCommand cmd = new EngineCommand(getApplicationInfo().nativeLibraryDir, getFilesDir().getPath());
        // Before establish(): the lookup goes out on the phone's network, and the engine
        // never resolves names.
        WgQuickConfig resolved = new EndpointResolver(EndpointResolver.SYSTEM, true).resolve(config);
        TunnelSettings.writeEngineConfig(resolved, cmd.wgConfig);

        final AndroidLocalStreams streams = new AndroidLocalStreams();
        Running r = new Running();
        r.protect = new ProtectServer(streams.listen(cmd.protectSocket), new VpnProtector(this),
                new ProtectServer.Log() {
                    @Override
                    public void error(String message) {
                        Log.e(TAG, message);
                    }
                });
        new Thread(r.protect, "qs-protect").start();

        TunnelPlan plan = TunnelPlan.of(resolved, getPackageName(), excluded);
        Builder b = new Builder().setSession("QUICstep").setMtu(plan.mtu);
        for (InetNetwork a : plan.addresses) b.addAddress(a.address, a.prefix);
        for (InetAddress d : plan.dnsServers) b.addDnsServer(d);
        for (String d : plan.searchDomains) b.addSearchDomain(d);
        for (InetNetwork route : plan.routes) b.addRoute(route.address, route.prefix);
        for (String app : plan.disallowedApps) {
            try {
                b.addDisallowedApplication(app);
            } catch (PackageManager.NameNotFoundException e) {
                Log.w(TAG, "excluded app " + app + " is not installed");
            }
        }
        final ParcelFileDescriptor tun = b.establish();
        if (tun == null) {
            r.protect.close();
            throw new IOException("VpnService.establish() gave no TUN: the VPN permission was revoked");
        }
        r.tun = tun;
        controlSocket = cmd.controlSocket;
        r.supervisor = new EngineSupervisor(new ProcessLauncher(new File(getFilesDir(), "engine.log")), cmd.argv(),
                new EngineSupervisor.TunSender() {
                    @Override
                    public void sendTun() throws IOException {
                        FdProtocol.send(streams, cmd.tunSocket, tun.getFileDescriptor(), 2000);
                    }
                },
                EngineSupervisor.SYSTEM_CLOCK, EngineSupervisor.defaultBackoff(), STATUS);
        r.supervisor.start();
        r.network = followNetwork(new StatusClient(streams, cmd.controlSocket, 2000));
        return r;
    }

    /** Wi-Fi to cellular, a new Wi-Fi: the VPN's underlying network follows, and the engine
     *  is told (its relays and its helper's socket are opened again on the new network, so
     *  servers see the new address and migrate). This app is excluded from its own VPN, so
     *  its default network is the phone's real one. */
    private ConnectivityManager.NetworkCallback followNetwork(final StatusClient control) {
        final DefaultNetworkTracker tracker = new DefaultNetworkTracker();
        ConnectivityManager.NetworkCallback cb = new ConnectivityManager.NetworkCallback() {
            @Override
            public void onAvailable(Network network) {
                setUnderlyingNetworks(new Network[] {network});
                if (!tracker.available(network.getNetworkHandle())) return;
                new Thread(new Runnable() {
                    @Override
                    public void run() {
                        try {
                            control.networkChanged();
                        } catch (IOException e) {
                            // An engine being restarted starts on the new network anyway.
                            Log.w(TAG, "telling the engine of the new network: " + e.getMessage());
                        }
                    }
                }, "qs-network").start();
            }

            @Override
            public void onLost(Network network) {
                tracker.lost(network.getNetworkHandle());
                if (tracker.offline()) setUnderlyingNetworks(null);
            }
        };
        getSystemService(ConnectivityManager.class).registerDefaultNetworkCallback(cb);
        return cb;
    }

    private void stopTunnel() {
        Running r;
        synchronized (this) {
            r = running;
            running = null;
            if (starter != null) cancelled = true; // the starter tears down what it made
        }
        if (r != null) tearDown(r);
    }

    private void tearDown(Running r) {
        if (r.network != null) {
            getSystemService(ConnectivityManager.class).unregisterNetworkCallback(r.network);
        }
        r.supervisor.stop();
        try {
            r.supervisor.join(3000);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
        try {
            r.protect.close();
        } catch (IOException e) {
            Log.w(TAG, "closing the protect socket: " + e.getMessage());
        }
        try {
            r.tun.close(); // the VPN ends with its TUN
        } catch (IOException e) {
            Log.w(TAG, "closing the TUN: " + e.getMessage());
        }
        controlSocket = null;
        STATUS.set(ServiceStatus.State.OFF, "");
    }
}
