"""The test pages, written once into an htdocs directory that gtlsserver serves.

Single-file pages (`page-1MB.html`): the HTML document *is* the payload. Its body ends in an
HTML comment of random base64 (no "-" in that alphabet, so the comment cannot close early),
padded to the exact size. domComplete is set only after the parser has consumed the last
byte of the document, so PLT = domComplete - responseStart covers the whole transfer (and
nothing is cached: every load uses a fresh browser profile).

Many-resource page (`many.html`): a small document with `defer` scripts, half from
open.test and half from www.open.test (the same server address, a second origin: Chromium
may open a second QUIC connection or pool it). Deferred scripts run before
DOMContentLoaded, so domComplete again waits for every byte of every resource."""
import base64
import os

SIZES = {"10KB": 10_000, "100KB": 100_000, "1MB": 1_000_000, "10MB": 10_000_000}
MANY_COUNT = 60
MANY_EACH = 16_000
HOSTS = ("open.test", "www.open.test")


def _filler(n):
    return base64.b64encode(os.urandom(n * 3 // 4 + 3)).decode()[:n]


def single_page(size):
    head = f"<!doctype html><html><head><meta charset=utf-8><title>{size} bytes</title></head>" \
           "<body><p>QUICstep page-load test</p><!--"
    tail = "--></body></html>\n"
    return head + _filler(size - len(head) - len(tail)) + tail


def many_page():
    scripts = "".join(f'<script defer src="https://{HOSTS[i % 2]}/r/{i}.js"></script>'
                      for i in range(MANY_COUNT))
    return ("<!doctype html><html><head><meta charset=utf-8><title>many resources</title>"
            f"{scripts}</head><body><p>QUICstep page-load test: {MANY_COUNT} resources</p>"
            "</body></html>\n")


def resource(i):
    head, tail = f"window.r{i}=1;/*", "*/\n"
    return head + _filler(MANY_EACH - len(head) - len(tail)) + tail


def catalogue():
    """name -> (path under htdocs, bytes the page loads in all)."""
    out = {name: (f"page-{name}.html", size) for name, size in SIZES.items()}
    out["many"] = ("many.html", len(many_page()) + MANY_COUNT * MANY_EACH)
    return out


def write(htdocs):
    os.makedirs(os.path.join(htdocs, "r"), exist_ok=True)
    for name, size in SIZES.items():
        with open(os.path.join(htdocs, f"page-{name}.html"), "w") as f:
            f.write(single_page(size))
    with open(os.path.join(htdocs, "many.html"), "w") as f:
        f.write(many_page())
    for i in range(MANY_COUNT):
        with open(os.path.join(htdocs, "r", f"{i}.js"), "w") as f:
            f.write(resource(i))
    return catalogue()
