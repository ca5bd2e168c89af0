# tests/service.cmake: wavedd installed (cmake --install into a temporary
# prefix, the unit verified, every shipped pack served), and the container
# tests (tests/container/run.sh: podman, skipped where podman is missing).
# Label root: the entries CI runs as root (`ctest -L root`).
add_test(NAME install_test
  COMMAND bash ${CMAKE_CURRENT_SOURCE_DIR}/install_test.sh ${PROJECT_BINARY_DIR})
set_tests_properties(install_test PROPERTIES LABELS root
  ENVIRONMENT "WAVE_SOURCE_DIR=${PROJECT_SOURCE_DIR}")

add_test(NAME prometheus_test
  COMMAND bash ${CMAKE_CURRENT_SOURCE_DIR}/prometheus_test.sh ${PROJECT_BINARY_DIR})
set_tests_properties(prometheus_test PROPERTIES
  ENVIRONMENT "WAVE_SOURCE_DIR=${PROJECT_SOURCE_DIR}")
wave_skippable(prometheus_test)

# contrib/'s alert rules (promtool test rules) and dashboard, loaded into a
# real Prometheus that scrapes a real wavedd-test (tests/alerts_test.sh,
# about 20 s); the normal build only: the sanitizer build adds nothing.
if(NOT WAVE_SANITIZE)
  add_test(NAME alerts_test
    COMMAND bash ${CMAKE_CURRENT_SOURCE_DIR}/alerts_test.sh ${PROJECT_BINARY_DIR})
  set_tests_properties(alerts_test PROPERTIES SKIP_RETURN_CODE 77)
endif()

# The container tests build images (podman, a Debian 12 base made with
# debootstrap), so they run in the normal build only: the sanitizer build
# adds nothing to what they check.
if(NOT WAVE_SANITIZE)
  add_test(NAME container_test
    COMMAND bash ${PROJECT_SOURCE_DIR}/tests/container/run.sh ${PROJECT_BINARY_DIR})
  set_tests_properties(container_test PROPERTIES LABELS root
    TIMEOUT 2400 RUN_SERIAL TRUE)
  wave_skippable(container_test)
endif()

# contrib/kubernetes/wavedd.yaml and contrib/compose/compose.yaml played with
# podman (tests/container/kube.sh): after container_test, whose image layers
# it reuses (so its build is a cache hit); root, as podman here needs.
if(NOT WAVE_SANITIZE)
  add_test(NAME kube_test
    COMMAND bash ${PROJECT_SOURCE_DIR}/tests/container/kube.sh ${PROJECT_BINARY_DIR})
  set_tests_properties(kube_test PROPERTIES SKIP_RETURN_CODE 77
    TIMEOUT 1800 RUN_SERIAL TRUE DEPENDS container_test LABELS root)
endif()

# The README test (tests/readme/run.sh): README.md's shell blocks and
# docs/cli.md's examples, as written, in a container (podman, as a user,
# 2 CPUs); skipped where podman or root is missing.
if(NOT WAVE_SANITIZE)
  add_test(NAME readme_test COMMAND bash ${PROJECT_SOURCE_DIR}/tests/readme/run.sh)
  set_tests_properties(readme_test PROPERTIES LABELS root
    TIMEOUT 1200 RUN_SERIAL TRUE)
  wave_skippable(readme_test)
endif()
