"""What the package is made of, checked without building it: the template unit keeps
quicstepd.service's sandbox line for line; every place that repeats the project's version
(debian/changelog, the k8s manifest's image) says CMakeLists.txt's; the config man page
documents every key of the example config; each command's man page names every long option
its --help prints (commands found in QS_BUILD, else skipped; quicstep-scan from the tree);
the bash completion parses. No root."""
import os
import re
import subprocess
import sys
import unittest

from measurement.scan.scanlib.version import version as scan_version
from qs_support import binaries

REPO = binaries.REPO
MAN = os.path.join(REPO, "dist", "man")
SCAN = os.path.join(REPO, "measurement", "scan", "quicstep-scan")
# Exec lines name the instance; everything else of [Service] and [Install] must match.
PER_UNIT = ("ExecStart", "ExecStartPre", "ExecStopPost")


def read(*parts):
    with open(os.path.join(REPO, *parts), encoding="utf-8") as f:
        return f.read()


def project_version():
    m = re.search(r"^project\(quicstep VERSION (\S+)", read("CMakeLists.txt"), re.MULTILINE)
    return m.group(1)


def unit_sections(text):
    """{section: [(key, value), ...]} in file order, comments and blank lines dropped."""
    out, cur = {}, None
    for line in text.splitlines():
        line = line.strip()
        if not line or line.startswith("#"):
            continue
        if line.startswith("["):
            cur = out.setdefault(line.strip("[]"), [])
        else:
            k, v = line.split("=", 1)
            cur.append((k, v))
    return out


def long_options(help_text):
    return set(re.findall(r"(?:^|[\s,\[])(--[A-Za-z0-9][A-Za-z0-9-]*)", help_text))


class Units(unittest.TestCase):
    def test_template_unit_keeps_the_sandbox(self):
        plain = unit_sections(read("client", "quicstepd.service"))
        tmpl = unit_sections(read("client", "quicstepd@.service"))
        for section in ("Service", "Install"):
            self.assertEqual([kv for kv in plain[section] if kv[0] not in PER_UNIT],
                             [kv for kv in tmpl[section] if kv[0] not in PER_UNIT], section)

    def test_template_unit_runs_the_instance_channel(self):
        tmpl = dict(unit_sections(read("client", "quicstepd@.service"))["Service"])
        for key in PER_UNIT:
            self.assertIn("--channel-interface %i --wg-config /etc/wireguard/%i.conf", tmpl[key])
            self.assertNotIn("--config", tmpl[key])  # the default path, or the defaults
        unit = dict(unit_sections(read("client", "quicstepd@.service"))["Unit"])
        self.assertIn("wg-quick@%i.service", unit["Conflicts"])


class Version(unittest.TestCase):
    def test_every_copy_is_the_projects(self):
        v = project_version()
        first = read("debian", "changelog").splitlines()[0]
        self.assertEqual(re.match(r"quicstep \(([^)-]+)", first).group(1), v, "debian/changelog")
        images = re.findall(r"image: (\S+)", read("measurement", "scan", "k8s",
                                                  "scan-indexed-job.yaml"))
        self.assertTrue(images)
        for image in images:
            self.assertTrue(image.endswith(f"/quicstep-scan:{v}"), image)
        self.assertEqual(scan_version(), v)


class ManPages(unittest.TestCase):
    def test_config_page_documents_every_key(self):
        page = read("dist", "man", "quicstepd.toml.5.scd")
        sections = dict(re.findall(r"^# \[(\w+)\].*\n((?:(?!^# ).*\n)*)", page, re.MULTILINE))
        table = None
        for line in read("client", "quicstepd.example.toml").splitlines():
            m = re.match(r"^\[(\w+)\]", line)
            if m:
                table = m.group(1)
                self.assertIn(table, sections, f"[{table}] has no section in quicstepd.toml(5)")
                continue
            m = re.match(r"^(?:# )?(\w+) = ", line)  # also `# native_conntrack = true`
            if m and table:
                self.assertRegex(sections[table], rf"\*{m.group(1)}\*",
                                 f"[{table}] {m.group(1)} is not in quicstepd.toml(5)")

    def check_page(self, page, argv_list):
        text = read("dist", "man", page + ".scd")
        for argv in argv_list:
            p = subprocess.run(argv, capture_output=True, text=True, timeout=30)
            self.assertEqual(p.returncode, 0, f"{argv}: {p.stderr}")
            for opt in long_options(p.stdout):
                self.assertIn(f"*{opt}*", text, f"{' '.join(argv)} prints {opt}; {page} lacks it")

    def test_commands_pages_name_every_option(self):
        pages = {"quicstepd": ("quicstepd.8", [[]]),
                 "quicstepctl": ("quicstepctl.8", [[], ["status"], ["flows"]]),
                 "quicstep-probe": ("quicstep-probe.1", [[]]),
                 "quicstep-inspect": ("quicstep-inspect.1", [[]]),
                 "quicstep-tun": ("quicstep-tun.8", [[]])}
        built = 0
        for name, (page, subs) in pages.items():
            exe = binaries.path(name, required=False)
            if exe:
                built += 1
                self.check_page(page, [[exe, *s, "--help"] for s in subs])
        subs = [[], ["run"], ["merge"], ["summary"], ["csv"], ["allowlist"]]
        self.check_page("quicstep-scan.1", [[sys.executable, SCAN, *s, "--help"] for s in subs])
        if not built:
            self.skipTest(f"no command built in {binaries.build_dir()} (QS_BUILD)")


class Completion(unittest.TestCase):
    def test_parses(self):
        subprocess.run(["bash", "-n", os.path.join(REPO, "dist", "bash-completion", "quicstep")],
                       check=True)


if __name__ == "__main__":
    unittest.main()
