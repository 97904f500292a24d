// SPDX-License-Identifier: GPL-2.0
/*
 * Memory mapped per-CPU ring buffers (trace_pipe_raw): the user-space ABI.
 *
 * The meta page and the sub-buffer layout, the VM rules of the mapping,
 * fork, the exclusions while mapped, TRACE_MMAP_IOCTL_GET_READER (waiting,
 * waking, signals, errors), the reader sub-buffer while the writer wraps
 * the ring or appends to it, a reader modelled on libtracefs's (across a
 * reset too), read() and splice() next to the mapping, two mappers of one
 * CPU, close/munmap/reset/rmdir while mapped, and exact
 * accounting of numbered trace_marker writes read back only through the
 * mapping, on every CPU at once.
 *
 * Markers are "rbmt <cpu> <seq>" lines written with write(2) to
 * trace_marker by a task pinned to <cpu>; parsing the ring buffer events of
 * a sub-buffer gives them back. Most tests run on an instance of their own
 * (instances/rb_mmap_test), which the fixture creates and removes.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <linux/trace_mmap.h>

#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <sys/wait.h>

#include "../user_events/user_events_selftests.h" /* share tracefs setup */
#include "../kselftest_harness.h"

#define TRACEFS			"/sys/kernel/tracing"
#define INSTANCE		"rb_mmap_test"
#define RMDIR_INSTANCE		"rb_mmap_test_rmdir"
#define SWITCH_TRIGGER		"events/sched/sched_switch/trigger"

/* The commit word of a sub-buffer (kernel/trace/ring_buffer.c) */
#define RB_MISSED_EVENTS	(1UL << 31)
#define RB_MISSED_STORED	(1UL << 30)
/*
 * The length: the low 30 bits. The kernel adds the flags as ints, so on
 * 64-bit the upper half of the word is all ones once a flag is set.
 */
#define RB_COMMIT_LEN(c)	((c) & ((1UL << 30) - 1))
/* u64 time_stamp + long commit, then the data */
#define SUBBUF_HDR		16

/* Ring buffer event types (type_len) */
#define RB_TYPE_DATA_MAX	28
#define RB_TYPE_PADDING		29
#define RB_TYPE_TIME_EXTEND	30
#define RB_TYPE_TIME_STAMP	31

/* struct print_entry: trace_entry (8) + ip (8), then buf[] */
#define PRINT_ENTRY_BUF		16

/*
 * One marker, always the same length for CPUs 0-9: 14 bytes of text, the
 * kernel adds the NUL and reserves 16 + 14 + 2 bytes, a 36-byte event.
 */
#define MARKER_FMT		"rbmt %d %06u\n"
#define MARKER_EVENT_LEN	36

#define META_STRUCT_LEN		80
#define MAX_MK			2048	/* markers in one sub-buffer, at most */
#define MAX_CPUS		8
#define MAX_TRACKED		32

#define READ_ONCE(x)		__atomic_load_n(&(x), __ATOMIC_RELAXED)

_Static_assert(sizeof(struct trace_buffer_meta) == META_STRUCT_LEN,
	       "struct trace_buffer_meta is 80 bytes");
_Static_assert(offsetof(struct trace_buffer_meta, read) == 56, "meta read at 56");

/*
 * The two words after read: Reserved1 and Reserved2 in 6.12's header,
 * pages_lost and pages_touched in later ones (and in this series). By
 * offset, so that the test builds against either.
 */
static inline __u64 meta_pages_lost(const struct trace_buffer_meta *meta)
{
	return READ_ONCE(((const __u64 *)meta)[8]);
}

static inline __u64 meta_pages_touched(const struct trace_buffer_meta *meta)
{
	return READ_ONCE(((const __u64 *)meta)[9]);
}

/* ------------------------------------------------------------------ tracefs */

static int tfs_write(const char *root, const char *file, const char *val)
{
	char path[PATH_MAX];
	ssize_t n;
	int fd, err = 0;

	snprintf(path, sizeof(path), "%s/%s", root, file);
	fd = open(path, O_WRONLY | O_TRUNC);
	if (fd < 0)
		return -errno;
	n = write(fd, val, strlen(val));
	if (n < 0)
		err = -errno;
	close(fd);
	return err;
}

static int tfs_write_long(const char *root, const char *file, long val)
{
	char buf[32];

	snprintf(buf, sizeof(buf), "%ld", val);
	return tfs_write(root, file, buf);
}

static int tfs_read(const char *root, const char *file, char *buf, size_t sz)
{
	char path[PATH_MAX];
	ssize_t n, got = 0;
	int fd;

	snprintf(path, sizeof(path), "%s/%s", root, file);
	fd = open(path, O_RDONLY);
	if (fd < 0)
		return -errno;
	while ((size_t)got < sz - 1) {
		n = read(fd, buf + got, sz - 1 - got);
		if (n <= 0)
			break;
		got += n;
	}
	close(fd);
	buf[got] = '\0';
	return got;
}

static long tfs_read_long(const char *root, const char *file)
{
	char buf[64];

	if (tfs_read(root, file, buf, sizeof(buf)) <= 0)
		return -1;
	return strtol(buf, NULL, 10);
}

static bool tfs_exists(const char *root, const char *file)
{
	char path[PATH_MAX];

	snprintf(path, sizeof(path), "%s/%s", root, file);
	return access(path, F_OK) == 0;
}

/* "1408", or "7 (expanded: 1408)" before the buffer is first used */
static void size_kb_value(const char *s, char *out, size_t sz)
{
	const char *e = strstr(s, "expanded: ");

	snprintf(out, sz, "%ld", e ? strtol(e + 10, NULL, 10) : strtol(s, NULL, 10));
}

/* Free space in the ring, or space again after unmapping: a resize works. */
static int resize_probe(const char *root)
{
	long kb = tfs_read_long(root, "buffer_size_kb");

	return tfs_write_long(root, "buffer_size_kb", (kb > 0 ? kb : 16) + 4);
}

static long percpu_stat(const char *root, int cpu, const char *key)
{
	char file[64], buf[1024], *p;

	snprintf(file, sizeof(file), "per_cpu/cpu%d/stats", cpu);
	if (tfs_read(root, file, buf, sizeof(buf)) <= 0)
		return -1;
	p = strstr(buf, key);
	if (!p)
		return -1;
	return strtol(p + strlen(key), NULL, 10);
}

static int remove_instance(const char *path)
{
	int i;

	for (i = 0; i < 50; i++) {
		if (!rmdir(path) || errno == ENOENT)
			return 0;
		if (errno != EBUSY)
			return -errno;
		usleep(100 * 1000);
	}
	return -EBUSY;
}

static void sleep_ms(unsigned int ms)
{
	struct timespec ts = { ms / 1000, (ms % 1000) * 1000000L };

	while (nanosleep(&ts, &ts) && errno == EINTR)
		;
}

/* --------------------------------------------- mappings and fds to release */

static struct { void *addr; size_t len; } tracked_maps[MAX_TRACKED];
static int tracked_fds[MAX_TRACKED];
static int nr_tracked_fds;

static void track_map(void *addr, size_t len)
{
	int i;

	for (i = 0; i < MAX_TRACKED; i++) {
		if (!tracked_maps[i].addr) {
			tracked_maps[i].addr = addr;
			tracked_maps[i].len = len;
			return;
		}
	}
}

static void untrack_map(void *addr)
{
	int i;

	for (i = 0; i < MAX_TRACKED; i++)
		if (tracked_maps[i].addr == addr)
			tracked_maps[i].addr = NULL;
}

static void track_fd(int fd)
{
	if (nr_tracked_fds < MAX_TRACKED)
		tracked_fds[nr_tracked_fds++] = fd;
}

static void untrack_fd(int fd)
{
	int i;

	for (i = 0; i < nr_tracked_fds; i++)
		if (tracked_fds[i] == fd)
			tracked_fds[i] = -1;
}

/* Teardown: what a failed test left mapped or open. */
static void release_tracked(void)
{
	int i;

	for (i = 0; i < MAX_TRACKED; i++) {
		if (tracked_maps[i].addr)
			munmap(tracked_maps[i].addr, tracked_maps[i].len);
		tracked_maps[i].addr = NULL;
	}
	for (i = 0; i < nr_tracked_fds; i++)
		if (tracked_fds[i] >= 0)
			close(tracked_fds[i]);
	nr_tracked_fds = 0;
}

/* -------------------------------------------------------------- a mapping */

struct rbmap {
	int fd;
	int cpu;
	char *map;			/* meta page, then every sub-buffer */
	size_t len;
	struct trace_buffer_meta *meta;
	unsigned int meta_size, subbuf_size, nr;
};

static int rb_open(const char *root, int cpu, int oflags)
{
	char path[PATH_MAX];
	int fd;

	snprintf(path, sizeof(path), "%s/per_cpu/cpu%d/trace_pipe_raw", root, cpu);
	fd = open(path, O_RDONLY | oflags);
	if (fd < 0)
		return -errno;
	track_fd(fd);
	return fd;
}

static void rb_close_fd(int fd)
{
	untrack_fd(fd);
	close(fd);
}

/* Map the meta page and all the sub-buffers of @fd. */
static int rb_map_fd(struct rbmap *m, int fd, int cpu)
{
	size_t pg = getpagesize();
	struct trace_buffer_meta *meta;
	void *p;

	memset(m, 0, sizeof(*m));
	m->fd = fd;
	m->cpu = cpu;
	p = mmap(NULL, pg, PROT_READ, MAP_SHARED, fd, 0);
	if (p == MAP_FAILED)
		return -errno;
	meta = p;
	m->meta_size = READ_ONCE(meta->meta_page_size);
	m->subbuf_size = READ_ONCE(meta->subbuf_size);
	m->nr = READ_ONCE(meta->nr_subbufs);
	munmap(p, pg);
	if (m->meta_size < pg || m->meta_size % pg || m->meta_size > (1U << 20) ||
	    m->subbuf_size < pg || m->subbuf_size % pg || m->subbuf_size > (1U << 20) ||
	    m->nr < 2 || m->nr > (1U << 20))
		return -EPROTO;
	m->len = m->meta_size + (size_t)m->nr * m->subbuf_size;
	p = mmap(NULL, m->len, PROT_READ, MAP_SHARED, fd, 0);
	if (p == MAP_FAILED)
		return -errno;
	m->map = p;
	m->meta = p;
	track_map(p, m->len);
	return 0;
}

static int rb_map(struct rbmap *m, const char *root, int cpu, int oflags)
{
	int fd = rb_open(root, cpu, oflags), ret;

	if (fd < 0)
		return fd;
	ret = rb_map_fd(m, fd, cpu);
	if (ret)
		rb_close_fd(fd);
	return ret;
}

static int rb_unmap(struct rbmap *m)
{
	int ret = 0;

	if (m->map) {
		untrack_map(m->map);
		ret = munmap(m->map, m->len) ? -errno : 0;
		m->map = NULL;
		m->meta = NULL;
	}
	return ret;
}

static int rb_close(struct rbmap *m)
{
	int ret = rb_unmap(m);

	if (m->fd >= 0)
		rb_close_fd(m->fd);
	m->fd = -1;
	return ret;
}

static char *rb_subbuf(struct rbmap *m, unsigned int id)
{
	return m->map + m->meta_size + (size_t)id * m->subbuf_size;
}

static unsigned long subbuf_commit(const char *sb)
{
	return READ_ONCE(*(const unsigned long *)(sb + 8));
}

static int set_nonblock(int fd, bool on)
{
	int fl = fcntl(fd, F_GETFL);

	if (fl < 0)
		return -errno;
	fl = on ? fl | O_NONBLOCK : fl & ~O_NONBLOCK;
	return fcntl(fd, F_SETFL, fl) ? -errno : 0;
}

static int get_reader(struct rbmap *m)
{
	return ioctl(m->fd, TRACE_MMAP_IOCTL_GET_READER) ? -errno : 0;
}

/* mmap() that is expected to fail: 0 if it worked (and was undone), else errno */
static int try_mmap(int fd, size_t len, int prot, int flags, off_t off)
{
	void *p = mmap(NULL, len, prot, flags, fd, off);

	if (p == MAP_FAILED)
		return errno;
	munmap(p, len);
	return 0;
}

/* ---------------------------------------------------------------- markers */

static int marker_open(const char *root)
{
	char path[PATH_MAX];
	int fd;

	snprintf(path, sizeof(path), "%s/trace_marker", root);
	fd = open(path, O_WRONLY);
	if (fd < 0)
		return -errno;
	track_fd(fd);
	return fd;
}

static int put_marker(int fd, int cpu, unsigned int seq)
{
	char buf[48];
	int n = snprintf(buf, sizeof(buf), MARKER_FMT, cpu, seq);
	ssize_t r = write(fd, buf, n);

	if (r == n)
		return 0;
	return r < 0 ? -errno : -EIO;
}

/* Markers @from .. @from + @n - 1, all of which must be recorded. */
static int put_markers(int fd, int cpu, unsigned int from, unsigned int n)
{
	unsigned int i;
	int ret;

	for (i = 0; i < n; i++) {
		ret = put_marker(fd, cpu, from + i);
		if (ret)
			return ret;
	}
	return 0;
}

/* ---------------------------------------------------- sub-buffer parsing */

struct mk {
	int cpu;
	unsigned int seq;
	unsigned int off;
};

struct mklist {
	int n;
	int foreign;		/* data events that are not our markers */
	struct mk v[MAX_MK];
};

static bool decode_marker(const char *pl, unsigned int plen, int *cpu, unsigned int *seq)
{
	char s[64];
	unsigned int n;

	if (plen < PRINT_ENTRY_BUF + 6)
		return false;
	n = plen - PRINT_ENTRY_BUF;
	if (n > sizeof(s) - 1)
		n = sizeof(s) - 1;
	memcpy(s, pl + PRINT_ENTRY_BUF, n);
	s[n] = '\0';
	return sscanf(s, "rbmt %d %u", cpu, seq) == 2;
}

/*
 * Walk the events of sub-buffer data [0, @end) and collect the markers at
 * or after @start, which must be an event boundary. Returns 0, or -1 with
 * the reason in @why.
 */
static int parse_events(const char *data, unsigned int start, unsigned int end,
			struct mklist *out, char *why, size_t wsz)
{
	bool boundary = start == 0;
	unsigned int off = 0;

	out->n = 0;
	out->foreign = 0;
	if (start > end) {
		snprintf(why, wsz, "start %u past end %u", start, end);
		return -1;
	}
	while (off < end) {
		unsigned int tl, len, plen = 0;
		const char *pl = NULL;
		uint32_t hdr, a0 = 0;

		if (off == start)
			boundary = true;
		else if (off > start && !boundary) {
			snprintf(why, wsz, "offset %u is inside an event", start);
			return -1;
		}
		if (end - off < 4) {
			snprintf(why, wsz, "truncated event header at %u of %u", off, end);
			return -1;
		}
		memcpy(&hdr, data + off, 4);
		tl = hdr & 31;
		if (tl == 0 || tl == RB_TYPE_PADDING) {
			if (end - off < 8) {
				if (tl == RB_TYPE_PADDING && !(hdr >> 5))
					break;
				snprintf(why, wsz, "truncated event at %u of %u", off, end);
				return -1;
			}
			memcpy(&a0, data + off + 4, 4);
		}
		switch (tl) {
		case RB_TYPE_PADDING:
			if (!(hdr >> 5))	/* the rest of the sub-buffer is empty */
				goto done;
			len = a0 + 4;
			break;
		case RB_TYPE_TIME_EXTEND:
		case RB_TYPE_TIME_STAMP:
			len = 8;
			break;
		case 0:
			if (a0 < 4) {
				snprintf(why, wsz, "event at %u: length word %u", off, a0);
				return -1;
			}
			len = a0 + 4;
			pl = data + off + 8;
			plen = a0 - 4;
			break;
		default:
			len = 4 + tl * 4;
			pl = data + off + 4;
			plen = tl * 4;
			break;
		}
		if (len < 8) {
			snprintf(why, wsz, "event at %u: type_len %u length %u", off, tl, len);
			return -1;
		}
		if (len > end - off) {
			snprintf(why, wsz, "event at %u (type_len %u, %u bytes) overruns %u",
				 off, tl, len, end);
			return -1;
		}
		if (pl && off >= start) {
			struct mk *k;

			if (out->n >= MAX_MK) {
				snprintf(why, wsz, "more than %d events", MAX_MK);
				return -1;
			}
			k = &out->v[out->n];
			if (decode_marker(pl, plen, &k->cpu, &k->seq)) {
				k->off = off;
				out->n++;
			} else {
				out->foreign++;
			}
		}
		off += len;
	}
done:
	if (!boundary && start < off) {
		snprintf(why, wsz, "offset %u is not an event boundary", start);
		return -1;
	}
	return 0;
}

/* --------------------------------------------------- reading the mapping */

/* What one GET_READER gave: the new bytes of the reader sub-buffer. */
struct rstate {
	unsigned int id, start, end;
	bool fresh;			/* the first look at this sub-buffer */
	unsigned long commit;		/* its commit word, when fresh */
	bool missed, stored;
	unsigned long lost;		/* the stored count */
	unsigned long long pending;	/* meta reader.lost_events */
	struct mklist mk;
};

static struct rstate *rstate_new(void)
{
	return calloc(1, sizeof(struct rstate));
}

/*
 * After a GET_READER: the bytes that became readable since the meta page
 * said (@id0, @r0). The same id again means the kernel appended to the
 * reader sub-buffer: resume at @r0. Returns 1 if there was something new,
 * 0 if not, -EPROTO (with @why) if the meta page or the data are wrong.
 */
static int rb_collect(struct rbmap *m, unsigned int id0, unsigned int r0,
		      struct rstate *st, char *why, size_t wsz)
{
	const struct trace_buffer_meta *meta = m->meta;
	unsigned int cap = m->subbuf_size - SUBBUF_HDR;
	unsigned int id = READ_ONCE(meta->reader.id);
	unsigned int end = READ_ONCE(meta->reader.read);
	const char *sb;

	st->id = id;
	st->end = end;
	st->start = end;
	st->fresh = false;
	st->missed = st->stored = false;
	st->commit = 0;
	st->lost = 0;
	st->mk.n = 0;
	st->mk.foreign = 0;
	st->pending = READ_ONCE(meta->reader.lost_events);
	if (id >= m->nr) {
		snprintf(why, wsz, "reader.id %u >= nr_subbufs %u", id, m->nr);
		return -EPROTO;
	}
	if (end > cap) {
		snprintf(why, wsz, "reader.read %u > sub-buffer capacity %u", end, cap);
		return -EPROTO;
	}
	if (id == id0 && end == r0)
		return 0;
	if (id == id0 && end < r0) {
		snprintf(why, wsz, "reader.read of sub-buffer %u went back: %u -> %u",
			 id, r0, end);
		return -EPROTO;
	}
	st->fresh = id != id0 || r0 == 0;
	st->start = st->fresh ? 0 : r0;
	sb = rb_subbuf(m, id);
	if (st->fresh) {
		unsigned long commit = subbuf_commit(sb);
		unsigned long len = RB_COMMIT_LEN(commit);

		st->commit = commit;
		st->missed = commit & RB_MISSED_EVENTS;
		st->stored = commit & RB_MISSED_STORED;
		if (st->stored && !st->missed) {
			snprintf(why, wsz, "sub-buffer %u: commit %#lx has MISSED_STORED only",
				 id, commit);
			return -EPROTO;
		}
		if (st->missed && len != end) {
			snprintf(why, wsz,
				 "sub-buffer %u: commit %#lx (missed events) but reader.read %u",
				 id, commit, end);
			return -EPROTO;
		}
		/* Where the count fits, the kernel must store it. */
		if (st->missed && !st->stored && len + sizeof(unsigned long) <= cap) {
			snprintf(why, wsz,
				 "sub-buffer %u: commit %#lx flags a loss with room for its count but none stored",
				 id, commit);
			return -EPROTO;
		}
		if (st->stored) {
			if (len + sizeof(unsigned long) > cap) {
				snprintf(why, wsz,
					 "sub-buffer %u: no room for the stored count (commit %#lx)",
					 id, commit);
				return -EPROTO;
			}
			memcpy(&st->lost, sb + SUBBUF_HDR + len, sizeof(st->lost));
		}
	}
	if (parse_events(sb + SUBBUF_HDR, st->start, end, &st->mk, why, wsz)) {
		size_t n = strlen(why);

		snprintf(why + n, wsz - n, " (sub-buffer %u, [%u, %u))", id, st->start, end);
		return -EPROTO;
	}
	return 1;
}

/* One GET_READER and what it made readable; -errno if the ioctl failed. */
static int rb_step(struct rbmap *m, struct rstate *st, char *why, size_t wsz)
{
	unsigned int id0 = READ_ONCE(m->meta->reader.id);
	unsigned int r0 = READ_ONCE(m->meta->reader.read);
	int ret = get_reader(m);

	if (ret) {
		snprintf(why, wsz, "GET_READER: %s", strerror(-ret));
		return ret;
	}
	return rb_collect(m, id0, r0, st, why, wsz);
}

/* ------------------------------------------------------ sequence checks */

struct seqck {
	int cpu;
	bool strict;			/* no gap at all is allowed */
	long long last;			/* last seq seen, -1 before any */
	unsigned long seen;
	unsigned long gaps, gap_events;
	unsigned long missed_bits, unknown, pending_takes, takes;
	unsigned long long stored_sum;
	unsigned long foreign;
	bool at_take;			/* no marker yet since the last take */
	bool take_missed;		/* ... which said events were missed */
	int errors;
	char err[320];
};

static void ck_init(struct seqck *c, int cpu, bool strict)
{
	memset(c, 0, sizeof(*c));
	c->cpu = cpu;
	c->strict = strict;
	c->last = -1;
}

static void ck_fail(struct seqck *c, const char *fmt, ...)
{
	va_list ap;

	if (c->errors++)
		return;
	va_start(ap, fmt);
	vsnprintf(c->err, sizeof(c->err), fmt, ap);
	va_end(ap);
}

/*
 * Markers must come in increasing order without repeats. A gap is allowed
 * (unless strict) only at the first marker after the reader took a
 * sub-buffer with RB_MISSED_EVENTS in its commit word, or with events lost
 * and not yet stored (meta reader.lost_events).
 */
static void ck_feed(struct seqck *c, const struct rstate *st)
{
	int i;

	if (st->fresh) {
		c->takes++;
		if (st->missed) {
			c->missed_bits++;
			if (st->stored)
				c->stored_sum += st->lost;
			else
				c->unknown++;
		}
		if (st->pending)
			c->pending_takes++;
		c->at_take = true;
		c->take_missed = false;
	}
	if (c->at_take && (st->missed || st->pending))
		c->take_missed = true;
	c->foreign += st->mk.foreign;
	for (i = 0; i < st->mk.n; i++) {
		const struct mk *k = &st->mk.v[i];
		long long s = k->seq;

		if (k->cpu != c->cpu) {
			ck_fail(c, "marker of CPU %d (seq %u) in CPU %d's buffer, sub-buffer %u",
				k->cpu, k->seq, c->cpu, st->id);
			continue;
		}
		if (s <= c->last) {
			ck_fail(c,
				"CPU %d: seq %lld after %lld (repeated or out of order), sub-buffer %u at %u",
				c->cpu, s, c->last, st->id, k->off);
			continue;
		}
		if (s != c->last + 1) {
			bool ok = !c->strict && c->at_take && c->take_missed;

			if (!ok)
				ck_fail(c,
					"CPU %d: seq %lld..%lld missing, not at a sub-buffer with missed events (sub-buffer %u at %u, %s, commit %#lx, pending %llu)",
					c->cpu, c->last + 1, s - 1, st->id, k->off,
					st->fresh ? "fresh" : "resumed", st->commit, st->pending);
			c->gaps++;
			c->gap_events += s - c->last - 1;
		}
		c->at_take = false;
		c->last = s;
		c->seen++;
	}
}

/* GET_READER until nothing new: feeds @c, returns 0 or the step's error. */
static int drain(struct rbmap *m, struct rstate *st, struct seqck *c, char *why, size_t wsz)
{
	int i, ret;

	for (i = 0; i < 100000; i++) {
		ret = rb_step(m, st, why, wsz);
		if (ret <= 0)
			return ret;
		ck_feed(c, st);
	}
	snprintf(why, wsz, "GET_READER kept returning new data");
	return -E2BIG;
}

/* ----------------------------------------------------- a blocked reader */

struct waiter {
	pthread_t th;
	int fd;
	int ret, err;
	int done;
	bool started;
	unsigned int id0, r0;
};

static void *waiter_fn(void *arg)
{
	struct waiter *w = arg;

	w->ret = ioctl(w->fd, TRACE_MMAP_IOCTL_GET_READER);
	w->err = w->ret < 0 ? errno : 0;
	__atomic_store_n(&w->done, 1, __ATOMIC_SEQ_CST);
	return NULL;
}

static int waiter_start(struct waiter *w, struct rbmap *m)
{
	memset(w, 0, sizeof(*w));
	w->fd = m->fd;
	w->id0 = READ_ONCE(m->meta->reader.id);
	w->r0 = READ_ONCE(m->meta->reader.read);
	if (pthread_create(&w->th, NULL, waiter_fn, w))
		return -1;
	w->started = true;
	return 0;
}

static bool waiter_done(struct waiter *w)
{
	return __atomic_load_n(&w->done, __ATOMIC_SEQ_CST);
}

/* Wait up to @ms for the waiter; joins it if it returned. */
static bool waiter_wait(struct waiter *w, unsigned int ms)
{
	unsigned int t;

	for (t = 0; t < ms && !waiter_done(w); t += 5)
		sleep_ms(5);
	if (!waiter_done(w))
		return false;
	if (w->started)
		pthread_join(w->th, NULL);
	w->started = false;
	return true;
}

/* Wake the waiter with ioctl(fd, 0) until it returns, up to @ms. */
static bool waiter_wake(struct waiter *w, int fd, unsigned int ms)
{
	unsigned int t;

	for (t = 0; t < ms; t += 20) {
		ioctl(fd, 0);
		if (waiter_wait(w, 20))
			return true;
	}
	return false;
}

/* A test that failed with a waiter blocked: do not leave it blocked. */
static void waiter_release(struct waiter *w, int fd)
{
	if (w->started && !waiter_done(w))
		waiter_wake(w, fd, 2000);
}

static void on_signal(int sig)
{
	(void)sig;
}

static int wait_child(pid_t pid)
{
	int status;

	if (waitpid(pid, &status, 0) != pid)
		return -1;
	if (WIFEXITED(status))
		return WEXITSTATUS(status);
	return 128 + WTERMSIG(status);
}

/* ---------------------------------------------------------------- fixture */

struct saved_state {
	char size_kb[32], subbuf_kb[32], percent[32], overwrite[8], tracing_on[8];
	char tracer[64];
};

static void save_one(const char *root, const char *file, char *out, size_t sz)
{
	char buf[128];

	out[0] = '\0';
	if (tfs_read(root, file, buf, sizeof(buf)) <= 0)
		return;
	buf[strcspn(buf, "\n")] = '\0';
	snprintf(out, sz, "%s", buf);
}

static void restore_one(struct __test_metadata *_metadata, const char *root,
			const char *file, const char *want)
{
	char now[128];
	int ret;

	if (!want[0] || !strcmp(want, "X"))
		return;
	save_one(root, file, now, sizeof(now));
	if (!strcmp(now, want))
		return;
	ret = tfs_write(root, file, want);
	if (ret)
		TH_LOG("restoring %s/%s to %s: %s", root, file, want, strerror(-ret));
}

FIXTURE(rb) {
	bool umount;
	bool touched_top;
	int cpu;			/* the CPU the test runs and writes on */
	int ncpus;
	int cpus[MAX_CPUS];
	char inst[PATH_MAX];
	char rmdir_inst[PATH_MAX];
	struct saved_state top;
};

FIXTURE_SETUP(rb)
{
	bool fail, umount;
	char *message, kb[64];
	cpu_set_t set;
	int i;

	if (getuid() != 0)
		SKIP(return, "Skipping: %s", "Please run the test as root");

	if (!tracefs_enabled(&message, &fail, &umount)) {
		if (fail) {
			TH_LOG("Tracefs setup failed: %s", message);
			ASSERT_FALSE(fail);
		}
		SKIP(return, "Skipping: %s", message);
	}
	self->umount = umount;

	ASSERT_EQ(sched_getaffinity(0, sizeof(set), &set), 0);
	self->ncpus = 0;
	for (i = 0; i < CPU_SETSIZE && self->ncpus < MAX_CPUS; i++)
		if (CPU_ISSET(i, &set))
			self->cpus[self->ncpus++] = i;
	ASSERT_GT(self->ncpus, 0);

	/* Write every marker on this CPU, read this CPU's buffer. */
	self->cpu = sched_getcpu();
	ASSERT_GE(self->cpu, 0);
	CPU_ZERO(&set);
	CPU_SET(self->cpu, &set);
	ASSERT_EQ(sched_setaffinity(0, sizeof(set), &set), 0);

	if (tfs_read(TRACEFS, "buffer_size_kb", kb, sizeof(kb)) > 0)
		size_kb_value(kb, self->top.size_kb, sizeof(self->top.size_kb));
	save_one(TRACEFS, "buffer_subbuf_size_kb", self->top.subbuf_kb,
		 sizeof(self->top.subbuf_kb));
	save_one(TRACEFS, "buffer_percent", self->top.percent, sizeof(self->top.percent));
	save_one(TRACEFS, "options/overwrite", self->top.overwrite, sizeof(self->top.overwrite));
	save_one(TRACEFS, "tracing_on", self->top.tracing_on, sizeof(self->top.tracing_on));
	save_one(TRACEFS, "current_tracer", self->top.tracer, sizeof(self->top.tracer));

	snprintf(self->inst, sizeof(self->inst), TRACEFS "/instances/" INSTANCE);
	snprintf(self->rmdir_inst, sizeof(self->rmdir_inst), TRACEFS "/instances/" RMDIR_INSTANCE);
	ASSERT_EQ(remove_instance(self->inst), 0);
	ASSERT_EQ(remove_instance(self->rmdir_inst), 0);
	ASSERT_EQ(mkdir(self->inst, 0755), 0) TH_LOG("mkdir %s: %s", self->inst, strerror(errno));
	ASSERT_EQ(tfs_write(self->inst, "tracing_on", "1"), 0);
	ASSERT_EQ(tfs_write(self->inst, "options/overwrite", "1"), 0);
	ASSERT_EQ(tfs_write(self->inst, "buffer_percent", "0"), 0);
}

FIXTURE_TEARDOWN(rb)
{
	int ret;

	release_tracked();
	tfs_write(self->inst, SWITCH_TRIGGER, "!snapshot");
	ret = remove_instance(self->inst);
	if (ret)
		TH_LOG("rmdir %s: %s", self->inst, strerror(-ret));
	remove_instance(self->rmdir_inst);
	if (self->touched_top) {
		tfs_write(TRACEFS, SWITCH_TRIGGER, "!snapshot");
		restore_one(_metadata, TRACEFS, "current_tracer", self->top.tracer);
		if (tfs_exists(TRACEFS, "snapshot"))
			tfs_write(TRACEFS, "snapshot", "0");
		restore_one(_metadata, TRACEFS, "buffer_subbuf_size_kb", self->top.subbuf_kb);
		restore_one(_metadata, TRACEFS, "buffer_size_kb", self->top.size_kb);
		restore_one(_metadata, TRACEFS, "buffer_percent", self->top.percent);
		restore_one(_metadata, TRACEFS, "options/overwrite", self->top.overwrite);
		restore_one(_metadata, TRACEFS, "tracing_on", self->top.tracing_on);
	}
	if (self->umount)
		tracefs_unmount();
}

/* Size the instance's buffer and empty it. */
static int inst_prepare(const char *r, const char *subbuf_kb, const char *kb, bool overwrite)
{
	int ret;

	ret = tfs_write(r, "buffer_subbuf_size_kb", subbuf_kb);
	if (!ret)
		ret = tfs_write(r, "buffer_size_kb", kb);
	if (!ret)
		ret = tfs_write(r, "options/overwrite", overwrite ? "1" : "0");
	if (!ret)
		ret = tfs_write(r, "trace", "");
	return ret;
}

#define ASSERT_STEP(m, st, why, expect)						\
	do {									\
		int __r = rb_step((m), (st), (why), sizeof(why));		\
		ASSERT_EQ(__r, (expect)) TH_LOG("%s", (why));			\
	} while (0)

#define ASSERT_CK(c)								\
	do {									\
		ASSERT_EQ((c)->errors, 0) TH_LOG("%s", (c)->err);		\
	} while (0)

/* ------------------------------------------------------------- the tests */

/*
 * 1. The VM rules: no writable, executable or private mapping, never
 * writable later, pgoff aligned to a sub-buffer, nothing past the end, no
 * partial munmap, no growth. Refusals must not leave the buffer mapped.
 */
TEST_F_TIMEOUT(rb, vm_rules, 120)
{
	const char *r = self->inst;
	size_t pg = getpagesize(), sb, full;
	struct rbmap m;
	int fd, rw, e;
	void *p;

	ASSERT_EQ(inst_prepare(r, "16", "64", true), 0);
	fd = rb_open(r, self->cpu, O_NONBLOCK);
	ASSERT_GE(fd, 0);

	/* Refused by the first mapping of the buffer. */
	ASSERT_EQ(try_mmap(fd, pg, PROT_READ | PROT_EXEC, MAP_SHARED, 0), EPERM);
	ASSERT_EQ(try_mmap(fd, pg, PROT_READ, MAP_PRIVATE, 0), EPERM);
	e = try_mmap(fd, pg, PROT_READ | PROT_WRITE, MAP_SHARED, 0);
	ASSERT_TRUE(e == EACCES || e == EPERM) TH_LOG("PROT_WRITE on O_RDONLY: %d", e);
	rw = rb_open(r, self->cpu, O_NONBLOCK | O_RDWR);
	if (rw >= 0) {
		ASSERT_EQ(try_mmap(rw, pg, PROT_READ | PROT_WRITE, MAP_SHARED, 0), EPERM);
		rb_close_fd(rw);
	}
	/* order 2: a sub-buffer is 4 pages, pgoff 1 is inside the meta page */
	ASSERT_EQ(try_mmap(fd, pg, PROT_READ, MAP_SHARED, pg), EINVAL);
	ASSERT_EQ(try_mmap(fd, pg, PROT_READ, MAP_SHARED, 2 * pg), EINVAL);
	/* Nothing of that left the buffer mapped. */
	ASSERT_EQ(resize_probe(r), 0);
	ASSERT_EQ(tfs_write(r, "buffer_size_kb", "64"), 0);

	ASSERT_EQ(rb_map_fd(&m, fd, self->cpu), 0);
	sb = m.subbuf_size;
	full = m.len;
	ASSERT_EQ(sb, 16384);
	ASSERT_EQ(m.meta_size, 16384);
	ASSERT_EQ(mprotect(m.map, full, PROT_READ | PROT_WRITE), -1);
	ASSERT_EQ(errno, EACCES);
	ASSERT_EQ(mprotect(m.map, full, PROT_READ), 0);

	/* Refused while a mapping exists. */
	ASSERT_EQ(try_mmap(fd, pg, PROT_READ | PROT_EXEC, MAP_SHARED, 0), EPERM);
	ASSERT_EQ(try_mmap(fd, pg, PROT_READ, MAP_PRIVATE, 0), EPERM);
	rw = rb_open(r, self->cpu, O_NONBLOCK | O_RDWR);
	if (rw >= 0) {
		ASSERT_EQ(try_mmap(rw, pg, PROT_READ | PROT_WRITE, MAP_SHARED, 0), EPERM);
		rb_close_fd(rw);
	}
	for (e = 1; e < 4; e++) {
		ASSERT_EQ(try_mmap(fd, pg, PROT_READ, MAP_SHARED, e * pg), EINVAL)
			TH_LOG("pgoff %d", e);
	}
	ASSERT_EQ(try_mmap(fd, sb + pg, PROT_READ, MAP_SHARED, sb + pg), EINVAL);
	/* Aligned: the first sub-buffer alone. */
	p = mmap(NULL, sb, PROT_READ, MAP_SHARED, fd, m.meta_size);
	ASSERT_NE(p, MAP_FAILED);
	ASSERT_EQ(memcmp(p, rb_subbuf(&m, 0), SUBBUF_HDR), 0);
	ASSERT_EQ(munmap(p, sb), 0);
	/* Longer than the whole buffer. */
	ASSERT_EQ(try_mmap(fd, full + pg, PROT_READ, MAP_SHARED, 0), EINVAL);
	ASSERT_EQ(try_mmap(fd, full + sb, PROT_READ, MAP_SHARED, 0), EINVAL);
	/* At or past the end. */
	ASSERT_EQ(try_mmap(fd, pg, PROT_READ, MAP_SHARED, full), EINVAL);
	ASSERT_EQ(try_mmap(fd, sb, PROT_READ, MAP_SHARED, full + sb), EINVAL);
	/* Longer than what remains after pgoff. */
	ASSERT_EQ(try_mmap(fd, 2 * sb, PROT_READ, MAP_SHARED, full - sb), EINVAL);
	p = mmap(NULL, sb, PROT_READ, MAP_SHARED, fd, full - sb);
	ASSERT_NE(p, MAP_FAILED);
	ASSERT_EQ(memcmp(p, rb_subbuf(&m, m.nr - 1), SUBBUF_HDR), 0);
	ASSERT_EQ(munmap(p, sb), 0);

	/* No partial munmap. */
	ASSERT_EQ(munmap(m.map + full - pg, pg), -1);
	ASSERT_EQ(errno, EINVAL);
	ASSERT_EQ(munmap(m.map, pg), -1);
	ASSERT_EQ(errno, EINVAL);
	ASSERT_EQ(munmap(m.map + sb, sb), -1);
	ASSERT_EQ(errno, EINVAL);
	/* No growth, in place or moved; no shrinking either (a split). */
	ASSERT_EQ(mremap(m.map, full, full + pg, 0), MAP_FAILED);
	ASSERT_EQ(mremap(m.map, full, full + sb, MREMAP_MAYMOVE), MAP_FAILED);
	EXPECT_EQ(mremap(m.map, full, full - sb, 0), MAP_FAILED);

	/* The mapping is whole and works. */
	ASSERT_EQ(READ_ONCE(m.meta->meta_page_size), sb);
	ASSERT_EQ(READ_ONCE(m.meta->nr_subbufs), m.nr);
	ASSERT_EQ(get_reader(&m), 0);
	ASSERT_EQ(resize_probe(r), -EBUSY);

	ASSERT_EQ(rb_close(&m), 0);
	ASSERT_EQ(resize_probe(r), 0);
}

/*
 * 2. fork: without MADV_DOFORK the child has no mapping; with it the child
 * has one, and parent and child may unmap/exit in either order.
 */
TEST_F_TIMEOUT(rb, fork, 120)
{
	unsigned int id, rd, nr, msz;
	const char *r = self->inst;
	size_t pg = getpagesize();
	struct rstate *st = rstate_new();
	struct seqck ck;
	struct rbmap m;
	int mfd, p2c[2];
	char why[320], c;
	pid_t pid;

	ASSERT_NE(st, NULL);
	ASSERT_EQ(inst_prepare(r, "4", "64", true), 0);
	mfd = marker_open(r);
	ASSERT_GE(mfd, 0);

	/* Not inherited by default (VM_DONTCOPY). */
	ASSERT_EQ(rb_map(&m, r, self->cpu, O_NONBLOCK), 0);
	pid = fork();
	ASSERT_GE(pid, 0);
	if (!pid) {
		unsigned char v;

		_exit(mincore(m.map, pg, &v) == -1 && errno == ENOMEM ? 0 : 1);
	}
	ASSERT_EQ(wait_child(pid), 0) TH_LOG("the child has the mapping without MADV_DOFORK");
	ASSERT_EQ(get_reader(&m), 0);
	ASSERT_EQ(rb_close(&m), 0);
	ASSERT_EQ(resize_probe(r), 0);

	/* MADV_DOFORK, the child reads it and unmaps first. */
	ASSERT_EQ(tfs_write(r, "trace", ""), 0);
	ASSERT_EQ(rb_map(&m, r, self->cpu, O_NONBLOCK), 0);
	ck_init(&ck, self->cpu, true);
	ASSERT_EQ(put_markers(mfd, self->cpu, 0, 10), 0);
	ASSERT_STEP(&m, st, why, 1);
	ck_feed(&ck, st);
	ASSERT_CK(&ck);
	ASSERT_EQ(ck.seen, 10);
	id = READ_ONCE(m.meta->reader.id);
	rd = READ_ONCE(m.meta->reader.read);
	nr = m.nr;
	msz = m.meta_size;
	ASSERT_EQ(madvise(m.map, m.len, MADV_DOFORK), 0)
		TH_LOG("madvise(MADV_DOFORK): %s", strerror(errno));
	pid = fork();
	ASSERT_GE(pid, 0);
	if (!pid) {
		struct seqck cc;

		if (READ_ONCE(m.meta->meta_page_size) != msz ||
		    READ_ONCE(m.meta->nr_subbufs) != nr ||
		    READ_ONCE(m.meta->reader.id) != id || READ_ONCE(m.meta->reader.read) != rd)
			_exit(2);
		ck_init(&cc, m.cpu, true);
		if (rb_collect(&m, id, 0, st, why, sizeof(why)) != 1)
			_exit(3);
		ck_feed(&cc, st);
		if (cc.errors || cc.seen != 10)
			_exit(4);
		_exit(munmap(m.map, m.len) ? 5 : 0);
	}
	ASSERT_EQ(wait_child(pid), 0);
	ASSERT_EQ(READ_ONCE(m.meta->reader.id), id);
	ASSERT_EQ(put_markers(mfd, self->cpu, 10, 10), 0);
	ASSERT_EQ(drain(&m, st, &ck, why, sizeof(why)), 0) TH_LOG("%s", why);
	ASSERT_CK(&ck);
	ASSERT_EQ(ck.seen, 20);
	ASSERT_EQ(rb_close(&m), 0);
	ASSERT_EQ(resize_probe(r), 0) TH_LOG("still mapped after both unmapped");

	/* MADV_DOFORK, the parent unmaps first; the child exits mapped. */
	ASSERT_EQ(tfs_write(r, "trace", ""), 0);
	ASSERT_EQ(rb_map(&m, r, self->cpu, O_NONBLOCK), 0);
	ASSERT_EQ(madvise(m.map, m.len, MADV_DOFORK), 0)
		TH_LOG("madvise(MADV_DOFORK): %s", strerror(errno));
	ASSERT_EQ(pipe(p2c), 0);
	pid = fork();
	ASSERT_GE(pid, 0);
	if (!pid) {
		struct seqck cc;

		close(p2c[1]);
		if (read(p2c[0], &c, 1) != 1)
			_exit(2);
		ck_init(&cc, m.cpu, true);
		if (drain(&m, st, &cc, why, sizeof(why)))
			_exit(3);
		if (cc.errors || cc.seen != 10)
			_exit(4);
		_exit(0);	/* exit_mmap() unmaps */
	}
	close(p2c[0]);
	ASSERT_EQ(rb_unmap(&m), 0);
	ASSERT_EQ(resize_probe(r), -EBUSY)
		TH_LOG("the child's mapping must keep the buffer mapped");
	ASSERT_EQ(put_markers(mfd, self->cpu, 0, 10), 0);
	ASSERT_EQ(write(p2c[1], "g", 1), 1);
	close(p2c[1]);
	ASSERT_EQ(wait_child(pid), 0);
	ASSERT_EQ(ioctl(m.fd, TRACE_MMAP_IOCTL_GET_READER), -1);
	ASSERT_EQ(errno, ENODEV);
	ASSERT_EQ(resize_probe(r), 0);
	rb_close(&m);
	free(st);
}

/*
 * Does this kernel have it (snapshot, the snapshot trigger, the wakeup
 * tracer)? Tried while nothing is mapped: unsupported (EINVAL, ENODEV...)
 * leaves the check out; EBUSY counts as supported, so that the "works
 * again after the unmap" half of the test fails on it.
 */
static bool probe(const char *r, const char *file, const char *arm, const char *disarm)
{
	int ret;

	if (!tfs_exists(r, file))
		return false;
	ret = tfs_write(r, file, arm);
	if (ret)
		return ret == -EBUSY;
	tfs_write(r, file, disarm);
	return true;
}

static bool probe_wakeup(const char *r)
{
	char buf[4096];

	if (tfs_read(r, "available_tracers", buf, sizeof(buf)) <= 0 ||
	    !(strstr(buf, "wakeup ") || strstr(buf, "wakeup\n")))
		return false;
	return probe(r, "current_tracer", "wakeup", "nop");
}

static void ebusy_matrix(struct __test_metadata *_metadata, FIXTURE_DATA(rb) *self,
			 const char *r, bool top)
{
	char kb0[64], kb1[64], buf[4096], percpu[64];
	bool snap, trig, wakeup;
	struct rbmap m;

	snprintf(percpu, sizeof(percpu), "per_cpu/cpu%d/buffer_size_kb", self->cpu);
	ASSERT_EQ(tfs_write(r, "buffer_subbuf_size_kb", "4"), 0);
	snap = probe(r, "snapshot", "1", "0");
	trig = probe(r, SWITCH_TRIGGER, "snapshot", "!snapshot");
	wakeup = top && probe_wakeup(r);
	ASSERT_GT(tfs_read(r, "buffer_size_kb", kb0, sizeof(kb0)), 0);

	ASSERT_EQ(rb_map(&m, r, self->cpu, O_NONBLOCK), 0);
	EXPECT_EQ(tfs_write(r, "buffer_size_kb", "40"), -EBUSY);
	EXPECT_EQ(tfs_write(r, percpu, "44"), -EBUSY);
	EXPECT_EQ(tfs_write(r, "buffer_subbuf_size_kb", "8"), -EBUSY);
	ASSERT_GT(tfs_read(r, "buffer_size_kb", kb1, sizeof(kb1)), 0);
	EXPECT_STREQ(kb0, kb1);
	EXPECT_EQ(tfs_read_long(r, "buffer_subbuf_size_kb"), 4);
	if (snap) {
		EXPECT_EQ(tfs_write(r, "snapshot", "1"), -EBUSY);
	}
	if (trig) {
		EXPECT_EQ(tfs_write(r, SWITCH_TRIGGER, "snapshot"), -EBUSY);
		ASSERT_GE(tfs_read(r, SWITCH_TRIGGER, buf, sizeof(buf)), 0);
		EXPECT_EQ(strstr(buf, "snapshot:"), NULL);
	}
	if (wakeup) {
		EXPECT_EQ(tfs_write(r, "current_tracer", "wakeup"), -EBUSY);
		ASSERT_GT(tfs_read(r, "current_tracer", buf, sizeof(buf)), 0);
		EXPECT_NE(strncmp(buf, "wakeup", 6), 0);
	}
	/* The mapping is fine after all that. */
	ASSERT_EQ(get_reader(&m), 0);
	ASSERT_EQ(READ_ONCE(m.meta->subbuf_size), m.subbuf_size);
	ASSERT_EQ(rb_close(&m), 0);

	/* Everything works again. */
	ASSERT_EQ(tfs_write(r, "buffer_size_kb", "40"), 0);
	ASSERT_GT(tfs_read(r, "buffer_size_kb", kb1, sizeof(kb1)), 0);
	EXPECT_NE(strtol(kb0, NULL, 10), strtol(kb1, NULL, 10));
	ASSERT_EQ(tfs_write(r, percpu, "44"), 0);
	ASSERT_EQ(tfs_write(r, "buffer_subbuf_size_kb", "8"), 0);
	ASSERT_EQ(tfs_read_long(r, "buffer_subbuf_size_kb"), 8);
	ASSERT_EQ(tfs_write(r, "buffer_subbuf_size_kb", "4"), 0);
	if (snap) {
		ASSERT_EQ(tfs_write(r, "snapshot", "1"), 0);
		ASSERT_EQ(tfs_write(r, "snapshot", "0"), 0);
	}
	if (trig) {
		ASSERT_EQ(tfs_write(r, SWITCH_TRIGGER, "snapshot"), 0);
		ASSERT_EQ(tfs_write(r, SWITCH_TRIGGER, "!snapshot"), 0);
	}
	if (wakeup) {
		ASSERT_EQ(tfs_write(r, "current_tracer", "wakeup"), 0);
		ASSERT_EQ(tfs_write(r, "current_tracer", "nop"), 0);
	}
	/* And mapping again works after those. */
	ASSERT_EQ(rb_map(&m, r, self->cpu, O_NONBLOCK), 0);
	ASSERT_EQ(rb_close(&m), 0);
	TH_LOG("%s: sizes checked; snapshot %s, snapshot trigger %s, wakeup tracer %s",
	       top ? "top level" : "instance", snap ? "checked" : "unavailable",
	       trig ? "checked" : "unavailable",
	       top ? (wakeup ? "checked" : "unavailable") : "n/a");
}

/* 3. What a mapping excludes, and that it works again after the unmap. */
TEST_F_TIMEOUT(rb, ebusy, 180)
{
	self->touched_top = true;
	ASSERT_EQ(tfs_write(TRACEFS, "current_tracer", "nop"), 0);
	ebusy_matrix(_metadata, self, TRACEFS, true);
	ebusy_matrix(_metadata, self, self->inst, false);
}

/* 4a. GET_READER without data, unknown commands, after the unmap. */
TEST_F_TIMEOUT(rb, reader_ioctl, 120)
{
	struct rstate *st = rstate_new();
	const char *r = self->inst;
	unsigned int id0, read3;
	struct seqck ck;
	struct rbmap m;
	char why[320];
	int mfd;

	ASSERT_NE(st, NULL);
	ASSERT_EQ(inst_prepare(r, "4", "64", true), 0);
	mfd = marker_open(r);
	ASSERT_GE(mfd, 0);
	ASSERT_EQ(rb_map(&m, r, self->cpu, O_NONBLOCK), 0);

	ASSERT_EQ(READ_ONCE(m.meta->meta_struct_len), META_STRUCT_LEN);
	ASSERT_EQ(READ_ONCE(m.meta->flags), 0);
	id0 = READ_ONCE(m.meta->reader.id);
	/* A first map numbers the reader's sub-buffer 0, then the ring from the head. */
	ASSERT_EQ(id0, 0);
	ASSERT_EQ(READ_ONCE(m.meta->reader.read), 0);
	/* No data: 0, nothing moves. */
	ASSERT_STEP(&m, st, why, 0);
	ASSERT_EQ(READ_ONCE(m.meta->reader.id), id0);
	ASSERT_EQ(READ_ONCE(m.meta->reader.read), 0);
	ASSERT_EQ(READ_ONCE(m.meta->entries), 0);
	ASSERT_EQ(READ_ONCE(m.meta->read), 0);

	/* Other commands. */
	ASSERT_EQ(ioctl(m.fd, _IO('R', 0x21)), -1);
	ASSERT_EQ(errno, ENOTTY);
	ASSERT_EQ(ioctl(m.fd, _IOR('R', 0x20, int)), -1);
	ASSERT_EQ(errno, ENOTTY);
	ASSERT_EQ(ioctl(m.fd, 0), 0);

	/* Three markers: a new reader sub-buffer holding exactly them. */
	ck_init(&ck, self->cpu, true);
	ASSERT_EQ(put_markers(mfd, self->cpu, 0, 3), 0);
	ASSERT_STEP(&m, st, why, 1);
	ck_feed(&ck, st);
	ASSERT_CK(&ck);
	ASSERT_EQ(ck.seen, 3);
	/* The head of a fresh instance: mmap id 1. */
	ASSERT_EQ(st->id, 1);
	read3 = READ_ONCE(m.meta->reader.read);
	ASSERT_GT(read3, 0);
	ASSERT_FALSE(st->missed);
	ASSERT_EQ(READ_ONCE(m.meta->entries), 3);
	ASSERT_EQ(READ_ONCE(m.meta->read), 3);
	ASSERT_EQ(READ_ONCE(m.meta->overrun), 0);
	ASSERT_EQ(READ_ONCE(m.meta->reader.lost_events), 0);
	ASSERT_STEP(&m, st, why, 0);

	/* Unmapped: ENODEV. Mapped again through the same fd: fine. */
	ASSERT_EQ(rb_unmap(&m), 0);
	ASSERT_EQ(ioctl(m.fd, TRACE_MMAP_IOCTL_GET_READER), -1);
	ASSERT_EQ(errno, ENODEV);
	ASSERT_EQ(ioctl(m.fd, 0), 0);
	ASSERT_EQ(rb_map_fd(&m, m.fd, self->cpu), 0);
	/* Numbered afresh: the reader's sub-buffer, read to its end, is 0 now. */
	ASSERT_EQ(READ_ONCE(m.meta->reader.id), 0);
	ASSERT_EQ(READ_ONCE(m.meta->reader.read), read3);
	ASSERT_EQ(get_reader(&m), 0);
	ASSERT_EQ(READ_ONCE(m.meta->reader.id), 0);
	ASSERT_EQ(READ_ONCE(m.meta->entries), 3);
	ASSERT_EQ(rb_close(&m), 0);
	free(st);
}

/*
 * 4b. A blocking GET_READER waits: it returns on ioctl(fd, 0), on data, and
 * at buffer_percent only once that much of the buffer is filled.
 */
TEST_F_TIMEOUT(rb, reader_wait, 120)
{
	struct rstate *st = rstate_new();
	const char *r = self->inst;
	struct waiter w = { 0 };
	unsigned int id0;
	struct seqck ck;
	struct rbmap m;
	char why[320];
	bool ok;
	int mfd;

	ASSERT_NE(st, NULL);
	ASSERT_EQ(inst_prepare(r, "4", "16", true), 0);
	ASSERT_EQ(tfs_write(r, "buffer_percent", "0"), 0);
	mfd = marker_open(r);
	ASSERT_GE(mfd, 0);
	ASSERT_EQ(rb_map(&m, r, self->cpu, 0), 0);
	ck_init(&ck, self->cpu, true);

	/* Woken by ioctl(fd, 0): returns 0, nothing moved. */
	id0 = READ_ONCE(m.meta->reader.id);
	ASSERT_EQ(waiter_start(&w, &m), 0);
	sleep_ms(300);
	ok = !waiter_done(&w);
	if (!ok)
		waiter_wait(&w, 0);
	ASSERT_TRUE(ok) TH_LOG("GET_READER did not wait without data (returned %d, %s)",
			       w.ret, strerror(w.err));
	ok = waiter_wake(&w, m.fd, 10000);
	ASSERT_TRUE(ok) TH_LOG("ioctl(fd, 0) did not wake GET_READER");
	ASSERT_EQ(w.ret, 0) TH_LOG("woken GET_READER: %s", strerror(w.err));
	ASSERT_EQ(READ_ONCE(m.meta->reader.id), id0);
	ASSERT_EQ(READ_ONCE(m.meta->reader.read), 0);

	/* Woken by a marker at buffer_percent 0: returns with it. */
	ASSERT_EQ(waiter_start(&w, &m), 0);
	sleep_ms(200);
	ok = !waiter_done(&w);
	if (!ok)
		waiter_wait(&w, 0);
	ASSERT_TRUE(ok);
	ASSERT_EQ(put_marker(mfd, self->cpu, 0), 0);
	ok = waiter_wait(&w, 10000);
	if (!ok)
		waiter_release(&w, m.fd);
	ASSERT_TRUE(ok) TH_LOG("a marker did not wake GET_READER at buffer_percent 0");
	ASSERT_EQ(w.ret, 0);
	ASSERT_EQ(rb_collect(&m, w.id0, w.r0, st, why, sizeof(why)), 1) TH_LOG("%s", why);
	ck_feed(&ck, st);
	ASSERT_CK(&ck);
	ASSERT_EQ(ck.seen, 1);

	/* buffer_percent 50: one marker is not enough, most of the buffer is. */
	ASSERT_EQ(tfs_write(r, "buffer_percent", "50"), 0);
	ASSERT_EQ(waiter_start(&w, &m), 0);
	ASSERT_EQ(put_marker(mfd, self->cpu, 1), 0);
	sleep_ms(300);
	ok = !waiter_done(&w);
	if (!ok)
		waiter_wait(&w, 0);
	ASSERT_TRUE(ok) TH_LOG("GET_READER returned below buffer_percent");
	/* 500 markers: 112 more in the reader sub-buffer, 4 of the 5 others */
	ASSERT_EQ(put_markers(mfd, self->cpu, 2, 500), 0);
	ok = waiter_wait(&w, 10000);
	if (!ok)
		waiter_release(&w, m.fd);
	ASSERT_TRUE(ok) TH_LOG("GET_READER still waits with the buffer %s",
			       "over buffer_percent");
	ASSERT_EQ(w.ret, 0);
	ASSERT_EQ(rb_collect(&m, w.id0, w.r0, st, why, sizeof(why)), 1) TH_LOG("%s", why);
	ck_feed(&ck, st);
	ASSERT_EQ(set_nonblock(m.fd, true), 0);
	ASSERT_EQ(drain(&m, st, &ck, why, sizeof(why)), 0) TH_LOG("%s", why);
	ASSERT_CK(&ck);
	ASSERT_EQ(ck.seen, 502);
	ASSERT_EQ(READ_ONCE(m.meta->overrun), 0);
	ASSERT_EQ(rb_close(&m), 0);
	free(st);
}

/* 4c. A signal interrupts a blocked GET_READER: EINTR without SA_RESTART. */
TEST_F_TIMEOUT(rb, reader_signal, 120)
{
	struct sigaction sa = { .sa_handler = on_signal }, old;
	const char *r = self->inst;
	struct waiter w = { 0 };
	struct rbmap m;
	unsigned int t;
	bool ok;

	ASSERT_EQ(inst_prepare(r, "4", "64", true), 0);
	ASSERT_EQ(sigemptyset(&sa.sa_mask), 0);
	ASSERT_EQ(sigaction(SIGUSR1, &sa, &old), 0);
	ASSERT_EQ(rb_map(&m, r, self->cpu, 0), 0);
	ASSERT_EQ(waiter_start(&w, &m), 0);
	sleep_ms(200);
	ok = !waiter_done(&w);
	if (!ok)
		waiter_wait(&w, 0);
	ASSERT_TRUE(ok) TH_LOG("GET_READER did not wait without data");
	for (t = 0; t < 10000 && !waiter_done(&w); t += 50) {
		pthread_kill(w.th, SIGUSR1);
		sleep_ms(50);
	}
	ok = waiter_wait(&w, 0);
	if (!ok)
		waiter_release(&w, m.fd);
	ASSERT_TRUE(ok) TH_LOG("SIGUSR1 did not interrupt GET_READER");
	ASSERT_EQ(w.ret, -1);
	ASSERT_EQ(w.err, EINTR);
	ASSERT_EQ(set_nonblock(m.fd, true), 0);
	ASSERT_EQ(get_reader(&m), 0);
	ASSERT_EQ(rb_close(&m), 0);
	sigaction(SIGUSR1, &old, NULL);
}

/*
 * 5. The writer wraps the ring several times while user space holds the
 * reader sub-buffer: that sub-buffer does not change, the next one says
 * events were missed, and how many.
 */
TEST_F_TIMEOUT(rb, overwrite_held, 180)
{
	unsigned long long overrun, lost0, touched;
	struct rstate *st = rstate_new();
	const char *r = self->inst;
	unsigned int x, k, total = 2200, per_sb;
	long long last_x;
	struct seqck ck;
	struct rbmap m;
	char why[320], *copy;
	int mfd;

	ASSERT_NE(st, NULL);
	ASSERT_EQ(inst_prepare(r, "4", "16", true), 0);
	mfd = marker_open(r);
	ASSERT_GE(mfd, 0);
	ASSERT_EQ(rb_map(&m, r, self->cpu, O_NONBLOCK), 0);
	copy = malloc(m.subbuf_size);
	ASSERT_NE(copy, NULL);
	per_sb = (m.subbuf_size - SUBBUF_HDR) / MARKER_EVENT_LEN;
	ck_init(&ck, self->cpu, false);

	/* More than a sub-buffer: the reader gets a full one, the writer moved on. */
	ASSERT_EQ(put_markers(mfd, self->cpu, 0, 200), 0);
	ASSERT_STEP(&m, st, why, 1);
	ck_feed(&ck, st);
	ASSERT_CK(&ck);
	ASSERT_TRUE(st->fresh);
	ASSERT_FALSE(st->missed);
	k = st->mk.n;
	ASSERT_GE(k, per_sb - 8);
	ASSERT_LT(k, 200);
	x = st->id;
	last_x = ck.last;
	memcpy(copy, rb_subbuf(&m, x), m.subbuf_size);
	lost0 = meta_pages_lost(m.meta);

	/* Wrap the ring (5 sub-buffers of 113 markers) more than three times. */
	ASSERT_EQ(put_markers(mfd, self->cpu, 200, total - 200), 0);
	ASSERT_EQ(memcmp(copy, rb_subbuf(&m, x), m.subbuf_size), 0)
		TH_LOG("the writer changed the reader sub-buffer %u", x);
	ASSERT_EQ(READ_ONCE(m.meta->reader.id), x);

	/* The next sub-buffer: RB_MISSED_EVENTS, and the count if it fits. */
	ASSERT_STEP(&m, st, why, 1);
	ck_feed(&ck, st);
	ASSERT_CK(&ck);
	ASSERT_NE(st->id, x);
	ASSERT_TRUE(st->fresh);
	ASSERT_TRUE(st->missed) TH_LOG("commit %#lx of sub-buffer %u", st->commit, st->id);
	ASSERT_GT(st->mk.n, 0);
	overrun = READ_ONCE(m.meta->overrun);
	ASSERT_GT(overrun, 0);
	if (st->stored) {
		ASSERT_GT(st->lost, 0);
		EXPECT_EQ(st->lost, st->mk.v[0].seq - last_x - 1);
		EXPECT_EQ(st->lost, overrun);
	} else {
		TH_LOG("no room for the missed count in sub-buffer %u (commit %#lx)",
		       st->id, st->commit);
	}

	/* The rest: no other gap, up to the last marker. */
	ASSERT_EQ(drain(&m, st, &ck, why, sizeof(why)), 0) TH_LOG("%s", why);
	ASSERT_CK(&ck);
	ASSERT_EQ(ck.gaps, 1);
	ASSERT_EQ(ck.last, total - 1);
	ASSERT_EQ(ck.seen + ck.gap_events, total);
	ASSERT_EQ(READ_ONCE(m.meta->entries), total);
	ASSERT_EQ(READ_ONCE(m.meta->read), ck.seen);
	ASSERT_EQ(READ_ONCE(m.meta->overrun), ck.gap_events);
	ASSERT_EQ(READ_ONCE(m.meta->reader.lost_events), 0);

	/* Reserved1 = pages_lost, Reserved2 = pages_touched (the extension). */
	overrun = READ_ONCE(m.meta->overrun);
	touched = meta_pages_touched(m.meta);
	EXPECT_GT(meta_pages_lost(m.meta), lost0);
	EXPECT_LE(meta_pages_lost(m.meta), touched);
	EXPECT_LE(meta_pages_lost(m.meta), overrun);
	EXPECT_GE(meta_pages_lost(m.meta) * per_sb, overrun);
	EXPECT_GE(touched, total / per_sb - 1);
	/* at most one time extend per marker */
	EXPECT_LE(touched, total * (MARKER_EVENT_LEN + 8) / (m.subbuf_size - SUBBUF_HDR) + 2);
	TH_LOG("overrun %llu, pages_lost %llu, pages_touched %llu", overrun,
	       (unsigned long long)meta_pages_lost(m.meta), touched);
	ASSERT_EQ(rb_close(&m), 0);
	free(copy);
	free(st);
}

/*
 * 6. The writer appends to the reader sub-buffer: the same id again with a
 * larger reader.read, and the new bytes hold only the new markers.
 */
TEST_F_TIMEOUT(rb, writer_append, 120)
{
	struct rstate *st = rstate_new();
	const char *r = self->inst;
	unsigned int x, r1, r2;
	struct seqck ck;
	struct rbmap m;
	char why[320];
	int mfd;

	ASSERT_NE(st, NULL);
	ASSERT_EQ(inst_prepare(r, "4", "64", true), 0);
	mfd = marker_open(r);
	ASSERT_GE(mfd, 0);
	ASSERT_EQ(rb_map(&m, r, self->cpu, O_NONBLOCK), 0);
	ck_init(&ck, self->cpu, true);

	ASSERT_EQ(put_markers(mfd, self->cpu, 0, 5), 0);
	ASSERT_STEP(&m, st, why, 1);
	ck_feed(&ck, st);
	ASSERT_CK(&ck);
	ASSERT_EQ(st->mk.n, 5);
	x = st->id;
	r1 = st->end;
	ASSERT_GE(r1, 5 * MARKER_EVENT_LEN);

	ASSERT_EQ(put_markers(mfd, self->cpu, 5, 5), 0);
	ASSERT_STEP(&m, st, why, 1);
	ck_feed(&ck, st);
	ASSERT_CK(&ck);
	ASSERT_EQ(st->id, x);
	ASSERT_FALSE(st->fresh);
	ASSERT_EQ(st->start, r1);
	r2 = st->end;
	ASSERT_GE(r2, r1 + 5 * MARKER_EVENT_LEN);
	ASSERT_EQ(st->mk.n, 5);
	ASSERT_EQ(st->mk.v[0].seq, 5);

	/* Nothing new: the same id and read. */
	ASSERT_STEP(&m, st, why, 0);
	ASSERT_EQ(READ_ONCE(m.meta->reader.id), x);
	ASSERT_EQ(READ_ONCE(m.meta->reader.read), r2);

	ASSERT_EQ(put_markers(mfd, self->cpu, 10, 5), 0);
	ASSERT_STEP(&m, st, why, 1);
	ck_feed(&ck, st);
	ASSERT_CK(&ck);
	ASSERT_EQ(st->id, x);
	ASSERT_EQ(st->start, r2);
	ASSERT_EQ(ck.seen, 15);
	ASSERT_EQ(READ_ONCE(m.meta->entries), 15);
	ASSERT_EQ(READ_ONCE(m.meta->read), 15);
	ASSERT_EQ(READ_ONCE(m.meta->overrun), 0);
	ASSERT_EQ(rb_close(&m), 0);
	free(st);
}

/* ------------------------------------------- a reader like libtracefs's */

/*
 * A model of libtracefs 1.8.3's mapped reader, the one behind
 * tracefs_cpu_open_mapped() and tracefs_cpu_read() (and, through
 * tracefs_cpu_read_buf(), tracefs_iterate_raw_events()): trace_mmap() maps
 * the meta page alone, then the sub-buffers at offset meta_page_size, loads
 * the sub-buffer reader.id names and skips reader.read bytes of it. Each
 * read then follows trace_mmap_load_subbuf():
 *  - reader.id is not the sub-buffer it holds: load that one, read it from
 *    its start, without GET_READER;
 *  - else look at the commit word again (kbuffer_refresh()); bytes past
 *    where it got: call GET_READER if they end past reader.read (measured
 *    from the sub-buffer's start, header included), and read them up to
 *    that length whatever GET_READER did;
 *  - else GET_READER: the same reader.id back means nothing to read, any
 *    other is loaded and read from its start.
 * A page that starts with time events makes libtracefs skip to its first
 * data event on load; the model leaves that out: the kernel starts every
 * sub-buffer with a data event outside absolute time stamp mode.
 */
struct lt_reader {
	int fd;
	struct trace_buffer_meta *meta;	/* its own mapping */
	size_t meta_len;
	char *data;			/* the sub-buffers, a second mapping */
	size_t data_len;
	unsigned int subbuf_size, nr;
	unsigned int id, pos;		/* the sub-buffer held, parsed up to pos */
};

static int lt_map(struct lt_reader *t, int fd)
{
	size_t pg = getpagesize();
	void *p;

	memset(t, 0, sizeof(*t));
	t->fd = fd;
	p = mmap(NULL, pg, PROT_READ, MAP_SHARED, fd, 0);
	if (p == MAP_FAILED)
		return -errno;
	t->meta = p;
	t->meta_len = pg;
	track_map(p, pg);
	if (READ_ONCE(t->meta->meta_page_size) > pg) {
		t->meta_len = READ_ONCE(t->meta->meta_page_size);
		untrack_map(p);
		munmap(p, pg);
		p = mmap(NULL, t->meta_len, PROT_READ, MAP_SHARED, fd, 0);
		if (p == MAP_FAILED)
			return -errno;
		t->meta = p;
		track_map(p, t->meta_len);
	}
	t->subbuf_size = READ_ONCE(t->meta->subbuf_size);
	t->nr = READ_ONCE(t->meta->nr_subbufs);
	t->data_len = (size_t)t->subbuf_size * t->nr;
	p = mmap(NULL, t->data_len, PROT_READ, MAP_SHARED, fd, t->meta_len);
	if (p == MAP_FAILED)
		return -errno;
	t->data = p;
	track_map(p, t->data_len);
	t->id = READ_ONCE(t->meta->reader.id);
	t->pos = READ_ONCE(t->meta->reader.read);
	return t->id < t->nr ? 0 : -EPROTO;
}

static void lt_unmap(struct lt_reader *t)
{
	if (t->data) {
		untrack_map(t->data);
		munmap(t->data, t->data_len);
	}
	if (t->meta) {
		untrack_map(t->meta);
		munmap(t->meta, t->meta_len);
	}
	t->data = NULL;
	t->meta = NULL;
}

static const char *lt_subbuf(struct lt_reader *t, unsigned int id)
{
	return t->data + (size_t)id * t->subbuf_size;
}

/* What kbuffer_curr_size() gives at @off: the next data event, time events skipped. */
static unsigned int lt_event_size(const char *data, unsigned int off, unsigned int end)
{
	uint32_t hdr, a0;

	while (end - off >= 8) {
		memcpy(&hdr, data + off, 4);
		memcpy(&a0, data + off + 4, 4);
		switch (hdr & 31) {
		case RB_TYPE_TIME_EXTEND:
		case RB_TYPE_TIME_STAMP:
			off += 8;
			continue;
		case 0:
		case RB_TYPE_PADDING:
			return a0 + 4;
		default:
			return 4 + (hdr & 31) * 4;
		}
	}
	return 0;
}

/* Read the held sub-buffer from t->pos to @len into @mk. */
static int lt_take(struct lt_reader *t, unsigned int len, struct mklist *mk,
		   char *why, size_t wsz)
{
	unsigned int from = t->pos;

	if (len > t->subbuf_size - SUBBUF_HDR) {
		snprintf(why, wsz, "sub-buffer %u: length %u", t->id, len);
		return -EPROTO;
	}
	t->pos = len;
	if (parse_events(lt_subbuf(t, t->id) + SUBBUF_HDR, from, len, mk, why, wsz))
		return -EPROTO;
	return mk->n;
}

/*
 * One tracefs_cpu_read() of the model: the markers it returns in @mk, their
 * number, or a negative errno (-EPROTO with @why).
 */
static int lt_read(struct lt_reader *t, struct mklist *mk, char *why, size_t wsz)
{
	unsigned int id = READ_ONCE(t->meta->reader.id), len;
	const char *sb;

	mk->n = 0;
	if (id == t->id) {
		sb = lt_subbuf(t, id);
		len = RB_COMMIT_LEN(subbuf_commit(sb));
		if (len > t->pos) {
			if (SUBBUF_HDR + t->pos + lt_event_size(sb + SUBBUF_HDR, t->pos, len) >
			    READ_ONCE(t->meta->reader.read) &&
			    ioctl(t->fd, TRACE_MMAP_IOCTL_GET_READER))
				return -errno;
			return lt_take(t, len, mk, why, wsz);
		}
		if (ioctl(t->fd, TRACE_MMAP_IOCTL_GET_READER))
			return -errno;
		id = READ_ONCE(t->meta->reader.id);
		if (id == t->id)
			return 0;
	}
	if (id >= t->nr) {
		snprintf(why, wsz, "reader.id %u >= nr_subbufs %u", id, t->nr);
		return -EPROTO;
	}
	t->id = id;
	t->pos = 0;
	return lt_take(t, RB_COMMIT_LEN(subbuf_commit(lt_subbuf(t, id))), mk, why, wsz);
}

/*
 * 6b. A reader that reads the way libtracefs does gets each marker as soon
 * as it is written: one, then 102 more on the same sub-buffer, then none.
 * Again after a reset while mapped, as libtracefs's own tests clear the
 * buffer after opening it mapped: 6.12 keeps the reader's page across a
 * reset, so the meta page goes on naming the sub-buffer the reader holds.
 * Naming another, empty, one made libtracefs load it as new and read
 * nothing; the marker came with the next 102 (0, then 103).
 */
TEST_F_TIMEOUT(rb, libtracefs_reader, 120)
{
	struct mklist *mk = calloc(1, sizeof(*mk));
	const char *r = self->inst;
	unsigned int round, first, id;
	struct lt_reader t;
	char why[320];
	int fd, mfd, n;

	ASSERT_NE(mk, NULL);
	ASSERT_EQ(inst_prepare(r, "4", "64", true), 0);
	mfd = marker_open(r);
	ASSERT_GE(mfd, 0);
	fd = rb_open(r, self->cpu, O_NONBLOCK);
	ASSERT_GE(fd, 0);
	ASSERT_EQ(lt_map(&t, fd), 0);
	/* 103 markers fit one sub-buffer, with room for time extends. */
	ASSERT_GE(t.subbuf_size - SUBBUF_HDR, 103 * MARKER_EVENT_LEN + 32 * 8);

	for (round = 0; round < 2; round++) {
		first = round * 103;
		if (round) {
			ASSERT_EQ(tfs_write(r, "trace", ""), 0);
			EXPECT_EQ(READ_ONCE(t.meta->reader.id), t.id)
				TH_LOG("a reset named another sub-buffer than the reader's");
		}
		ASSERT_EQ(put_marker(mfd, self->cpu, first), 0);
		n = lt_read(&t, mk, why, sizeof(why));
		ASSERT_EQ(n, 1) TH_LOG("round %u, one marker written: %d read (%s)", round, n,
				       n < 0 ? why : "");
		ASSERT_EQ(mk->v[0].seq, first);
		id = t.id;

		ASSERT_EQ(put_markers(mfd, self->cpu, first + 1, 102), 0);
		n = lt_read(&t, mk, why, sizeof(why));
		ASSERT_EQ(n, 102) TH_LOG("round %u, 102 markers written: %d read (%s)", round, n,
					 n < 0 ? why : "");
		ASSERT_EQ(mk->v[0].seq, first + 1);
		ASSERT_EQ(mk->v[101].seq, first + 102);
		ASSERT_EQ(t.id, id);

		n = lt_read(&t, mk, why, sizeof(why));
		ASSERT_EQ(n, 0) TH_LOG("round %u, nothing written: %d read (%s)", round, n,
				       n < 0 ? why : "");
	}
	ASSERT_EQ(READ_ONCE(t.meta->entries), 103);
	ASSERT_EQ(READ_ONCE(t.meta->read), 103);
	lt_unmap(&t);
	rb_close_fd(fd);
	free(mk);
}

/*
 * 7. Producer/consumer (overwrite 0): a full buffer drops new markers (the
 * write fails), keeps the old ones, all of which the mapping reads in
 * order with no missed bits; reading frees the space again.
 */
TEST_F_TIMEOUT(rb, no_overwrite, 120)
{
	struct rstate *st = rstate_new();
	unsigned int i, ok = 0, failed = 0;
	const char *r = self->inst;
	struct seqck ck;
	struct rbmap m;
	long dropped;
	char why[320];
	int mfd, ret;

	ASSERT_NE(st, NULL);
	ASSERT_EQ(inst_prepare(r, "4", "16", false), 0);
	mfd = marker_open(r);
	ASSERT_GE(mfd, 0);
	ASSERT_EQ(rb_map(&m, r, self->cpu, O_NONBLOCK), 0);
	ck_init(&ck, self->cpu, true);

	for (i = 0; i < 1500; i++) {
		ret = put_marker(mfd, self->cpu, ok);
		if (!ret)
			ok++;
		else if (ret == -EBADF)
			failed++;
		else {
			ASSERT_EQ(ret, 0) TH_LOG("marker write: %s", strerror(-ret));
		}
	}
	ASSERT_GT(failed, 0);
	ASSERT_GT(ok, 0);
	ASSERT_LE(ok, m.nr * ((m.subbuf_size - SUBBUF_HDR) / MARKER_EVENT_LEN));

	ASSERT_EQ(drain(&m, st, &ck, why, sizeof(why)), 0) TH_LOG("%s", why);
	ASSERT_CK(&ck);
	ASSERT_EQ(ck.seen, ok);
	ASSERT_EQ(ck.missed_bits, 0);
	ASSERT_EQ(READ_ONCE(m.meta->entries), ok);
	ASSERT_EQ(READ_ONCE(m.meta->read), ok);
	ASSERT_EQ(READ_ONCE(m.meta->overrun), 0);
	ASSERT_EQ(READ_ONCE(m.meta->reader.lost_events), 0);
	dropped = percpu_stat(r, self->cpu, "dropped events:");
	EXPECT_EQ(dropped, failed);

	/* Read out: there is room again. */
	ASSERT_EQ(put_markers(mfd, self->cpu, ok, 100), 0);
	ASSERT_EQ(drain(&m, st, &ck, why, sizeof(why)), 0) TH_LOG("%s", why);
	ASSERT_CK(&ck);
	ASSERT_EQ(ck.seen, ok + 100);
	ASSERT_EQ(READ_ONCE(m.meta->entries), ok + 100);
	ASSERT_EQ(rb_close(&m), 0);
	free(st);
}

/*
 * 8. Sub-buffer orders 0..3: the meta page describes them, the whole
 * buffer maps, and a small run reads back exactly.
 */
TEST_F_TIMEOUT(rb, orders, 240)
{
	static const char * const kbs[] = { "4", "8", "16", "32" };
	struct rstate *st = rstate_new();
	size_t pg = getpagesize();
	const char *r = self->inst;
	unsigned int i, id, n = 300;
	struct seqck ck;
	struct rbmap m;
	char why[320];
	int mfd, order;

	ASSERT_NE(st, NULL);
	mfd = marker_open(r);
	ASSERT_GE(mfd, 0);
	for (order = 0; order < 4; order++) {
		size_t sbsz = 4096UL << order;

		if (sbsz < pg)
			continue;
		ASSERT_EQ(inst_prepare(r, kbs[order], "64", true), 0);
		ASSERT_EQ(tfs_read_long(r, "buffer_subbuf_size_kb"), 4L << order);
		ASSERT_EQ(rb_map(&m, r, self->cpu, O_NONBLOCK), 0) TH_LOG("order %d", order);
		ASSERT_EQ(READ_ONCE(m.meta->meta_page_size), sbsz);
		ASSERT_EQ(READ_ONCE(m.meta->subbuf_size), sbsz);
		ASSERT_EQ(READ_ONCE(m.meta->meta_struct_len), META_STRUCT_LEN);
		ASSERT_GE(READ_ONCE(m.meta->nr_subbufs), 3);
		ASSERT_EQ(READ_ONCE(m.meta->flags), 0);
		ASSERT_EQ(READ_ONCE(m.meta->entries), 0);
		ASSERT_EQ(READ_ONCE(m.meta->overrun), 0);
		ASSERT_EQ(READ_ONCE(m.meta->read), 0);
		ASSERT_EQ(READ_ONCE(m.meta->reader.read), 0);
		ASSERT_EQ(READ_ONCE(m.meta->reader.lost_events), 0);
		ASSERT_EQ(meta_pages_lost(m.meta), 0);
		ASSERT_EQ(meta_pages_touched(m.meta), 0);
		ASSERT_LT(READ_ONCE(m.meta->reader.id), m.nr);
		TH_LOG(
		       "order %d: %u sub-buffers of %zu bytes for buffer_size_kb 64 (reads back %ld)",
		       order, m.nr, sbsz, tfs_read_long(r, "buffer_size_kb"));
		/* The meta page's padding is zero, the sub-buffers are empty. */
		for (i = META_STRUCT_LEN; i < m.meta_size; i++) {
			ASSERT_EQ(m.map[i], 0) TH_LOG("order %d: meta page byte %u", order, i);
		}
		for (id = 0; id < m.nr; id++) {
			ASSERT_EQ(RB_COMMIT_LEN(subbuf_commit(rb_subbuf(&m, id))), 0)
				TH_LOG("order %d: sub-buffer %u", order, id);
		}
		ASSERT_EQ(try_mmap(m.fd, m.len + pg, PROT_READ, MAP_SHARED, 0), EINVAL);

		ck_init(&ck, self->cpu, true);
		ASSERT_EQ(put_markers(mfd, self->cpu, 0, n), 0);
		ASSERT_EQ(drain(&m, st, &ck, why, sizeof(why)), 0)
			TH_LOG("order %d: %s", order, why);
		ASSERT_EQ(ck.errors, 0) TH_LOG("order %d: %s", order, ck.err);
		ASSERT_EQ(ck.seen, n);
		ASSERT_EQ(ck.missed_bits, 0);
		ASSERT_EQ(READ_ONCE(m.meta->entries), n);
		ASSERT_EQ(READ_ONCE(m.meta->read), n);
		ASSERT_EQ(READ_ONCE(m.meta->overrun), 0);
		ASSERT_EQ(rb_close(&m), 0);
	}
	ASSERT_EQ(tfs_write(r, "buffer_subbuf_size_kb", "4"), 0);
	free(st);
}

/* Markers of a page that read() or splice() returned: exactly the next ones. */
static int feed_copy(const char *page, size_t len, unsigned int *next, int cpu,
		     struct mklist *mk, char *why, size_t wsz)
{
	unsigned long commit;
	unsigned int l;
	int i;

	if (len < SUBBUF_HDR) {
		snprintf(why, wsz, "short page: %zu bytes", len);
		return -1;
	}
	memcpy(&commit, page + 8, sizeof(commit));
	l = RB_COMMIT_LEN(commit);
	if (l > len - SUBBUF_HDR) {
		snprintf(why, wsz, "page commit %#lx, %zu bytes", commit, len);
		return -1;
	}
	if (parse_events(page + SUBBUF_HDR, 0, l, mk, why, wsz))
		return -1;
	for (i = 0; i < mk->n; i++) {
		if (mk->v[i].cpu != cpu || mk->v[i].seq != *next) {
			snprintf(why, wsz, "copied page: seq %u of CPU %d where %u was next",
				 mk->v[i].seq, mk->v[i].cpu, *next);
			return -1;
		}
		(*next)++;
	}
	return mk->n;
}

/*
 * 9. read() and splice() of trace_pipe_raw next to the mapping: each
 * marker comes out exactly once, in order, through one of the three.
 *
 * read() and splice() consume from the reader sub-buffer without updating
 * the meta page, so a GET_READER after them may hand out bytes they
 * already returned: those (and only those, right after such a read) are
 * skipped.
 */
TEST_F_TIMEOUT(rb, read_splice, 180)
{
	static const unsigned int batches[] = { 7, 150, 40, 3, 200, 90, 1, 130, 60, 260, 20, 5,
						120, 2, 45 };
	unsigned int b, next = 0, total = 0, by_map = 0, by_read = 0, by_splice = 0, skipped = 0;
	struct rstate *st = rstate_new();
	const char *r = self->inst;
	bool copied_since = false;
	int mfd, sfd, pfd[2], i, n, ret, idle;
	struct rbmap m;
	char why[320], *page;
	ssize_t got;

	ASSERT_NE(st, NULL);
	ASSERT_EQ(inst_prepare(r, "4", "128", true), 0);
	mfd = marker_open(r);
	ASSERT_GE(mfd, 0);
	ASSERT_EQ(rb_map(&m, r, self->cpu, O_NONBLOCK), 0);
	sfd = rb_open(r, self->cpu, O_NONBLOCK);
	ASSERT_GE(sfd, 0);
	ASSERT_EQ(pipe(pfd), 0);
	page = malloc(m.subbuf_size);
	ASSERT_NE(page, NULL);

	for (b = 0; b < ARRAY_SIZE(batches) + 2; b++) {
		int op = b % 3;

		if (b < ARRAY_SIZE(batches)) {
			ASSERT_EQ(put_markers(mfd, self->cpu, total, batches[b]), 0);
			total += batches[b];
		}
		for (idle = 0; idle < 3; op = (op + 1) % 3) {
			if (op == 0) {
				ret = rb_step(&m, st, why, sizeof(why));
				ASSERT_GE(ret, 0) TH_LOG("%s", why);
				n = 0;
				for (i = 0; i < st->mk.n; i++) {
					unsigned int s = st->mk.v[i].seq;

					ASSERT_EQ(st->mk.v[i].cpu, self->cpu);
					if (s < next && copied_since && !n) {
						skipped++;
						continue;
					}
					ASSERT_EQ(s, next)
						TH_LOG("mapping: seq %u, %u next (%u [%u, %u))",
						       s, next, st->id, st->start, st->end);
					next++;
					n++;
				}
				copied_since = false;
				by_map += n;
			} else if (op == 1) {
				got = read(m.fd, page, m.subbuf_size);
				ASSERT_TRUE(got >= 0 || errno == EAGAIN)
					TH_LOG("read: %s", strerror(errno));
				n = 0;
				if (got > 0) {
					n = feed_copy(page, got, &next, self->cpu, &st->mk,
						      why, sizeof(why));
					ASSERT_GE(n, 0) TH_LOG("read(): %s", why);
					copied_since = true;
					by_read += n;
				}
			} else {
				got = splice(sfd, NULL, pfd[1], NULL, m.subbuf_size,
					     SPLICE_F_NONBLOCK);
				ASSERT_TRUE(got >= 0 || errno == EAGAIN)
					TH_LOG("splice: %s", strerror(errno));
				n = 0;
				if (got > 0) {
					ASSERT_EQ(read(pfd[0], page, got), got);
					n = feed_copy(page, got, &next, self->cpu, &st->mk,
						      why, sizeof(why));
					ASSERT_GE(n, 0) TH_LOG("splice(): %s", why);
					copied_since = true;
					by_splice += n;
				}
			}
			/* After a batch one pass of each; at the end, until all are idle. */
			if (b < ARRAY_SIZE(batches) && op == 2)
				break;
			idle = n ? 0 : idle + 1;
		}
	}
	TH_LOG("%u markers: %u through the mapping, %u read(), %u splice(), %u skipped",
	       total, by_map, by_read, by_splice, skipped);
	ASSERT_EQ(next, total);
	ASSERT_GT(by_map, 0);
	ASSERT_GT(by_read, 0);
	ASSERT_GT(by_splice, 0);
	ASSERT_EQ(get_reader(&m), 0);
	ASSERT_EQ(READ_ONCE(m.meta->entries), total);
	ASSERT_EQ(READ_ONCE(m.meta->read), total);
	ASSERT_EQ(READ_ONCE(m.meta->overrun), 0);
	ASSERT_EQ(rb_close(&m), 0);
	rb_close_fd(sfd);
	free(page);
	free(st);
}

/*
 * 10. Two processes, then two fds of one process, map one CPU: they see
 * one meta page and the same data; one's GET_READER shows in the other's.
 */
TEST_F_TIMEOUT(rb, two_maps, 120)
{
	size_t pg = getpagesize(), shsz;
	struct rstate *st = rstate_new();
	const char *r = self->inst;
	unsigned int x, rd;
	int mfd, p2c[2], c2p[2];
	struct seqck ck;
	struct rbmap m, m2;
	char why[320], c, *sh;
	pid_t pid;

	ASSERT_NE(st, NULL);
	ASSERT_EQ(inst_prepare(r, "4", "64", true), 0);
	mfd = marker_open(r);
	ASSERT_GE(mfd, 0);
	ASSERT_EQ(rb_map(&m, r, self->cpu, O_NONBLOCK), 0);
	ck_init(&ck, self->cpu, true);
	ASSERT_EQ(put_markers(mfd, self->cpu, 0, 20), 0);
	ASSERT_STEP(&m, st, why, 1);
	ck_feed(&ck, st);
	ASSERT_CK(&ck);
	ASSERT_EQ(ck.seen, 20);
	x = st->id;
	rd = st->end;

	shsz = pg + m.subbuf_size;
	sh = mmap(NULL, shsz, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	ASSERT_NE(sh, MAP_FAILED);
	ASSERT_EQ(pipe(p2c), 0);
	ASSERT_EQ(pipe(c2p), 0);
	pid = fork();
	ASSERT_GE(pid, 0);
	if (!pid) {
		struct rbmap cm;

		if (rb_map(&cm, r, m.cpu, O_NONBLOCK))
			_exit(2);
		memcpy(sh, cm.meta, META_STRUCT_LEN);
		memcpy(sh + pg, rb_subbuf(&cm, READ_ONCE(cm.meta->reader.id)), cm.subbuf_size);
		if (write(c2p[1], "1", 1) != 1 || read(p2c[0], &c, 1) != 1)
			_exit(3);
		if (get_reader(&cm))
			_exit(4);
		memcpy(sh, cm.meta, META_STRUCT_LEN);
		if (write(c2p[1], "2", 1) != 1 || read(p2c[0], &c, 1) != 1)
			_exit(5);
		_exit(munmap(cm.map, cm.len) ? 6 : 0);
	}
	ASSERT_EQ(read(c2p[0], &c, 1), 1);
	ASSERT_EQ(memcmp(sh, m.meta, META_STRUCT_LEN), 0) TH_LOG("the child's meta page differs");
	ASSERT_EQ(memcmp(sh + pg, rb_subbuf(&m, x), m.subbuf_size), 0)
		TH_LOG("the child's sub-buffer %u differs", x);
	/* The child's GET_READER updates the parent's view. */
	ASSERT_EQ(put_markers(mfd, self->cpu, 20, 20), 0);
	ASSERT_EQ(write(p2c[1], "g", 1), 1);
	ASSERT_EQ(read(c2p[0], &c, 1), 1);
	ASSERT_EQ(READ_ONCE(m.meta->reader.id), x);
	ASSERT_GT(READ_ONCE(m.meta->reader.read), rd);
	ASSERT_EQ(memcmp(sh, m.meta, META_STRUCT_LEN), 0);
	ASSERT_EQ(rb_collect(&m, x, rd, st, why, sizeof(why)), 1) TH_LOG("%s", why);
	ck_feed(&ck, st);
	ASSERT_CK(&ck);
	ASSERT_EQ(ck.seen, 40);
	ASSERT_EQ(write(p2c[1], "g", 1), 1);
	ASSERT_EQ(wait_child(pid), 0);
	ASSERT_EQ(get_reader(&m), 0);
	ASSERT_EQ(READ_ONCE(m.meta->entries), 40);
	ASSERT_EQ(READ_ONCE(m.meta->read), 40);

	/* Two fds, one process. */
	ASSERT_EQ(rb_map(&m2, r, self->cpu, O_NONBLOCK), 0);
	ASSERT_NE(m2.map, m.map);
	ASSERT_EQ(m2.len, m.len);
	ASSERT_EQ(memcmp(m2.meta, m.meta, META_STRUCT_LEN), 0);
	ASSERT_EQ(put_markers(mfd, self->cpu, 40, 5), 0);
	x = READ_ONCE(m.meta->reader.id);
	rd = READ_ONCE(m.meta->reader.read);
	ASSERT_EQ(get_reader(&m2), 0);
	ASSERT_EQ(memcmp(m2.meta, m.meta, META_STRUCT_LEN), 0);
	ASSERT_EQ(rb_collect(&m, x, rd, st, why, sizeof(why)), 1) TH_LOG("%s", why);
	ck_feed(&ck, st);
	ASSERT_CK(&ck);
	ASSERT_EQ(ck.seen, 45);
	ASSERT_EQ(memcmp(rb_subbuf(&m, st->id), rb_subbuf(&m2, st->id), m.subbuf_size), 0);
	ASSERT_EQ(rb_close(&m2), 0);
	ASSERT_EQ(get_reader(&m), 0);
	ASSERT_EQ(READ_ONCE(m.meta->entries), 45);
	ASSERT_EQ(rb_close(&m), 0);
	ASSERT_EQ(resize_probe(r), 0);
	munmap(sh, shsz);
	free(st);
}

/*
 * 11. munmap while another thread waits in GET_READER: the waiter returns
 * (0, or ENODEV) once woken, by ioctl(fd, 0) or by data, and nothing hangs.
 */
TEST_F_TIMEOUT(rb, unmap_waiter, 120)
{
	const char *r = self->inst;
	struct waiter w = { 0 };
	struct rbmap m;
	int round, mfd;
	bool ok;

	ASSERT_EQ(inst_prepare(r, "4", "64", true), 0);
	mfd = marker_open(r);
	ASSERT_GE(mfd, 0);
	ASSERT_EQ(rb_map(&m, r, self->cpu, 0), 0);
	alarm(90);
	for (round = 0; round < 2; round++) {
		ASSERT_EQ(waiter_start(&w, &m), 0);
		sleep_ms(200);
		ok = !waiter_done(&w);
		if (!ok)
			waiter_wait(&w, 0);
		ASSERT_TRUE(ok) TH_LOG("round %d: GET_READER did not wait", round);
		ASSERT_EQ(rb_unmap(&m), 0);
		sleep_ms(100);
		if (round == 0) {
			ok = waiter_wake(&w, m.fd, 10000);
		} else {
			ASSERT_EQ(put_marker(mfd, self->cpu, 0), 0);
			ok = waiter_wait(&w, 10000);
			if (!ok)
				waiter_release(&w, m.fd);
		}
		ASSERT_TRUE(ok)
			TH_LOG("round %d: the waiter did not return after the munmap", round);
		ASSERT_TRUE(w.ret == 0 || w.err == ENODEV)
			TH_LOG("round %d: GET_READER: %d %s", round, w.ret, strerror(w.err));
		ASSERT_EQ(set_nonblock(m.fd, true), 0);
		ASSERT_EQ(ioctl(m.fd, TRACE_MMAP_IOCTL_GET_READER), -1);
		ASSERT_EQ(errno, ENODEV);
		ASSERT_EQ(resize_probe(r), 0);
		ASSERT_EQ(set_nonblock(m.fd, false), 0);
		ASSERT_EQ(rb_map_fd(&m, m.fd, self->cpu), 0);
	}
	alarm(0);
	ASSERT_EQ(rb_close(&m), 0);
}

/*
 * 12. close() of the fd while the mapping lives: the mapping still shows
 * the live buffer, and munmap afterwards is quiet and frees it.
 */
TEST_F_TIMEOUT(rb, close_mapped, 120)
{
	struct rstate *st = rstate_new();
	const char *r = self->inst;
	unsigned int id, nr, i, n = 320;
	unsigned char *seen;
	struct seqck ck;
	struct rbmap m;
	char why[320];
	int mfd;

	ASSERT_NE(st, NULL);
	ASSERT_EQ(inst_prepare(r, "4", "64", true), 0);
	mfd = marker_open(r);
	ASSERT_GE(mfd, 0);
	ASSERT_EQ(rb_map(&m, r, self->cpu, O_NONBLOCK), 0);
	ck_init(&ck, self->cpu, true);
	ASSERT_EQ(put_markers(mfd, self->cpu, 0, 20), 0);
	ASSERT_STEP(&m, st, why, 1);
	ck_feed(&ck, st);
	ASSERT_CK(&ck);
	id = st->id;
	nr = m.nr;

	rb_close_fd(m.fd);
	m.fd = -1;
	ASSERT_EQ(READ_ONCE(m.meta->meta_page_size), m.meta_size);
	ASSERT_EQ(READ_ONCE(m.meta->nr_subbufs), nr);
	ASSERT_EQ(READ_ONCE(m.meta->reader.id), id);
	ASSERT_EQ(resize_probe(r), -EBUSY) TH_LOG("closing the fd unmapped the buffer");

	/* The sub-buffers are still the ring's: new markers show up in them. */
	ASSERT_EQ(put_markers(mfd, self->cpu, 20, n - 20), 0);
	seen = calloc(n, 1);
	ASSERT_NE(seen, NULL);
	for (id = 0; id < nr; id++) {
		const char *sb = rb_subbuf(&m, id);
		unsigned long len = RB_COMMIT_LEN(subbuf_commit(sb));

		ASSERT_LE(len, m.subbuf_size - SUBBUF_HDR);
		ASSERT_EQ(parse_events(sb + SUBBUF_HDR, 0, len, &st->mk, why, sizeof(why)), 0)
			TH_LOG("sub-buffer %u: %s", id, why);
		for (i = 0; i < (unsigned int)st->mk.n; i++) {
			ASSERT_LT(st->mk.v[i].seq, n);
			ASSERT_EQ(seen[st->mk.v[i].seq], 0) TH_LOG("seq %u twice", st->mk.v[i].seq);
			seen[st->mk.v[i].seq] = 1;
		}
	}
	for (i = 0; i < n; i++) {
		ASSERT_EQ(seen[i], 1) TH_LOG("seq %u is not in the mapping", i);
	}

	ASSERT_EQ(rb_unmap(&m), 0);
	ASSERT_EQ(resize_probe(r), 0);
	ASSERT_EQ(rb_map(&m, r, self->cpu, O_NONBLOCK), 0);
	ASSERT_EQ(get_reader(&m), 0);
	ASSERT_EQ(rb_close(&m), 0);
	free(seen);
	free(st);
}

/* 13. Reset (writing "" to trace) while mapped. */
TEST_F_TIMEOUT(rb, reset, 120)
{
	struct rstate *st = rstate_new();
	const char *r = self->inst;
	struct seqck ck;
	struct rbmap m;
	char why[320];
	int mfd;

	ASSERT_NE(st, NULL);
	ASSERT_EQ(inst_prepare(r, "4", "16", true), 0);
	mfd = marker_open(r);
	ASSERT_GE(mfd, 0);
	ASSERT_EQ(rb_map(&m, r, self->cpu, O_NONBLOCK), 0);
	ASSERT_EQ(put_markers(mfd, self->cpu, 0, 1000), 0);
	ASSERT_EQ(get_reader(&m), 0);
	ASSERT_EQ(READ_ONCE(m.meta->entries), 1000);
	ASSERT_GT(READ_ONCE(m.meta->overrun), 0);
	ASSERT_EQ(put_markers(mfd, self->cpu, 1000, 50), 0);

	ASSERT_EQ(tfs_write(r, "trace", ""), 0);
	ASSERT_EQ(READ_ONCE(m.meta->entries), 0);
	ASSERT_EQ(READ_ONCE(m.meta->overrun), 0);
	ASSERT_EQ(READ_ONCE(m.meta->read), 0);
	ASSERT_EQ(READ_ONCE(m.meta->reader.read), 0);
	ASSERT_EQ(READ_ONCE(m.meta->reader.lost_events), 0);
	ASSERT_LT(READ_ONCE(m.meta->reader.id), m.nr);
	EXPECT_EQ(meta_pages_lost(m.meta), 0);
	EXPECT_EQ(meta_pages_touched(m.meta), 0);
	ASSERT_STEP(&m, st, why, 0);
	ASSERT_EQ(READ_ONCE(m.meta->entries), 0);
	ASSERT_EQ(READ_ONCE(m.meta->overrun), 0);
	ASSERT_EQ(READ_ONCE(m.meta->read), 0);

	/* Only what comes after the reset. */
	ck_init(&ck, self->cpu, true);
	ck.last = 4999;
	ASSERT_EQ(put_markers(mfd, self->cpu, 5000, 20), 0);
	ASSERT_EQ(drain(&m, st, &ck, why, sizeof(why)), 0) TH_LOG("%s", why);
	ASSERT_CK(&ck);
	ASSERT_EQ(ck.seen, 20);
	ASSERT_EQ(ck.last, 5019);
	ASSERT_EQ(READ_ONCE(m.meta->entries), 20);
	ASSERT_EQ(READ_ONCE(m.meta->read), 20);
	ASSERT_EQ(READ_ONCE(m.meta->overrun), 0);
	ASSERT_EQ(rb_close(&m), 0);
	free(st);
}

/* 14. An instance cannot go while its trace_pipe_raw is open or mapped. */
TEST_F_TIMEOUT(rb, rmdir, 120)
{
	const char *r = self->rmdir_inst;
	struct stat sb;
	struct rbmap m;

	/* munmap, then close */
	ASSERT_EQ(mkdir(r, 0755), 0);
	ASSERT_EQ(rb_map(&m, r, self->cpu, O_NONBLOCK), 0);
	ASSERT_EQ(rmdir(r), -1);
	ASSERT_EQ(errno, EBUSY);
	ASSERT_EQ(rb_unmap(&m), 0);
	ASSERT_EQ(rmdir(r), -1);
	ASSERT_EQ(errno, EBUSY);
	rb_close(&m);
	ASSERT_EQ(rmdir(r), 0) TH_LOG("rmdir after munmap and close: %s", strerror(errno));
	ASSERT_EQ(stat(r, &sb), -1);

	/* close, then munmap */
	ASSERT_EQ(mkdir(r, 0755), 0);
	ASSERT_EQ(rb_map(&m, r, self->cpu, O_NONBLOCK), 0);
	rb_close_fd(m.fd);
	m.fd = -1;
	ASSERT_EQ(rmdir(r), -1);
	ASSERT_EQ(errno, EBUSY) TH_LOG("the mapping alone must keep the instance");
	ASSERT_EQ(READ_ONCE(m.meta->meta_struct_len), META_STRUCT_LEN);
	ASSERT_EQ(rb_unmap(&m), 0);
	ASSERT_EQ(rmdir(r), 0) TH_LOG("rmdir after close and munmap: %s", strerror(errno));
	ASSERT_EQ(stat(r, &sb), -1);
}

/* ------------------------------------------------- 15. exact accounting */

struct acct_cpu {
	int cpu;
	const char *root;
	unsigned int n;			/* write attempts */
	bool overwrite;
	bool reader_start;		/* lossy: the reader holds off twice */
	struct rbmap m;
	pthread_t wt, rt;

	/* writer */
	unsigned int attempts;		/* atomic */
	unsigned int written, failed;
	int wdone;			/* atomic */
	int werr;
	char wmsg[160];

	/* reader */
	struct seqck ck;
	struct rstate *st;
	int rerr;
	char rmsg[320];
};

/*
 * The writer writes in bursts with a pause after each, so that the reader
 * runs next to it, often on the writer's own sub-buffer.
 */
static const unsigned int bursts[] = { 40, 150, 10, 90, 3, 120 };

static void *acct_writer(void *arg)
{
	struct acct_cpu *a = arg;
	unsigned int i, seq = 0, b = 0, left = bursts[0];
	cpu_set_t set;
	int fd, ret;

	CPU_ZERO(&set);
	CPU_SET(a->cpu, &set);
	if (sched_setaffinity(0, sizeof(set), &set)) {
		a->werr = errno;
		snprintf(a->wmsg, sizeof(a->wmsg), "sched_setaffinity: %s", strerror(errno));
		goto out;
	}
	fd = marker_open(a->root);
	if (fd < 0) {
		a->werr = -fd;
		snprintf(a->wmsg, sizeof(a->wmsg), "trace_marker: %s", strerror(-fd));
		goto out;
	}
	for (i = 0; i < a->n; i++) {
		if (!(i % 64) && sched_getcpu() != a->cpu) {
			a->werr = EINVAL;
			snprintf(a->wmsg, sizeof(a->wmsg), "writer of CPU %d runs on CPU %d",
				 a->cpu, sched_getcpu());
			break;
		}
		ret = put_marker(fd, a->cpu, seq);
		if (!ret) {
			seq++;
		} else if (ret == -EBADF && !a->overwrite) {
			a->failed++;	/* full: the write is dropped */
		} else {
			a->werr = -ret;
			snprintf(a->wmsg, sizeof(a->wmsg), "marker %u: %s", seq, strerror(-ret));
			break;
		}
		__atomic_store_n(&a->attempts, i + 1, __ATOMIC_RELEASE);
		if (!--left) {
			b = (b + 1) % (ARRAY_SIZE(bursts));
			left = bursts[b];
			usleep(1000);
		}
	}
out:
	a->written = seq;
	__atomic_store_n(&a->wdone, 1, __ATOMIC_RELEASE);
	return NULL;
}

/*
 * When lossy, the reader does not read while the writer makes its first
 * ACCT_HOLD attempts, nor again for as many from ACCT_HOLD2 on: the 16 KB
 * ring (565 markers) overflows at the start and once in the middle of the
 * run; the rest of the time the reader reads along with the writer.
 */
#define ACCT_HOLD	700
#define ACCT_HOLD2	1000
#define ACCT_LOSSY_N	2200

static void *acct_reader(void *arg)
{
	struct acct_cpu *a = arg;
	bool hold = a->reader_start;
	unsigned int att, steps = 0;
	int ret, done;

	for (;;) {
		/* A kernel that keeps handing out data must not hang the test. */
		if (++steps > 1000000) {
			snprintf(a->rmsg, sizeof(a->rmsg), "reader: no end after %u steps", steps);
			a->rerr = ELOOP;
			break;
		}
		done = __atomic_load_n(&a->wdone, __ATOMIC_ACQUIRE);
		att = __atomic_load_n(&a->attempts, __ATOMIC_ACQUIRE);
		if (hold && !done && (att < ACCT_HOLD ||
				      (att >= ACCT_HOLD2 && att < ACCT_HOLD2 + ACCT_HOLD))) {
			usleep(500);
			continue;
		}
		ret = rb_step(&a->m, a->st, a->rmsg, sizeof(a->rmsg));
		if (ret < 0) {
			a->rerr = -ret;
			break;
		}
		if (ret > 0) {
			ck_feed(&a->ck, a->st);
			continue;
		}
		if (done)
			break;	/* nothing new after the last write: drained */
		usleep(300);
	}
	return NULL;
}

/*
 * One writer per CPU writes numbered markers, one reader per CPU reads them
 * only through the mapping. Every number is seen at most once, in order; a
 * gap only where the sub-buffer says events were missed; seen + missed =
 * written, and the meta page's counters agree.
 */
static void accounting(struct __test_metadata *_metadata, FIXTURE_DATA(rb) *self,
		       bool overwrite, const char *kb, unsigned int n, bool lossy)
{
	struct acct_cpu *acct;
	const char *r = self->inst;
	int i, ncpu = self->ncpus;

	ASSERT_EQ(inst_prepare(r, "4", kb, overwrite), 0);
	acct = calloc(ncpu, sizeof(*acct));
	ASSERT_NE(acct, NULL);
	for (i = 0; i < ncpu; i++) {
		struct acct_cpu *a = &acct[i];

		a->cpu = self->cpus[i];
		a->root = r;
		a->n = n;
		a->overwrite = overwrite;
		a->reader_start = lossy;
		a->st = rstate_new();
		ASSERT_NE(a->st, NULL);
		ck_init(&a->ck, a->cpu, !overwrite);
		ASSERT_EQ(rb_map(&a->m, r, a->cpu, O_NONBLOCK), 0) TH_LOG("CPU %d", a->cpu);
	}
	for (i = 0; i < ncpu; i++) {
		ASSERT_EQ(pthread_create(&acct[i].rt, NULL, acct_reader, &acct[i]), 0);
		ASSERT_EQ(pthread_create(&acct[i].wt, NULL, acct_writer, &acct[i]), 0);
	}
	for (i = 0; i < ncpu; i++) {
		pthread_join(acct[i].wt, NULL);
		pthread_join(acct[i].rt, NULL);
	}

	for (i = 0; i < ncpu; i++) {
		struct acct_cpu *a = &acct[i];
		struct trace_buffer_meta *meta = a->m.meta;
		struct seqck *c = &a->ck;
		unsigned long long entries, overrun, rd, pending, lost, touched;
		long dropped;

		ASSERT_EQ(a->werr, 0) TH_LOG("CPU %d writer: %s", a->cpu, a->wmsg);
		ASSERT_EQ(a->rerr, 0) TH_LOG("CPU %d reader: %s", a->cpu, a->rmsg);
		ASSERT_CK(c);
		/* The final state; no writer left, so one more GET_READER is idle. */
		ASSERT_EQ(rb_step(&a->m, a->st, a->rmsg, sizeof(a->rmsg)), 0) TH_LOG("%s", a->rmsg);
		entries = READ_ONCE(meta->entries);
		overrun = READ_ONCE(meta->overrun);
		rd = READ_ONCE(meta->read);
		pending = READ_ONCE(meta->reader.lost_events);
		lost = meta_pages_lost(meta);
		touched = meta_pages_touched(meta);
		dropped = percpu_stat(r, a->cpu, "dropped events:");
		TH_LOG(
		       "CPU %d: %u attempts, %u written, %u dropped (stats %ld); seen %lu, %lu gaps of %lu events, %lu/%lu takes missed (%lu count unknown), stored %llu, pending %llu; meta entries %llu overrun %llu read %llu pages_lost %llu pages_touched %llu",
		       a->cpu, a->n, a->written, a->failed, dropped, c->seen, c->gaps,
		       c->gap_events, c->missed_bits, c->takes, c->unknown, c->stored_sum,
		       pending, entries, overrun, rd, lost, touched);

		ASSERT_EQ(a->written + a->failed, a->n);
		ASSERT_EQ(c->foreign, 0);
		ASSERT_EQ(entries, a->written);
		ASSERT_EQ(rd, c->seen);
		ASSERT_EQ(entries, rd + overrun)
			TH_LOG("CPU %d: drained, yet events are left", a->cpu);
		if (a->written) {
			ASSERT_EQ(c->last, (long long)a->written - 1)
				TH_LOG("CPU %d: the newest markers are missing", a->cpu);
		}
		ASSERT_EQ(c->seen + c->gap_events, a->written);
		ASSERT_EQ(overrun, c->gap_events);
		if (!c->unknown) {
			ASSERT_EQ(c->stored_sum + pending, c->gap_events)
				TH_LOG(
				       "CPU %d: missed counts %llu + pending %llu, but %lu markers are missing",
				       a->cpu, c->stored_sum, pending, c->gap_events);
		} else {
			ASSERT_LE(c->stored_sum + pending, c->gap_events);
		}
		if (!overwrite) {
			ASSERT_EQ(c->seen, a->written);
			ASSERT_EQ(c->missed_bits, 0);
			ASSERT_EQ(overrun, 0);
			EXPECT_EQ(dropped, a->failed);
			if (lossy) {
				EXPECT_GT(a->failed, 0)
					TH_LOG("CPU %d: the buffer never filled", a->cpu);
			}
		} else if (lossy) {
			EXPECT_GT(overrun, 0) TH_LOG("CPU %d: the ring never wrapped", a->cpu);
			EXPECT_GT(c->missed_bits + c->pending_takes, 0);
			/* pages_lost and pages_touched (the extension) */
			EXPECT_GT(lost, 0);
			EXPECT_LE(lost, touched);
			EXPECT_LE(lost, overrun);
		} else {
			ASSERT_EQ(c->seen, a->written);
			ASSERT_EQ(c->missed_bits, 0);
			ASSERT_EQ(overrun, 0);
		}
	}
	for (i = 0; i < ncpu; i++) {
		rb_close(&acct[i].m);
		free(acct[i].st);
	}
	free(acct);
}

/* 15a. Overwrite mode, a ring far too small: losses, all accounted for. */
TEST_F_TIMEOUT(rb, acct_overwrite, 300)
{
	accounting(_metadata, self, true, "16", ACCT_LOSSY_N, true);
}

/* 15b. Producer/consumer mode, too small: drops, nothing else lost. */
TEST_F_TIMEOUT(rb, acct_no_overwrite, 300)
{
	accounting(_metadata, self, false, "16", ACCT_LOSSY_N, true);
}

/* 15c. A ring big enough for everything: every marker read. */
TEST_F_TIMEOUT(rb, acct_lossless, 300)
{
	accounting(_metadata, self, true, "256", 1500, false);
}

TEST_HARNESS_MAIN
