#!/usr/bin/env bash
# Builds the scanner's OCI image: Debian bookworm with the quicstep-tools package
# (quicstep-probe, quicstep-scan, quicstep-inspect) and what it depends on, nothing else.
#   measurement/scan/image/build.sh QUICSTEP_TOOLS_DEB OUT.oci.tar
# mmdebstrap installs the package into a root file system from the Debian archive (apt's
# mirror, no container registry: QS_DEBIAN_MIRROR and QS_DEBIAN_SECURITY change it), umoci
# makes that one layer of an image named quicstep-scan:VERSION (the package's), and OUT is
# the image layout as an OCI archive: `podman load -i OUT` (localhost/quicstep-scan:VERSION),
# `skopeo copy oci-archive:OUT docker://...`
# (measurement/scan/k8s/README.md). The entrypoint is quicstep-scan. Root (mmdebstrap's
# root mode). SOURCE_DATE_EPOCH, if set, dates the image.
set -euo pipefail

if [[ $# -ne 2 ]]; then
  echo "usage: $0 QUICSTEP_TOOLS_DEB OUT.oci.tar" >&2
  exit 2
fi
deb=$(realpath "$1")
out=$(realpath -m "$2")
version=$(dpkg-deb -f "$deb" Version)
mirror=${QS_DEBIAN_MIRROR:-http://deb.debian.org/debian}
security=${QS_DEBIAN_SECURITY:-http://deb.debian.org/debian-security}
created=$(date -u -d "@${SOURCE_DATE_EPOCH:-$(date +%s)}" +%Y-%m-%dT%H:%M:%SZ)
work=$(mktemp -d "${TMPDIR:-/tmp}/quicstep-image.XXXXXX")
trap 'rm -rf "$work"' EXIT

# Documentation, man pages and translations are left out (copyright files stay); apt's
# lists and caches are removed by mmdebstrap itself.
mmdebstrap --variant=essential --include="$deb" \
  --hook-dir=/usr/share/mmdebstrap/hooks/file-mirror-automount \
  --dpkgopt='path-exclude=/usr/share/doc/*' --dpkgopt='path-include=/usr/share/doc/*/copyright' \
  --dpkgopt='path-exclude=/usr/share/man/*' --dpkgopt='path-exclude=/usr/share/locale/*' \
  --dpkgopt='path-exclude=/usr/share/info/*' \
  bookworm "$work/rootfs.tar" \
  "deb $mirror bookworm main" "deb $mirror bookworm-updates main" \
  "deb $security bookworm-security main"

image="$work/oci:$version"
umoci init --layout "$work/oci"
umoci new --image "$image"
umoci raw add-layer --image "$image" --history.created "$created" \
  --history.created_by "measurement/scan/image/build.sh (mmdebstrap bookworm + quicstep-tools $version)" \
  "$work/rootfs.tar"
umoci config --image "$image" --created "$created" --author "QUICstep" \
  --os linux --architecture "$(dpkg-deb -f "$deb" Architecture)" \
  --config.entrypoint /usr/bin/quicstep-scan --config.cmd --help --config.workingdir / \
  --config.env PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin \
  --config.label org.opencontainers.image.title=quicstep-scan \
  --config.label org.opencontainers.image.version="$version" \
  --config.label org.opencontainers.image.description="quicstep-probe and quicstep-scan on Debian bookworm"
umoci gc --layout "$work/oci"
# umoci's tags are bare ("0.1.0"); podman load and containerd name an image by its ref.name,
# so it gets the full name, quicstep-scan:VERSION (valid in an OCI layout's index).
python3 - "$work/oci/index.json" "quicstep-scan:$version" <<'PY'
import json, sys
path, ref = sys.argv[1:]
with open(path) as f:
    index = json.load(f)
for m in index["manifests"]:
    m.setdefault("annotations", {})["org.opencontainers.image.ref.name"] = ref
with open(path, "w") as f:
    json.dump(index, f)
PY
mkdir -p "$(dirname "$out")"
tar --sort=name --owner=0 --group=0 --numeric-owner -C "$work/oci" -cf "$out.tmp" .
mv "$out.tmp" "$out"
echo "build.sh: $out (image quicstep-scan:$version, $(du -h "$out" | cut -f1))"
