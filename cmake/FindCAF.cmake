# FindCAF: locate the C++ Actor Framework as Debian 12's libcaf-dev installs it
# (headers in /usr/include/caf, libcaf_{core,io,openssl}.so, no CMake package files).
# Creates the imported targets CAF::core, CAF::io, ... -- the names CAF >= 0.18 exports,
# so switching to an upstream CAF package later changes nothing downstream.
find_path(CAF_INCLUDE_DIR NAMES caf/all.hpp caf/detail/build_config.hpp)
if(CAF_INCLUDE_DIR AND EXISTS "${CAF_INCLUDE_DIR}/caf/config.hpp")
  file(STRINGS "${CAF_INCLUDE_DIR}/caf/config.hpp" _caf_version_line
       REGEX "^#define CAF_VERSION [0-9]+")
  string(REGEX MATCH "[0-9]+" _caf_version_number "${_caf_version_line}")
  math(EXPR _caf_major "${_caf_version_number} / 10000")
  math(EXPR _caf_minor "(${_caf_version_number} / 100) % 100")
  math(EXPR _caf_patch "${_caf_version_number} % 100")
  set(CAF_VERSION "${_caf_major}.${_caf_minor}.${_caf_patch}")
endif()

find_package(Threads REQUIRED)
set(_caf_components core ${CAF_FIND_COMPONENTS})
list(REMOVE_DUPLICATES _caf_components)
foreach(_caf_component IN LISTS _caf_components)
  find_library(CAF_${_caf_component}_LIBRARY NAMES caf_${_caf_component})
  if(CAF_${_caf_component}_LIBRARY)
    set(CAF_${_caf_component}_FOUND TRUE)
    if(NOT TARGET CAF::${_caf_component})
      add_library(CAF::${_caf_component} SHARED IMPORTED)
      set_target_properties(CAF::${_caf_component} PROPERTIES
        IMPORTED_LOCATION "${CAF_${_caf_component}_LIBRARY}"
        INTERFACE_INCLUDE_DIRECTORIES "${CAF_INCLUDE_DIR}"
        INTERFACE_LINK_LIBRARIES Threads::Threads)
      if(NOT _caf_component STREQUAL "core")
        set_property(TARGET CAF::${_caf_component} APPEND PROPERTY
          INTERFACE_LINK_LIBRARIES CAF::core)
      endif()
    endif()
  endif()
endforeach()

include(FindPackageHandleStandardArgs)
find_package_handle_standard_args(CAF
  REQUIRED_VARS CAF_INCLUDE_DIR
  VERSION_VAR CAF_VERSION
  HANDLE_COMPONENTS)
mark_as_advanced(CAF_INCLUDE_DIR)
