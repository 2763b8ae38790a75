#pragma once

#include "config/variability_spec.hpp"

namespace prismsim {

/// Lumped RC model of one GPU's temperature (see docs/variability.md).
///
/// C dT/dt = P - (T - T_ambient) / R, so over an interval of constant power P the temperature
/// relaxes exponentially, with time constant tau = R C, towards T_ambient + R P. Power is the idle
/// power plus the dynamic part scaled by the busy fraction and by clock^3 (voltage tracks
/// frequency). Above the throttle temperature the clock derates linearly, down to a floor; a
/// power cap limits the clock at which a busy GPU stays under the cap.
class ThermalModel {
 public:
  explicit ThermalModel(const ThermalSpec& spec);

  /// Temperature a run starts at: the spec's, or the idle steady state.
  double initial_c(double ambient_c) const;
  /// Clock fraction (0, 1] at `temperature_c`, including the power cap's limit.
  double clock(double temperature_c) const;
  /// Average power in W over an interval busy for `busy_fraction` of it at `clock`.
  double power_w(double busy_fraction, double clock) const;
  /// Temperature where the model settles under constant `busy_fraction` and `clock`.
  double steady_state_c(double ambient_c, double busy_fraction, double clock) const;
  /// Temperature after `seconds` at constant `busy_fraction` and `clock`, from `temperature_c`.
  double advance(double temperature_c, double ambient_c, double seconds, double busy_fraction,
                 double clock) const;

 private:
  ThermalSpec spec_;
  double cap_clock_ = 1;
};

}  // namespace prismsim
