# qs_python_test_env(): gives every test added so far in the calling directory what the
# Python tests share: the support package (qs_support/, at the repository's root) on
# PYTHONPATH, and QS_TEST_ARTIFACTS=<build>/test-artifacts/<test>, where a failing test
# leaves its logs and captures (qs_support/artifacts.py; scripts/test.sh prints the path).
# Call it at the end of a tests/<folder>/CMakeLists.txt.
function(qs_python_test_env)
  get_property(tests DIRECTORY PROPERTY TESTS)
  foreach(test IN LISTS tests)
    set_property(TEST ${test} APPEND PROPERTY ENVIRONMENT
      "PYTHONPATH=${PROJECT_SOURCE_DIR}"
      "QS_TEST_ARTIFACTS=${CMAKE_BINARY_DIR}/test-artifacts/${test}"
      PYTHONDONTWRITEBYTECODE=1)
  endforeach()
endfunction()
