// Small value types shared by the fmm/ library.
#pragma once

#include <array>

namespace vh::fmm {

/// A point or vector in R^3, components (x, y, z).
using Vec3 = std::array<double, 3>;
/// Velocity gradient, grad[m][k] = d u_m / d x_k (row m: component of u; column k: direction).
using Mat3 = std::array<std::array<double, 3>, 3>;

}  // namespace vh::fmm
