// SPDX-License-Identifier: GPL-2.0
/*
 * A CPU buffer mapped into user space (trace_pipe_raw's mmap): the meta
 * page, the sub-buffers laid out by mmap id, and GET_READER, the consuming
 * step of a reader that reads the pages in place. The top layer: it uses
 * the ring, the reader and control, and nothing below calls into it. The
 * design is in Documentation/trace/ring-buffer-design.rst, "Mapping".
 *
 * The layout, in pages of PAGE_SIZE, with S = 1 << subbuf_order:
 *
 *   pgoff 0          the meta page (struct trace_buffer_meta), then S - 1
 *                    zero pages, so that sub-buffers start aligned
 *   pgoff S * (m+1)  the sub-buffer of mmap id m, for m = 0 .. nr
 *
 * Relies on:
 *  - While mapped, every mmap id keeps its page: resize and order changes
 *    see resize_disabled and refuse, the snapshot swap sees mapped and
 *    refuses, and ring_buffer_read_page() copies instead of exchanging
 *    pages (it tests mapped under the reader lock, which the first map
 *    holds while it sets it). A reset moves no page to another of our
 *    ids (rb_reset_cpu_ring()). So the pages a vma gets stay the CPU
 *    buffer's, and each keeps its id and mmap id.
 *  - Under reader_lock only writers run, and they never change the id in
 *    a slot (R2): one head word read gives the whole ring order.
 * Maintains:
 *  - The mmap ids are numbered at the first map: the reader's sub-buffer
 *    is 0, then the ring in order from the head. map_id[] and
 *    map_subbuf[] are inverse permutations of 0 .. nr, fixed until the
 *    last unmap.
 *  - The meta page changes only at the first map, at GET_READER and at a
 *    reset (rb_meta_update()); writers never touch it.
 *  - A loss reaches user space once: in the commit word of the sub-buffer
 *    after it (RB_MISSED_EVENTS, with room RB_MISSED_STORED and the count
 *    after the data), or, while that sub-buffer is still the writer's, as
 *    reader.lost_events until a later sub-buffer carries it.
 *  - Lock order: map_lock, then buffer->mutex, then reader_lock.
 */

#include <linux/cleanup.h>
#include <linux/gfp.h>
#include <linux/highmem.h>
#include <linux/mm.h>
#include <linux/slab.h>

#include "ring_buffer_internal.h"

/* ---- the mmap ids and the meta page ---- */

/*
 * Number the sub-buffers: the reader's 0, then from the head round the
 * ring (the slot behind the head is R1's). Under reader_lock. Returns
 * false, having stopped the CPU buffer, if the ring is not a permutation.
 */
static bool rb_map_number(struct rb_cpu_buffer *cpu_buffer)
{
	unsigned int nr = cpu_buffer->nr, vpos, m;
	u64 h = rb_head_word(cpu_buffer);
	u32 id;

	for (id = 0; id <= nr; id++)
		cpu_buffer->map_id[id] = U32_MAX;
	vpos = rb_pair_vpos(h);
	for (m = 0; m <= nr; m++) {
		if (!m)
			id = cpu_buffer->reader_id;
		else if (m < nr)
			id = rb_slot(cpu_buffer, vpos);
		else
			id = rb_pair_id(h);
		if (RB_WARN_STOP(cpu_buffer, id > nr || cpu_buffer->map_id[id] != U32_MAX))
			return false;
		cpu_buffer->map_id[id] = m;
		cpu_buffer->map_subbuf[m] = id;
		if (m)
			vpos = rb_vpos_next(cpu_buffer, vpos);
	}
	return true;
}

static void rb_map_free(struct trace_buffer_meta *meta, u32 *ids)
{
	if (meta)
		free_page((unsigned long)meta);
	kvfree(ids);
}

/*
 * User space is handed the reader's sub-buffer for the first time (by
 * GET_READER, or by the first map after a peek took it): flag the loss
 * before it in its commit word, and with room store the count after its
 * data. Not while the writer is still on it, since its next length store
 * would erase the flag, nor when nothing on it is left to read: the loss
 * then stays in lost_events (and the meta page) for the next one.
 */
static void rb_map_flag_loss(struct rb_cpu_buffer *cpu_buffer)
{
	struct rb_page *page = cpu_buffer->subbufs[cpu_buffer->reader_id].page;
	unsigned long missed = cpu_buffer->lost_events;
	unsigned long commit;
	unsigned int len;

	if (!missed || rb_commit_id(cpu_buffer) == cpu_buffer->reader_id)
		return;
	/* M2: the commit point has left the sub-buffer: its length is final. */
	len = rb_page_len(page);
	if (cpu_buffer->read_pos >= len)
		return;
	commit = len | RB_MISSED_EVENTS;
	if (rb_capacity(cpu_buffer->buffer) - len >= sizeof(missed)) {
		memcpy(&page->data[len], &missed, sizeof(missed));
		commit |= RB_MISSED_STORED;
	}
	local_set(&page->commit, commit);
	cpu_buffer->lost_events = 0;
}

/*
 * The first meta page handed out the reader's sub-buffer as it was. A peek
 * may have taken it from the ring after a loss, and nothing has read it
 * since: flag the loss on it, now that the mapping stands (a mapping that
 * failed leaves the loss to the other readers).
 */
static void rb_map_flag_first(struct rb_cpu_buffer *cpu_buffer)
{
	unsigned long flags;

	raw_spin_lock_irqsave(&cpu_buffer->reader_lock, flags);
	if (cpu_buffer->lost_events && cpu_buffer->subbufs_taken == cpu_buffer->map_handed) {
		rb_map_flag_loss(cpu_buffer);
		/* As in ring_buffer_map_get_reader(). */
		flush_kernel_vmap_range(cpu_buffer->subbufs[cpu_buffer->reader_id].page,
					cpu_buffer->buffer->subbuf_size);
		rb_meta_update(cpu_buffer);
	}
	raw_spin_unlock_irqrestore(&cpu_buffer->reader_lock, flags);
}

/*
 * The first mapping of @cpu_buffer, a CPU buffer of @buffer: number the
 * sub-buffers, fill the meta page, and pin the pages (mapped,
 * resize_disabled). Under map_lock.
 */
static int rb_map_first(struct trace_buffer *buffer, struct rb_cpu_buffer *cpu_buffer)
{
	struct trace_buffer_meta *meta;
	unsigned long flags;
	unsigned int n;
	u32 *ids;
	int err = 0;

	guard(mutex)(&buffer->mutex);
	/* Under the mutex nr holds still, unless the swap moved us away. */
	if (rb_cpu(buffer, cpu_buffer->cpu) != cpu_buffer)
		return -EBUSY;
	n = cpu_buffer->nr + 1;
	meta = (void *)get_zeroed_page(GFP_USER);
	ids = kvcalloc(2 * n, sizeof(*ids), GFP_KERNEL);
	if (!meta || !ids) {
		rb_map_free(meta, ids);
		return -ENOMEM;
	}
	meta->meta_page_size = buffer->subbuf_size;
	meta->meta_struct_len = sizeof(*meta);
	meta->subbuf_size = buffer->subbuf_size;
	meta->nr_subbufs = n;

	/*
	 * A snapshot swap in flight finishes in a few instructions; a swap
	 * that moved us meanwhile makes the claim pointless.
	 */
	while (!rb_ctl_claim(cpu_buffer, RB_CTL_MAPPING)) {
		if (rb_cpu(buffer, cpu_buffer->cpu) != cpu_buffer) {
			rb_map_free(meta, ids);
			return -EBUSY;
		}
		cond_resched();
	}
	if (rb_cpu(buffer, cpu_buffer->cpu) != cpu_buffer) {
		err = -EBUSY;
	} else {
		raw_spin_lock_irqsave(&cpu_buffer->reader_lock, flags);
		cpu_buffer->map_id = ids;
		cpu_buffer->map_subbuf = ids + n;
		if (rb_map_number(cpu_buffer)) {
			cpu_buffer->meta = meta;
			WRITE_ONCE(cpu_buffer->mapped, 1);
			atomic_inc(&cpu_buffer->resize_disabled);
			rb_meta_update(cpu_buffer);
		} else {
			cpu_buffer->map_id = NULL;
			cpu_buffer->map_subbuf = NULL;
			err = -EIO;
		}
		raw_spin_unlock_irqrestore(&cpu_buffer->reader_lock, flags);
	}
	rb_ctl_release(cpu_buffer);
	if (err)
		rb_map_free(meta, ids);
	return err;
}

/* The last mapping is gone: the pages may move again. Under map_lock. */
static void rb_map_last(struct trace_buffer *buffer, struct rb_cpu_buffer *cpu_buffer)
{
	struct trace_buffer_meta *meta;
	unsigned long flags;
	u32 *ids;

	guard(mutex)(&buffer->mutex);
	raw_spin_lock_irqsave(&cpu_buffer->reader_lock, flags);
	meta = cpu_buffer->meta;
	ids = cpu_buffer->map_id;
	cpu_buffer->meta = NULL;
	cpu_buffer->map_id = NULL;
	cpu_buffer->map_subbuf = NULL;
	WRITE_ONCE(cpu_buffer->mapped, 0);
	atomic_dec(&cpu_buffer->resize_disabled);
	raw_spin_unlock_irqrestore(&cpu_buffer->reader_lock, flags);
	rb_map_free(meta, ids);
}

/* ---- the vma ---- */

#ifdef CONFIG_MMU
/* The page at @pgoff of the layout above, to be mapped at @addr. */
static struct page *rb_map_page(struct rb_cpu_buffer *cpu_buffer, unsigned long pgoff,
				unsigned long addr)
{
	unsigned int order = cpu_buffer->buffer->subbuf_order;
	unsigned long m = pgoff >> order;
	u32 id;

	if (!m)
		return pgoff ? ZERO_PAGE(addr) : virt_to_page(cpu_buffer->meta);
	id = cpu_buffer->map_subbuf[m - 1];
	return virt_to_page(cpu_buffer->subbufs[id].page) + (pgoff & ((1UL << order) - 1));
}

/*
 * Insert every page of @vma up front; there is no fault handler. Read-only
 * and shared only, and it may never become writable (no VM_MAYWRITE), be
 * copied on fork unless asked (VM_DONTCOPY), grow or be dumped.
 */
static int rb_map_vma(struct rb_cpu_buffer *cpu_buffer, struct vm_area_struct *vma)
{
	unsigned int order = cpu_buffer->buffer->subbuf_order;
	unsigned long total = ((unsigned long)cpu_buffer->nr + 2) << order;
	unsigned long pgoff = vma->vm_pgoff, n = vma_pages(vma), i;
	struct page **pages __free(kfree) = NULL;

	if ((vma->vm_flags & (VM_WRITE | VM_EXEC)) || !(vma->vm_flags & VM_MAYSHARE))
		return -EPERM;
	/* A mapping starts on a sub-buffer (or the meta page). */
	if (pgoff & ((1UL << order) - 1))
		return -EINVAL;
	vm_flags_mod(vma, VM_DONTCOPY | VM_DONTEXPAND | VM_DONTDUMP, VM_MAYWRITE);
	if (pgoff >= total || !n || n > total - pgoff)
		return -EINVAL;
	pages = kcalloc(n, sizeof(*pages), GFP_KERNEL);
	if (!pages)
		return -ENOMEM;
	/* Nothing moves a page to another id while mapped: no lock needed. */
	for (i = 0; i < n; i++)
		pages[i] = rb_map_page(cpu_buffer, pgoff + i, vma->vm_start + i * PAGE_SIZE);
	return vm_insert_pages(vma, vma->vm_start, pages, &n);
}
#else
static int rb_map_vma(struct rb_cpu_buffer *cpu_buffer, struct vm_area_struct *vma)
{
	return -EOPNOTSUPP;
}
#endif

/**
 * ring_buffer_map - map a CPU buffer into user space
 * @buffer: the ring buffer
 * @cpu: the CPU whose buffer to map
 * @vma: the vma of the mapping, from a read-only shared mmap()
 *
 * The first mapping numbers the sub-buffers (see above); until the last
 * one goes, the CPU buffer cannot be resized, change its sub-buffer order
 * or be swapped for a snapshot.
 *
 * Return: 0; -EINVAL for a CPU without a buffer or a range outside the
 * layout, -EPERM for a writable, executable or private mapping, -EBUSY if
 * a snapshot swap moved the CPU buffer or the count of mappings is full,
 * -ENODEV for a persistent buffer whose range is not in the linear map,
 * -ENOMEM, -EOPNOTSUPP without an MMU,
 * or vm_insert_pages()'s error.
 */
int ring_buffer_map(struct trace_buffer *buffer, int cpu, struct vm_area_struct *vma)
{
	struct rb_cpu_buffer *cpu_buffer = rb_cpu(buffer, cpu);
	int err;

	if (!cpu_buffer)
		return -EINVAL;
	/*
	 * A persistent buffer's pages are its range's. They have struct pages
	 * to insert if the range is in the linear map, as trace.c's
	 * reserve_mem ranges are; a vmapped one (memmap=) may have none.
	 */
	if (cpu_buffer->range && !virt_addr_valid(cpu_buffer->range))
		return -ENODEV;
	guard(mutex)(&cpu_buffer->map_lock);
	if (cpu_buffer->mapped) {
		if (cpu_buffer->mapped == UINT_MAX)
			return -EBUSY;
		err = rb_map_vma(cpu_buffer, vma);
		if (!err)
			WRITE_ONCE(cpu_buffer->mapped, cpu_buffer->mapped + 1);
		return err;
	}
	err = rb_map_first(buffer, cpu_buffer);
	if (err)
		return err;
	err = rb_map_vma(cpu_buffer, vma);
	if (err)
		rb_map_last(buffer, cpu_buffer);
	else
		rb_map_flag_first(cpu_buffer);
	return err;
}
EXPORT_SYMBOL_GPL(ring_buffer_map);

/**
 * ring_buffer_map_dup - count one more vma of an existing mapping
 * @buffer: the ring buffer
 * @cpu: the mapped CPU
 *
 * For a vma copied on fork (MADV_DOFORK); it shares the pages already
 * inserted. Each needs its ring_buffer_unmap().
 */
void ring_buffer_map_dup(struct trace_buffer *buffer, int cpu)
{
	struct rb_cpu_buffer *cpu_buffer = rb_cpu(buffer, cpu);

	if (WARN_ON_ONCE(!cpu_buffer))
		return;
	guard(mutex)(&cpu_buffer->map_lock);
	/* A vma exists, so the count is at least one; it has room for this one. */
	if (!WARN_ON_ONCE(!cpu_buffer->mapped || cpu_buffer->mapped == UINT_MAX))
		WRITE_ONCE(cpu_buffer->mapped, cpu_buffer->mapped + 1);
}
EXPORT_SYMBOL_GPL(ring_buffer_map_dup);

/**
 * ring_buffer_unmap - a vma of a mapping is gone
 * @buffer: the ring buffer
 * @cpu: the mapped CPU
 *
 * After the last one, the ids and the meta page are freed and the CPU
 * buffer may be resized and swapped again.
 *
 * Return: 0, -EINVAL for a CPU without a buffer, -ENODEV if not mapped.
 */
int ring_buffer_unmap(struct trace_buffer *buffer, int cpu)
{
	struct rb_cpu_buffer *cpu_buffer = rb_cpu(buffer, cpu);

	if (!cpu_buffer)
		return -EINVAL;
	guard(mutex)(&cpu_buffer->map_lock);
	if (!cpu_buffer->mapped)
		return -ENODEV;
	if (cpu_buffer->mapped > 1)
		WRITE_ONCE(cpu_buffer->mapped, cpu_buffer->mapped - 1);
	else
		rb_map_last(buffer, cpu_buffer);
	return 0;
}
EXPORT_SYMBOL_GPL(ring_buffer_unmap);

/* ---- GET_READER ---- */

/*
 * Hand user space the next data: the rest of the reader's sub-buffer if
 * it has unread bytes, else the next sub-buffer with data, if any. What
 * is handed out counts as consumed. A sub-buffer given for the first time
 * carries the loss before it, whoever took it from the ring (a peek or a
 * read_page may have). Under reader_lock.
 */
static void rb_map_next(struct rb_cpu_buffer *cpu_buffer)
{
	struct rb_page *page;

	/*
	 * Nothing to hand out: the held page stays. rb_unread() can see data
	 * that a nested writer's eviction takes before the refill: then the
	 * refill has closed the held page, read to its end, and found the head
	 * empty; the page stays held, empty, and nothing unread is lost.
	 */
	if (!rb_unread(cpu_buffer, NULL) || !rb_reader_refill(cpu_buffer))
		return;
	/* Taken from the ring since user space was handed one. */
	if (cpu_buffer->subbufs_taken != cpu_buffer->map_handed)
		rb_map_flag_loss(cpu_buffer);
	page = cpu_buffer->subbufs[cpu_buffer->reader_id].page;
	rb_reader_consume(cpu_buffer, rb_page_len(page));
}

/**
 * ring_buffer_map_get_reader - give a mapped CPU buffer's reader the next data
 * @buffer: the ring buffer
 * @cpu: the mapped CPU
 *
 * Afterwards the meta page's reader.id names the sub-buffer to read, and
 * reader.read is how far it holds data, which counts as consumed. The
 * reader's sub-buffer is kept while it has unread bytes, including ones
 * the writer appended since the last call; with no data at all, nothing
 * changes but the counters.
 *
 * Return: 0, -EINVAL for a CPU without a buffer, -ENODEV if not mapped.
 */
int ring_buffer_map_get_reader(struct trace_buffer *buffer, int cpu)
{
	struct rb_cpu_buffer *cpu_buffer = rb_cpu(buffer, cpu);
	struct rb_page *page;
	unsigned long flags;

	if (!cpu_buffer)
		return -EINVAL;
	guard(mutex)(&cpu_buffer->map_lock);
	if (!cpu_buffer->mapped)
		return -ENODEV;
	raw_spin_lock_irqsave(&cpu_buffer->reader_lock, flags);
	rb_map_next(cpu_buffer);
	page = cpu_buffer->subbufs[cpu_buffer->reader_id].page;
	/* As for the meta page in rb_meta_update(). */
	flush_kernel_vmap_range(page, cpu_buffer->buffer->subbuf_size);
	rb_meta_update(cpu_buffer);
	raw_spin_unlock_irqrestore(&cpu_buffer->reader_lock, flags);
	return 0;
}
EXPORT_SYMBOL_GPL(ring_buffer_map_get_reader);
