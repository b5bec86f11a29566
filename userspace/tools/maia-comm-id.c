// SPDX-License-Identifier: MIT
/*
 * maia-comm-id: print a new communicator id (maia_comm_get_unique_id) as
 * hex on one line, for the ranks of a communicator spread over processes
 * (maia-coll-perf --id, the cluster launcher). Needs no device.
 */
#include <stdio.h>

#include "libmaia.h"

int main(void)
{
	struct maia_comm_id id;
	size_t i;

	if (maia_comm_get_unique_id(&id)) {
		fprintf(stderr, "maia-comm-id: %s\n", maia_last_error());
		return 1;
	}
	for (i = 0; i < sizeof(id.bytes); i++)
		printf("%02x", id.bytes[i]);
	printf("\n");
	return 0;
}
