# georoute as a CMake package (included by the top-level CMakeLists.txt once
# the libraries exist).
#
#   georoute::georoute   the engine: actors, messages, config, policy, HTTP
#                        client -- everything a host program links
#   georoute::policy     the pure decision code (no CAF, no Boost)
#   georoute::wire       URL parsing, master-key signing, JSON codecs
#   georoute::http       the Beast HTTP client (+ wire)
#   georoute::messages   the CAF message contract (+ wire)
#   georoute::config     option structs, loading and validation (CAF core)
#
# The same names exist after add_subdirectory(<georoute>) (aliases below) and
# after find_package(georoute CONFIG) (the installed export). Headers are
# included as <georoute/actors/engine.hpp>, <georoute/messages/types.hpp>,
# ... in both cases: the build tree's include/georoute (links to the source
# folders) while building, <prefix>/include/georoute once installed.
include(GNUInstallDirs)
include(CMakePackageConfigHelpers)

set(georoute_package_targets
  georoute_actors georoute_policy georoute_wire georoute_http
  georoute_messages georoute_config)

# actors/policy/CMakeLists.txt names its include directory as a plain source
# path and links georoute_warnings without $<BUILD_INTERFACE:...>; both are
# build-only, and an export may carry neither. Until that file says so itself
# (the other directories do), its interface is corrected here.
get_target_property(_georoute_policy_links georoute_policy INTERFACE_LINK_LIBRARIES)
list(REMOVE_ITEM _georoute_policy_links "$<LINK_ONLY:georoute_warnings>")
set_target_properties(georoute_policy PROPERTIES
  INTERFACE_INCLUDE_DIRECTORIES ""
  INTERFACE_LINK_LIBRARIES "${_georoute_policy_links}")

foreach(_georoute_target IN LISTS georoute_package_targets)
  string(REPLACE "georoute_" "" _georoute_export_name ${_georoute_target})
  if(_georoute_target STREQUAL "georoute_actors")
    set(_georoute_export_name georoute)
  endif()
  set_target_properties(${_georoute_target} PROPERTIES
    EXPORT_NAME ${_georoute_export_name})
  target_include_directories(${_georoute_target} INTERFACE
    $<BUILD_INTERFACE:${GEOROUTE_BUILD_INCLUDE_DIR}>
    $<INSTALL_INTERFACE:${CMAKE_INSTALL_INCLUDEDIR}>)
  target_compile_features(${_georoute_target} INTERFACE cxx_std_17)
  add_library(georoute::${_georoute_export_name} ALIAS ${_georoute_target})
endforeach()

if(NOT GEOROUTE_INSTALL)
  return()
endif()

set(georoute_cmake_dir ${CMAKE_INSTALL_LIBDIR}/cmake/georoute)

install(TARGETS ${georoute_package_targets}
  EXPORT georouteTargets
  ARCHIVE DESTINATION ${CMAKE_INSTALL_LIBDIR}
  LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR})
install(EXPORT georouteTargets
  NAMESPACE georoute::
  DESTINATION ${georoute_cmake_dir})

# Every header of the four library folders, under include/georoute/ with the
# source tree's paths, so that the headers' own includes
# ("georoute/actors/policy/model.hpp") resolve there too. The public API is
# actors/engine.hpp, actors/log.hpp, actors/client.hpp, transport/port.hpp
# (a host's own transport), messages/ and config/; the rest is what they
# include, or what the parts above offer alone.
install(DIRECTORY
    ${PROJECT_SOURCE_DIR}/actors
    ${PROJECT_SOURCE_DIR}/messages
    ${PROJECT_SOURCE_DIR}/transport
    ${PROJECT_SOURCE_DIR}/config
  DESTINATION ${CMAKE_INSTALL_INCLUDEDIR}/georoute
  FILES_MATCHING PATTERN "*.hpp"
  # The HTTP/1.1 client's own headers include Beast, io_loop_asio.hpp
  # includes Asio; nothing installed includes them, and a host needs no
  # Boost.
  PATTERN "http1" EXCLUDE
  PATTERN "io_loop_asio.hpp" EXCLUDE
  # The NATS channel and the fleet's link over it (transport/nats,
  # actors/nats) are built in the build tree only: their libraries are not
  # exported yet, so their headers are not installed either.
  PATTERN "nats" EXCLUDE)

configure_package_config_file(
  ${PROJECT_SOURCE_DIR}/cmake/georouteConfig.cmake.in
  ${PROJECT_BINARY_DIR}/georouteConfig.cmake
  INSTALL_DESTINATION ${georoute_cmake_dir})
# 0.x: a new minor version may break the API.
write_basic_package_version_file(
  ${PROJECT_BINARY_DIR}/georouteConfigVersion.cmake
  COMPATIBILITY SameMinorVersion)
install(FILES
    ${PROJECT_BINARY_DIR}/georouteConfig.cmake
    ${PROJECT_BINARY_DIR}/georouteConfigVersion.cmake
    ${PROJECT_SOURCE_DIR}/cmake/FindCAF.cmake
  DESTINATION ${georoute_cmake_dir})

# Every key with its default and why; LICENSE and NOTICE.
install(FILES ${PROJECT_SOURCE_DIR}/config/georoute.ini
  DESTINATION ${CMAKE_INSTALL_DATADIR}/georoute)
install(FILES ${PROJECT_SOURCE_DIR}/LICENSE ${PROJECT_SOURCE_DIR}/NOTICE
  DESTINATION ${CMAKE_INSTALL_DOCDIR})
