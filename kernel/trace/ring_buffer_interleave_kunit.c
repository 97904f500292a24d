// SPDX-License-Identifier: GPL-2.0
/*
 * White-box KUnit suite: every interleaving of the ring's labelled points
 * with a nested writer or a reader, to depth 2 (see "Test hooks" in
 * Documentation/trace/ring-buffer-design.rst).
 *
 * Why enumerating the points covers every interleaving. The write path
 * (reserve, tail move, eviction, commit, discard) and the reader's swap
 * depend only on the order of their accesses to shared words (write, head,
 * slots, the commit point), and a point sits between each two of them whose
 * order matters. Whoever else runs meanwhile is atomic with respect to those
 * points: a nested writer (interrupt, NMI) runs to completion before the
 * writer it interrupted goes on, and a reader on another CPU conflicts with
 * the writer only through one cmpxchg of the head word; its other stores
 * write slot values that R1 already implies, or values that only grow. So a
 * real execution equals one in which every other operation happens whole at
 * one point, and this suite runs each such execution: for every hit of every
 * point in a scenario, every action allowed there, and again for every hit
 * inside that action (an interrupt inside an interrupt). Nesting deeper than
 * two is not enumerated.
 *
 * Method. A scenario is a fixed script of writes and reads on one CPU, in
 * one mode, on three order-0 sub-buffers. A counting run records the points
 * it hits; each replay uses a fresh buffer and injects one action at hit i
 * (and, at depth 2, one more at hit j of the first action). Actions: a small
 * nested write, one that fills the rest of the tail sub-buffer, one of the
 * largest size (it always moves the tail and fills a whole sub-buffer, so it
 * may evict what a reader is taking), and at writer points a consume or a
 * read_page, as a reader on another CPU would do them.
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
 * Relied on: the hook runs on the writer's CPU with preemption disabled; at
 * RB_TP_SWAP_* the reader lock is held with interrupts off, so no reader
 * action is injected there or inside an action injected there.
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
#define RBI_MAX_HITS	512
#define RBI_SMALL	8		/* payload of a small write */
#define RBI_STEP	10		/* fake clock step */
#define RBI_REPORTS	3		/* failing runs reported in full */
#define RBI_ALL_POINTS	((1U << RB_TP_NR) - 1)
/* Kernels where depth 2 of the second scenario would take too long. */
#define RBI_SLOW_KERNEL	(IS_ENABLED(CONFIG_KASAN) || IS_ENABLED(CONFIG_PROVE_LOCKING))

enum rbi_action { RBI_A_SMALL, RBI_A_FILL, RBI_A_MAX, RBI_A_READ, RBI_A_PAGE, RBI_A_NR };

static const char * const rbi_action_name[RBI_A_NR] = {
	"small write", "fill write", "largest write", "consume", "read_page",
};

static const char * const rbi_point_name[RB_TP_NR] = {
	[RB_TP_RESERVE_READ]	= "RESERVE_READ",
	[RB_TP_RESERVE_DONE]	= "RESERVE_DONE",
	[RB_TP_MOVE_DECIDED]	= "MOVE_DECIDED",
	[RB_TP_EVICT_WON]	= "EVICT_WON",
	[RB_TP_MOVE_CLOSED]	= "MOVE_CLOSED",
	[RB_TP_COMMIT_READ]	= "COMMIT_READ",
	[RB_TP_COMMIT_DROPPED]	= "COMMIT_DROPPED",
	[RB_TP_DISCARD]		= "DISCARD",
	[RB_TP_SWAP_READ]	= "SWAP_READ",
	[RB_TP_SWAP_WON]	= "SWAP_WON",
};

/* Script steps. A negative length -k means capacity / k - 8 bytes. */
enum rbi_kind { RBI_WRITE, RBI_DISCARD, RBI_CONSUME, RBI_PAGE, RBI_DRAIN };

struct rbi_op {
	enum rbi_kind	kind;
	int		len;
	unsigned int	rep;
	u32		gap;		/* clock jump before a write */
};

/*
 * Half-capacity events fill a sub-buffer exactly. In overwrite mode: fill
 * the ring, evict the head, swap with lost events, copy part of a page,
 * a TIME_EXTEND, a whole-page read_page, a reader that takes the tail
 * (detached), moves from there, a second eviction. In producer/consumer
 * mode the same script drops writes and moves behind the head instead.
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
	{ RBI_WRITE, -2, 5 },
	{ RBI_DRAIN, 0, 1 },
};

struct rbi_scenario {
	const char	*name;
	unsigned int	flags;
	unsigned int	must;		/* points the counting run must hit */
	bool		deep;		/* enumerate depth 2 too */
};

static const struct rbi_scenario rbi_scenarios[] = {
	{ "overwrite", RB_FL_OVERWRITE, RBI_ALL_POINTS, true },
	{ "producer-consumer", 0, RBI_ALL_POINTS & ~BIT(RB_TP_EVICT_WON), !RBI_SLOW_KERNEL },
};

enum rbi_state {
	RBI_S_OPEN,		/* reserve not returned yet */
	RBI_S_WRITTEN,
	RBI_S_READ,
	RBI_S_LOST,
	RBI_S_DISCARDED,
	RBI_S_FAILED,
	RBI_S_NR,
};

static const char * const rbi_state_name[RBI_S_NR] = {
	"being reserved", "unread", "already read", "passed over", "discarded", "failed",
};

struct rbi_rec {
	u64		ts;
	unsigned int	len;
	enum rbi_state	state;
};

struct rbi_plan {
	int		at[2];		/* hit to inject at, per depth; -1: none */
	enum rbi_action	act[2];
	enum rb_test_point pt[2];	/* for messages */
};

struct rbi_run {
	struct trace_buffer		*buffer;
	struct buffer_data_read_page	*rpage;
	int				cpu;
	const struct rbi_plan		*plan;
	int				depth;		/* 0: the script */
	int				record;		/* depth whose points are recorded */
	bool				quiet;
	int				hits[3];
	unsigned int			points;		/* hit at depth 0 */
	u8				trace[RBI_MAX_HITS];
	u64				now;
	u64				clk[3];		/* last clock value, per depth */
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

static bool rbi_reader_point(enum rb_test_point pt)
{
	return pt == RB_TP_SWAP_READ || pt == RB_TP_SWAP_WON;
}

/* Readers need the reader lock: not while it is held. */
static bool rbi_allowed(enum rb_test_point pt, enum rbi_action a, bool locked)
{
	return a < RBI_A_READ || (!locked && !rbi_reader_point(pt));
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

	event = ring_buffer_consume(r->buffer, r->cpu, &ts, &lost);
	if (!event)
		return false;
	r->pend += lost;
	rbi_saw(r, ring_buffer_event_data(event), ring_buffer_event_length(event), ts);
	return true;
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

	if (ring_buffer_read_page(r->buffer, r->rpage, ring_buffer_read_page_size(r->rpage),
				  r->cpu, 0) < 0)
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
	u32 tag = r->nrec;
	unsigned int i;
	u8 *p;

	if (tag >= RBI_MAX_REC) {
		rbi_fail(r, "more than %d writes", RBI_MAX_REC);
		return;
	}
	rec = &r->rec[r->nrec++];
	rec->len = len;
	event = ring_buffer_lock_reserve(r->buffer, len);
	if (!event) {
		rec->state = RBI_S_FAILED;
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
	struct rb_cpu_buffer *cpu = r->buffer->cpus[r->cpu];
	unsigned int room = rb_capacity(r->buffer) - rb_w_off(local64_read(&cpu->write));
	unsigned int want;

	if (room < 16 + RB_LEN_TIME)
		return RBI_SMALL;
	want = room - RB_LEN_TIME;
	if (want > RB_SMALL_MAX + 2 * RB_EVENT_HDR)
		return want - 2 * RB_EVENT_HDR;
	return min(want - RB_EVENT_HDR, RB_SMALL_MAX);
}

static void rbi_act(struct rbi_run *r, enum rbi_action a)
{
	if (a == RBI_A_READ)
		rbi_consume(r);
	else if (a == RBI_A_PAGE)
		rbi_read_page(r);
	if (a >= RBI_A_READ)
		return;
	/* Fresh recursion bits: the write behaves like an interrupt. */
	ring_buffer_nest_start(r->buffer);
	rbi_write(r, a == RBI_A_SMALL ? RBI_SMALL : a == RBI_A_FILL ? rbi_fill_len(r) :
		  ring_buffer_max_event_size(r->buffer), false);
	ring_buffer_nest_end(r->buffer);
}

static void rbi_hook(struct trace_buffer *buffer, int cpu, enum rb_test_point pt, void *data)
{
	struct rbi_run *r = data;
	int d = r->depth, n;

	if (r->quiet)
		return;
	if (cpu != r->cpu || pt >= RB_TP_NR) {
		rbi_fail(r, "hook called for CPU %d, point %d", cpu, pt);
		return;
	}
	n = r->hits[d]++;
	if (!d)
		r->points |= BIT(pt);
	if (d == r->record && n < RBI_MAX_HITS)
		r->trace[n] = pt;
	if (d < 2 && n == r->plan->at[d]) {
		r->depth++;
		rbi_act(r, r->plan->act[d]);
		r->depth--;
	}
}

static void rbi_step(struct rbi_run *r, const struct rbi_op *op)
{
	unsigned int i, guard;

	for (i = 0; i < op->rep && !r->err[0]; i++) {
		switch (op->kind) {
		case RBI_WRITE:
		case RBI_DISCARD:
			r->now += op->gap;
			rbi_write(r, op->len < 0 ? rb_capacity(r->buffer) / -op->len - 8 : op->len,
				  op->kind == RBI_DISCARD);
			break;
		case RBI_CONSUME:
			rbi_consume(r);
			break;
		case RBI_PAGE:
			rbi_read_page(r);
			break;
		case RBI_DRAIN:
			for (guard = 0; guard < 4 * RBI_MAX_REC && rbi_consume(r); guard++)
				;
			break;
		}
	}
}

/* Read what is left, then compare everything with the counters. */
static void rbi_oracle(struct rbi_run *r)
{
	struct trace_buffer *b = r->buffer;
	unsigned int n[RBI_S_NR] = {}, k, guard;
	unsigned long failed;

	for (guard = 0; guard < 4 * RBI_MAX_REC && rbi_consume(r); guard++)
		;
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
	if (failed != n[RBI_S_FAILED])
		rbi_fail(r, "dropped + commit overrun %lu, %u writes failed",
			 failed, n[RBI_S_FAILED]);
	if (!r->err[0] && rb_check_invariants(b, r->cpu))
		rbi_fail(r, "invariants broken after the drain");
}

/* One run of the script on a fresh buffer, with @plan's injections. */
static bool rbi_run(const struct rbi_scenario *sc, struct rbi_run *r,
		    const struct rbi_plan *plan, int record)
{
	unsigned int i;

	memset(r, 0, sizeof(*r));
	r->cpu = raw_smp_processor_id();
	r->plan = plan;
	r->record = record;
	r->now = 1000;
	rbi_cur = r;
	r->buffer = ring_buffer_alloc(RBI_SUBBUFS * (PAGE_SIZE - RB_PAGE_HDR), sc->flags);
	if (!r->buffer) {
		rbi_fail(r, "no buffer");
		return false;
	}
	ring_buffer_set_clock(r->buffer, rbi_clock);
	if (ring_buffer_alloc_read_page(r->buffer, r->cpu, &r->rpage)) {
		r->rpage = NULL;
		rbi_fail(r, "no read page");
		goto out;
	}
	/* Never removed: that would wait for a grace period on every run. */
	rb_set_test_hook(r->buffer, rbi_hook, r);
	for (i = 0; i < ARRAY_SIZE(rbi_script) && !r->err[0]; i++) {
		r->op = i;
		rbi_step(r, &rbi_script[i]);
		if (!r->err[0] && rb_check_invariants(r->buffer, r->cpu))
			rbi_fail(r, "invariants broken");
	}
	r->quiet = true;
	if (!r->err[0])
		rbi_oracle(r);
	if (!r->err[0] && plan->at[0] >= 0 && r->hits[0] <= plan->at[0])
		rbi_fail(r, "the replay diverged: hit %d never came", plan->at[0]);
	ring_buffer_free_read_page(r->buffer, r->cpu, r->rpage);
out:
	ring_buffer_free(r->buffer);
	return !r->err[0];
}

static bool rbi_check(struct kunit *test, const struct rbi_scenario *sc, struct rbi_run *r,
		      const struct rbi_plan *p, int record, unsigned int *fails)
{
	char how[160] = "nothing";
	int d, n = 0;

	cond_resched();
	if (rbi_run(sc, r, p, record))
		return true;
	if (++*fails > RBI_REPORTS)
		return false;
	for (d = 0; d < 2 && p->at[d] >= 0; d++)
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

static void rbi_interleavings(struct kunit *test)
{
	const struct rbi_scenario *sc = test->param_value;
	struct rbi_run *r = kunit_kzalloc(test, sizeof(*r), GFP_KERNEL);
	u8 *top = kunit_kzalloc(test, 2 * RBI_MAX_HITS, GFP_KERNEL), *sub = top + RBI_MAX_HITS;
	struct rbi_plan p = { .at = { -1, -1 } };
	unsigned int runs[3] = { 1, 0, 0 }, fails = 0;
	int i, j, ntop, nsub, a, b;
	u64 t0 = ktime_get_ns();

	KUNIT_ASSERT_NOT_NULL(test, r);
	KUNIT_ASSERT_NOT_NULL(test, top);
	/* Every write must land in the per-CPU buffer the run reads. */
	KUNIT_ASSERT_EQ(test, 0, set_cpus_allowed_ptr(current,
						      cpumask_of(raw_smp_processor_id())));
	if (sc == rbi_scenarios)
		rbi_total = 0;

	KUNIT_ASSERT_TRUE(test, rbi_check(test, sc, r, &p, 0, &fails));
	ntop = rbi_trace(test, r, 0, top);
	KUNIT_EXPECT_EQ_MSG(test, r->points & sc->must, sc->must,
			    "the script misses some points (bit n: enum rb_test_point n)");
	for (i = 0; i < ntop; i++) {
		for (a = 0; a < RBI_A_NR; a++) {
			if (!rbi_allowed(top[i], a, false))
				continue;
			p = (struct rbi_plan){ .at = { i, -1 }, .act = { a }, .pt = { top[i] } };
			runs[1]++;
			if (!rbi_check(test, sc, r, &p, 1, &fails) || !sc->deep)
				continue;
			nsub = rbi_trace(test, r, 1, sub);
			for (j = 0; j < nsub; j++) {
				for (b = 0; b < RBI_A_NR; b++) {
					if (!rbi_allowed(sub[j], b, rbi_reader_point(top[i])))
						continue;
					p.at[1] = j;
					p.act[1] = b;
					p.pt[1] = sub[j];
					runs[2]++;
					rbi_check(test, sc, r, &p, -1, &fails);
				}
			}
		}
	}
	rbi_total += runs[0] + runs[1] + runs[2];
	kunit_info(test, "%s: %d points hit, %u interleavings at depth 1, %u at depth 2%s, %u failed, %llu ms\n",
		   sc->name, ntop, runs[1], runs[2], sc->deep ? "" : " (skipped)", fails,
		   (ktime_get_ns() - t0) / NSEC_PER_MSEC);
	if (sc == &rbi_scenarios[ARRAY_SIZE(rbi_scenarios) - 1])
		kunit_info(test, "%lu interleavings run over %zu scenarios\n",
			   rbi_total, ARRAY_SIZE(rbi_scenarios));
}

static void rbi_desc(const struct rbi_scenario *sc, char *desc)
{
	strscpy(desc, sc->name, KUNIT_PARAM_DESC_SIZE);
}

KUNIT_ARRAY_PARAM(rbi_scenario, rbi_scenarios, rbi_desc);

static struct kunit_case rbi_cases[] = {
	KUNIT_CASE_PARAM_ATTR(rbi_interleavings, rbi_scenario_gen_params,
			      { .speed = KUNIT_SPEED_SLOW }),
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

MODULE_DESCRIPTION("Ring buffer: every interleaving of the write path's labelled points");
MODULE_LICENSE("GPL");
MODULE_IMPORT_NS(EXPORTED_FOR_KUNIT_TESTING);
