// SPDX-License-Identifier: GPL-2.0
/*
 * The ring buffer's readers: consuming reads, iterators, page reads for
 * trace_pipe_raw and splice, and the header files. The
 * design is in Documentation/trace/ring-buffer-design.rst, "The reader".
 *
 * Relies on:
 *  - Every step that reads the ring runs under the per-CPU reader_lock,
 *    interrupts off (an iterator's advance past its copy reads only the
 *    iterator). Only rb_reader_refill(), called from here, rearranges
 *    slots[] or changes reader_id, so under the lock the id in each slot
 *    is fixed (R1, R2).
 *    Writers take no lock and may run between any two instructions.
 *  - Bytes below rb_page_len() are final (M1); a sub-buffer's length is
 *    final once the commit point names another one and its gen is
 *    unchanged (M2).
 *  - A ring sub-buffer's bytes change only after its gen does (M5), and the
 *    writer enters sub-buffers in slot order: while one's gen holds still,
 *    the gen read of the next one belongs to the same lap.
 * Maintains:
 *  - Every byte the reader passes counts once in read_bytes, every data
 *    event once in read_events; a loss is reported once, with the event
 *    after it.
 *  - reader_gen changes whenever a consuming step may take data from under an
 *    iterator, which then starts again at the reader's position.
 *  - A page from ring_buffer_read_page() holds whole events, each time
 *    event with its event, then the lost-event count if flagged, then zeroes.
 */

#include <linux/export.h>
#include <linux/gfp.h>
#include <linux/hardirq.h>
#include <linux/mm.h>
#include <linux/slab.h>
#include <linux/topology.h>
#include <linux/trace_seq.h>

#include "ring_buffer_internal.h"

/* iter->vpos while the iterator is on the reader's sub-buffer */
#define RB_ITER_READER		UINT_MAX
/* laps and head races one iterator step puts up with */
#define RB_ITER_TRIES		8

/* ---- events ---- */

/**
 * ring_buffer_event_length - the payload size of an event
 * @event: a data event, or the time event in front of one
 *
 * Return: the bytes usable for data, which may exceed what was reserved by
 * the rounding; for a padding event, its size on the sub-buffer.
 */
unsigned int ring_buffer_event_length(struct ring_buffer_event *event)
{
	unsigned int size;

	event = rb_skip_time(event);
	size = rb_event_size(event);
	if (!rb_is_data(event))
		return size;
	/* A type_len 0 event spends array[0] on the length. */
	return size - RB_EVENT_HDR - (event->type_len ? 0 : sizeof(event->array[0]));
}
EXPORT_SYMBOL_GPL(ring_buffer_event_length);

/**
 * ring_buffer_event_data - the payload of an event
 * @event: a data event, or the time event in front of one
 *
 * Return: a pointer to the first payload byte.
 */
void *ring_buffer_event_data(struct ring_buffer_event *event)
{
	return rb_event_payload(event);
}
EXPORT_SYMBOL_GPL(ring_buffer_event_data);

/* ---- consuming reads (reader_lock held) ---- */

/*
 * An NMI, an oops dump say, may have interrupted the lock's holder: spinning
 * would never end. The dump matters more than the buffer then, so read
 * without the lock and stop recording on that CPU for good.
 * Return: whether the lock is held (pass it to rb_read_unlock()).
 * For sparse the pair always takes and drops the lock: the unlocked
 * path says so with __acquire()/__release().
 */
static bool rb_read_lock(struct rb_cpu_buffer *cpu_buffer, unsigned long *flags)
	__acquires(&cpu_buffer->reader_lock)
{
	if (likely(!in_nmi())) {
		raw_spin_lock_irqsave(&cpu_buffer->reader_lock, *flags);
		return true;
	}
	if (raw_spin_trylock_irqsave(&cpu_buffer->reader_lock, *flags))
		return true;
	atomic_inc(&cpu_buffer->record_disabled);
	__acquire(&cpu_buffer->reader_lock);
	return false;
}

static void rb_read_unlock(struct rb_cpu_buffer *cpu_buffer, bool locked, unsigned long flags)
	__releases(&cpu_buffer->reader_lock)
{
	if (locked)
		raw_spin_unlock_irqrestore(&cpu_buffer->reader_lock, flags);
	else
		__release(&cpu_buffer->reader_lock);
}

static struct rb_page *rb_reader_subbuf_page(struct rb_cpu_buffer *cpu_buffer)
{
	return cpu_buffer->subbufs[cpu_buffer->reader_id].page;
}

static struct ring_buffer_event *rb_reader_event(struct rb_cpu_buffer *cpu_buffer)
{
	return (void *)&rb_reader_subbuf_page(cpu_buffer)->data[cpu_buffer->read_pos];
}

/*
 * Consume the item at read_pos, below @end: an event, a time event or a
 * padding. A padding without a length, or a length running past @end,
 * cannot be walked past, so the rest up to @end goes with it.
 */
static void rb_reader_pass(struct rb_cpu_buffer *cpu_buffer, unsigned int end)
{
	struct rb_page *page = rb_reader_subbuf_page(cpu_buffer);
	struct ring_buffer_event *event = rb_reader_event(cpu_buffer);
	unsigned int size = rb_event_size(event);

	if (!size || size > end - cpu_buffer->read_pos)
		size = end - cpu_buffer->read_pos;
	if (rb_is_data(event))
		cpu_buffer->read_events++;
	cpu_buffer->read_stamp = rb_time_after(page, event, cpu_buffer->read_stamp);
	cpu_buffer->read_pos += size;
	cpu_buffer->read_bytes += size;
}

/*
 * The next data event for a consuming reader, with its time and the loss
 * before it; time events and paddings in front of it are consumed.
 */
static struct ring_buffer_event *rb_peek_reader(struct rb_cpu_buffer *cpu_buffer, u64 *ts,
						unsigned long *lost)
{
	unsigned long taken = cpu_buffer->subbufs_taken;
	struct ring_buffer_event *event;

	/* A whole ring of discarded events is all a writer can keep us busy with. */
	while (cpu_buffer->subbufs_taken - taken <= cpu_buffer->nr &&
	       rb_reader_refill(cpu_buffer)) {
		event = rb_reader_event(cpu_buffer);
		if (rb_is_data(event)) {
			if (ts)
				*ts = cpu_buffer->read_stamp + event->time_delta;
			if (lost)
				*lost = cpu_buffer->lost_events;
			return event;
		}
		rb_reader_pass(cpu_buffer, rb_page_len(rb_reader_subbuf_page(cpu_buffer)));
	}
	return NULL;
}

/* Consume the event rb_peek_reader() returned, and the loss it reported. */
static void rb_advance_reader(struct rb_cpu_buffer *cpu_buffer)
{
	unsigned int end = rb_page_len(rb_reader_subbuf_page(cpu_buffer));

	if (WARN_ON_ONCE(cpu_buffer->read_pos >= end))
		return;
	rb_reader_pass(cpu_buffer, end);
	cpu_buffer->lost_events = 0;
	cpu_buffer->reader_gen++;
}

/**
 * rb_reader_consume - consume the reader's sub-buffer up to @end
 * @cpu_buffer: the per-CPU buffer; the caller holds its reader_lock
 * @end: a committed length of the reader's sub-buffer
 *
 * For a reader that reads the page in place (GET_READER on a mapping):
 * the events are counted read as if consumed one by one. A pending loss
 * stays for whoever reports it.
 */
void rb_reader_consume(struct rb_cpu_buffer *cpu_buffer, unsigned int end)
{
	while (cpu_buffer->read_pos < end)
		rb_reader_pass(cpu_buffer, end);
	cpu_buffer->reader_gen++;
}

static struct ring_buffer_event *
rb_read_next(struct trace_buffer *buffer, int cpu, u64 *ts, unsigned long *lost,
	     bool consume)
{
	struct rb_cpu_buffer *cpu_buffer = rb_cpu(buffer, cpu);
	struct ring_buffer_event *event;
	unsigned long flags = 0;
	bool locked;

	if (!cpu_buffer || rb_nmi_no_atomic64())
		return NULL;
	locked = rb_read_lock(cpu_buffer, &flags);
	event = rb_peek_reader(cpu_buffer, ts, lost);
	if (event && consume)
		rb_advance_reader(cpu_buffer);
	rb_read_unlock(cpu_buffer, locked, flags);
	return event;
}

/**
 * ring_buffer_peek - look at the next event without consuming it
 * @buffer: the ring buffer
 * @cpu: the CPU to read
 * @ts: where to store the event's time stamp (may be NULL)
 * @lost_events: where to store the events lost before it (may be NULL)
 *
 * Return: the event, valid until the next consuming read of @cpu, or NULL.
 */
struct ring_buffer_event *
ring_buffer_peek(struct trace_buffer *buffer, int cpu, u64 *ts,
		 unsigned long *lost_events)
{
	return rb_read_next(buffer, cpu, ts, lost_events, false);
}
EXPORT_SYMBOL_GPL(ring_buffer_peek);

/**
 * ring_buffer_consume - return the next event and consume it
 * @buffer: the ring buffer
 * @cpu: the CPU to read
 * @ts: where to store the event's time stamp (may be NULL)
 * @lost_events: where to store the events lost before it, once (may be NULL)
 *
 * Return: the event, valid until the next consuming read of @cpu, or NULL.
 */
struct ring_buffer_event *
ring_buffer_consume(struct trace_buffer *buffer, int cpu, u64 *ts,
		    unsigned long *lost_events)
{
	return rb_read_next(buffer, cpu, ts, lost_events, true);
}
EXPORT_SYMBOL_GPL(ring_buffer_consume);

/**
 * ring_buffer_empty_cpu - is one CPU's buffer empty?
 * @buffer: the ring buffer
 * @cpu: the CPU
 *
 * Return: true if a consuming read of @cpu would find nothing now; also
 * for a CPU the buffer has no per-CPU buffer for.
 */
bool ring_buffer_empty_cpu(struct trace_buffer *buffer, int cpu)
{
	struct rb_cpu_buffer *cpu_buffer = rb_cpu(buffer, cpu);
	unsigned long flags = 0;
	bool empty, locked;

	if (!cpu_buffer || rb_nmi_no_atomic64())
		return true;
	locked = rb_read_lock(cpu_buffer, &flags);
	empty = !rb_unread(cpu_buffer, NULL);
	rb_read_unlock(cpu_buffer, locked, flags);
	return empty;
}
EXPORT_SYMBOL_GPL(ring_buffer_empty_cpu);

/**
 * ring_buffer_empty - is the whole ring buffer empty?
 * @buffer: the ring buffer
 *
 * Return: true if no CPU had anything to read when it was checked.
 */
bool ring_buffer_empty(struct trace_buffer *buffer)
{
	int i;

	for_each_cpu(i, buffer->cpumask)
		if (!ring_buffer_empty_cpu(buffer, i))
			return false;
	return true;
}
EXPORT_SYMBOL_GPL(ring_buffer_empty);

/* ---- iterators (reader_lock held) ---- */

enum rb_iter_step {
	RB_STEP_EVENT,		/* a data event is copied */
	RB_STEP_NEXT,		/* passed a time event or padding */
	RB_STEP_MOVED,		/* went on to another sub-buffer, or tried to */
	RB_STEP_LAPPED,		/* the writer re-entered our sub-buffer */
	RB_STEP_END,		/* at the commit point */
};

/* Has the writer re-entered the iterator's sub-buffer since it arrived? */
static bool rb_iter_lapped(struct ring_buffer_iter *iter)
{
	if (iter->vpos == RB_ITER_READER)
		return false;
	smp_rmb();	/* M5, pairs with rb_sb_enter(): what we read before is good if gen held */
	return READ_ONCE(iter->cpu_buffer->subbufs[iter->id].gen) != iter->gen;
}

/*
 * A consuming step moved reader_gen since the iterator last looked: what it
 * points at may be gone, so it starts again at the reader's position.
 */
static bool rb_iter_stale(const struct ring_buffer_iter *iter)
{
	return iter->reader_gen != iter->cpu_buffer->reader_gen;
}

/* Go back to where the consuming reader is. */
static void rb_iter_restart(struct ring_buffer_iter *iter)
{
	struct rb_cpu_buffer *cpu_buffer = iter->cpu_buffer;

	iter->id = cpu_buffer->reader_id;
	iter->vpos = RB_ITER_READER;
	iter->offset = cpu_buffer->read_pos;
	iter->read_stamp = cpu_buffer->read_stamp;
	iter->reader_gen = cpu_buffer->reader_gen;
	iter->have_event = false;
	iter->peeked = false;
	/* The next consuming read is to report a gap no one counted: so do we. */
	if (cpu_buffer->lost_events == RB_LOST_UNKNOWN)
		iter->dropped = true;
}

/*
 * Enter sub-buffer @id at its start. The last boot's torn sub-buffers
 * right before it were dropped: that is a drop for `trace` to show, as a
 * consuming read shows it.
 */
static void rb_iter_set(struct ring_buffer_iter *iter, unsigned int vpos, u32 id,
			unsigned long gen)
{
	iter->vpos = vpos;
	iter->id = id;
	iter->gen = gen;
	iter->offset = 0;
	iter->have_event = false;
	iter->peeked = false;
	if (rb_sb_torn(iter->cpu_buffer, &iter->cpu_buffer->subbufs[id]))
		iter->dropped = true;
}

/* Go to the oldest sub-buffer in the ring; false if it was evicted meanwhile. */
static bool rb_iter_to_head(struct ring_buffer_iter *iter)
{
	struct rb_cpu_buffer *cpu_buffer = iter->cpu_buffer;
	u64 head = rb_head_word(cpu_buffer);
	u32 id = rb_head_id(cpu_buffer, head);
	unsigned long gen;

	/*
	 * M5: an evictor moves the head (M4) before it enters @id and bumps
	 * its gen, so a head unchanged after the gen means gen is this lap's.
	 */
	gen = smp_load_acquire(&cpu_buffer->subbufs[id].gen);
	if (rb_head_word(cpu_buffer) != head)
		return false;
	rb_iter_set(iter, rb_pair_vpos(head), id, gen);
	return true;
}

/* Leave a sub-buffer the commit point has passed for the next one. */
static enum rb_iter_step rb_iter_to_next(struct ring_buffer_iter *iter)
{
	struct rb_cpu_buffer *cpu_buffer = iter->cpu_buffer;
	unsigned int vpos;
	unsigned long gen;
	u32 id;

	if (iter->vpos == RB_ITER_READER) {
		rb_iter_to_head(iter);
		return RB_STEP_MOVED;
	}
	vpos = rb_vpos_next(cpu_buffer, iter->vpos);
	id = rb_slot_id(cpu_buffer, vpos);
	/* M5: the writer re-enters @id only after ours; if ours held, so did @id. */
	gen = smp_load_acquire(&cpu_buffer->subbufs[id].gen);
	if (rb_iter_lapped(iter))
		return RB_STEP_LAPPED;
	rb_iter_set(iter, vpos, id, gen);
	return RB_STEP_MOVED;
}

/*
 * Copy the item at iter->offset, below @len on @page, and take it in if no
 * writer touched the sub-buffer meanwhile. A data event stays put, for
 * ring_buffer_iter_advance() to pass.
 */
static enum rb_iter_step rb_iter_copy(struct ring_buffer_iter *iter, struct rb_page *page,
				      unsigned int len)
{
	struct ring_buffer_event *src = (void *)&page->data[iter->offset];
	unsigned int size = rb_event_size(src);
	u64 before, after;

	if (!size || size > len - iter->offset || size > iter->event_size) {
		if (rb_iter_lapped(iter))
			return RB_STEP_LAPPED;
		/*
		 * Nothing walkable is left on this sub-buffer, or an event
		 * larger than our copy is next: it comes from an order change
		 * that an iterator which could not wait saw installed, and the
		 * rest of the sub-buffer is lost to us.
		 */
		if (size && size <= len - iter->offset)
			iter->dropped = true;
		iter->offset = len;
		return RB_STEP_NEXT;
	}
	memcpy(iter->event, src, size);
	/* The stamp of an empty sub-buffer is set with its first event. */
	before = iter->offset ? iter->read_stamp : READ_ONCE(page->time_stamp);
	after = rb_time_after(page, iter->event, before);
	if (rb_iter_lapped(iter))
		return RB_STEP_LAPPED;
	if (rb_is_data(iter->event)) {
		iter->read_stamp = before;
		iter->event_ts = after;
		iter->have_event = true;
		return RB_STEP_EVENT;
	}
	iter->read_stamp = after;
	iter->offset += size;
	return RB_STEP_NEXT;
}

static enum rb_iter_step rb_iter_step(struct ring_buffer_iter *iter)
{
	struct rb_cpu_buffer *cpu_buffer = iter->cpu_buffer;
	struct rb_page *page = cpu_buffer->subbufs[iter->id].page;
	bool closed;
	unsigned int len = rb_committed(cpu_buffer, iter->id, &closed);

	if (iter->offset < len)
		return rb_iter_copy(iter, page, len);
	if (rb_iter_lapped(iter))
		return RB_STEP_LAPPED;
	if (!closed)
		return RB_STEP_END;
	return rb_iter_to_next(iter);
}

/*
 * Find the next data event. The moves are bounded, so a writer on another
 * CPU cannot keep the iterator here; within a sub-buffer every step
 * advances.
 */
static struct ring_buffer_event *rb_iter_fetch(struct ring_buffer_iter *iter)
{
	unsigned int moves = 0, budget = 2 * iter->cpu_buffer->nr + RB_ITER_TRIES;

	while (moves < budget) {
		switch (rb_iter_step(iter)) {
		case RB_STEP_EVENT:
			return iter->event;
		case RB_STEP_END:
			return NULL;
		case RB_STEP_LAPPED:
			/* Resume at the oldest event left: all in between is gone. */
			iter->dropped = true;
			rb_iter_to_head(iter);
			moves++;
			break;
		case RB_STEP_MOVED:
			moves++;
			break;
		case RB_STEP_NEXT:
			break;
		}
	}
	return NULL;
}

static struct ring_buffer_event *rb_iter_current(struct ring_buffer_iter *iter)
{
	if (rb_iter_stale(iter))
		rb_iter_restart(iter);
	if (iter->have_event)
		return iter->event;
	return rb_iter_fetch(iter);
}

/**
 * ring_buffer_read_start - start a non-consuming read of one CPU
 * @buffer: the ring buffer
 * @cpu: the CPU to read
 * @flags: gfp flags for the iterator's memory
 *
 * The iterator walks from the next event a consuming read would return to
 * the newest committed one. Writers go on; one that laps the iterator shows
 * in ring_buffer_iter_dropped(). A resize or order change that starts
 * later fails with -EBUSY until ring_buffer_read_finish(); with @flags that
 * allow sleeping, one under way finishes before the iterator starts. One
 * that cannot wait (kdb's) may start while a resize or order change that
 * had already decided installs the new rings; the install bumps
 * reader_gen, so it restarts (and after an order change, events larger
 * than its copy show in ring_buffer_iter_dropped()).
 *
 * Return: the iterator, or NULL if @cpu has no buffer or memory ran out.
 */
struct ring_buffer_iter *
ring_buffer_read_start(struct trace_buffer *buffer, int cpu, gfp_t flags)
{
	struct rb_cpu_buffer *cpu_buffer = rb_cpu(buffer, cpu);
	bool can_wait = gfpflags_allow_blocking(flags);
	struct ring_buffer_iter *iter;
	unsigned long irqflags;

	if (!cpu_buffer)
		return NULL;
	iter = kzalloc(sizeof(*iter), flags);
	if (!iter)
		return NULL;
	/* A resize or order change under way finishes first (kdb cannot wait). */
	if (can_wait)
		mutex_lock(&buffer->mutex);
	atomic_inc(&cpu_buffer->resize_disabled);
	if (can_wait)
		mutex_unlock(&buffer->mutex);

	iter->event_size = READ_ONCE(buffer->subbuf_size);
	iter->event = kmalloc(iter->event_size, flags);
	if (!iter->event) {
		atomic_dec(&cpu_buffer->resize_disabled);
		kfree(iter);
		return NULL;
	}
	iter->cpu_buffer = cpu_buffer;
	raw_spin_lock_irqsave(&cpu_buffer->reader_lock, irqflags);
	rb_iter_restart(iter);
	raw_spin_unlock_irqrestore(&cpu_buffer->reader_lock, irqflags);
	return iter;
}
EXPORT_SYMBOL_GPL(ring_buffer_read_start);

/**
 * ring_buffer_read_finish - end a non-consuming read
 * @iter: the iterator from ring_buffer_read_start(); freed here
 */
void ring_buffer_read_finish(struct ring_buffer_iter *iter)
{
	if (!iter)
		return;
	atomic_dec(&iter->cpu_buffer->resize_disabled);
	kfree(iter->event);
	kfree(iter);
}
EXPORT_SYMBOL_GPL(ring_buffer_read_finish);

/**
 * ring_buffer_iter_peek - the event under the iterator
 * @iter: the iterator
 * @ts: where to store the event's time stamp (may be NULL)
 *
 * Return: a copy of the event, valid until the iterator moves, or NULL at
 * the end of the committed data.
 */
struct ring_buffer_event *
ring_buffer_iter_peek(struct ring_buffer_iter *iter, u64 *ts)
{
	struct rb_cpu_buffer *cpu_buffer = iter->cpu_buffer;
	struct ring_buffer_event *event;
	unsigned long flags;

	if (rb_nmi_no_atomic64())
		return NULL;
	raw_spin_lock_irqsave(&cpu_buffer->reader_lock, flags);
	event = rb_iter_current(iter);
	iter->peeked = !!event;
	if (event && ts)
		*ts = iter->event_ts;
	raw_spin_unlock_irqrestore(&cpu_buffer->reader_lock, flags);
	return event;
}
EXPORT_SYMBOL_GPL(ring_buffer_iter_peek);

/* Step over the event copied into iter->event; touches only the iterator. */
static void rb_iter_pass(struct ring_buffer_iter *iter)
{
	iter->offset += rb_event_size(iter->event);
	iter->read_stamp = iter->event_ts;
	iter->have_event = false;
	iter->peeked = false;
}

/**
 * ring_buffer_iter_advance - move the iterator past its event
 * @iter: the iterator
 *
 * After ring_buffer_iter_peek(), this passes the event the peek returned;
 * that reads only the iterator, so it takes no lock. Without a peek it
 * passes the event at the iterator, except after a consuming read: the
 * next event is then at the reader's position, and this passes nothing
 * (never an event the read moved the iterator to). Like every iterator
 * call, it must not race with another call on the same iterator. This
 * also ends the report of ring_buffer_iter_dropped().
 */
void ring_buffer_iter_advance(struct ring_buffer_iter *iter)
{
	struct rb_cpu_buffer *cpu_buffer = iter->cpu_buffer;
	unsigned long flags;

	iter->dropped = false;
	if (iter->peeked) {
		rb_iter_pass(iter);
		return;
	}
	raw_spin_lock_irqsave(&cpu_buffer->reader_lock, flags);
	if (rb_iter_stale(iter))
		rb_iter_restart(iter);
	else if (rb_iter_current(iter))
		rb_iter_pass(iter);
	raw_spin_unlock_irqrestore(&cpu_buffer->reader_lock, flags);
}
EXPORT_SYMBOL_GPL(ring_buffer_iter_advance);

/**
 * ring_buffer_iter_reset - start the iterator over
 * @iter: the iterator (may be NULL)
 *
 * It goes back to the next event a consuming read would return.
 */
void ring_buffer_iter_reset(struct ring_buffer_iter *iter)
{
	unsigned long flags;

	if (unlikely(!iter))
		return;
	raw_spin_lock_irqsave(&iter->cpu_buffer->reader_lock, flags);
	iter->dropped = false;
	rb_iter_restart(iter);
	raw_spin_unlock_irqrestore(&iter->cpu_buffer->reader_lock, flags);
}
EXPORT_SYMBOL_GPL(ring_buffer_iter_reset);

/**
 * ring_buffer_iter_empty - has the iterator reached the newest event?
 * @iter: the iterator
 *
 * After a consuming read the iterator is left where it is, with the event
 * a peek returned still to be passed: the answer is then the reader's, as
 * from ring_buffer_empty_cpu() (which says not empty while only a
 * discarded event's padding is left unread).
 *
 * Return: nonzero if ring_buffer_iter_peek() would return NULL now (after
 * a consuming read, as above).
 */
int ring_buffer_iter_empty(struct ring_buffer_iter *iter)
{
	struct rb_cpu_buffer *cpu_buffer = iter->cpu_buffer;
	unsigned long flags;
	bool empty;

	raw_spin_lock_irqsave(&cpu_buffer->reader_lock, flags);
	if (rb_iter_stale(iter))
		empty = !rb_unread(cpu_buffer, NULL);
	else
		empty = !rb_iter_current(iter);
	raw_spin_unlock_irqrestore(&cpu_buffer->reader_lock, flags);
	return empty;
}
EXPORT_SYMBOL_GPL(ring_buffer_iter_empty);

/**
 * ring_buffer_iter_dropped - did the iterator lose events?
 * @iter: the iterator
 *
 * A writer that lapped the iterator, or an order change that kdb's
 * iterator saw installed (events larger than its copy), lost them; so did
 * the last boot's torn sub-buffers dropped right before the current one.
 *
 * Return: true if events were lost before the current one, until the next
 * ring_buffer_iter_advance().
 */
bool ring_buffer_iter_dropped(struct ring_buffer_iter *iter)
{
	return iter->dropped;
}
EXPORT_SYMBOL_GPL(ring_buffer_iter_dropped);

/* ---- page reads ---- */

static unsigned int rb_rpage_capacity(struct buffer_data_read_page *rpage)
{
	return (PAGE_SIZE << rpage->order) - RB_PAGE_HDR;
}

/*
 * The CPU's cached free page if it has the order asked for, else a new one,
 * zeroed and from the page allocator, since splice hands it on by its struct
 * page. The cache is one slot taken with xchg() and filled with cmpxchg()
 * (ring_buffer_free_read_page()), not under reader_lock: a splice of one
 * page then takes the reader lock once, in ring_buffer_read_page(), and
 * under the function tracer every lock and unlock is an event the reader
 * itself must read back.
 */
static struct rb_page *rb_get_data_page(struct rb_cpu_buffer *cpu_buffer, unsigned int order)
{
	struct rb_page *page = xchg(&cpu_buffer->spare, NULL);
	struct page *pg;

	if (page && rb_data_page_order(page) == order)
		return page;
	if (page)
		rb_free_data_page(page);
	pg = alloc_pages_node(cpu_to_node(cpu_buffer->cpu), GFP_KERNEL | __GFP_RETRY_MAYFAIL |
			      __GFP_COMP | __GFP_ZERO, order);
	return pg ? page_address(pg) : NULL;
}

/**
 * ring_buffer_alloc_read_page - get a page for ring_buffer_read_page()
 * @buffer: the ring buffer
 * @cpu: the CPU the page will read
 * @rpage: in: a page from an earlier call, or NULL; out: a page of the
 *	buffer's current sub-buffer order (one of another order gets new memory)
 *
 * Return: 0, -ENODEV for a CPU without a buffer, -EINVAL without @rpage,
 * -ENOMEM (then *@rpage is freed and set to NULL).
 */
int ring_buffer_alloc_read_page(struct trace_buffer *buffer, int cpu,
				struct buffer_data_read_page **rpage)
{
	struct rb_cpu_buffer *cpu_buffer = rb_cpu(buffer, cpu);
	unsigned int order = READ_ONCE(buffer->subbuf_order);
	struct buffer_data_read_page *rp;

	if (!cpu_buffer)
		return -ENODEV;
	if (!rpage)
		return -EINVAL;
	rp = *rpage;
	if (rp && rp->data && rp->order == order)
		return 0;
	if (!rp) {
		rp = kzalloc(sizeof(*rp), GFP_KERNEL);
		if (!rp)
			return -ENOMEM;
	} else if (rp->data) {
		free_pages((unsigned long)rp->data, rp->order);
	}
	rp->order = order;
	rp->data = rb_get_data_page(cpu_buffer, order);
	if (!rp->data) {
		kfree(rp);
		*rpage = NULL;
		return -ENOMEM;
	}
	local_set(&rp->data->commit, 0);
	*rpage = rp;
	return 0;
}
EXPORT_SYMBOL_GPL(ring_buffer_alloc_read_page);

/**
 * ring_buffer_free_read_page - free a page from ring_buffer_alloc_read_page()
 * @buffer: the ring buffer
 * @cpu: the CPU the page was allocated for
 * @rpage: the page (may be NULL)
 *
 * Its memory is freed with its own order; one page of the current order
 * per CPU is kept for the next allocation, unless splice still holds it.
 */
void ring_buffer_free_read_page(struct trace_buffer *buffer, int cpu,
				struct buffer_data_read_page *rpage)
{
	struct rb_cpu_buffer *cpu_buffer;
	struct rb_page *page;

	if (!rpage)
		return;
	page = rpage->data;
	cpu_buffer = buffer ? rb_cpu(buffer, cpu) : NULL;
	/* Splice may still hold the page: then only its last put frees it. */
	if (page && cpu_buffer && rpage->order == READ_ONCE(buffer->subbuf_order) &&
	    page_ref_count(virt_to_page(page)) == 1 && !cmpxchg(&cpu_buffer->spare, NULL, page))
		page = NULL;
	if (page)
		free_pages((unsigned long)page, rpage->order);
	kfree(rpage);
}
EXPORT_SYMBOL_GPL(ring_buffer_free_read_page);

/*
 * Give the caller the reader's whole sub-buffer, which the writer has
 * left, in exchange for the caller's page. The reader keeps the exchanged
 * page, empty, until rb_reader_refill() swaps it back into the ring; its
 * entries stay, so that the next swap computes the loss right.
 */
static void rb_page_swap(struct rb_cpu_buffer *cpu_buffer, struct buffer_data_read_page *rpage,
			 unsigned int size)
{
	struct rb_subbuf *sb = &cpu_buffer->subbufs[cpu_buffer->reader_id];
	struct rb_page *page = sb->page;

	cpu_buffer->read_events += local_read(&sb->events);
	cpu_buffer->read_bytes += size + sb->tail_bytes;
	sb->tail_bytes = 0;
	local_set(&rpage->data->commit, 0);
	rpage->data->time_stamp = 0;
	sb->page = rpage->data;
	rpage->data = page;
	local_set(&page->commit, size);
}

/* Bytes from @pos that go together: a time event and the event it belongs to. */
static unsigned int rb_group_size(struct rb_page *page, unsigned int pos, unsigned int end)
{
	struct ring_buffer_event *event = (void *)&page->data[pos];
	unsigned int size = rb_event_size(event);

	if (size && event->type_len >= RINGBUF_TYPE_TIME_EXTEND && pos + size < end)
		size += rb_event_size((void *)event + size);
	return size && size <= end - pos ? size : end - pos;
}

/*
 * Copy whole groups from read_pos into @dst while they fit in @room,
 * consuming them. Return: the bytes copied.
 */
static unsigned int rb_page_copy(struct rb_cpu_buffer *cpu_buffer, struct rb_page *dst,
				 unsigned int room)
{
	struct rb_page *src = rb_reader_subbuf_page(cpu_buffer);
	unsigned int end = rb_page_len(src), pos = 0, group, stop;
	u64 stamp = cpu_buffer->read_stamp;

	while (cpu_buffer->read_pos < end) {
		group = rb_group_size(src, cpu_buffer->read_pos, end);
		if (group > room - pos)
			break;
		memcpy(&dst->data[pos], &src->data[cpu_buffer->read_pos], group);
		pos += group;
		for (stop = cpu_buffer->read_pos + group; cpu_buffer->read_pos < stop; )
			rb_reader_pass(cpu_buffer, end);
	}
	if (pos) {
		dst->time_stamp = stamp;
		local_set(&dst->commit, pos);
	}
	return pos;
}

/* The locked part of ring_buffer_read_page(); *@missed gets the loss. */
static int rb_page_out(struct rb_cpu_buffer *cpu_buffer, struct buffer_data_read_page *rpage,
		       unsigned int room, int full, unsigned long *missed)
{
	unsigned int size;
	bool closed;

	if (!rb_reader_refill(cpu_buffer))
		return -1;
	size = rb_committed(cpu_buffer, cpu_buffer->reader_id, &closed);
	/* A mapped or persistent CPU buffer keeps its pages: copy. */
	if (!cpu_buffer->read_pos && closed && size <= room && !rb_pages_pinned(cpu_buffer) &&
	    rpage->order == cpu_buffer->buffer->subbuf_order)
		rb_page_swap(cpu_buffer, rpage, size);
	else if ((full && !closed) || !rb_page_copy(cpu_buffer, rpage->data, room))
		return -1;
	*missed = cpu_buffer->lost_events;
	cpu_buffer->lost_events = 0;
	cpu_buffer->reader_gen++;
	return 0;
}

/*
 * Flag the loss and, with room and a size to give, count it after the
 * data; clear what follows.
 */
static void rb_page_finish(struct buffer_data_read_page *rpage, unsigned long missed)
{
	struct rb_page *page = rpage->data;
	unsigned int cap = rb_rpage_capacity(rpage);
	unsigned long commit = local_read(&page->commit);
	unsigned int size = commit & ~RB_MISSED_MASK;

	if (missed) {
		commit |= RB_MISSED_EVENTS;
		if (missed != RB_LOST_UNKNOWN && cap - size >= sizeof(missed)) {
			memcpy(&page->data[size], &missed, sizeof(missed));
			commit |= RB_MISSED_STORED;
			size += sizeof(missed);
		}
		local_set(&page->commit, commit);
	}
	memset(&page->data[size], 0, cap - size);
}

/**
 * ring_buffer_read_page - move events from the ring buffer into a page
 * @buffer: the ring buffer
 * @data_page: a page from ring_buffer_alloc_read_page()
 * @len: bytes of @data_page to fill, header included
 * @cpu: the CPU to read
 * @full: only succeed once the writer has left the sub-buffer read
 *
 * The events are consumed. When the reader's sub-buffer is unread, complete
 * and fits, it is exchanged with @data_page's memory instead of copied,
 * unless the CPU buffer is mapped into user space or persistent.
 * A loss before the page sets RB_MISSED_EVENTS in its commit word, and with
 * room, RB_MISSED_STORED and the count after the data. The rest is zeroed.
 *
 * Return: 0, the offset of the data in the page, or -1 if nothing was read.
 */
int ring_buffer_read_page(struct trace_buffer *buffer,
			  struct buffer_data_read_page *data_page,
			  size_t len, int cpu, int full)
{
	struct rb_cpu_buffer *cpu_buffer = rb_cpu(buffer, cpu);
	unsigned long missed = 0, flags;
	int ret;

	if (!cpu_buffer || !data_page || !data_page->data || len <= RB_PAGE_HDR)
		return -1;
	len = min_t(size_t, len - RB_PAGE_HDR, rb_rpage_capacity(data_page));
	raw_spin_lock_irqsave(&cpu_buffer->reader_lock, flags);
	ret = rb_page_out(cpu_buffer, data_page, len, full, &missed);
	raw_spin_unlock_irqrestore(&cpu_buffer->reader_lock, flags);
	if (!ret)
		rb_page_finish(data_page, missed);
	return ret;
}
EXPORT_SYMBOL_GPL(ring_buffer_read_page);

/**
 * ring_buffer_read_page_data - the sub-buffer memory of a read page
 * @rpage: the read page
 * Return: the memory, laid out as a sub-buffer.
 */
void *ring_buffer_read_page_data(struct buffer_data_read_page *rpage)
{
	return rpage->data;
}
EXPORT_SYMBOL_GPL(ring_buffer_read_page_data);

/**
 * ring_buffer_read_page_size - the size of a read page
 * @rpage: the read page (may be NULL)
 * Return: its bytes, header included; 0 for NULL.
 */
unsigned int ring_buffer_read_page_size(struct buffer_data_read_page *rpage)
{
	if (!rpage)
		return 0;
	return rb_rpage_capacity(rpage) + RB_PAGE_HDR;
}
EXPORT_SYMBOL_GPL(ring_buffer_read_page_size);

/* ---- header files ---- */

static void rb_print_field(struct trace_seq *s, const char *decl, unsigned int offset,
			   unsigned int size, unsigned int is_signed)
{
	trace_seq_printf(s, "\tfield: %s;\toffset:%u;\tsize:%u;\tsigned:%u;\n",
			 decl, offset, size, is_signed);
}

/**
 * ring_buffer_print_page_header - describe the sub-buffer header
 * @buffer: the ring buffer
 * @s: where to print
 *
 * The text of events/header_page, as libtraceevent parses it. "overwrite"
 * names the missed-events flag in the commit word.
 * Return: nonzero unless @s overflowed.
 */
int ring_buffer_print_page_header(struct trace_buffer *buffer, struct trace_seq *s)
{
	rb_print_field(s, "u64 timestamp", offsetof(struct rb_page, time_stamp),
		       sizeof_field(struct rb_page, time_stamp), is_signed_type(u64));
	rb_print_field(s, "local_t commit", offsetof(struct rb_page, commit),
		       sizeof_field(struct rb_page, commit), is_signed_type(long));
	rb_print_field(s, "int overwrite", offsetof(struct rb_page, commit), 1,
		       is_signed_type(long));
	rb_print_field(s, "char data", RB_PAGE_HDR, rb_capacity(buffer), is_signed_type(char));
	return !trace_seq_has_overflowed(s);
}

/**
 * ring_buffer_print_entry_header - describe the event header
 * @s: where to print
 *
 * The text of events/header_event, as libtraceevent parses it.
 * Return: nonzero unless @s overflowed.
 */
int ring_buffer_print_entry_header(struct trace_seq *s)
{
	trace_seq_printf(s, "# compressed entry header\n"
			 "\ttype_len    :    5 bits\n"
			 "\ttime_delta  :   %d bits\n"
			 "\tarray       :   32 bits\n\n"
			 "\tpadding     : type == %d\n"
			 "\ttime_extend : type == %d\n"
			 "\ttime_stamp : type == %d\n"
			 "\tdata max type_len  == %d\n",
			 RB_DELTA_BITS, RINGBUF_TYPE_PADDING, RINGBUF_TYPE_TIME_EXTEND,
			 RINGBUF_TYPE_TIME_STAMP, RINGBUF_TYPE_DATA_TYPE_LEN_MAX);
	return !trace_seq_has_overflowed(s);
}
