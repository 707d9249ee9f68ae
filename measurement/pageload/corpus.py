"""A web-like corpus of pages for the page-load harness, from published HTTP Archive figures.

Sources (desktop client: the harness runs desktop Chromium; all pages, home and inner, of
the crawl; KB = bytes / 1024, as HTTP Archive's queries compute it; transfer sizes):

- Web Almanac 2025, Page Weight chapter (https://almanac.httparchive.org/en/2025/page-weight;
  crawl of 2025-06-01, queries sql/2025/page-weight/bytes_per_type.sql and
  request_type_distribution.sql), percentiles p10, p25, p50, p75, p90:
  total bytes 607 / 1,275 / 2,412 / 4,570 / 9,179 KB; requests 27 / 46 / 77 / 122 / 185;
  requests by type: images 5 / 9 / 17 / 32 / 56, CSS 2 / 4 / 8 / 16 / 31, JavaScript
  5 / 11 / 23 / 40 / 67, fonts 0 / 2 / 4 / 7 / 10; bytes by type: HTML 6 / 14 / 35 / 78 /
  152 KB, CSS 10 / 38 / 83 / 161 / 274 KB, JavaScript 106 / 303 / 708 / 1,291 / 2,003 KB,
  images 74 / 333 / 1,058 / 2,896 / 6,856 KB; one font response 9 / 15 / 23 / 47 / 79 KB.
- Web Almanac 2024, Page Weight chapter (https://almanac.httparchive.org/en/2024/page-weight):
  HTML requests 1 / 1 / 2 / 6 / 12 (the 2025 chapter gives only its p50 and p90, the same).
- Web Almanac 2024, Third Parties chapter (https://almanac.httparchive.org/en/2024/third-parties):
  92% of pages include one or more third parties.

Assumptions where no figure was found (measurement/pageload/README.md, "A corpus of 100
pages"): the rank correlation of bytes and requests (0.7); origins per page beyond "92% have
a third party" (the lab has 8 usable names, real pages a median of 22 third parties); the
split of a type's bytes over its files; which origin serves what; the share of origins whose
server does not migrate (0.25: 2 of the 8 names; no measured share exists in this
repository); per-page font bytes (count x one response's size at the page's byte quantile);
and the tails beyond p10 and p90 (log-normal, from the nearest published segment).

plan() is pure (no I/O): it turns a seed into the manifest. write() makes the files, one
htdocs tree per origin; install() puts them where the harness's servers read them."""
import argparse
import base64
import json
import math
import os
import random
import shutil
import statistics
import sys
import zlib

PERCENTILES = (10, 25, 50, 75, 90)
TOTAL_KIB = (607, 1275, 2412, 4570, 9179)
TOTAL_REQUESTS = (27, 46, 77, 122, 185)
TYPE_REQUESTS = {"html": (1, 1, 2, 6, 12), "css": (2, 4, 8, 16, 31), "js": (5, 11, 23, 40, 67),
                 "img": (5, 9, 17, 32, 56), "font": (0, 2, 4, 7, 10)}
TYPE_KIB = {"html": (6, 14, 35, 78, 152), "css": (10, 38, 83, 161, 274),
            "js": (106, 303, 708, 1291, 2003), "img": (74, 333, 1058, 2896, 6856)}
FONT_RESPONSE_KIB = (9, 15, 23, 47, 79)
PAGES_WITH_THIRD_PARTY = 0.92
SOURCES = {
    "totals_and_mix": "https://almanac.httparchive.org/en/2025/page-weight (crawl 2025-06-01, "
                      "desktop, home and inner pages)",
    "html_requests": "https://almanac.httparchive.org/en/2024/page-weight (desktop)",
    "third_parties": "https://almanac.httparchive.org/en/2024/third-parties",
}

# The lab's names (lab/qslab_lib/topology.py, DNS_NAMES) by site. Names of one site share a
# server address. nomigration.test's address (srv2-a) is the lab's non-migrating server;
# blocked.test is left out: the censor's default blocklist (.blocked.test) makes native
# loads of it fail by design.
MIGRATING_SITES = (("open.test", "www.open.test"), ("other.test", "www.other.test"),
                   ("retry.test", "www.retry.test"))
NONMIGRATING_NAMES = ("nomigration.test", "www.nomigration.test")
LAB_ORIGINS = {**{n: "follows" for s in MIGRATING_SITES for n in s},
               **{n: "none" for n in NONMIGRATING_NAMES}}

DEFAULT_PAGES = 100
DEFAULT_NOMIGRATION_SHARE = 0.25
DEFAULT_RANK_CORRELATION = 0.7
SIZE_SIGMA = 1.0  # log-normal spread of file sizes within one type of one page (assumption)
MIN_BYTES = {"html": 200, "css": 64, "js": 64, "img": 128, "font": 256, "other": 64}
EXT = {"html": "html", "css": "css", "js": "js", "img": "png", "font": "woff2", "other": "js"}
TYPES = ("html", "css", "js", "img", "font", "other")
PREFIX = "corpus"


# --- distributions ----------------------------------------------------------------------
def _z(p):
    return statistics.NormalDist().inv_cdf(p)


def quantile(points, u, offset=0.0):
    """The value at probability u (0 < u < 1) of a distribution known by its values at
    PERCENTILES: piecewise linear in (normal score, log(value + offset)), i.e. log-normal
    between two published percentiles; below p10 and above p90 the end segment goes on."""
    zs = [_z(p / 100) for p in PERCENTILES]
    ys = [math.log(v + offset) for v in points]
    z = _z(u)
    k = 0
    while k < len(zs) - 2 and z > zs[k + 1]:
        k += 1
    y = ys[k] + (ys[k + 1] - ys[k]) * (z - zs[k]) / (zs[k + 1] - zs[k])
    return max(0.0, math.exp(y) - offset)


def grid(n):
    """n probabilities k/(n-1) (the ends pulled in to 0.5/n and 1-0.5/n): an empirical
    percentile of n values taken at them (statistics.quantiles, method "inclusive") is the
    published one, up to the interpolation between two neighbours."""
    if n < 2:
        raise ValueError(f"a corpus needs at least 2 pages, not {n}")
    us = [k / (n - 1) for k in range(n)]
    us[0], us[-1] = 0.5 / n, 1 - 0.5 / n
    return us


def empirical(values):
    """{p: value} at PERCENTILES, linear interpolation between order statistics."""
    cuts = statistics.quantiles(values, n=100, method="inclusive")
    return {p: cuts[p - 1] for p in PERCENTILES}


def spearman(a, b):
    def ranks(v):
        order = sorted(range(len(v)), key=lambda i: v[i])
        r = [0.0] * len(v)
        i = 0
        while i < len(order):  # ties share their mean rank
            j = i
            while j + 1 < len(order) and v[order[j + 1]] == v[order[i]]:
                j += 1
            for k in range(i, j + 1):
                r[order[k]] = (i + j) / 2
            i = j + 1
        return r
    return statistics.correlation(ranks(a), ranks(b))


# --- one page's shape ---------------------------------------------------------------------
def _request_counts(u_r):
    """Requests of one page by type at its request quantile; "html" counts the document."""
    total = max(1, round(quantile(TOTAL_REQUESTS, u_r, 1)))
    counts = {t: round(quantile(TYPE_REQUESTS[t], u_r, 1)) for t in TYPE_REQUESTS}
    counts["html"] = max(1, counts["html"])
    while sum(counts.values()) > total:  # rounding, or a type above the total's rank
        t = max((t for t in counts if counts[t] > (1 if t == "html" else 0)),
                key=lambda t: counts[t])
        counts[t] -= 1
    counts["other"] = total - sum(counts.values())
    return counts


def _type_bytes(u_b, total, counts):
    """Byte targets by type summing to `total`: each type at the page's byte quantile, what
    is left to "other"; scaled down when the types alone exceed the total (quantiles of the
    parts do not add up to the quantile of the sum). A type without requests gets nothing."""
    want = {t: quantile(TYPE_KIB[t], u_b) * 1024 for t in TYPE_KIB}
    want["font"] = counts["font"] * quantile(FONT_RESPONSE_KIB, u_b) * 1024
    want = {t: (v if counts[t] else 0.0) for t, v in want.items()}
    want["html"] = max(want["html"], 1.0)
    typed = sum(want.values())
    if typed >= total or counts["other"] == 0:
        return {**{t: v * total / typed for t, v in want.items()}, "other": 0.0}
    return {**want, "other": total - typed}


def _split(rng, target, n, minimum):
    """n integer sizes of log-normal weights, each >= minimum, summing to about target."""
    if n == 0:
        return []
    w = [rng.lognormvariate(0, SIZE_SIGMA) for _ in range(n)]
    s = sum(w)
    return [max(minimum, int(target * x / s)) for x in w]


def _origin_counts(pages, rng, max_origins):
    """Origins per page (the document's included): the fewest-request (1 - 92%) of pages
    have one; the others 2 .. max_origins, rising with their request rank. Never more than
    the page has files to serve from them (fonts and frames stay on its site, _assign)."""
    n = len(pages)
    order = sorted(range(n), key=lambda i: (pages[i]["requests"], rng.random()))
    single = round((1 - PAGES_WITH_THIRD_PARTY) * n)
    rest = order[single:]
    out = [1] * n
    for pos, i in enumerate(rest):
        q = pos / (len(rest) - 1) if len(rest) > 1 else 1.0
        c = pages[i]["counts"]
        movable = c["css"] + c["js"] + c["img"] + c["other"]  # what may leave the site
        out[i] = max(1, min(2 + round((max_origins - 2) * q), 1 + movable))
    return out


def _third_party_slots(n_origins):
    """Third-party origins of a page with n_origins: all but the site's apex and www."""
    return max(0, n_origins - 1 - (1 if n_origins >= 3 else 0))


def _nomigration_counts(n_origins, share, rng):
    """Non-migrating origins per page, so that they are `share` of all (page, origin)
    pairs. Bounds per page: at most the two non-migrating names; at least what the four
    other migrating third-party names leave over."""
    lo = [max(0, _third_party_slots(n) - 4) for n in n_origins]
    hi = [min(2, _third_party_slots(n)) for n in n_origins]
    pairs = sum(n_origins)
    want = round(share * pairs)
    if not sum(lo) <= want <= sum(hi):
        raise ValueError(f"nomigration_share {share} cannot be met by these pages: between "
                         f"{sum(lo) / pairs:.3f} and {sum(hi) / pairs:.3f}")
    slots = [i for i in range(len(n_origins)) for _ in range(hi[i] - lo[i])]
    rng.shuffle(slots)
    k = list(lo)
    for i in slots[:want - sum(lo)]:
        k[i] += 1
    return k


def _origins_of(rng, n_origins, k_nomig):
    """The page's origin names, its document's origin first."""
    site = rng.choice(MIGRATING_SITES)
    if n_origins == 1:
        return [site[0]]
    others = [n for s in MIGRATING_SITES if s is not site for n in s]
    third = rng.sample(NONMIGRATING_NAMES, k_nomig)
    third += rng.sample(others, _third_party_slots(n_origins) - k_nomig)
    rng.shuffle(third)
    names = [site[0], third[0]] + ([site[1]] if n_origins >= 3 else []) + third[1:]
    return names


def _assign(rng, kinds, origins):
    """An origin per subresource: fonts on the document's origin (cross-origin fonts need
    CORS, which gtlsserver does not send); iframes on the page's own site (a cross-site
    frame is another renderer, out of the harness's DevTools session); the rest half to the
    site, half to the third parties, Zipf-weighted. Every origin gets one at least."""
    site = [o for o in origins if o in (origins[0], "www." + origins[0])]
    third = [o for o in origins if o not in site]
    weights = [0.5 / len(site)] * len(site) + [0.5 / (r + 1) for r in range(len(third))]
    pool = site + third
    out = []
    for t in kinds:
        if t == "font":
            out.append(origins[0])
        elif t == "html":
            out.append(rng.choice(site))
        else:
            out.append(rng.choices(pool if third else site, weights if third else None)[0])
    for o in origins[1:]:
        if o in out:
            continue
        load = {x: out.count(x) for x in set(out)}
        movable = [i for i, t in enumerate(kinds) if t not in ("font", "html")
                   and load[out[i]] > 1]
        if not movable:
            raise AssertionError(f"origin {o} gets no resource ({kinds})")
        i = max(movable, key=lambda j: (load[out[j]], j))
        out[i] = o
    return out


# --- the whole corpus ---------------------------------------------------------------------
def _page_shapes(rng, n, rank_correlation):
    """Bytes, requests and their quantiles of n pages. Bytes take the grid's quantiles in a
    random order; requests take them in the order of a latent Gaussian score correlated with
    the bytes' (a Gaussian copula on ranks), so both marginals stay exactly on the grid."""
    us = grid(n)
    u_b = us[:]
    rng.shuffle(u_b)
    rho = 2 * math.sin(math.pi * rank_correlation / 6)  # Spearman -> Pearson, Gaussian
    latent = [rho * _z(u) + math.sqrt(1 - rho * rho) * rng.gauss(0, 1) for u in u_b]
    u_r = [0.0] * n
    for rank, i in enumerate(sorted(range(n), key=lambda i: latent[i])):
        u_r[i] = us[rank]
    pages = []
    for i in range(n):
        counts = _request_counts(u_r[i])
        pages.append({"id": f"p{i:03d}", "u_bytes": u_b[i], "u_requests": u_r[i],
                      "bytes": round(quantile(TOTAL_KIB, u_b[i]) * 1024),
                      "requests": sum(counts.values()), "counts": counts})
    return pages


def plan(seed=0, pages=DEFAULT_PAGES, nomigration_share=DEFAULT_NOMIGRATION_SHARE,
         rank_correlation=DEFAULT_RANK_CORRELATION):
    """The manifest of a corpus (a dict, JSON-ready); the same arguments give the same one.
    Errors: ValueError when pages < 2, rank_correlation is outside [0, 1), or
    nomigration_share cannot be met (the message gives the reachable range)."""
    if not 0 <= rank_correlation < 1:
        raise ValueError(f"rank_correlation must be in [0, 1), not {rank_correlation}")
    if not 0 <= nomigration_share <= 1:
        raise ValueError(f"nomigration_share must be in [0, 1], not {nomigration_share}")
    rng = random.Random(f"quicstep-corpus:{seed}")
    shapes = _page_shapes(rng, pages, rank_correlation)
    n_origins = _origin_counts(shapes, rng, 8 if nomigration_share > 0 else 6)
    k_nomig = _nomigration_counts(n_origins, nomigration_share, rng)
    out = []
    for shape, n_o, k in zip(shapes, n_origins, k_nomig):
        prng = random.Random(f"quicstep-corpus:{seed}:{shape['id']}")
        out.append(_page(prng, shape, _origins_of(prng, n_o, k)))
    return {"generator": "measurement/pageload/corpus.py", "version": 1, "seed": seed,
            "params": {"pages": pages, "nomigration_share": nomigration_share,
                       "rank_correlation": rank_correlation, "size_sigma": SIZE_SIGMA},
            "sources": SOURCES,
            "targets": {"bytes_kib": dict(zip(PERCENTILES, TOTAL_KIB)),
                        "requests": dict(zip(PERCENTILES, TOTAL_REQUESTS))},
            "origins": {o: {"migration": LAB_ORIGINS[o]}
                        for o in sorted({o for p in out for o in p["origins"]})},
            "pages": out}


def nonmigrating_byte_share(page):
    """The share of a page's bytes (a page of plan()'s manifest) served by the origins whose
    server does not migrate: through QUICstep those bytes stay on the channel."""
    nb = sum(r["bytes"] for r in page["resources"] if r["origin"] in NONMIGRATING_NAMES)
    return nb / page["bytes"] if page["bytes"] else 0.0


def _page(rng, shape, origins):
    """One page: its resources (the document first) with origin, path, URL, type, bytes."""
    pid, counts, total = shape["id"], shape["counts"], shape["bytes"]
    kinds = [t for t in TYPES for _ in range(counts[t] - (1 if t == "html" else 0))]
    rng.shuffle(kinds)
    where = _assign(rng, kinds, origins)
    res = [{"type": "html", "origin": origins[0], "path": f"{PREFIX}/{pid}/index.html",
            "load": "document"}]
    for i, (t, o) in enumerate(zip(kinds, where), 1):
        res.append({"type": t, "origin": o, "path": f"{PREFIX}/{pid}/{i:03d}.{EXT[t]}",
                    "load": LOAD[t]})
    for r in res:
        r["url"] = f"https://{r['origin']}/{r['path']}"
    target = _type_bytes(shape["u_bytes"], total, counts)
    for t in TYPES:
        mine = [r for r in res if r["type"] == t]
        sizes = sorted(_split(rng, target[t], len(mine), MIN_BYTES[t]), reverse=True)
        for r, s in zip(mine, sizes if t == "html" else rng.sample(sizes, len(sizes))):
            r["bytes"] = s  # the document is the page's largest HTML response
    floor = {id(r): MIN_BYTES[r["type"]] for r in res}
    floor[id(res[0])] = len(document(pid, res, 0)) + 16
    res[0]["bytes"] = max(res[0]["bytes"], floor[id(res[0])])
    _make_exact(res, total, floor)
    by_type = {t: {"requests": sum(r["type"] == t for r in res),
                   "bytes": sum(r["bytes"] for r in res if r["type"] == t)} for t in TYPES}
    return {"id": pid, "url": res[0]["url"], "origin": origins[0], "origins": origins,
            "bytes": total, "requests": len(res), "u_bytes": round(shape["u_bytes"], 6),
            "u_requests": round(shape["u_requests"], 6), "by_type": by_type, "resources": res}


def _make_exact(res, total, floor):
    """Moves the rounding difference onto the largest files, none below its floor (the
    document's: its markup)."""
    diff = total - sum(r["bytes"] for r in res)
    for r in sorted(res, key=lambda r: -r["bytes"]):
        if diff == 0:
            break
        step = max(diff, floor[id(r)] - r["bytes"])
        r["bytes"] += step
        diff -= step
    if diff:
        raise ValueError(f"{total} bytes cannot hold {len(res)} files")


LOAD = {"html": "iframe", "css": "stylesheet", "js": "defer-script", "img": "img",
        "font": "font-face", "other": "defer-script"}


# --- the files ----------------------------------------------------------------------------
def document(pid, res, size, rng=None):
    """The page's HTML of exactly `size` bytes (0: the shortest, no padding). Every load is
    one that delays domComplete: blocking stylesheets, deferred scripts (run before
    DOMContentLoaded), <img>, same-site <iframe>, and @font-face faces loaded by an inline
    script (a font face Chromium fetches blocks the load event; a preload would not)."""
    head = [f"<!doctype html><html><head><meta charset=utf-8><title>corpus {pid}</title>"]
    body = [f"<body><p>QUICstep corpus page {pid}</p>"]
    faces = []
    for r in res[1:]:
        t, url = r["type"], r["url"]
        if t == "css":
            head.append(f'<link rel=stylesheet href="{url}">')
        elif t in ("js", "other"):
            head.append(f'<script defer src="{url}"></script>')
        elif t == "img":
            body.append(f'<img src="{url}" alt="">')
        elif t == "html":
            body.append(f'<iframe src="{url}"></iframe>')
        elif t == "font":
            f = f"f{len(faces)}"
            faces.append(f"@font-face{{font-family:{f};src:url(/{r['path']})}}")
            body.append(f'<p style="font-family:{f}">{f}</p>')
    if faces:
        head.append("<style>" + "".join(faces) + "</style>")
        body.append("<script>for(const f of document.fonts)f.load()</script>")
    text = "".join(head) + "</head>" + "".join(body)
    tail = "</body></html>\n"
    if size == 0:
        return text + "<!---->" + tail
    pad = size - len(text) - len(tail) - 7
    if pad < 0:
        raise ValueError(f"page {pid}: {size} bytes is less than its markup")
    return text + "<!--" + _filler(rng or random.Random(pid), pad) + "-->" + tail


def _filler(rng, n):
    """n bytes of random base64 (no '-' or '*': it cannot close an HTML or CSS/JS comment)."""
    return base64.b64encode(rng.randbytes(n * 3 // 4 + 3)).decode()[:n]


def _png(rng, n):
    """A valid 1x1 PNG of exactly n bytes, the rest random in a private ancillary chunk:
    Chromium cancels an image it cannot decode before the last byte, a valid one it loads
    whole."""
    def chunk(kind, data):
        return (len(data).to_bytes(4, "big") + kind + data
                + zlib.crc32(kind + data).to_bytes(4, "big"))
    ihdr = chunk(b"IHDR", (1).to_bytes(4, "big") * 2 + bytes([8, 0, 0, 0, 0]))
    tail = chunk(b"IDAT", zlib.compress(b"\x00\x00")) + chunk(b"IEND", b"")
    fixed = 8 + len(ihdr) + 12 + len(tail)
    if n < fixed:
        raise ValueError(f"a PNG needs {fixed} bytes at least, not {n}")
    return b"\x89PNG\r\n\x1a\n" + ihdr + chunk(b"qsTp", rng.randbytes(n - fixed)) + tail


def content(seed, page, r):
    """The bytes of one resource of `page` (deterministic: seeded by seed, path, size)."""
    rng = random.Random(f"{seed}:{r['path']}:{r['bytes']}")
    n, t = r["bytes"], r["type"]
    if r["load"] == "document":
        return document(page["id"], page["resources"], n, rng).encode()
    if t == "img":
        return _png(rng, n)
    if t == "font":
        return rng.randbytes(n)
    if t == "css":
        return ("/*" + _filler(rng, n - 5) + "*/\n").encode()
    if t == "html":
        head = "<!doctype html><html><head><meta charset=utf-8></head><body><!--"
        tail = "--></body></html>\n"
        return (head + _filler(rng, n - len(head) - len(tail)) + tail).encode()
    head = f"window.qs_{r['path'].replace('/', '_').replace('.', '_')}=1;/*"
    return (head + _filler(rng, n - len(head) - 3) + "*/\n").encode()


def write(manifest, out, page_ids=None):
    """Writes manifest.json and every file (or those of `page_ids`) under
    out/origins/<origin>/<path>: each origin's directory is an htdocs root."""
    os.makedirs(out, exist_ok=True)
    with open(os.path.join(out, "manifest.json"), "w") as f:
        json.dump(manifest, f, indent=1)
    for page in manifest["pages"]:
        if page_ids is not None and page["id"] not in page_ids:
            continue
        for r in page["resources"]:
            path = os.path.join(out, "origins", r["origin"], r["path"])
            os.makedirs(os.path.dirname(path), exist_ok=True)
            with open(path, "wb") as f:
                f.write(content(manifest["seed"], page, r))


def verify(manifest, out, page_ids=None):
    """What is wrong with a written corpus: a list of messages, empty when every file of
    the manifest (or of `page_ids`) is there with its exact size."""
    bad = []
    for page in manifest["pages"]:
        if page_ids is not None and page["id"] not in page_ids:
            continue
        for r in page["resources"]:
            path = os.path.join(out, "origins", r["origin"], r["path"])
            try:
                size = os.path.getsize(path)
            except OSError as e:
                bad.append(f"{r['url']}: {e.strerror}")
                continue
            if size != r["bytes"]:
                bad.append(f"{r['url']}: {size} bytes, the manifest says {r['bytes']}")
    return bad


def install(out, htdocs):
    """Puts the written corpus where the servers read it: `htdocs` is one directory for
    every origin (the harness today: one gtlsserver htdocs for all names) or a mapping
    origin -> directory. Hard links where it can, copies elsewhere. Returns the number of
    files. Errors: KeyError for an origin the mapping lacks; FileExistsError when two
    origins would put different files on one path."""
    root = os.path.join(out, "origins")
    n = 0
    for origin in sorted(os.listdir(root)):
        dest_root = htdocs if isinstance(htdocs, (str, os.PathLike)) else htdocs[origin]
        src_root = os.path.join(root, origin)
        for d, _, files in os.walk(src_root):
            for name in files:
                src = os.path.join(d, name)
                dst = os.path.join(dest_root, os.path.relpath(src, src_root))
                os.makedirs(os.path.dirname(dst), exist_ok=True)
                if os.path.exists(dst):
                    if os.path.samefile(src, dst):
                        continue
                    raise FileExistsError(f"{dst} exists (from another origin?)")
                try:
                    os.link(src, dst)
                except OSError:
                    shutil.copyfile(src, dst)
                n += 1
    return n


def origins(manifest):
    """Every origin the corpus uses: for --origin-to-force-quic-on and the certificate."""
    return sorted(manifest["origins"])


def summary(manifest):
    """Empirical percentiles of the corpus beside the targets, and its other shares."""
    pages = manifest["pages"]
    out = {"bytes_kib": empirical([p["bytes"] / 1024 for p in pages]),
           "requests": empirical([p["requests"] for p in pages]),
           "origins": empirical([len(p["origins"]) for p in pages]),
           "type_requests": {t: empirical([p["by_type"][t]["requests"] for p in pages])
                             for t in TYPES},
           "type_bytes_kib": {t: empirical([p["by_type"][t]["bytes"] / 1024 for p in pages])
                              for t in TYPES}}
    pairs = [o for p in pages for o in p["origins"]]
    out["nomigration_share"] = sum(LAB_ORIGINS[o] == "none" for o in pairs) / len(pairs)
    out["rank_correlation"] = spearman([p["bytes"] for p in pages],
                                       [p["requests"] for p in pages])
    out["total_bytes"] = sum(p["bytes"] for p in pages)
    return out


def _print_summary(s):
    print(f"{'':14}" + "".join(f"{'p' + str(p):>10}" for p in PERCENTILES))
    for label, key, target in (("KiB", "bytes_kib", TOTAL_KIB),
                               ("requests", "requests", TOTAL_REQUESTS)):
        print(f"{label + ' target':14}" + "".join(f"{v:>10}" for v in target))
        print(f"{label + ' corpus':14}" + "".join(f"{s[key][p]:>10.1f}" for p in PERCENTILES))
    print(f"{'origins':14}" + "".join(f"{s['origins'][p]:>10.1f}" for p in PERCENTILES))
    print(f"non-migrating share {s['nomigration_share']:.3f}, bytes/requests rank correlation "
          f"{s['rank_correlation']:.3f}, {s['total_bytes'] / 1e6:.1f} MB in all")


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--out", help="write the corpus here (else print its summary only)")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--pages", type=int, default=DEFAULT_PAGES)
    ap.add_argument("--nomigration-share", type=float, default=DEFAULT_NOMIGRATION_SHARE)
    ap.add_argument("--rank-correlation", type=float, default=DEFAULT_RANK_CORRELATION)
    a = ap.parse_args(argv)
    try:
        m = plan(a.seed, a.pages, a.nomigration_share, a.rank_correlation)
    except ValueError as e:
        print(f"corpus: {e}", file=sys.stderr)
        return 2
    _print_summary(summary(m))
    if a.out:
        write(m, a.out)
        print(f"written to {a.out} (manifest.json, origins/<name>/{PREFIX}/...)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
