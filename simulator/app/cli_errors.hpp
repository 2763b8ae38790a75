#pragma once

#include <stdexcept>

namespace prismsim {

/// A command line that cannot be carried out as written (exit code 2).
struct UsageError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

}  // namespace prismsim
