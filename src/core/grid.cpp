#include "core/grid.h"

#include <cmath>

namespace vh {

int Grid::max_shell() const {
  const double kmax = std::sqrt(3.0) * (n / 2);
  return int(std::lround(kmax));
}

}  // namespace vh
