#pragma once
// Valid applications for tests: a small fixed one, and a RapidCheck
// generator of random ones that satisfy every validation rule.

#include <rapidcheck.h>

#include "schema/model.hpp"

namespace tessera::testing {

// Two tiles (physical 0 and 5), each with a code segment at the load base and
// a data segment; one input, one output, one weight; a host call whose
// payloads are the input and the output; an entry point; a config write;
// debug symbols, allocations, a call site and an exchange phase. Every
// collection is non-empty, so each validation rule has something to break.
schema::Application sample_application();

// Random valid applications (1..4 tiles, shared and unique blobs, bindings,
// host calls over 1..4 invocations, debug records).
rc::Gen<schema::Application> valid_application();

}  // namespace tessera::testing
