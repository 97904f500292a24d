// SPDX-License-Identifier: GPL-2.0
/*
 * White-box KUnit suite for persistent buffers (ring_buffer_persist.c).
 * The contract suite (ring_buffer_kunit.c) tears sub-buffers the ways the
 * ABI allows; this one knows the meta's layout, so it corrupts every field
 * of it in turn, checks the counters an attach rebuilds, and fuzzes a real
 * last boot's image.
 *
 * The oracle. A "boot" attaches a buffer to the range, checks R1-R5
 * (rb_check_invariants()), consumes everything, and then writes and reads
 * one event of its own. Consumed events point into the range, so each is
 * known by the sub-buffer it sits in. Against the events an attach of the
 * intact image returns (the baseline, which must be every event the last
 * boot wrote, in order):
 *  - an event on a sub-buffer the corruption left alone is whole, and
 *    later than every such event before it;
 *  - with the meta untouched, every baseline event on such a sub-buffer
 *    comes back; with the meta touched, all of them or none (a reset).
 * What comes from a damaged sub-buffer is not judged (no checksum can
 * tell a flipped payload bit), but must be read in bounds: KASAN watches
 * in the debug guest.
 */

#include <kunit/test.h>
#include <kunit/visibility.h>
#include <linux/module.h>
#include <linux/prandom.h>
#include <linux/ring_buffer.h>
#include <linux/slab.h>
#include <linux/vmalloc.h>

#include "ring_buffer_internal.h"

static unsigned int rbp_iters = 2000;
module_param_named(iters, rbp_iters, uint, 0444);
MODULE_PARM_DESC(iters, "fuzzer rounds (2000 by default)");

static unsigned int rbp_crash_every = 1;
module_param_named(crash_every, rbp_crash_every, uint, 0444);
MODULE_PARM_DESC(crash_every, "crash at every n-th test point (1 by default)");

static unsigned int rbp_seed = 12;
module_param_named(seed, rbp_seed, uint, 0444);
MODULE_PARM_DESC(seed, "fuzzer seed");

#define RBP_CHUNK_SUBBUFS	10	/* per CPU, the meta's included */
#define RBP_CRASH_SUBBUFS	6	/* for the crashes: a ring of four */
#define RBP_MAX_EVENTS		1024

static atomic64_t rbp_now;

/* Every call a new time: buffer order is time order. */
static u64 rbp_clock(void)
{
	return atomic64_inc_return(&rbp_now);
}

struct rbp_event {
	u64	ts;
	u32	tag;
	bool	whole;
	void	*subbuf;	/* the range sub-buffer it was read from */
};

struct rbp {
	struct kunit	*test;
	int		cpu;
	void		*mem;		/* the range */
	void		*image;		/* the last boot as it ended */
	void		*input;		/* what a boot found, before it changed it */
	unsigned long	size;
	unsigned int	chunk;		/* bytes per CPU */
	unsigned int	written;	/* events the last boot wrote */
	struct rbp_event *base;		/* what the intact image gives */
	unsigned int	nbase;
	struct rbp_event *got;
	unsigned int	ngot;
	bool		reset_seen;	/* some boot kept nothing */
	bool		kept_seen;	/* some boot with a touched meta kept all */
};

static unsigned int rbp_len(u32 tag)
{
	return 8 + (tag * 37) % 200;
}

static void rbp_fill(u8 *p, u32 tag)
{
	unsigned int i, len = rbp_len(tag);

	memcpy(p, &tag, sizeof(tag));
	for (i = sizeof(tag); i < len; i++)
		p[i] = (u8)(tag * 7 + i);
}

static bool rbp_whole(struct ring_buffer_event *event, u32 tag)
{
	unsigned int i, len = rbp_len(tag);
	u8 *p = ring_buffer_event_data(event);

	if (ring_buffer_event_length(event) < len)
		return false;
	for (i = sizeof(tag); i < len; i++)
		if (p[i] != (u8)(tag * 7 + i))
			return false;
	return true;
}

static void rbp_free(void *arg)
{
	struct rbp *r = arg;

	vfree(r->mem);
	vfree(r->image);
	vfree(r->input);
	kvfree(r->base);
	kvfree(r->got);
}

static struct rbp *rbp_setup_chunk(struct kunit *test, unsigned int subbufs)
{
	struct rbp *r = kunit_kzalloc(test, sizeof(*r), GFP_KERNEL);

	KUNIT_ASSERT_NOT_NULL(test, r);
	r->test = test;
	r->cpu = raw_smp_processor_id();
	KUNIT_ASSERT_EQ(test, 0, set_cpus_allowed_ptr(current, cpumask_of(r->cpu)));
	r->chunk = subbufs * PAGE_SIZE;
	r->size = nr_cpu_ids * r->chunk;
	r->mem = vzalloc(r->size);
	r->image = vzalloc(r->size);
	r->input = vzalloc(r->size);
	r->base = kvcalloc(RBP_MAX_EVENTS, sizeof(*r->base), GFP_KERNEL);
	r->got = kvcalloc(RBP_MAX_EVENTS, sizeof(*r->got), GFP_KERNEL);
	KUNIT_ASSERT_EQ(test, 0, kunit_add_action_or_reset(test, rbp_free, r));
	KUNIT_ASSERT_TRUE_MSG(test, r->mem && r->image && r->input && r->base && r->got,
			      "no memory");
	return r;
}

static struct rbp *rbp_setup(struct kunit *test)
{
	return rbp_setup_chunk(test, RBP_CHUNK_SUBBUFS);
}

static struct trace_buffer *rbp_attach(struct rbp *r)
{
	struct trace_buffer *buffer;

	buffer = ring_buffer_alloc_range(0, RB_FL_OVERWRITE, 0, (unsigned long)r->mem, r->size);
	KUNIT_ASSERT_NOT_NULL(r->test, buffer);
	ring_buffer_set_clock(buffer, rbp_clock);
	return buffer;
}

static int rbp_write(struct trace_buffer *buffer, u32 tag)
{
	struct ring_buffer_event *event = ring_buffer_lock_reserve(buffer, rbp_len(tag));

	if (!event)
		return -EBUSY;
	rbp_fill(ring_buffer_event_data(event), tag);
	return ring_buffer_unlock_commit(buffer);
}

/*
 * The last boot: @subbufs sub-buffers' worth of events of varied sizes,
 * of which the first @read are consumed, so that the reader holds a page
 * part read; then the buffer goes. Keeps the image.
 */
static void rbp_last_boot(struct rbp *r, unsigned int subbufs, unsigned int read)
{
	struct trace_buffer *buffer;
	unsigned long bytes = 0;
	unsigned int i;
	u32 tag = 0;

	memset(r->mem, 0, r->size);
	buffer = rbp_attach(r);
	while (bytes < (unsigned long)subbufs * (PAGE_SIZE - RB_PAGE_HDR)) {
		KUNIT_ASSERT_EQ(r->test, 0, rbp_write(buffer, tag));
		bytes += rb_event_bytes(rbp_len(tag++));
		if (tag != read)
			continue;
		for (i = 0; i < read; i++)
			KUNIT_ASSERT_NOT_NULL(r->test,
					      ring_buffer_consume(buffer, r->cpu, NULL, NULL));
	}
	r->written = tag;
	ring_buffer_free(buffer);
	memcpy(r->image, r->mem, r->size);
}

/* One boot on r->mem: invariants, everything read into r->got, a new event. */
static void rbp_boot(struct rbp *r, unsigned long *lost)
{
	struct ring_buffer_event *event;
	struct trace_buffer *buffer;
	unsigned long l;
	u64 ts;
	u32 tag;

	memcpy(r->input, r->mem, r->size);
	buffer = rbp_attach(r);
	KUNIT_EXPECT_EQ(r->test, rb_check_invariants(buffer, r->cpu), 0);
	*lost = 0;
	for (r->ngot = 0; (event = ring_buffer_consume(buffer, r->cpu, &ts, &l)); r->ngot++) {
		KUNIT_ASSERT_LT(r->test, r->ngot, RBP_MAX_EVENTS);
		r->got[r->ngot].ts = ts;
		*lost += l;
		memcpy(&tag, ring_buffer_event_data(event), sizeof(tag));
		r->got[r->ngot].tag = tag;
		r->got[r->ngot].whole = rbp_whole(event, tag);
		r->got[r->ngot].subbuf = PTR_ALIGN_DOWN((void *)event, PAGE_SIZE);
	}
	KUNIT_EXPECT_EQ(r->test, ring_buffer_entries_cpu(buffer, r->cpu), 0UL);
	KUNIT_EXPECT_EQ(r->test, rbp_write(buffer, 0xfeed), 0);
	event = ring_buffer_consume(buffer, r->cpu, NULL, NULL);
	KUNIT_EXPECT_TRUE(r->test, event && rbp_whole(event, 0xfeed));
	KUNIT_EXPECT_EQ(r->test, rb_check_invariants(buffer, r->cpu), 0);
	ring_buffer_free(buffer);
}

/*
 * The baseline: the intact image gives back its events whole and in order,
 * up to the last one written; every one of them if the last boot never
 * wrapped (@all), else the reader's sub-buffer and one run after it.
 */
static void rbp_baseline(struct rbp *r, bool all)
{
	unsigned int i, gaps = 0;
	unsigned long lost;

	memcpy(r->mem, r->image, r->size);
	rbp_boot(r, &lost);
	KUNIT_ASSERT_GT(r->test, r->ngot, 0U);
	KUNIT_EXPECT_EQ(r->test, r->got[r->ngot - 1].tag, r->written - 1);
	for (i = 0; i < r->ngot; i++) {
		KUNIT_EXPECT_TRUE(r->test, r->got[i].whole);
		if (i && r->got[i].tag != r->got[i - 1].tag + 1) {
			KUNIT_EXPECT_GT(r->test, r->got[i].tag, r->got[i - 1].tag);
			gaps++;
		}
	}
	if (all) {
		KUNIT_EXPECT_EQ(r->test, r->ngot, r->written);
		KUNIT_EXPECT_EQ(r->test, lost, 0UL);
	}
	KUNIT_EXPECT_LE(r->test, gaps, 1U);
	memcpy(r->base, r->got, r->ngot * sizeof(*r->got));
	r->nbase = r->ngot;
}

/* The meta and its slots: the chunk before its first sub-buffer (one page here). */
static void *rbp_meta(struct rbp *r, void *mem)
{
	return mem + r->cpu * r->chunk;
}

/* Did the corruption change @subbuf (an address in r->mem)? */
static bool rbp_touched(struct rbp *r, void *subbuf)
{
	return memcmp(r->input + (subbuf - r->mem), r->image + (subbuf - r->mem), PAGE_SIZE);
}

/* The oracle (see the top of the file) for the boot just made. */
static void rbp_judge(struct rbp *r, const char *what)
{
	bool meta_touched = memcmp(rbp_meta(r, r->input), rbp_meta(r, r->image), PAGE_SIZE);
	unsigned int i, j, kept = 0, expect = 0;
	u32 last = 0;
	bool any = false;

	for (i = 0; i < r->ngot; i++) {
		struct rbp_event *e = &r->got[i];

		if (rbp_touched(r, e->subbuf))
			continue;
		KUNIT_EXPECT_TRUE_MSG(r->test, e->whole, "%s: event %u (tag %u) not whole",
				      what, i, e->tag);
		if (any)
			KUNIT_EXPECT_GT_MSG(r->test, e->tag, last, "%s: event %u out of order",
					    what, i);
		any = true;
		last = e->tag;
		for (j = 0; j < r->nbase; j++)
			if (r->base[j].tag == e->tag && r->base[j].subbuf == e->subbuf)
				break;
		KUNIT_EXPECT_LT_MSG(r->test, j, r->nbase, "%s: tag %u was not there", what, e->tag);
		kept++;
	}
	for (j = 0; j < r->nbase; j++)
		expect += !rbp_touched(r, r->base[j].subbuf);
	if (!meta_touched || kept)
		KUNIT_EXPECT_EQ_MSG(r->test, kept, expect,
				    "%s: whole sub-buffers lost (meta %s)", what,
				    meta_touched ? "touched" : "intact");
	if (!kept && expect)
		r->reset_seen = true;
	else if (meta_touched)
		r->kept_seen = true;
}

/* ---- every field of the meta ---- */

enum rbp_outcome { RBP_RESET, RBP_KEPT };

struct rbp_field {
	const char	*what;
	void		(*corrupt)(struct rb_range_meta *meta);
	enum rbp_outcome outcome;
};

/* The slot the commit point names. */
static unsigned int rbp_commit_slot(struct rb_range_meta *meta)
{
	return rb_pair_vpos(meta->saved_commit) % meta->nr;
}

static void rbp_magic(struct rb_range_meta *m) { m->magic ^= 1; }
static void rbp_meta_size(struct rb_range_meta *m) { m->meta_size += 4; }
static void rbp_subbuf_size(struct rb_range_meta *m) { m->subbuf_size *= 2; }
static void rbp_nr_less(struct rb_range_meta *m) { m->nr--; }
static void rbp_nr_huge(struct rb_range_meta *m) { m->nr = U32_MAX; }
static void rbp_cpu(struct rb_range_meta *m) { m->cpu++; }
static void rbp_text_odd(struct rb_range_meta *m) { m->text_addr += 8; }
static void rbp_data_odd(struct rb_range_meta *m) { m->data_addr += 8; }
static void rbp_text_moved(struct rb_range_meta *m) { m->text_addr += PAGE_SIZE; }
static void rbp_pad(struct rb_range_meta *m) { m->pad = 0xdead; }
static void rbp_dropped(struct rb_range_meta *m) { m->dropped = U64_MAX - 1; }
static void rbp_slot_range(struct rb_range_meta *m) { m->slots[0] = m->nr + 1; }
static void rbp_slot_huge(struct rb_range_meta *m) { m->slots[m->nr - 1] = U32_MAX; }
static void rbp_slot_twice(struct rb_range_meta *m) { m->slots[1] = m->slots[0]; }

static void rbp_commit_vpos(struct rb_range_meta *m)
{
	m->saved_commit = rb_pair(2 * m->nr, rb_pair_id(m->saved_commit));
}

static void rbp_commit_id(struct rb_range_meta *m)
{
	m->saved_commit = rb_pair(rb_pair_vpos(m->saved_commit), m->nr + 1);
}

/* The id of the next slot: names a sub-buffer, not its own slot's. */
static void rbp_commit_mismatch(struct rb_range_meta *m)
{
	u32 next = m->slots[(rbp_commit_slot(m) + 1) % m->nr];

	m->saved_commit = rb_pair(rb_pair_vpos(m->saved_commit), next);
}

/* The reader's id: the one no slot names. */
static void rbp_commit_reader(struct rb_range_meta *m)
{
	u32 id, i;

	for (id = 0; id <= m->nr; id++) {
		for (i = 0; i < m->nr && m->slots[i] != id; i++)
			;
		if (i == m->nr)
			break;
	}
	m->saved_commit = rb_pair(rb_pair_vpos(m->saved_commit), id);
}

static void rbp_commit_lap(struct rb_range_meta *m)
{
	u32 vpos = (rb_pair_vpos(m->saved_commit) + m->nr) % (2 * m->nr);

	m->saved_commit = rb_pair(vpos, rb_pair_id(m->saved_commit));
}

static const struct rbp_field rbp_fields[] = {
	{ "magic",			rbp_magic,		RBP_RESET },
	{ "meta_size",			rbp_meta_size,		RBP_RESET },
	{ "subbuf_size",		rbp_subbuf_size,	RBP_RESET },
	{ "nr one less",		rbp_nr_less,		RBP_RESET },
	{ "nr huge",			rbp_nr_huge,		RBP_RESET },
	{ "cpu",			rbp_cpu,		RBP_RESET },
	{ "text_addr off a page",	rbp_text_odd,		RBP_RESET },
	{ "data_addr off a page",	rbp_data_odd,		RBP_RESET },
	{ "text_addr a page away",	rbp_text_moved,		RBP_KEPT },
	{ "pad",			rbp_pad,		RBP_KEPT },
	{ "dropped",			rbp_dropped,		RBP_KEPT },
	{ "slot out of range",		rbp_slot_range,		RBP_RESET },
	{ "slot huge",			rbp_slot_huge,		RBP_RESET },
	{ "slot twice",			rbp_slot_twice,		RBP_RESET },
	{ "commit vpos out of range",	rbp_commit_vpos,	RBP_RESET },
	{ "commit id out of range",	rbp_commit_id,		RBP_RESET },
	{ "commit id not its slot's",	rbp_commit_mismatch,	RBP_RESET },
	{ "commit at the reader",	rbp_commit_reader,	RBP_RESET },
	{ "commit a lap away",		rbp_commit_lap,		RBP_KEPT },
};

/*
 * Each field of the meta corrupted alone: an attach either resets the CPU
 * or keeps every event, in order, and R1-R5 hold either way. A meta that
 * cannot be trusted (a commit point that names no sub-buffer in its slot)
 * resets. (A commit point damaged into another consistent one cannot be
 * told from a true one: the design document says so.)
 */
static void rbp_meta_fields(struct kunit *test)
{
	struct rbp *r = rbp_setup(test);
	struct trace_buffer *buffer;
	unsigned long lost;
	long text, data;
	unsigned int i;

	rbp_last_boot(r, 4, 5);
	rbp_baseline(r, true);
	for (i = 0; i < ARRAY_SIZE(rbp_fields); i++) {
		const struct rbp_field *f = &rbp_fields[i];

		memcpy(r->mem, r->image, r->size);
		f->corrupt(rbp_meta(r, r->mem));
		rbp_boot(r, &lost);
		rbp_judge(r, f->what);
		KUNIT_EXPECT_EQ_MSG(test, r->ngot, f->outcome == RBP_KEPT ? r->nbase : 0,
				    "%s", f->what);
	}

	/* A kernel a page away: the delta is reported. */
	memcpy(r->mem, r->image, r->size);
	rbp_text_moved(rbp_meta(r, r->mem));
	buffer = rbp_attach(r);
	KUNIT_EXPECT_TRUE(test, ring_buffer_last_boot_delta(buffer, &text, &data));
	KUNIT_EXPECT_EQ(test, text, -(long)PAGE_SIZE);
	KUNIT_EXPECT_EQ(test, data, 0L);
	ring_buffer_free(buffer);
}

/* ---- what an attach counts ---- */

/*
 * One torn sub-buffer in the middle: the counters an attach rebuilds agree
 * with what can be read. Unread = entries - overrun = what consume gives;
 * the torn page is one overwritten event, but the loss consume reports,
 * once, has no size (its events cannot be counted); bytes go to zero when
 * all is read;
 * the torn page is counted in the meta and cleared for the next boot.
 */
static void rbp_accounting(struct kunit *test)
{
	struct rbp *r = rbp_setup(test);
	struct trace_buffer *buffer;
	struct ring_buffer_event *event;
	struct rb_range_meta *meta;
	unsigned long reports = 0, l, entries, overrun;
	struct rbp_event *mid;
	struct rb_page *page;
	unsigned int n;

	rbp_last_boot(r, 4, 0);
	rbp_baseline(r, true);
	memcpy(r->mem, r->image, r->size);
	mid = &r->base[r->nbase / 2];
	page = mid->subbuf;
	local_set(&page->commit, local_read(&page->commit) | RB_MISSED_EVENTS);
	meta = rbp_meta(r, r->mem);
	KUNIT_EXPECT_EQ(test, meta->dropped, 0ULL);

	buffer = rbp_attach(r);
	entries = ring_buffer_entries_cpu(buffer, r->cpu);
	overrun = ring_buffer_overrun_cpu(buffer, r->cpu);
	KUNIT_EXPECT_EQ(test, overrun, 1UL);
	KUNIT_EXPECT_EQ(test, meta->dropped, 1ULL);
	KUNIT_EXPECT_EQ(test, local_read(&page->commit), 0L);
	for (n = 0; (event = ring_buffer_consume(buffer, r->cpu, NULL, &l)); n++) {
		if (!l)
			continue;
		reports++;
		KUNIT_EXPECT_EQ(test, l, RB_LOST_UNKNOWN);
	}
	KUNIT_EXPECT_EQ(test, (unsigned long)n, entries);
	KUNIT_EXPECT_LT(test, n, r->nbase);
	KUNIT_EXPECT_EQ(test, reports, 1UL);
	KUNIT_EXPECT_EQ(test, ring_buffer_entries_cpu(buffer, r->cpu), 0UL);
	KUNIT_EXPECT_EQ(test, ring_buffer_bytes_cpu(buffer, r->cpu), 0UL);
	KUNIT_EXPECT_EQ(test, rb_check_invariants(buffer, r->cpu), 0);
	ring_buffer_free(buffer);

	/* The next boot finds the count, and nothing of the torn page. */
	buffer = rbp_attach(r);
	KUNIT_EXPECT_EQ(test, meta->dropped, 1ULL);
	ring_buffer_free(buffer);
}

/*
 * The page reads of a torn sub-buffer's gap: the page after it is flagged
 * with RB_MISSED_EVENTS alone, no count stored (there is none to store,
 * as mainline stores none for a sub-buffer it found invalid); no other
 * page is flagged.
 */
static void rbp_torn_read_page(struct kunit *test)
{
	struct rbp *r = rbp_setup(test);
	struct buffer_data_read_page *rpage;
	struct rb_page *page = NULL, *next;
	struct trace_buffer *buffer;
	unsigned int flagged = 0, i;
	unsigned long commit;

	rbp_last_boot(r, 6, 0);
	rbp_baseline(r, true);
	memcpy(r->mem, r->image, r->size);
	/* The victim: one whose next page has room for a count after its data. */
	for (i = 1; i < r->nbase && !page; i++) {
		next = r->base[i].subbuf;
		if (next != r->base[i - 1].subbuf &&
		    PAGE_SIZE - RB_PAGE_HDR - rb_page_len(next) >= sizeof(long))
			page = r->base[i - 1].subbuf;
	}
	KUNIT_ASSERT_NOT_NULL_MSG(test, page, "no page with room for a count");
	local_set(&page->commit, PAGE_SIZE);	/* past the capacity: torn */

	buffer = rbp_attach(r);
	KUNIT_ASSERT_EQ(test, 0, ring_buffer_alloc_read_page(buffer, r->cpu, &rpage));
	while (ring_buffer_read_page(buffer, rpage, PAGE_SIZE, r->cpu, 0) >= 0) {
		commit = local_read(&((struct rb_page *)ring_buffer_read_page_data(rpage))->commit);
		if (!(commit & RB_MISSED_EVENTS))
			continue;
		flagged++;
		KUNIT_EXPECT_FALSE_MSG(test, commit & RB_MISSED_STORED,
				       "a count stored for a loss of no size");
	}
	KUNIT_EXPECT_EQ(test, flagged, 1U);
	ring_buffer_free_read_page(buffer, r->cpu, rpage);
	ring_buffer_free(buffer);
}

/*
 * Every sub-buffer of the last boot torn: nothing is kept, and the first
 * event of this boot comes with a loss of no size, so that the reader
 * hears of the gap ("[LOST EVENTS]").
 */
static void rbp_all_torn(struct kunit *test)
{
	struct rbp *r = rbp_setup(test);
	struct trace_buffer *buffer;
	unsigned long lost = 0;
	unsigned int i;

	rbp_last_boot(r, 4, 0);
	rbp_baseline(r, true);
	memcpy(r->mem, r->image, r->size);
	for (i = 0; i < r->nbase; i++)
		local_set(&((struct rb_page *)r->base[i].subbuf)->commit, PAGE_SIZE);

	buffer = rbp_attach(r);
	KUNIT_EXPECT_EQ(test, ring_buffer_entries_cpu(buffer, r->cpu), 0UL);
	KUNIT_EXPECT_EQ(test, rbp_write(buffer, 0xfeed), 0);
	KUNIT_EXPECT_NOT_NULL(test, ring_buffer_consume(buffer, r->cpu, NULL, &lost));
	KUNIT_EXPECT_EQ(test, lost, RB_LOST_UNKNOWN);
	KUNIT_EXPECT_EQ(test, rb_check_invariants(buffer, r->cpu), 0);
	ring_buffer_free(buffer);
}

/*
 * Every sub-buffer whole, the reader's too: the oldest (the reader's)
 * gives way, so that this boot writes on a sub-buffer of its own. Its
 * events are the loss, reported and counted as overwritten; the rest
 * comes back without a gap, up to the last event written.
 */
static void rbp_all_whole(struct kunit *test)
{
	struct rbp *r = rbp_setup(test);
	struct trace_buffer *buffer = rbp_attach(r);
	struct ring_buffer_event *event;
	unsigned long lost = 0, l;
	unsigned int n, tag = 0, i;
	u32 got, first = 0;

	/* Overwrite the ring, take one event, overwrite it all again. */
	for (i = 0; i < 2; i++) {
		unsigned long bytes;

		for (bytes = 0; bytes < 2UL * RBP_CHUNK_SUBBUFS * PAGE_SIZE;
		     bytes += rb_event_bytes(rbp_len(tag++)))
			KUNIT_ASSERT_EQ(test, 0, rbp_write(buffer, tag));
		if (!i)
			KUNIT_ASSERT_NOT_NULL(test,
					      ring_buffer_consume(buffer, r->cpu, NULL, NULL));
	}
	ring_buffer_free(buffer);

	buffer = rbp_attach(r);
	for (n = 0; (event = ring_buffer_consume(buffer, r->cpu, NULL, &l)); n++) {
		memcpy(&got, ring_buffer_event_data(event), sizeof(got));
		KUNIT_EXPECT_TRUE(test, rbp_whole(event, got));
		if (!n)
			first = got;
		else
			KUNIT_EXPECT_EQ(test, got, first + n);
		lost += l;
	}
	KUNIT_EXPECT_EQ(test, first + n, tag);
	KUNIT_EXPECT_GT(test, lost, 0UL);
	KUNIT_EXPECT_EQ(test, lost, ring_buffer_overrun_cpu(buffer, r->cpu));
	KUNIT_EXPECT_EQ(test, rb_check_invariants(buffer, r->cpu), 0);
	ring_buffer_free(buffer);
}

/* ---- the fuzzer ---- */

static u32 rbp_rand(struct rnd_state *rnd, u32 below)
{
	return prandom_u32_state(rnd) % below;
}

/* One random corruption of the range: a bit, a word, a page, a length. */
static void rbp_corrupt(struct rbp *r, struct rnd_state *rnd)
{
	unsigned int pages = r->size / PAGE_SIZE, pg = rbp_rand(rnd, pages);
	void *page = r->mem + pg * PAGE_SIZE;
	struct rb_page *sb = page;

	switch (rbp_rand(rnd, 7)) {
	case 0:	/* a bit anywhere */
		((u8 *)r->mem)[rbp_rand(rnd, r->size)] ^= 1 << rbp_rand(rnd, 8);
		break;
	case 1:	/* a word anywhere */
		((u32 *)r->mem)[rbp_rand(rnd, r->size / 4)] = prandom_u32_state(rnd);
		break;
	case 2:	/* a whole sub-buffer of noise */
		prandom_bytes_state(rnd, page, PAGE_SIZE);
		break;
	case 3:	/* a length anywhere up to past the page */
		local_set(&sb->commit, rbp_rand(rnd, PAGE_SIZE + 64));
		break;
	case 4:	/* a length gone */
		local_set(&sb->commit, 0);
		break;
	case 5:	/* a word of a meta */
		((u32 *)rbp_meta(r, r->mem))[rbp_rand(rnd, 32)] = prandom_u32_state(rnd);
		break;
	case 6:	/* a word of an event near the start of a sub-buffer */
		((u32 *)sb->data)[rbp_rand(rnd, 64)] ^= prandom_u32_state(rnd);
		break;
	}
}

/* rbp_iters / 2 rounds on a last boot's image: one that @wrapped, or not. */
static void rbp_fuzz_image(struct rbp *r, struct rnd_state *rnd, bool wrapped)
{
	struct kunit *test = r->test;
	unsigned long lost;
	unsigned int i, k;
	char what[40];

	/*
	 * The wrapped image leaves the reader's sub-buffer empty: with all
	 * nr + 1 whole, the oldest would give way in the baseline but not in
	 * a round that tears another one.
	 */
	if (wrapped)
		rbp_last_boot(r, 3 * RBP_CHUNK_SUBBUFS, 0);
	else
		rbp_last_boot(r, 5, 7);
	rbp_baseline(r, !wrapped);
	for (i = 0; i < rbp_iters / 2; i++) {
		memcpy(r->mem, r->image, r->size);
		for (k = 1 + rbp_rand(rnd, 4); k; k--)
			rbp_corrupt(r, rnd);
		rbp_boot(r, &lost);
		snprintf(what, sizeof(what), "%s image, round %u",
			 wrapped ? "wrapped" : "short", i);
		rbp_judge(r, what);
		if (test->status == KUNIT_FAILURE)
			break;
		cond_resched();
	}
}

/*
 * Random corruptions of real last boots' images, one to four a round,
 * rbp_iters rounds from rbp_seed, half on an image that never wrapped and
 * half on one overwritten twice over: every attach satisfies the oracle at
 * the top of the file. Longer runs: "rbdev fuzz".
 */
static void rbp_fuzz(struct kunit *test)
{
	struct rbp *r = rbp_setup(test);
	struct rnd_state rnd;

	prandom_seed_state(&rnd, rbp_seed);
	rbp_fuzz_image(r, &rnd, false);
	rbp_fuzz_image(r, &rnd, true);
	kunit_info(test, "%u rounds from seed %u: resets seen %d, kept with a touched meta %d\n",
		   rbp_iters, rbp_seed, r->reset_seen, r->kept_seen);
}

/* ---- a crash at every test point ---- */

/*
 * One run of the crash script. The snapshot at hit @at is the memory a
 * crash there leaves; with @nest_at >= 0, a nested writer (an interrupt or
 * NMI) writes three events of three quarters of a sub-buffer at that hit,
 * so that the writer it interrupted publishes across three sub-buffers or
 * more.
 */
struct rbp_crash {
	struct rbp	*r;
	struct trace_buffer *buffer;
	int		at;		/* the hit to crash at; -1: none */
	int		nest_at;	/* the hit to nest a writer at; -1: none */
	int		read_at_hit;	/* the hit a reader takes a sub-buffer at; -1: none */
	int		hits;
	bool		in_hook;
	bool		in_reader;	/* the script is reading: the reader lock may be held */
	bool		taken;
	u32		next_tag;	/* live: tags handed out */
	unsigned int	committed;	/* live: commits returned (no nesting) */
	unsigned int	read;		/* live: 1 + the newest tag read, 0 if none */
	u32		tags_at;
	unsigned int	committed_at;
	unsigned int	read_at;
	/* the counting run's hits where a reader is about to store a slot */
	int		swaps[64];
	unsigned int	nswaps;
};

static int rbp_crash_write(struct rbp_crash *c, unsigned int len)
{
	u32 tag = c->next_tag++;
	struct ring_buffer_event *event;

	event = ring_buffer_lock_reserve(c->buffer, len ? len : rbp_len(tag));
	if (!event)
		return -EBUSY;
	rbp_fill(ring_buffer_event_data(event), tag);
	if (len)	/* the nested writer's payload: tag and pattern, then zeros */
		memset(ring_buffer_event_data(event) + rbp_len(tag), 0, len - rbp_len(tag));
	ring_buffer_unlock_commit(c->buffer);
	if (!len)
		c->committed++;
	return 0;
}

static void rbp_crash_hook(struct trace_buffer *buffer, int cpu, enum rb_test_point pt,
			   void *data)
{
	struct rbp_crash *c = data;
	int hit = c->hits++, i;

	/* Inside a reader's swap, between its head cmpxchg and its slot store. */
	if (c->at < 0 && c->nest_at < 0 && c->read_at_hit < 0 && c->in_reader &&
	    pt == RB_TP_SLOT_SET &&
	    c->nswaps < ARRAY_SIZE(c->swaps))
		c->swaps[c->nswaps++] = hit;

	if (hit == c->at) {
		memcpy(c->r->image, c->r->mem, c->r->size);
		c->tags_at = c->next_tag;
		c->committed_at = c->committed;
		c->read_at = c->read;
		c->taken = true;
	}
	/*
	 * A reader on another CPU takes a sub-buffer (a consume): the swap
	 * with the head may land between an eviction and the writer's entry.
	 */
	if (hit == c->read_at_hit && !c->in_hook && !c->in_reader) {
		struct ring_buffer_event *event;
		u32 tag;

		c->in_hook = true;
		event = ring_buffer_consume(buffer, cpu, NULL, NULL);
		if (event) {
			memcpy(&tag, ring_buffer_event_data(event), sizeof(tag));
			c->read = max(c->read, tag + 1);
		}
		c->in_hook = false;
	}
	if (hit == c->nest_at && !c->in_hook) {
		c->in_hook = true;
		ring_buffer_nest_start(buffer);
		for (i = 0; i < 3; i++)
			rbp_crash_write(c, 3 * (PAGE_SIZE - RB_PAGE_HDR) / 4);
		ring_buffer_nest_end(buffer);
		c->in_hook = false;
	}
}

/* Note the newest tag on a page that ring_buffer_read_page() filled. */
static void rbp_crash_page_read(struct rbp_crash *c, struct rb_page *page)
{
	unsigned int off = 0, len = local_read(&page->commit) & ~RB_MISSED_MASK, size;
	struct ring_buffer_event *e;
	u32 tag;

	for (; off < len; off += size) {
		e = (void *)&page->data[off];
		size = rb_event_size(e);
		if (!size)
			break;
		if (!rb_is_data(e))
			continue;
		memcpy(&tag, rb_event_payload(e), sizeof(tag));
		c->read = max(c->read, tag + 1);
	}
}

/*
 * Writes of every size, wrapping the ring of four several times
 * (evictions), consumes, page reads (copies: the pages are pinned).
 */
static void rbp_crash_script(struct kunit *test, struct rbp_crash *c, int cpu)
{
	static const int steps[] = { 40, -10, 120, 0, 60, -5, 0, 80 };
	struct buffer_data_read_page *rpage;
	struct ring_buffer_event *event;
	unsigned int i;
	int k;
	u32 tag;

	KUNIT_ASSERT_EQ(test, 0, ring_buffer_alloc_read_page(c->buffer, cpu, &rpage));
	for (i = 0; i < ARRAY_SIZE(steps); i++) {
		for (k = 0; k < steps[i]; k++)
			KUNIT_ASSERT_EQ(test, rbp_crash_write(c, 0), 0);
		c->in_reader = true;
		for (k = 0; k < -steps[i]; k++) {
			event = ring_buffer_consume(c->buffer, cpu, NULL, NULL);
			if (!event)
				break;
			memcpy(&tag, ring_buffer_event_data(event), sizeof(tag));
			c->read = max(c->read, tag + 1);
		}
		if (!steps[i] && ring_buffer_read_page(c->buffer, rpage, PAGE_SIZE, cpu, 0) >= 0)
			rbp_crash_page_read(c, ring_buffer_read_page_data(rpage));
		c->in_reader = false;
	}
	ring_buffer_free_read_page(c->buffer, cpu, rpage);
}

/* Run the script, crashing (and nesting) as @c says; returns the hits. */
static int rbp_crash_run(struct kunit *test, struct rbp_crash *c)
{
	struct rbp *r = c->r;

	memset(r->mem, 0, r->size);
	c->hits = 0;
	c->next_tag = 0;
	c->committed = 0;
	c->read = 0;
	c->taken = false;
	c->buffer = rbp_attach(r);
	rb_set_test_hook(c->buffer, rbp_crash_hook, c);
	rbp_crash_script(test, c, r->cpu);
	ring_buffer_free(c->buffer);
	return c->hits;
}

/*
 * The next boot on what the crash left: no torn sub-buffer (P2 held at
 * that instant), R1-R5, whole events in time order, only events that were
 * reserved, something if a committed event was unread, and, without a
 * nested writer (commits then come in tag order), the newest of them.
 */
static void rbp_crash_judge(struct kunit *test, struct rbp_crash *c)
{
	struct rbp *r = c->r;
	struct rb_range_meta *meta;
	unsigned long lost;
	unsigned int i;

	memcpy(r->mem, r->image, r->size);
	meta = rbp_meta(r, r->mem);
	rbp_boot(r, &lost);
	KUNIT_EXPECT_EQ_MSG(test, meta->dropped, 0ULL, "crash at hit %d (nest at %d): torn",
			    c->at, c->nest_at);
	for (i = 0; i < r->ngot; i++) {
		KUNIT_EXPECT_TRUE_MSG(test, r->got[i].whole,
				      "crash at hit %d (nest at %d): event %u",
				      c->at, c->nest_at, i);
		KUNIT_EXPECT_LT_MSG(test, r->got[i].tag, c->tags_at,
				    "crash at hit %d (nest at %d): never reserved",
				    c->at, c->nest_at);
		if (i)
			KUNIT_EXPECT_GT_MSG(test, r->got[i].ts, r->got[i - 1].ts,
					    "crash at hit %d (nest at %d): event %u out of order",
					    c->at, c->nest_at, i);
	}
	if (c->committed_at && c->read_at < c->committed_at) {
		KUNIT_EXPECT_GT_MSG(test, r->ngot, 0U, "crash at hit %d (nest at %d): all lost",
				    c->at, c->nest_at);
		if (r->ngot && c->nest_at < 0)
			KUNIT_EXPECT_GE_MSG(test, r->got[r->ngot - 1].tag + 1, c->committed_at,
					    "crash at hit %d: the newest event lost", c->at);
	}
}

/* Crash at every @step-th of the hits from @from, up to 200 on (or all). */
static unsigned int rbp_crash_window(struct kunit *test, struct rbp_crash *c, int from,
				     int len)
{
	unsigned int runs = 0, step = max(rbp_crash_every, 1U);
	int hits;

	c->at = -1;
	hits = rbp_crash_run(test, c);
	for (c->at = from; c->at < min(hits, from + len) && test->status != KUNIT_FAILURE;
	     c->at += step, runs++) {
		rbp_crash_run(test, c);
		KUNIT_ASSERT_TRUE(test, c->taken);
		rbp_crash_judge(test, c);
	}
	return runs;
}

/*
 * A crash at every test point of the script on a ring of @subbufs - 2
 * slots; then at the 200 points after each place a nested writer fills
 * three sub-buffers: every reader swap's window and every 37th point; after
 * every 37th where a reader on another CPU takes a sub-buffer (outside the
 * script's own reads), and after both together: the next boot must find
 * what rbp_crash_judge() asks.
 */
static void rbp_crash_ring(struct kunit *test, unsigned int subbufs)
{
	struct rbp *r = rbp_setup_chunk(test, subbufs);
	struct rbp_crash c = { .r = r, .at = -1, .nest_at = -1, .read_at_hit = -1 };
	unsigned int runs;
	int total, j;

	rb_test_hooks_enable(true);
	total = rbp_crash_run(test, &c);
	KUNIT_ASSERT_GT(test, total, 1000);
	KUNIT_ASSERT_GT(test, c.nswaps, 0U);
	runs = rbp_crash_window(test, &c, 0, total);
	/* A writer (an NMI) inside every reader swap's window: it may enter the
	 * slot behind the head that the reader has not stored yet (R1).
	 */
	for (j = 0; j < c.nswaps && test->status != KUNIT_FAILURE; j++) {
		c.nest_at = c.swaps[j];
		runs += rbp_crash_window(test, &c, c.swaps[j], 200);
	}
	for (j = 0; j < total && test->status != KUNIT_FAILURE; j += 37) {
		c.nest_at = j;
		c.read_at_hit = -1;
		runs += rbp_crash_window(test, &c, j, 200);
		c.nest_at = -1;
		c.read_at_hit = j;
		runs += rbp_crash_window(test, &c, j, 200);
		c.nest_at = j;
		c.read_at_hit = j + 1 + j % 61;
		runs += rbp_crash_window(test, &c, j, 200);
	}
	rb_test_hooks_enable(false);
	kunit_info(test, "%u crashes over %d test points\n", runs, total);
}

static void rbp_crash_everywhere(struct kunit *test)
{
	rbp_crash_ring(test, RBP_CRASH_SUBBUFS);
}

/* The same on the smallest ring: two slots and the reader's sub-buffer. */
static void rbp_crash_smallest(struct kunit *test)
{
	rbp_crash_ring(test, 4);
}

struct rbp_reset_crash {
	struct rbp	*r;
	int		at;	/* the slot store to crash at */
	int		hits;
	bool		taken;
};

static void rbp_reset_hook(struct trace_buffer *buffer, int cpu, enum rb_test_point pt,
			   void *data)
{
	struct rbp_reset_crash *c = data;

	if (pt == RB_TP_SLOT_SET && c->hits++ == c->at) {
		memcpy(c->r->image, c->r->mem, c->r->size);
		c->taken = true;
	}
}

/*
 * A crash in the middle of a reset of the last boot's events, at each of
 * its slot stores: the old ring is half cleared then, with gaps, and the
 * reader's page may sit anywhere in it. The next boot must take the reset
 * as done and find nothing, not read the rest of what it was clearing.
 */
static void rbp_crash_in_reset(struct kunit *test)
{
	struct rbp *r = rbp_setup(test);
	struct rbp_reset_crash c = { .r = r };
	struct trace_buffer *buffer;
	unsigned long lost;

	rb_test_hooks_enable(true);
	for (c.at = 0; test->status != KUNIT_FAILURE; c.at++) {
		rbp_last_boot(r, 4, 5);
		memcpy(r->mem, r->image, r->size);
		buffer = rbp_attach(r);
		c.hits = 0;
		c.taken = false;
		rb_set_test_hook(buffer, rbp_reset_hook, &c);
		ring_buffer_reset_cpu(buffer, r->cpu);
		rb_set_test_hook(buffer, NULL, NULL);
		ring_buffer_free(buffer);
		if (!c.taken)
			break;
		memcpy(r->mem, r->image, r->size);
		rbp_boot(r, &lost);
		KUNIT_EXPECT_EQ_MSG(test, r->ngot, 0U, "crash at slot store %d of the reset", c.at);
	}
	rb_test_hooks_enable(false);
	KUNIT_EXPECT_GT(test, c.at, 1);
}

/*
 * A range at address 0, or one that runs past the top of the address
 * space, is refused before anything is written: a range_start of 0 is how
 * a buffer says it has none, and a wrapped range puts its chunks below its
 * start. A range that fits is laid out.
 */
static void rbp_bad_range(struct kunit *test)
{
	struct trace_buffer *fake = kunit_kzalloc(test, sizeof(*fake), GFP_KERNEL);
	unsigned long size = nr_cpu_ids * RBP_CHUNK_SUBBUFS * PAGE_SIZE;
	unsigned long wraps = (0UL - size / 2) & PAGE_MASK;
	struct trace_buffer *buffer;

	KUNIT_ASSERT_NOT_NULL(test, fake);
	fake->subbuf_size = PAGE_SIZE;
	KUNIT_EXPECT_EQ(test, rb_range_layout(fake, 0, size), -EINVAL);
	KUNIT_EXPECT_EQ(test, rb_range_layout(fake, wraps, size), -EINVAL);
	KUNIT_EXPECT_EQ(test, rb_range_layout(fake, PAGE_SIZE, size), 0);

	buffer = ring_buffer_alloc_range(0, RB_FL_OVERWRITE, 0, 0, size);
	KUNIT_EXPECT_NULL(test, buffer);
	if (buffer)
		ring_buffer_free(buffer);
}

static int rbp_init(struct kunit *test)
{
	atomic64_set(&rbp_now, 1000);
	return 0;
}

static struct kunit_case rbp_cases[] = {
	KUNIT_CASE(rbp_meta_fields),
	KUNIT_CASE(rbp_accounting),
	KUNIT_CASE(rbp_torn_read_page),
	KUNIT_CASE(rbp_all_torn),
	KUNIT_CASE(rbp_all_whole),
	KUNIT_CASE(rbp_bad_range),
	KUNIT_CASE(rbp_crash_in_reset),
	KUNIT_CASE_SLOW(rbp_crash_everywhere),
	KUNIT_CASE_SLOW(rbp_crash_smallest),
	KUNIT_CASE_SLOW(rbp_fuzz),
	{}
};

static struct kunit_suite rbp_suite = {
	.name = "ring_buffer_persist",
	.init = rbp_init,
	.test_cases = rbp_cases,
};

kunit_test_suites(&rbp_suite);

MODULE_DESCRIPTION("Ring buffer: persistent buffers against a corrupted last boot");
MODULE_LICENSE("GPL");
MODULE_IMPORT_NS(EXPORTED_FOR_KUNIT_TESTING);
