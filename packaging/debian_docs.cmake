# What Debian asks of every package's /usr/share/doc/PACKAGE: its copyright file and its Debian
# changelog, gzipped, as changelog.Debian.gz since the packages are not Debian-native (their
# version carries a Debian revision, debian.cmake). One changelog and one copyright serve the three
# packages: they are built from one source. `cmake --install` installs them too.
set(changelog ${CMAKE_CURRENT_SOURCE_DIR}/changelog)
set(changelog_gz ${CMAKE_CURRENT_BINARY_DIR}/changelog.Debian.gz)
add_custom_command(OUTPUT ${changelog_gz}
  COMMAND sh -c "gzip -9nc '${changelog}' > '${changelog_gz}'"
  DEPENDS ${changelog} VERBATIM)
add_custom_target(debian_changelog ALL DEPENDS ${changelog_gz})

foreach(component ${CPACK_COMPONENTS_ALL})
  string(TOUPPER ${component} upper)
  install(FILES ${CMAKE_CURRENT_SOURCE_DIR}/copyright ${changelog_gz}
          DESTINATION ${CMAKE_INSTALL_DATAROOTDIR}/doc/${CPACK_DEBIAN_${upper}_PACKAGE_NAME} COMPONENT ${component})
endforeach()
