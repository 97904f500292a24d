// SPDX-License-Identifier: GPL-2.0
/*
 * Ring buffer: the write path and the ring itself.
 *
 * What this file relies on:
 *
 *  - Writers on one CPU nest strictly: a writer that interrupts another,
 *    NMIs included, finishes before the interrupted one continues. So
 *    between the writers of one CPU, barrier() is enough, and a cmpxchg on
 *    the write word fails only because a nested writer made progress.
 *  - Only the outermost writer of a CPU publishes (moves the commit point),
 *    so the commit point never moves while any writer is open (R5).
 *  - The head word changes only by cmpxchg of the whole word, one slot at a
 *    time, by the reader taking the head or by a writer evicting it (R3).
 *
 * What it maintains: R1-R5 (stated in ring_buffer_internal.h), and the
 * counters that ring_buffer_control.c reports. It uses nothing from the
 * files above it: the reader's swap is here because it is the other half
 * of the race on the head word.
 */

#include <linux/ring_buffer.h>
#include <linux/trace_clock.h>
#include <linux/hardirq.h>
#include <linux/irq_work.h>
#include <linux/preempt.h>
#include <linux/printk.h>
#include <linux/slab.h>
#include <kunit/visibility.h>

#include "ring_buffer_internal.h"

/* Each pass fails only because someone else made progress. */
#define RB_RESERVE_TRIES	16
#define RB_SWAP_TRIES		8

/* The recursion guard gives each nesting level five bits. */
#define RB_CTX_BITS		5
#define RB_CTX_NORMAL		4

static void rb_put_data_header(struct ring_buffer_event *e, unsigned int len,
			       unsigned int bytes, u32 delta)
{
	e->time_delta = delta;
	if (RB_FORCE_8 || len > RB_SMALL_MAX) {
		e->type_len = 0;
		e->array[0] = bytes - RB_EVENT_HDR;
	} else {
		e->type_len = (bytes - RB_EVENT_HDR) / 4;
	}
}

static void rb_put_time(struct ring_buffer_event *e, unsigned int type, u64 val)
{
	e->type_len = type;
	e->time_delta = val & RB_DELTA_MASK;
	e->array[0] = (val & RB_STAMP_MASK) >> RB_DELTA_BITS;
}

/* ---- recursion guard ---- */

/*
 * One bit per context (normal, softirq, irq, NMI) and one "transition" bit
 * (bit 0) for an interrupt that arrives before preempt_count says so. A
 * nested writer that runs between our read and write of ctx leaves it as
 * it found it, so a plain read-modify-write is safe.
 */
static __always_inline bool rb_recursion_lock(struct rb_cpu_buffer *cpu_buffer)
{
	unsigned int bit = RB_CTX_NORMAL - interrupt_context_level() + cpu_buffer->ctx_shift;
	unsigned long val = cpu_buffer->ctx;

	if (unlikely(val & (1UL << bit))) {
		bit = cpu_buffer->ctx_shift;
		if (val & (1UL << bit))
			return true;
	}
	cpu_buffer->ctx = val | (1UL << bit);
	return false;
}

static __always_inline void rb_recursion_unlock(struct rb_cpu_buffer *cpu_buffer)
{
	cpu_buffer->ctx &= cpu_buffer->ctx - (1UL << cpu_buffer->ctx_shift);
}

/**
 * ring_buffer_nest_start - allow a write from inside another write
 * @buffer: the ring buffer
 *
 * The recursion guard refuses a second write from the same context. A
 * caller that must write while its own reservation is open (trace_printk
 * from inside an event) brackets that write with ring_buffer_nest_start()
 * and ring_buffer_nest_end(); it behaves like a write from an interrupt.
 * Preemption stays disabled until ring_buffer_nest_end().
 */
void ring_buffer_nest_start(struct trace_buffer *buffer)
{
	int cpu;

	preempt_disable_notrace();
	cpu = raw_smp_processor_id();
	if (cpumask_test_cpu(cpu, buffer->cpumask))
		buffer->cpus[cpu]->ctx_shift += RB_CTX_BITS;
}

/**
 * ring_buffer_nest_end - end a section opened by ring_buffer_nest_start()
 * @buffer: the ring buffer
 */
void ring_buffer_nest_end(struct trace_buffer *buffer)
{
	int cpu = raw_smp_processor_id();

	if (cpumask_test_cpu(cpu, buffer->cpumask))
		buffer->cpus[cpu]->ctx_shift -= RB_CTX_BITS;
	preempt_enable_notrace();
}

/* ---- the ring, shared with the reader ---- */

/*
 * Evict the head sub-buffer X so that the tail can enter it (R3). Its events
 * are all committed (the caller checked that the commit point is past the
 * head), so X->events is final. Returns false if the reader or a nested
 * writer changed the head first; the caller starts a new pass.
 */
static bool rb_evict_head(struct trace_buffer *buffer, struct rb_cpu_buffer *cpu_buffer, u64 h)
{
	unsigned int hv = rb_pair_vpos(h);
	u32 x = rb_head_id(cpu_buffer, h);
	struct rb_subbuf *sb = &cpu_buffer->subbufs[x];
	long n = rb_sb_events(cpu_buffer, sb);

	/* Settle the slot behind the head: it stops being "behind" (R1). */
	rb_slot_set(cpu_buffer, rb_vpos_prev(cpu_buffer, hv), rb_pair_id(h));
	if (!rb_head_cas(cpu_buffer, h, rb_pair(rb_vpos_next(cpu_buffer, hv), x)))
		return false;
	local_add(n, &cpu_buffer->overrun);
	rb_sb_events_add(cpu_buffer, sb, -n);
	local_sub(rb_capacity(buffer), &cpu_buffer->entries_bytes);
	local_inc(&cpu_buffer->subbufs_evicted);
	return true;
}

/*
 * The event does not fit in the tail sub-buffer: close it and enter the
 * next one. Returns false if the write must fail; true to start a new pass,
 * whoever made the move.
 */
static bool rb_move_tail(struct trace_buffer *buffer, struct rb_cpu_buffer *cpu_buffer, u64 w)
{
	unsigned int next = rb_vpos_next(cpu_buffer, rb_w_vpos(w));
	u64 h = rb_head_word(cpu_buffer);
	unsigned int hv = rb_pair_vpos(h), dc;
	unsigned int cap = rb_capacity(buffer);
	struct rb_subbuf *sb;
	u32 id;

	/* rb_reserve() moves only for an event that fits an empty sub-buffer. */
	if (RB_WARN_STOP(cpu_buffer, !rb_w_off(w)))
		return false;
	if (rb_vpos_dist(cpu_buffer, hv, next) == cpu_buffer->nr) {
		/* The next slot is the head: the ring is full. */
		if (!rb_overwrite(cpu_buffer, buffer)) {
			local_inc(&cpu_buffer->dropped_events);
			return false;
		}
		/* Nested writers went round to an event still being written. */
		dc = rb_vpos_dist(cpu_buffer, hv, rb_pair_vpos(rb_commit_word(cpu_buffer)));
		if (dc == 0 || dc >= cpu_buffer->nr) {
			local_inc(&cpu_buffer->commit_overrun);
			return false;
		}
		rb_evict_head(buffer, cpu_buffer, h);
		return true;
	}

	/*
	 * The slot behind the head holds head.behind whatever slots[] says
	 * (R1): a reader between its head cmpxchg and its slot store. Settle
	 * it (R2: the id R1 gives it, as that reader will) before the page
	 * gets a length, so that slots[] names every page in use: a
	 * persistent buffer's next boot reads the ring from it (P1).
	 */
	h = rb_head_word(cpu_buffer);
	if (rb_behind_head(cpu_buffer, next, h)) {
		id = rb_pair_id(h);
		rb_slot_set(cpu_buffer, next, id);
	} else {
		id = rb_slot(cpu_buffer, next);
	}
	rb_sb_enter(cpu_buffer, &cpu_buffer->subbufs[id]);
	/*
	 * The length left from the page's last lap goes before any new byte
	 * does: the next boot takes a persistent buffer's pages at their word.
	 * Nobody else reads a length past the commit point, so this is ours.
	 */
	rb_len_set(cpu_buffer, cpu_buffer->subbufs[id].page, 0);
	if (!rb_write_cas(cpu_buffer, w, rb_wword(next, id, 0)))
		return true;
	sb = &cpu_buffer->subbufs[rb_w_id(w)];
	rb_sb_close(cpu_buffer, sb, rb_w_off(w), cap);
	local_add(cap - rb_w_off(w), &cpu_buffer->entries_bytes);
	local_inc(&cpu_buffer->subbufs_entered);
	return true;
}

/*
 * A persistent buffer keeps its commit point in its meta, where the next
 * boot looks for the newest data. It moves there before the length of the
 * new commit sub-buffer is published, so every length on a page of the
 * ring belongs to a sub-buffer at or before the point the meta gives.
 * Only the outermost writer publishes, so these stores never race.
 */
static void rb_range_commit(struct rb_cpu_buffer *cpu_buffer, unsigned int vpos, u32 id)
{
	if (unlikely(cpu_buffer->range))
		WRITE_ONCE(cpu_buffer->range->saved_commit, rb_pair(vpos, id));
}

/*
 * Publish everything reserved up to the write word @w: walk the commit
 * point to @w's sub-buffer, closing the ones passed and giving each one
 * entered its events_before count. Only the outermost writer calls this,
 * when every other writer of the CPU has finished (R5).
 */
void rb_publish(struct rb_cpu_buffer *cpu_buffer, u64 w)
{
	u64 cw = rb_commit_word(cpu_buffer);
	unsigned int c = rb_pair_vpos(cw), t = rb_w_vpos(w);
	u32 id = rb_pair_id(cw);

	/*
	 * Most commits land in the commit sub-buffer: only its length moves,
	 * and the commit point, which names it already, is left as it is.
	 */
	if (likely(c == t)) {
		rb_len_set(cpu_buffer, cpu_buffer->subbufs[id].page, rb_w_off(w));
		return;
	}
	/* R4: the tail is at most nr slots past the commit point. */
	if (RB_WARN_STOP(cpu_buffer, rb_vpos_dist(cpu_buffer, c, t) > cpu_buffer->nr))
		return;
	while (c != t) {
		struct rb_subbuf *sb = &cpu_buffer->subbufs[id];
		u64 before = rb_sb_before(cpu_buffer, sb) + rb_sb_events(cpu_buffer, sb);

		rb_len_set(cpu_buffer, sb->page, rb_sb_end(cpu_buffer, sb));
		c = rb_vpos_next(cpu_buffer, c);
		id = c == t ? rb_w_id(w) : rb_slot_id(cpu_buffer, c);
		rb_sb_before_set(cpu_buffer, &cpu_buffer->subbufs[id], before);
		rb_range_commit(cpu_buffer, c, id);
	}
	rb_len_set(cpu_buffer, cpu_buffer->subbufs[id].page, rb_w_off(w));
	rb_commit_set(cpu_buffer, c, id);
}

/**
 * rb_dirty - sub-buffers the writer has filled and nobody has taken
 * @cpu_buffer: the per-CPU buffer
 *
 * Return: the count; momentarily one low while the reader holds the tail
 * sub-buffer.
 */
unsigned long rb_dirty(struct rb_cpu_buffer *cpu_buffer)
{
	long d = local_read(&cpu_buffer->subbufs_entered) -
		 local_read(&cpu_buffer->subbufs_evicted) -
		 (long)READ_ONCE(cpu_buffer->subbufs_taken);

	return d > 0 ? d : 0;
}

/**
 * rb_unread - is there committed data the consuming reader has not read?
 * @cpu_buffer: the per-CPU buffer; the caller holds its reader_lock, which
 *	keeps the pages read here from a resize or a read_page swap
 * @id: if not NULL, gets the sub-buffer the data starts on
 *
 * Changes nothing. The data is on the reader's page past read_pos or, once
 * the writer has left that page, on the head sub-buffer, which is either
 * closed, and so not empty (R4), or holds the commit point. (An NMI reader
 * that found the lock taken runs unlocked: hence READ_ONCE.)
 *
 * Return: true if a consuming read would find an event now.
 */
bool rb_unread(struct rb_cpu_buffer *cpu_buffer, u32 *id)
{
	u32 reader = READ_ONCE(cpu_buffer->reader_id);
	bool closed;
	u32 head;

	if (id)
		*id = reader;
	if (READ_ONCE(cpu_buffer->read_pos) < rb_committed(cpu_buffer, reader, &closed))
		return true;
	if (!closed)
		return false;
	head = rb_head_id(cpu_buffer, rb_head_word(cpu_buffer));
	if (id)
		*id = head;
	return rb_committed(cpu_buffer, head, &closed) || closed;
}

/*
 * The watermark alone, from ids and counters: no page is read, so a writer
 * may ask without the reader lock. The waiter it wakes checks again.
 */
static bool rb_watermark_reached(struct rb_cpu_buffer *cpu_buffer, int full)
{
	/* The writer is still on the reader's page: nothing to hand out. */
	if (rb_commit_id(cpu_buffer) == READ_ONCE(cpu_buffer->reader_id))
		return false;
	return (rb_dirty(cpu_buffer) + 1) * 100 >= (unsigned long)full * cpu_buffer->nr;
}

/**
 * rb_watermark_hit - would a waiter for @full percent wake up now?
 * @cpu_buffer: the per-CPU buffer; the caller holds its reader_lock
 * @full: 0 for any data, else the percentage of dirty sub-buffers
 *
 * Return: true when the waiter's condition holds.
 */
bool rb_watermark_hit(struct rb_cpu_buffer *cpu_buffer, int full)
{
	/* Even the lowest watermark wants data: an idle CPU is never ready. */
	if (!rb_unread(cpu_buffer, NULL))
		return false;
	return !full || rb_watermark_reached(cpu_buffer, full);
}

static void rb_wake(struct rb_waiters *w)
{
	WRITE_ONCE(w->pending, false);
	irq_work_queue(&w->work);
}

/*
 * After publishing: wake whoever waits and is now satisfied (M7). The
 * writer still holds its recursion bit, so the snapshot swap refuses and
 * the owner is still the buffer rb_begin_write() checked.
 */
static void rb_wake_check(struct rb_cpu_buffer *cpu_buffer)
{
	struct trace_buffer *buffer = rb_owner(cpu_buffer);
	struct rb_waiters *bw = &buffer->waiters, *cw = &buffer->cpu_waiters[cpu_buffer->cpu];

	if (unlikely(READ_ONCE(bw->pending)))
		rb_wake(bw);
	if (unlikely(READ_ONCE(cw->pending)))
		rb_wake(cw);
	if (unlikely(READ_ONCE(cw->full_pending)) &&
	    rb_watermark_reached(cpu_buffer, max(READ_ONCE(cw->full_min), 1))) {
		WRITE_ONCE(cw->full_pending, false);
		irq_work_queue(&cw->work);
	}
}

/**
 * rb_reset_cpu_state - the words and counters of an empty per-CPU buffer
 * @cpu_buffer: the per-CPU buffer, whose sub-buffers are all empty and
 *	whose slots hold every id but @reader
 * @reader: the reader's sub-buffer
 *
 * Head and tail at slot 0, every counter zeroed: constant time, so an
 * order change can do it for every CPU at once with the rings prepared
 * beforehand. Callers quiesce the CPU first.
 */
void rb_reset_cpu_state(struct rb_cpu_buffer *cpu_buffer, u32 reader)
{
	local_t *counters[] = {
		&cpu_buffer->entries, &cpu_buffer->overrun, &cpu_buffer->commit_overrun,
		&cpu_buffer->dropped_events, &cpu_buffer->entries_bytes,
		&cpu_buffer->subbufs_entered, &cpu_buffer->subbufs_evicted,
	};
	u32 first = cpu_buffer->slots[0];
	unsigned int i;

	cpu_buffer->reader_id = reader;
	atomic64_set(&cpu_buffer->head, rb_pair(0, cpu_buffer->slots[cpu_buffer->nr - 1]));
	local64_set(&cpu_buffer->write, rb_wword(0, first, 0));
	atomic64_set(&cpu_buffer->commit, rb_pair(0, first));
	rb_range_commit(cpu_buffer, 0, first);
	cpu_buffer->stamp_ts = 0;
	cpu_buffer->stamp_end = 0;
	for (i = 0; i < ARRAY_SIZE(counters); i++)
		local_set(counters[i], 0);
	cpu_buffer->read_pos = 0;
	cpu_buffer->read_stamp = 0;
	cpu_buffer->next_before = 0;
	cpu_buffer->lost_events = 0;
	cpu_buffer->reader_gen++;
	cpu_buffer->read_events = 0;
	cpu_buffer->read_bytes = 0;
	cpu_buffer->subbufs_taken = 0;
}

/**
 * rb_reset_cpu_ring - empty a per-CPU buffer, keeping the reader's page
 * @cpu_buffer: the per-CPU buffer, with nr, slots and subbufs allocated
 * @reader: the id the reader is to hold
 *
 * Every page header cleared, the other ids in the slots in id order, then
 * rb_reset_cpu_state(). No page changes its id: a mapping's mmap ids and a
 * persistent buffer's places stay valid, and a reader that holds @reader
 * through a mapping holds the reader's page still. Callers quiesce the
 * CPU first.
 */
void rb_reset_cpu_ring(struct rb_cpu_buffer *cpu_buffer, u32 reader)
{
	struct rb_subbuf *sb = cpu_buffer->subbufs;
	unsigned int i, nr = cpu_buffer->nr;

	/*
	 * A persistent buffer's slots and pages are in its range: a crash
	 * halfway through would leave the next boot the old ring half
	 * cleared, to read with gaps. An impossible commit point first makes
	 * that boot start afresh; the real one comes last, in
	 * rb_reset_cpu_state(). A panic on another CPU flushes the range
	 * while this one stops wherever it is, so the stores must reach
	 * memory in this order as other CPUs see it.
	 */
	rb_range_commit(cpu_buffer, 2 * nr, 0);
	/* The impossible commit point before any clear (see above). */
	smp_wmb();
	for (i = 0; i <= nr; i++) {
		rb_sb_clear(&sb[i]);
		sb[i].gen++;
		if (i != reader)
			rb_slot_set(cpu_buffer, i - (i > reader), i);
	}
	/* Every clear before the real commit point (see above). */
	smp_wmb();
	rb_reset_cpu_state(cpu_buffer, reader);
}

/* ---- the reader's side of the ring (caller holds reader_lock) ---- */

/*
 * Add @n events to the loss the next read reports. The last boot's torn
 * sub-buffers held events nobody can count: once one is in the loss, the
 * report has no size, as mainline gives it for a sub-buffer it found
 * invalid.
 */
static void rb_lost_add(struct rb_cpu_buffer *cpu_buffer, u64 n, bool torn)
{
	if (torn || cpu_buffer->lost_events == RB_LOST_UNKNOWN)
		cpu_buffer->lost_events = RB_LOST_UNKNOWN;
	else
		cpu_buffer->lost_events += n;
}

/*
 * Take the head sub-buffer in exchange for the reader's (R2, R3). Returns 1
 * when taken, 0 when the head holds nothing yet, -EAGAIN when a writer moved
 * the head first.
 */
static int rb_swap_head(struct rb_cpu_buffer *cpu_buffer)
{
	u64 h = rb_head_word(cpu_buffer);
	unsigned int hv = rb_pair_vpos(h);
	u32 x = rb_head_id(cpu_buffer, h);
	struct rb_subbuf *xs = &cpu_buffer->subbufs[x];
	u64 before;

	/* M2: a commit point past X means X's data and length are final. */
	if (x == rb_commit_id(cpu_buffer) && !rb_len(cpu_buffer, xs->page))
		return 0;
	rb_slot_set(cpu_buffer, rb_vpos_prev(cpu_buffer, hv), rb_pair_id(h));
	if (!rb_head_cas(cpu_buffer, h,
			 rb_pair(rb_vpos_next(cpu_buffer, hv), cpu_buffer->reader_id)))
		return -EAGAIN;
	rb_slot_set(cpu_buffer, hv, cpu_buffer->reader_id);
	WRITE_ONCE(cpu_buffer->reader_id, x);
	before = rb_sb_before(cpu_buffer, xs);
	/*
	 * A closed sub-buffer was published after everything the reader saw.
	 * The counts are running totals of 64 bits on every architecture: on
	 * 32-bit, totals of 32 bits wrap after 2^32 events, minutes of a busy
	 * trace, and more than 2^31 lost between two reads (a flight recorder
	 * nobody reads) would look like a total gone back. Compared by their
	 * distance, so that a seeded test can cross the wrap.
	 */
	if (!RB_WARN_STOP(cpu_buffer, (s64)(before - cpu_buffer->next_before) < 0))
		rb_lost_add(cpu_buffer, before - cpu_buffer->next_before,
			    rb_sb_torn(cpu_buffer, xs));
	cpu_buffer->read_pos = 0;
	cpu_buffer->read_stamp = xs->page->time_stamp;
	cpu_buffer->reader_gen++;
	WRITE_ONCE(cpu_buffer->subbufs_taken, cpu_buffer->subbufs_taken + 1);
	return 1;
}

/*
 * The reader is done with its sub-buffer, which the writer has left: settle
 * its books so that a later swap computes the loss in between. Repeating
 * this is harmless.
 */
static void rb_close_reader_page(struct rb_cpu_buffer *cpu_buffer)
{
	struct rb_subbuf *rsb = &cpu_buffer->subbufs[cpu_buffer->reader_id];
	long n = rb_sb_events(cpu_buffer, rsb);

	cpu_buffer->next_before = rb_sb_before(cpu_buffer, rsb) + n;
	rb_sb_before_set(cpu_buffer, rsb, cpu_buffer->next_before);
	rb_sb_events_add(cpu_buffer, rsb, -n);
	cpu_buffer->read_bytes += rb_sb_tail(cpu_buffer, rsb);
	rb_sb_close(cpu_buffer, rsb, 0, 0);
	rb_len_set(cpu_buffer, rsb->page, 0);
	cpu_buffer->read_pos = 0;
}

/**
 * rb_reader_refill - make sure the reader's sub-buffer has unread data
 * @cpu_buffer: the per-CPU buffer; the caller holds its reader_lock
 *
 * Return: true if committed bytes wait at read_pos on the reader's
 * sub-buffer, after taking the head sub-buffer if the current one is used
 * up and the writer has left it.
 */
bool rb_reader_refill(struct rb_cpu_buffer *cpu_buffer)
{
	bool closed;
	int tries;

	for (tries = 0; tries < RB_SWAP_TRIES; tries++) {
		if (cpu_buffer->read_pos < rb_committed(cpu_buffer, cpu_buffer->reader_id, &closed))
			return true;
		if (!closed)
			return false;
		rb_close_reader_page(cpu_buffer);
		if (!rb_swap_head(cpu_buffer))
			return false;
	}
	return false;
}

/* ---- the write path ---- */

static bool rb_nmi_refused(void)
{
	return rb_nmi_no_atomic64() ||
	       (!IS_ENABLED(CONFIG_ARCH_HAVE_NMI_SAFE_CMPXCHG) && in_nmi());
}

/*
 * Open a writer on this CPU: every check that can refuse the write happens
 * here, before anything changes. On success preemption stays disabled and
 * the writer pins the commit point until rb_end_write().
 */
static __always_inline struct rb_cpu_buffer *rb_writable_cpu(struct trace_buffer *buffer)
{
	int cpu = raw_smp_processor_id();
	struct rb_cpu_buffer *cpu_buffer;

	if (!cpumask_test_cpu(cpu, buffer->cpumask))
		return NULL;
	cpu_buffer = buffer->cpus[cpu];
	return rb_recording(cpu_buffer, buffer) ? cpu_buffer : NULL;
}

static __always_inline struct rb_cpu_buffer *
rb_begin_write(struct trace_buffer *buffer, unsigned long len)
{
	struct rb_cpu_buffer *cpu_buffer;

	preempt_disable_notrace();
	cpu_buffer = rb_writable_cpu(buffer);
	if (unlikely(!cpu_buffer || len > rb_max_payload(buffer, rb_abs_mode(cpu_buffer, buffer)) ||
		     rb_nmi_refused()))
		goto refuse;
	if (unlikely(rb_recursion_lock(cpu_buffer)))
		goto refuse;
	if (unlikely(rb_open_count(cpu_buffer) >= RB_MAX_OPEN)) {
		/* No record left for a ninth nested writer: it finds no room. */
		local_inc(&cpu_buffer->dropped_events);
		rb_recursion_unlock(cpu_buffer);
		goto refuse;
	}
	rb_open_add(cpu_buffer, 1);
	/*
	 * An interrupt may have swapped this CPU buffer into another ring
	 * buffer (ring_buffer_swap_cpu()) before we counted ourselves in
	 * open_count; from here on the swap refuses.
	 */
	if (likely(rb_owner(cpu_buffer) == buffer))
		return cpu_buffer;
	rb_open_add(cpu_buffer, -1);
	rb_recursion_unlock(cpu_buffer);
refuse:
	preempt_enable_notrace();
	return NULL;
}

#ifdef CONFIG_RING_BUFFER_VALIDATE_TIME_DELTAS
/*
 * Re-walk the tail sub-buffer just published, the way readers will: times
 * must not go back, and the last event must carry the stamp record's time,
 * since the next delta is taken from it. Costly; a debug option.
 */
static void rb_validate_tail(struct rb_cpu_buffer *cpu_buffer, u64 w)
{
	struct rb_page *page = cpu_buffer->subbufs[rb_w_id(w)].page;
	unsigned int off = 0, len = rb_w_off(w), size;
	u64 ts = page->time_stamp, last = ts, end, stamp;
	struct ring_buffer_event *e;

	for (; off < len; off += size) {
		e = (struct ring_buffer_event *)&page->data[off];
		size = rb_event_size(e);
		if (!size)
			break;
		ts = rb_time_after(page, e, ts);
		if (!rb_is_data(e))
			continue;
		if (ts < last)
			goto bad;
		last = ts;
	}
	end = READ_ONCE(cpu_buffer->stamp_end);
	stamp = READ_ONCE(cpu_buffer->stamp_ts);
	barrier();	/* the record before the write word that vouches for it */
	/* A nested writer may have stored the record meanwhile: it reserved first. */
	if (local64_read(&cpu_buffer->write) != w)
		return;
	if (end == w && len && last != stamp)
		goto bad;
	return;
bad:
	WARN_ONCE(1, "ring buffer: CPU %d: time %llu after %llu at offset %u of %u (stamp_ts %llu)\n",
		  cpu_buffer->cpu, ts, last, off, len, READ_ONCE(cpu_buffer->stamp_ts));
}
#else
static inline void rb_validate_tail(struct rb_cpu_buffer *cpu_buffer, u64 w)
{
}
#endif

/*
 * Close a writer. A nested one leaves publishing to the writer it
 * interrupted. The outermost publishes up to the write word it reads; a
 * writer that starts after that read is nested in us (open_count is still
 * non-zero) and so publishes nothing, which the re-check after dropping
 * open_count catches. Publishing is idempotent, so overlapping is harmless.
 * The loop ends: each round follows a reservation by an interrupt that
 * arrived within the previous one, and it publishes whatever is there, so
 * nothing is left for a next commit that may never come (an idle CPU, or
 * a CPU buffer swapped into the snapshot).
 */
static void rb_end_write(struct rb_cpu_buffer *cpu_buffer)
{
	u64 w;

	if (rb_open_count(cpu_buffer) > 1) {
		rb_open_add(cpu_buffer, -1);
		goto out;
	}
	for (;;) {
		w = rb_write_word(cpu_buffer);
		rb_publish(cpu_buffer, w);
		rb_validate_tail(cpu_buffer, w);
		rb_open_add(cpu_buffer, -1);
		if (likely(rb_write_word(cpu_buffer) == w))
			break;
		rb_open_add(cpu_buffer, 1);
	}
	rb_wake_check(cpu_buffer);
out:
	rb_recursion_unlock(cpu_buffer);
	preempt_enable_notrace();
}

/* RB_T_ABS: a TIME_STAMP because every event carries one in absolute mode. */
enum rb_time_how { RB_T_FIRST, RB_T_DELTA, RB_T_EXTEND, RB_T_STAMP, RB_T_ABS };

/*
 * How to record the time of an event reserved at write word @w (see "Time
 * stamps" in the design). The stamp record {stamp_ts, stamp_end} is read only
 * by the outermost writer: a nested writer could see it half stored.
 */
static __always_inline enum rb_time_how
rb_time_how(struct trace_buffer *buffer, struct rb_cpu_buffer *cpu_buffer, bool outermost, u64 w,
	    u64 ts, u64 *delta)
{
	if (rb_abs_mode(cpu_buffer, buffer))
		return RB_T_ABS;
	if (!rb_w_off(w))
		return RB_T_FIRST;
	if (!outermost || rb_stamp_end(cpu_buffer) != w)
		return RB_T_STAMP;
	*delta = ts - rb_stamp_ts(cpu_buffer);
	if (*delta <= RB_DELTA_MASK)
		return RB_T_DELTA;
	return *delta <= RB_STAMP_MASK ? RB_T_EXTEND : RB_T_STAMP;
}

/*
 * The outermost writer keeps time from going backwards within a sub-buffer
 * (@in_subbuf: its event is not the first there). A sub-buffer starts at
 * the clock's own value: after a clock that jumped far back (a CPU that
 * was offline when trace_clock changed, a TSC reset on resume), clamping
 * across sub-buffers would freeze every later event at the old time until
 * the clock caught up, which it may never do.
 */
static __always_inline u64 rb_clock(struct trace_buffer *buffer, struct rb_cpu_buffer *cpu_buffer,
				    bool in_subbuf)
{
	u64 ts, last = 0;

	/*
	 * The record first: a nested writer that stores a later one after
	 * our clock read would look like time going back (our pass then
	 * fails its cmpxchg anyway).
	 */
	if (in_subbuf)
		last = rb_stamp_ts(cpu_buffer);
	barrier();
	/* An indirect call costs a retpoline: call the default clock directly. */
	if (IS_ENABLED(CONFIG_MITIGATION_RETPOLINE) && buffer->clock == trace_clock_local)
		ts = trace_clock_local();
	else
		ts = buffer->clock();
	if (unlikely(ts < last)) {
		pr_warn_once("ring buffer: clock went backwards: %llu -> %llu\n", last, ts);
		ts = last;
	}
	return ts;
}

/*
 * Reserve @len payload bytes and fill the event's header; @o is this
 * writer's record of the reservation (rb_open_top(), read once: a nested
 * writer puts the count back before it returns, so it cannot change under
 * us). Inlined in its two callers, as upstream's ring_buffer_write() has
 * its own copy of the reserve path.
 */
static __always_inline struct ring_buffer_event *
rb_reserve(struct trace_buffer *buffer, struct rb_cpu_buffer *cpu_buffer, struct rb_open *o,
	   unsigned int len)
{
	unsigned int cap = rb_capacity(buffer), bytes = rb_event_bytes(len);
	struct ring_buffer_event *e;
	enum rb_time_how how;
	struct rb_page *page;
	bool outermost = o == cpu_buffer->open;
	unsigned int need;
	u64 w, ts, delta = 0;
	int tries;

	for (tries = 0; tries < RB_RESERVE_TRIES; tries++) {
		w = rb_write_word(cpu_buffer);
		/*
		 * The clock after the write word: if the cmpxchg below succeeds,
		 * nothing was reserved between the two, so buffer order is
		 * clock order.
		 */
		barrier();
		ts = rb_clock(buffer, cpu_buffer, outermost && rb_w_off(w));
		how = rb_time_how(buffer, cpu_buffer, outermost, w, ts, &delta);
		need = bytes + (how >= RB_T_EXTEND ? RB_LEN_TIME : 0);
		if (rb_w_off(w) + need > cap) {
			/*
			 * Absolute time stamps turned on after rb_begin_write()
			 * checked the length: the event fits no sub-buffer, and
			 * moving would only evict (or drop) for nothing.
			 */
			if (unlikely(how == RB_T_ABS && need > cap))
				break;
			if (!rb_move_tail(buffer, cpu_buffer, w))
				return NULL;
			continue;
		}
		if (rb_write_cas(cpu_buffer, w, w + need))
			goto reserved;
	}
	local_inc(&cpu_buffer->dropped_events);
	return NULL;

reserved:
	page = cpu_buffer->subbufs[rb_w_id(w)].page;
	e = (struct ring_buffer_event *)&page->data[rb_w_off(w)];
	if (!rb_w_off(w))
		page->time_stamp = ts;
	if (how >= RB_T_EXTEND) {
		rb_put_time(e, how == RB_T_EXTEND ? RINGBUF_TYPE_TIME_EXTEND :
			    RINGBUF_TYPE_TIME_STAMP, how == RB_T_EXTEND ? delta : ts);
		e = (void *)e + RB_LEN_TIME;
	}
	rb_put_data_header(e, len, bytes, how == RB_T_DELTA ? delta : 0);
	rb_sb_events_add(cpu_buffer, &cpu_buffer->subbufs[rb_w_id(w)], 1);
	local_add(need, &cpu_buffer->entries_bytes);
	o->ts = ts;
	o->start = w;
	o->end = w + need;
	return e;
}

/**
 * ring_buffer_lock_reserve - reserve room for an event
 * @buffer: the ring buffer
 * @length: payload bytes
 *
 * Safe from any context, NMI included, and takes no lock. On success the
 * caller fills ring_buffer_event_data() and calls ring_buffer_unlock_commit()
 * or ring_buffer_discard_commit() on the same CPU; preemption stays
 * disabled in between.
 *
 * Return: the event, or NULL if recording is off, @length is above
 * ring_buffer_max_event_size(), the write recursed, or there is no room.
 */
struct ring_buffer_event *
ring_buffer_lock_reserve(struct trace_buffer *buffer, unsigned long length)
{
	struct rb_cpu_buffer *cpu_buffer = rb_begin_write(buffer, length);
	struct ring_buffer_event *event;

	if (!cpu_buffer)
		return NULL;
	event = rb_reserve(buffer, cpu_buffer, rb_open_top(cpu_buffer), length);
	if (!event)
		rb_end_write(cpu_buffer);	/* nested writers may wait to be published */
	return event;
}
EXPORT_SYMBOL_GPL(ring_buffer_lock_reserve);

/* Commit the reservation recorded in @o, this writer's. */
static __always_inline void rb_commit(struct rb_cpu_buffer *cpu_buffer, const struct rb_open *o)
{
	/* Still the last event: later deltas may refer to it. */
	if (rb_write_word(cpu_buffer) == o->end)
		rb_stamp_set(cpu_buffer, o->ts, o->end);
	local_inc(&cpu_buffer->entries);
	rb_end_write(cpu_buffer);
}

/**
 * ring_buffer_unlock_commit - commit an event reserved with ring_buffer_lock_reserve()
 * @buffer: the ring buffer
 *
 * Return: 0.
 */
int ring_buffer_unlock_commit(struct trace_buffer *buffer)
{
	struct rb_cpu_buffer *cpu_buffer = buffer->cpus[raw_smp_processor_id()];

	rb_commit(cpu_buffer, rb_open_top(cpu_buffer));
	return 0;
}
EXPORT_SYMBOL_GPL(ring_buffer_unlock_commit);

/**
 * ring_buffer_discard_commit - throw away a reserved event
 * @buffer: the ring buffer
 * @event: the event returned by ring_buffer_lock_reserve()
 *
 * If nothing was written after it, its room is given back; otherwise it
 * stays as padding that readers skip. Either way it is not counted.
 */
void ring_buffer_discard_commit(struct trace_buffer *buffer, struct ring_buffer_event *event)
{
	struct rb_cpu_buffer *cpu_buffer = buffer->cpus[raw_smp_processor_id()];
	struct rb_open *o = rb_open_top(cpu_buffer);
	struct rb_subbuf *sb = &cpu_buffer->subbufs[rb_w_id(o->start)];

	rb_sb_events_add(cpu_buffer, sb, -1);
	if (rb_write_cas(cpu_buffer, o->end, o->start)) {
		local_sub(rb_w_off(o->end) - rb_w_off(o->start), &cpu_buffer->entries_bytes);
	} else {
		/* A non-zero delta tells readers this padding has a length. */
		void *start = &sb->page->data[rb_w_off(o->start)];
		unsigned int bytes = rb_w_off(o->end) - rb_w_off(o->start) -
				     ((void *)event - start);

		event->array[0] = bytes - RB_EVENT_HDR;
		event->type_len = RINGBUF_TYPE_PADDING;
		if (!event->time_delta)
			event->time_delta = 1;
	}
	rb_end_write(cpu_buffer);
}
EXPORT_SYMBOL_GPL(ring_buffer_discard_commit);

/**
 * ring_buffer_write - write a whole event in one call
 * @buffer: the ring buffer
 * @length: payload bytes
 * @data: the payload
 *
 * Return: 0, or -EBUSY when ring_buffer_lock_reserve() would fail.
 */
int ring_buffer_write(struct trace_buffer *buffer, unsigned long length, void *data)
{
	struct rb_cpu_buffer *cpu_buffer = rb_begin_write(buffer, length);
	struct ring_buffer_event *event;
	struct rb_open *o;

	if (!cpu_buffer)
		return -EBUSY;
	/* As ring_buffer_lock_reserve() and _unlock_commit(), with @o kept. */
	o = rb_open_top(cpu_buffer);
	event = rb_reserve(buffer, cpu_buffer, o, length);
	if (!event) {
		rb_end_write(cpu_buffer);
		return -EBUSY;
	}
	memcpy(rb_data_payload(event), data, length);
	rb_commit(cpu_buffer, o);
	return 0;
}
EXPORT_SYMBOL_GPL(ring_buffer_write);

/**
 * ring_buffer_event_time_stamp - the time of an event being written
 * @buffer: the ring buffer
 * @event: an event reserved on this CPU and not yet committed
 *
 * Return: the time the innermost open reservation on this CPU was made
 * at, or the current time if none is open.
 */
u64 ring_buffer_event_time_stamp(struct trace_buffer *buffer, struct ring_buffer_event *event)
{
	int cpu = raw_smp_processor_id();
	long n;

	if (!cpumask_test_cpu(cpu, buffer->cpumask))
		return buffer->clock();
	n = rb_open_count(buffer->cpus[cpu]);
	if (n > 0 && n <= RB_MAX_OPEN)
		return buffer->cpus[cpu]->open[n - 1].ts;
	return buffer->clock();
}

/* ---- test hooks ---- */

#if IS_ENABLED(CONFIG_RING_BUFFER_TEST_POINTS)
DEFINE_STATIC_KEY_FALSE(rb_test_hooks);
/* The suites are modules when KUnit's are: the points they call inline test it. */
EXPORT_SYMBOL_IF_KUNIT(rb_test_hooks);

/**
 * rb_test_hooks_enable - turn the test points on or off, for every buffer
 * @on: true while a white-box suite runs
 *
 * Off, a test point is a jump patched to a no-op; a kernel built without
 * CONFIG_RING_BUFFER_TEST_POINTS has none at all.
 */
void rb_test_hooks_enable(bool on)
{
	if (on)
		static_branch_enable(&rb_test_hooks);
	else
		static_branch_disable(&rb_test_hooks);
}
EXPORT_SYMBOL_IF_KUNIT(rb_test_hooks_enable);

/**
 * rb_set_test_hook - call @fn at each labelled point of the ring's code
 * @buffer: the ring buffer
 * @fn: the hook, or NULL to remove it
 * @data: passed to @fn
 */
void rb_set_test_hook(struct trace_buffer *buffer, rb_test_fn fn, void *data)
{
	struct rb_test_hook *old = buffer->test_hook, *hook = NULL;

	if (fn) {
		hook = kmalloc(sizeof(*hook), GFP_KERNEL);
		if (WARN_ON(!hook))
			return;
		hook->fn = fn;
		hook->data = data;
	}
	WRITE_ONCE(buffer->test_hook, hook);
	if (old) {
		synchronize_rcu();
		kfree(old);
	}
}
EXPORT_SYMBOL_IF_KUNIT(rb_set_test_hook);

/* rb_slot_id() without its test points: the checker runs quiesced. */
static u32 rb_id_at(struct rb_cpu_buffer *cpu_buffer, unsigned int vpos)
{
	u64 h = atomic64_read(&cpu_buffer->head);

	if (rb_behind_head(cpu_buffer, vpos, h))
		return rb_pair_id(h);
	return cpu_buffer->slots[vpos % cpu_buffer->nr];
}

/* Walk the committed events of one page; fail on anything malformed. */
static int rb_check_page(struct rb_page *page, unsigned int from, unsigned int cap)
{
	unsigned int len = rb_page_len(page), off = from;

	if (len > cap) {
		pr_err("ring buffer: invariant: commit %u beyond capacity %u\n", len, cap);
		return -EINVAL;
	}
	while (off < len) {
		unsigned int size = rb_event_size((void *)&page->data[off]);

		if (!size)
			break;
		if (off + size > len) {
			pr_err("ring buffer: invariant: event at %u of %u bytes runs past %u\n",
			       off, size, len);
			return -EINVAL;
		}
		off += size;
	}
	return 0;
}

/**
 * rb_check_invariants - check R1-R5 and every committed event of a CPU
 * @buffer: the ring buffer, with no writer open on @cpu_id
 * @cpu_id: the CPU
 *
 * Return: 0, or -EINVAL after printing what does not hold.
 */
int rb_check_invariants(struct trace_buffer *buffer, int cpu_id)
{
	struct rb_cpu_buffer *cpu_buffer = buffer->cpus[cpu_id];
	unsigned int cap = rb_capacity(buffer), hv, t, c, v, i;
	unsigned long *seen;
	u64 w, h, cw;
	int ret = 0;

	seen = bitmap_zalloc(cpu_buffer->nr + 1, GFP_KERNEL);
	if (!seen)
		return -ENOMEM;
	raw_spin_lock_irq(&cpu_buffer->reader_lock);
	w = local64_read(&cpu_buffer->write);
	h = atomic64_read(&cpu_buffer->head);
	hv = rb_pair_vpos(h);
	t = rb_w_vpos(w);
	cw = atomic64_read(&cpu_buffer->commit);
	c = rb_pair_vpos(cw);
	if (local_read(&cpu_buffer->open_count)) {
		pr_err("ring buffer: invariant: %ld writers open\n",
		       local_read(&cpu_buffer->open_count));
		ret = -EINVAL;
		goto out;
	}
	/* R1: each id in one place. */
	__set_bit(cpu_buffer->reader_id, seen);
	for (i = 0; i < cpu_buffer->nr; i++) {
		u32 id = rb_id_at(cpu_buffer, i);

		if (id > cpu_buffer->nr || test_and_set_bit(id, seen)) {
			pr_err("ring buffer: invariant: id %u in slot %u twice or out of range\n",
			       id, i);
			ret = -EINVAL;
			goto out;
		}
	}
	/* R4: hv - 1 <= c <= t <= hv + nr - 1. */
	v = rb_vpos_prev(cpu_buffer, hv);
	if (rb_vpos_dist(cpu_buffer, v, c) > rb_vpos_dist(cpu_buffer, v, t) ||
	    rb_vpos_dist(cpu_buffer, v, t) > cpu_buffer->nr) {
		pr_err("ring buffer: invariant: order head %u commit %u tail %u\n", hv, c, t);
		ret = -EINVAL;
		goto out;
	}
	if ((c == v ? cpu_buffer->reader_id : rb_id_at(cpu_buffer, c)) != rb_pair_id(cw) ||
	    (t == v ? cpu_buffer->reader_id : rb_id_at(cpu_buffer, t)) != rb_w_id(w)) {
		pr_err("ring buffer: invariant: commit or tail id does not match its slot\n");
		ret = -EINVAL;
		goto out;
	}
	ret = rb_check_page(cpu_buffer->subbufs[cpu_buffer->reader_id].page,
			    cpu_buffer->read_pos, cap);
	for (v = hv; !ret && c != rb_vpos_prev(cpu_buffer, hv); v = rb_vpos_next(cpu_buffer, v)) {
		struct rb_page *page = cpu_buffer->subbufs[rb_id_at(cpu_buffer, v)].page;

		ret = rb_check_page(page, 0, cap);
		if (v == c)
			break;
		/* Only an event that fits no sub-buffer could close an empty one. */
		if (!ret && !rb_page_len(page)) {
			pr_err("ring buffer: invariant: closed sub-buffer at %u is empty\n", v);
			ret = -EINVAL;
		}
	}
out:
	raw_spin_unlock_irq(&cpu_buffer->reader_lock);
	bitmap_free(seen);
	return ret;
}
EXPORT_SYMBOL_IF_KUNIT(rb_check_invariants);
#endif
