#include "trace/trace-hw_misc_maia.h"
