// A host's own config/settings.hpp, first on its include path
// (tests/package/): georoute's headers include theirs as
// "georoute/config/settings.hpp", never this one.
#error "a host's config/settings.hpp was included in place of georoute's"
