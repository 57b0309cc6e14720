// The typed errors and VH_CHECK live in base/error.h; this header only forwards to it for the
// files that still include it. New code includes base/error.h.
#pragma once

#include "base/error.h"
