"""The project's version, set once: the top CMakeLists.txt's project(VERSION). An installed
quicstep-scan reads it from _installed_version.py, which the install step writes
(cmake/Install.cmake); one run from the source tree reads CMakeLists.txt itself."""
import os
import re

_TOP = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "..", "CMakeLists.txt")


def version():
    """The version string, e.g. "0.1.0"; "unknown" where neither source is there."""
    try:
        from ._installed_version import VERSION  # written at install time only
        return VERSION
    except ImportError:
        pass
    try:
        with open(_TOP, encoding="utf-8") as f:
            m = re.search(r"^project\(\s*quicstep\s+VERSION\s+([0-9][0-9A-Za-z.+~-]*)", f.read(),
                          re.MULTILINE)
    except OSError:
        return "unknown"
    return m.group(1) if m else "unknown"
