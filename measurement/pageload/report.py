"""The report: medians, ratios, targets and plots from rounds.csv, each next to the paper's
figure (values of the paper, "QUICstep: Evaluating connection migration based QUIC
censorship circumvention", §4.4, Tables 2-5, typed in below)."""
import csv
import os
import statistics
from collections import defaultdict

from measurement.pageload import batch_record, corpus as corpus_lib

import matplotlib
matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

MODES = ("native", "full VPN", "QUICstep")
COLORS = {"native": "tab:green", "full VPN": "tab:red", "QUICstep": "tab:blue"}
SIZES = ("10KB", "100KB", "1MB", "10MB")
RATES = ("1", "5", "10", "0")
RATE_LABEL = {"1": "1 Mbit/s", "5": "5 Mbit/s", "10": "10 Mbit/s", "0": "unlimited", "": "profile"}

# Paper Table 5 (quic_client file download time, London client, Ohio provider):
# rate -> size -> (native ms, VPN ms, QUICstep ms). The 1 Mbit/s rows are not in the text.
PAPER_T5 = {
    "5": {"10KB": (98.97, 926.26, 790.41), "100KB": (145.11, 1411.53, 837.77),
          "1MB": (277.4, 3128.94, 971.22), "10MB": (1272.28, 18894.73, 1962.12)},
    "10": {"10KB": (97.22, 928.26, 791.27), "100KB": (138.41, 1409.3, 830.78),
           "1MB": (262.29, 2559.01, 956.57), "10MB": (1040.3, 10431.35, 1737.8)},
    "0": {"10KB": (104.99, 924.11, 790.55), "100KB": (157.57, 1404.99, 844.25),
          "1MB": (351.62, 2413.92, 1038.42), "10MB": (999.588, 3875.32, 1674.96)},
}
# Paper Tables 2 and 4: QUICstep/VPN page-load ratio (www.youtube.com) at 1, 5, 10 Mbit/s,
# unlimited, for the client/provider pairs the lab's profiles model.
PAPER_T4 = {
    "london-ohio": (0.088, 0.458, 0.588, 0.996), "london-frankfurt": (0.070, 0.340, 0.616, 0.898),
    "london-tokyo": (0.124, 0.682, 0.976, 1.553), "newjersey-ohio": (0.147, 0.882, 0.977, 0.973),
    "newjersey-seoul": (0.265, 0.750, 0.834, 0.776), "osaka-tokyo": (0.079, 0.269, 0.449, 0.971),
    "osaka-ohio": (0.134, 0.519, 0.751, 0.965),
    "newjersey-ireland": (0.210, 0.921, 1.194, 1.065), "newjersey-frankfurt": (0.213, 0.952, 1.216, 1.174),
    "osaka-frankfurt": (0.255, 0.719, 1.015, 1.273),
}
# Paper Table 3 (5 Mbit/s, London client): provider -> (QS/VPN default, QS/VPN DNS-optimised,
# QS/native default, QS/native DNS-optimised).
PAPER_T3 = {"ohio": (0.458, 0.449, 1.847, 1.175), "tokyo": (0.682, 0.301, 3.842, 2.444),
            "frankfurt": (0.340, 0.438, 1.328, 0.997)}


def read(csv_path):
    with open(csv_path) as f:
        return list(csv.DictReader(f))


def med(values):
    return statistics.median(values) if values else float("nan")


class Data:
    def __init__(self, rows):
        self.rows = rows
        self.ok = [r for r in rows if r["ok"] == "1"]
        self.by = defaultdict(list)
        for r in self.ok:
            self.by[(r["experiment"], r["profile"], r["channel_rate_mbit"], r["page"], r["mode"])].append(r)

    def values(self, key, field):
        return [float(r[field]) for r in self.by.get(key, []) if r[field] != ""]

    def median(self, key, field):
        return med(self.values(key, field))

    def keys(self, experiment):
        return sorted({k[:4] for k in self.by if k[0] == experiment})

    def traffic_ratios(self, k4):
        """Per round: QUICstep channel bytes / full-VPN channel bytes (the paper's traffic
        ratio), for the rounds where both loads succeeded."""
        vpn = {r["round"]: float(r["channel_bytes"]) for r in self.by.get(k4 + ("full VPN",), [])}
        return [float(r["channel_bytes"]) / vpn[r["round"]] for r in self.by.get(k4 + ("QUICstep",), [])
                if vpn.get(r["round"])]


def fmt(x, digits=3):
    return "–" if x != x else f"{x:.{digits}f}"


def ms(x):
    return "–" if x != x else f"{x:,.0f}"


def cdf(ax, values, **kw):
    v = sorted(values)
    if v:
        ax.step(v, [(i + 1) / len(v) for i in range(len(v))], where="post", **kw)


def plot_cdfs(data, groups, path, title):
    """groups: [(label, key4)] -> one row per group, TTFB and PLT CDFs per mode."""
    fig, axes = plt.subplots(len(groups), 2, figsize=(10, 2.4 * len(groups) + 0.6), squeeze=False)
    for i, (label, k4) in enumerate(groups):
        for j, field in enumerate(("ttfb_ms", "plt_ms")):
            ax = axes[i][j]
            for mode in MODES:
                cdf(ax, data.values(k4 + (mode,), field), label=mode, color=COLORS[mode])
            ax.set_title(f"{label}: {'TTFB' if j == 0 else 'PLT'}", fontsize=9)
            ax.set_xlabel("ms", fontsize=8)
            ax.set_ylim(0, 1.02)
            ax.grid(alpha=0.3)
    if axes[0][0].get_legend_handles_labels()[0]:
        axes[0][0].legend(fontsize=8)
    fig.suptitle(title, fontsize=10)
    fig.tight_layout()
    fig.savefig(path, dpi=90)
    plt.close(fig)


def heatmap(ax, matrix, rows, cols, title):
    import numpy as np
    m = np.array(matrix, dtype=float)
    im = ax.imshow(m, cmap="RdYlGn_r", vmin=0, vmax=1.2)
    ax.set_xticks(range(len(cols)), cols, fontsize=8)
    ax.set_yticks(range(len(rows)), rows, fontsize=8)
    for i in range(len(rows)):
        for j in range(len(cols)):
            ax.text(j, i, "n/a" if m[i, j] != m[i, j] else f"{m[i, j]:.2f}", ha="center",
                    va="center", fontsize=8)
    ax.set_title(title, fontsize=9)
    return im


def write(csv_path, out):
    data = Data(read(csv_path))
    md = ["# Page-load experiments: measured in the lab, next to the paper", ""]
    md += ["Generated by `measurement/pageload/run_experiments.py` from `rounds.csv` "
           f"({len(data.rows)} page loads, {len(data.ok)} succeeded). Every number is a median "
           "over the rounds of one batch; the three modes alternate round by round. TTFB = "
           "responseStart − navigationStart, PLT = domComplete − responseStart (Navigation "
           "Timing, as in the paper). Channel bytes: IP bytes of the WireGuard packets at the "
           "provider during the load (capture), both directions. Which commit and quicstepd "
           "config each batch ran: \"What each batch ran\" at the end.", ""]
    failed = [r for r in data.rows if r["ok"] != "1"]
    if failed:
        md += [f"Failed loads ({len(failed)}): " + "; ".join(
            f"{r['experiment']}/{r['profile']}/{r['channel_rate_mbit']}/{r['mode']}/{r['page']}: "
            f"{r['error']}" for r in failed[:10]), ""]
    non_h3 = [r for r in data.ok if r["protocol"] != "h3" or r["non_h3_responses"] not in ("0", "")]
    qs = [r for r in data.ok if r["mode"].startswith("QUICstep")]
    migrated = [r for r in qs if r["qs_moved_native"] not in ("", "0")]
    md += [f"Checks: {len(data.ok) - len(non_h3)}/{len(data.ok)} successful loads used h3 for "
           "the document and every resource (DevTools `Network.responseReceived` protocol, "
           "Navigation Timing `nextHopProtocol`); "
           "QUICstep loads that moved at least one flow to the native path (`quicstepctl "
           "status` watchdog.moved_native, before/after each load): " + ", ".join(
               f"{label} {sum(r in migrated for r in qs if r['mode'] == label)}/"
               f"{sum(r['mode'] == label for r in qs)}" for label in sorted({r['mode'] for r in qs}))
           + ".", ""]
    md += table5(data, out)
    md += targets(data)
    md += table2(data, out)
    md += table3(data, out)
    md += channel_load(data, out)
    md += diagnosis(data)
    md += hold(data, out)
    md += bound(data)
    md += think(data)
    md += native_paths(data)
    md += proxy_channel(data)
    md += corpus(data, out)
    md += timelines(os.path.join(out, "diagnosis.csv"))
    md += batch_record.section(data.rows, os.path.join(os.path.dirname(csv_path), "batches.csv"),
                               RATE_LABEL)
    with open(os.path.join(out, "REPORT.md"), "w") as f:
        f.write("\n".join(md) + "\n")


def table5(data, out):
    keys = [k for k in data.keys("table5")]
    if not keys:
        return []
    profile = keys[0][1]
    md = ["## Sizes × channel rate (paper Table 5, Figure 8)", "",
          f"Profile `{profile}` (the paper's default: London client, Ohio provider) with "
          "`--channel-rate` 1, 5, 10 and unlimited; single-file pages. The paper's Table 5 "
          "times quic_client file downloads, not browser PLT; its 1 Mbit/s rows are not in the "
          "text; paper Table 5 times include the handshake, so the TTFB+PLT column is the closer "
          "match to its QUICstep/VPN ratio.", "",
          "| rate | size | native PLT ms | VPN PLT ms | QUICstep PLT ms | QS/VPN | paper | "
          "QS/native | paper | QS − native ms | paper | native/VPN/QS TTFB ms | "
          "QS/VPN TTFB+PLT | rounds |",
          "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|"]
    ratio = [[float("nan")] * len(RATES) for _ in SIZES]
    paper = [[float("nan")] * len(RATES) for _ in SIZES]
    for j, rate in enumerate(RATES):
        for i, size in enumerate(SIZES):
            k4 = ("table5", profile, rate, size)
            n, v, q = (data.median(k4 + (m,), "plt_ms") for m in MODES)
            t = [data.median(k4 + (m,), "ttfb_ms") for m in MODES]
            if n != n and v != v:
                continue
            p = PAPER_T5.get(rate, {}).get(size)
            ratio[i][j] = q / v
            if p:
                paper[i][j] = p[2] / p[1]
            md.append(f"| {RATE_LABEL[rate]} | {size} | {ms(n)} | {ms(v)} | {ms(q)} | {fmt(q / v)} | "
                      f"{fmt(p[2] / p[1]) if p else '–'} | {fmt(q / n)} | {fmt(p[2] / p[0]) if p else '–'} | "
                      f"{ms(q - n)} | {ms(p[2] - p[0]) if p else '–'} | "
                      f"{' / '.join(ms(x) for x in t)} | {fmt((q + t[2]) / (v + t[1]))} | "
                      f"{len(data.by.get(k4 + ('QUICstep',), []))} |")
    fig, axes = plt.subplots(1, 2, figsize=(10, 3.6))
    cols = [RATE_LABEL[r] for r in RATES]
    heatmap(axes[0], ratio, SIZES, cols, "measured: QUICstep / VPN PLT")
    im = heatmap(axes[1], paper, SIZES, cols, "paper Table 5: QUICstep / VPN")
    fig.colorbar(im, ax=axes, shrink=0.8)
    fig.savefig(os.path.join(out, "table5_ratio_heatmap.png"), dpi=90)
    plt.close(fig)
    groups = [(f"{s} @ 5 Mbit/s", ("table5", profile, "5", s)) for s in SIZES]
    plot_cdfs(data, groups, os.path.join(out, "table5_cdf_5mbit.png"),
              f"TTFB and PLT per mode, {profile}, channel 5 Mbit/s")
    md += ["", "| measured | paper (Figure 8 / Table 5) |", "|---|---|",
           "| ![](table5_ratio_heatmap.png) | QUICstep/VPN at 5, 10 Mbit/s, unlimited: "
           "10 KB 0.853 / 0.852 / 0.855; 100 KB 0.594 / 0.589 / 0.601; 1 MB 0.310 / 0.374 / "
           "0.430; 10 MB 0.104 / 0.167 / 0.432 (right panel) |", "",
           "![TTFB and PLT CDFs at 5 Mbit/s](table5_cdf_5mbit.png)", ""]
    return md


def targets(data):
    keys = data.keys("table5")
    if not keys:
        return []
    profile = keys[0][1]

    def r(size, a, b):
        k4 = ("table5", profile, "5", size)
        return data.median(k4 + (a,), "plt_ms") / data.median(k4 + (b,), "plt_ms")

    def reduction(size):
        tr = data.traffic_ratios(("table5", profile, "5", size))
        return 1 - med(tr) if tr else float("nan")

    checks = [("QUICstep/VPN PLT at 1 MB", r("1MB", "QUICstep", "full VPN"), "≤ 0.30", 0.30, "0.310"),
              ("QUICstep/VPN PLT at 10 MB", r("10MB", "QUICstep", "full VPN"), "≤ 0.10", 0.10, "0.104"),
              ("QUICstep/native PLT at 10 MB", r("10MB", "QUICstep", "native"), "≤ 1.3", 1.3, "1.542")]
    def total(size, a, b):
        k4 = ("table5", profile, "5", size)
        return sum(data.median(k4 + (a,), f) for f in ("ttfb_ms", "plt_ms")) / \
            sum(data.median(k4 + (b,), f) for f in ("ttfb_ms", "plt_ms"))

    checks += [("QUICstep/VPN TTFB+PLT at 1 MB (informative)", total("1MB", "QUICstep", "full VPN"),
                "≤ 0.30", 0.30, "0.310"),
               ("QUICstep/VPN TTFB+PLT at 10 MB (informative)", total("10MB", "QUICstep", "full VPN"),
                "≤ 0.10", 0.10, "0.104"),
               ("QUICstep/native TTFB+PLT at 10 MB (informative)", total("10MB", "QUICstep", "native"),
                "≤ 1.3", 1.3, "1.542")]
    md = ["## Targets (5 Mbit/s, `" + profile + "`)", "",
          "The targets are on PLT (domComplete − responseStart, the paper's page-load time); the "
          "TTFB+PLT rows add the first byte (the paper's Table 5 download times include the "
          "handshake).", "",
          "| target | measured | goal | paper | met |", "|---|---|---|---|---|"]
    for name, v, goal, lim, paper in checks:
        md.append(f"| {name} | {fmt(v)} | {goal} | {paper} | {'yes' if v <= lim else 'NO'} |")
    for size in ("1MB", "10MB"):
        v = reduction(size)
        md.append(f"| channel-load reduction at {size} (1 − median traffic ratio) | "
                  f"{'–' if v != v else f'{100 * v:.1f}%'} | ≥ 97% | 93% (median, 100 sites) | "
                  f"{'yes' if v >= 0.97 else 'NO'} |")
    return md + [""] + never_slower_targets(data)


def never_slower_targets(data):
    """The "never slower than a full VPN" targets, each cell of the `table5` batch (every size
    at every channel rate) and of the `bound` batch (its permissive addressing: the server sees
    no address change), on TTFB + PLT medians."""
    cells = sorted(data.keys("table5"), key=lambda k: (RATES.index(k[2]), SIZES.index(k[3])))
    if not cells:
        return []

    def total(k4, mode):
        return data.median(k4 + (mode,), "ttfb_ms") + data.median(k4 + (mode,), "plt_ms")

    def where(k4):
        return f"{k4[3]} at {RATE_LABEL[k4[2]]}"

    def rounds(k4, modes):
        return min(len(data.values(k4 + (m,), "plt_ms")) for m in modes)

    def worst(keys, ratio):
        pairs = [(ratio(k), k) for k in keys]
        return max(pairs, key=lambda p: p[0] if p[0] == p[0] else -1)

    five = [k for k in cells if k[2] == "5"]
    md = ["### The \"never slower than a full VPN\" targets", "",
          "TTFB + PLT medians per cell; the `table5` batch has every size at every channel rate "
          f"({min(rounds(k, MODES) for k in cells)}–{max(rounds(k, MODES) for k in cells)} "
          "rounds a cell), the `bound` batch 10 KB–1 MB at 5 Mbit/s and unlimited (10 rounds) "
          "with the same daemon under permissive addressing beside the default (\"What the "
          "move costs, bounded\", below). Where the default misses a target, the permissive "
          "row shows whether the router or the server's handling of the address change costs "
          "it.", "",
          "| target | goal | cells met | worst cell | worst | met |", "|---|---|---|---|---|---|"]

    def row(name, goal, keys, ratio, limit):
        vals = [ratio(k) for k in keys]
        v, k = worst(keys, ratio)
        met = sum(x <= limit for x in vals)
        md.append(f"| {name} | {goal} | {met} of {len(vals)} | {where(k)} | {fmt(v)} | "
                  f"{'yes' if met == len(vals) else 'NO'} |")

    row("QUICstep/native, 5 Mbit/s, each size", "≤ 1.10", five,
        lambda k: total(k, "QUICstep") / total(k, "native"), 1.10)
    row("QUICstep/VPN, every size and rate", "≤ 1.00", cells,
        lambda k: total(k, "QUICstep") / total(k, "full VPN"), 1.00)
    row("QUICstep TTFB / VPN TTFB, every size and rate", "≤ 1.05", cells,
        lambda k: data.median(k + ("QUICstep",), "ttfb_ms") / data.median(k + ("full VPN",), "ttfb_ms"),
        1.05)
    bound_cells = sorted(data.keys("bound"), key=lambda k: (RATES.index(k[2]), SIZES.index(k[3])))
    if bound_cells:
        row("`bound`: QUICstep/native", "≤ 1.10", bound_cells,
            lambda k: total(k, "QUICstep") / total(k, "native"), 1.10)
        row("`bound`: permissive/native (no address change)", "≤ 1.10", bound_cells,
            lambda k: total(k, PERMISSIVE) / total(k, "native"), 1.10)
        row("`bound`: QUICstep/VPN", "≤ 1.00", bound_cells,
            lambda k: total(k, "QUICstep") / total(k, "full VPN"), 1.00)
        row("`bound`: permissive/VPN (no address change)", "≤ 1.00", bound_cells,
            lambda k: total(k, PERMISSIVE) / total(k, "full VPN"), 1.00)
    return md + [""]


def table2(data, out):
    keys = [k for k in data.keys("table2")]
    if not keys:
        return []
    md = ["## Provider distance (paper Tables 2 and 4, Figures 5 and 6)", "",
          "Profiles of lab/profiles.toml (RTTs from PROFILES.md; server near the provider, as when "
          "DNS is resolved through the channel), channel 5 Mbit/s. The paper loaded "
          "www.youtube.com (3.6 MB through the VPN); here a 1 MB single-file page and a page of "
          "60 resources (~0.96 MB) from two origins.", "",
          "| profile | page | native PLT | VPN PLT | QUICstep PLT | QS/VPN | paper QS/VPN (5 Mbit/s) | "
          "QS/native | native/VPN/QS TTFB ms |", "|---|---|---|---|---|---|---|---|---|"]
    for _, profile, rate, page in keys:
        k4 = ("table2", profile, rate, page)
        n, v, q = (data.median(k4 + (m,), "plt_ms") for m in MODES)
        t = [data.median(k4 + (m,), "ttfb_ms") for m in MODES]
        p = PAPER_T4.get(profile)
        md.append(f"| {profile} | {page} | {ms(n)} | {ms(v)} | {ms(q)} | {fmt(q / v)} | "
                  f"{fmt(p[1]) if p else '–'} | {fmt(q / n)} | {' / '.join(ms(x) for x in t)} |")
    groups = [(p, ("table2", p, r, "1MB")) for _, p, r, pg in keys if pg == "1MB"]
    plot_cdfs(data, groups, os.path.join(out, "table2_cdf_1MB.png"),
              "TTFB and PLT per mode by client/provider location, 1 MB page, 5 Mbit/s")
    md += ["", "| measured | paper |", "|---|---|",
           "| ![](table2_cdf_1MB.png) | Figures 5 (TTFB CDF) and 6 (PLT CDF): QUICstep's TTFB "
           "close to the VPN's, its PLT well below the VPN's, near native when client and "
           "provider are close |", ""]
    return md


def table3(data, out):
    keys = [k for k in data.keys("table3")]
    if not keys:
        return []
    md = ["## DNS-optimised: the server near the client (paper Table 3, Figure 9)", "",
          "Profiles `*-near`: the client reaches a server close to itself (2 ms), the provider is "
          "far from both; the default (server near the provider) is the same pair in Table 2's "
          "batches.", "",
          "| provider | page | QS/VPN default | QS/VPN near | paper default / optimised | "
          "QS/native default | QS/native near | paper default / optimised | TTFB VPN / QS (near) ms |",
          "|---|---|---|---|---|---|---|---|---|"]
    groups = []
    for _, profile, rate, page in keys:
        base = profile.removesuffix("-near")
        far = ("table2", base, rate, page)
        near = ("table3", profile, rate, page)
        fn, fv, fq = (data.median(far + (m,), "plt_ms") for m in MODES)
        nn, nv, nq = (data.median(near + (m,), "plt_ms") for m in MODES)
        p = PAPER_T3.get(base.split("-")[-1])
        tv, tq = (data.median(near + (m,), "ttfb_ms") for m in ("full VPN", "QUICstep"))
        md.append(f"| {base} | {page} | {fmt(fq / fv)} | {fmt(nq / nv)} | "
                  f"{f'{p[0]} / {p[1]}' if p else '–'} | {fmt(fq / fn)} | {fmt(nq / nn)} | "
                  f"{f'{p[2]} / {p[3]}' if p else '–'} | {ms(tv)} / {ms(tq)} |")
        if page == "1MB":
            groups.append((profile, near))
    plot_cdfs(data, groups, os.path.join(out, "table3_cdf_1MB.png"),
              "Server near the client (DNS-optimised), 1 MB page, 5 Mbit/s")
    md += ["", "| measured | paper |", "|---|---|",
           "| ![](table3_cdf_1MB.png) | Figure 9: with DNS at the client, QUICstep's TTFB is "
           "below the VPN's |", ""]
    return md


def channel_load(data, out):
    per_size = defaultdict(list)
    for k4 in sorted({k[:4] for k in data.by}):
        per_size[k4[3]] += data.traffic_ratios(k4)
    if not per_size:
        return []
    fig, ax = plt.subplots(figsize=(6, 3.6))
    for page in (*SIZES, "many"):
        cdf(ax, per_size.get(page, []), label=page)
    ax.set_xscale("log")
    ax.set_xlabel("traffic ratio: QUICstep / VPN bytes through the provider")
    ax.set_ylabel("CDF")
    ax.grid(alpha=0.3)
    if ax.get_legend_handles_labels()[0]:
        ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(os.path.join(out, "channel_load_cdf.png"), dpi=90)
    plt.close(fig)
    md = ["## Channel load (paper §4.4.3, Figure 7)", "",
          "| page | load pairs | median traffic ratio | load reduction | median VPN channel bytes | "
          "median QUICstep channel bytes |", "|---|---|---|---|---|---|"]
    for page in (*SIZES, "many"):
        tr = per_size.get(page, [])
        if not tr:
            continue
        vpn = med([float(r["channel_bytes"]) for r in data.ok if r["page"] == page and r["mode"] == "full VPN"])
        qsb = med([float(r["channel_bytes"]) for r in data.ok if r["page"] == page and r["mode"] == "QUICstep"])
        md.append(f"| {page} | {len(tr)} | {fmt(med(tr), 4)} | {100 * (1 - med(tr)):.1f}% | "
                  f"{vpn:,.0f} | {qsb:,.0f} |")
    md += ["", "| measured | paper |", "|---|---|",
           "| ![](channel_load_cdf.png) | Figure 7: median load reduction 93% over 100 sites; "
           "www.youtube.com 3.634 MB vs 96 KB (97.4%) |", ""]
    return md


def profile_rtts():
    """profile -> client_server_rtt_ms, from lab/profiles.toml."""
    import tomllib
    path = os.path.join(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))),
                        "lab", "profiles.toml")
    with open(path, "rb") as f:
        doc = tomllib.load(f)
    return {name: p.get("client_server_rtt_ms") for name, p in doc.get("profiles", {}).items()}


def diagnosis(data):
    """Where QUICstep's time goes: its extra time over native split into TTFB (handshake
    through the channel) and PLT (path validation, congestion state after the move)."""
    md = ["## Where QUICstep's extra time goes", "",
          "QUICstep − native, medians per batch: ΔTTFB is the handshake through the channel "
          "(DNS and the QUIC handshake cross the client–provider path); ΔPLT is what remains "
          "after the first byte (the move to the native path: path validation, and the "
          "congestion controller's state after the move). ΔPLT that stays flat across sizes is a "
          "fixed migration cost; ΔPLT that grows with size would be a throughput loss after "
          "the move.", "",
          "The last column divides QUICstep's extra TTFB over the VPN (same handshake path) by "
          "the profile's client–server RTT: about one RTT means the first response waited for "
          "path validation on the new path; two, that the first packets sent natively (the "
          "request among them) were not taken by the server and were recovered by "
          "retransmission.", "",
          "| experiment | profile | rate | page | ΔTTFB ms | ΔPLT ms | VPN−native ΔTTFB ms | "
          "client–server RTT ms | (QS−VPN) TTFB in RTTs |",
          "|---|---|---|---|---|---|---|---|---|"]
    rtts = profile_rtts()
    # (The proxy batch has no VPN and no plain QUICstep mode: its own section; the corpus's
    # pages are summed up in theirs, one row per page would be 200 rows here.)
    for k4 in sorted({k[:4] for k in data.by if k[0] not in ("proxy", "corpus")}):
        n_t, v_t, q_t = (data.median(k4 + (m,), "ttfb_ms") for m in MODES)
        n_p, _, q_p = (data.median(k4 + (m,), "plt_ms") for m in MODES)
        rtt = rtts.get(k4[1])
        md.append(f"| {k4[0]} | {k4[1]} | {RATE_LABEL.get(k4[2], k4[2])} | {k4[3]} | {ms(q_t - n_t)} | "
                  f"{ms(q_p - n_p)} | {ms(v_t - n_t)} | {rtt if rtt is not None else '–'} | "
                  f"{fmt((q_t - v_t) / rtt, 1) if rtt else '–'} |")
    return md + [""]


def timelines(path):
    """Medians of diagnose.py's per-load timelines (captures on the client), if it ran."""
    if not os.path.exists(path):
        return []
    rows = read(path)
    fields = ["ttfb_ms", "plt_ms", "hs_channel_ms", "first_native_out_ms", "first_native_in_ms",
              "response_start_ms", "server_short_via_channel_bytes", "data_ms", "data_bytes"]
    md = ["### Timelines from captures on the client (`diagnose.py`)", "",
          "Milliseconds after the client's first Initial, medians: `hs` = the client's last "
          "long-header packet (handshake done on its side); `move out` / `first in` = first "
          "client short header on the native path / first server packet there after it; "
          "`resp` = responseStart; `srv→chan after move` = server short-header bytes still "
          "arriving through the channel after the move; `data` = first→last server data "
          "packet on the path that carried the page.", "",
          "| profile | rate | page | mode | loads | TTFB | PLT | hs | move out | first in | resp | "
          "srv→chan after move B | data ms | data B |", "|" + "---|" * 14]
    groups = defaultdict(list)
    for r in rows:
        groups[(r["profile"], r["channel_rate_mbit"], r["page"], r["mode"])].append(r)
    for (profile, rate, page, mode), rs in sorted(groups.items()):
        vals = []
        for f in fields:
            v = [float(r[f]) for r in rs if r.get(f) not in ("", None, "None")]
            vals.append(ms(med(v)) if v else "–")
        md.append(f"| {profile} | {rate} | {page} | {mode} | {len(rs)} | " + " | ".join(vals) + " |")
    return md + [""]


QUEUE_PATH = "QUICstep queue path"


PERMISSIVE, STAY = "QUICstep permissive", "QUICstep hold 64 packets"


def bound(data):
    """The `bound` batches: what the move costs when the server sees no address change
    (permissive addressing), and when small flows never move (a hold of 64 short headers),
    next to native, the VPN and QUICstep's default."""
    keys = data.keys("bound")
    if not keys:
        return []
    modes = (*MODES, PERMISSIVE, STAY)
    md = ["## What the move costs, bounded (`bound` batches)", "",
          "Profile `london-ohio`, side by side in each round: native, full VPN, QUICstep's default "
          "(stateless addressing: the server sees the client's address change at the move, "
          "validates the new path and resets its congestion controller and RTT estimate, RFC "
          "9000 §8.2, §9.3, §9.4), QUICstep with permissive addressing (the paper's mode: the "
          "provider is made to accept the client's native address, so the server sees one "
          "address throughout and no flow migrates; its answers to the handshake come natively, "
          "so its channel bytes are the client's only) and QUICstep holding each flow on the "
          "channel for its first 64 short headers (a download's ACKs: about 150 KB, so the "
          "10 KB and 100 KB pages never move). Medians of TTFB + PLT (ms) and their ratios; "
          "channel bytes from the provider's capture.", "",
          "| rate | page | native / VPN / QS / permissive / hold 64 ms | QS/VPN | permissive/VPN "
          "| hold 64/VPN | QS/native | permissive/native | hold 64/native | channel KB VPN / QS / "
          "permissive / hold 64 | rounds |",
          "|---|---|---|---|---|---|---|---|---|---|---|"]
    order = lambda k: (RATES.index(k[2]) if k[2] in RATES else 9, SIZES.index(k[3]))  # noqa: E731
    for _, profile, rate, page in sorted(keys, key=order):
        k4 = ("bound", profile, rate, page)
        tot = [data.median(k4 + (m,), "ttfb_ms") + data.median(k4 + (m,), "plt_ms") for m in modes]
        ch = [data.median(k4 + (m,), "channel_bytes") / 1000 for m in modes[1:]]
        rounds = min(len(data.values(k4 + (m,), "plt_ms")) for m in modes)
        md.append(f"| {RATE_LABEL[rate]} | {page} | {' / '.join(ms(x) for x in tot)} | "
                  f"{fmt(tot[2] / tot[1])} | {fmt(tot[3] / tot[1])} | {fmt(tot[4] / tot[1])} | "
                  f"{fmt(tot[2] / tot[0])} | {fmt(tot[3] / tot[0])} | {fmt(tot[4] / tot[0])} | "
                  f"{' / '.join(f'{x:,.0f}' for x in ch)} | {rounds} |")
    rows = [r for r in data.rows if r["experiment"] == "bound" and r["mode"] in (PERMISSIVE, STAY)]
    failed = [r for r in rows if r["qs_failed_back"] not in ("", "0")]
    md += ["", f"Watchdog failures in the two extra modes: {len(failed)} of {len(rows)} loads.", ""]
    return md


def think(data):
    """The `think` batches: pages served with a think time before each response (a server
    computing them), during which a moved flow's path validation can happen."""
    keys = [k for k in {k[:4] for k in data.by} if k[0].startswith("think")]
    if not keys:
        return []
    md = ["## When the server thinks (`think` batches)", "",
          "Profile `london-ohio`, channel 5 Mbit/s; the pages served by quicstep-server (ngtcp2 "
          "0.12.1, as gtlsserver) with `--think-ms`, one batch per value: each response starts that long "
          "after its request arrived, as on a server that computes the page. Native, full VPN "
          "and QUICstep (default config) side by side in each round; medians of TTFB + PLT (ms; "
          "the think time is in every mode's TTFB).", "",
          "| think ms | page | native / VPN / QS ms | QS − native ms | QS/VPN | QS/native | "
          "QS TTFB / VPN TTFB | rounds |",
          "|---|---|---|---|---|---|---|---|"]
    order = lambda k: (int(k[0][5:]), SIZES.index(k[3]))  # noqa: E731
    for k4 in sorted(keys, key=order):
        tot = [data.median(k4 + (m,), "ttfb_ms") + data.median(k4 + (m,), "plt_ms") for m in MODES]
        ttfb = [data.median(k4 + (m,), "ttfb_ms") for m in MODES]
        rounds = min(len(data.values(k4 + (m,), "plt_ms")) for m in MODES)
        md.append(f"| {k4[0][5:]} | {k4[3]} | {' / '.join(ms(x) for x in tot)} | "
                  f"{ms(tot[2] - tot[0])} | {fmt(tot[2] / tot[1])} | {fmt(tot[2] / tot[0])} | "
                  f"{fmt(ttfb[2] / ttfb[1])} | {rounds} |")
    md += ["", "At 100 and 150 ms most of the cost is the server's ngtcp2 0.12.1, not the move: the "
           "response's first flight on the validated path leaves before the server's first RTT "
           "sample there, and its pacer, on the estimate the move reset to 333 ms, holds the next "
           "flight 266 ms (quicstep-server's qlogs). ngtcp2 ≥ 0.14 paces at 1 ms until the first "
           "sample; served that way (`quicstep-server --unpaced-first-flight`, `move_cost.py "
           "--think-ms 100`, 5 rounds side by side) 100 KB costs 1.23× native instead of 1.57×, "
           "1 MB 1.12× instead of 1.34× (`../../results/2026-12-05-pacing.md`)."]
    return md + [""]


def native_paths(data):
    """The `paths` batch: quicstepd's default native path (routed) next to the queue path."""
    keys = data.keys("paths")
    if not keys:
        return []
    modes = ("native", "QUICstep", QUEUE_PATH)
    md = ["## quicstepd's native paths: routed (the default) and queue (`paths` batch)", "",
          "Same profile and rate as the targets; quicstepd with its default config (the routed "
          "native path: policy routing, per-flow rules, the tc guard) and with `native_path = "
          "\"queue\"` (netfilter rules on every packet, the first short headers queued to the "
          "daemon), next to native; no full VPN (the other batches have it).", "",
          "| page | TTFB native / routed / queue ms | PLT native / routed / queue ms | "
          "routed/queue TTFB+PLT | routed − native TTFB+PLT ms | queue − native TTFB+PLT ms | "
          "rounds |", "|---|---|---|---|---|---|---|"]
    for _, profile, rate, page in sorted(keys, key=lambda k: (SIZES + ("many",)).index(k[3])):
        k4 = ("paths", profile, rate, page)
        t = [data.median(k4 + (m,), "ttfb_ms") for m in modes]
        p = [data.median(k4 + (m,), "plt_ms") for m in modes]
        tot = [a + b for a, b in zip(t, p)]
        n = min(len(data.values(k4 + (m,), "plt_ms")) for m in modes)
        md.append(f"| {page} | {' / '.join(ms(x) for x in t)} | {' / '.join(ms(x) for x in p)} | "
                  f"{fmt(tot[1] / tot[2])} | {ms(tot[1] - tot[0])} | {ms(tot[2] - tot[0])} | "
                  f"{n} |")
    return md + [""]


def proxy_channel(data):
    """The `proxy` batch: the user's Shadowsocks client as the full proxy and as QUICstep's
    tproxy channel, next to native."""
    keys = data.keys("proxy")
    if not keys:
        return []
    modes = ("native", "full proxy", "QUICstep proxy")
    md = ["## Against the full proxy: Shadowsocks as QUICstep's channel (`proxy` batch)", "",
          "Where WireGuard is blocked the user's alternative is a proxy client. Debian's "
          "shadowsocks-libev: ss-server at the provider, ss-redir on the client. `full proxy`: "
          "all the client's TCP and UDP handed to ss-redir (the standard tproxy setup); "
          "`QUICstep proxy`: quicstepd with `channel_kind = \"tproxy\"` and its default "
          "config (DNS, TCP and handshakes to ss-redir, the rest native). The channel rate "
          "limits what the provider sends on its uplink (the download leg). Channel bytes: IP "
          "bytes to and from the Shadowsocks server at the provider during the load.", "",
          "| page | TTFB native / proxy / QUICstep ms | PLT native / proxy / QUICstep ms | "
          "QUICstep/proxy TTFB+PLT | QUICstep/native TTFB+PLT | QUICstep TTFB / proxy TTFB | "
          "channel KB proxy / QUICstep | rounds |", "|---|---|---|---|---|---|---|---|"]
    for _, profile, rate, page in sorted(keys, key=lambda k: (SIZES + ("many",)).index(k[3])):
        k4 = ("proxy", profile, rate, page)
        t = [data.median(k4 + (m,), "ttfb_ms") for m in modes]
        p = [data.median(k4 + (m,), "plt_ms") for m in modes]
        tot = [a + b for a, b in zip(t, p)]
        ch = [data.median(k4 + (m,), "channel_bytes") / 1000 for m in modes[1:]]
        n = min(len(data.values(k4 + (m,), "plt_ms")) for m in modes)
        md.append(f"| {page} | {' / '.join(ms(x) for x in t)} | {' / '.join(ms(x) for x in p)} "
                  f"| {fmt(tot[2] / tot[1])} | {fmt(tot[2] / tot[0])} | {fmt(t[2] / t[1])} | "
                  f"{ch[0]:,.0f} / {ch[1]:,.0f} | {n} |")
    return md + [""]


# The paper's Figure 4 (100 QUICstep-compatible domains of the Tranco top 1K, London client,
# Ohio provider at 5 Mbit/s, each domain's median PLT over 20 rounds) and Figure 7 (traffic
# through the provider): what its text says of them (§4.4.2, §4.4.4).
PAPER_F4 = ("most domains' median PLT shorter with QUICstep than through the VPN, by up to "
            "84%")
PAPER_F7_LOAD_REDUCTION = 0.93


def corpus(data, out):
    """The `corpus` batches: 100 web-like pages (corpus.py), per profile. Per page, the median
    over its rounds; then the distribution over pages (the paper's Figure 4 plots each
    domain's median PLT)."""
    keys = data.keys("corpus")
    if not keys:
        return []
    profiles = sorted({k[1] for k in keys}, key=lambda p: (p != "london-ohio", p))
    md = ["## A corpus of 100 web-like pages (paper Figure 4 and Figure 7; `corpus` batches)", "",
          "The pages of `corpus.py` (seed 0: sizes, request counts, resource mix and origins "
          "after HTTP Archive's 2025 percentiles; README, \"A corpus of 100 pages\"), served "
          "over HTTP/3 from the lab's server addresses: gtlsserver on the migrating origins' "
          "addresses, quicstep-server `--migration none` on `nomigration.test`'s (a quarter "
          "of the page-origin pairs). Channel 5 Mbit/s. Per page: the median over its rounds; "
          "the table gives the median over the pages of those, and of each page's ratio. "
          "Load reduction: 1 − QUICstep's channel bytes / the VPN's, per page and round "
          "(the non-migrating origins' bytes stay on the channel). With one round, each mode "
          "loads all the pages in turn (the order rotates per round), minutes apart. "
          f"The paper: {PAPER_F4}; median load reduction {PAPER_F7_LOAD_REDUCTION:.0%}.", "",
          "| profile | pages | PLT native / VPN / QUICstep ms | QS/VPN PLT | QS/VPN TTFB+PLT | "
          "QS/native TTFB+PLT | QS TTFB / VPN TTFB | pages faster than VPN (TTFB+PLT) | "
          "largest PLT reduction | load reduction (median, p10) | rounds |",
          "|---|---|---|---|---|---|---|---|---|---|---|"]
    per_profile = {}
    for profile in profiles:
        pages_ = sorted({k[3] for k in keys if k[1] == profile})
        rate = next(k[2] for k in keys if k[1] == profile)
        rows = []
        for page in pages_:
            k4 = ("corpus", profile, rate, page)
            t = [data.median(k4 + (m,), "ttfb_ms") for m in MODES]
            p = [data.median(k4 + (m,), "plt_ms") for m in MODES]
            if any(x != x for x in t + p):
                continue
            rows.append((page, t, p, data.traffic_ratios(k4),
                         min(len(data.values(k4 + (m,), "plt_ms")) for m in MODES)))
        if not rows:
            continue
        per_profile[profile] = rows
        plt_m = [med([r[2][i] for r in rows]) for i in range(3)]
        qs_vpn = [r[2][2] / r[2][1] for r in rows]
        tot = [[a + b for a, b in zip(r[1], r[2])] for r in rows]
        tot_vpn = [x[2] / x[1] for x in tot]
        tot_nat = [x[2] / x[0] for x in tot]
        ttfb = [r[1][2] / r[1][1] for r in rows]
        reductions = sorted(1 - x for r in rows for x in r[3])
        p10 = reductions[len(reductions) // 10] if reductions else float("nan")
        md.append(f"| {profile} | {len(rows)} | {' / '.join(ms(x) for x in plt_m)} | "
                  f"{fmt(med(qs_vpn))} | {fmt(med(tot_vpn))} | {fmt(med(tot_nat))} | "
                  f"{fmt(med(ttfb))} | {sum(x < 1 for x in tot_vpn)}/{len(rows)} | "
                  f"{1 - min(qs_vpn):.0%} | {med(reductions):.1%}, {p10:.1%} | "
                  f"{min(r[4] for r in rows)}–{max(r[4] for r in rows)} |")
    md.append("")
    if per_profile:
        md += corpus_by_weight(data, per_profile)
        md += corpus_by_nonmigrating(per_profile)
        path = os.path.join(out, "corpus_cdf.png")
        fig, axes = plt.subplots(len(per_profile), 3, figsize=(13, 2.8 * len(per_profile) + 0.6),
                                 squeeze=False)
        for i, (profile, rows) in enumerate(per_profile.items()):
            for j, (field, label) in enumerate(((1, "TTFB"), (2, "PLT"))):
                ax = axes[i][j]
                for m, mode in enumerate(MODES):
                    cdf(ax, [r[field][m] for r in rows], label=mode, color=COLORS[mode])
                if label == "PLT":
                    ax.set_xscale("log")
                ax.set_title(f"{profile}: per-page median {label}", fontsize=9)
                ax.set_xlabel("ms", fontsize=8)
            ax = axes[i][2]
            cdf(ax, [r[2][2] / r[2][1] for r in rows], label="QUICstep/VPN PLT",
                color=COLORS["QUICstep"])
            cdf(ax, [(r[1][2] + r[2][2]) / (r[1][1] + r[2][1]) for r in rows],
                label="QUICstep/VPN TTFB+PLT", color="tab:purple")
            ax.axvline(1.0, color="grey", lw=0.8)
            ax.set_title(f"{profile}: per-page ratio", fontsize=9)
            for a in axes[i]:
                a.set_ylim(0, 1.02)
                a.grid(alpha=0.3)
            axes[i][0].legend(fontsize=7)
            axes[i][2].legend(fontsize=7)
        fig.suptitle("Corpus of 100 pages, channel 5 Mbit/s (paper Figure 4: per-domain median "
                     "PLT, VPN and QUICstep)", fontsize=10)
        fig.tight_layout()
        fig.savefig(path, dpi=90)
        plt.close(fig)
        md += ["![corpus CDFs](corpus_cdf.png)", ""]
    return md


def corpus_by_weight(data, per_profile):
    """The corpus's ratios by page weight: where QUICstep gains and where the move costs."""
    size = {r["page"]: int(r["page_bytes"]) for r in data.ok if r["experiment"] == "corpus"}
    return corpus_classes(
        per_profile, "By page weight (medians over the pages in each class):", "weight",
        lambda page: size.get(page, 0),
        ((0, 1 << 20, "< 1 MiB"), (1 << 20, 4 << 20, "1–4 MiB"), (4 << 20, 1 << 40, "≥ 4 MiB")))


def corpus_by_nonmigrating(per_profile):
    """The corpus's ratios by the share of a page's bytes from origins whose server does not
    migrate: those bytes stay on the channel, so they, not the move, set QUICstep/native."""
    share = {p["id"]: corpus_lib.nonmigrating_byte_share(p)
             for p in corpus_lib.plan(seed=0)["pages"]}  # the corpus the harness serves
    return corpus_classes(
        per_profile, "By the share of a page's bytes from non-migrating origins (they stay on "
        "the channel; medians over the pages in each class):", "non-migrating bytes",
        lambda page: share.get(page, -1),
        ((0, 1e-12, "none"), (1e-12, 0.1, "under 10%"), (0.1, 2, "10% or more")))


def corpus_classes(per_profile, title, column, value_of, bounds):
    """A table of the corpus's median ratios per profile and class: a page is in the class
    (lo, hi, label) when lo <= value_of(page id) < hi."""
    md = [title, "", f"| profile | {column} | pages | QS/VPN TTFB+PLT | QS/native TTFB+PLT |",
          "|---|---|---|---|---|"]
    for profile, rows in per_profile.items():
        for lo, hi, label in bounds:
            sel = [r for r in rows if lo <= value_of(r[0]) < hi]
            if not sel:
                continue
            tot = [[a + b for a, b in zip(r[1], r[2])] for r in sel]
            md.append(f"| {profile} | {label} | {len(sel)} | {fmt(med([x[2] / x[1] for x in tot]))} "
                      f"| {fmt(med([x[2] / x[0] for x in tot]))} |")
    return md + [""]


HOLD = "QUICstep hold 100ms"


def hold(data, out):
    """The `hold` batch: the same loads with quicstepd holding short headers on the channel
    for 100 ms after the first one, next to the default (move at the first short header)."""
    keys = data.keys("hold")
    if not keys:
        return []
    modes = (*MODES, HOLD)
    md = ["## Moving after the handshake: quicstepd's hold (`hold` batch)", "",
          "Same profile and rate as the targets, a fourth mode: quicstepd with `[hold] time_ms = "
          "100` (short headers stay on the channel for 100 ms after the flow's first one, about "
          "one RTT here, so the server has the client's Finished before the move).", "",
          "| page | TTFB native / VPN / QS / QS hold ms | PLT native / VPN / QS / QS hold ms | "
          "QS/VPN PLT | hold/VPN PLT | QS/VPN TTFB+PLT | hold/VPN TTFB+PLT | hold channel bytes |",
          "|---|---|---|---|---|---|---|---|"]
    for _, profile, rate, page in sorted(keys, key=lambda k: (SIZES + ("many",)).index(k[3])):
        k4 = ("hold", profile, rate, page)
        t = [data.median(k4 + (m,), "ttfb_ms") for m in modes]
        p = [data.median(k4 + (m,), "plt_ms") for m in modes]
        tot = [a + b for a, b in zip(t, p)]
        ch = data.median(k4 + (HOLD,), "channel_bytes")
        md.append(f"| {page} | {' / '.join(ms(x) for x in t)} | {' / '.join(ms(x) for x in p)} | "
                  f"{fmt(p[2] / p[1])} | {fmt(p[3] / p[1])} | {fmt(tot[2] / tot[1])} | "
                  f"{fmt(tot[3] / tot[1])} | {ch:,.0f} |")
    hold_rows = [r for r in data.rows if r["experiment"] == "hold" and r["mode"] == HOLD]
    failed = [r for r in hold_rows if r["qs_failed_back"] not in ("", "0")]
    stayed = [r for r in hold_rows if r["qs_moved_native"] == "0"]
    md += ["", f"With the hold, {len(failed)} of {len(hold_rows)} loads had quicstepd's watchdog "
           f"fail the flow back to the channel, and {len(stayed)} loads never moved" +
           (" (after a failure the destination stays in the non-migrating cache until "
            "quicstepd restarts, i.e. the rest of that round here): a flow whose transfer "
            "ended on the channel during the hold has nothing left for the server to send "
            "natively, so no answer arrives on the native path and the watchdog takes it for "
            "a server that does not migrate." if failed or stayed else ".")]
    fig, axes = plt.subplots(1, 2, figsize=(10, 3.4))
    k4 = [k for k in keys if k[3] == "1MB"]
    if k4:
        for j, field in enumerate(("ttfb_ms", "plt_ms")):
            for m in modes:
                cdf(axes[j], data.values(k4[0] + (m,), field), label=m,
                    color=COLORS.get(m, "tab:purple"))
            axes[j].set_title(f"1 MB, {k4[0][1]}, 5 Mbit/s: {'TTFB' if j == 0 else 'PLT'}", fontsize=9)
            axes[j].set_xlabel("ms")
            axes[j].grid(alpha=0.3)
        axes[0].legend(fontsize=8)
        fig.tight_layout()
        fig.savefig(os.path.join(out, "hold_cdf_1MB.png"), dpi=90)
        md += ["", "![hold](hold_cdf_1MB.png)"]
    plt.close(fig)
    return md + [""]
