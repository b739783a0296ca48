# Helpers that give every Tessera target the same language level and warnings.

set(TESSERA_WARNINGS -Wall -Wextra -Wpedantic -Wshadow -Wnon-virtual-dtor
    -Wold-style-cast -Wcast-align -Wunused -Woverloaded-virtual -Wconversion
    -Wsign-conversion -Wdouble-promotion -Wformat=2
    -Wimplicit-fallthrough)

function(tessera_apply_warnings target)
  target_compile_options(${target} PRIVATE ${TESSERA_WARNINGS})
  if(TESSERA_WERROR)
    target_compile_options(${target} PRIVATE -Werror)
    if(CMAKE_CXX_COMPILER_ID STREQUAL "GNU")
      # g++ 12's flow-sensitive warnings misfire inside libstdc++ at -O3 (std::string,
      # std::vector and std::variant moves; GCC bugs 105329, 105651, 106199): they
      # stay warnings, never errors, so a Release build is not held hostage to them.
      target_compile_options(${target} PRIVATE -Wno-error=restrict -Wno-error=maybe-uninitialized
                             -Wno-error=array-bounds -Wno-error=stringop-overflow)
    endif()
  endif()
endfunction()

# tessera_use_mimalloc(<executable>): mimalloc replaces malloc and operator
# new in the program (its shared library interposes them). Compiling and
# simulating allocate millions of small objects, and glibc's allocator took
# ~13 % of a SigLIP so400m compile (the measurements: compiler/README.md,
# "Compile time", "The allocator"). --no-as-needed keeps the
# library although the program names none of its symbols. Sanitizer builds
# keep their runtimes' allocators (nothing happens then).
function(tessera_use_mimalloc target)
  if(NOT TESSERA_SANITIZE)
    target_link_libraries(${target} PRIVATE -Wl,--push-state,--no-as-needed mimalloc
                          -Wl,--pop-state)
  endif()
endfunction()

# tessera_library(<dir> SOURCES ... [DEPENDS ...])
# Builds the static library tessera_<dir> (alias tessera::<dir>) from one
# top-level directory. Headers are included as "<dir>/<file>.hpp" from the
# repository root.
function(tessera_library dir)
  cmake_parse_arguments(ARG "" "" "SOURCES;DEPENDS" ${ARGN})
  set(target tessera_${dir})
  add_library(${target} STATIC ${ARG_SOURCES})
  add_library(tessera::${dir} ALIAS ${target})
  target_include_directories(${target} PUBLIC ${PROJECT_SOURCE_DIR})
  target_link_libraries(${target} PUBLIC ${ARG_DEPENDS})
  tessera_apply_warnings(${target})
endfunction()

# tessera_test(<name> SOURCES ... [DEPENDS ...])
# One GoogleTest executable; every TEST in it becomes a ctest entry. RapidCheck
# is linked into every test so properties can live next to the examples.
function(tessera_test name)
  cmake_parse_arguments(ARG "" "" "SOURCES;DEPENDS" ${ARGN})
  add_executable(${name} ${ARG_SOURCES})
  target_link_libraries(${name} PRIVATE ${ARG_DEPENDS} GTest::gtest GTest::gtest_main
                        rapidcheck)
  target_include_directories(${name} PRIVATE ${PROJECT_SOURCE_DIR})
  tessera_apply_warnings(${name})
  gtest_discover_tests(${name} DISCOVERY_TIMEOUT 60
                       PROPERTIES ENVIRONMENT "RC_PARAMS=${TESSERA_RC_PARAMS}")
endfunction()

include(GoogleTest)
set(TESSERA_RC_PARAMS "max_success=100" CACHE STRING
    "RapidCheck parameters for ctest runs (raise max_success for long property runs)")
