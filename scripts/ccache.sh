# Sourced by test.sh and fuzz.sh: qs_launcher holds the CMake options that compile through
# ccache, where it is installed (scripts/install.sh installs it); empty otherwise. Paths
# under the clone are hashed relative to it (CCACHE_BASEDIR, and without the build's
# working directory), so that another clone of the same tree hits the same objects. The
# launcher is exported too, for CMake builds that the tests configure themselves (the
# package test's dpkg-buildpackage, in a copy under the build directory); the cache's
# directory is named, because debhelper gives its builds a HOME of their own. An object
# taken from the cache keeps the debug info of the clone that compiled it first: source
# lines resolve (the paths are relative), a debugger's source lookup may need `directory`.
qs_launcher=()
if command -v ccache >/dev/null; then
  export CCACHE_BASEDIR=$PWD CCACHE_NOHASHDIR=1
  CCACHE_DIR=${CCACHE_DIR:-$(ccache -k cache_dir)}
  export CCACHE_DIR
  export CMAKE_C_COMPILER_LAUNCHER=ccache CMAKE_CXX_COMPILER_LAUNCHER=ccache
  qs_launcher=(-DCMAKE_C_COMPILER_LAUNCHER=ccache -DCMAKE_CXX_COMPILER_LAUNCHER=ccache)
fi
