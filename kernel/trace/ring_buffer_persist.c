// SPDX-License-Identifier: GPL-2.0
/*
 * Persistent ring buffers: a buffer in memory its caller provides
 * (reserve_mem=, trace_instance=name@...), where the next boot finds what
 * this one recorded. The design is Documentation/trace/ring-buffer-design.rst,
 * "Persistence".
 *
 * The layout: each possible CPU owns a chunk of range_chunk bytes, which
 * holds a struct rb_range_meta with its slots[nr], then, from the next
 * sub-buffer boundary, nr + 1 sub-buffers in id order. An id is a page's
 * place in its chunk, so nothing in the chunk is a pointer and the range
 * may come back at any address.
 *
 * What the run-time code keeps true in the chunk, at every instant:
 *  P1 slots[] is the ring itself (cpu_buffer->slots points into the meta),
 *     so it names every id but one; the one it does not name is the
 *     reader's sub-buffer. A reader swap is never half visible here: the
 *     id it takes stays named until the reader's old id replaces it, and a
 *     writer that enters the reader's old sub-buffer in between (R1 gives
 *     it) stores that id first (rb_move_tail()). One exception: a late
 *     settle of a stalled evictor (rb_evict_head()) can be a lap stale;
 *     slots[] is then wrong behind the head until the next head move, and
 *     a crash in that window makes the next boot format this CPU (the
 *     design document, "Taking the head").
 *  P2 meta->saved_commit is the commit point, moved before the length of
 *     the new commit sub-buffer is published (rb_range_commit()), and a
 *     page's length is zeroed before the writer enters it (rb_move_tail()).
 *     So a page of the ring with a length is the commit sub-buffer or lies
 *     behind it, within nr slots, in the order it was written. The one
 *     exception: a sub-buffer just evicted and not yet entered, in the
 *     slot after the commit point, keeps its length and whole events, the
 *     oldest in the ring (older than the reader's too, if the reader took
 *     the head after that eviction).
 *
 * What the next boot assumes: nothing. Every field of the meta and every
 * byte of every page is checked before it is used (rb_range_meta_ok(),
 * rb_range_check()); a torn sub-buffer is dropped alone and reported as
 * a loss of no known size; only a meta that cannot be trusted resets its CPU.
 */

#include <kunit/visibility.h>
#include <linux/ring_buffer.h>
#include <linux/seq_file.h>
#include <linux/slab.h>
#include <linux/mm.h>
#include <linux/overflow.h>

#include "ring_buffer_internal.h"
#include "trace.h"

/* Anchors for the delta of a relocated kernel: one in text, one in data. */
static int rb_range_data_anchor;
#define RB_TEXT_ADDR	((u64)(unsigned long)rb_range_attach)
#define RB_DATA_ADDR	((u64)(unsigned long)&rb_range_data_anchor)

static unsigned int rb_range_meta_size(unsigned int nr)
{
	return struct_size_t(struct rb_range_meta, slots, nr);
}

/* Sub-buffers the meta of @nr slots takes before the first page. */
static unsigned int rb_range_meta_subbufs(unsigned int nr, unsigned int subbuf_size)
{
	return DIV_ROUND_UP(rb_range_meta_size(nr), subbuf_size);
}

/**
 * rb_range_layout - divide a range into per-CPU chunks
 * @buffer: the buffer being allocated, with its sub-buffer order set
 * @start: the first byte of the range
 * @size: its length
 *
 * The range is used from its first sub-buffer boundary; each possible CPU
 * gets an equal chunk, as many sub-buffers as fit after its meta.
 *
 * Return: 0, or -EINVAL if the range starts at 0 (a range_start of 0 means
 * no range), runs past the top of the address space, or a chunk holds
 * fewer than three sub-buffers.
 */
int rb_range_layout(struct trace_buffer *buffer, unsigned long start, unsigned long size)
{
	unsigned long first = ALIGN(start, buffer->subbuf_size), chunk, per, end;
	unsigned int nr;

	if (!start || check_add_overflow(start, size, &end))
		return -EINVAL;
	if (first < start || size <= first - start)
		return -EINVAL;
	chunk = ALIGN_DOWN((size - (first - start)) / nr_cpu_ids, buffer->subbuf_size);
	per = chunk / buffer->subbuf_size;
	if (per < 4)
		return -EINVAL;
	/* The meta and its slots take a sub-buffer or more, the rest are pages. */
	nr = min_t(unsigned long, per - 2, RB_MAX_SUBBUFS);
	while (nr >= 2 && rb_range_meta_subbufs(nr, buffer->subbuf_size) + nr + 1 > per)
		nr--;
	if (nr < 2)
		return -EINVAL;
	buffer->range_start = first;
	buffer->range_chunk = chunk;
	buffer->range_nr = nr;
	return 0;
}
EXPORT_SYMBOL_IF_KUNIT(rb_range_layout);

static struct rb_range_meta *rb_range_meta_of(struct trace_buffer *buffer, int cpu)
{
	return (void *)(buffer->range_start + cpu * buffer->range_chunk);
}

/* Point @cpu_buffer's descriptors and slots into its chunk. */
static void rb_range_pages(struct rb_cpu_buffer *cpu_buffer)
{
	struct trace_buffer *buffer = cpu_buffer->buffer;
	struct rb_range_meta *meta = rb_range_meta_of(buffer, cpu_buffer->cpu);
	unsigned int id, skip = rb_range_meta_subbufs(cpu_buffer->nr, buffer->subbuf_size);
	void *pages = (void *)meta + skip * buffer->subbuf_size;

	for (id = 0; id <= cpu_buffer->nr; id++)
		cpu_buffer->subbufs[id].page = pages + id * buffer->subbuf_size;
	cpu_buffer->slots = meta->slots;
	cpu_buffer->range = meta;
}

/* ---- checking what the last boot left ---- */

/*
 * Is the meta what this boot would have written for this CPU, apart from
 * the commit point and the slots (checked by the caller) and the count of
 * dropped sub-buffers (any value)? The deltas must be whole pages, as a
 * relocated kernel's are.
 */
static bool rb_range_meta_ok(struct rb_cpu_buffer *cpu_buffer, struct rb_range_meta *meta)
{
	return meta->magic == RB_RANGE_MAGIC &&
	       meta->meta_size == rb_range_meta_size(cpu_buffer->nr) &&
	       meta->subbuf_size == cpu_buffer->buffer->subbuf_size &&
	       meta->nr == cpu_buffer->nr && meta->cpu == cpu_buffer->cpu &&
	       PAGE_ALIGNED(RB_TEXT_ADDR - meta->text_addr) &&
	       PAGE_ALIGNED(RB_DATA_ADDR - meta->data_addr);
}

/*
 * P1: the slots name nr distinct ids out of nr + 1. Return the one they do
 * not name (the reader's), or -1.
 */
static int rb_range_reader(struct rb_cpu_buffer *cpu_buffer, unsigned long *seen)
{
	unsigned int nr = cpu_buffer->nr, i;
	u32 id;

	bitmap_zero(seen, nr + 1);
	for (i = 0; i < nr; i++) {
		id = READ_ONCE(cpu_buffer->slots[i]);
		if (id > nr || __test_and_set_bit(id, seen))
			return -1;
	}
	return find_first_zero_bit(seen, nr + 1);
}

enum rb_range_page { RB_RANGE_EMPTY, RB_RANGE_TORN, RB_RANGE_WHOLE };

/*
 * Check one of the last boot's sub-buffers the way readers will walk it:
 * a length within the capacity, with no flag bit; events that end exactly
 * at it, each of a size the writer makes and none the zero padding that
 * would end the page early; time that never goes back. *@events gets the
 * data events of a whole page. The @reader's sub-buffer may carry the two
 * flags a mapped reader sets on the one it takes after a loss (the count
 * it may store lies past the length, unread); the ring never holds them.
 */
static enum rb_range_page rb_range_check(struct rb_page *page, unsigned int cap, bool reader,
					 unsigned int *events)
{
	unsigned long len = local_read(&page->commit);
	u64 ts = page->time_stamp, next;
	unsigned int off = 0, size, n = 0;
	struct ring_buffer_event *e;

	if (reader)
		len &= ~(unsigned long)RB_MISSED_MASK;
	if (!len)
		return RB_RANGE_EMPTY;
	if (len > cap)
		return RB_RANGE_TORN;
	while (off < len) {
		e = (void *)&page->data[off];
		if (len - off < RB_EVENT_HDR)
			return RB_RANGE_TORN;
		/* Every kind but a small data event has its array[0] in its size. */
		if (len - off < 2 * RB_EVENT_HDR && (!rb_is_data(e) || !e->type_len))
			return RB_RANGE_TORN;
		/* The zero padding that ends a page early has size 0: torn too. */
		size = rb_event_size(e);
		if (size < 2 * RB_EVENT_HDR || size % RB_ARCH_ALIGN || size > len - off ||
		    (rb_is_data(e) && !e->type_len && size < 3 * RB_EVENT_HDR))
			return RB_RANGE_TORN;
		next = rb_time_after(page, e, ts);
		if (next < ts)
			return RB_RANGE_TORN;
		ts = next;
		n += rb_is_data(e);
		off += size;
	}
	*events = n;
	return RB_RANGE_WHOLE;
}

/* ---- attaching ---- */

/* A fresh meta and an empty ring: what the last boot left is gone. */
static void rb_range_format(struct rb_cpu_buffer *cpu_buffer)
{
	struct rb_range_meta *meta = cpu_buffer->range;

	meta->magic = RB_RANGE_MAGIC;
	meta->meta_size = rb_range_meta_size(cpu_buffer->nr);
	meta->subbuf_size = cpu_buffer->buffer->subbuf_size;
	meta->nr = cpu_buffer->nr;
	meta->cpu = cpu_buffer->cpu;
	meta->pad = 0;
	meta->text_addr = RB_TEXT_ADDR;
	meta->data_addr = RB_DATA_ADDR;
	meta->dropped = 0;
	rb_reset_cpu_ring(cpu_buffer, 0);
}

/* Which slot holds the newest of the ring's data: the answers besides a slot. */
#define RB_RANGE_READER_NEWEST	(-1)	/* the reader has it; the ring at most a freed one */
#define RB_RANGE_UNKNOWN	(-2)

/*
 * Is the page in slot @slot whole (rb_range_check(), into @state by id)?
 * The ring's shape is judged on whole pages: a torn one counts as empty.
 */
static bool rb_range_whole(struct rb_cpu_buffer *cpu_buffer, const u8 *state,
			   unsigned int slot)
{
	return state[cpu_buffer->slots[slot]] == RB_RANGE_WHOLE;
}

/* The time stamp of the page in slot @slot. */
static u64 rb_range_stamp(struct rb_cpu_buffer *cpu_buffer, unsigned int slot)
{
	return cpu_buffer->subbufs[cpu_buffer->slots[slot]].page->time_stamp;
}

/*
 * The slot of the newest sub-buffer in the ring: the commit point in the
 * meta, which must name a slot and the sub-buffer there, or the reader's
 * (the reader took the writer's sub-buffer, and the ring holds at most the
 * one sub-buffer an eviction freed). Anything else is a meta that cannot
 * be trusted. Damaged pages do not move it: each is judged alone.
 */
static int rb_range_newest(struct rb_cpu_buffer *cpu_buffer, const u8 *state, u32 reader,
			   u64 commit)
{
	unsigned int nr = cpu_buffer->nr, cs = rb_pair_vpos(commit) % nr, i, whole = 0;

	if (rb_pair_vpos(commit) >= 2 * nr)
		return RB_RANGE_UNKNOWN;
	if (rb_pair_id(commit) == reader) {
		for (i = 0; i < nr; i++)
			whole += rb_range_whole(cpu_buffer, state, i);
		return whole > 1 ? RB_RANGE_UNKNOWN : RB_RANGE_READER_NEWEST;
	}
	return cpu_buffer->slots[cs] == rb_pair_id(commit) ? cs : RB_RANGE_UNKNOWN;
}

/*
 * The sub-buffers that may hold the last boot's events, oldest first, into
 * @order; returns how many (nr + 1). The ring's slots follow each other
 * from the one after the newest round to it (P2); the reader's was taken
 * from the head before them, so it comes first. The exception is the
 * sub-buffer an eviction just freed, which the writer had not entered yet:
 * it is the oldest in the ring, and older than the reader's if the reader
 * took the head after the eviction. Then the reader's empty old page (or
 * an empty one it read) follows it, which nothing else leaves between a
 * whole page and the commit point; the time stamps must agree (a page
 * that lost its length looks the same). With the newest on the reader's,
 * the ring holds at most such a freed one, older again.
 */
static unsigned int rb_range_order(struct rb_cpu_buffer *cpu_buffer, const u8 *state,
				   u32 reader, int newest, u32 *order)
{
	unsigned int nr = cpu_buffer->nr, n = 0, i, start, first;
	bool freed_first;

	if (newest == RB_RANGE_READER_NEWEST) {
		for (i = 0; i < nr; i++)
			order[n++] = cpu_buffer->slots[i];
		order[n++] = reader;
		return n;
	}
	start = newest + 1;
	for (first = 0; first < nr - 1; first++)
		if (rb_range_whole(cpu_buffer, state, (start + first) % nr))
			break;
	freed_first = first + 1 < nr - 1 &&
		      !rb_range_whole(cpu_buffer, state, (start + first + 1) % nr) &&
		      (state[reader] != RB_RANGE_WHOLE ||
		       rb_range_stamp(cpu_buffer, (start + first) % nr) <=
		       cpu_buffer->subbufs[reader].page->time_stamp);
	if (!freed_first)
		order[n++] = reader;
	for (i = 0; i < nr; i++) {
		order[n++] = cpu_buffer->slots[(start + i) % nr];
		if (freed_first && i == first)
			order[n++] = reader;
	}
	return n;
}

/*
 * Rebuild the ring from what the last boot left, in the state a reader
 * would find just after taking the oldest whole sub-buffer: it becomes the
 * reader's, the other whole ones follow in the ring from slot 0, and the
 * writer starts this boot on a sub-buffer of its own, so that time never
 * goes back within a page. If every sub-buffer is whole, the oldest gives
 * way for it, as this boot's first event would have made it do. A torn
 * sub-buffer is moved out of the ring; the whole one after it carries
 * torn_before, so that the read reaching it reports a loss of no known
 * size and an iterator reports a drop there. Each torn one still counts
 * as one overwritten event, and the events of one that gave way are lost
 * too: losses reach the reader as overwritten events do, through
 * events_before. Not yet published: nobody else can see the CPU buffer.
 */
static void rb_range_rebuild(struct rb_cpu_buffer *cpu_buffer, const u8 *state, u32 *order,
			     unsigned int n, unsigned long *kept)
{
	struct rb_range_meta *meta = cpu_buffer->range;
	unsigned int nr = cpu_buffer->nr, cap = rb_capacity(cpu_buffer->buffer);
	unsigned long before = 0, lost = 0, torn = 0;
	unsigned int i, k = 0, slot;
	bool gap = false;
	u32 *ids = order + nr + 1;	/* the caller's scratch: nr + 1 more */
	struct rb_subbuf *sb;
	u32 f;

	bitmap_zero(kept, nr + 1);
	for (i = 0; i < n; i++) {
		sb = &cpu_buffer->subbufs[order[i]];
		switch (state[order[i]]) {
		case RB_RANGE_EMPTY:
			continue;
		case RB_RANGE_TORN:
			torn++;
			before++;
			lost++;
			gap = true;
			continue;
		case RB_RANGE_WHOLE:
			break;
		}
		if (k == nr) {
			/* Every sub-buffer is whole (so none torn): the oldest makes room. */
			lost += local_read(&cpu_buffer->subbufs[ids[0]].events);
			__clear_bit(ids[0], kept);
			memmove(ids, ids + 1, (nr - 1) * sizeof(*ids));
			k--;
		}
		ids[k++] = order[i];
		__set_bit(order[i], kept);
		sb->events_before = before;
		sb->torn_before = gap;
		gap = false;
		before += local_read(&sb->events);	/* counted by the scan */
	}
	meta->dropped += torn;
	if (torn)
		pr_info_ratelimited("ring buffer: CPU %d: %lu torn sub-buffers of the last boot dropped\n",
				    cpu_buffer->cpu, torn);
	if (!k) {
		rb_reset_cpu_ring(cpu_buffer, 0);
		/* Nothing kept: the gap is before this boot's first sub-buffer. */
		cpu_buffer->subbufs[cpu_buffer->slots[0]].torn_before = torn != 0;
		return;
	}

	for (i = 0; i <= nr; i++) {
		sb = &cpu_buffer->subbufs[i];
		sb->gen++;
		if (test_bit(i, kept)) {
			/* A loss the last boot's mapping was told of is not this boot's. */
			sb->data_end = rb_page_len(sb->page);
			local_set(&sb->page->commit, sb->data_end);
			sb->tail_bytes = cap - sb->data_end;
			continue;
		}
		/* Free again, torn or not: the next boot must find it empty (P2). */
		rb_sb_clear(sb);
	}
	/*
	 * The ring: the other whole ones, then the writer's, then the free
	 * ones. Written after the free pages lost their lengths, so that a
	 * crash in between finds the old ring with empty pages. A crash in the
	 * few stores that rewrite the slots, early in a boot, can leave them
	 * in no usable order: the boot after starts afresh, or reads whole
	 * pages out of order.
	 */
	for (slot = 0, i = 1; i < k; i++)
		cpu_buffer->slots[slot++] = ids[i];
	for (i = 0; i <= nr; i++)
		if (!test_bit(i, kept))
			cpu_buffer->slots[slot++] = i;
	/* Every id but the reader's has its slot (P1); the writer's is k - 1. */
	f = cpu_buffer->slots[k - 1];

	/* Torn ones after the newest whole one: reported when the writer's is taken. */
	cpu_buffer->subbufs[f].events_before = before;
	cpu_buffer->subbufs[f].torn_before = gap;

	cpu_buffer->reader_id = ids[0];
	atomic64_set(&cpu_buffer->head, rb_pair(0, cpu_buffer->slots[nr - 1]));
	local64_set(&cpu_buffer->write, rb_wword(k - 1, f, 0));
	atomic64_set(&cpu_buffer->commit, rb_pair(k - 1, f));
	meta->saved_commit = rb_pair(k - 1, f);
	cpu_buffer->stamp_ts = 0;
	cpu_buffer->stamp_end = 0;

	local_set(&cpu_buffer->entries, before);
	local_set(&cpu_buffer->overrun, lost);
	local_set(&cpu_buffer->commit_overrun, 0);
	local_set(&cpu_buffer->dropped_events, 0);
	local_set(&cpu_buffer->entries_bytes, (long)k * cap);
	local_set(&cpu_buffer->subbufs_entered, k);
	local_set(&cpu_buffer->subbufs_evicted, 0);

	sb = &cpu_buffer->subbufs[ids[0]];
	cpu_buffer->read_pos = 0;
	cpu_buffer->read_stamp = sb->page->time_stamp;
	cpu_buffer->lost_events = sb->torn_before ? RB_LOST_UNKNOWN : sb->events_before;
	cpu_buffer->next_before = sb->events_before;
	cpu_buffer->reader_gen++;
	cpu_buffer->read_events = 0;
	cpu_buffer->read_bytes = 0;
	cpu_buffer->subbufs_taken = 1;
	pr_debug("ring buffer: CPU %d: %u sub-buffers of the last boot kept\n", cpu_buffer->cpu, k);
}

/**
 * rb_range_attach - give a persistent CPU buffer its chunk, and its data back
 * @cpu_buffer: the CPU buffer, with nr and the descriptors allocated; not
 *	yet visible to anyone
 *
 * If the chunk's meta is one this boot could have written for this CPU,
 * the last boot's whole sub-buffers are kept in order and the torn ones
 * dropped (rb_range_rebuild()); otherwise the chunk is formatted afresh.
 * Either way the CPU buffer satisfies R1-R5 afterwards.
 *
 * Return: 0, or -ENOMEM for the scratch arrays, before anything in the
 * chunk has changed: the last boot's data stays for a later attempt.
 */
int rb_range_attach(struct rb_cpu_buffer *cpu_buffer)
{
	struct trace_buffer *buffer = cpu_buffer->buffer;
	unsigned int nr = cpu_buffer->nr, n;
	struct rb_range_meta *meta;
	unsigned int cap = rb_capacity(buffer), events, id;
	unsigned long *seen;
	int reader, newest;
	u32 *order;
	u8 *state;

	seen = bitmap_zalloc(nr + 1, GFP_KERNEL);
	order = kvmalloc_array(2 * (nr + 1), sizeof(*order), GFP_KERNEL);
	state = kvmalloc(nr + 1, GFP_KERNEL);
	if (!seen || !order || !state) {
		kvfree(state);
		kvfree(order);
		bitmap_free(seen);
		return -ENOMEM;
	}
	rb_range_pages(cpu_buffer);
	meta = cpu_buffer->range;
	if (!rb_range_meta_ok(cpu_buffer, meta))
		goto format;
	reader = rb_range_reader(cpu_buffer, seen);
	if (reader < 0)
		goto format;
	/* Each page on its own first: the ring's shape is read from whole ones. */
	for (id = 0; id <= nr; id++) {
		events = 0;
		state[id] = rb_range_check(cpu_buffer->subbufs[id].page, cap, id == reader,
					   &events);
		local_set(&cpu_buffer->subbufs[id].events, events);
	}
	newest = rb_range_newest(cpu_buffer, state, reader, READ_ONCE(meta->saved_commit));
	if (newest == RB_RANGE_UNKNOWN)
		goto format;

	if (!buffer->text_delta && !buffer->data_delta) {
		buffer->text_delta = RB_TEXT_ADDR - meta->text_addr;
		buffer->data_delta = RB_DATA_ADDR - meta->data_addr;
	}
	meta->text_addr = RB_TEXT_ADDR;
	meta->data_addr = RB_DATA_ADDR;
	n = rb_range_order(cpu_buffer, state, reader, newest, order);
	rb_range_rebuild(cpu_buffer, state, order, n, seen);
	goto out;
format:
	if (meta->magic == RB_RANGE_MAGIC)
		pr_info_ratelimited("ring buffer: CPU %d: last boot's buffer is unusable: starting afresh\n",
				    cpu_buffer->cpu);
	rb_range_format(cpu_buffer);
out:
	kvfree(state);
	kvfree(order);
	bitmap_free(seen);
	return 0;
}

/* ---- while running ---- */

/**
 * ring_buffer_last_boot_delta - how far the kernel moved since the last boot
 * @buffer: a persistent buffer
 * @text: gets this boot's text addresses less the last boot's
 * @data: the same for data
 *
 * Return: true if the text moved (a randomized kernel base), so that the
 * addresses in the last boot's events need the delta to be printed.
 */
bool ring_buffer_last_boot_delta(struct trace_buffer *buffer, long *text, long *data)
{
	if (!buffer || !buffer->text_delta)
		return false;
	*text = buffer->text_delta;
	*data = buffer->data_delta;
	return true;
}

/* ---- the buffer_meta file ---- */

/*
 * 6.12's lines: head and commit sub-buffer and the sizes, then every
 * sub-buffer in ring order, buffer[0] the reader's; then, ours, the count
 * of torn sub-buffers dropped. Read without stopping anyone: a debugging
 * view, exact only while nothing is written.
 */
static void *rb_meta_start(struct seq_file *m, loff_t *pos)
{
	struct rb_cpu_buffer *cpu_buffer = m->private;

	return *pos <= cpu_buffer->nr + 2 ? (void *)(unsigned long)(*pos + 1) : NULL;
}

static void *rb_meta_next(struct seq_file *m, void *v, loff_t *pos)
{
	++*pos;
	return rb_meta_start(m, pos);
}

static void rb_meta_stop(struct seq_file *m, void *v)
{
}

static int rb_meta_show(struct seq_file *m, void *v)
{
	struct rb_cpu_buffer *cpu_buffer = m->private;
	unsigned long line = (unsigned long)v - 1;
	unsigned int nr = cpu_buffer->nr;
	u64 h = atomic64_read(&cpu_buffer->head);
	unsigned int hv = rb_pair_vpos(h) % nr;

	if (!line) {
		seq_printf(m, "head_buffer:   %u\n", READ_ONCE(cpu_buffer->slots[hv]));
		seq_printf(m, "commit_buffer: %u\n",
			   rb_pair_id(atomic64_read(&cpu_buffer->commit)));
		seq_printf(m, "subbuf_size:   %u\n", cpu_buffer->buffer->subbuf_size);
		seq_printf(m, "nr_subbufs:    %u\n", nr + 1);
	} else if (line == 1) {
		seq_printf(m, "buffer[0]:    %u\n", READ_ONCE(cpu_buffer->reader_id));
	} else if (line <= nr + 1) {
		/* buffer[i] is the slot i - 1 after the head; the last is behind it (R1). */
		unsigned int vpos = (hv + line - 2) % nr;

		seq_printf(m, "buffer[%lu]:    %u\n", line - 1,
			   rb_behind_head(cpu_buffer, vpos, h) ? rb_pair_id(h) :
			   READ_ONCE(cpu_buffer->slots[vpos]));
	} else {
		seq_printf(m, "dropped_subbufs: %llu\n", READ_ONCE(cpu_buffer->range->dropped));
	}
	return 0;
}

static const struct seq_operations rb_meta_seq_ops = {
	.start	= rb_meta_start,
	.next	= rb_meta_next,
	.stop	= rb_meta_stop,
	.show	= rb_meta_show,
};

/**
 * ring_buffer_meta_seq_init - open a CPU's buffer_meta file
 * @file: the file being opened
 * @buffer: a persistent buffer
 * @cpu: the CPU
 *
 * Return: 0, -ENODEV if @cpu has no buffer or @buffer is not persistent,
 * or seq_open()'s error.
 */
int ring_buffer_meta_seq_init(struct file *file, struct trace_buffer *buffer, int cpu)
{
	struct rb_cpu_buffer *cpu_buffer = rb_cpu(buffer, cpu);
	int ret;

	if (!cpu_buffer || !cpu_buffer->range)
		return -ENODEV;
	ret = seq_open(file, &rb_meta_seq_ops);
	if (!ret)
		((struct seq_file *)file->private_data)->private = cpu_buffer;
	return ret;
}
