#include "georoute/transport/version.hpp"

#ifndef GEOROUTE_VERSION
#  error "GEOROUTE_VERSION comes from CMake (transport/CMakeLists.txt)"
#endif

namespace georoute::transport {

std::string_view version() {
  return GEOROUTE_VERSION;
}

std::string_view user_agent() {
  return "georoute/" GEOROUTE_VERSION;
}

} // namespace georoute::transport
