// What the tests on R ranks share: the rank's slab of a whole field and the relative L2
// difference of two slab-distributed fields over all the ranks (both core/slab_copy.h).
#pragma once

#include "core/grid.h"
#include "core/slab.h"
#include "core/slab_copy.h"

namespace vh::test {

using vh::relative_l2;  // core/slab_copy.h
using vh::restrict_to;

}  // namespace vh::test
