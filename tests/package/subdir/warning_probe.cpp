// Compiled by package.add_subdirectory_consumer with georoute::georoute's
// usage requirements: the unused variable warns under -Wall, and fails only
// if georoute's -Werror reached this target.
int warning_probe() {
  int unused = 0;
  return 1;
}
