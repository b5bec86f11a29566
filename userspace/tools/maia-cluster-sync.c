// SPDX-License-Identifier: MIT
/*
 * maia-cluster-sync: the guest's side of the cluster launcher's start
 * barrier (qemu/cluster/maia-cluster, Documentation/cluster.rst).
 *
 * Finds the virtio-serial port named "maia.cluster", writes "ready" on it
 * and waits for the launcher's "go", which comes once every rank's guest is
 * ready: their drivers are loaded (a driver's probe resets its device and
 * takes the links down) and their links were up. Exit status 0 on "go".
 * The wait has no timeout of its own: the launcher answers every rank once
 * each guest asked or died, and each QEMU runs under a timeout.
 */
#include <dirent.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#define PORT_NAME	"maia.cluster"

/* /dev/vportNpM of the port called PORT_NAME, from /sys/class/virtio-ports. */
static int find_port(char *dev, size_t size)
{
	DIR *d = opendir("/sys/class/virtio-ports");
	struct dirent *e;
	int found = -1;

	if (!d)
		return -1;
	while (found && (e = readdir(d))) {
		char path[512], name[64] = "";
		FILE *f;

		if (e->d_name[0] == '.')
			continue;
		snprintf(path, sizeof(path), "/sys/class/virtio-ports/%s/name", e->d_name);
		f = fopen(path, "re");
		if (!f)
			continue;
		if (fgets(name, sizeof(name), f) && !strncmp(name, PORT_NAME, strlen(PORT_NAME)) &&
		    (name[strlen(PORT_NAME)] == '\n' || !name[strlen(PORT_NAME)])) {
			snprintf(dev, size, "/dev/%s", e->d_name);
			found = 0;
		}
		fclose(f);
	}
	closedir(d);
	return found;
}

int main(void)
{
	char dev[300], reply[64];
	size_t got = 0;
	ssize_t n;
	int fd;

	if (find_port(dev, sizeof(dev))) {
		fprintf(stderr, "maia-cluster-sync: no virtio-serial port '%s' (not started by "
			"maia-cluster?)\n", PORT_NAME);
		return 1;
	}
	fd = open(dev, O_RDWR | O_CLOEXEC);
	if (fd < 0 || write(fd, "ready\n", 6) != 6) {
		perror("maia-cluster-sync");
		return 1;
	}
	while (got < sizeof(reply) - 1 && (n = read(fd, reply + got, sizeof(reply) - 1 - got)) > 0) {
		got += (size_t)n;
		reply[got] = '\0';
		if (strchr(reply, '\n'))
			break;
	}
	close(fd);
	if (strncmp(reply, "go\n", 3)) {
		fprintf(stderr, "maia-cluster-sync: the launcher did not say go\n");
		return 1;
	}
	return 0;
}
