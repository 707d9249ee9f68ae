# The Python tests run from the repository's root as modules (`python3 -m unittest -v
# tests.<folder>.<module>`), so that they import the support package (qs_support/) and each
# other by package, with no path manipulation.
#
# qs_python_test_env(): gives every test added so far in the calling directory what they
# share: QS_BUILD, the build directory, where qs_support/binaries.py finds every program; and
# QS_TEST_ARTIFACTS=<build>/test-artifacts/<test>, where a failing test leaves its logs and
# captures (qs_support/artifacts.py; scripts/test.sh prints the path). Call it at the end of
# a tests/<folder>/CMakeLists.txt.
function(qs_python_test_env)
  get_property(tests DIRECTORY PROPERTY TESTS)
  foreach(test IN LISTS tests)
    set_property(TEST ${test} APPEND PROPERTY ENVIRONMENT
      "QS_BUILD=${CMAKE_BINARY_DIR}"
      "QS_TEST_ARTIFACTS=${CMAKE_BINARY_DIR}/test-artifacts/${test}"
      PYTHONDONTWRITEBYTECODE=1)
  endforeach()
endfunction()
