// SPDX-License-Identifier: GPL-2.0
/*
 * White-box KUnit suite: every interleaving of the ring's test points with
 * a nested writer, a reader, a mode change or a snapshot swap, to depth 2
 * (see "Test hooks" in Documentation/trace/ring-buffer-design.rst).
 *
 * Why enumerating the points covers every interleaving. The write path
 * (reserve, tail move, eviction, commit, discard) and the reader's swap
 * depend only on the order of their accesses to shared state, and every
 * such access goes through a helper of ring_buffer_internal.h that is a
 * test point ("rbdev check-points" keeps it so): a point sits before each
 * shared access by construction. Whoever else runs meanwhile is atomic
 * with respect to those points: a nested writer (interrupt, NMI) runs to
 * completion before the writer it interrupted goes on, and a reader on
 * another CPU conflicts with the writer only through one cmpxchg of the
 * head word; its other stores write slot values that R1 already implies,
 * or values that only grow. So a real execution equals one in which every
 * other operation happens whole at one point, and this suite runs each
 * such execution: for every hit of every point in a scenario, every action
 * allowed there, and again for every hit inside that action (an interrupt
 * inside an interrupt). `rbdev test` goes to depth 2 under UML and in the
 * x86 guest; the debug guest (KASAN, lockdep) passes depth=1; with depth=3
 * the short scenario goes to depth 3 (see rbi_scenarios). One KUnit case
 * per scenario and first action keeps each case short.
 *
 * Method. A scenario is a fixed script of writes and reads on one CPU, in
 * one mode, on three order-0 sub-buffers. A counting run records the points
 * it hits; each replay uses a fresh buffer and injects one action at hit i
 * (and, at depth 2, one more at hit j of the first action). Actions: a
 * small nested write, one that fills the rest of the tail sub-buffer, one of
 * the largest size (it always moves the tail and fills a whole sub-buffer,
 * so it may evict what a reader is taking), absolute time stamps turned on
 * or off, a snapshot swap there and back (it must refuse while a writer is
 * open, and otherwise move nothing), and outside the reader a consume, a
 * read_page or an iterator step, as a reader on another CPU would do them
 * (each run keeps an iterator open from its start). The sleeping control
 * operations (resize, order change, reset) cannot run inside a writer on
 * its CPU: the stories run them where the swap claims its CPU buffers.
 *
 * Stories. Some bugs need more than two nested actions (a ring refilled by
 * an interrupt, then an NMI, then a reader): a story names its injections
 * by point and occurrence instead of by hit number, and runs under the same
 * oracle. Each story reproduces a bug once found.
 *
 * The oracle. The fake clock returns a new value on every call, and buffer
 * order is clock order (a reservation pass that loses its cmpxchg reads the
 * clock again), so every event has its own time and the read order must be
 * the order of those times: per-source order and non-decreasing time stamps
 * follow. Each event carries its index (tag) and a pattern in its payload;
 * each read must find an event that was committed and not yet read, with
 * the exact clock value of its reservation. The events passed over between
 * two reads must be exactly those reported lost. After a full drain: every
 * committed event read or lost, the overrun, read, entries, dropped and
 * commit-overrun counters equal to what the oracle counted, and
 * rb_check_invariants() clean (also after every script step).
 *
 * Relied on: the hook runs on the writer's CPU with preemption disabled
 * inside a writer; inside a reader the reader lock is held with interrupts
 * off, so no reader action is injected there.
 */

#include <kunit/test.h>
#include <kunit/visibility.h>
#include <linux/ktime.h>
#include <linux/module.h>
#include <linux/ring_buffer.h>
#include <linux/sched.h>
#include <linux/string.h>

#include "ring_buffer_internal.h"

#define RBI_SUBBUFS	3
#define RBI_MAX_REC	64
#define RBI_MAX_HITS	2048
#define RBI_MAX_DEPTH	3
#define RBI_SMALL	8		/* payload of a small write */
#define RBI_BIG		1000		/* the stories' event: four fill a page */
#define RBI_STEP	10		/* fake clock step */
#define RBI_REPORTS	3		/* failing runs reported in full */

static int rbi_depth = 2;
module_param_named(depth, rbi_depth, int, 0444);
MODULE_PARM_DESC(depth, "how many actions deep to nest (0-3; 2 by default)");

enum rbi_action {
	RBI_A_SMALL, RBI_A_FILL, RBI_A_MAX, RBI_A_ABS, RBI_A_SWAP, RBI_A_READ, RBI_A_PAGE,
	RBI_A_ITER, RBI_A_NR,
	/* Only in stories. */
	RBI_A_BIG = RBI_A_NR, RBI_A_DRAIN, RBI_A_ORDER, RBI_A_RESIZE, RBI_A_RESET,
};

static const char * const rbi_action_name[] = {
	[RBI_A_SMALL]	= "small write",
	[RBI_A_FILL]	= "fill write",
	[RBI_A_MAX]	= "largest write",
	[RBI_A_ABS]	= "absolute time stamps toggled",
	[RBI_A_SWAP]	= "snapshot swap and back",
	[RBI_A_READ]	= "consume",
	[RBI_A_PAGE]	= "read_page",
	[RBI_A_ITER]	= "iterator step",
	[RBI_A_BIG]	= "1000-byte write",
	[RBI_A_DRAIN]	= "consume all",
	[RBI_A_ORDER]	= "order change",
	[RBI_A_RESIZE]	= "resize",
	[RBI_A_RESET]	= "reset",
};

static const char * const rbi_point_name[RB_TP_NR] = {
	[RB_TP_WRITE]		= "WRITE",
	[RB_TP_WRITE_CAS]	= "WRITE_CAS",
	[RB_TP_HEAD]		= "HEAD",
	[RB_TP_HEAD_CAS]	= "HEAD_CAS",
	[RB_TP_SLOT]		= "SLOT",
	[RB_TP_SLOT_SET]	= "SLOT_SET",
	[RB_TP_COMMIT]		= "COMMIT",
	[RB_TP_COMMIT_SET]	= "COMMIT_SET",
	[RB_TP_LEN]		= "LEN",
	[RB_TP_LEN_SET]		= "LEN_SET",
	[RB_TP_BOOKS]		= "BOOKS",
	[RB_TP_STAMP]		= "STAMP",
	[RB_TP_STAMP_SET]	= "STAMP_SET",
	[RB_TP_MODE]		= "MODE",
	[RB_TP_OPEN]		= "OPEN",
	[RB_TP_CONTROL]		= "CONTROL",
	[RB_TP_QUIESCED]	= "QUIESCED",
};

/*
 * Script steps. A length of -k means capacity / k - 8 bytes; RBI_LEN_MAX
 * the largest payload outside absolute time stamp mode.
 */
#define RBI_LEN_MAX	INT_MIN
enum rbi_kind {
	RBI_WRITE, RBI_DISCARD, RBI_CONSUME, RBI_PEEK, RBI_PAGE, RBI_DRAIN, RBI_SWAP, RBI_RESIZE,
};

struct rbi_op {
	enum rbi_kind	kind;
	int		len;		/* RBI_RESIZE: the new number of sub-buffers */
	unsigned int	rep;
	u32		gap;		/* clock jump before a write */
};

/*
 * Half-capacity events fill a sub-buffer exactly. In overwrite mode: fill
 * the ring, evict the head, swap with lost events, copy part of a page,
 * a TIME_EXTEND, a whole-page read_page, a reader that takes the tail
 * (detached), moves from there, a second eviction, a write of the largest
 * size. In producer/consumer mode the same script drops writes and moves
 * behind the head instead.
 */
static const struct rbi_op rbi_script[] = {
	{ RBI_WRITE, -2, 2 },
	{ RBI_WRITE, -2, 1 },
	{ RBI_DISCARD, -2, 1 },
	{ RBI_WRITE, -2, 3 },
	{ RBI_WRITE, -2, 1 },
	{ RBI_CONSUME, 0, 1 },
	{ RBI_PAGE, 0, 1 },
	{ RBI_WRITE, RBI_SMALL, 1, 1U << 28 },
	{ RBI_WRITE, -2, 1 },
	{ RBI_PAGE, 0, 1 },
	{ RBI_CONSUME, 0, 3 },
	{ RBI_WRITE, -2, 3 },
	{ RBI_WRITE, RBI_SMALL, 1, 1U << 28 },
	{ RBI_WRITE, -2, 2 },
	{ RBI_WRITE, RBI_LEN_MAX, 1 },
	{ RBI_DRAIN, 0, 1 },
};

/*
 * A story's injection: at the @nth hit (from 0) of point @pt inside the
 * action of beat @parent (-1: the script itself), run @act @rep times.
 */
struct rbi_beat {
	int			parent;
	int			step;		/* with parent -1: the script step */
	enum rb_test_point	pt;
	int			nth;
	enum rbi_action		act;
	int			rep;
};

#define RBI_MAX_BEATS	6
/*
 * A recorded hit: its point, whether the reader lock may be held, and
 * whether it is in a resize's plan, with interrupts on (rb_resize_cpu()).
 */
#define RBI_IN_READER	0x80
#define RBI_IN_PLAN	0x40
#define RBI_POINT(t)	((t) & ~(RBI_IN_READER | RBI_IN_PLAN))

struct rbi_scenario {
	const char		*name;
	unsigned int		flags;
	unsigned int		subbufs;
	const struct rbi_op	*script;
	unsigned int		steps;
	unsigned int		must;		/* points the counting run must hit */
	int			deep;		/* the deepest level it is enumerated to */
	struct rbi_beat		beats[RBI_MAX_BEATS];	/* stories only */
	unsigned int		nbeats;
};

#define RBI_ALL_POINTS	((1U << RB_TP_NR) - 1 - BIT(RB_TP_CONTROL) - BIT(RB_TP_QUIESCED))
/* Kernels where depth 2 of the second scenario would take too long. */
#define RBI_SLOW_KERNEL	(IS_ENABLED(CONFIG_KASAN) || IS_ENABLED(CONFIG_PROVE_LOCKING))

/*
 * Two events that fill a sub-buffer, the tail moving on, a read: short
 * enough to enumerate to depth 3 (the depth=3 run, about a quarter of an
 * hour under UML); the long script stops at depth 2.
 */
static const struct rbi_op rbi_short_script[] = {
	{ RBI_WRITE, -2, 2 },
	{ RBI_CONSUME, 0, 1 },
	{ RBI_WRITE, -2, 1 },
	{ RBI_DRAIN, 0, 1 },
};

static const struct rbi_scenario rbi_scenarios[] = {
	{ "overwrite", RB_FL_OVERWRITE, RBI_SUBBUFS, rbi_script, ARRAY_SIZE(rbi_script),
	  RBI_ALL_POINTS, 2 },
	{ "producer-consumer", 0, RBI_SUBBUFS, rbi_script, ARRAY_SIZE(rbi_script),
	  RBI_ALL_POINTS, RBI_SLOW_KERNEL ? 1 : 2 },
	{ "short, overwrite", RB_FL_OVERWRITE, 2, rbi_short_script,
	  ARRAY_SIZE(rbi_short_script), 0, 3 },
};

enum rbi_state {
	RBI_S_OPEN,		/* reserve not returned yet */
	RBI_S_WRITTEN,
	RBI_S_READ,
	RBI_S_LOST,
	RBI_S_DISCARDED,
	RBI_S_FAILED,		/* no room: counted as dropped or commit overrun */
	RBI_S_REFUSED,		/* above ring_buffer_max_event_size(): not counted */
	RBI_S_EITHER,		/* failed or refused: the mode changed meanwhile */
	RBI_S_NR,
};

static const char * const rbi_state_name[RBI_S_NR] = {
	"being reserved", "unread", "already read", "passed over", "discarded", "failed",
	"refused", "failed or refused",
};

struct rbi_rec {
	u64		ts;
	unsigned int	len;
	enum rbi_state	state;
};

struct rbi_plan {
	int		at[RBI_MAX_DEPTH];	/* hit to inject at, per depth; -1: none */
	enum rbi_action	act[RBI_MAX_DEPTH];
	enum rb_test_point pt[RBI_MAX_DEPTH];	/* for messages */
	bool		spoil;			/* take a sub-buffer in every resize plan */
};

struct rbi_run {
	struct trace_buffer		*buffer;
	struct trace_buffer		*twin;		/* for the snapshot swap */
	struct buffer_data_read_page	*rpage;
	struct ring_buffer_iter		*iter;		/* enumerated scenarios only */
	const struct rbi_scenario	*sc;
	int				cpu;
	const struct rbi_plan		*plan;
	int				depth;		/* 0: the script */
	int				record;		/* depth whose points are recorded */
	int				in_reader;	/* the reader lock may be held */
	bool				in_resize;	/* a resize step is running */
	bool				was_locked;	/* interrupts off at its last point */
	bool				planning;	/* it has taken the reader lock once */
	unsigned int			plans;		/* times it took the lock, then let go */
	unsigned int			spoils;		/* plans spoiled (plan->spoil) */
	unsigned int			toggles;	/* absolute time stamp mode changes */
	bool				quiet;
	bool				leak;		/* a broken swap left them unsafe to free */
	int				hits[RBI_MAX_DEPTH + 1];
	unsigned int			points;		/* hit at depth 0 */
	u8				trace[RBI_MAX_HITS];
	/* stories: the beat whose action runs at each depth, hits per point */
	int				beat_at[RBI_MAX_DEPTH + 1];
	u16				beat_hits[RBI_MAX_DEPTH + 1][RB_TP_NR];
	unsigned int			beats_run;	/* bit b: beat b ran */
	u64				now;
	u64				clk[RBI_MAX_DEPTH + 1];	/* last clock value, per depth */
	struct rbi_rec			rec[RBI_MAX_REC];
	unsigned int			nrec;
	unsigned long			pend;		/* reported lost, not yet matched */
	bool				pend_unknown;
	u64				last_ts;
	int				op;
	char				err[192];
};

/* The clock is global to the buffer; one run at a time. */
static struct rbi_run *rbi_cur;
static unsigned long rbi_total;

static u64 rbi_clock(void)
{
	struct rbi_run *r = rbi_cur;

	r->now += RBI_STEP;
	r->clk[r->depth] = r->now;
	return r->now;
}

static __printf(2, 3) void rbi_fail(struct rbi_run *r, const char *fmt, ...)
{
	va_list args;

	if (r->err[0])
		return;
	va_start(args, fmt);
	vsnprintf(r->err, sizeof(r->err), fmt, args);
	va_end(args);
}

static bool rbi_is_reader(enum rbi_action a)
{
	return a == RBI_A_READ || a == RBI_A_PAGE || a == RBI_A_ITER || a == RBI_A_DRAIN;
}

/*
 * Readers need the reader lock: not while it may be held. Inside a resize
 * step, only readers, and only while its interrupts are on: the CPU is
 * quiesced, and the reader lock is held whenever they are off.
 */
static bool rbi_allowed(struct rbi_run *r, enum rbi_action a)
{
	if (r->in_resize && !r->depth)
		return rbi_is_reader(a) && !irqs_disabled();
	return !rbi_is_reader(a) || !r->in_reader;
}

static u8 rbi_byte(u32 tag, unsigned int i)
{
	return i < sizeof(tag) ? ((u8 *)&tag)[i] : (u8)(tag * 31 + i);
}

static bool rbi_payload_ok(const u8 *p, unsigned int len, u32 tag)
{
	unsigned int i;

	for (i = 0; i < len; i++)
		if (p[i] != rbi_byte(tag, i))
			return false;
	return true;
}

/*
 * Events written before @ts and not read are gone; there must be exactly as
 * many as were reported lost since the last read.
 */
static void rbi_pass_over(struct rbi_run *r, u64 ts)
{
	unsigned int k, n = 0;

	for (k = 0; k < r->nrec; k++) {
		if (r->rec[k].state == RBI_S_WRITTEN && r->rec[k].ts < ts) {
			r->rec[k].state = RBI_S_LOST;
			n++;
		}
	}
	if (!r->pend_unknown && n != r->pend)
		rbi_fail(r, "%u events passed over before t=%llu, %lu reported lost",
			 n, ts, r->pend);
	r->pend = 0;
	r->pend_unknown = false;
}

/* One event read back, with @room payload bytes, at time @ts. */
static void rbi_saw(struct rbi_run *r, const u8 *data, unsigned int room, u64 ts)
{
	struct rbi_rec *rec;
	u32 tag;

	if (room < sizeof(tag)) {
		rbi_fail(r, "event with %u payload bytes read", room);
		return;
	}
	memcpy(&tag, data, sizeof(tag));
	if (tag >= r->nrec) {
		rbi_fail(r, "event with unknown tag %u read", tag);
		return;
	}
	rec = &r->rec[tag];
	if (rec->state != RBI_S_WRITTEN) {
		rbi_fail(r, "event %u read while %s", tag, rbi_state_name[rec->state]);
		return;
	}
	if (room < rec->len || !rbi_payload_ok(data, rec->len, tag))
		rbi_fail(r, "event %u: payload corrupted", tag);
	if (ts != rec->ts)
		rbi_fail(r, "event %u: time %llu, reserved at %llu", tag, ts, rec->ts);
	if (ts < r->last_ts)
		rbi_fail(r, "event %u: time %llu after %llu", tag, ts, r->last_ts);
	rbi_pass_over(r, rec->ts);
	rec->state = RBI_S_READ;
	r->last_ts = ts;
}

static bool rbi_consume(struct rbi_run *r)
{
	struct ring_buffer_event *event;
	unsigned long lost = 0;
	u64 ts;

	r->in_reader++;
	event = ring_buffer_consume(r->buffer, r->cpu, &ts, &lost);
	r->in_reader--;
	if (!event)
		return false;
	if (lost > RBI_MAX_REC) {
		rbi_fail(r, "%lu events reported lost, %u were written", lost, r->nrec);
		return false;
	}
	r->pend += lost;
	rbi_saw(r, ring_buffer_event_data(event), ring_buffer_event_length(event), ts);
	return true;
}

/*
 * One iterator step. The iterator reads without consuming and may lag
 * behind the consumer or be lapped by the writer; what it returns must
 * still be an event that was committed, intact, with its exact time.
 */
static void rbi_iter_step(struct rbi_run *r)
{
	struct ring_buffer_event *event;
	struct rbi_rec *rec;
	u64 ts;
	u32 tag;

	if (!r->iter)
		return;
	r->in_reader++;
	event = ring_buffer_iter_peek(r->iter, &ts);
	if (event)
		ring_buffer_iter_advance(r->iter);
	r->in_reader--;
	if (!event)
		return;
	memcpy(&tag, ring_buffer_event_data(event), sizeof(tag));
	if (tag >= r->nrec) {
		rbi_fail(r, "iterator: event with unknown tag %u", tag);
		return;
	}
	rec = &r->rec[tag];
	if (rec->state != RBI_S_WRITTEN && rec->state != RBI_S_READ && rec->state != RBI_S_LOST)
		rbi_fail(r, "iterator: event %u while %s", tag, rbi_state_name[rec->state]);
	else if (ring_buffer_event_length(event) < rec->len ||
		 !rbi_payload_ok(ring_buffer_event_data(event), rec->len, tag))
		rbi_fail(r, "iterator: event %u: payload corrupted", tag);
	else if (ts != rec->ts)
		rbi_fail(r, "iterator: event %u: time %llu, reserved at %llu", tag, ts, rec->ts);
}

static void rbi_drain(struct rbi_run *r)
{
	unsigned int guard;

	for (guard = 0; guard < 4 * RBI_MAX_REC && !r->err[0] && rbi_consume(r); guard++)
		;
}

/* Consume until the reader has taken another sub-buffer: the head moves. */
static void rbi_take_subbuf(struct rbi_run *r)
{
	struct rb_cpu_buffer *cpu_buffer = r->buffer->cpus[r->cpu];
	unsigned long taken = READ_ONCE(cpu_buffer->subbufs_taken);
	unsigned int guard;

	for (guard = 0; guard < RBI_MAX_REC && !r->err[0] &&
	     READ_ONCE(cpu_buffer->subbufs_taken) == taken && rbi_consume(r); guard++)
		;
}

/* Bytes of the event at @e on a page, 0 for the end marker. */
static unsigned int rbi_event_bytes(struct ring_buffer_event *e)
{
	switch (e->type_len) {
	case RINGBUF_TYPE_PADDING:
		return e->time_delta ? RB_EVENT_HDR + e->array[0] : 0;
	case RINGBUF_TYPE_TIME_EXTEND:
	case RINGBUF_TYPE_TIME_STAMP:
		return RB_LEN_TIME;
	case 0:
		return RB_EVENT_HDR + e->array[0];
	default:
		return RB_EVENT_HDR + 4 * e->type_len;
	}
}

/* Walk a page from ring_buffer_read_page() the way libtraceevent does. */
static void rbi_read_page(struct rbi_run *r)
{
	unsigned int cap = rb_capacity(r->buffer), len, off, bytes;
	struct rb_page *pg;
	unsigned long commit;
	u64 ts;
	int ret;

	r->in_reader++;
	ret = ring_buffer_read_page(r->buffer, r->rpage, ring_buffer_read_page_size(r->rpage),
				    r->cpu, 0);
	r->in_reader--;
	if (ret < 0)
		return;
	pg = ring_buffer_read_page_data(r->rpage);
	commit = local_read(&pg->commit);
	len = commit & ~RB_MISSED_MASK;
	if (len > cap) {
		rbi_fail(r, "read_page: %u bytes of data", len);
		return;
	}
	if (commit & RB_MISSED_STORED)
		r->pend += *(unsigned long *)&pg->data[len];
	else if (commit & RB_MISSED_EVENTS)
		r->pend_unknown = true;
	ts = pg->time_stamp;
	for (off = 0; off < len && !r->err[0]; off += bytes) {
		struct ring_buffer_event *e = (void *)&pg->data[off];

		bytes = rbi_event_bytes(e);
		if (!bytes)
			break;
		if (bytes < RB_EVENT_HDR + 4 || off + bytes > len) {
			rbi_fail(r, "read_page: event of %u bytes at %u of %u", bytes, off, len);
			return;
		}
		switch (e->type_len) {
		case RINGBUF_TYPE_PADDING:
			break;
		case RINGBUF_TYPE_TIME_EXTEND:
			ts += ((u64)e->array[0] << RB_DELTA_BITS) | e->time_delta;
			break;
		case RINGBUF_TYPE_TIME_STAMP:
			ts = ((u64)e->array[0] << RB_DELTA_BITS) | e->time_delta;
			ts = (ts & RB_STAMP_MASK) | (pg->time_stamp & ~RB_STAMP_MASK);
			break;
		default:
			ts += e->time_delta;
			rbi_saw(r, ring_buffer_event_data(e),
				bytes - RB_EVENT_HDR - (e->type_len ? 0 : 4), ts);
		}
	}
}

/* Reserve and commit (or discard) one event of @len payload bytes. */
static void rbi_write(struct rbi_run *r, unsigned int len, bool discard)
{
	struct ring_buffer_event *event;
	struct rbi_rec *rec;
	unsigned int i, toggles = r->toggles;
	u32 tag = r->nrec;
	u8 *p;

	if (tag >= RBI_MAX_REC) {
		rbi_fail(r, "more than %d writes", RBI_MAX_REC);
		return;
	}
	rec = &r->rec[r->nrec++];
	rec->len = len;
	event = ring_buffer_lock_reserve(r->buffer, len);
	if (!event) {
		/*
		 * Too long for the mode at the start: refused, not counted. If
		 * the mode changed during the write, either may have happened.
		 */
		if (len <= ring_buffer_max_event_size(r->buffer))
			rec->state = toggles == r->toggles ? RBI_S_FAILED : RBI_S_EITHER;
		else
			rec->state = toggles == r->toggles ? RBI_S_REFUSED : RBI_S_EITHER;
		return;
	}
	/* Hits inside the reserve run deeper and keep their own clock value. */
	rec->ts = r->clk[r->depth];
	p = ring_buffer_event_data(event);
	for (i = 0; i < len; i++)
		p[i] = rbi_byte(tag, i);
	if (discard) {
		rec->state = RBI_S_DISCARDED;
		ring_buffer_discard_commit(r->buffer, event);
		return;
	}
	/* Complete now: a reader injected into the commit may see it. */
	rec->state = RBI_S_WRITTEN;
	if (ring_buffer_unlock_commit(r->buffer))
		rbi_fail(r, "commit of event %u failed", tag);
}

/*
 * Payload that fills the rest of the tail sub-buffer after the 8-byte
 * TIME_STAMP a nested event carries (event sizes as rb_event_bytes() in the
 * design). Where the write turns out outermost it ends 8 bytes short; where
 * the rounding does not fit, it moves the tail: both are cases worth having.
 */
static unsigned int rbi_fill_len(struct rbi_run *r)
{
	struct rb_cpu_buffer *cpu_buffer = r->buffer->cpus[r->cpu];
	unsigned int room = rb_capacity(r->buffer) - rb_w_off(local64_read(&cpu_buffer->write));
	unsigned int want;

	if (room < 16 + RB_LEN_TIME)
		return RBI_SMALL;
	want = room - RB_LEN_TIME;
	if (want > RB_SMALL_MAX + 2 * RB_EVENT_HDR)
		return want - 2 * RB_EVENT_HDR;
	return min(want - RB_EVENT_HDR, RB_SMALL_MAX);
}

static unsigned long rbi_size(const struct rbi_scenario *sc)
{
	return sc->subbufs * (PAGE_SIZE - RB_PAGE_HDR);
}

/*
 * A snapshot swap from an interrupt, there and back: while a writer of the
 * CPU has counted itself it must refuse; otherwise both swaps succeed and
 * nothing moves. The points of the swap back are not injected at: a write
 * between the two swaps would rightly land in the snapshot buffer, which a
 * real snapshot keeps, and this oracle does not follow it there.
 */
static void rbi_swap(struct rbi_run *r)
{
	long open = local_read(&r->buffer->cpus[r->cpu]->open_count);
	int ret = ring_buffer_swap_cpu(r->buffer, r->twin, r->cpu);

	if (ret == -ENODEV)
		return;		/* built without CONFIG_RING_BUFFER_ALLOW_SWAP */
	if (ret && ret != -EBUSY)
		rbi_fail(r, "snapshot swap: %d", ret);
	if (ret)
		return;
	if (open)
		rbi_fail(r, "snapshot swap succeeded with %ld writers open", open);
	r->quiet = true;
	ret = ring_buffer_swap_cpu(r->buffer, r->twin, r->cpu);
	r->quiet = false;
	if (ret)
		rbi_fail(r, "snapshot swap back: %d", ret);
}

/* Sub-buffer order and count of @buffer's CPU buffer, as one number. */
static unsigned long rbi_geometry(struct trace_buffer *buffer, int cpu)
{
	return ring_buffer_subbuf_order_get(buffer) * 1000000UL + buffer->cpus[cpu]->nr;
}

/*
 * A snapshot swap with no writer open: it succeeds where the two buffers
 * have the same geometry and refuses with -EINVAL where they do not.
 */
static void rbi_swap_step(struct rbi_run *r)
{
	int ret = ring_buffer_swap_cpu(r->buffer, r->twin, r->cpu);
	unsigned long a, b;

	if (ret == -ENODEV)
		return;		/* built without CONFIG_RING_BUFFER_ALLOW_SWAP */
	/* Where the swap wrongly happened, each buffer now has the other's. */
	a = rbi_geometry(r->buffer, r->cpu);
	b = rbi_geometry(r->twin, r->cpu);
	if (!ret && a != b) {
		rbi_fail(r, "snapshot swap between geometries (order, count) %lu and %lu", a, b);
		r->leak = true;
	} else if (ret && (a == b || ret != -EINVAL)) {
		rbi_fail(r, "snapshot swap refused (%d) with no writer open", ret);
	} else if (!ret && ring_buffer_swap_cpu(r->buffer, r->twin, r->cpu)) {
		rbi_fail(r, "snapshot swap back refused");
	}
}

/*
 * trace.c changes the order of the main buffer, then of the snapshot
 * buffer: a swap may run in between.
 */
static void rbi_order(struct rbi_run *r)
{
	if (ring_buffer_subbuf_order_set(r->buffer, ring_buffer_subbuf_order_get(r->buffer) + 1))
		rbi_fail(r, "order change failed");
}

static void rbi_act(struct rbi_run *r, enum rbi_action a)
{
	unsigned int len;

	switch (a) {
	case RBI_A_READ:
		rbi_consume(r);
		return;
	case RBI_A_PAGE:
		rbi_read_page(r);
		return;
	case RBI_A_DRAIN:
		rbi_drain(r);
		return;
	case RBI_A_ITER:
		rbi_iter_step(r);
		return;
	case RBI_A_ABS:
		ring_buffer_set_time_stamp_abs(r->buffer,
					       !ring_buffer_time_stamp_abs(r->buffer));
		r->toggles++;
		return;
	case RBI_A_SWAP:
		rbi_swap(r);
		return;
	case RBI_A_ORDER:
		rbi_order(r);
		return;
	case RBI_A_RESIZE:
		if (ring_buffer_resize(r->buffer, 2 * rbi_size(r->sc), r->cpu))
			rbi_fail(r, "resize failed");
		return;
	case RBI_A_RESET:
		ring_buffer_reset_cpu(r->buffer, r->cpu);
		return;
	case RBI_A_SMALL:
		len = RBI_SMALL;
		break;
	case RBI_A_FILL:
		len = rbi_fill_len(r);
		break;
	case RBI_A_BIG:
		len = RBI_BIG;
		break;
	default:
		len = ring_buffer_max_event_size(r->buffer);
	}
	/* Fresh recursion bits: the write behaves like an interrupt. */
	ring_buffer_nest_start(r->buffer);
	rbi_write(r, len, false);
	ring_buffer_nest_end(r->buffer);
}

/* Run the story's beats due at this point. */
static void rbi_beats(struct rbi_run *r, int d, enum rb_test_point pt)
{
	const struct rbi_scenario *sc = r->sc;
	int n = r->beat_hits[d][pt]++, b, k;

	for (b = 0; b < sc->nbeats; b++) {
		const struct rbi_beat *bt = &sc->beats[b];

		if (bt->parent != r->beat_at[d] || bt->pt != pt || bt->nth != n ||
		    (bt->parent < 0 && bt->step != r->op))
			continue;
		r->beats_run |= BIT(b);
		for (k = 0; k < bt->rep && !r->err[0]; k++) {
			r->depth++;
			r->beat_at[r->depth] = b;
			memset(r->beat_hits[r->depth], 0, sizeof(r->beat_hits[0]));
			rbi_act(r, bt->act);
			r->depth--;
		}
	}
}

static void rbi_hook(struct trace_buffer *buffer, int cpu, enum rb_test_point pt, void *data)
{
	struct rbi_run *r = data;
	int d = r->depth, n;

	if (r->quiet)
		return;
	/* A control operation claims, or looks at, every CPU buffer in turn. */
	if (cpu != r->cpu && (pt == RB_TP_CONTROL || pt == RB_TP_QUIESCED))
		return;
	if (cpu != r->cpu || pt >= RB_TP_NR) {
		rbi_fail(r, "hook called for CPU %d, point %d", cpu, pt);
		return;
	}
	if (r->sc->nbeats) {
		if (d < RBI_MAX_DEPTH)
			rbi_beats(r, d, pt);
		return;
	}
	/*
	 * A resize's plans: each starts under the reader lock (interrupts
	 * off) and goes on with interrupts on (rb_resize_cpu()).
	 */
	if (!d && r->in_resize && pt != RB_TP_QUIESCED) {
		if (irqs_disabled())
			r->planning = true;
		else if (r->was_locked)
			r->plans++;
		if (r->plan->spoil && !irqs_disabled() && r->was_locked) {
			r->spoils++;
			r->depth++;
			rbi_take_subbuf(r);
			r->depth--;
		}
		r->was_locked = irqs_disabled();
	}
	if (r->plan->spoil)
		return;
	n = r->hits[d]++;
	if (!d)
		r->points |= BIT(pt);
	if (d == r->record && n < RBI_MAX_HITS)
		r->trace[n] = pt | (r->in_reader || (r->in_resize && irqs_disabled()) ?
				    RBI_IN_READER : 0) |
			      (!d && r->planning && r->in_resize && !irqs_disabled() &&
			       pt != RB_TP_QUIESCED ? RBI_IN_PLAN : 0);
	if (d < RBI_MAX_DEPTH && n == r->plan->at[d] && rbi_allowed(r, r->plan->act[d])) {
		r->depth++;
		rbi_act(r, r->plan->act[d]);
		r->depth--;
	}
}

static void rbi_step(struct rbi_run *r, const struct rbi_op *op)
{
	unsigned long lost;
	unsigned int i, len;
	u64 ts;

	for (i = 0; i < op->rep && !r->err[0]; i++) {
		switch (op->kind) {
		case RBI_WRITE:
		case RBI_DISCARD:
			r->now += op->gap;
			if (op->len == RBI_LEN_MAX)
				len = r->buffer->max_data_size;
			else if (op->len < 0)
				len = rb_capacity(r->buffer) / -op->len - 8;
			else
				len = op->len;
			rbi_write(r, len, op->kind == RBI_DISCARD);
			break;
		case RBI_CONSUME:
			rbi_consume(r);
			break;
		case RBI_PEEK:
			/* The reader takes a sub-buffer and reads nothing of it. */
			r->in_reader++;
			ring_buffer_peek(r->buffer, r->cpu, &ts, &lost);
			r->in_reader--;
			break;
		case RBI_PAGE:
			rbi_read_page(r);
			break;
		case RBI_DRAIN:
			rbi_drain(r);
			break;
		case RBI_SWAP:
			rbi_swap_step(r);
			break;
		case RBI_RESIZE:
			r->in_resize = true;
			r->planning = false;
			r->was_locked = false;
			len = op->len * (PAGE_SIZE - RB_PAGE_HDR);
			if (ring_buffer_resize(r->buffer, len, r->cpu))
				rbi_fail(r, "resize to %d sub-buffers failed", op->len);
			r->in_resize = false;
			break;
		}
	}
}

/* Read what is left, then compare everything with the counters. */
static void rbi_oracle(struct rbi_run *r)
{
	struct trace_buffer *b = r->buffer;
	unsigned int n[RBI_S_NR] = {}, k;
	unsigned long failed;

	rbi_drain(r);
	if (r->err[0])
		return;
	rbi_pass_over(r, U64_MAX);
	for (k = 0; k < r->nrec; k++)
		n[r->rec[k].state]++;
	failed = ring_buffer_dropped_events_cpu(b, r->cpu) +
		 ring_buffer_commit_overrun_cpu(b, r->cpu);
	if (n[RBI_S_OPEN] || ring_buffer_entries_cpu(b, r->cpu))
		rbi_fail(r, "drained, but %lu entries left", ring_buffer_entries_cpu(b, r->cpu));
	if (ring_buffer_overrun_cpu(b, r->cpu) != n[RBI_S_LOST])
		rbi_fail(r, "overrun %lu, %u events lost",
			 ring_buffer_overrun_cpu(b, r->cpu), n[RBI_S_LOST]);
	if (ring_buffer_read_events_cpu(b, r->cpu) != n[RBI_S_READ])
		rbi_fail(r, "read counter %lu, %u events read",
			 ring_buffer_read_events_cpu(b, r->cpu), n[RBI_S_READ]);
	if (failed < n[RBI_S_FAILED] || failed > n[RBI_S_FAILED] + n[RBI_S_EITHER])
		rbi_fail(r, "dropped + commit overrun %lu, %u writes failed (%u more may have)",
			 failed, n[RBI_S_FAILED], n[RBI_S_EITHER]);
	if (!ring_buffer_empty_cpu(r->twin, r->cpu))
		rbi_fail(r, "events left behind in the snapshot buffer");
	if (!r->err[0] && rb_check_invariants(b, r->cpu))
		rbi_fail(r, "invariants broken after the drain");
}

static bool rbi_has_step(const struct rbi_scenario *sc, enum rbi_kind kind)
{
	unsigned int i;

	for (i = 0; i < sc->steps; i++)
		if (sc->script[i].kind == kind)
			return true;
	return false;
}

/* One run of the script on a fresh buffer, with @plan's injections. */
static bool rbi_run(const struct rbi_scenario *sc, struct rbi_run *r,
		    const struct rbi_plan *plan, int record)
{
	unsigned long missing;
	unsigned int i;

	memset(r, 0, sizeof(*r));
	r->sc = sc;
	r->cpu = raw_smp_processor_id();
	r->plan = plan;
	r->record = record;
	r->beat_at[0] = -1;
	r->now = 1000;
	rbi_cur = r;
	r->buffer = ring_buffer_alloc(rbi_size(sc), sc->flags);
	r->twin = ring_buffer_alloc(rbi_size(sc), sc->flags);
	if (!r->buffer || !r->twin) {
		rbi_fail(r, "no buffer");
		goto out;
	}
	ring_buffer_set_clock(r->buffer, rbi_clock);
	ring_buffer_set_clock(r->twin, rbi_clock);
	if (ring_buffer_alloc_read_page(r->buffer, r->cpu, &r->rpage)) {
		r->rpage = NULL;
		rbi_fail(r, "no read page");
		goto out;
	}
	/* Stories and resizes run control operations, which an iterator holds off. */
	if (!sc->nbeats && !rbi_has_step(sc, RBI_RESIZE))
		r->iter = ring_buffer_read_start(r->buffer, r->cpu, GFP_KERNEL);
	/* Never removed: that would wait for a grace period on every run. */
	rb_set_test_hook(r->buffer, rbi_hook, r);
	for (i = 0; i < sc->steps && !r->err[0]; i++) {
		r->op = i;
		memset(r->beat_hits[0], 0, sizeof(r->beat_hits[0]));
		rbi_step(r, &sc->script[i]);
		if (!r->err[0] && rb_check_invariants(r->buffer, r->cpu))
			rbi_fail(r, "invariants broken");
	}
	r->quiet = true;
	if (!r->err[0])
		rbi_oracle(r);
	if (!r->err[0] && plan && plan->at[0] >= 0 && r->hits[0] <= plan->at[0])
		rbi_fail(r, "the replay diverged: hit %d never came", plan->at[0]);
	/* A story whose point moved would pass without telling its story. */
	missing = (BIT(sc->nbeats) - 1) & ~r->beats_run;
	if (!r->err[0] && missing)
		rbi_fail(r, "beat %u of the story never ran", (unsigned int)__ffs(missing));
	if (r->iter)
		ring_buffer_read_finish(r->iter);
	if (!r->leak)
		ring_buffer_free_read_page(r->buffer, r->cpu, r->rpage);
out:
	if (r->twin && !r->leak)
		ring_buffer_free(r->twin);
	if (r->buffer && !r->leak)
		ring_buffer_free(r->buffer);
	return !r->err[0];
}

static bool rbi_check(struct kunit *test, const struct rbi_scenario *sc, struct rbi_run *r,
		      const struct rbi_plan *p, int record, unsigned int *fails)
{
	char how[256] = "nothing";
	int d, n = 0;

	cond_resched();
	if (rbi_run(sc, r, p, record))
		return true;
	if (++*fails > RBI_REPORTS)
		return false;
	for (d = 0; d < RBI_MAX_DEPTH && p->at[d] >= 0; d++)
		n += scnprintf(how + n, sizeof(how) - n, "%s%s at hit %d (%s)",
			       d ? ", inside it " : "", rbi_action_name[p->act[d]],
			       p->at[d], rbi_point_name[p->pt[d]]);
	KUNIT_FAIL(test, "%s: %s; script step %d; injected: %s", sc->name, r->err, r->op, how);
	return false;
}

/* Copy the points recorded by the last run. */
static int rbi_trace(struct kunit *test, struct rbi_run *r, int d, u8 *to)
{
	KUNIT_EXPECT_LE_MSG(test, r->hits[d], RBI_MAX_HITS, "more points than recorded");
	memcpy(to, r->trace, min(r->hits[d], RBI_MAX_HITS));
	return min(r->hits[d], RBI_MAX_HITS);
}

struct rbi_enum {
	struct kunit			*test;
	const struct rbi_scenario	*sc;
	struct rbi_run			*r;
	struct rbi_plan			p;
	u8				*trace[RBI_MAX_DEPTH];
	unsigned int			runs[RBI_MAX_DEPTH + 1];
	unsigned int			fails;
	int				depth;		/* deepest level enumerated */
	int				first;		/* the only action at depth 1 */
};

/*
 * Inject every action at every hit of level @d of the run in e->p (whose
 * levels below @d are fixed), and recurse into each injected action.
 */
static void rbi_enumerate(struct rbi_enum *e, int d, int nhits)
{
	int i, a, nsub;

	for (i = 0; i < nhits; i++) {
		for (a = 0; a < RBI_A_NR; a++) {
			if ((e->trace[d][i] & RBI_IN_READER) && rbi_is_reader(a))
				continue;
			if (!d && a != e->first)
				continue;
			e->p.at[d] = i;
			e->p.act[d] = a;
			e->p.pt[d] = RBI_POINT(e->trace[d][i]);
			if (d + 1 < RBI_MAX_DEPTH)
				e->p.at[d + 1] = -1;
			e->runs[d + 1]++;
			if (!rbi_check(e->test, e->sc, e->r, &e->p, d + 1, &e->fails) ||
			    d + 1 >= e->depth)
				continue;
			nsub = rbi_trace(e->test, e->r, d + 1, e->trace[d + 1]);
			rbi_enumerate(e, d + 1, nsub);
		}
	}
	e->p.at[d] = -1;
}

/*
 * One KUnit case per scenario and first action, so that each stays far
 * below KUnit's 300 s limit per case even on a slow, loaded guest.
 */
struct rbi_case {
	const struct rbi_scenario	*sc;
	enum rbi_action			first;
};

#define RBI_CASES	(ARRAY_SIZE(rbi_scenarios) * RBI_A_NR)

/*
 * The case after @prev in @tab[@n]: scenario i / @nacts of @sc, with
 * action @acts[i % @nacts] (or action i % @nacts itself when @acts is NULL).
 */
static const void *rbi_case_next(struct rbi_case *tab, unsigned int n,
				 const struct rbi_scenario *sc, const enum rbi_action *acts,
				 unsigned int nacts, const char *label, const void *prev,
				 char *desc)
{
	unsigned int i = prev ? (const struct rbi_case *)prev - tab + 1 : 0;

	if (i >= n)
		return NULL;
	tab[i].sc = &sc[i / nacts];
	tab[i].first = acts ? acts[i % nacts] : i % nacts;
	snprintf(desc, KUNIT_PARAM_DESC_SIZE, "%s, %s%s", tab[i].sc->name, label,
		 rbi_action_name[tab[i].first]);
	return &tab[i];
}

static const void *rbi_case_gen(const void *prev, char *desc)
{
	static struct rbi_case cases[RBI_CASES];

	return rbi_case_next(cases, RBI_CASES, rbi_scenarios, NULL, RBI_A_NR, "first ",
			     prev, desc);
}

static void rbi_interleavings(struct kunit *test)
{
	const struct rbi_case *c = test->param_value;
	const struct rbi_scenario *sc = c->sc;
	struct rbi_enum e = { .test = test, .sc = sc, .p = { .at = { -1, -1, -1 } },
			      .first = c->first };
	int d, ntop;
	u64 t0 = ktime_get_ns();

	e.r = kunit_kzalloc(test, sizeof(*e.r), GFP_KERNEL);
	KUNIT_ASSERT_NOT_NULL(test, e.r);
	for (d = 0; d < RBI_MAX_DEPTH; d++) {
		e.trace[d] = kunit_kzalloc(test, RBI_MAX_HITS, GFP_KERNEL);
		KUNIT_ASSERT_NOT_NULL(test, e.trace[d]);
	}
	e.depth = clamp(rbi_depth, 0, sc->deep);
	/* Every write must land in the per-CPU buffer the run reads. */
	KUNIT_ASSERT_EQ(test, 0, set_cpus_allowed_ptr(current,
						      cpumask_of(raw_smp_processor_id())));
	if (sc == rbi_scenarios && !c->first)
		rbi_total = 0;

	e.runs[0] = 1;
	KUNIT_ASSERT_TRUE(test, rbi_check(test, sc, e.r, &e.p, 0, &e.fails));
	ntop = rbi_trace(test, e.r, 0, e.trace[0]);
	KUNIT_EXPECT_EQ_MSG(test, e.r->points & sc->must, sc->must,
			    "the script misses some points (bit n: enum rb_test_point n)");
	if (e.depth)
		rbi_enumerate(&e, 0, ntop);
	for (d = 0; d <= e.depth; d++)
		rbi_total += e.runs[d];
	kunit_info(test, "%s, first %s: %d points hit, %u interleavings at depth 1, %u at depth 2, %u at depth 3, %u failed, %llu ms\n",
		   sc->name, rbi_action_name[c->first], ntop, e.runs[1], e.runs[2], e.runs[3],
		   e.fails, div_u64(ktime_get_ns() - t0, NSEC_PER_MSEC));
	if (sc == &rbi_scenarios[ARRAY_SIZE(rbi_scenarios) - 1] && c->first == RBI_A_NR - 1)
		kunit_info(test, "%lu interleavings run over %zu scenarios (depth %d)\n",
			   rbi_total, ARRAY_SIZE(rbi_scenarios), e.depth);
}

static void rbi_desc(const struct rbi_scenario *sc, char *desc)
{
	strscpy(desc, sc->name, KUNIT_PARAM_DESC_SIZE);
}

/* ---- stories: bugs once found, replayed under the oracle ---- */

static const struct rbi_op rbi_one_big[] = {
	{ RBI_WRITE, RBI_BIG, 1 },
	{ RBI_DRAIN, 0, 1 },
};

static const struct rbi_op rbi_detached_big[] = {
	{ RBI_WRITE, RBI_SMALL, 1 },
	{ RBI_CONSUME, 0, 1 },
	{ RBI_WRITE, RBI_BIG, 1 },
	{ RBI_DRAIN, 0, 1 },
};

static const struct rbi_op rbi_halves_then_max[] = {
	{ RBI_WRITE, -2, 5 },
	{ RBI_WRITE, RBI_LEN_MAX, 1 },
	{ RBI_WRITE, -2, 1 },
	{ RBI_DRAIN, 0, 1 },
};

static const struct rbi_op rbi_one_small[] = {
	{ RBI_WRITE, RBI_SMALL, 1 },
	{ RBI_DRAIN, 0, 1 },
};

static const struct rbi_op rbi_write_swap[] = {
	{ RBI_WRITE, RBI_SMALL, 2 },
	{ RBI_SWAP, 0, 1 },
	{ RBI_WRITE, -2, 3 },
	{ RBI_DRAIN, 0, 1 },
};

static const struct rbi_op rbi_one_swap[] = {
	{ RBI_SWAP, 0, 1 },
	{ RBI_WRITE, -2, 3 },
	{ RBI_DRAIN, 0, 1 },
};

static const struct rbi_scenario rbi_stories[] = {
	/*
	 * Review bug 1: on two sub-buffers, a task reserves at offset 0 of the
	 * head; an interrupt refills the ring (7 events); the task's commit
	 * publishes. The commit point was two stores then, and an NMI between
	 * them evicted the head and re-entered it while a reader on another
	 * CPU read all it could. Now it is one store: an NMI just before it
	 * finds the head still holding the commit point and is refused room;
	 * one just after it (the commit's drop of the open count) evicts the
	 * head and re-enters it, and at its reservation the reader drains. The
	 * reader must not take the sub-buffer the NMI is writing, nor report a
	 * negative loss.
	 */
	{ "publish window", RB_FL_OVERWRITE, 2, rbi_one_big, ARRAY_SIZE(rbi_one_big), 0, 0,
	  { { -1, 0, RB_TP_BOOKS, 0, RBI_A_BIG, 7 },
	    { -1, 0, RB_TP_COMMIT_SET, 0, RBI_A_BIG, 1 },
	    { -1, 0, RB_TP_OPEN, 5, RBI_A_BIG, 1 },
	    { 2, 0, RB_TP_WRITE_CAS, 1, RBI_A_DRAIN, 1 } }, 4 },
	/*
	 * Found by review after the first fix, which stored commit_id before
	 * commit_vpos: on two sub-buffers the reader holds the commit one (a
	 * detached tail); a task's write there is joined by an interrupt that
	 * fills the ring (11 events), so the task's publish walks exactly nr
	 * slots. Between the two stores a reader drains everything, taking the
	 * commit sub-buffer again, and an interrupt writes 9 more: with the
	 * stale commit_vpos, which now reads as just behind the tail, it
	 * evicts its own unpublished events, and the next publish walk is
	 * longer than the ring.
	 */
	{ "publish window, wrapped", RB_FL_OVERWRITE, 2, rbi_detached_big,
	  ARRAY_SIZE(rbi_detached_big), 0, 0,
	  { { -1, 2, RB_TP_BOOKS, 0, RBI_A_BIG, 11 },
	    { -1, 2, RB_TP_COMMIT_SET, 0, RBI_A_DRAIN, 1 },
	    { -1, 2, RB_TP_COMMIT_SET, 0, RBI_A_BIG, 9 } }, 3 },
	/*
	 * Review bug 2: absolute time stamps turned on between the length
	 * check and the reservation of a largest-size write: the event no
	 * longer fits any sub-buffer. The write must fail alone, not empty
	 * the ring (overwrite) or fill it with empty sub-buffers.
	 */
	{ "abs on during a largest write", RB_FL_OVERWRITE, 8, rbi_halves_then_max,
	  ARRAY_SIZE(rbi_halves_then_max), 0, 0,
	  { { -1, 1, RB_TP_WRITE, 0, RBI_A_ABS, 1 } }, 1 },
	{ "abs on during a largest write, producer-consumer", 0, 8, rbi_halves_then_max,
	  ARRAY_SIZE(rbi_halves_then_max), 0, 0,
	  { { -1, 1, RB_TP_WRITE, 0, RBI_A_ABS, 1 } }, 1 },
	/*
	 * A nested write between the commit's read of the write word and its
	 * drop of the open count sends the commit round again. Five in a row
	 * outlasted the old bound of rounds, and the last event stayed
	 * invisible to readers until the next write on that CPU. (The open
	 * count's 6th, 8th, ... hits are the drops: rb_begin_write() reads
	 * and raises it, rb_reserve(), the commit and rb_end_write() read it.)
	 */
	{ "commit rounds", RB_FL_OVERWRITE, 3, rbi_one_small, ARRAY_SIZE(rbi_one_small), 0,
	  0, { { -1, 0, RB_TP_OPEN, 5, RBI_A_SMALL, 1 },
		   { -1, 0, RB_TP_OPEN, 7, RBI_A_SMALL, 1 },
		   { -1, 0, RB_TP_OPEN, 9, RBI_A_SMALL, 1 },
		   { -1, 0, RB_TP_OPEN, 11, RBI_A_SMALL, 1 },
		   { -1, 0, RB_TP_OPEN, 13, RBI_A_SMALL, 1 } }, 5 },
	/*
	 * Review bug 3: an order change that finishes between the snapshot
	 * swap's geometry check and its claim of the CPU buffers.
	 */
	{ "order change inside a swap", RB_FL_OVERWRITE, 3, rbi_one_swap,
	  ARRAY_SIZE(rbi_one_swap), 0, 0,
	  { { -1, 0, RB_TP_CONTROL, 0, RBI_A_ORDER, 1 } }, 1 },
	/* The same for a resize (it keeps the events) and a reset. */
	{ "resize inside a swap", RB_FL_OVERWRITE, 3, rbi_write_swap,
	  ARRAY_SIZE(rbi_write_swap), 0, 0,
	  { { -1, 1, RB_TP_CONTROL, 0, RBI_A_RESIZE, 1 } }, 1 },
	{ "reset inside a swap", RB_FL_OVERWRITE, 3, rbi_one_swap,
	  ARRAY_SIZE(rbi_one_swap), 0, 0,
	  { { -1, 0, RB_TP_CONTROL, 0, RBI_A_RESET, 1 } }, 1 },
};

static void rbi_story(struct kunit *test)
{
	const struct rbi_scenario *sc = test->param_value;
	struct rbi_run *r = kunit_kzalloc(test, sizeof(*r), GFP_KERNEL);
	bool ok;

	KUNIT_ASSERT_NOT_NULL(test, r);
	/* Without the swap its beat, at the swap's claim, has nowhere to run. */
	if (!IS_ENABLED(CONFIG_RING_BUFFER_ALLOW_SWAP) && rbi_has_step(sc, RBI_SWAP))
		kunit_skip(test, "needs CONFIG_RING_BUFFER_ALLOW_SWAP");
	KUNIT_ASSERT_EQ(test, 0, set_cpus_allowed_ptr(current,
						      cpumask_of(raw_smp_processor_id())));
	ok = rbi_run(sc, r, NULL, 0);
	KUNIT_EXPECT_TRUE_MSG(test, ok, "%s: %s; script step %d", sc->name, r->err, r->op);
}

KUNIT_ARRAY_PARAM(rbi_story, rbi_stories, rbi_desc);

/*
 * A ninth writer nested on one CPU is refused (there are eight open
 * reservation records), and counted in dropped_events like any write
 * that finds no room.
 */
static void rbi_nest_hook(struct trace_buffer *buffer, int cpu, enum rb_test_point pt,
			  void *data)
{
	int *level = data;
	u64 payload = *level;

	/* Nested attempts 1..7 succeed; the 8th finds eight writers open. */
	if (pt != RB_TP_WRITE || *level >= RB_MAX_OPEN)
		return;
	++*level;
	ring_buffer_nest_start(buffer);
	ring_buffer_write(buffer, sizeof(payload), &payload);
	ring_buffer_nest_end(buffer);
}

static void rbi_ninth_nested(struct kunit *test)
{
	struct trace_buffer *buffer = ring_buffer_alloc(4 * PAGE_SIZE, RB_FL_OVERWRITE);
	int level = 0, cpu;
	u64 data = 0;

	KUNIT_ASSERT_NOT_NULL(test, buffer);
	/* Eight ring_buffer_nest_start() levels of five recursion bits each. */
	if (BITS_PER_LONG < 64) {
		ring_buffer_free(buffer);
		kunit_skip(test, "needs 64-bit recursion bits for 8 nesting levels");
	}
	cpu = raw_smp_processor_id();
	KUNIT_ASSERT_EQ(test, 0, set_cpus_allowed_ptr(current, cpumask_of(cpu)));
	rb_set_test_hook(buffer, rbi_nest_hook, &level);
	KUNIT_EXPECT_EQ(test, 0, ring_buffer_write(buffer, sizeof(data), &data));
	rb_set_test_hook(buffer, NULL, NULL);
	KUNIT_EXPECT_EQ(test, level, RB_MAX_OPEN);
	KUNIT_EXPECT_EQ(test, ring_buffer_entries_cpu(buffer, cpu), (unsigned long)RB_MAX_OPEN);
	KUNIT_EXPECT_EQ(test, ring_buffer_dropped_events_cpu(buffer, cpu), 1UL);
	ring_buffer_free(buffer);
}

/* Stay on the CPU the test runs on, whose CPU buffer it writes and reads. */
static int rbi_pin_cpu(struct kunit *test)
{
	int c;

	preempt_disable();
	c = raw_smp_processor_id();
	preempt_enable();
	KUNIT_ASSERT_EQ(test, 0, set_cpus_allowed_ptr(current, cpumask_of(c)));
	return c;
}

/*
 * RB_WARN_STOP(): a sub-buffer whose events_before is behind what the
 * reader has seen would make the swap report a loss of almost 2^64 events.
 * The swap must warn once, report no loss, and stop the CPU buffer.
 */
static void rbi_stop_on_broken(struct kunit *test)
{
	struct trace_buffer *buffer;
	struct rb_cpu_buffer *cpu_buffer;
	unsigned long lost = 0;
	u64 *data, ts;
	int c, i;
	u32 x;

	/* It warns on purpose: a guest's console judge would fail the run. */
	if (!IS_ENABLED(CONFIG_UML))
		kunit_skip(test, "warns on purpose; runs under UML");
	data = kunit_kzalloc(test, PAGE_SIZE, GFP_KERNEL);
	KUNIT_ASSERT_NOT_NULL(test, data);
	buffer = ring_buffer_alloc(3 * PAGE_SIZE, RB_FL_OVERWRITE);
	KUNIT_ASSERT_NOT_NULL(test, buffer);
	c = rbi_pin_cpu(test);
	cpu_buffer = buffer->cpus[c];
	/* Two full sub-buffers of two events each; read the first. */
	for (i = 0; i < 4; i++) {
		data[0] = i;
		KUNIT_ASSERT_EQ(test, 0, ring_buffer_write(buffer, rb_capacity(buffer) / 2 - 8,
							   data));
	}
	for (i = 0; i < 2; i++)
		KUNIT_ASSERT_NOT_NULL(test, ring_buffer_consume(buffer, c, &ts, &lost));
	x = cpu_buffer->slots[rb_pair_vpos(atomic64_read(&cpu_buffer->head)) % cpu_buffer->nr];
	cpu_buffer->subbufs[x].events_before = 0;
	KUNIT_EXPECT_NOT_NULL(test, ring_buffer_consume(buffer, c, &ts, &lost));
	KUNIT_EXPECT_EQ(test, lost, 0UL);
	KUNIT_EXPECT_EQ(test, -EBUSY, ring_buffer_write(buffer, 8, data));
	ring_buffer_free(buffer);
}

/*
 * The loss counts are running totals. Seed them while quiesced (nothing is
 * written yet, so nobody else looks): the reader's and its sub-buffer's at
 * @next, every other sub-buffer's at @next + @gap, as if @gap events had
 * been lost unseen.
 * Write three rings' worth in overwrite mode and read everything: the
 * losses reported must add up to the overrun plus @gap, with every event
 * read or lost once, and the CPU buffer must still record.
 */
static void rbi_loss_counts(struct kunit *test, u64 next, unsigned long gap)
{
	struct rb_cpu_buffer *cpu_buffer;
	struct trace_buffer *buffer;
	unsigned long lost, lost_sum = 0, read = 0, written = 0;
	u64 data[4] = {}, ts;
	unsigned int i, per_ring;
	int c;

	buffer = ring_buffer_alloc(3 * PAGE_SIZE, RB_FL_OVERWRITE);
	KUNIT_ASSERT_NOT_NULL(test, buffer);
	c = rbi_pin_cpu(test);
	cpu_buffer = buffer->cpus[c];
	cpu_buffer->next_before = next;
	for (i = 0; i <= cpu_buffer->nr; i++)
		cpu_buffer->subbufs[i].events_before = next + gap;
	cpu_buffer->subbufs[cpu_buffer->reader_id].events_before = next;
	per_ring = (cpu_buffer->nr + 1) * (rb_capacity(buffer) / rb_event_bytes(sizeof(data)));
	for (i = 0; i < 3 * per_ring; i++) {
		data[0] = i;
		if (!ring_buffer_write(buffer, sizeof(data), data))
			written++;
	}
	KUNIT_EXPECT_EQ(test, written, 3UL * per_ring);
	while (ring_buffer_consume(buffer, c, &ts, &lost)) {
		read++;
		lost_sum += lost;
	}
	KUNIT_EXPECT_EQ(test, lost_sum, ring_buffer_overrun_cpu(buffer, c) + gap);
	KUNIT_EXPECT_EQ(test, read + lost_sum, written + gap);
	KUNIT_EXPECT_GT(test, lost_sum - gap, 0UL);
	KUNIT_EXPECT_EQ(test, 0, ring_buffer_write(buffer, sizeof(data), data));
	KUNIT_EXPECT_EQ(test, 0, atomic_read(&cpu_buffer->record_disabled));
	ring_buffer_free(buffer);
}

/*
 * Totals just short of the wrap of their type: a comparison of the totals
 * instead of their distance stops the CPU buffer at the wrap.
 */
static void rbi_loss_count_wraps(struct kunit *test)
{
	rbi_loss_counts(test, U64_MAX - 5, 0);
}

/*
 * 2^31 events lost between two reads: minutes of a flight recorder nobody
 * reads. Running totals of 32 bits, compared by their signed distance,
 * took that for a total gone backwards and stopped the CPU buffer for good
 * on 32-bit; 64-bit totals do not wrap in the life of a machine.
 */
static void rbi_loss_count_far(struct kunit *test)
{
	rbi_loss_counts(test, 0, 1UL << 31);
}

/*
 * A resize copies the ring with interrupts on and installs the copy only
 * if no reader moved the head meanwhile (rb_resize_cpu()). Every point it
 * passes with interrupts on gets a consume, or a read_page, there: the
 * oracle then wants every event read once, in order, or reported lost by a
 * shrink, and the counters exact. With the reader's sub-buffer read up,
 * either takes the next one (the head moves: the plan is made again); with
 * it unread, read_page swaps its page and the head stays (the plan holds).
 * A drain takes the tail too. rbi_resize_spoiled takes a sub-buffer in
 * every plan, so that the resize ends up planning under the lock.
 */
static const struct rbi_op rbi_grow_script[] = {
	{ RBI_WRITE, -2, 6 },
	{ RBI_CONSUME, 0, 2 },
	{ RBI_RESIZE, 8, 1 },
	{ RBI_WRITE, -2, 2 },
	{ RBI_DRAIN, 0, 1 },
};

static const struct rbi_op rbi_grow_unread_script[] = {
	{ RBI_WRITE, -2, 6 },
	{ RBI_PEEK, 0, 1 },
	{ RBI_RESIZE, 8, 1 },
	{ RBI_WRITE, -2, 2 },
	{ RBI_DRAIN, 0, 1 },
};

static const struct rbi_op rbi_shrink_script[] = {
	{ RBI_WRITE, -2, 14 },
	{ RBI_CONSUME, 0, 2 },
	{ RBI_RESIZE, 3, 1 },
	{ RBI_WRITE, -2, 2 },
	{ RBI_DRAIN, 0, 1 },
};

static const struct rbi_scenario rbi_resize_scenarios[] = {
	{ "grow", 0, 4, rbi_grow_script, ARRAY_SIZE(rbi_grow_script), 0, 1 },
	{ "grow, reader's sub-buffer unread", 0, 4, rbi_grow_unread_script,
	  ARRAY_SIZE(rbi_grow_unread_script), 0, 1 },
	{ "shrink, overwrite", RB_FL_OVERWRITE, 8, rbi_shrink_script,
	  ARRAY_SIZE(rbi_shrink_script), 0, 1 },
};

static const enum rbi_action rbi_resize_readers[] = { RBI_A_READ, RBI_A_PAGE, RBI_A_DRAIN };

static const void *rbi_resize_gen(const void *prev, char *desc)
{
	static struct rbi_case cases[ARRAY_SIZE(rbi_resize_scenarios) *
				     ARRAY_SIZE(rbi_resize_readers)];

	return rbi_case_next(cases, ARRAY_SIZE(cases), rbi_resize_scenarios,
			     rbi_resize_readers, ARRAY_SIZE(rbi_resize_readers), "",
			     prev, desc);
}

static void rbi_resize_interleavings(struct kunit *test)
{
	const struct rbi_case *c = test->param_value;
	struct rbi_plan p = { .at = { -1, -1, -1 } };
	unsigned int fails = 0, runs = 0, spoiled = 0;
	struct rbi_run *r;
	bool moves;
	int i, n;
	u8 *trace;

	/* Whether each injection moves the head, and so spoils the plan. */
	moves = c->first == RBI_A_DRAIN || !rbi_has_step(c->sc, RBI_PEEK);

	r = kunit_kzalloc(test, sizeof(*r), GFP_KERNEL);
	trace = kunit_kzalloc(test, RBI_MAX_HITS, GFP_KERNEL);
	KUNIT_ASSERT_NOT_NULL(test, r);
	KUNIT_ASSERT_NOT_NULL(test, trace);
	KUNIT_ASSERT_EQ(test, 0, set_cpus_allowed_ptr(current,
						      cpumask_of(raw_smp_processor_id())));
	KUNIT_ASSERT_TRUE(test, rbi_check(test, c->sc, r, &p, 0, &fails));
	n = rbi_trace(test, r, 0, trace);
	for (i = 0; i < n; i++) {
		if (!(trace[i] & RBI_IN_PLAN))
			continue;
		p.at[0] = i;
		p.act[0] = c->first;
		p.pt[0] = RBI_POINT(trace[i]);
		runs++;
		rbi_check(test, c->sc, r, &p, 0, &fails);
		spoiled += r->plans > 1;
	}
	KUNIT_EXPECT_GT_MSG(test, runs, 0U, "the resize passed no point with interrupts on");
	KUNIT_EXPECT_EQ_MSG(test, spoiled, moves ? runs : 0,
			    "plans made again (of %u runs)", runs);
	kunit_info(test, "%s, %s: %u points in the plan, %u plans made again, %u failed\n",
		   c->sc->name, rbi_action_name[c->first], runs, spoiled, fails);
}

static const struct rbi_op rbi_spoil_script[] = {
	{ RBI_WRITE, -2, 18 },
	{ RBI_CONSUME, 0, 1 },
	{ RBI_RESIZE, 12, 1 },
	{ RBI_DRAIN, 0, 1 },
};

static const struct rbi_op rbi_spoil_shrink_script[] = {
	{ RBI_WRITE, -2, 18 },
	{ RBI_CONSUME, 0, 2 },
	{ RBI_RESIZE, 3, 1 },
	{ RBI_DRAIN, 0, 1 },
};

static const struct rbi_scenario rbi_spoil_scenarios[] = {
	{ "grow", 0, 10, rbi_spoil_script, ARRAY_SIZE(rbi_spoil_script), 0, 0 },
	{ "shrink, overwrite", RB_FL_OVERWRITE, 10, rbi_spoil_shrink_script,
	  ARRAY_SIZE(rbi_spoil_shrink_script), 0, 0 },
};

static void rbi_resize_spoiled(struct kunit *test)
{
	struct rbi_plan p = { .at = { -1, -1, -1 }, .spoil = true };
	struct rbi_run *r = kunit_kzalloc(test, sizeof(*r), GFP_KERNEL);
	unsigned int fails = 0, i;

	KUNIT_ASSERT_NOT_NULL(test, r);
	KUNIT_ASSERT_EQ(test, 0, set_cpus_allowed_ptr(current,
						      cpumask_of(raw_smp_processor_id())));
	for (i = 0; i < ARRAY_SIZE(rbi_spoil_scenarios); i++) {
		rbi_check(test, &rbi_spoil_scenarios[i], r, &p, 0, &fails);
		/* Each spoiled plan is made again; after the last, under the lock. */
		KUNIT_EXPECT_EQ_MSG(test, r->spoils, RB_PLAN_TRIES, "%s",
				    rbi_spoil_scenarios[i].name);
	}
}

/*
 * A control operation tells the CPU buffers it quiesced by their claim.
 * Another CPU's buffer can be swapped into the other buffer between the
 * operation's read of buffer->cpus[] and its look at the claim, and then be
 * quiesced by an operation on that buffer: it is not ours, and must not be
 * locked (and left locked: the unlock finds the CPU buffer swapped in) or
 * resumed (which would release the other operation's claim). At every point
 * where a resize of this CPU reads another CPU's claim, the hook swaps that
 * CPU and claims the moved CPU buffer as the other buffer's resize would.
 */
struct rbi_claim {
	struct trace_buffer	*a, *b;
	struct rb_cpu_buffer	*moved;
	int			other, at, hits;
	bool			claimed;
};

static void rbi_claim_hook(struct trace_buffer *buffer, int cpu, enum rb_test_point pt,
			   void *data)
{
	struct rbi_claim *c = data;
	struct rb_cpu_buffer *cpu_buffer = buffer->cpus[cpu];

	if (pt != RB_TP_QUIESCED || cpu != c->other || c->hits++ != c->at)
		return;
	if (ring_buffer_swap_cpu(c->a, c->b, cpu))
		return;
	/* As rb_quiesce_cpu() would, for b. */
	if (rb_ctl_claim(cpu_buffer, RB_CTL_QUIESCED)) {
		atomic_inc(&cpu_buffer->record_disabled);
		c->moved = cpu_buffer;
		c->claimed = true;
	}
}

static void rbi_claim_of_other(struct kunit *test)
{
	unsigned long size = 8 * (PAGE_SIZE - RB_PAGE_HDR);
	struct rbi_claim c = {};
	unsigned int claimed = 0;
	const char *op;
	int cpu, reset;

	if (!IS_ENABLED(CONFIG_RING_BUFFER_ALLOW_SWAP))
		kunit_skip(test, "needs CONFIG_RING_BUFFER_ALLOW_SWAP");
	if (num_online_cpus() < 2)
		kunit_skip(test, "needs two CPUs");
	KUNIT_ASSERT_EQ(test, 0, set_cpus_allowed_ptr(current,
						      cpumask_of(raw_smp_processor_id())));
	cpu = raw_smp_processor_id();
	c.other = cpumask_any_but(cpu_online_mask, cpu);
	/* A resize of this CPU, then a reset of it. */
	for (reset = 0; reset < 2; reset++) {
		for (c.at = 0; c.at < 64; c.at++) {
			c.a = ring_buffer_alloc(4 * (PAGE_SIZE - RB_PAGE_HDR), 0);
			c.b = ring_buffer_alloc(4 * (PAGE_SIZE - RB_PAGE_HDR), 0);
			KUNIT_ASSERT_TRUE(test, c.a && c.b);
			c.hits = 0;
			c.claimed = false;
			op = reset ? "reset" : "resize";
			rb_set_test_hook(c.a, rbi_claim_hook, &c);
			if (reset)
				ring_buffer_reset_cpu(c.a, cpu);
			else
				KUNIT_EXPECT_EQ(test, 0, ring_buffer_resize(c.a, size, cpu));
			/* Before the hook goes: taking it off waits for a grace period. */
			if (c.claimed) {
				claimed++;
				KUNIT_EXPECT_FALSE_MSG(test,
						       raw_spin_is_locked(&c.moved->reader_lock),
						       "the other's CPU buffer left locked (%s, hit %d)",
						       op, c.at);
				KUNIT_EXPECT_EQ_MSG(test, atomic_read(&c.moved->ctl),
						    RB_CTL_QUIESCED,
						    "the other's claim released (%s, hit %d)",
						    op, c.at);
				KUNIT_EXPECT_EQ_MSG(test, atomic_read(&c.moved->record_disabled), 1,
						    "the other's CPU buffer resumed (%s, hit %d)",
						    op, c.at);
				if (raw_spin_is_locked(&c.moved->reader_lock))
					raw_spin_unlock(&c.moved->reader_lock);
				atomic_set(&c.moved->record_disabled, 0);
				rb_ctl_release(c.moved);
			}
			rb_set_test_hook(c.a, NULL, NULL);
			ring_buffer_free(c.b);
			ring_buffer_free(c.a);
			if (c.hits <= c.at)
				break;
		}
	}
	KUNIT_EXPECT_GT_MSG(test, claimed, 0U, "no point where the other CPU's claim is read");
	kunit_info(test, "%u runs with the other CPU swapped and claimed\n", claimed);
}

/*
 * kdb starts its iterator without waiting for an order change that had
 * already decided (ring_buffer_read_start()); the install may then give it
 * sub-buffers with events larger than the copy it sized at its start. Such
 * an event is lost to the iterator, which must say so. White-box: the
 * recorded size of the copy is lowered instead.
 */
static void rbi_iter_event_too_big(struct kunit *test)
{
	struct trace_buffer *buffer;
	struct ring_buffer_iter *iter;
	struct ring_buffer_event *event;
	u64 *data, ts;
	int c, i;

	data = kunit_kzalloc(test, PAGE_SIZE, GFP_KERNEL);
	KUNIT_ASSERT_NOT_NULL(test, data);
	buffer = ring_buffer_alloc(4 * PAGE_SIZE, 0);
	KUNIT_ASSERT_NOT_NULL(test, buffer);
	c = rbi_pin_cpu(test);
	/*
	 * Two events fill the first sub-buffer, with room for a time extend
	 * each should the clock jump; the third opens the next.
	 */
	for (i = 0; i < 3; i++) {
		unsigned int len = i < 2 ? rb_capacity(buffer) / 2 - 16 : 64;

		data[0] = i;
		KUNIT_ASSERT_EQ(test, 0, ring_buffer_write(buffer, len, data));
	}
	iter = ring_buffer_read_start(buffer, c, GFP_KERNEL);
	KUNIT_ASSERT_NOT_NULL(test, iter);
	iter->event_size = 128;
	event = ring_buffer_iter_peek(iter, &ts);
	KUNIT_EXPECT_NOT_NULL(test, event);
	if (event)
		KUNIT_EXPECT_EQ(test, *(u64 *)ring_buffer_event_data(event), 2ULL);
	KUNIT_EXPECT_TRUE(test, ring_buffer_iter_dropped(iter));
	ring_buffer_read_finish(iter);
	ring_buffer_free(buffer);
}

static struct kunit_case rbi_cases[] = {
	KUNIT_CASE_PARAM_ATTR(rbi_interleavings, rbi_case_gen, { .speed = KUNIT_SPEED_SLOW }),
	KUNIT_CASE_PARAM(rbi_story, rbi_story_gen_params),
	KUNIT_CASE_PARAM(rbi_resize_interleavings, rbi_resize_gen),
	KUNIT_CASE(rbi_resize_spoiled),
	KUNIT_CASE(rbi_claim_of_other),
	KUNIT_CASE(rbi_ninth_nested),
	KUNIT_CASE(rbi_stop_on_broken),
	KUNIT_CASE(rbi_loss_count_wraps),
	KUNIT_CASE(rbi_loss_count_far),
	KUNIT_CASE(rbi_iter_event_too_big),
	{}
};

static int rbi_suite_init(struct kunit_suite *suite)
{
	rb_test_hooks_enable(true);
	return 0;
}

static void rbi_suite_exit(struct kunit_suite *suite)
{
	rb_test_hooks_enable(false);
}

static struct kunit_suite rbi_suite = {
	.suite_init = rbi_suite_init,
	.suite_exit = rbi_suite_exit,
	.name = "ring_buffer_interleave",
	.test_cases = rbi_cases,
};

kunit_test_suite(rbi_suite);

MODULE_DESCRIPTION("Ring buffer: every interleaving of the write path's test points");
MODULE_LICENSE("GPL");
MODULE_IMPORT_NS(EXPORTED_FOR_KUNIT_TESTING);
