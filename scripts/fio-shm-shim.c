// SPDX-License-Identifier: GPL-2.0
/*
 * fio-shm-shim.so - System V shared memory for fio in the bench guest.
 *
 * fio keeps its job table in a System V shared memory segment, even with
 * --thread, and exits when shmget() fails. The guest kernels are built
 * without CONFIG_SYSVIPC, so make bench preloads this library into the
 * host's fio: each segment is a MAP_SHARED anonymous mapping, which forked
 * jobs inherit like an attached segment. Built by scripts/bench.sh on the
 * host (fio is dynamically linked), never part of the guest's tests.
 */
#include <errno.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/shm.h>

#define MAX_SEGMENTS 64

static struct {
	void *addr;
	size_t size;
} segments[MAX_SEGMENTS];

static int valid(int id)
{
	if (id < 0 || id >= MAX_SEGMENTS || !segments[id].addr) {
		errno = EINVAL;
		return 0;
	}
	return 1;
}

int shmget(key_t key, size_t size, int flags)
{
	void *addr;
	int id;

	(void)key;
	(void)flags;
	for (id = 0; id < MAX_SEGMENTS && segments[id].addr; id++)
		;
	if (id == MAX_SEGMENTS) {
		errno = ENOSPC;
		return -1;
	}
	addr = mmap(NULL, size, PROT_READ | PROT_WRITE,
		    MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	if (addr == MAP_FAILED) {
		errno = ENOMEM;
		return -1;
	}
	segments[id].addr = addr;
	segments[id].size = size;
	return id;
}

void *shmat(int id, const void *addr, int flags)
{
	(void)addr;
	(void)flags;
	return valid(id) ? segments[id].addr : (void *)-1;
}

int shmdt(const void *addr)
{
	(void)addr;
	return 0;
}

int shmctl(int id, int cmd, struct shmid_ds *buf)
{
	if (!valid(id))
		return -1;
	if (cmd == IPC_STAT && buf) {
		memset(buf, 0, sizeof(*buf));
		buf->shm_segsz = segments[id].size;
	}
	return 0;
}
