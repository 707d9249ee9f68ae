# What `cmake --install` puts on a machine, and so what the Debian package holds (debian/):
# the commands, quicstep-scan with its library, the systemd units, the tmpfiles entry they
# need, the example config as /etc/quicstep/quicstepd.toml, the man pages (scdoc, from
# dist/man/) and bash completion (dist/bash-completion/). Targets are named, not located:
# this file is included from the top CMakeLists.txt after every folder.
#
# The target quicstep_dist builds exactly what is installed; debian/rules builds it alone
# (with CMAKE_SKIP_INSTALL_ALL_DEPENDENCY, so installing does not build the whole tree).
include(GNUInstallDirs)

set(QS_DAEMON_COMMANDS quicstepd quicstepctl quicstep-tun)  # section 8, sbin: package quicstep
set(QS_TOOL_COMMANDS quicstep-probe quicstep-inspect)  # section 1, bin: package quicstep-tools

if(CMAKE_INSTALL_PREFIX STREQUAL "/usr")
  set(qs_unit_dir_default /lib/systemd/system)  # Debian bookworm's
else()
  set(qs_unit_dir_default ${CMAKE_INSTALL_PREFIX}/lib/systemd/system)
endif()
set(QS_SYSTEMD_UNIT_DIR ${qs_unit_dir_default} CACHE PATH "where the systemd units are installed")

install(TARGETS ${QS_DAEMON_COMMANDS} RUNTIME DESTINATION ${CMAKE_INSTALL_SBINDIR})
install(TARGETS ${QS_TOOL_COMMANDS} RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR})
# quicstep-tun's WireGuard helper (static Go, client/tun/wg_helper): PREFIX/lib/quicstep, where
# quicstep-tun looks for it (../lib/quicstep from its own directory).
set(qs_helper_target)
if(TARGET qs_wg_helper_host)
  install(PROGRAMS ${CMAKE_BINARY_DIR}/client/tun/qs-wg-helper
          DESTINATION lib/quicstep)
  set(qs_helper_target qs_wg_helper_host)
endif()

# quicstep-scan imports scanlib from its own (real) directory: both go to
# share/quicstep/scan, and bin/quicstep-scan is a relative symlink to the script.
set(qs_scan_dir ${CMAKE_INSTALL_DATADIR}/quicstep/scan)
install(PROGRAMS ${PROJECT_SOURCE_DIR}/measurement/scan/quicstep-scan DESTINATION ${qs_scan_dir})
install(DIRECTORY ${PROJECT_SOURCE_DIR}/measurement/scan/scanlib DESTINATION ${qs_scan_dir}
        FILES_MATCHING PATTERN "*.py" PATTERN "__pycache__" EXCLUDE)
file(WRITE ${QS_GENERATED_DIR}/_installed_version.py
     "# Written by cmake/Install.cmake: the project's version (CMakeLists.txt).\n"
     "VERSION = \"${PROJECT_VERSION}\"\n")
install(FILES ${QS_GENERATED_DIR}/_installed_version.py DESTINATION ${qs_scan_dir}/scanlib)
file(RELATIVE_PATH qs_scan_link ${CMAKE_INSTALL_FULL_BINDIR}
     ${CMAKE_INSTALL_PREFIX}/${qs_scan_dir}/quicstep-scan)
install(CODE "
  file(MAKE_DIRECTORY \"\$ENV{DESTDIR}${CMAKE_INSTALL_FULL_BINDIR}\")
  file(CREATE_LINK ${qs_scan_link} \"\$ENV{DESTDIR}${CMAKE_INSTALL_FULL_BINDIR}/quicstep-scan\"
       SYMBOLIC)
  message(STATUS \"Installing: \$ENV{DESTDIR}${CMAKE_INSTALL_FULL_BINDIR}/quicstep-scan -> ${qs_scan_link}\")")

# The units name /usr/local/sbin/quicstepd (a build installed by hand, client/README.md);
# the installed copies name the daemon where this install puts it.
foreach(unit quicstepd.service quicstepd@.service quicstep-tun.service)
  set(src ${PROJECT_SOURCE_DIR}/client/${unit})
  set_property(DIRECTORY APPEND PROPERTY CMAKE_CONFIGURE_DEPENDS ${src})
  file(READ ${src} text)
  string(REPLACE "/usr/local/sbin/" "${CMAKE_INSTALL_FULL_SBINDIR}/" text "${text}")
  file(WRITE ${QS_GENERATED_DIR}/units/${unit} "${text}")
  install(FILES ${QS_GENERATED_DIR}/units/${unit} DESTINATION ${QS_SYSTEMD_UNIT_DIR})
endforeach()
# The units' sandbox needs /run/wireguard to exist before they start (ReadWritePaths).
install(FILES ${PROJECT_SOURCE_DIR}/dist/tmpfiles/quicstep.conf
        DESTINATION ${CMAKE_INSTALL_PREFIX}/lib/tmpfiles.d)

# quicstepd reads /etc/quicstep/quicstepd.toml: installed there only when this install's
# sysconfdir is /etc (prefix /usr, the package: a conffile); elsewhere quicstepd would not
# read it, and it would not replace a config of the administrator's.
if(CMAKE_INSTALL_FULL_SYSCONFDIR STREQUAL "/etc")
  install(FILES ${PROJECT_SOURCE_DIR}/client/quicstepd.example.toml
          DESTINATION /etc/quicstep RENAME quicstepd.toml)
endif()

# Man pages: dist/man/<page>.<section>.scd, written for scdoc.
find_program(QS_SCDOC scdoc)
set(qs_man_pages quicstepd.8 quicstepctl.8 quicstepd.toml.5 quicstep-probe.1 quicstep-scan.1
    quicstep-inspect.1 quicstep-tun.8)
set(qs_man_outputs)
if(QS_SCDOC)
  foreach(page IN LISTS qs_man_pages)
    set(in ${PROJECT_SOURCE_DIR}/dist/man/${page}.scd)
    set(out ${PROJECT_BINARY_DIR}/man/${page})
    string(REGEX MATCH "[0-9]$" section ${page})
    add_custom_command(OUTPUT ${out}
      COMMAND ${CMAKE_COMMAND} -E make_directory ${PROJECT_BINARY_DIR}/man
      COMMAND sh -c "\"${QS_SCDOC}\" < \"${in}\" > \"${out}\""
      DEPENDS ${in} COMMENT "man page ${page}" VERBATIM)
    list(APPEND qs_man_outputs ${out})
    install(FILES ${out} DESTINATION ${CMAKE_INSTALL_MANDIR}/man${section})
  endforeach()
  add_custom_target(quicstep_man ALL DEPENDS ${qs_man_outputs})
else()
  message(WARNING "scdoc not found: the man pages are neither built nor installed"
                  " (scripts/install.sh installs it)")
  add_custom_target(quicstep_man)
endif()

# Bash completion: CLI11 (2.1) and argparse cannot write a completion script, so one
# function, dist/bash-completion/quicstep, reads each command's --help when completing
# (nothing to keep in step), installed under every command's name (bash-completion loads a
# completion by the command's name).
foreach(cmd IN LISTS QS_DAEMON_COMMANDS QS_TOOL_COMMANDS ITEMS quicstep-scan)
  install(FILES ${PROJECT_SOURCE_DIR}/dist/bash-completion/quicstep
          DESTINATION ${CMAKE_INSTALL_DATADIR}/bash-completion/completions RENAME ${cmd})
endforeach()

add_custom_target(quicstep_dist DEPENDS ${QS_DAEMON_COMMANDS} ${QS_TOOL_COMMANDS} quicstep_man
                  ${qs_helper_target})
