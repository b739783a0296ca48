# Finds every external dependency. Each comes from one Debian package; when one
# is missing, configuration stops with the name of the package to install
# (scripts/setup installs all of them).

function(tessera_missing what debian_package)
  message(FATAL_ERROR
    "Tessera needs ${what}, which was not found. Install the Debian package "
    "'${debian_package}' (or run scripts/setup, which installs everything).")
endfunction()

macro(tessera_find_config package debian_package)
  find_package(${package} CONFIG QUIET ${ARGN})
  if(NOT ${package}_FOUND)
    tessera_missing(${package} ${debian_package})
  endif()
endmacro()

find_package(PkgConfig QUIET)
if(NOT PkgConfig_FOUND)
  tessera_missing(pkg-config pkg-config)
endif()

# SystemC: Debian ships a pkg-config file, no CMake package.
pkg_check_modules(SYSTEMC QUIET IMPORTED_TARGET GLOBAL systemc>=2.3)
if(NOT SYSTEMC_FOUND)
  tessera_missing("SystemC >= 2.3" libsystemc-dev)
endif()
add_library(tessera::systemc INTERFACE IMPORTED GLOBAL)
target_link_libraries(tessera::systemc INTERFACE PkgConfig::SYSTEMC)
# Debian's libsystemc was built as C++17 and exports an API-version symbol
# named after that standard; our C++20 translation units must ask for the
# same symbol or the link fails with an undefined sc_api_version_*_cxx202002L.
target_compile_definitions(tessera::systemc INTERFACE SC_CPLUSPLUS=201703L)

tessera_find_config(CapnProto libcapnp-dev)
find_program(TESSERA_CAPNP_TOOL capnp)
if(NOT TESSERA_CAPNP_TOOL)
  tessera_missing("the capnp compiler" capnproto)
endif()

pkg_check_modules(ZSTD QUIET IMPORTED_TARGET GLOBAL libzstd)
if(NOT ZSTD_FOUND)
  tessera_missing(zstd libzstd-dev)
endif()

find_package(OpenSSL QUIET COMPONENTS Crypto)
if(NOT OpenSSL_FOUND)
  tessera_missing("OpenSSL libcrypto" libssl-dev)
endif()

find_package(Boost 1.74 QUIET CONFIG COMPONENTS program_options)
if(NOT Boost_FOUND)
  tessera_missing("Boost.Program_options" libboost-program-options-dev)
endif()
if(NOT EXISTS "${Boost_INCLUDE_DIRS}/boost/interprocess/sync/file_lock.hpp")
  tessera_missing("Boost.Interprocess headers" libboost-dev)
endif()

tessera_find_config(fmt libfmt-dev)
tessera_find_config(spdlog libspdlog-dev)
tessera_find_config(nlohmann_json nlohmann-json3-dev)
tessera_find_config(GTest libgtest-dev)
tessera_find_config(rapidcheck librapidcheck-dev)

# OpenBLAS's CBLAS: the GEMMs of the SigLIP CPU reference (models/). Debian's
# config file gives paths, not a target, so the target is made here.
tessera_find_config(OpenBLAS libopenblas-dev)
add_library(tessera::openblas INTERFACE IMPORTED GLOBAL)
target_include_directories(tessera::openblas SYSTEM INTERFACE ${OpenBLAS_INCLUDE_DIRS})
target_link_libraries(tessera::openblas INTERFACE ${OpenBLAS_LIBRARIES})

# Image decoding for `tessera siglip ... --image` (models/siglip/image).
find_package(PNG QUIET)
if(NOT PNG_FOUND)
  tessera_missing(libpng libpng-dev)
endif()
find_package(JPEG QUIET)
if(NOT JPEG_FOUND)
  tessera_missing(libjpeg libjpeg62-turbo-dev)
endif()

# mimalloc: the malloc of the `tessera` command and the compile benchmarks
# (tessera_use_mimalloc, cmake/TesseraTargets.cmake). Not for
# sanitizer builds, whose runtimes replace malloc themselves.
if(NOT TESSERA_SANITIZE)
  tessera_find_config(mimalloc libmimalloc-dev)
endif()

# Host threads (the simulator's tile pool, support/thread_pool.hpp).
set(THREADS_PREFER_PTHREAD_FLAG ON)
find_package(Threads REQUIRED)
