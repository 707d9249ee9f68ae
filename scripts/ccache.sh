# Sourced by test.sh and fuzz.sh: qs_launcher holds the CMake options that compile through
# ccache, where it is installed (scripts/install.sh installs it); empty otherwise. Paths
# under the clone are hashed relative to it (CCACHE_BASEDIR, and without the build's
# working directory), so that another clone of the same tree hits the same objects.
qs_launcher=()
if command -v ccache >/dev/null; then
  export CCACHE_BASEDIR=$PWD CCACHE_NOHASHDIR=1
  qs_launcher=(-DCMAKE_C_COMPILER_LAUNCHER=ccache -DCMAKE_CXX_COMPILER_LAUNCHER=ccache)
fi
