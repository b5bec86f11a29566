/* SPDX-License-Identifier: MIT */
/* libmaia internals shared by its source files. */
#ifndef LIBMAIA_INTERNAL_H
#define LIBMAIA_INTERNAL_H

#include "libmaia.h"

struct maia_device {
	int fd;
	int index;
	char pci_address[16];
};

/* drmIoctl with MAIA_TRACE logging; returns 0 or a negative errno. */
int maia_ioctl(struct maia_device *dev, unsigned long request, void *arg);

#define MAIA_EXPORT __attribute__((visibility("default")))

#endif /* LIBMAIA_INTERNAL_H */
