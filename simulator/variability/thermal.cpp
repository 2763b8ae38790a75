#include "variability/thermal.hpp"

#include <algorithm>
#include <cmath>

namespace prismsim {

ThermalModel::ThermalModel(const ThermalSpec& spec) : spec_(spec) {
  if (spec.power_cap_w > 0 && spec.power_cap_w < spec.busy_power_w) {
    cap_clock_ =
        std::cbrt((spec.power_cap_w - spec.idle_power_w) / (spec.busy_power_w - spec.idle_power_w));
  }
}

double ThermalModel::initial_c(double ambient_c) const {
  return spec_.initial_c >= 0 ? spec_.initial_c : steady_state_c(ambient_c, 0, 1);
}

double ThermalModel::clock(double temperature_c) const {
  const double over = temperature_c - spec_.throttle_c;
  const double thermal = over > 0 ? std::max(spec_.min_clock, 1 - spec_.derate_per_c * over) : 1;
  return std::min(thermal, cap_clock_);
}

double ThermalModel::power_w(double busy_fraction, double clock) const {
  return spec_.idle_power_w +
         (spec_.busy_power_w - spec_.idle_power_w) * busy_fraction * clock * clock * clock;
}

double ThermalModel::steady_state_c(double ambient_c, double busy_fraction, double clock) const {
  return ambient_c + spec_.resistance_c_per_w * power_w(busy_fraction, clock);
}

double ThermalModel::advance(double temperature_c, double ambient_c, double seconds,
                             double busy_fraction, double clock) const {
  const double target = steady_state_c(ambient_c, busy_fraction, clock);
  return target + (temperature_c - target) * std::exp(-seconds / spec_.time_constant_s);
}

}  // namespace prismsim
