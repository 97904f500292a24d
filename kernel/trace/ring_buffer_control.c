// SPDX-License-Identifier: GPL-2.0
/*
 * Ring buffer control: allocation, resize, sub-buffer order, reset, the
 * snapshot swap, recording control, statistics, clocks, waiting and CPU
 * hotplug. The design is Documentation/trace/ring-buffer-design.rst.
 *
 * What this file relies on:
 *  - Quiescence (M6): once a CPU buffer's record_disabled is raised and a
 *    grace period has passed, no writer is open on it and none can start,
 *    since writers test it with preemption disabled. Under the reader lock
 *    on top of that, nobody else touches the ring, so a control operation
 *    may rewrite write, head, slots, the commit point and reader_id at will.
 *  - buffer->mutex serializes control operations. resize and order changes
 *    also hold cpus_read_lock(), so no CPU buffer appears meanwhile; resets
 *    do not, and act only on the CPU buffers they marked as quiesced.
 *    ring_buffer_swap_cpu() takes no lock: it and the control operations
 *    claim a CPU buffer through cpu_buffer->ctl (RB_CTL_*) with one cmpxchg.
 *    A writer that an interrupt's swap overtook finds cpu_buffer->buffer changed
 *    (rb_begin_write()), and the swap refuses while any writer is open.
 *  - Iterators and mappings raise resize_disabled; it is checked again
 *    under the reader locks before anything changes. A mapped CPU buffer
 *    keeps its pages: neither the swap nor a resize may move them.
 *
 * What it maintains:
 *  - Every ring it builds satisfies R1-R5: after a resize the sub-buffers
 *    keep their order from the head, the head is at vpos 0, the reader owns
 *    id 0 and slots[i] = i + 1; commit and tail coincide.
 *  - A control operation either does all it was asked or, on -ENOMEM or
 *    -EBUSY, changes nothing: everything is allocated before any CPU stops.
 *  - No wake-up is lost (M7): a waiter sets its flag, then checks; if it
 *    still finds nothing it asks for a recheck after a grace period that
 *    begins after its flag was set, when every writer that missed the flag
 *    has finished.
 */

#include <linux/ring_buffer.h>
#include <linux/trace_clock.h>
#include <linux/cpuhotplug.h>
#include <linux/cpu.h>
#include <linux/gfp.h>
#include <linux/highmem.h>
#include <linux/mm.h>
#include <linux/module.h>
#include <linux/poll.h>
#include <linux/oom.h>
#include <linux/slab.h>
#include <linux/panic_notifier.h>
#include <asm/ring_buffer.h>
#include "ring_buffer_internal.h"
#include "trace.h"

/* A ring being prepared, or the old one being freed. */
struct rb_ring {
	unsigned int		nr;
	u32			*slots;
	struct rb_subbuf	*subbufs;
	u32			*from;		/* a resize: each id's old id */
};

/* The next CPU buffer after CPU *@i, skipping one not yet published. */
static struct rb_cpu_buffer *rb_next_cpu(struct trace_buffer *buffer, int *i)
{
	struct rb_cpu_buffer *cpu_buffer;

	while ((*i = cpumask_next(*i, buffer->cpumask)) < nr_cpu_ids) {
		cpu_buffer = rb_cpu(buffer, *i);
		if (cpu_buffer)
			return cpu_buffer;
	}
	return NULL;
}

static unsigned long rb_nr_for(unsigned long size, unsigned int capacity)
{
	/* Rounded up without the overflow of DIV_ROUND_UP() near ULONG_MAX. */
	return max(size / capacity + !!(size % capacity), 2UL);
}

/* ---- sub-buffer memory ---- */

static void rb_ring_free(struct rb_ring *ring, unsigned int order)
{
	unsigned int id;

	if (ring->subbufs) {
		for (id = 0; id <= ring->nr; id++)
			if (ring->subbufs[id].page)
				free_pages((unsigned long)ring->subbufs[id].page, order);
	}
	kvfree(ring->subbufs);
	kvfree(ring->slots);
	kvfree(ring->from);
	memset(ring, 0, sizeof(*ring));
}

/*
 * Arrays for @nr sub-buffers plus the reader's, with pages for the last
 * @fresh ids only: a resize moves the existing sub-buffers into the others.
 */
static int rb_ring_alloc(struct rb_ring *ring, int cpu, unsigned int nr,
			 unsigned int fresh, unsigned int order)
{
	gfp_t gfp = GFP_KERNEL | __GFP_RETRY_MAYFAIL;
	int node = cpu_to_node(cpu);
	bool user = current->mm;
	unsigned int id;

	ring->nr = nr;
	/*
	 * A size written to buffer_size_kb must fail, not make the OOM killer
	 * take everything else: refuse what is plainly not there, and let the
	 * OOM killer pick the writing task itself (and let it be killed).
	 */
	if (((unsigned long)fresh << order) > si_mem_available())
		return -ENOMEM;
	if (user)
		set_current_oom_origin();
	/* kv: a 1 GiB per-CPU buffer needs arrays beyond what kmalloc gives. */
	ring->slots = kvcalloc_node(nr, sizeof(*ring->slots), gfp, node);
	ring->subbufs = kvcalloc_node(nr + 1, sizeof(*ring->subbufs), gfp, node);
	if (!ring->slots || !ring->subbufs)
		goto fail;
	/* A resize moves the existing sub-buffers and records where from. */
	if (fresh <= nr) {
		ring->from = kvcalloc_node(nr + 1, sizeof(*ring->from), gfp, node);
		if (!ring->from)
			goto fail;
	}
	for (id = nr + 1 - fresh; id <= nr; id++) {
		struct page *page = alloc_pages_node(node, gfp | __GFP_COMP | __GFP_ZERO, order);

		if (!page)
			goto fail;
		ring->subbufs[id].page = page_address(page);
		if (user && fatal_signal_pending(current))
			goto fail;
		cond_resched();
	}
	if (user)
		clear_current_oom_origin();
	return 0;
fail:
	if (user)
		clear_current_oom_origin();
	rb_ring_free(ring, order);
	return -ENOMEM;
}

/*
 * The slots of a ring before it is installed, in ring order from vpos 0:
 * an order change's empty ring (its descriptors and pages allocated
 * zeroed; rb_reset_cpu_state() then completes it, the reader's id 0) or
 * a resize's.
 */
static void rb_ring_prepare(struct rb_ring *ring)
{
	unsigned int i;

	for (i = 0; i < ring->nr; i++)
		ring->slots[i] = i + 1;
}

/* Put @ring's arrays into @cpu_buffer and leave the old ones in @ring. */
static void rb_ring_swap(struct rb_cpu_buffer *cpu_buffer, struct rb_ring *ring)
{
	swap(cpu_buffer->nr, ring->nr);
	swap(cpu_buffer->slots, ring->slots);
	swap(cpu_buffer->subbufs, ring->subbufs);
}

/* ---- waiters ---- */

/* Wake every waiter; each one checks its own condition again. */
static void rb_wake_all(struct rb_waiters *w)
{
	WRITE_ONCE(w->pending, false);
	WRITE_ONCE(w->full_pending, false);
	WRITE_ONCE(w->full_min, 0);
	/* Fully ordered: the flags are clear before anyone is woken. */
	atomic_inc_return(&w->seq);
	wake_up_all(&w->wait);
	wake_up_all(&w->full_wait);
}

static void rb_wakeup_work(struct irq_work *work)
{
	rb_wake_all(container_of(work, struct rb_waiters, work));
}

static void rb_waiters_init(struct rb_waiters *w, struct trace_buffer *buffer, int cpu)
{
	init_irq_work(&w->work, rb_wakeup_work);
	init_waitqueue_head(&w->wait);
	init_waitqueue_head(&w->full_wait);
	atomic_set(&w->seq, 0);
	atomic_set(&w->recheck_req, 0);
	w->buffer = buffer;
	w->cpu = cpu;
}

/* ---- per-CPU buffers ---- */

static struct rb_cpu_buffer *rb_alloc_cpu_buffer(struct trace_buffer *buffer, int cpu,
						 unsigned int nr)
{
	struct rb_ring ring = {};
	struct rb_cpu_buffer *cpu_buffer;

	cpu_buffer = kzalloc_node(ALIGN(sizeof(*cpu_buffer), cache_line_size()), GFP_KERNEL,
				  cpu_to_node(cpu));
	if (!cpu_buffer)
		return NULL;
	if (buffer->range_start) {
		/* Pages and slots are the range's (rb_range_attach()). */
		ring.nr = buffer->range_nr;
		ring.subbufs = kvcalloc_node(ring.nr + 1, sizeof(*ring.subbufs), GFP_KERNEL,
					     cpu_to_node(cpu));
		if (!ring.subbufs) {
			kfree(cpu_buffer);
			return NULL;
		}
	} else if (rb_ring_alloc(&ring, cpu, nr, nr + 1, buffer->subbuf_order)) {
		kfree(cpu_buffer);
		return NULL;
	}
	cpu_buffer->buffer = buffer;
	cpu_buffer->cpu = cpu;
	raw_spin_lock_init(&cpu_buffer->reader_lock);
	cpu_buffer->lock_key = buffer->reader_lock_key;
	lockdep_set_class(&cpu_buffer->reader_lock, cpu_buffer->lock_key);
	mutex_init(&cpu_buffer->map_lock);
	rb_ring_swap(cpu_buffer, &ring);
	if (buffer->range_start) {
		if (rb_range_attach(cpu_buffer)) {
			kvfree(cpu_buffer->subbufs);
			kfree(cpu_buffer);
			return NULL;
		}
		/* Its pages must stay where the next boot looks for them. */
		atomic_inc(&cpu_buffer->resize_disabled);
	} else {
		rb_reset_cpu_ring(cpu_buffer, 0);
	}
	return cpu_buffer;
}

static void rb_free_cpu_buffer(struct rb_cpu_buffer *cpu_buffer, unsigned int order)
{
	struct rb_ring ring = {};

	/* Every vma holds the trace file open, and so the buffer. */
	WARN_ON_ONCE(cpu_buffer->mapped);
	rb_ring_swap(cpu_buffer, &ring);
	if (cpu_buffer->range)
		kvfree(ring.subbufs);	/* the pages and slots stay in the range */
	else
		rb_ring_free(&ring, order);
	if (cpu_buffer->spare)
		rb_free_data_page(cpu_buffer->spare);
	kfree(cpu_buffer);
}

/* ---- quiescing ---- */

/*
 * Is @cpu_buffer, read from buffer->cpus[], one that the operation on
 * @buffer quiesced? Its claim cannot say: a CPU buffer of a CPU the
 * operation left alone may be swapped into another buffer, quiesced there,
 * even swapped back, between any two reads. So the operation keeps its own
 * mask (under buffer->mutex), and the CPU buffers it names are pinned: a
 * claimed one cannot be swapped.
 */
static bool rb_is_quiesced(struct trace_buffer *buffer, struct rb_cpu_buffer *cpu_buffer)
{
	rb_test_point(cpu_buffer, RB_TP_QUIESCED);
	return cpumask_test_cpu(cpu_buffer->cpu, buffer->quiesced);
}

/*
 * Under buffer->mutex: claim CPU @i's buffer from the snapshot swap and
 * stop its writers (a grace period later they are all gone). A swap in
 * flight finishes in a few instructions, interrupts off; if it moved the
 * CPU buffer away before we claimed it, claim the one it put in its place.
 */
static void rb_quiesce_cpu(struct trace_buffer *buffer, int i)
{
	struct rb_cpu_buffer *cpu_buffer;

	for (;;) {
		cpu_buffer = rb_cpu(buffer, i);
		if (!rb_ctl_claim(cpu_buffer, RB_CTL_QUIESCED)) {
			cpu_relax();
			continue;
		}
		if (READ_ONCE(buffer->cpus[i]) == cpu_buffer)
			break;
		rb_ctl_release(cpu_buffer);
	}
	atomic_inc(&cpu_buffer->record_disabled);
	cpumask_set_cpu(i, buffer->quiesced);
}

static void rb_resume_cpus(struct trace_buffer *buffer)
{
	struct rb_cpu_buffer *cpu_buffer;
	int i;

	for (i = -1; (cpu_buffer = rb_next_cpu(buffer, &i)); ) {
		if (!rb_is_quiesced(buffer, cpu_buffer))
			continue;
		/* M6, pairs with rb_recording(): recording on shows the rebuilt ring. */
		smp_mb__before_atomic();
		atomic_dec(&cpu_buffer->record_disabled);
		rb_ctl_release(cpu_buffer);
	}
	cpumask_clear(buffer->quiesced);
}

/* The smallest lockdep class key above @above among the quiesced CPUs. */
static struct lock_class_key *rb_next_key(struct trace_buffer *buffer,
					  struct lock_class_key *above)
{
	struct lock_class_key *key = NULL;
	struct rb_cpu_buffer *cpu_buffer;
	int i;

	for (i = -1; (cpu_buffer = rb_next_cpu(buffer, &i)); )
		if (rb_is_quiesced(buffer, cpu_buffer) && cpu_buffer->lock_key > above &&
		    (!key || cpu_buffer->lock_key < key))
			key = cpu_buffer->lock_key;
	return key;
}

/*
 * Take the reader lock of every quiesced CPU, interrupts off: to decide for
 * all of them at once (an iterator makes the whole operation -EBUSY), and
 * for an order change to switch them all at once, so that no reader pairs
 * the new order with old pages. Only constant work per CPU may happen
 * under it. The mutex makes the nesting of one lockdep class legal. A
 * snapshot swap can leave CPU buffers of another buffer here, whose locks
 * are of that buffer's class (one per ring_buffer_alloc() call site): the
 * locks are taken class by class in the order of their keys, so that no
 * two operations take two classes in opposite orders. (The instances never
 * conflict: a quiesced CPU buffer cannot be swapped away.)
 *
 * Sparse cannot count locks taken in a loop: for it the pair takes and
 * drops one context, the quiesced CPUs' reader locks as a whole.
 */
static void rb_lock_quiesced(struct trace_buffer *buffer, unsigned long *flags)
	__acquires(rb_quiesced_locks)
{
	struct lock_class_key *key = NULL;
	struct rb_cpu_buffer *cpu_buffer;
	int i;

	local_irq_save(*flags);
	while ((key = rb_next_key(buffer, key)))
		for (i = -1; (cpu_buffer = rb_next_cpu(buffer, &i)); )
			if (rb_is_quiesced(buffer, cpu_buffer) && cpu_buffer->lock_key == key) {
				raw_spin_lock_nest_lock(&cpu_buffer->reader_lock,
							&buffer->mutex);
				__release(&cpu_buffer->reader_lock);
			}
	__acquire(rb_quiesced_locks);
}

static void rb_unlock_quiesced(struct trace_buffer *buffer, unsigned long flags)
	__releases(rb_quiesced_locks)
{
	struct rb_cpu_buffer *cpu_buffer;
	int i;

	for (i = -1; (cpu_buffer = rb_next_cpu(buffer, &i)); )
		if (rb_is_quiesced(buffer, cpu_buffer)) {
			__acquire(&cpu_buffer->reader_lock);
			raw_spin_unlock(&cpu_buffer->reader_lock);
		}
	__release(rb_quiesced_locks);
	local_irq_restore(flags);
}

/* Under the reader locks: may the quiesced CPUs be rebuilt? */
static bool rb_quiesced_busy(struct trace_buffer *buffer)
{
	struct rb_cpu_buffer *cpu_buffer;
	int i;

	for (i = -1; (cpu_buffer = rb_next_cpu(buffer, &i)); )
		if (rb_is_quiesced(buffer, cpu_buffer) && atomic_read(&cpu_buffer->resize_disabled))
			return true;
	return false;
}

/* ---- resize ---- */

/*
 * A resize of one CPU buffer, planned with interrupts on from the head and
 * reader it names, and installed under the reader lock only if they still
 * hold: quiesced, only a reader can change the ring, and every reader step
 * that moves a data sub-buffer moves the head (rb_swap_head()). The head
 * only moves forward, towards a tail that no writer moves, so it cannot
 * come back to a value it had. The reader's own sub-buffer, which
 * consuming and read_page change in place, is taken when installing.
 */
struct rb_plan {
	u64		head;		/* the head word the plan was made from */
	unsigned int	drop;		/* data sub-buffers dropped by a shrink */
	unsigned int	placed;		/* moved after the reader's */
	unsigned long	drop_events;	/* the data events among them */
	u64		write;		/* the write word for the new ids */
};

/* Under the reader lock: what a plan starts from. */
static void rb_plan_start(struct rb_cpu_buffer *cpu_buffer, struct rb_plan *plan)
{
	rb_publish(cpu_buffer, local64_read(&cpu_buffer->write));
	plan->head = rb_head_word(cpu_buffer);
}

/*
 * Under the reader lock: did a reader move the head since rb_plan_start()?
 * The head word alone tells: a reader that takes a new sub-buffer swaps it
 * out of the head slot, so reader_id never changes without the head.
 */
static bool rb_plan_holds(struct rb_cpu_buffer *cpu_buffer, struct rb_plan *plan)
{
	return rb_head_word(cpu_buffer) == plan->head;
}

/*
 * Copy @cpu_buffer's data sub-buffers into @ring's arrays (whose last ids
 * already hold the new pages of a growth) in ring order from the head of
 * @plan, starting at id 1: the head moves to vpos 0. A shrink drops free
 * sub-buffers first, then the oldest data. With interrupts on a reader may
 * move the head meanwhile and the copies may be torn: rb_plan_holds()
 * then finds the plan stale, and it is made again.
 */
static void rb_plan_ring(struct rb_cpu_buffer *cpu_buffer, struct rb_ring *ring,
			 struct rb_plan *plan)
{
	unsigned int old_nr = cpu_buffer->nr, nr = ring->nr;
	struct rb_subbuf *old = cpu_buffer->subbufs;
	unsigned int vpos = rb_pair_vpos(plan->head);
	u64 w = local64_read(&cpu_buffer->write);
	unsigned int data, i;
	u32 id;

	/* Sub-buffers from the head to the tail; none if the reader has the tail. */
	data = rb_vpos_dist(cpu_buffer, vpos, rb_w_vpos(w)) + 1;
	if (data > old_nr)
		data = 0;
	plan->drop = data > nr ? data - nr : 0;
	plan->placed = min(old_nr - plan->drop, nr);
	plan->drop_events = 0;

	for (i = 0; i < plan->drop; i++) {
		plan->drop_events += rb_sb_events(cpu_buffer, &old[rb_slot_id(cpu_buffer, vpos)]);
		vpos = rb_vpos_next(cpu_buffer, vpos);
	}
	for (i = 1; i <= plan->placed; i++) {
		id = rb_slot_id(cpu_buffer, vpos);
		/* A torn copy is never installed: see rb_plan_holds(). */
		ring->subbufs[i] = data_race(old[id]);
		ring->from[i] = id;
		vpos = rb_vpos_next(cpu_buffer, vpos);
	}

	data -= plan->drop;
	if (data)
		plan->write = rb_wword(data - 1, data, rb_w_off(w));
	else
		plan->write = rb_wword(2 * nr - 1, 0, rb_w_off(w));
}

/*
 * Under the reader lock, with @plan holding: put @ring's arrays in place,
 * the reader's sub-buffer as id 0, in constant time. The old arrays are
 * left in @ring; ring->from[] names the descriptors that moved.
 */
static void rb_plan_install(struct rb_cpu_buffer *cpu_buffer, struct rb_ring *ring,
			    struct rb_plan *plan)
{
	u64 w = local64_read(&cpu_buffer->write);

	ring->subbufs[0] = cpu_buffer->subbufs[cpu_buffer->reader_id];
	ring->from[0] = cpu_buffer->reader_id;
	/* Dropped data counts like an eviction. */
	local_add(plan->drop_events, &cpu_buffer->overrun);
	local_sub((unsigned long)plan->drop * rb_capacity(cpu_buffer->buffer),
		  &cpu_buffer->entries_bytes);
	local_add(plan->drop, &cpu_buffer->subbufs_evicted);
	/* The stamp record still describes the last event: keep deltas going. */
	if (cpu_buffer->stamp_end == w)
		cpu_buffer->stamp_end = plan->write;

	rb_ring_swap(cpu_buffer, ring);
	cpu_buffer->reader_id = 0;
	/* An iterator that started without buffer->mutex (kdb) restarts. */
	cpu_buffer->reader_gen++;
	atomic64_set(&cpu_buffer->head, rb_pair(0, cpu_buffer->nr));
	local64_set(&cpu_buffer->write, plan->write);
	/* Quiesced: the release only keeps M2's form for readers to come. */
	atomic64_set_release(&cpu_buffer->commit,
			     rb_pair(rb_w_vpos(plan->write), rb_w_id(plan->write)));
}

/*
 * Resize one quiesced CPU buffer into @ring (prepared by rb_ring_prepare()).
 * The copying happens with interrupts on; under the reader lock only
 * constant work, unless readers spoil RB_PLAN_TRIES plans in a row: a
 * reader that drains this CPU on another one while the plan is made (its
 * length is that of the ring) moves the head every few microseconds, and
 * then the last plan is made with interrupts off, as long as before. The
 * old arrays, with the pages that did not move, are left in @ring.
 */
static void rb_resize_cpu(struct rb_cpu_buffer *cpu_buffer, struct rb_ring *ring)
{
	struct rb_plan plan;
	unsigned long flags;
	unsigned int i;
	int tries;

	for (tries = 0; tries < RB_PLAN_TRIES; tries++) {
		raw_spin_lock_irqsave(&cpu_buffer->reader_lock, flags);
		rb_plan_start(cpu_buffer, &plan);
		raw_spin_unlock_irqrestore(&cpu_buffer->reader_lock, flags);
		rb_plan_ring(cpu_buffer, ring, &plan);
		raw_spin_lock_irqsave(&cpu_buffer->reader_lock, flags);
		if (rb_plan_holds(cpu_buffer, &plan))
			goto install;
		raw_spin_unlock_irqrestore(&cpu_buffer->reader_lock, flags);
		cond_resched();
	}
	/* Readers keep taking sub-buffers: plan with them held off. */
	raw_spin_lock_irqsave(&cpu_buffer->reader_lock, flags);
	rb_plan_start(cpu_buffer, &plan);
	rb_plan_ring(cpu_buffer, ring, &plan);
install:
	rb_plan_install(cpu_buffer, ring, &plan);
	raw_spin_unlock_irqrestore(&cpu_buffer->reader_lock, flags);

	/* The old arrays are private now: keep the moved pages from being freed. */
	for (i = 0; i <= plan.placed; i++)
		ring->subbufs[ring->from[i]].page = NULL;
}

/*
 * Stop the CPUs that have a ring in @rings and decide, under all their
 * reader locks, whether an iterator appeared meanwhile (then nothing
 * changes). An order change (!@resize, @rings empty) installs every ring
 * there, in constant time each, and switches the order with them. A resize
 * then resizes one CPU at a time (rb_resize_cpu()). Only an iterator that
 * cannot wait for buffer->mutex (kdb's) can start after the decision;
 * rb_plan_install() makes it restart. @rings are prepared by
 * rb_ring_prepare(); afterwards they hold what is to be freed. Under
 * buffer->mutex and cpus_read_lock().
 */
static int rb_install_rings(struct trace_buffer *buffer, struct rb_ring *rings,
			    bool resize, unsigned int order)
{
	struct rb_cpu_buffer *cpu_buffer;
	unsigned long flags;
	bool busy;
	int i;

	for (i = -1; (cpu_buffer = rb_next_cpu(buffer, &i)); )
		if (rings[i].subbufs)
			rb_quiesce_cpu(buffer, i);
	synchronize_rcu();

	rb_lock_quiesced(buffer, &flags);
	busy = rb_quiesced_busy(buffer);
	if (!busy && !resize) {
		WRITE_ONCE(buffer->subbuf_order, order);
		WRITE_ONCE(buffer->subbuf_size, PAGE_SIZE << order);
		WRITE_ONCE(buffer->max_data_size, rb_capacity(buffer) - RB_LEN_TIME);
		for (i = -1; (cpu_buffer = rb_next_cpu(buffer, &i)); ) {
			if (!rb_is_quiesced(buffer, cpu_buffer))
				continue;
			rb_ring_swap(cpu_buffer, &rings[i]);
			rb_reset_cpu_state(cpu_buffer, 0);
		}
	}
	rb_unlock_quiesced(buffer, flags);

	/* The CPUs this resize quiesced are those with a ring in @rings. */
	for (i = -1; resize && !busy && (cpu_buffer = rb_next_cpu(buffer, &i)); )
		if (rings[i].subbufs)
			rb_resize_cpu(cpu_buffer, &rings[i]);

	rb_resume_cpus(buffer);
	return busy ? -EBUSY : 0;
}

static void rb_free_rings(struct rb_ring *rings, unsigned int order)
{
	int i;

	for (i = 0; i < nr_cpu_ids; i++)
		rb_ring_free(&rings[i], order);
	kfree(rings);
}

static int rb_resize_locked(struct trace_buffer *buffer, unsigned long size, int cpu_id)
{
	unsigned int order = buffer->subbuf_order;
	unsigned long nr = rb_nr_for(size, rb_capacity(buffer));
	struct rb_cpu_buffer *cpu_buffer;
	struct rb_ring *rings;
	bool any = false;
	int i, err = 0;

	if (nr > RB_MAX_SUBBUFS)
		return -EINVAL;
	rings = kcalloc(nr_cpu_ids, sizeof(*rings), GFP_KERNEL);
	if (!rings)
		return -ENOMEM;
	for (i = -1; (cpu_buffer = rb_next_cpu(buffer, &i)); ) {
		if (cpu_id != RING_BUFFER_ALL_CPUS && i != cpu_id)
			continue;
		if (atomic_read(&cpu_buffer->resize_disabled)) {
			err = -EBUSY;
			break;
		}
		if (cpu_buffer->nr == nr)
			continue;
		err = rb_ring_alloc(&rings[i], i, nr,
				    nr > cpu_buffer->nr ? nr - cpu_buffer->nr : 0, order);
		if (err)
			break;
		rb_ring_prepare(&rings[i]);
		any = true;
	}
	if (!err && any)
		err = rb_install_rings(buffer, rings, true, order);
	rb_free_rings(rings, order);
	return err;
}

/**
 * ring_buffer_resize - resize the ring buffer
 * @buffer: the buffer to resize
 * @size: the new size in bytes of each per-CPU buffer (at least two sub-buffers)
 * @cpu_id: the CPU to resize, or RING_BUFFER_ALL_CPUS
 *
 * Unread data is kept, the oldest going first if it no longer fits. Writes
 * made while the buffer is being rebuilt fail.
 *
 * Return: 0 on success; -ENODEV for a CPU that cannot exist, -EINVAL for an
 * invalid CPU or a size too large, -EBUSY while an iterator is open or the
 * CPU buffer is mapped, -ENOMEM. On error nothing changed. A possible CPU that has no buffer yet
 * is left alone (it gets one when it comes up), as trace.c expects.
 */
int ring_buffer_resize(struct trace_buffer *buffer, unsigned long size, int cpu_id)
{
	int err;

	if (!buffer)
		return 0;
	if (cpu_id != RING_BUFFER_ALL_CPUS) {
		if (cpu_id < 0)
			return -EINVAL;
		if (cpu_id >= nr_cpu_ids || !cpu_possible(cpu_id))
			return -ENODEV;
	}

	cpus_read_lock();
	mutex_lock(&buffer->mutex);
	if (cpu_id == RING_BUFFER_ALL_CPUS || rb_cpu(buffer, cpu_id))
		err = rb_resize_locked(buffer, size, cpu_id);
	else
		err = 0;
	mutex_unlock(&buffer->mutex);
	cpus_read_unlock();
	return err;
}
EXPORT_SYMBOL_GPL(ring_buffer_resize);

/**
 * ring_buffer_size - the size of a per-CPU buffer
 * @buffer: the ring buffer
 * @cpu: the CPU
 *
 * Return: the bytes of event data the CPU's ring holds, 0 if it has none.
 */
unsigned long ring_buffer_size(struct trace_buffer *buffer, int cpu)
{
	struct rb_cpu_buffer *cpu_buffer = rb_cpu(buffer, cpu);

	return cpu_buffer ? (unsigned long)READ_ONCE(cpu_buffer->nr) * rb_capacity(buffer) : 0;
}
EXPORT_SYMBOL_GPL(ring_buffer_size);

/* ---- sub-buffer order ---- */

/**
 * ring_buffer_subbuf_size_get - the size of one sub-buffer
 * @buffer: the ring buffer
 *
 * Return: the sub-buffer size in bytes, header included.
 */
int ring_buffer_subbuf_size_get(struct trace_buffer *buffer)
{
	return READ_ONCE(buffer->subbuf_size);
}
EXPORT_SYMBOL_GPL(ring_buffer_subbuf_size_get);

/**
 * ring_buffer_subbuf_order_get - the page order of the sub-buffers
 * @buffer: the ring buffer
 *
 * Return: the order (0 is one page), or -EINVAL without a buffer.
 */
int ring_buffer_subbuf_order_get(struct trace_buffer *buffer)
{
	return buffer ? READ_ONCE(buffer->subbuf_order) : -EINVAL;
}
EXPORT_SYMBOL_GPL(ring_buffer_subbuf_order_get);

static int rb_order_locked(struct trace_buffer *buffer, unsigned int order)
{
	unsigned int old_order = buffer->subbuf_order;
	unsigned int old_cap = rb_capacity(buffer);
	unsigned int cap = (PAGE_SIZE << order) - RB_PAGE_HDR;
	struct rb_cpu_buffer *cpu_buffer;
	struct rb_ring *rings;
	int i, err = 0;

	if (order == old_order)
		return 0;
	rings = kcalloc(nr_cpu_ids, sizeof(*rings), GFP_KERNEL);
	if (!rings)
		return -ENOMEM;
	for (i = -1; (cpu_buffer = rb_next_cpu(buffer, &i)); ) {
		u64 nr = max_t(u64, DIV_ROUND_UP_ULL((u64)old_cap * cpu_buffer->nr, cap), 2);

		if (atomic_read(&cpu_buffer->resize_disabled))
			err = -EBUSY;
		else if (nr > RB_MAX_SUBBUFS)
			err = -EINVAL;
		else
			err = rb_ring_alloc(&rings[i], i, nr, nr + 1, order);
		if (err)
			break;
		rb_ring_prepare(&rings[i]);
	}
	if (err) {
		rb_free_rings(rings, order);
		return err;
	}
	err = rb_install_rings(buffer, rings, false, order);
	/* On success @rings holds the old pages, on failure the new ones. */
	rb_free_rings(rings, err ? order : old_order);
	return err;
}

/**
 * ring_buffer_subbuf_order_set - change the size of the sub-buffers
 * @buffer: the ring buffer
 * @order: the page order of a sub-buffer, 0 to RB_MAX_ORDER
 *
 * The total size of each per-CPU buffer is kept (rounded up to whole
 * sub-buffers); its data is dropped and its counters are reset.
 *
 * Return: 0 on success, -EINVAL for a bad order, -EBUSY while an iterator
 * is open or a CPU buffer is mapped, -ENOMEM. On error nothing changed.
 */
int ring_buffer_subbuf_order_set(struct trace_buffer *buffer, int order)
{
	int err;

	/* The write word keeps offsets in RB_OFF_BITS bits. */
	if (!buffer || order < 0 || order > RB_MAX_ORDER ||
	    (PAGE_SIZE << order) > (1UL << RB_OFF_BITS))
		return -EINVAL;
	cpus_read_lock();
	mutex_lock(&buffer->mutex);
	err = rb_order_locked(buffer, order);
	mutex_unlock(&buffer->mutex);
	cpus_read_unlock();
	return err;
}
EXPORT_SYMBOL_GPL(ring_buffer_subbuf_order_set);

/* ---- reset ---- */

/*
 * While mapped, the sub-buffer user space holds: the one meta->reader.id
 * names, which a kernel reader (trace_pipe) may have put back into the
 * ring since. Else the reader's. Under reader_lock.
 */
static u32 rb_held_subbuf(struct rb_cpu_buffer *cpu_buffer)
{
	if (!cpu_buffer->meta)
		return cpu_buffer->reader_id;
	return cpu_buffer->map_subbuf[cpu_buffer->meta->reader.id];
}

/* Reset every quiesced CPU buffer. Under buffer->mutex. */
static void rb_reset_quiesced(struct trace_buffer *buffer)
{
	struct rb_cpu_buffer *cpu_buffer;
	unsigned long flags;
	u32 held;
	int i;

	synchronize_rcu();
	for (i = -1; (cpu_buffer = rb_next_cpu(buffer, &i)); ) {
		if (!rb_is_quiesced(buffer, cpu_buffer))
			continue;
		raw_spin_lock_irqsave(&cpu_buffer->reader_lock, flags);
		/*
		 * A client such as libtracefs takes a reader.id other than the
		 * one it holds for new data and reads it from its start: the
		 * reader keeps the page it holds, now empty, and so its place.
		 */
		held = rb_held_subbuf(cpu_buffer);
		rb_reset_cpu_ring(cpu_buffer, held);
		rb_meta_update(cpu_buffer);
		raw_spin_unlock_irqrestore(&cpu_buffer->reader_lock, flags);
	}
	rb_resume_cpus(buffer);
}

/**
 * ring_buffer_reset_cpu - empty one per-CPU buffer
 * @buffer: the ring buffer
 * @cpu: the CPU whose buffer is emptied and whose counters are cleared
 */
void ring_buffer_reset_cpu(struct trace_buffer *buffer, int cpu)
{
	mutex_lock(&buffer->mutex);
	if (rb_cpu(buffer, cpu)) {
		rb_quiesce_cpu(buffer, cpu);
		rb_reset_quiesced(buffer);
	}
	mutex_unlock(&buffer->mutex);
}
EXPORT_SYMBOL_GPL(ring_buffer_reset_cpu);

static void rb_reset_cpus(struct trace_buffer *buffer, bool online_only)
{
	struct rb_cpu_buffer *cpu_buffer;
	int i;

	mutex_lock(&buffer->mutex);
	for (i = -1; (cpu_buffer = rb_next_cpu(buffer, &i)); )
		if (!online_only || cpu_online(i))
			rb_quiesce_cpu(buffer, i);
	rb_reset_quiesced(buffer);
	mutex_unlock(&buffer->mutex);
}

/* Offline CPUs keep what they recorded before they went down. */
void ring_buffer_reset_online_cpus(struct trace_buffer *buffer)
{
	rb_reset_cpus(buffer, true);
}

/**
 * ring_buffer_reset - empty every per-CPU buffer
 * @buffer: the ring buffer
 */
void ring_buffer_reset(struct trace_buffer *buffer)
{
	rb_reset_cpus(buffer, false);
}
EXPORT_SYMBOL_GPL(ring_buffer_reset);

/* ---- snapshot swap ---- */

#ifdef CONFIG_RING_BUFFER_ALLOW_SWAP
static bool rb_recording_off(struct trace_buffer *buffer, struct rb_cpu_buffer *cpu_buffer)
{
	return atomic_read(&buffer->record_disabled) || atomic_read(&cpu_buffer->record_disabled);
}

/**
 * ring_buffer_swap_cpu - exchange one CPU's buffer between two ring buffers
 * @buffer_a: one ring buffer
 * @buffer_b: the other
 * @cpu: the CPU whose buffers are exchanged
 *
 * Used for snapshots; may be called with interrupts off, normally on @cpu.
 *
 * Return: 0 on success, -EINVAL if the CPU or the geometry differ, -EAGAIN
 * if recording is off on either side, -EBUSY if either is being written,
 * resized or mapped (trace.c refuses snapshots while mapped, so the last
 * also warns).
 */
int ring_buffer_swap_cpu(struct trace_buffer *buffer_a, struct trace_buffer *buffer_b, int cpu)
{
	struct rb_cpu_buffer *cpu_buffer_a = rb_cpu(buffer_a, cpu);
	struct rb_cpu_buffer *cpu_buffer_b = rb_cpu(buffer_b, cpu);
	int ret = -EBUSY;

	if (!cpu_buffer_a || !cpu_buffer_b)
		return -EINVAL;
	if (rb_recording_off(buffer_a, cpu_buffer_a) || rb_recording_off(buffer_b, cpu_buffer_b))
		return -EAGAIN;
	/* Claim both from the control operations (see cpu_buffer->ctl). */
	if (!rb_ctl_claim(cpu_buffer_a, RB_CTL_SWAPPING))
		return -EBUSY;
	if (!rb_ctl_claim(cpu_buffer_b, RB_CTL_SWAPPING)) {
		rb_ctl_release(cpu_buffer_a);
		return -EBUSY;
	}
	/* Mapped or persistent pages stay where user space or the next boot looks. */
	if (WARN_ON_ONCE(rb_pages_pinned(cpu_buffer_a) || rb_pages_pinned(cpu_buffer_b)))
		goto release;
	/*
	 * The geometry only now: an order change or resize that held either
	 * claim may have finished just before ours, and none can start now.
	 */
	if (cpu_buffer_a->nr != cpu_buffer_b->nr ||
	    buffer_a->subbuf_order != buffer_b->subbuf_order) {
		ret = -EINVAL;
		goto release;
	}
	atomic_inc(&cpu_buffer_a->record_disabled);
	atomic_inc(&cpu_buffer_b->record_disabled);
	smp_mb__after_atomic();	/* M6: raised before we look at the writers below */
	/*
	 * An open writer, or one between its recursion guard and counting
	 * itself in open_count (ctx), or a ring_buffer_nest_start() section
	 * (ctx_shift), would end on the other CPU buffer.
	 */
	if (local_read(&cpu_buffer_a->open_count) || local_read(&cpu_buffer_b->open_count) ||
	    cpu_buffer_a->ctx || cpu_buffer_b->ctx ||
	    cpu_buffer_a->ctx_shift || cpu_buffer_b->ctx_shift ||
	    READ_ONCE(buffer_a->cpus[cpu]) != cpu_buffer_a ||
	    READ_ONCE(buffer_b->cpus[cpu]) != cpu_buffer_b)
		goto enable;

	WRITE_ONCE(buffer_a->cpus[cpu], cpu_buffer_b);
	WRITE_ONCE(buffer_b->cpus[cpu], cpu_buffer_a);
	WRITE_ONCE(cpu_buffer_a->buffer, buffer_b);
	WRITE_ONCE(cpu_buffer_b->buffer, buffer_a);
	/* Data came in on both sides: let the CPU's waiters look again. */
	irq_work_queue(&buffer_a->cpu_waiters[cpu].work);
	irq_work_queue(&buffer_b->cpu_waiters[cpu].work);
	ret = 0;
enable:
	/* M6, pairs with rb_recording(): recording on shows the new pointers. */
	smp_mb__before_atomic();
	atomic_dec(&cpu_buffer_a->record_disabled);
	atomic_dec(&cpu_buffer_b->record_disabled);
release:
	rb_ctl_release(cpu_buffer_a);
	rb_ctl_release(cpu_buffer_b);
	return ret;
}
EXPORT_SYMBOL_GPL(ring_buffer_swap_cpu);
#endif /* CONFIG_RING_BUFFER_ALLOW_SWAP */

/* ---- recording control ---- */

/**
 * ring_buffer_record_disable - stop writes to the buffer, counted
 * @buffer: the ring buffer
 *
 * Each call needs a ring_buffer_record_enable(). Writers already past the
 * check finish; synchronize_rcu() waits for them.
 */
void ring_buffer_record_disable(struct trace_buffer *buffer)
{
	/* Below RB_BUFFER_OFF: the count and the switch never mix. */
	atomic_inc(&buffer->record_disabled);
}
EXPORT_SYMBOL_GPL(ring_buffer_record_disable);

/**
 * ring_buffer_record_enable - undo one ring_buffer_record_disable()
 * @buffer: the ring buffer
 */
void ring_buffer_record_enable(struct trace_buffer *buffer)
{
	/* Writers read it with no barrier: the next write sees it soon enough. */
	atomic_dec(&buffer->record_disabled);
}
EXPORT_SYMBOL_GPL(ring_buffer_record_enable);

static void rb_record_switch(struct trace_buffer *buffer, bool on)
{
	int old = atomic_read(&buffer->record_disabled), new;

	do {
		new = on ? old & ~RB_BUFFER_OFF : old | RB_BUFFER_OFF;
	} while (!atomic_try_cmpxchg(&buffer->record_disabled, &old, new));
}

/**
 * ring_buffer_record_off - switch recording off
 * @buffer: the ring buffer
 *
 * A switch, not a count: one ring_buffer_record_on() undoes any number of
 * calls. Independent of ring_buffer_record_disable().
 */
void ring_buffer_record_off(struct trace_buffer *buffer)
{
	rb_record_switch(buffer, false);
}
EXPORT_SYMBOL_GPL(ring_buffer_record_off);

/**
 * ring_buffer_record_on - switch recording back on
 * @buffer: the ring buffer
 *
 * Writes resume only if no ring_buffer_record_disable() is outstanding.
 */
void ring_buffer_record_on(struct trace_buffer *buffer)
{
	rb_record_switch(buffer, true);
}
EXPORT_SYMBOL_GPL(ring_buffer_record_on);

/* Does the buffer accept writes: neither switched off nor disabled? */
bool ring_buffer_record_is_on(struct trace_buffer *buffer)
{
	return atomic_read(&buffer->record_disabled) == 0;
}

/* Is the switch on, whether or not recording is disabled for now? */
bool ring_buffer_record_is_set_on(struct trace_buffer *buffer)
{
	return (atomic_read(&buffer->record_disabled) & RB_BUFFER_OFF) == 0;
}

/**
 * ring_buffer_record_disable_cpu - stop writes to one CPU's buffer, counted
 * @buffer: the ring buffer
 * @cpu: the CPU
 */
void ring_buffer_record_disable_cpu(struct trace_buffer *buffer, int cpu)
{
	struct rb_cpu_buffer *cpu_buffer = rb_cpu(buffer, cpu);

	if (cpu_buffer)
		atomic_inc(&cpu_buffer->record_disabled);
}
EXPORT_SYMBOL_GPL(ring_buffer_record_disable_cpu);

/**
 * ring_buffer_record_enable_cpu - undo one ring_buffer_record_disable_cpu()
 * @buffer: the ring buffer
 * @cpu: the CPU
 */
void ring_buffer_record_enable_cpu(struct trace_buffer *buffer, int cpu)
{
	struct rb_cpu_buffer *cpu_buffer = rb_cpu(buffer, cpu);

	if (cpu_buffer)
		atomic_dec(&cpu_buffer->record_disabled);
}
EXPORT_SYMBOL_GPL(ring_buffer_record_enable_cpu);

/**
 * ring_buffer_change_overwrite - choose what a full buffer does
 * @buffer: the ring buffer
 * @val: nonzero to overwrite the oldest data, zero to drop new events
 *
 * Writers read the mode each time they move to another sub-buffer.
 */
void ring_buffer_change_overwrite(struct trace_buffer *buffer, int val)
{
	unsigned int flags;

	mutex_lock(&buffer->mutex);
	flags = buffer->flags & ~RB_FL_OVERWRITE;
	WRITE_ONCE(buffer->flags, val ? flags | RB_FL_OVERWRITE : flags);
	mutex_unlock(&buffer->mutex);
}
EXPORT_SYMBOL_GPL(ring_buffer_change_overwrite);

/* ---- statistics ---- */

/* A writer-side counter of @cpu's buffer, at @off in struct rb_cpu_buffer. */
static unsigned long rb_counter(struct trace_buffer *buffer, int cpu, size_t off)
{
	struct rb_cpu_buffer *cpu_buffer = rb_cpu(buffer, cpu);

	return cpu_buffer ? local_read((local_t *)((char *)cpu_buffer + off)) : 0;
}

static unsigned long rb_entries(struct rb_cpu_buffer *cpu_buffer)
{
	return local_read(&cpu_buffer->entries) - local_read(&cpu_buffer->overrun) -
	       READ_ONCE(cpu_buffer->read_events);
}

static unsigned long rb_overrun(struct rb_cpu_buffer *cpu_buffer)
{
	return local_read(&cpu_buffer->overrun);
}

/* @get summed over the CPU buffers: not a snapshot, writers run meanwhile. */
static unsigned long rb_sum(struct trace_buffer *buffer,
			    unsigned long (*get)(struct rb_cpu_buffer *cpu_buffer))
{
	struct rb_cpu_buffer *cpu_buffer;
	unsigned long sum = 0;
	int i;

	for (i = -1; (cpu_buffer = rb_next_cpu(buffer, &i)); )
		sum += get(cpu_buffer);
	return sum;
}

/**
 * ring_buffer_entries_cpu - events in one CPU's buffer not yet read
 * @buffer: the ring buffer
 * @cpu: the CPU
 *
 * Return: committed events, less those overwritten and those consumed.
 */
unsigned long ring_buffer_entries_cpu(struct trace_buffer *buffer, int cpu)
{
	struct rb_cpu_buffer *cpu_buffer = rb_cpu(buffer, cpu);

	return cpu_buffer ? rb_entries(cpu_buffer) : 0;
}
EXPORT_SYMBOL_GPL(ring_buffer_entries_cpu);

/**
 * ring_buffer_entries - events in the whole buffer not yet read
 * @buffer: the ring buffer
 *
 * Return: the sum of ring_buffer_entries_cpu() over the CPUs (not a snapshot).
 */
unsigned long ring_buffer_entries(struct trace_buffer *buffer)
{
	return rb_sum(buffer, rb_entries);
}
EXPORT_SYMBOL_GPL(ring_buffer_entries);

/**
 * ring_buffer_overrun_cpu - events one CPU's buffer overwrote
 * @buffer: the ring buffer
 * @cpu: the CPU
 *
 * Return: events lost to overwrite mode (and to shrinking resizes).
 */
unsigned long ring_buffer_overrun_cpu(struct trace_buffer *buffer, int cpu)
{
	return rb_counter(buffer, cpu, offsetof(struct rb_cpu_buffer, overrun));
}
EXPORT_SYMBOL_GPL(ring_buffer_overrun_cpu);

/**
 * ring_buffer_overruns - events the whole buffer overwrote
 * @buffer: the ring buffer
 *
 * Return: the sum of ring_buffer_overrun_cpu() over the CPUs.
 */
unsigned long ring_buffer_overruns(struct trace_buffer *buffer)
{
	return rb_sum(buffer, rb_overrun);
}
EXPORT_SYMBOL_GPL(ring_buffer_overruns);

/**
 * ring_buffer_commit_overrun_cpu - writes refused on a ring full of open events
 * @buffer: the ring buffer
 * @cpu: the CPU
 *
 * Return: events dropped in overwrite mode: nested writers had filled the ring.
 */
unsigned long ring_buffer_commit_overrun_cpu(struct trace_buffer *buffer, int cpu)
{
	return rb_counter(buffer, cpu, offsetof(struct rb_cpu_buffer, commit_overrun));
}
EXPORT_SYMBOL_GPL(ring_buffer_commit_overrun_cpu);

/**
 * ring_buffer_dropped_events_cpu - writes refused because the buffer was full
 * @buffer: the ring buffer
 * @cpu: the CPU
 *
 * Return: events dropped in producer/consumer mode.
 */
unsigned long ring_buffer_dropped_events_cpu(struct trace_buffer *buffer, int cpu)
{
	return rb_counter(buffer, cpu, offsetof(struct rb_cpu_buffer, dropped_events));
}
EXPORT_SYMBOL_GPL(ring_buffer_dropped_events_cpu);

/**
 * ring_buffer_read_events_cpu - events consumed from one CPU's buffer
 * @buffer: the ring buffer
 * @cpu: the CPU
 *
 * Return: events consumed by reads since the last reset.
 */
unsigned long ring_buffer_read_events_cpu(struct trace_buffer *buffer, int cpu)
{
	struct rb_cpu_buffer *cpu_buffer = rb_cpu(buffer, cpu);

	return cpu_buffer ? READ_ONCE(cpu_buffer->read_events) : 0;
}
EXPORT_SYMBOL_GPL(ring_buffer_read_events_cpu);

/**
 * ring_buffer_bytes_cpu - bytes in one CPU's buffer not yet read
 * @buffer: the ring buffer
 * @cpu: the CPU
 *
 * Return: unread bytes; a sub-buffer the writer has left counts as full.
 */
unsigned long ring_buffer_bytes_cpu(struct trace_buffer *buffer, int cpu)
{
	struct rb_cpu_buffer *cpu_buffer = rb_cpu(buffer, cpu);

	if (!cpu_buffer)
		return 0;
	return local_read(&cpu_buffer->entries_bytes) - READ_ONCE(cpu_buffer->read_bytes);
}
EXPORT_SYMBOL_GPL(ring_buffer_bytes_cpu);

/* Under the reader lock: the time of the oldest unread event, or 0. */
static u64 rb_oldest_ts(struct rb_cpu_buffer *cpu_buffer)
{
	u32 id;

	if (!rb_unread(cpu_buffer, &id))
		return 0;
	if (id == cpu_buffer->reader_id)
		return cpu_buffer->read_stamp;
	return READ_ONCE(cpu_buffer->subbufs[id].page->time_stamp);
}

/**
 * ring_buffer_oldest_event_ts - the time of the oldest event in a CPU's buffer
 * @buffer: the ring buffer
 * @cpu: the CPU
 *
 * Return: the time stamp of the oldest unread event, 0 if there is none.
 */
u64 ring_buffer_oldest_event_ts(struct trace_buffer *buffer, int cpu)
{
	struct rb_cpu_buffer *cpu_buffer = rb_cpu(buffer, cpu);
	unsigned long flags;
	u64 ts;

	if (!cpu_buffer)
		return 0;
	raw_spin_lock_irqsave(&cpu_buffer->reader_lock, flags);
	ts = rb_oldest_ts(cpu_buffer);
	raw_spin_unlock_irqrestore(&cpu_buffer->reader_lock, flags);
	return ts;
}
EXPORT_SYMBOL_GPL(ring_buffer_oldest_event_ts);

/* Sub-buffers the writer has filled and left that the reader has not taken. */
size_t ring_buffer_nr_dirty_pages(struct trace_buffer *buffer, int cpu)
{
	struct rb_cpu_buffer *cpu_buffer = rb_cpu(buffer, cpu);

	return cpu_buffer ? rb_dirty(cpu_buffer) : 0;
}

/**
 * rb_meta_update - show the reader's position and the counters to user space
 * @cpu_buffer: the per-CPU buffer; the caller holds its reader_lock
 *
 * Does nothing unless the CPU buffer is mapped. Writers never call this:
 * the meta page changes only at the first map, at GET_READER and at a
 * reset. pages_lost and pages_touched (6.12's Reserved1 and Reserved2)
 * count the sub-buffers lost to overwriting and those the writer entered.
 */
void rb_meta_update(struct rb_cpu_buffer *cpu_buffer)
{
	struct trace_buffer_meta *meta = cpu_buffer->meta;

	if (!meta)
		return;
	meta->reader.id = cpu_buffer->map_id[cpu_buffer->reader_id];
	/*
	 * User space now holds the reader's sub-buffer; one taken from the
	 * ring after this is new to it even if its id comes back (ids go
	 * round the ring while kernel readers take sub-buffers).
	 */
	cpu_buffer->map_handed = cpu_buffer->subbufs_taken;
	meta->reader.read = cpu_buffer->read_pos;
	meta->reader.lost_events = cpu_buffer->lost_events;
	meta->entries = local_read(&cpu_buffer->entries);
	meta->overrun = local_read(&cpu_buffer->overrun);
	meta->read = cpu_buffer->read_events;
	meta->pages_lost = local_read(&cpu_buffer->subbufs_evicted);
	meta->pages_touched = local_read(&cpu_buffer->subbufs_entered);
	/* Where the kernel's and user space's views of a page do not share a cache. */
	flush_kernel_vmap_range(meta, PAGE_SIZE);
}

/* ---- clocks ---- */

/**
 * ring_buffer_time_stamp - read the buffer's clock
 * @buffer: the ring buffer
 *
 * Return: the current time of the clock events are stamped with.
 */
u64 ring_buffer_time_stamp(struct trace_buffer *buffer)
{
	typeof(buffer->clock) clock = READ_ONCE(buffer->clock);
	u64 ts;

	/* Some trace clocks are per-CPU. */
	preempt_disable_notrace();
	ts = clock();
	preempt_enable_notrace();
	return ts;
}
EXPORT_SYMBOL_GPL(ring_buffer_time_stamp);

/**
 * ring_buffer_normalize_time_stamp - convert a time stamp to clock time
 * @buffer: the ring buffer
 * @cpu: the CPU the stamp comes from
 * @ts: the stamp, converted in place
 *
 * Stamps are stored in clock units, so there is nothing to convert.
 */
void ring_buffer_normalize_time_stamp(struct trace_buffer *buffer, int cpu, u64 *ts)
{
}
EXPORT_SYMBOL_GPL(ring_buffer_normalize_time_stamp);

/* The caller resets the buffer if stamps of two clocks must not mix. */
void ring_buffer_set_clock(struct trace_buffer *buffer, u64 (*clock)(void))
{
	WRITE_ONCE(buffer->clock, clock);
}

/* Absolute mode: a TIME_STAMP before every event. */
void ring_buffer_set_time_stamp_abs(struct trace_buffer *buffer, bool abs)
{
	WRITE_ONCE(buffer->time_stamp_abs, abs);
}

bool ring_buffer_time_stamp_abs(struct trace_buffer *buffer)
{
	return READ_ONCE(buffer->time_stamp_abs);
}

/**
 * ring_buffer_max_event_size - the largest payload a reservation accepts
 * @buffer: the ring buffer
 *
 * Return: the payload bytes; 8 fewer in absolute time stamp mode, where
 * every event carries a TIME_STAMP.
 */
unsigned long ring_buffer_max_event_size(struct trace_buffer *buffer)
{
	return rb_max_payload(buffer, ring_buffer_time_stamp_abs(buffer));
}
EXPORT_SYMBOL_GPL(ring_buffer_max_event_size);

/* ---- waiting and waking ---- */

/*
 * Has @cpu_buffer (or, if NULL, any CPU of @buffer) what a waiter for @full wants?
 * A CPU buffer moved by a swap is asked through the buffer it is in now.
 */
static bool rb_has_data(struct trace_buffer *buffer, int cpu, int full)
{
	struct rb_cpu_buffer *cpu_buffer;
	unsigned long flags;
	bool hit;

	if (cpu == RING_BUFFER_ALL_CPUS)
		return !ring_buffer_empty(buffer);
	if (!full)
		return !ring_buffer_empty_cpu(buffer, cpu);
	/* Looked up each time: a snapshot swap may have moved it. */
	cpu_buffer = rb_cpu(buffer, cpu);
	if (!cpu_buffer)
		return false;
	/* The reader lock keeps the pages it reads from a resize. */
	raw_spin_lock_irqsave(&cpu_buffer->reader_lock, flags);
	hit = rb_watermark_hit(cpu_buffer, full);
	raw_spin_unlock_irqrestore(&cpu_buffer->reader_lock, flags);
	return hit;
}

/* What writers read (M7); a stale flag costs one needless wake-up. */
static void rb_set_pending(struct rb_waiters *w, int full)
{
	int min = READ_ONCE(w->full_min);

	if (!full) {
		WRITE_ONCE(w->pending, true);
		return;
	}
	do {
		if (min && min <= full)
			break;
	} while (!try_cmpxchg(&w->full_min, &min, full));
	WRITE_ONCE(w->full_pending, true);
}

/* Would a writer have woken @w's waiters? Used by the recheck. */
static bool rb_waiters_hit(struct rb_waiters *w)
{
	if (READ_ONCE(w->pending) && rb_has_data(w->buffer, w->cpu, 0))
		return true;
	return READ_ONCE(w->full_pending) && rb_has_data(w->buffer, w->cpu, READ_ONCE(w->full_min));
}

static void rb_recheck_fn(struct rcu_head *head);

static void rb_queue_recheck(struct rb_waiters *w)
{
	/* Every request counted here set its flag before this call_rcu(). */
	w->recheck_covered = atomic_read(&w->recheck_req);
	call_rcu(&w->recheck, rb_recheck_fn);
}

static void rb_recheck_fn(struct rcu_head *head)
{
	struct rb_waiters *w = container_of(head, struct rb_waiters, recheck);

	if (rb_waiters_hit(w))
		rb_wake_all(w);
	/* Requests made after the call_rcu() need a grace period of their own. */
	if (atomic_sub_return(w->recheck_covered, &w->recheck_req))
		rb_queue_recheck(w);
}

static void rb_request_recheck(struct rb_waiters *w)
{
	if (atomic_inc_return(&w->recheck_req) == 1)
		rb_queue_recheck(w);
}

/* Waiting ends once the rechecks queued for it have run. */
static void rb_waiters_sync(struct rb_waiters *w)
{
	irq_work_sync(&w->work);
	/*
	 * A recheck may queue another while rcu_barrier() runs. The acquire
	 * pairs with rb_recheck_fn()'s atomic_sub_return(): a zero count
	 * means the last callback is done with @w.
	 */
	while (atomic_read_acquire(&w->recheck_req))
		rcu_barrier();
}

struct rb_wait {
	struct rb_waiters	*w;
	int			full;
	int			seq;
	ring_buffer_cond_fn	cond;
	void			*data;
};

static bool rb_wait_cond(struct rb_wait *wt)
{
	struct rb_waiters *w = wt->w;

	if (rb_has_data(w->buffer, w->cpu, wt->full))
		return true;
	/* The acquire pairs with rb_wake_all()'s atomic_inc_return(). */
	if (wt->cond ? wt->cond(wt->data) : atomic_read_acquire(&wt->w->seq) != wt->seq)
		return true;
	rb_set_pending(wt->w, wt->full);
	/* M7: the flag is visible before we look; writers may miss it anyway. */
	smp_mb();
	if (rb_has_data(w->buffer, w->cpu, wt->full))
		return true;
	rb_request_recheck(wt->w);
	return false;
}

/**
 * ring_buffer_wait - wait for data in the ring buffer
 * @buffer: the ring buffer
 * @cpu: the CPU to wait on, or RING_BUFFER_ALL_CPUS for data on any CPU
 * @full: for one CPU, the percentage of sub-buffers that must be full (0: any data)
 * @cond: returns true to stop waiting; NULL returns at the first wake-up
 * @data: passed to @cond
 *
 * Return: 0 when woken, -ENODEV for a CPU without a buffer, -ERESTARTSYS on
 * a signal.
 */
int ring_buffer_wait(struct trace_buffer *buffer, int cpu, int full,
		     ring_buffer_cond_fn cond, void *data)
{
	struct rb_wait wt = { .cond = cond, .data = data, .w = &buffer->waiters };

	if (cpu != RING_BUFFER_ALL_CPUS) {
		if (!rb_cpu(buffer, cpu))
			return -ENODEV;
		wt.w = &buffer->cpu_waiters[cpu];
		wt.full = full;
	}
	wt.seq = atomic_read_acquire(&wt.w->seq);	/* as in rb_wait_cond() */
	if (wt.full)
		return wait_event_interruptible(wt.w->full_wait, rb_wait_cond(&wt));
	return wait_event_interruptible(wt.w->wait, rb_wait_cond(&wt));
}

/**
 * ring_buffer_poll_wait - poll for data in the ring buffer
 * @buffer: the ring buffer
 * @cpu: the CPU to poll, or RING_BUFFER_ALL_CPUS for any CPU
 * @filp: the file being polled
 * @poll_table: the poll table
 * @full: for one CPU, the percentage of sub-buffers that must be full (0: any data)
 *
 * Return: EPOLLIN | EPOLLRDNORM if there is data, EPOLLERR for a CPU without
 * a buffer, else 0.
 */
__poll_t ring_buffer_poll_wait(struct trace_buffer *buffer, int cpu,
			       struct file *filp, poll_table *poll_table, int full)
{
	struct rb_waiters *w = &buffer->waiters;

	if (cpu != RING_BUFFER_ALL_CPUS) {
		if (!rb_cpu(buffer, cpu))
			return EPOLLERR;
		w = &buffer->cpu_waiters[cpu];
	} else {
		full = 0;
	}
	poll_wait(filp, full ? &w->full_wait : &w->wait, poll_table);
	/*
	 * A watermark already reached arms nothing: trace-cmd polls with one
	 * before every splice, and a flag left set would cost the next commit
	 * an irq_work that nobody waits for. A poll for any data arms even
	 * when ready: an edge-triggered epoll waits on without polling again,
	 * for the next event after the reader has emptied the buffer.
	 */
	if (full && rb_has_data(buffer, cpu, full))
		return EPOLLIN | EPOLLRDNORM;
	rb_set_pending(w, full);
	smp_mb();	/* M7, as in rb_wait_cond() */
	if (rb_has_data(buffer, cpu, full))
		return EPOLLIN | EPOLLRDNORM;
	rb_request_recheck(w);
	return 0;
}

/**
 * ring_buffer_wake_waiters - wake the waiters of a buffer
 * @buffer: the ring buffer
 * @cpu: the CPU whose waiters to wake, or RING_BUFFER_ALL_CPUS for all
 *
 * Waiters check their condition again; those waiting without one return.
 * Callable from any context.
 */
void ring_buffer_wake_waiters(struct trace_buffer *buffer, int cpu)
{
	int i;

	if (!buffer)
		return;
	if (cpu != RING_BUFFER_ALL_CPUS) {
		if (rb_cpu(buffer, cpu))
			irq_work_queue(&buffer->cpu_waiters[cpu].work);
		return;
	}
	for_each_cpu(i, buffer->cpumask)
		irq_work_queue(&buffer->cpu_waiters[i].work);
	irq_work_queue(&buffer->waiters.work);
}

/* ---- allocation, hotplug ---- */

/* A persistent buffer on a panic: stop recording, make sure the range reaches memory. */
static int rb_range_panic(struct notifier_block *nb, unsigned long event, void *data)
{
	struct trace_buffer *buffer = container_of(nb, struct trace_buffer, flush_nb);

	ring_buffer_record_off(buffer);
	arch_ring_buffer_flush_range(buffer->range_start,
				     buffer->range_start + nr_cpu_ids * buffer->range_chunk);
	return NOTIFY_DONE;
}

/*
 * A buffer of @size bytes per CPU in sub-buffers of @order or, with
 * @range_size, one laid out in the memory from @start instead
 * (ring_buffer_persist.c).
 */
static struct trace_buffer *rb_alloc(unsigned long size, unsigned int flags, unsigned int order,
				     unsigned long start, unsigned long range_size,
				     struct lock_class_key *key)
{
	struct trace_buffer *buffer;
	unsigned long nr = 0;
	int cpu;

	buffer = kzalloc(ALIGN(sizeof(*buffer), cache_line_size()), GFP_KERNEL);
	if (!buffer)
		return NULL;
	buffer->cpus = kcalloc(nr_cpu_ids, sizeof(*buffer->cpus), GFP_KERNEL);
	buffer->cpu_waiters = kcalloc(nr_cpu_ids, sizeof(*buffer->cpu_waiters), GFP_KERNEL);
	if (!buffer->cpus || !buffer->cpu_waiters ||
	    !zalloc_cpumask_var(&buffer->cpumask, GFP_KERNEL) ||
	    !zalloc_cpumask_var(&buffer->quiesced, GFP_KERNEL))
		goto fail_free;

	buffer->flags = flags;
	buffer->reader_lock_key = key;
	buffer->clock = trace_clock_local;
	buffer->subbuf_order = order;
	buffer->subbuf_size = PAGE_SIZE << order;
	buffer->max_data_size = rb_capacity(buffer) - RB_LEN_TIME;
	mutex_init(&buffer->mutex);
	rb_waiters_init(&buffer->waiters, buffer, RING_BUFFER_ALL_CPUS);
	for (cpu = 0; cpu < nr_cpu_ids; cpu++)
		rb_waiters_init(&buffer->cpu_waiters[cpu], buffer, cpu);

	if (range_size) {
		if (rb_range_layout(buffer, start, range_size)) {
			pr_warn("ring buffer: range of %lu bytes at %lx: starts at 0, wraps, or has room for fewer than 3 sub-buffers per CPU\n",
				range_size, start);
			goto fail_free;
		}
	} else {
		nr = rb_nr_for(size, rb_capacity(buffer));
		if (nr > RB_MAX_SUBBUFS)
			goto fail_free;
	}
	/* The hotplug callback sizes the other CPUs like this one. */
	cpu = raw_smp_processor_id();
	buffer->cpus[cpu] = rb_alloc_cpu_buffer(buffer, cpu, nr);
	if (!buffer->cpus[cpu])
		goto fail_free;
	cpumask_set_cpu(cpu, buffer->cpumask);

	if (cpuhp_state_add_instance(CPUHP_TRACE_RB_PREPARE, &buffer->node) < 0)
		goto fail_free_cpus;
	if (range_size) {
		buffer->flush_nb.notifier_call = rb_range_panic;
		atomic_notifier_chain_register(&panic_notifier_list, &buffer->flush_nb);
	}
	return buffer;

fail_free_cpus:
	for_each_cpu(cpu, buffer->cpumask)
		rb_free_cpu_buffer(buffer->cpus[cpu], buffer->subbuf_order);
fail_free:
	free_cpumask_var(buffer->quiesced);
	free_cpumask_var(buffer->cpumask);
	kfree(buffer->cpu_waiters);
	kfree(buffer->cpus);
	kfree(buffer);
	return NULL;
}

/**
 * __ring_buffer_alloc - allocate a ring buffer
 * @size: the size in bytes of each per-CPU buffer
 * @flags: RB_FL_OVERWRITE to overwrite old data when full
 * @key: the lockdep class of the reader locks
 *
 * Each online CPU gets a buffer now, CPUs that come up later when they do.
 *
 * Return: the buffer, or NULL.
 */
struct trace_buffer *__ring_buffer_alloc(unsigned long size, unsigned int flags,
					 struct lock_class_key *key)
{
	return rb_alloc(size, flags, 0, 0, 0, key);
}
EXPORT_SYMBOL_GPL(__ring_buffer_alloc);

/**
 * __ring_buffer_alloc_range - allocate a ring buffer that outlives a boot
 * @size: ignored: the range decides
 * @flags: RB_FL_OVERWRITE to overwrite old data when full
 * @order: the page order of a sub-buffer
 * @start: the first byte of memory that the next boot finds again
 * @range_size: its length
 * @key: the lockdep class of the reader locks
 *
 * Each possible CPU gets an equal part of the range. Whatever the last boot
 * left there is checked and its whole sub-buffers are readable again (see
 * ring_buffer_persist.c). The buffer cannot be resized, change its order
 * or be swapped; ring_buffer_read_page() copies from it. It can be mapped
 * if the range is in the linear map.
 *
 * Return: the buffer, or NULL for a bad order, a range at address 0 or
 * past the top of the address space, or one too small for three
 * sub-buffers per possible CPU.
 */
struct trace_buffer *__ring_buffer_alloc_range(unsigned long size, unsigned int flags, int order,
					       unsigned long start, unsigned long range_size,
					       struct lock_class_key *key)
{
	if (order < 0 || order > RB_MAX_ORDER || (PAGE_SIZE << order) > (1UL << RB_OFF_BITS) ||
	    !range_size)
		return NULL;
	return rb_alloc(size, flags, order, start, range_size, key);
}

/**
 * ring_buffer_free - free a ring buffer
 * @buffer: the buffer; nobody may write, read or wait on it any more
 */
void ring_buffer_free(struct trace_buffer *buffer)
{
	unsigned int order = buffer->subbuf_order;
	int cpu;

	if (buffer->range_start)
		atomic_notifier_chain_unregister(&panic_notifier_list, &buffer->flush_nb);
	cpuhp_state_remove_instance(CPUHP_TRACE_RB_PREPARE, &buffer->node);
	rb_waiters_sync(&buffer->waiters);
	for (cpu = 0; cpu < nr_cpu_ids; cpu++)
		rb_waiters_sync(&buffer->cpu_waiters[cpu]);
	for_each_cpu(cpu, buffer->cpumask)
		rb_free_cpu_buffer(buffer->cpus[cpu], order);
	free_cpumask_var(buffer->quiesced);
	free_cpumask_var(buffer->cpumask);
	kfree(buffer->cpu_waiters);
	kfree(buffer->cpus);
#if IS_ENABLED(CONFIG_RING_BUFFER_TEST_POINTS)
	kfree(buffer->test_hook);
#endif
	kfree(buffer);
}
EXPORT_SYMBOL_GPL(ring_buffer_free);

/*
 * CPUHP_TRACE_RB_PREPARE callback: give a CPU coming up its buffer, sized
 * like the others if they all agree, else minimal. Buffers of CPUs that go
 * down stay, with what they recorded.
 */
int trace_rb_cpu_prepare(unsigned int cpu, struct hlist_node *node)
{
	struct trace_buffer *buffer = container_of(node, struct trace_buffer, node);
	struct rb_cpu_buffer *cpu_buffer;
	unsigned int nr = 0;
	int i;

	if (cpumask_test_cpu(cpu, buffer->cpumask))
		return 0;
	for (i = -1; (cpu_buffer = rb_next_cpu(buffer, &i)); ) {
		if (nr && cpu_buffer->nr != nr) {
			nr = 2;
			break;
		}
		nr = cpu_buffer->nr;
	}
	cpu_buffer = rb_alloc_cpu_buffer(buffer, cpu, max(nr, 2U));
	if (!cpu_buffer) {
		pr_warn("ring buffer: no memory for the buffer of CPU %u\n", cpu);
		return -ENOMEM;
	}
	WRITE_ONCE(buffer->cpus[cpu], cpu_buffer);
	/* The buffer and pointer before the bit: pairs with rb_cpu()'s smp_rmb(). */
	smp_wmb();
	cpumask_set_cpu(cpu, buffer->cpumask);
	return 0;
}
