# cmake/install-service.cmake - run by `cmake --install` (install(SCRIPT)):
# writes the unit, the tmpfiles snippet and /etc/wavedd/devices.yaml with
# the paths of *this* install, so that `cmake --install build --prefix DIR`
# gives a tree whose daemon starts from its own config and packs.
# Inputs (set by the install(CODE) before it): WAVE_SRC, WAVE_BIN_REL,
# WAVE_DATA_REL, WAVE_SYSCONF_REL, WAVE_LIB_REL.
set(prefix "${CMAKE_INSTALL_PREFIX}")
# GNUInstallDirs' rule: prefix /usr keeps its config in /etc
if(prefix STREQUAL "/usr" AND WAVE_SYSCONF_REL STREQUAL "etc")
  set(WAVE_SYSCONFDIR "/etc")
elseif(IS_ABSOLUTE "${WAVE_SYSCONF_REL}")
  set(WAVE_SYSCONFDIR "${WAVE_SYSCONF_REL}")
else()
  set(WAVE_SYSCONFDIR "${prefix}/${WAVE_SYSCONF_REL}")
endif()
set(WAVE_BINDIR "${prefix}/${WAVE_BIN_REL}")
set(WAVE_PACKSDIR "${prefix}/${WAVE_DATA_REL}/wavedd/packs")
set(root "$ENV{DESTDIR}")  # file(INSTALL) adds it itself; EXISTS does not
set(tmp "${CMAKE_CURRENT_BINARY_DIR}/install-service")
file(MAKE_DIRECTORY "${tmp}/sysusers" "${tmp}/dist")
configure_file("${WAVE_SRC}/systemd/wavedd.service.in" "${tmp}/wavedd.service" @ONLY)
configure_file("${WAVE_SRC}/systemd/wavedd.tmpfiles" "${tmp}/wavedd.conf" @ONLY)
configure_file("${WAVE_SRC}/config/devices.installed.yaml.in" "${tmp}/devices.yaml" @ONLY)
file(INSTALL "${tmp}/wavedd.service" DESTINATION "${prefix}/${WAVE_LIB_REL}/systemd/system")
file(INSTALL "${tmp}/wavedd.conf" DESTINATION "${prefix}/${WAVE_LIB_REL}/tmpfiles.d")
configure_file("${WAVE_SRC}/systemd/wavedd.sysusers" "${tmp}/sysusers/wavedd.conf" COPYONLY)
file(INSTALL "${tmp}/sysusers/wavedd.conf" DESTINATION "${prefix}/${WAVE_LIB_REL}/sysusers.d")
# an edited config is the operator's: never overwrite it
if(EXISTS "${root}${WAVE_SYSCONFDIR}/wavedd/devices.yaml")
  message(STATUS "Keeping: ${root}${WAVE_SYSCONFDIR}/wavedd/devices.yaml")
  configure_file("${tmp}/devices.yaml" "${tmp}/dist/devices.yaml.dist" COPYONLY)
  file(INSTALL "${tmp}/dist/devices.yaml.dist" DESTINATION "${WAVE_SYSCONFDIR}/wavedd")
else()
  file(INSTALL "${tmp}/devices.yaml" DESTINATION "${WAVE_SYSCONFDIR}/wavedd")
endif()
