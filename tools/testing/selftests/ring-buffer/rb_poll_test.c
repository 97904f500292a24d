// SPDX-License-Identifier: GPL-2.0
/*
 * poll() on a per-CPU trace_pipe_raw across a snapshot swap of that CPU.
 *
 * poll() queues its wait entry on the first pass only; later passes (after
 * any wake-up) look without queueing again, and epoll queues once, at
 * EPOLL_CTL_ADD. A per-CPU snapshot (echo 1 > per_cpu/cpuN/snapshot, or the
 * irqsoff and preemptoff tracers at each new maximum) exchanges the CPU's
 * buffer with the snapshot's. A poller must still be woken by the next
 * event written on that CPU, or trace-cmd's recorder for the CPU sleeps
 * while its buffer fills.
 *
 * The test runs on an instance of its own (instances/rb_poll_test), with
 * buffer_percent 0 so that one event makes trace_pipe_raw readable.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <pthread.h>
#include <sched.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "../user_events/user_events_selftests.h" /* share tracefs setup */
#include "../kselftest_harness.h"

#define INSTANCE	"/sys/kernel/tracing/instances/rb_poll_test"
#define POLL_MS		5000

static int write_file(const char *file, const char *val)
{
	char path[PATH_MAX];
	int fd, err = 0;

	snprintf(path, sizeof(path), "%s/%s", INSTANCE, file);
	fd = open(path, O_WRONLY | O_TRUNC);
	if (fd < 0)
		return -errno;
	if (write(fd, val, strlen(val)) < 0)
		err = -errno;
	close(fd);
	return err;
}

static long now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

struct poller {
	int	fd;
	short	revents;
	int	ret;
	long	ms;	/* how long poll() took */
};

static void *poll_thread(void *arg)
{
	struct poller *p = arg;
	struct pollfd pfd = { .fd = p->fd, .events = POLLIN };
	long t0 = now_ms();

	p->ret = poll(&pfd, 1, POLL_MS);
	p->ms = now_ms() - t0;
	p->revents = pfd.revents;
	return NULL;
}

FIXTURE(rbp) {
	int unused;
};

FIXTURE_SETUP(rbp)
{
	bool fail, umount;
	char *message;

	if (!tracefs_enabled(&message, &fail, &umount)) {
		if (fail)
			TH_LOG("Tracefs setup failed: %s", message);
		ASSERT_FALSE(fail);
		SKIP(return, "Skipping: %s", message);
	}
	rmdir(INSTANCE);
	ASSERT_EQ(mkdir(INSTANCE, 0755), 0);
	ASSERT_EQ(write_file("buffer_percent", "0"), 0);
	ASSERT_EQ(write_file("tracing_on", "1"), 0);
}

FIXTURE_TEARDOWN(rbp)
{
	rmdir(INSTANCE);
}

/*
 * A poller of CPU 0 sleeps; CPU 0's buffer is swapped with the snapshot's;
 * then a marker is written on CPU 0: poll() must return POLLIN, not time
 * out.
 */
TEST_F_TIMEOUT(rbp, snapshot_swap_keeps_poller, 60)
{
	struct poller p = {};
	pthread_t thread;
	cpu_set_t set;
	int err;

	CPU_ZERO(&set);
	CPU_SET(0, &set);
	ASSERT_EQ(sched_setaffinity(0, sizeof(set), &set), 0);

	p.fd = open(INSTANCE "/per_cpu/cpu0/trace_pipe_raw", O_RDONLY | O_NONBLOCK);
	ASSERT_GE(p.fd, 0);
	ASSERT_EQ(pthread_create(&thread, NULL, poll_thread, &p), 0);
	usleep(300 * 1000);	/* let it queue and sleep */
	/* Allocates the snapshot buffer the first time, then swaps CPU 0. */
	err = write_file("per_cpu/cpu0/snapshot", "1");
	if (err == -EINVAL || err == -ENOENT) {
		pthread_cancel(thread);
		pthread_join(thread, NULL);
		close(p.fd);
		SKIP(return, "no per-CPU snapshot swap: %s", strerror(-err));
	}
	ASSERT_EQ(err, 0);
	usleep(100 * 1000);
	ASSERT_EQ(write_file("trace_marker", "rb_poll_test after the swap\n"), 0);
	ASSERT_EQ(pthread_join(thread, NULL), 0);
	close(p.fd);
	TH_LOG("poll returned %d, revents %#x after %ld ms", p.ret, p.revents, p.ms);
	EXPECT_EQ(p.ret, 1);
	EXPECT_TRUE(p.revents & POLLIN);
	EXPECT_LT(p.ms, POLL_MS);
}

TEST_HARNESS_MAIN
