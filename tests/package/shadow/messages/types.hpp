// A host's own messages/types.hpp, first on its include path
// (tests/package/): georoute's headers include theirs as
// "georoute/messages/types.hpp", never this one.
#error "a host's messages/types.hpp was included in place of georoute's"
