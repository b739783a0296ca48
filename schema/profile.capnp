# Cycle profiles of a run: per tile, per profiled step, when it started and
# ended. Produced by the simulator (exact) and by a C600 (from cycle samples).
#
# Cycle counters are raw per-tile 32-bit values and wrap: a step's duration is
# (endCycle - startCycle) mod 2^32, always computed with wrapping unsigned
# subtraction, never as a signed difference. A step longer than 2^32 cycles
# cannot be represented. Comparing counters of two tiles requires a shared
# origin (the run's start), which the producer states in `origin`.

@0x9bc85e10d9bc0879;

using Cxx = import "/capnp/c++.capnp";
$Cxx.namespace("tessera::schema::wire");

# Version 2 interns names: a SigLIP-sized run has a million steps but far
# fewer distinct (kind, kernel, operation, layer, metadata) labels, so a step
# is a label index and its two counters (16 bytes, not ~110 with its texts).
# Version 1 files (steps with their own texts) are still read.
const profileSchemaVersion :UInt32 = 2;

struct Profile {
  schemaVersion @0 :UInt32;
  clockHz @1 :UInt64;                # cycles per second used to report times (> 0)
  buildDigest @2 :Data;              # of the package that ran
  origin @3 :ClockOrigin;
  tiles @4 :List(TileProfile);       # sorted by physical tile, unique
  names @5 :List(Text);              # version 2: every distinct text once; name 0 is ""
  labels @6 :List(StepLabel);        # version 2: every distinct step label once
  droppedSamples @7 :UInt64;         # hardware: samples a full sample buffer could not hold
}

enum ClockOrigin {
  perTile @0;                        # each tile's counter has its own origin (hardware)
  shared @1;                         # all counters share the run's start (simulator)
}

enum StepKind {
  exchange @0;
  compute @1;
  synchronization @2;
  idle @3;
  host @4;
}

struct Metadata {
  name @0 :Text;
  value @1 :Text;
}

# Version 1's step, with its own texts.
struct Step {
  kind @0 :StepKind;
  kernel @1 :Text;                   # empty when the step runs no kernel
  operation @2 :Text;                # graph operation (provenance)
  metadata @3 :List(Metadata);
  startCycle @4 :UInt32;             # raw counter, wraps
  endCycle @5 :UInt32;               # raw counter, wraps; duration = end - start mod 2^32
}

# Version 2: what a step is, its texts as indices into Profile.names.
struct StepLabel {
  kind @0 :StepKind;
  kernel @1 :UInt32;                 # "" (0) when the step runs no kernel
  operation @2 :UInt32;              # graph operation (provenance)
  layer @3 :UInt32;                  # the loop iterations it ran in, "" outside loops
  metadata @4 :List(UInt32);         # name, value, name, value, ...
}

# Version 2's step.
struct PackedStep {
  label @0 :UInt32;                  # index into Profile.labels
  startCycle @1 :UInt32;             # raw counter, wraps
  endCycle @2 :UInt32;               # raw counter, wraps; duration = end - start mod 2^32
}

struct TileProfile {
  physicalTile @0 :UInt16;
  steps @1 :List(Step);              # version 1, in execution order
  packedSteps @2 :List(PackedStep);  # version 2, in execution order
}
