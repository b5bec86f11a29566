// SPDX-License-Identifier: GPL-2.0-only
/*
 * Maia accelerator driver: the one place the tracepoints of maia_trace.h
 * are instantiated.
 */

#define CREATE_TRACE_POINTS
#include "maia_trace.h"
