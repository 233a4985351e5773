# What `cmake --install` puts where, and the Debian package CPack builds from it (tools/package).
#
#   bin/                    corral, corral-target
#   share/man/man1, man5    corral.1, corral-target.1, corral-config.5, corral-scenario.5
#                           (written by `corral man`, gzipped)
#   share/bash-completion/completions/corral, share/zsh/vendor-completions/_corral,
#   share/fish/vendor_completions.d/corral.fish   (written by `corral completion`)
#   share/corral/           the systemd unit, an example config, the Grafana dashboard
#   share/doc/corral/       README, CHANGELOG and the guides
#
# With CORRAL_SYSTEM_LAYOUT (the package), also the unit in /lib/systemd/system and the config
# as /etc/corral/config.json.
include(GNUInstallDirs)
# Installing (and CPack) builds only what is installed, not the tests.
set(CMAKE_SKIP_INSTALL_ALL_DEPENDENCY ON)
option(CORRAL_SYSTEM_LAYOUT "Install the systemd unit and /etc/corral/config.json (the package)" OFF)

set(CORRAL_MAINTAINER "corral maintainers <maintainers@users.noreply.a-seed-00a0985a.example>")
set(CORRAL_SUMMARY "runs long-running API test scenarios at scale under a supervisor")
configure_file(${CMAKE_SOURCE_DIR}/packaging/corral.service.in
               ${CMAKE_BINARY_DIR}/packaging/corral.service @ONLY)

install(TARGETS corral corral-target RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR})
install(FILES ${CMAKE_BINARY_DIR}/man/corral.1.gz ${CMAKE_BINARY_DIR}/man/corral-target.1.gz
        DESTINATION ${CMAKE_INSTALL_MANDIR}/man1)
install(FILES ${CMAKE_BINARY_DIR}/man/corral-config.5.gz ${CMAKE_BINARY_DIR}/man/corral-scenario.5.gz
        DESTINATION ${CMAKE_INSTALL_MANDIR}/man5)
install(FILES ${CMAKE_BINARY_DIR}/completions/corral
        DESTINATION ${CMAKE_INSTALL_DATADIR}/bash-completion/completions)
install(FILES ${CMAKE_BINARY_DIR}/completions/_corral
        DESTINATION ${CMAKE_INSTALL_DATADIR}/zsh/vendor-completions)
install(FILES ${CMAKE_BINARY_DIR}/completions/corral.fish
        DESTINATION ${CMAKE_INSTALL_DATADIR}/fish/vendor_completions.d)
install(FILES ${CMAKE_BINARY_DIR}/packaging/corral.service ${CMAKE_SOURCE_DIR}/packaging/config.json
              ${CMAKE_SOURCE_DIR}/docs/grafana/corral.json
        DESTINATION ${CMAKE_INSTALL_DATADIR}/corral)
file(GLOB CORRAL_GUIDES ${CMAKE_SOURCE_DIR}/docs/*.md)
install(FILES ${CMAKE_SOURCE_DIR}/README.md ${CMAKE_SOURCE_DIR}/CHANGELOG.md ${CORRAL_GUIDES}
        DESTINATION ${CMAKE_INSTALL_DOCDIR})
if(CORRAL_SYSTEM_LAYOUT)
  install(FILES ${CMAKE_BINARY_DIR}/packaging/corral.service DESTINATION /lib/systemd/system)
  install(FILES ${CMAKE_SOURCE_DIR}/packaging/config.json DESTINATION /etc/corral)
  # Debian's: the copyright, and the changelog of the package (the changes are CHANGELOG.md's).
  install(FILES ${CMAKE_SOURCE_DIR}/packaging/debian/copyright DESTINATION ${CMAKE_INSTALL_DOCDIR})
  string(TIMESTAMP corral_changelog_date "%a, %d %b %Y 00:00:00 +0000" UTC)
  file(WRITE ${CMAKE_BINARY_DIR}/packaging/changelog
       "corral (${PROJECT_VERSION}) unstable; urgency=medium\n\n"
       "  * corral ${PROJECT_VERSION}: see /usr/share/doc/corral/CHANGELOG.md.\n\n"
       " -- ${CORRAL_MAINTAINER}  ${corral_changelog_date}\n")
  add_custom_command(OUTPUT ${CMAKE_BINARY_DIR}/packaging/changelog.gz
    COMMAND gzip -9n -c ${CMAKE_BINARY_DIR}/packaging/changelog > ${CMAKE_BINARY_DIR}/packaging/changelog.gz
    DEPENDS ${CMAKE_BINARY_DIR}/packaging/changelog)
  add_custom_target(corral_deb_changelog ALL DEPENDS ${CMAKE_BINARY_DIR}/packaging/changelog.gz)
  install(FILES ${CMAKE_BINARY_DIR}/packaging/changelog.gz DESTINATION ${CMAKE_INSTALL_DOCDIR})
endif()

set(CPACK_GENERATOR DEB)
set(CPACK_PACKAGE_NAME corral)
set(CPACK_PACKAGE_VERSION ${PROJECT_VERSION})
set(CPACK_PACKAGE_CONTACT ${CORRAL_MAINTAINER})
set(CPACK_PACKAGE_DESCRIPTION_SUMMARY ${CORRAL_SUMMARY})
set(CPACK_PACKAGE_DESCRIPTION
    "corral runs API test scenarios (start a job, poll its status, start the
next) as thousands of instances at once, on a daemon that supervises one
worker process per CPU and resumes them after a crash, and load-tests
servers with virtual users and held connections. The package installs the
daemon as a systemd service, disabled until its admin enables it.")
set(CPACK_DEBIAN_FILE_NAME DEB-DEFAULT)
set(CPACK_DEBIAN_PACKAGE_SECTION net)
set(CPACK_DEBIAN_PACKAGE_PRIORITY optional)
set(CPACK_DEBIAN_PACKAGE_SHLIBDEPS ON)
# dpkg-shlibdeps finds the libraries the binaries link; libcurl and libpq are loaded when first
# used (shared/lazy_library.h), so they are named here.
string(REGEX MATCH "^[0-9]+" corral_pq_major "${PQ_VERSION}")
set(CPACK_DEBIAN_PACKAGE_DEPENDS
    "adduser, libcurl4 (>= ${CURL_VERSION_STRING}), libpq5 (>= ${corral_pq_major})")
set(CPACK_DEBIAN_PACKAGE_CONTROL_EXTRA
    ${CMAKE_SOURCE_DIR}/packaging/debian/postinst ${CMAKE_SOURCE_DIR}/packaging/debian/prerm
    ${CMAKE_SOURCE_DIR}/packaging/debian/postrm ${CMAKE_SOURCE_DIR}/packaging/debian/conffiles)
set(CPACK_DEBIAN_PACKAGE_CONTROL_STRICT_PERMISSION ON)
set(CPACK_STRIP_FILES ON)
set(CPACK_PACKAGE_INSTALL_DIRECTORY /usr)
set(CPACK_PACKAGING_INSTALL_PREFIX /usr)
set(CPACK_OUTPUT_FILE_PREFIX ${CMAKE_BINARY_DIR})
include(CPack)
