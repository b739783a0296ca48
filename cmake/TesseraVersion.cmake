# Generates version.cpp with the project version and the git revision. The
# revision is re-read on every build (cmake -P at build time), and the file is
# rewritten only when it changes, so an unchanged tree does not relink.

set(TESSERA_VERSION_CPP "${PROJECT_BINARY_DIR}/generated/version.cpp")
add_custom_target(tessera_version_info
  COMMAND ${CMAKE_COMMAND}
          -DOUTPUT=${TESSERA_VERSION_CPP}
          -DVERSION=${PROJECT_VERSION}
          -DSOURCE_DIR=${PROJECT_SOURCE_DIR}
          -P ${PROJECT_SOURCE_DIR}/cmake/WriteVersion.cmake
  BYPRODUCTS ${TESSERA_VERSION_CPP}
  COMMENT "Reading the git revision"
  VERBATIM)
