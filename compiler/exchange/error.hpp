#pragma once
// The exchange scheduler's one error type: a phase that cannot be scheduled
// (bad input: the message names the transfer, its tiles and addresses, and
// the rule it breaks) or a schedule that fails validation (a scheduler bug:
// the message names the tile, the event and the rule of reference §5.5).

#include "support/error.hpp"

namespace tessera::compiler::exchange {

class ExchangeScheduleError : public Error {
 public:
  using Error::Error;
};

}  // namespace tessera::compiler::exchange
