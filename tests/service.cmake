# tests/service.cmake: wavedd installed (cmake --install into a temporary
# prefix, the unit verified, every shipped pack served), and the container
# tests (tests/container/run.sh: podman, skipped where podman is missing).
add_test(NAME install_test
  COMMAND bash ${CMAKE_CURRENT_SOURCE_DIR}/install_test.sh ${PROJECT_BINARY_DIR})
set_tests_properties(install_test PROPERTIES
  ENVIRONMENT "WAVE_SOURCE_DIR=${PROJECT_SOURCE_DIR}")
