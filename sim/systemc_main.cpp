// libsystemc.so's own main() calls sc_main, so the library refers to it and
// every program linking SystemC must define it. Tessera's programs have
// their own main and drive the kernel through sim::Chip; this definition only
// satisfies the linker and is never the entry point.
#include <cstdio>

extern "C" int sc_main(int, char*[]) {
  std::fputs("tessera: sc_main is not an entry point of this program\n", stderr);
  return 1;
}
