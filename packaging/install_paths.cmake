# Included by the install script of each component: FEDCL_ETC, where configuration goes. With the
# prefix /usr it is /etc, as in distribution packages (GNUInstallDirs' rule); any other prefix keeps
# it under PREFIX. Decided at install time, since `cmake --install --prefix` may change the prefix then.
if(IS_ABSOLUTE "${FEDCL_SYSCONFDIR}")
  set(FEDCL_ETC "${FEDCL_SYSCONFDIR}")
elseif(CMAKE_INSTALL_PREFIX STREQUAL "/usr" OR CMAKE_INSTALL_PREFIX STREQUAL "/")
  set(FEDCL_ETC /etc)
else()
  set(FEDCL_ETC "${CMAKE_INSTALL_PREFIX}/${FEDCL_SYSCONFDIR}")
endif()

# Installs a configuration file unless one is there already: an administrator's edits survive a
# reinstall (packages get the same from dpkg's conffiles).
function(fedcl_install_config source directory name)
  if(EXISTS "$ENV{DESTDIR}${directory}/${name}")
    message(STATUS "Keeping: $ENV{DESTDIR}${directory}/${name} (the example is ${source})")
  else()
    file(INSTALL DESTINATION "${directory}" TYPE FILE RENAME "${name}" FILES "${source}")
  endif()
endfunction()
