#!/bin/sh
# SPDX-License-Identifier: MIT
# In the guest: run the ioctl fuzzer with the arguments given, as TAP.
DIR=$(cd "$(dirname "$0")" && pwd)
exec "$DIR/maia_ioctl_fuzz" "$@"
