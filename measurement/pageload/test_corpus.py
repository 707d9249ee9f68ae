"""Unit tests of the page-load corpus (measurement/pageload/corpus.py), no root, no lab:
python3 -m unittest measurement.pageload.test_corpus (from the repository's root).

The published figures are written out here again, not taken from corpus.py, so a changed
constant fails as surely as a wrong generator. Tolerances: total bytes 1% of each published
percentile, requests 1 request (both marginals are sampled on a quantile grid, so only the
interpolation between two neighbouring pages and rounding remain); per-type requests 1
request; per-type bytes 5% up to the median (above it the types are scaled down to fit the
page's total, see the README)."""
import collections
import hashlib
import html.parser
import json
import os
import re
import tempfile
import unittest
import zlib

from lab.qslab_lib import topology
from measurement.pageload import corpus

P = (10, 25, 50, 75, 90)
# Web Almanac 2025, Page Weight, desktop (crawl 2025-06-01), KB = 1,024 bytes.
TOTAL_KIB = (607, 1275, 2412, 4570, 9179)
TOTAL_REQUESTS = (27, 46, 77, 122, 185)
TYPE_REQUESTS = {"img": (5, 9, 17, 32, 56), "css": (2, 4, 8, 16, 31), "js": (5, 11, 23, 40, 67),
                 "font": (0, 2, 4, 7, 10),
                 "html": (1, 1, 2, 6, 12)}  # Web Almanac 2024, desktop
TYPE_KIB = {"html": (6, 14, 35, 78, 152), "css": (10, 38, 83, 161, 274),
            "js": (106, 303, 708, 1291, 2003), "img": (74, 333, 1058, 2896, 6856)}


class References(html.parser.HTMLParser):
    """Every URL a corpus document loads, as (kind, absolute URL)."""

    def __init__(self, origin):
        super().__init__()
        self.origin, self.found, self._style = origin, [], False

    def handle_starttag(self, tag, attrs):
        a = dict(attrs)
        if tag == "link" and a.get("rel") == "stylesheet":
            self.found.append(("stylesheet", a["href"]))
        elif tag == "script" and "src" in a:
            self.found.append(("defer-script" if "defer" in a else "script", a["src"]))
        elif tag == "img":
            self.found.append(("img", a["src"]))
        elif tag == "iframe":
            self.found.append(("iframe", a["src"]))
        self._style = tag == "style"

    def handle_data(self, data):
        if self._style:
            for path in re.findall(r"url\(([^)]*)\)", data):
                self.found.append(("font-face", f"https://{self.origin}{path}"))


def references(page, text):
    p = References(page["origin"])
    p.feed(text)
    return sorted(p.found)


def png_chunks(data):
    assert data[:8] == b"\x89PNG\r\n\x1a\n", "PNG signature"
    i, kinds = 8, []
    while i < len(data):
        n = int.from_bytes(data[i:i + 4], "big")
        kind, body = data[i + 4:i + 8], data[i + 8:i + 8 + n]
        crc = int.from_bytes(data[i + 8 + n:i + 12 + n], "big")
        assert zlib.crc32(kind + body) == crc, f"CRC of {kind}"
        kinds.append(kind)
        i += 12 + n
    return kinds


class Distributions(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.m = corpus.plan()
        cls.s = corpus.summary(cls.m)

    def test_quantile_passes_through_the_published_points(self):
        for p, v in zip(P, TOTAL_KIB):
            self.assertAlmostEqual(corpus.quantile(TOTAL_KIB, p / 100), v, places=6)
        us = [k / 200 for k in range(1, 200)]
        vs = [corpus.quantile(TOTAL_REQUESTS, u, 1) for u in us]
        self.assertEqual(vs, sorted(vs))

    def test_hundred_pages(self):
        self.assertEqual(len(self.m["pages"]), 100)

    def test_bytes_percentiles_within_1_percent(self):
        for p, v in zip(P, TOTAL_KIB):
            self.assertAlmostEqual(self.s["bytes_kib"][p], v, delta=0.01 * v, msg=f"p{p}")

    def test_requests_percentiles_within_1_request(self):
        for p, v in zip(P, TOTAL_REQUESTS):
            self.assertAlmostEqual(self.s["requests"][p], v, delta=1, msg=f"p{p}")

    def test_other_seeds_too(self):
        for seed in (1, 2, 3):
            s = corpus.summary(corpus.plan(seed))
            for p, v in zip(P, TOTAL_KIB):
                self.assertAlmostEqual(s["bytes_kib"][p], v, delta=0.01 * v, msg=f"{seed} p{p}")
            for p, v in zip(P, TOTAL_REQUESTS):
                self.assertAlmostEqual(s["requests"][p], v, delta=1, msg=f"{seed} p{p}")

    def test_requests_by_type(self):
        for t, want in TYPE_REQUESTS.items():
            for p, v in zip(P, want):
                self.assertAlmostEqual(self.s["type_requests"][t][p], v, delta=1, msg=f"{t} p{p}")

    def test_bytes_by_type(self):
        for t, want in TYPE_KIB.items():
            got = self.s["type_bytes_kib"][t]
            for p, v in zip(P, want):
                if p <= 50:
                    self.assertAlmostEqual(got[p], v, delta=0.05 * v, msg=f"{t} p{p}")
                else:  # scaled down to the total, never up
                    self.assertLessEqual(got[p], 1.01 * v, f"{t} p{p}")
                    self.assertGreaterEqual(got[p], 0.8 * v, f"{t} p{p}")

    def test_bytes_and_requests_correlate(self):
        self.assertAlmostEqual(self.s["rank_correlation"], 0.7, delta=0.1)
        rs = [corpus.summary(corpus.plan(seed))["rank_correlation"] for seed in range(20)]
        self.assertAlmostEqual(sum(rs) / len(rs), 0.7, delta=0.05)
        zero = [corpus.summary(corpus.plan(seed, rank_correlation=0))["rank_correlation"]
                for seed in range(20)]
        self.assertAlmostEqual(sum(zero) / len(zero), 0.0, delta=0.1)


class Determinism(unittest.TestCase):
    def test_same_seed_same_manifest(self):
        self.assertEqual(json.dumps(corpus.plan(5)), json.dumps(corpus.plan(5)))

    def test_other_seed_other_manifest(self):
        a, b = corpus.plan(5), corpus.plan(6)
        self.assertNotEqual([p["requests"] for p in a["pages"]],
                            [p["requests"] for p in b["pages"]])

    def test_same_seed_same_files(self):
        m = corpus.plan(5)
        small = [p["id"] for p in sorted(m["pages"], key=lambda p: p["bytes"])[:3]]
        sums = []
        for _ in range(2):
            with tempfile.TemporaryDirectory() as d:
                corpus.write(corpus.plan(5), d, small)
                h = hashlib.sha256()
                for root, _, files in sorted(os.walk(d)):
                    for f in sorted(files):
                        with open(os.path.join(root, f), "rb") as fh:
                            h.update(f.encode() + fh.read())
                sums.append(h.hexdigest())
        self.assertEqual(sums[0], sums[1])


class Origins(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.m = corpus.plan()

    def test_only_lab_names_and_never_the_censored_one(self):
        for page in self.m["pages"]:
            for r in page["resources"]:
                self.assertIn(r["origin"], topology.DNS_NAMES)
                self.assertNotIn("blocked", r["origin"])
                self.assertEqual(r["url"], f"https://{r['origin']}/{r['path']}")

    def test_nonmigrating_names_are_the_labs_nomigration_server(self):
        none = {n for n, m in corpus.LAB_ORIGINS.items() if m == "none"}
        self.assertEqual({topology.DNS_NAMES[n].name for n in none}, {"srv2-a"})
        follows = set(corpus.LAB_ORIGINS) - none
        self.assertNotIn("srv2-a", {topology.DNS_NAMES[n].name for n in follows})

    def test_nomigration_share(self):
        pairs = [o for p in self.m["pages"] for o in p["origins"]]
        share = sum(corpus.LAB_ORIGINS[o] == "none" for o in pairs) / len(pairs)
        self.assertAlmostEqual(share, corpus.DEFAULT_NOMIGRATION_SHARE, delta=1 / len(pairs))
        for want in (0.0, 0.1, 0.3):
            got = corpus.summary(corpus.plan(1, nomigration_share=want))["nomigration_share"]
            self.assertAlmostEqual(got, want, delta=0.01)
        with self.assertRaisesRegex(ValueError, "nomigration_share 0.9 cannot be met"):
            corpus.plan(1, nomigration_share=0.9)

    def test_nonmigrating_byte_share(self):
        page = {"bytes": 1000, "resources": [
            {"origin": "a.test", "bytes": 600}, {"origin": "nomigration.test", "bytes": 300},
            {"origin": "www.nomigration.test", "bytes": 100}]}
        self.assertAlmostEqual(corpus.nonmigrating_byte_share(page), 0.4)
        for p in self.m["pages"]:
            share = corpus.nonmigrating_byte_share(p)
            uses = any(corpus.LAB_ORIGINS[o] == "none" for o in p["origins"])
            self.assertEqual(share > 0, uses, p["id"])
            self.assertLessEqual(share, 1.0)

    def test_origins_per_page(self):
        counts = collections.Counter(len(p["origins"]) for p in self.m["pages"])
        self.assertEqual(counts[1], 8)  # 92% of pages have a third party
        self.assertEqual(max(counts), 8)
        for page in self.m["pages"]:
            used = [r["origin"] for r in page["resources"]]
            self.assertEqual(set(used), set(page["origins"]), page["id"])
            self.assertEqual(len(set(page["origins"])), len(page["origins"]))
            self.assertEqual(page["origin"], page["origins"][0])
            self.assertEqual(corpus.LAB_ORIGINS[page["origin"]], "follows")
            site = {page["origin"], "www." + page["origin"]}
            for r in page["resources"]:
                if r["type"] == "font":
                    self.assertEqual(r["origin"], page["origin"])  # no CORS needed
                if r["type"] == "html":
                    self.assertIn(r["origin"], site)  # same renderer, same DevTools session
            if len(page["origins"]) > 1:
                self.assertTrue(set(page["origins"]) - site, f"{page['id']}: no third party")


class Manifest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.m = corpus.plan()

    def test_totals_add_up(self):
        paths = set()
        for page in self.m["pages"]:
            res = page["resources"]
            self.assertEqual(sum(r["bytes"] for r in res), page["bytes"])
            self.assertEqual(len(res), page["requests"])
            self.assertEqual(res[0]["load"], "document")
            self.assertEqual(page["url"], res[0]["url"])
            for t, v in page["by_type"].items():
                self.assertEqual(v["requests"], sum(r["type"] == t for r in res))
                self.assertEqual(v["bytes"], sum(r["bytes"] for r in res if r["type"] == t))
            for r in res:
                self.assertGreaterEqual(r["bytes"], corpus.MIN_BYTES[r["type"]])
                self.assertNotIn(r["path"], paths)  # one htdocs can hold every origin
                paths.add(r["path"])

    def test_every_document_references_exactly_its_resources(self):
        want_kind = {"css": "stylesheet", "js": "defer-script", "other": "defer-script",
                     "img": "img", "html": "iframe", "font": "font-face"}
        for page in self.m["pages"]:
            text = corpus.document(page["id"], page["resources"], page["resources"][0]["bytes"])
            self.assertEqual(len(text), page["resources"][0]["bytes"])
            want = sorted((want_kind[r["type"]], r["url"]) for r in page["resources"][1:])
            self.assertEqual(references(page, text), want, page["id"])

    def test_bad_arguments(self):
        with self.assertRaisesRegex(ValueError, "at least 2 pages"):
            corpus.plan(pages=1)
        with self.assertRaisesRegex(ValueError, "rank_correlation"):
            corpus.plan(rank_correlation=1.0)


class Files(unittest.TestCase):
    """Writes a few pages (the three lightest, the lightest with 8 origins and the lightest
    with fonts and frames): writing all 100 is some 440 MB."""

    @classmethod
    def setUpClass(cls):
        cls.m = corpus.plan()
        pages = sorted(cls.m["pages"], key=lambda p: p["bytes"])
        cls.ids = {p["id"] for p in pages[:3]}
        cls.ids.add(next(p["id"] for p in pages if len(p["origins"]) == 8))
        cls.ids.add(next(p["id"] for p in pages if p["by_type"]["font"]["requests"]
                         and p["by_type"]["html"]["requests"] > 1))
        cls.tmp = tempfile.TemporaryDirectory()
        cls.out = cls.tmp.name
        corpus.write(cls.m, cls.out, cls.ids)

    @classmethod
    def tearDownClass(cls):
        cls.tmp.cleanup()

    def pages(self):
        return [p for p in self.m["pages"] if p["id"] in self.ids]

    def test_every_file_there_with_its_exact_size(self):
        self.assertEqual(corpus.verify(self.m, self.out, self.ids), [])
        want = {os.path.join(self.out, "origins", r["origin"], r["path"])
                for p in self.pages() for r in p["resources"]}
        got = {os.path.join(d, f) for d, _, fs in os.walk(os.path.join(self.out, "origins"))
               for f in fs}
        self.assertEqual(got, want)
        self.assertEqual(len(corpus.verify(self.m, self.out)),
                         sum(p["requests"] for p in self.m["pages"] if p["id"] not in self.ids))

    def test_verify_sees_a_wrong_size(self):
        r = self.pages()[0]["resources"][-1]
        path = os.path.join(self.out, "origins", r["origin"], r["path"])
        with open(path, "ab") as f:
            f.write(b"x")
        try:
            self.assertEqual(len(corpus.verify(self.m, self.out, self.ids)), 1)
        finally:
            os.truncate(path, r["bytes"])

    def test_manifest_written(self):
        with open(os.path.join(self.out, "manifest.json")) as f:
            self.assertEqual(json.load(f), json.loads(json.dumps(self.m)))

    def test_contents(self):
        for page in self.pages():
            for r in page["resources"]:
                with open(os.path.join(self.out, "origins", r["origin"], r["path"]), "rb") as f:
                    data = f.read()
                if r["type"] == "img":
                    self.assertEqual(png_chunks(data), [b"IHDR", b"qsTp", b"IDAT", b"IEND"])
                elif r["type"] in ("css", "js", "other"):
                    text = data.decode("ascii")
                    comment = text[text.index("/*") + 2:]  # the opener's '*' closes nothing
                    self.assertEqual(comment.count("*/"), 1)
                    self.assertTrue(comment.endswith("*/\n"))
                elif r["type"] == "html":
                    text = data.decode("ascii")
                    self.assertEqual(text.count("-->"), 1)
                    if r["load"] == "document":
                        self.assertEqual(references(page, text), references(
                            page, corpus.document(page["id"], page["resources"], 0)))

    def test_install_into_one_htdocs(self):
        with tempfile.TemporaryDirectory() as htdocs:
            n = corpus.install(self.out, htdocs)
            self.assertEqual(n, sum(p["requests"] for p in self.pages()))
            for p in self.pages():
                for r in p["resources"]:
                    self.assertEqual(os.path.getsize(os.path.join(htdocs, r["path"])), r["bytes"])
            self.assertEqual(corpus.install(self.out, htdocs), 0)  # again: nothing new

    def test_install_per_origin(self):
        with tempfile.TemporaryDirectory() as d:
            names = {r["origin"] for p in self.pages() for r in p["resources"]}
            where = {o: os.path.join(d, o) for o in names}
            corpus.install(self.out, where)
            for p in self.pages():
                for r in p["resources"]:
                    self.assertTrue(os.path.isfile(os.path.join(where[r["origin"]], r["path"])))
            with self.assertRaises(KeyError):
                corpus.install(self.out, {})


if __name__ == "__main__":
    unittest.main()
