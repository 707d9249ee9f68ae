# Every third-party dependency, found once (included once, from the top CMakeLists.txt).
# Subdirectories link the imported targets named here and find nothing themselves:
#   PkgConfig::NETTLE PkgConfig::PCAP PkgConfig::MNL PkgConfig::NFQ PkgConfig::NFLOG
#   PkgConfig::NFTNL PkgConfig::SYSTEMD PkgConfig::LIBBPF PkgConfig::SECCOMP PkgConfig::GNUTLS
#   PkgConfig::NGTCP2 (libngtcp2 + libngtcp2_crypto_gnutls) PkgConfig::NGHTTP3
#   qs::tomlplusplus spdlog::spdlog nlohmann_json::nlohmann_json CLI11::CLI11
#   Boost::headers Threads::Threads
#   with tests: GTest::gtest_main GTest::gmock Python3::Interpreter; benchmarks:
#   benchmark::benchmark_main.
# Imported targets made in the top directory are visible in every subdirectory.
find_package(PkgConfig REQUIRED)

# Crypto (GnuTLS and nettle are the one crypto library, DESIGN.md) and captures.
pkg_check_modules(NETTLE REQUIRED IMPORTED_TARGET nettle)
pkg_check_modules(GNUTLS REQUIRED IMPORTED_TARGET gnutls)
pkg_check_modules(PCAP REQUIRED IMPORTED_TARGET libpcap)

# Netlink and netfilter (mnl-style nfq_nlmsg_* API), systemd, BPF.
pkg_check_modules(MNL REQUIRED IMPORTED_TARGET libmnl)
pkg_check_modules(NFQ REQUIRED IMPORTED_TARGET libnetfilter_queue)
pkg_check_modules(NFLOG REQUIRED IMPORTED_TARGET libnetfilter_log)
pkg_check_modules(NFTNL REQUIRED IMPORTED_TARGET libnftnl)
pkg_check_modules(SYSTEMD REQUIRED IMPORTED_TARGET libsystemd)
pkg_check_modules(LIBBPF REQUIRED IMPORTED_TARGET libbpf)
pkg_check_modules(SECCOMP REQUIRED IMPORTED_TARGET libseccomp)

# QUIC and HTTP/3 (ngtcp2 0.12.1 with its GnuTLS crypto backend, nghttp3 0.8.0).
pkg_check_modules(NGTCP2 REQUIRED IMPORTED_TARGET libngtcp2 libngtcp2_crypto_gnutls)
pkg_check_modules(NGHTTP3 REQUIRED IMPORTED_TARGET libnghttp3)

# Header-only and CMake-packaged libraries.
find_path(QS_TOMLPLUSPLUS_INCLUDE toml++/toml.h REQUIRED)
add_library(qs_tomlplusplus INTERFACE)
target_include_directories(qs_tomlplusplus SYSTEM INTERFACE ${QS_TOMLPLUSPLUS_INCLUDE})
add_library(qs::tomlplusplus ALIAS qs_tomlplusplus)
find_package(spdlog REQUIRED)
find_package(nlohmann_json REQUIRED)
find_package(CLI11 CONFIG REQUIRED)
find_package(Boost REQUIRED)
find_package(Threads REQUIRED)

# Test and benchmark frameworks, only where those are built (tests/CMakeLists.txt).
if(QS_TESTS AND NOT QS_FUZZ)
  find_package(GTest REQUIRED)
  find_package(Python3 REQUIRED COMPONENTS Interpreter)
endif()
if(QS_BENCH AND NOT QS_FUZZ AND NOT QS_SANITIZE)
  find_package(benchmark REQUIRED)
endif()
