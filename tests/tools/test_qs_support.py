"""The Python support package (qs_support/) and the rules the Python tree keeps (no root):
every program qs_support.binaries names is where it says in this build (so a moved target
fails here, not in a lab test); the statistics helpers; artifacts kept only on failure; and
no Python file of the project manipulates sys.path (packages are imported from the
repository's root) or imports from tests/ outside tests/."""
import os
import re
import subprocess
import tempfile
import unittest

from qs_support import artifacts, binaries, stats

REPO = binaries.REPO


def text(path):
    with open(path, errors="replace") as f:
        return f.read()


def python_files():
    """(name, path) of every Python file git knows of (tracked or new): *.py, and scripts
    whose first line names python."""
    listed = subprocess.run(["git", "-C", REPO, "ls-files", "--cached", "--others",
                             "--exclude-standard"], capture_output=True, text=True, check=True)
    for name in listed.stdout.splitlines():
        path = os.path.join(REPO, name)
        if not os.path.isfile(path):
            continue
        if name.endswith(".py"):
            yield name, path
        elif "." not in os.path.basename(name):
            with open(path, "rb") as f:
                first = f.readline()
            if first.startswith(b"#!") and b"python" in first:
                yield name, path


class SupportPackage(unittest.TestCase):
    def test_every_program_is_where_binaries_says(self):
        missing = [f"{n}: {binaries.path(n, required=False) or binaries.PLACES[n]}"
                   for n in binaries.PLACES if binaries.path(n, required=False) is None]
        self.assertEqual(missing, [], f"not in {binaries.build_dir()}")

    def test_a_missing_program_names_the_build_and_the_variable(self):
        with self.assertRaises(FileNotFoundError) as e:
            binaries.path("quicstepd", build="/nonexistent")
        self.assertIn("/nonexistent/client/quicstepd", str(e.exception))
        self.assertIn("QS_BUILD", str(e.exception))

    def test_percentile_is_nearest_rank(self):
        self.assertEqual(stats.percentile([5, 1, 3], 0.5), 3)
        self.assertEqual(stats.percentile([1, 2, 3, 4], 0.99), 4)
        self.assertEqual(stats.percentile([1, 2, 3, 4], 0.0), 1)
        self.assertEqual(stats.percentile([], 0.5, empty=-1), -1)
        self.assertEqual(stats.median([4, 1, 3, 2]), 2.5)

    def test_artifacts_kept_only_on_failure(self):
        with tempfile.TemporaryDirectory() as root:
            os.environ["QS_TEST_ARTIFACTS"] = root
            try:
                ok, bad = artifacts.work_dir("ok-"), artifacts.work_dir("bad-")
                self.assertTrue(ok.startswith(root) and bad.startswith(root))
                artifacts.finish(ok, failed=False)
                artifacts.finish(bad, failed=True)
                self.assertFalse(os.path.exists(ok))
                self.assertTrue(os.path.isdir(bad))
            finally:
                del os.environ["QS_TEST_ARTIFACTS"]


class PythonTreeRules(unittest.TestCase):
    def test_no_file_manipulates_sys_path(self):
        bad = [name for name, path in python_files()
               if re.search(r"sys\.path\.(insert|append)|sys\.path\s*=|site\.addsitedir",
                            text(path))
               and name != "tests/tools/test_qs_support.py"]
        self.assertEqual(bad, [])

    def test_nothing_outside_tests_imports_from_tests(self):
        bad = [name for name, path in python_files() if not name.startswith("tests/")
               and re.search(r"^\s*(from|import)\s+tests\b", text(path), re.M)]
        self.assertEqual(bad, [])


if __name__ == "__main__":
    unittest.main(verbosity=2)
