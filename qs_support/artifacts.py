"""Where a failing test leaves its logs and captures: `$QS_TEST_ARTIFACTS` (CTest sets it to
<build>/test-artifacts; scripts/test.sh prints it when a test fails). A test makes its work
directory with work_dir(); after the test, finish() removes it if everything passed and keeps
it (printing where) otherwise. Without QS_TEST_ARTIFACTS, work directories are made under the
system's temporary directory and kept on failure all the same."""
import os
import shutil
import sys
import tempfile


def root():
    """The artifacts folder, created; None when QS_TEST_ARTIFACTS is not set."""
    path = os.environ.get("QS_TEST_ARTIFACTS")
    if not path:
        return None
    os.makedirs(path, exist_ok=True)
    return path


def work_dir(prefix):
    """A new, empty work directory for one test (class), under the artifacts folder."""
    return tempfile.mkdtemp(prefix=prefix, dir=root())


def finish(path, failed):
    """Removes `path` when nothing failed; otherwise keeps it and says where."""
    if not path or not os.path.exists(path):
        return
    if failed or os.environ.get("QS_KEEP"):
        sys.stdout.write(f"\nlogs and captures kept in {path}\n")
        sys.stdout.flush()
    else:
        shutil.rmtree(path, ignore_errors=True)


class KeepOnFailure:
    """A unittest.TestCase mixin that remembers whether a test of its class failed:
    `cls.any_failed` (for tearDownClass: finish(cls.work, cls.any_failed)), and
    `self.this_failed()` (for tearDown: the test that is ending)."""

    any_failed = False

    def run(self, result=None):
        self._qs_result = result
        self._qs_before = len(result.failures) + len(result.errors) if result else 0
        out = super().run(result)
        if self.this_failed():
            type(self).any_failed = True
        return out

    def this_failed(self):
        result = getattr(self, "_qs_result", None)
        return result is not None and len(result.failures) + len(result.errors) > self._qs_before
