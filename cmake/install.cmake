# cmake/install.cmake - what `cmake --install` adds for running wavedd as a
# service: the packs, the systemd unit with its sysusers.d/tmpfiles.d
# snippets and /etc/wavedd/devices.yaml (cmake/install-service.cmake writes
# them with the install's own paths), man pages and shell completions.
install(DIRECTORY ${PROJECT_SOURCE_DIR}/config/packs/
  DESTINATION ${CMAKE_INSTALL_DATADIR}/wavedd/packs FILES_MATCHING PATTERN "*.yaml")
install(CODE "
  set(WAVE_SRC \"${PROJECT_SOURCE_DIR}\")
  set(WAVE_BIN_REL \"${CMAKE_INSTALL_BINDIR}\")
  set(WAVE_DATA_REL \"${CMAKE_INSTALL_DATADIR}\")
  set(WAVE_SYSCONF_REL \"${CMAKE_INSTALL_SYSCONFDIR}\")
  set(WAVE_LIB_REL \"lib\")
  set(CMAKE_CURRENT_BINARY_DIR \"${PROJECT_BINARY_DIR}\")
  include(\"${PROJECT_SOURCE_DIR}/cmake/install-service.cmake\")
")

# man pages: man/*.in are the one source; the build fills in the version
# and the install's paths, and wavectl(1)'s OPTIONS and ENVIRONMENT come
# from wavectl's option table (wvctl-gen, client/CMakeLists.txt)
set(WAVE_MAN_DATE "2026-12-01")
# the paths a default install uses (/usr/local: /usr/local/etc; /usr: /etc)
set(WAVE_FULL_SYSCONFDIR ${CMAKE_INSTALL_FULL_SYSCONFDIR})
set(WAVE_FULL_DATADIR ${CMAKE_INSTALL_FULL_DATADIR})
foreach(page wavedd.8 wavectl.1 devices.yaml.5)
  if(page STREQUAL "wavectl.1")
    configure_file(${PROJECT_SOURCE_DIR}/man/${page}.in
      ${PROJECT_BINARY_DIR}/man/${page}.tmpl @ONLY)
    add_custom_command(OUTPUT ${PROJECT_BINARY_DIR}/man/${page}
      COMMAND wvctl-gen man ${PROJECT_BINARY_DIR}/man/${page}.tmpl
        ${PROJECT_BINARY_DIR}/man/${page}
      DEPENDS wvctl-gen ${PROJECT_BINARY_DIR}/man/${page}.tmpl
      COMMENT "wavectl(1) with the options from the option table")
    add_custom_target(wavectl-man ALL DEPENDS ${PROJECT_BINARY_DIR}/man/${page})
  else()
    configure_file(${PROJECT_SOURCE_DIR}/man/${page}.in
      ${PROJECT_BINARY_DIR}/man/${page} @ONLY)
  endif()
  string(REGEX REPLACE ".*\\.([0-9])$" "\\1" sec ${page})
  install(FILES ${PROJECT_BINARY_DIR}/man/${page}
    DESTINATION ${CMAKE_INSTALL_MANDIR}/man${sec})
endforeach()

# wavectl's completions are generated (client/CMakeLists.txt); wavedd's is
# a file of its own
install(FILES ${PROJECT_BINARY_DIR}/completions/wavectl.bash
  DESTINATION ${CMAKE_INSTALL_DATADIR}/bash-completion/completions RENAME wavectl)
install(FILES ${PROJECT_BINARY_DIR}/completions/_wavectl
  DESTINATION ${CMAKE_INSTALL_DATADIR}/zsh/vendor-completions)
install(FILES ${PROJECT_BINARY_DIR}/completions/wavectl.fish
  DESTINATION ${CMAKE_INSTALL_DATADIR}/fish/vendor_completions.d)
install(FILES ${PROJECT_SOURCE_DIR}/completions/wavedd.bash
  DESTINATION ${CMAKE_INSTALL_DATADIR}/bash-completion/completions RENAME wavedd)
