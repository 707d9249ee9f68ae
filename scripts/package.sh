#!/usr/bin/env bash
# Builds the Debian packages (debian/: quicstep and quicstep-tools) from a clean copy of the
# repository's tracked files, so that nothing built or left in the work tree gets in:
#   scripts/package.sh [OUT]     (default build/package)
# writes OUT/quicstep_<version>_<arch>.deb, OUT/quicstep-tools_<version>_<arch>.deb, the
# .changes and .buildinfo files and the build's log (OUT/build.log). Needs debian/control's
# build dependencies (scripts/install.sh). Not root; a release build of what the packages
# hold: 5-10 minutes on 2 cores.
set -euo pipefail
cd "$(dirname "$0")/.."

out=$(realpath -m "${1:-build/package}")
version=$(sed -n 's/^project(quicstep VERSION \([^ )]*\).*/\1/p' CMakeLists.txt)
src="$out/src/quicstep-$version"
rm -rf "$out"
mkdir -p "$src"
# The tracked files as they are in the work tree (uncommitted edits included, untracked
# files not): what a fresh clone would hold once those edits are committed.
git ls-files -z | while IFS= read -r -d '' f; do [[ -e $f || -L $f ]] && printf '%s\0' "$f"; done |
  tar --null -T - -cf - | tar -C "$src" -xf -

echo "package.sh: building quicstep $version in $src (log: $out/build.log)"
jobs=$(nproc)
if ! (cd "$src" && DEB_BUILD_OPTIONS="parallel=$jobs ${DEB_BUILD_OPTIONS:-}" \
      dpkg-buildpackage -us -uc -b) >"$out/build.log" 2>&1; then
  tail -n 40 "$out/build.log" >&2
  echo "package.sh: dpkg-buildpackage failed (log: $out/build.log)" >&2
  exit 1
fi
mv "$out"/src/*.deb "$out"/src/*.changes "$out"/src/*.buildinfo "$out"/
rm -rf "$out/src"
ls -1 "$out"/*.deb
