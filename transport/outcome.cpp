#include "transport/outcome.hpp"

namespace georoute::transport {

const char* to_string(failure x) {
  switch (x) {
  case failure::none:
    return "none";
  case failure::refused:
    return "refused";
  case failure::reset:
    return "reset";
  case failure::timeout:
    return "timeout";
  case failure::dns:
    return "dns";
  case failure::tls:
    return "tls";
  case failure::protocol:
    return "protocol";
  case failure::body_too_large:
    return "body_too_large";
  }
  return "unknown";
}

} // namespace georoute::transport
