// VH_HD (host and device per-point math): defined once in base/hd.h, shared with fmm/; this
// header stays for the files that include it by this name.
#pragma once
#include "base/hd.h"
