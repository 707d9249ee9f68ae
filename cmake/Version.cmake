# The project's version is set once, in the top CMakeLists.txt's project(). This writes it
# into a header every command includes for --version (#include "quicstep_version.hpp"),
# and into the Python module the installed quicstep-scan reads (cmake/Install.cmake).
# debian/changelog must carry the same version: debian/rules refuses to build otherwise.
set(QS_GENERATED_DIR ${PROJECT_BINARY_DIR}/generated)
configure_file(${CMAKE_CURRENT_LIST_DIR}/quicstep_version.hpp.in
               ${QS_GENERATED_DIR}/quicstep_version.hpp @ONLY)
include_directories(${QS_GENERATED_DIR})
