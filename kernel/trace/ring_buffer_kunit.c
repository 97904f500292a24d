// SPDX-License-Identifier: GPL-2.0
/*
 * KUnit tests for the ring buffer.
 *
 * The tests use only include/linux/ring_buffer.h and the reader ABI: the
 * layout of sub-buffers and events that trace-cmd and libtraceevent parse,
 * and that a read page is page-allocator memory splice takes references on.
 * No test looks inside ring_buffer.c, so the same file checks whichever
 * implementation is built.
 *
 * The reader ABI, as these tests check it (64-bit):
 *
 *   sub-buffer:  u64 time_stamp | unsigned long commit | data (16-byte header)
 *   commit:      bits 0..29 bytes of data; bit 31 events were lost before
 *                this sub-buffer; bit 30 their count follows the data
 *   event:       u32 type_len:5, time_delta:27, then array[]
 *
 * Time is the test's own: every buffer gets rbt_clock(), which returns
 * rbt_now after adding rbt_step, so a test with rbt_step == 0 decides each
 * event's time stamp exactly.
 *
 * A test case pins its thread to the CPU it starts on, so every write lands
 * in the per-CPU buffer the test then reads.
 */

#include <kunit/test.h>
#include <linux/completion.h>
#include <linux/cpu.h>
#include <linux/delay.h>
#include <linux/hrtimer.h>
#include <linux/kthread.h>
#include <linux/module.h>
#include <linux/poll.h>
#include <linux/ring_buffer.h>
#include <linux/sched.h>
#include <linux/slab.h>
#include <linux/trace_seq.h>
#include <linux/vmalloc.h>

/* The reader ABI; the tests spell it out rather than include the code's. */
struct rbt_subbuf {
	u64		time_stamp;
	unsigned long	commit;
	unsigned char	data[];
};

#define RBT_HDR			offsetof(struct rbt_subbuf, data)
#define RBT_MISSED_EVENTS	BIT(31)
#define RBT_MISSED_STORED	BIT(30)
#define RBT_LEN_MASK		((1UL << 27) - 1)
#define RBT_TYPE_PADDING	29
#define RBT_TYPE_TIME_EXTEND	30
#define RBT_TYPE_TIME_STAMP	31
#define RBT_DELTA_BITS		27
#define RBT_SMALL_MAX		112

/* Architectures without efficient unaligned access keep events 8-aligned. */
#define RBT_FORCE_8 IS_ENABLED(CONFIG_HAVE_64BIT_ALIGNED_ACCESS)

static atomic64_t rbt_now;
static u64 rbt_step;

static u64 rbt_clock(void)
{
	return atomic64_add_return(READ_ONCE(rbt_step), &rbt_now);
}

static void rbt_set_time(u64 t)
{
	atomic64_set(&rbt_now, t);
}

struct rbt_ctx {
	int cpu;
};

static int rbt_cpu(struct kunit *test)
{
	return ((struct rbt_ctx *)test->priv)->cpu;
}

static int rbt_init(struct kunit *test)
{
	struct rbt_ctx *ctx = kunit_kzalloc(test, sizeof(*ctx), GFP_KERNEL);

	if (!ctx)
		return -ENOMEM;
	ctx->cpu = raw_smp_processor_id();
	/* The thread dies with the test case, and the affinity with it. */
	if (set_cpus_allowed_ptr(current, cpumask_of(ctx->cpu)))
		return -EINVAL;
	test->priv = ctx;
	WRITE_ONCE(rbt_step, 0);
	rbt_set_time(1000);
	return 0;
}

static void rbt_free_action(void *buffer)
{
	ring_buffer_free(buffer);
}

static struct trace_buffer *rbt_alloc(struct kunit *test, unsigned long size,
				      unsigned int flags)
{
	struct trace_buffer *buffer = ring_buffer_alloc(size, flags);

	KUNIT_ASSERT_NOT_NULL(test, buffer);
	KUNIT_ASSERT_EQ(test, 0, kunit_add_action_or_reset(test, rbt_free_action, buffer));
	ring_buffer_set_clock(buffer, rbt_clock);
	return buffer;
}

/* Bytes of event data in one sub-buffer. */
static unsigned int rbt_capacity(struct trace_buffer *buffer)
{
	return ring_buffer_subbuf_size_get(buffer) - RBT_HDR;
}

/* Sizes count sub-buffers' data bytes: this many order-0 sub-buffers. */
#define RBT_SUBBUFS(n)	((n) * (PAGE_SIZE - RBT_HDR))

/*
 * Payload bytes: the first four carry a tag that says who wrote the event;
 * the rest follow from the tag, so any corruption shows.
 */
static void rbt_fill(void *data, unsigned int len, u32 tag)
{
	u8 *p = data;
	unsigned int i;

	for (i = 0; i < len; i++)
		p[i] = i < sizeof(tag) ? ((u8 *)&tag)[i] : (u8)(tag * 31 + i);
}

static bool rbt_payload_ok(const void *data, unsigned int len, u32 tag)
{
	const u8 *p = data;
	unsigned int i;

	for (i = 0; i < len; i++)
		if (p[i] != (i < sizeof(tag) ? ((u8 *)&tag)[i] : (u8)(tag * 31 + i)))
			return false;
	return true;
}

static u32 rbt_tag(const void *data)
{
	u32 tag;

	memcpy(&tag, data, sizeof(tag));
	return tag;
}

static int rbt_write(struct trace_buffer *buffer, unsigned int len, u32 tag)
{
	struct ring_buffer_event *event = ring_buffer_lock_reserve(buffer, len);

	if (!event)
		return -EBUSY;
	rbt_fill(ring_buffer_event_data(event), len, tag);
	return ring_buffer_unlock_commit(buffer);
}

static int rbt_write_at(struct trace_buffer *buffer, u64 t, unsigned int len, u32 tag)
{
	rbt_set_time(t);
	return rbt_write(buffer, len, tag);
}

/*
 * The size an event of @len payload bytes takes in a sub-buffer, from the
 * ABI: a 4-byte header, payloads over 112 bytes (or all, where 8-byte
 * alignment is forced) carry their length in array[0], everything is rounded
 * to the alignment, and 12 bytes become 16 so that a TIME_EXTEND (8 bytes)
 * plus the smallest padding (8 bytes) can always replace an event.
 */
static unsigned int rbt_event_bytes(unsigned int len)
{
	unsigned int bytes = max(len, 1U) + 4;

	if (RBT_FORCE_8 || len > RBT_SMALL_MAX)
		return ALIGN(bytes + 4, RBT_FORCE_8 ? 8 : 4);
	bytes = ALIGN(bytes, 4);
	return bytes == 12 ? 16 : bytes;
}

/* What ring_buffer_event_length() reports: the usable payload size. */
static unsigned int rbt_event_room(unsigned int len)
{
	unsigned int bytes = rbt_event_bytes(len);

	return (RBT_FORCE_8 || len > RBT_SMALL_MAX) ? bytes - 8 : bytes - 4;
}

/* ---- decoding a sub-buffer the way libtraceevent does ---- */

struct rbt_ev {
	u64		ts;
	unsigned int	type_len;
	unsigned int	delta;
	unsigned int	bytes;	/* on the sub-buffer, header included */
	unsigned int	offset;	/* from the start of the data */
	bool		after_extend;
	bool		after_stamp;
	void		*data;
};

struct rbt_page {
	u64		time_stamp;
	unsigned long	commit;
	unsigned int	len;		/* commit & RBT_LEN_MASK */
	unsigned int	nr;		/* data events */
	unsigned int	discarded;	/* padding events with a length */
	unsigned int	extends;
	unsigned int	stamps;
	bool		end_padding;
	struct rbt_ev	ev[128];	/* 4072-byte events fill order 7 with 128 */
};

/* Walk one sub-buffer; fail the test on anything the ABI does not allow. */
static void rbt_decode(struct kunit *test, void *subbuf, unsigned int capacity,
		       struct rbt_page *pg)
{
	struct rbt_subbuf *sb = subbuf;
	unsigned int off = 0;
	bool extend = false, stamp = false;
	u64 ts;

	memset(pg, 0, sizeof(*pg));
	pg->time_stamp = sb->time_stamp;
	pg->commit = sb->commit;
	pg->len = sb->commit & RBT_LEN_MASK;
	KUNIT_ASSERT_LE(test, pg->len, capacity);
	ts = sb->time_stamp;

	while (off < pg->len) {
		struct ring_buffer_event *e = (void *)(sb->data + off);
		u64 val;

		KUNIT_ASSERT_LE(test, off + 4, pg->len);
		switch (e->type_len) {
		case RBT_TYPE_PADDING:
			if (!e->time_delta) {
				pg->end_padding = true;
				return;
			}
			pg->discarded++;
			KUNIT_ASSERT_GE(test, e->array[0], 4U);
			off += 4 + e->array[0];
			continue;
		case RBT_TYPE_TIME_EXTEND:
			ts += ((u64)e->array[0] << RBT_DELTA_BITS) | e->time_delta;
			pg->extends++;
			extend = true;
			off += 8;
			continue;
		case RBT_TYPE_TIME_STAMP:
			val = ((u64)e->array[0] << RBT_DELTA_BITS) | e->time_delta;
			/* 59 bits are stored; the top ones come from the page. */
			ts = val | (sb->time_stamp & ~((1ULL << 59) - 1));
			pg->stamps++;
			stamp = true;
			off += 8;
			continue;
		}
		ts += e->time_delta;
		KUNIT_ASSERT_LT(test, pg->nr, (unsigned int)ARRAY_SIZE(pg->ev));
		pg->ev[pg->nr] = (struct rbt_ev) {
			.ts = ts,
			.type_len = e->type_len,
			.delta = e->time_delta,
			.bytes = e->type_len ? 4 + 4 * e->type_len : 4 + e->array[0],
			.offset = off,
			.after_extend = extend,
			.after_stamp = stamp,
			.data = e->type_len ? (void *)&e->array[0] : (void *)&e->array[1],
		};
		KUNIT_ASSERT_GE(test, pg->ev[pg->nr].bytes, 8U);
		off += pg->ev[pg->nr].bytes;
		pg->nr++;
		extend = false;
		stamp = false;
	}
	KUNIT_EXPECT_EQ(test, off, pg->len);
}

struct rbt_reader {
	struct trace_buffer		*buffer;
	int				cpu;
	struct buffer_data_read_page	*rpage;
};

static void rbt_reader_free(void *arg)
{
	struct rbt_reader *r = arg;

	if (r->rpage)
		ring_buffer_free_read_page(r->buffer, r->cpu, r->rpage);
}

static struct rbt_reader *rbt_reader(struct kunit *test, struct trace_buffer *buffer, int cpu)
{
	struct rbt_reader *r = kunit_kzalloc(test, sizeof(*r), GFP_KERNEL);

	KUNIT_ASSERT_NOT_NULL(test, r);
	r->buffer = buffer;
	r->cpu = cpu;
	KUNIT_ASSERT_EQ(test, 0, ring_buffer_alloc_read_page(buffer, cpu, &r->rpage));
	KUNIT_ASSERT_NOT_NULL(test, r->rpage);
	KUNIT_ASSERT_EQ(test, 0, kunit_add_action_or_reset(test, rbt_reader_free, r));
	return r;
}

/* ring_buffer_read_page() into the reader's page, then decode it. */
static int rbt_read_page(struct kunit *test, struct rbt_reader *r, int full,
			 struct rbt_page *pg)
{
	int ret;

	/* An order change since allocation hands back a page of the new order. */
	KUNIT_ASSERT_EQ(test, 0, ring_buffer_alloc_read_page(r->buffer, r->cpu, &r->rpage));
	ret = ring_buffer_read_page(r->buffer, r->rpage,
				    ring_buffer_read_page_size(r->rpage), r->cpu, full);
	if (ret >= 0)
		rbt_decode(test, ring_buffer_read_page_data(r->rpage),
			   ring_buffer_read_page_size(r->rpage) - RBT_HDR, pg);
	return ret;
}

/* ---- the sub-buffer and event encoding ---- */

static void rbt_subbuf_header(struct kunit *test)
{
	struct trace_buffer *buffer = rbt_alloc(test, RBT_SUBBUFS(4), 0);
	struct rbt_reader *r = rbt_reader(test, buffer, rbt_cpu(test));
	struct rbt_page *pg = kunit_kzalloc(test, sizeof(*pg), GFP_KERNEL);
	static const u64 t[] = { 5000, 5010, 5030, 5030 };
	unsigned int i, used = 0;

	KUNIT_ASSERT_NOT_NULL(test, pg);
	/* u64 time stamp, long commit, data aligned to 8 where forced, else 4. */
	KUNIT_EXPECT_EQ(test, RBT_HDR, IS_ENABLED(CONFIG_64BIT) || RBT_FORCE_8 ? 16UL : 12UL);
	KUNIT_EXPECT_EQ(test, ring_buffer_subbuf_size_get(buffer), (int)PAGE_SIZE);
	KUNIT_EXPECT_EQ(test, ring_buffer_read_page_size(r->rpage), PAGE_SIZE);

	for (i = 0; i < ARRAY_SIZE(t); i++)
		KUNIT_ASSERT_EQ(test, 0, rbt_write_at(buffer, t[i], 8, 100 + i));

	KUNIT_ASSERT_EQ(test, 0, rbt_read_page(test, r, 0, pg));
	KUNIT_EXPECT_EQ(test, pg->time_stamp, t[0]);
	KUNIT_EXPECT_EQ(test, pg->commit & ~RBT_LEN_MASK, 0UL);
	KUNIT_ASSERT_EQ(test, pg->nr, (unsigned int)ARRAY_SIZE(t));
	KUNIT_EXPECT_EQ(test, pg->extends + pg->stamps + pg->discarded, 0U);
	for (i = 0; i < ARRAY_SIZE(t); i++) {
		KUNIT_EXPECT_EQ(test, pg->ev[i].ts, t[i]);
		KUNIT_EXPECT_EQ(test, (u64)pg->ev[i].delta, t[i] - (i ? t[i - 1] : t[0]));
		KUNIT_EXPECT_EQ(test, pg->ev[i].bytes, rbt_event_bytes(8));
		KUNIT_EXPECT_EQ(test, pg->ev[i].type_len, RBT_FORCE_8 ? 0U : 3U);
		KUNIT_EXPECT_TRUE(test, rbt_payload_ok(pg->ev[i].data, 8, 100 + i));
		used += pg->ev[i].bytes;
	}
	KUNIT_EXPECT_EQ(test, pg->len, used);
	KUNIT_EXPECT_TRUE(test, ring_buffer_empty_cpu(buffer, rbt_cpu(test)));
}

/* Every payload size from 1 to 300 bytes: type_len, array[0], rounding, data. */
static void rbt_payload_sizes(struct kunit *test)
{
	struct trace_buffer *buffer = rbt_alloc(test, RBT_SUBBUFS(64), 0);
	int cpu = rbt_cpu(test);
	unsigned int len;

	for (len = 1; len <= 300; len++) {
		struct ring_buffer_event *event;
		unsigned int bytes = rbt_event_bytes(len);
		u32 *word;
		u64 ts;

		ring_buffer_reset_cpu(buffer, cpu);
		rbt_set_time(len * 10);
		event = ring_buffer_lock_reserve(buffer, len);
		KUNIT_ASSERT_NOT_NULL(test, event);
		KUNIT_EXPECT_EQ(test, ring_buffer_event_length(event), rbt_event_room(len));
		rbt_fill(ring_buffer_event_data(event), len, len);
		KUNIT_ASSERT_EQ(test, 0, ring_buffer_unlock_commit(buffer));

		event = ring_buffer_peek(buffer, cpu, &ts, NULL);
		KUNIT_ASSERT_NOT_NULL(test, event);
		KUNIT_EXPECT_EQ(test, ts, (u64)len * 10);
		word = (u32 *)event;
		if (RBT_FORCE_8 || len > RBT_SMALL_MAX) {
			KUNIT_EXPECT_EQ_MSG(test, (unsigned int)event->type_len, 0U, "len %u", len);
			KUNIT_EXPECT_EQ_MSG(test, word[1], bytes - 4, "len %u", len);
			KUNIT_EXPECT_PTR_EQ(test, ring_buffer_event_data(event), (void *)&word[2]);
		} else {
			KUNIT_EXPECT_EQ_MSG(test, (unsigned int)event->type_len, (bytes - 4) / 4,
					    "len %u", len);
			KUNIT_EXPECT_PTR_EQ(test, ring_buffer_event_data(event), (void *)&word[1]);
		}
		KUNIT_EXPECT_EQ(test, ring_buffer_event_length(event), rbt_event_room(len));
		KUNIT_EXPECT_TRUE_MSG(test, rbt_payload_ok(ring_buffer_event_data(event), len, len),
				      "payload of %u bytes", len);
		KUNIT_EXPECT_EQ(test, ring_buffer_bytes_cpu(buffer, cpu), (unsigned long)bytes);
	}
}

/* Events that do not fit move to the next sub-buffer; the rest is padding. */
static void rbt_subbuf_end(struct kunit *test)
{
	struct trace_buffer *buffer = rbt_alloc(test, RBT_SUBBUFS(8), 0);
	struct rbt_reader *r = rbt_reader(test, buffer, rbt_cpu(test));
	struct rbt_page *pg = kunit_kzalloc(test, sizeof(*pg), GFP_KERNEL);
	unsigned int cap = rbt_capacity(buffer), len = 200, bytes = rbt_event_bytes(len);
	unsigned int per_page = cap / bytes, i;

	KUNIT_ASSERT_NOT_NULL(test, pg);
	KUNIT_ASSERT_LE(test, per_page, (unsigned int)ARRAY_SIZE(pg->ev));
	for (i = 0; i < per_page + 1; i++)
		KUNIT_ASSERT_EQ(test, 0, rbt_write_at(buffer, 100 + i, len, i));

	/* The first sub-buffer is complete: a full read takes it. */
	KUNIT_ASSERT_EQ(test, 0, rbt_read_page(test, r, 1, pg));
	KUNIT_EXPECT_EQ(test, pg->nr, per_page);
	KUNIT_EXPECT_EQ(test, pg->len, per_page * bytes);
	for (i = 0; i < pg->nr; i++) {
		KUNIT_EXPECT_EQ(test, rbt_tag(pg->ev[i].data), i);
		KUNIT_EXPECT_EQ(test, pg->ev[i].ts, 100ULL + i);
	}
	/* The one that did not fit starts the next sub-buffer, with its time. */
	KUNIT_ASSERT_EQ(test, 0, rbt_read_page(test, r, 0, pg));
	KUNIT_ASSERT_EQ(test, pg->nr, 1U);
	KUNIT_EXPECT_EQ(test, pg->time_stamp, 100ULL + per_page);
	KUNIT_EXPECT_EQ(test, pg->ev[0].delta, 0U);
	KUNIT_EXPECT_EQ(test, rbt_tag(pg->ev[0].data), per_page);
}

/*
 * A discarded event that is the last one written is taken back; one that is
 * followed by another becomes padding that readers skip.
 */
static void rbt_discard(struct kunit *test)
{
	struct trace_buffer *buffer = rbt_alloc(test, RBT_SUBBUFS(4), 0);
	int cpu = rbt_cpu(test);
	struct rbt_reader *r = rbt_reader(test, buffer, cpu);
	struct rbt_page *pg = kunit_kzalloc(test, sizeof(*pg), GFP_KERNEL);
	struct ring_buffer_event *outer, *event;
	u64 ts;

	KUNIT_ASSERT_NOT_NULL(test, pg);
	KUNIT_ASSERT_EQ(test, 0, rbt_write_at(buffer, 10, 16, 1));

	/* Last one written: gone without a trace. */
	event = ring_buffer_lock_reserve(buffer, 40);
	KUNIT_ASSERT_NOT_NULL(test, event);
	ring_buffer_discard_commit(buffer, event);
	KUNIT_EXPECT_EQ(test, ring_buffer_entries_cpu(buffer, cpu), 1UL);

	/* Followed by a nested write: it stays as padding. */
	rbt_set_time(20);
	outer = ring_buffer_lock_reserve(buffer, 40);
	KUNIT_ASSERT_NOT_NULL(test, outer);
	ring_buffer_nest_start(buffer);
	KUNIT_EXPECT_EQ(test, 0, rbt_write_at(buffer, 30, 16, 2));
	ring_buffer_nest_end(buffer);
	ring_buffer_discard_commit(buffer, outer);
	KUNIT_EXPECT_EQ(test, 0, rbt_write_at(buffer, 40, 16, 3));
	KUNIT_EXPECT_EQ(test, ring_buffer_entries_cpu(buffer, cpu), 3UL);

	event = ring_buffer_peek(buffer, cpu, &ts, NULL);
	KUNIT_ASSERT_NOT_NULL(test, event);
	KUNIT_EXPECT_EQ(test, rbt_tag(ring_buffer_event_data(event)), 1U);

	KUNIT_ASSERT_EQ(test, 0, rbt_read_page(test, r, 0, pg));
	KUNIT_EXPECT_EQ(test, pg->discarded, 1U);
	KUNIT_ASSERT_EQ(test, pg->nr, 3U);
	KUNIT_EXPECT_EQ(test, rbt_tag(pg->ev[0].data), 1U);
	KUNIT_EXPECT_EQ(test, rbt_tag(pg->ev[1].data), 2U);
	KUNIT_EXPECT_EQ(test, rbt_tag(pg->ev[2].data), 3U);
	KUNIT_EXPECT_EQ(test, pg->ev[0].ts, 10ULL);
	KUNIT_EXPECT_EQ(test, pg->ev[2].ts, 40ULL);
	/* An interrupting write may carry an 8-byte time record before it. */
	KUNIT_EXPECT_EQ(test, pg->ev[1].offset,
			rbt_event_bytes(16) + rbt_event_bytes(40) +
			(pg->ev[1].after_stamp || pg->ev[1].after_extend ? 8 : 0));
	KUNIT_EXPECT_EQ(test, pg->ev[1].ts, 30ULL);
}

/* The largest event for each order fits; one byte more is refused. */
static void rbt_largest_event(struct kunit *test)
{
	struct trace_buffer *buffer = rbt_alloc(test, RBT_SUBBUFS(16), 0);
	int cpu = rbt_cpu(test);
	int order;

	for (order = 0; order <= 3; order++) {
		struct ring_buffer_event *event;
		unsigned long max;

		KUNIT_ASSERT_EQ(test, 0, ring_buffer_subbuf_order_set(buffer, order));
		max = ring_buffer_max_event_size(buffer);
		/*
		 * The largest payload leaves room for the 8-byte header of a
		 * type_len 0 event. After an order change upstream keeps the
		 * order-0 limit; what matters to trace_marker is that reserve
		 * agrees with ring_buffer_max_event_size().
		 */
		if (order == 0)
			KUNIT_EXPECT_EQ(test, max, (unsigned long)rbt_capacity(buffer) - 8);
		KUNIT_EXPECT_GE(test, max, PAGE_SIZE - RBT_HDR - 8);
		KUNIT_EXPECT_LE(test, max, (unsigned long)rbt_capacity(buffer) - 8);

		KUNIT_EXPECT_NULL(test, ring_buffer_lock_reserve(buffer, max + 1));
		KUNIT_EXPECT_EQ(test, -EBUSY, rbt_write(buffer, max + 1, 0));
		KUNIT_EXPECT_EQ(test, 0, rbt_write(buffer, max, order));
		KUNIT_EXPECT_EQ(test, 0, rbt_write(buffer, max, order + 10));
		event = ring_buffer_consume(buffer, cpu, NULL, NULL);
		KUNIT_ASSERT_NOT_NULL(test, event);
		KUNIT_EXPECT_GE(test, ring_buffer_event_length(event), (unsigned int)max);
		KUNIT_EXPECT_TRUE(test, rbt_payload_ok(ring_buffer_event_data(event), max, order));
		event = ring_buffer_consume(buffer, cpu, NULL, NULL);
		KUNIT_ASSERT_NOT_NULL(test, event);
		KUNIT_EXPECT_TRUE(test, rbt_payload_ok(ring_buffer_event_data(event), max,
						       order + 10));
		KUNIT_EXPECT_NULL(test, ring_buffer_consume(buffer, cpu, NULL, NULL));
	}
}

/* The header files libtraceevent parses. */
static void rbt_header_files(struct kunit *test)
{
	struct trace_buffer *buffer = rbt_alloc(test, RBT_SUBBUFS(4), 0);
	struct trace_seq *s = kunit_kzalloc(test, sizeof(*s), GFP_KERNEL);
	char want[96];

	KUNIT_ASSERT_NOT_NULL(test, s);
	trace_seq_init(s);
	ring_buffer_print_page_header(buffer, s);
	snprintf(want, sizeof(want), "\tfield: u64 timestamp;\toffset:0;\tsize:8;\tsigned:0;\n");
	KUNIT_EXPECT_NOT_NULL(test, strstr(s->buffer, want));
	snprintf(want, sizeof(want), "\tfield: local_t commit;\toffset:8;\tsize:%zu;\tsigned:1;\n",
		 sizeof(long));
	KUNIT_EXPECT_NOT_NULL(test, strstr(s->buffer, want));
	snprintf(want, sizeof(want), "\tfield: int overwrite;\toffset:8;\tsize:1;\tsigned:1;\n");
	KUNIT_EXPECT_NOT_NULL(test, strstr(s->buffer, want));
	snprintf(want, sizeof(want), "\tfield: char data;\toffset:%zu;\tsize:%u;\tsigned:0;\n",
		 RBT_HDR, rbt_capacity(buffer));
	KUNIT_EXPECT_NOT_NULL(test, strstr(s->buffer, want));

	trace_seq_init(s);
	ring_buffer_print_entry_header(s);
	KUNIT_EXPECT_NOT_NULL(test, strstr(s->buffer, "\ttype_len    :    5 bits\n"));
	KUNIT_EXPECT_NOT_NULL(test, strstr(s->buffer, "\ttime_delta  :   27 bits\n"));
	KUNIT_EXPECT_NOT_NULL(test, strstr(s->buffer, "\tpadding     : type == 29\n"));
	KUNIT_EXPECT_NOT_NULL(test, strstr(s->buffer, "\ttime_extend : type == 30\n"));
	KUNIT_EXPECT_NOT_NULL(test, strstr(s->buffer, "\ttime_stamp : type == 31\n"));
	KUNIT_EXPECT_NOT_NULL(test, strstr(s->buffer, "\tdata max type_len  == 28\n"));
}

/*
 * A consuming read reports a loss with the first data event after it,
 * even when a discarded event comes first: an interrupt's write moved the
 * writer on while the event it interrupted sat alone at the start of its
 * sub-buffer, and that event was then discarded (as a filter does).
 */
static void rbt_loss_behind_discarded(struct kunit *test)
{
	struct trace_buffer *buffer = rbt_alloc(test, RBT_SUBBUFS(2), RB_FL_OVERWRITE);
	unsigned int cap = PAGE_SIZE - RBT_HDR, w = cap / 2 - 32, b = cap - w - 8;
	struct ring_buffer_event *a, *e;
	int cpu = rbt_cpu(test);
	unsigned long lost = 0;
	void *data;
	int i;

	data = kunit_kzalloc(test, cap, GFP_KERNEL);
	KUNIT_ASSERT_NOT_NULL(test, data);
	/* Two events fill each sub-buffer. */
	for (i = 0; i < 4; i++)
		KUNIT_ASSERT_EQ(test, 0, ring_buffer_write(buffer, w, data));
	/* One more moves on (two lost) and is given back: the commit follows. */
	e = ring_buffer_lock_reserve(buffer, w);
	KUNIT_ASSERT_NOT_NULL(test, e);
	ring_buffer_discard_commit(buffer, e);
	a = ring_buffer_lock_reserve(buffer, w);
	KUNIT_ASSERT_NOT_NULL(test, a);
	ring_buffer_nest_start(buffer);
	/* Does not fit behind A: moves on again, two more lost. */
	e = ring_buffer_lock_reserve(buffer, b);
	KUNIT_ASSERT_NOT_NULL(test, e);
	ring_buffer_unlock_commit(buffer);
	ring_buffer_nest_end(buffer);
	ring_buffer_discard_commit(buffer, a);
	KUNIT_EXPECT_EQ(test, ring_buffer_overrun_cpu(buffer, cpu), 4UL);

	e = ring_buffer_consume(buffer, cpu, NULL, &lost);
	KUNIT_ASSERT_NOT_NULL(test, e);
	KUNIT_EXPECT_GE(test, ring_buffer_event_length(e), b);
	KUNIT_EXPECT_EQ(test, lost, 4UL);
	KUNIT_EXPECT_NULL(test, ring_buffer_consume(buffer, cpu, NULL, &lost));
}

static struct kunit_case rbt_abi_cases[] = {
	KUNIT_CASE(rbt_subbuf_header),
	KUNIT_CASE(rbt_payload_sizes),
	KUNIT_CASE(rbt_subbuf_end),
	KUNIT_CASE(rbt_discard),
	KUNIT_CASE(rbt_loss_behind_discarded),
	KUNIT_CASE(rbt_largest_event),
	KUNIT_CASE(rbt_header_files),
	{}
};

static struct kunit_suite rbt_abi_suite = {
	.name = "ring_buffer_abi",
	.init = rbt_init,
	.test_cases = rbt_abi_cases,
};

/* ---- time stamps ---- */

static void rbt_deltas(struct kunit *test)
{
	struct trace_buffer *buffer = rbt_alloc(test, RBT_SUBBUFS(4), 0);
	struct rbt_reader *r = rbt_reader(test, buffer, rbt_cpu(test));
	struct rbt_page *pg = kunit_kzalloc(test, sizeof(*pg), GFP_KERNEL);
	const u64 max_delta = (1ULL << RBT_DELTA_BITS) - 1;
	const u64 t[] = {
		1000,
		1000,				/* delta 0 */
		1001,
		1001 + max_delta,		/* the largest inline delta */
		1001 + 2 * max_delta + 1,	/* 1 << 27: needs TIME_EXTEND */
		1001 + 2 * max_delta + 2,
		(1ULL << 50) + 7,		/* a huge jump */
		(1ULL << 50) + 8,
	};
	const bool extended[] = { 0, 0, 0, 0, 1, 0, 1, 0 };
	unsigned int i;

	KUNIT_ASSERT_NOT_NULL(test, pg);
	for (i = 0; i < ARRAY_SIZE(t); i++)
		KUNIT_ASSERT_EQ(test, 0, rbt_write_at(buffer, t[i], 4, i));
	KUNIT_ASSERT_EQ(test, 0, rbt_read_page(test, r, 0, pg));
	KUNIT_ASSERT_EQ(test, pg->nr, (unsigned int)ARRAY_SIZE(t));
	KUNIT_EXPECT_EQ(test, pg->extends, 2U);
	KUNIT_EXPECT_EQ(test, pg->stamps, 0U);
	for (i = 0; i < ARRAY_SIZE(t); i++) {
		KUNIT_EXPECT_EQ_MSG(test, pg->ev[i].ts, t[i], "event %u", i);
		KUNIT_EXPECT_EQ_MSG(test, pg->ev[i].after_extend, extended[i], "event %u", i);
		KUNIT_EXPECT_EQ(test, rbt_tag(pg->ev[i].data), i);
	}
}

/* Time stamps reported by the readers, for the same events. */
static void rbt_reader_time_stamps(struct kunit *test)
{
	struct trace_buffer *buffer = rbt_alloc(test, RBT_SUBBUFS(4), 0);
	int cpu = rbt_cpu(test);
	const u64 t[] = { 77, 78, 78 + (1ULL << 30), 1ULL << 45 };
	struct ring_buffer_iter *iter;
	struct ring_buffer_event *event;
	unsigned int i;
	u64 ts;

	for (i = 0; i < ARRAY_SIZE(t); i++)
		KUNIT_ASSERT_EQ(test, 0, rbt_write_at(buffer, t[i], 20, i));

	iter = ring_buffer_read_start(buffer, cpu, GFP_KERNEL);
	KUNIT_ASSERT_NOT_NULL(test, iter);
	for (i = 0; i < ARRAY_SIZE(t); i++) {
		event = ring_buffer_iter_peek(iter, &ts);
		KUNIT_ASSERT_NOT_NULL(test, event);
		KUNIT_EXPECT_EQ(test, ts, t[i]);
		ring_buffer_iter_advance(iter);
	}
	ring_buffer_read_finish(iter);

	for (i = 0; i < ARRAY_SIZE(t); i++) {
		KUNIT_ASSERT_NOT_NULL(test, ring_buffer_peek(buffer, cpu, &ts, NULL));
		KUNIT_EXPECT_EQ(test, ts, t[i]);
		event = ring_buffer_consume(buffer, cpu, &ts, NULL);
		KUNIT_ASSERT_NOT_NULL(test, event);
		KUNIT_EXPECT_EQ(test, ts, t[i]);
		KUNIT_EXPECT_EQ(test, rbt_tag(ring_buffer_event_data(event)), i);
	}
}

/*
 * A clock that goes backwards must not corrupt the buffer: every event reads
 * back, in order, and no reported time stamp goes backwards.
 */
static void rbt_clock_backwards(struct kunit *test)
{
	struct trace_buffer *buffer = rbt_alloc(test, RBT_SUBBUFS(4), 0);
	int cpu = rbt_cpu(test);
	const u64 t[] = { 50000, 40000, 40010, 60000 };
	struct ring_buffer_event *event;
	unsigned int i;
	u64 ts, last = 0;

	for (i = 0; i < ARRAY_SIZE(t); i++)
		KUNIT_ASSERT_EQ(test, 0, rbt_write_at(buffer, t[i], 8, i));
	for (i = 0; i < ARRAY_SIZE(t); i++) {
		event = ring_buffer_consume(buffer, cpu, &ts, NULL);
		KUNIT_ASSERT_NOT_NULL(test, event);
		KUNIT_EXPECT_EQ(test, rbt_tag(ring_buffer_event_data(event)), i);
		KUNIT_EXPECT_GE_MSG(test, ts, last, "event %u", i);
		last = ts;
	}
	/* Time that runs forward again is reported as no earlier than it is. */
	KUNIT_EXPECT_GE(test, last, t[3]);
	KUNIT_EXPECT_NULL(test, ring_buffer_consume(buffer, cpu, NULL, NULL));
}

/*
 * A clock that jumps far back and stays there (a CPU that was offline when
 * trace_clock changed, a TSC reset on resume) may freeze the time of the
 * events left on its sub-buffer, but from the next sub-buffer on at the
 * latest, time stamps follow the clock again: below the old time, and
 * increasing.
 */
static void rbt_clock_jumps_back(struct kunit *test)
{
	struct trace_buffer *buffer = rbt_alloc(test, RBT_SUBBUFS(8), 0);
	const u64 before = 1000000000000ULL;
	unsigned int per_subbuf = rbt_capacity(buffer) / rbt_event_bytes(8);
	unsigned int i, n = 3 * per_subbuf;
	struct ring_buffer_event *event;
	int cpu = rbt_cpu(test);
	u64 ts, last = 0;

	WRITE_ONCE(rbt_step, 1);
	KUNIT_ASSERT_EQ(test, 0, rbt_write_at(buffer, before, 8, 0));
	rbt_set_time(1000);
	for (i = 1; i <= n; i++)
		KUNIT_ASSERT_EQ(test, 0, rbt_write(buffer, 8, i));
	for (i = 0; i <= n; i++) {
		event = ring_buffer_consume(buffer, cpu, &ts, NULL);
		KUNIT_ASSERT_NOT_NULL(test, event);
		KUNIT_ASSERT_EQ(test, rbt_tag(ring_buffer_event_data(event)), i);
		/* Events past what the first sub-buffer can hold are on a later one. */
		if (i >= per_subbuf) {
			KUNIT_ASSERT_LT_MSG(test, ts, before, "event %u", i);
			if (i > per_subbuf)
				KUNIT_ASSERT_GT_MSG(test, ts, last, "event %u", i);
		}
		last = ts;
	}
	KUNIT_EXPECT_NULL(test, ring_buffer_consume(buffer, cpu, NULL, NULL));
}

static void rbt_absolute_mode(struct kunit *test)
{
	struct trace_buffer *buffer = rbt_alloc(test, RBT_SUBBUFS(4), 0);
	struct rbt_reader *r = rbt_reader(test, buffer, rbt_cpu(test));
	struct rbt_page *pg = kunit_kzalloc(test, sizeof(*pg), GFP_KERNEL);
	const u64 t[] = { 123456789, 123456790, 123456790 + (1ULL << 33) };
	unsigned long max;
	unsigned int i;

	KUNIT_ASSERT_NOT_NULL(test, pg);
	KUNIT_EXPECT_FALSE(test, ring_buffer_time_stamp_abs(buffer));
	max = ring_buffer_max_event_size(buffer);
	ring_buffer_set_time_stamp_abs(buffer, true);
	KUNIT_EXPECT_TRUE(test, ring_buffer_time_stamp_abs(buffer));
	/* Each event carries an 8-byte TIME_STAMP, so the largest shrinks by 8. */
	KUNIT_EXPECT_EQ(test, ring_buffer_max_event_size(buffer), max - 8);

	for (i = 0; i < ARRAY_SIZE(t); i++)
		KUNIT_ASSERT_EQ(test, 0, rbt_write_at(buffer, t[i], 12, i));
	KUNIT_ASSERT_EQ(test, 0, rbt_read_page(test, r, 0, pg));
	KUNIT_ASSERT_EQ(test, pg->nr, (unsigned int)ARRAY_SIZE(t));
	KUNIT_EXPECT_EQ(test, pg->stamps, (unsigned int)ARRAY_SIZE(t));
	for (i = 0; i < ARRAY_SIZE(t); i++) {
		KUNIT_EXPECT_TRUE(test, pg->ev[i].after_stamp);
		KUNIT_EXPECT_EQ(test, pg->ev[i].ts, t[i]);
	}
	ring_buffer_set_time_stamp_abs(buffer, false);
	KUNIT_EXPECT_FALSE(test, ring_buffer_time_stamp_abs(buffer));
}

/* The largest event size reported in absolute mode can be written. */
static void rbt_absolute_mode_largest(struct kunit *test)
{
	struct trace_buffer *buffer = rbt_alloc(test, RBT_SUBBUFS(4), 0);
	unsigned long max;

	ring_buffer_set_time_stamp_abs(buffer, true);
	max = ring_buffer_max_event_size(buffer);
	KUNIT_EXPECT_EQ(test, 0, rbt_write(buffer, max, 1));
	KUNIT_EXPECT_EQ(test, -EBUSY, rbt_write(buffer, max + 1, 2));
	KUNIT_EXPECT_EQ(test, ring_buffer_entries(buffer), 1UL);
}

/* ring_buffer_event_time_stamp() on a reserved event, as hist triggers use it. */
static void rbt_event_time_stamp(struct kunit *test)
{
	struct trace_buffer *buffer = rbt_alloc(test, RBT_SUBBUFS(4), 0);
	struct ring_buffer_event *event;
	int abs;

	for (abs = 0; abs <= 1; abs++) {
		ring_buffer_set_time_stamp_abs(buffer, abs);
		KUNIT_ASSERT_EQ(test, 0, rbt_write_at(buffer, 1000 + abs, 8, 0));
		rbt_set_time(777777 + abs);
		event = ring_buffer_lock_reserve(buffer, 16);
		KUNIT_ASSERT_NOT_NULL(test, event);
		KUNIT_EXPECT_EQ(test, ring_buffer_event_time_stamp(buffer, event), 777777ULL + abs);
		ring_buffer_unlock_commit(buffer);
	}
	rbt_set_time(31337);
	KUNIT_EXPECT_EQ(test, ring_buffer_time_stamp(buffer), 31337ULL);
}

/* ring_buffer_normalize_time_stamp() leaves a time stamp as it is. */
static void rbt_normalize_time_stamp(struct kunit *test)
{
	struct trace_buffer *buffer = rbt_alloc(test, RBT_SUBBUFS(4), 0);
	int cpu = rbt_cpu(test);
	const u64 t[] = {
		0, 1, 1000, (1ULL << RBT_DELTA_BITS) + 1, (1ULL << 59) - 1, 1ULL << 59,
		U64_MAX,
	};
	unsigned int i;
	u64 ts;

	for (i = 0; i < ARRAY_SIZE(t); i++) {
		ts = t[i];
		ring_buffer_normalize_time_stamp(buffer, cpu, &ts);
		KUNIT_EXPECT_EQ_MSG(test, ts, t[i], "time stamp %u", i);
	}
	/* And one that a reader got from the buffer. */
	KUNIT_ASSERT_EQ(test, 0, rbt_write_at(buffer, 123456789, 8, 1));
	KUNIT_ASSERT_NOT_NULL(test, ring_buffer_peek(buffer, cpu, &ts, NULL));
	KUNIT_ASSERT_EQ(test, ts, 123456789ULL);
	ring_buffer_normalize_time_stamp(buffer, cpu, &ts);
	KUNIT_EXPECT_EQ(test, ts, 123456789ULL);
}

static struct kunit_case rbt_time_cases[] = {
	KUNIT_CASE(rbt_deltas),
	KUNIT_CASE(rbt_reader_time_stamps),
	KUNIT_CASE(rbt_clock_backwards),
	KUNIT_CASE(rbt_clock_jumps_back),
	KUNIT_CASE(rbt_absolute_mode),
	KUNIT_CASE(rbt_absolute_mode_largest),
	KUNIT_CASE(rbt_event_time_stamp),
	KUNIT_CASE(rbt_normalize_time_stamp),
	{}
};

static struct kunit_suite rbt_time_suite = {
	.name = "ring_buffer_time",
	.init = rbt_init,
	.test_cases = rbt_time_cases,
};

/* ---- modes and accounting ---- */

#define RBT_PAGES	8

/*
 * Fill a buffer of RBT_PAGES sub-buffers with @n events of @len bytes;
 * returns how many writes succeeded.
 */
static unsigned int rbt_fill_buffer(struct trace_buffer *buffer, unsigned int n,
				    unsigned int len, u64 t0)
{
	unsigned int i, ok = 0;

	for (i = 0; i < n; i++)
		ok += rbt_write_at(buffer, t0 + i, len, i) == 0;
	return ok;
}

static void rbt_overwrite_mode(struct kunit *test)
{
	struct trace_buffer *buffer;
	int cpu = rbt_cpu(test);
	unsigned int len = 100, per, total, n, kept, i;
	unsigned long lost = 0;
	struct ring_buffer_event *event;
	u64 ts;

	buffer = rbt_alloc(test, RBT_SUBBUFS(RBT_PAGES), RB_FL_OVERWRITE);
	per = rbt_capacity(buffer) / rbt_event_bytes(len);
	KUNIT_ASSERT_EQ(test, ring_buffer_size(buffer, cpu), RBT_SUBBUFS(RBT_PAGES));
	/* Wrap the ring several times and stop in the middle of a sub-buffer. */
	n = 5 * RBT_PAGES * per + per / 2;
	KUNIT_EXPECT_EQ(test, rbt_fill_buffer(buffer, n, len, 1000), n);

	/* The writer keeps every sub-buffer but the one it is about to reuse. */
	kept = (RBT_PAGES - 1) * per + per / 2;
	KUNIT_EXPECT_EQ(test, ring_buffer_entries_cpu(buffer, cpu), (unsigned long)kept);
	KUNIT_EXPECT_EQ(test, ring_buffer_overrun_cpu(buffer, cpu), (unsigned long)(n - kept));
	KUNIT_EXPECT_EQ(test, ring_buffer_overruns(buffer), (unsigned long)(n - kept));
	KUNIT_EXPECT_EQ(test, ring_buffer_dropped_events_cpu(buffer, cpu), 0UL);
	KUNIT_EXPECT_EQ(test, ring_buffer_commit_overrun_cpu(buffer, cpu), 0UL);
	/* Bytes: whole sub-buffers (padding included) plus the partial one. */
	KUNIT_EXPECT_EQ(test, ring_buffer_bytes_cpu(buffer, cpu),
			(unsigned long)(RBT_PAGES - 1) * rbt_capacity(buffer) +
			per / 2 * rbt_event_bytes(len));
	KUNIT_EXPECT_EQ(test, ring_buffer_oldest_event_ts(buffer, cpu), 1000ULL + n - kept);

	/* The first read reports what was lost; the rest are the newest, in order. */
	total = 0;
	for (i = n - kept; (event = ring_buffer_consume(buffer, cpu, &ts, &lost)); i++) {
		if (i == n - kept)
			KUNIT_EXPECT_EQ(test, lost, (unsigned long)(n - kept));
		else
			KUNIT_EXPECT_EQ(test, lost, 0UL);
		KUNIT_EXPECT_EQ(test, rbt_tag(ring_buffer_event_data(event)), i);
		KUNIT_EXPECT_EQ(test, ts, 1000ULL + i);
		total++;
	}
	KUNIT_EXPECT_EQ(test, total, kept);
	KUNIT_EXPECT_EQ(test, ring_buffer_read_events_cpu(buffer, cpu), (unsigned long)kept);
	KUNIT_EXPECT_EQ(test, ring_buffer_entries_cpu(buffer, cpu), 0UL);
	KUNIT_EXPECT_TRUE(test, ring_buffer_empty(buffer));
}

static void rbt_producer_consumer_mode(struct kunit *test)
{
	struct trace_buffer *buffer;
	int cpu = rbt_cpu(test);
	unsigned int len = 100, per, n, cap, i;
	struct ring_buffer_event *event;
	unsigned long lost;
	u64 ts;

	buffer = rbt_alloc(test, RBT_SUBBUFS(RBT_PAGES), 0);
	per = rbt_capacity(buffer) / rbt_event_bytes(len);
	n = 3 * RBT_PAGES * per;
	/* Nothing is overwritten: the writer fills every sub-buffer, then fails. */
	cap = RBT_PAGES * per;
	KUNIT_EXPECT_EQ(test, rbt_fill_buffer(buffer, n, len, 1000), cap);
	KUNIT_EXPECT_EQ(test, ring_buffer_entries_cpu(buffer, cpu), (unsigned long)cap);
	KUNIT_EXPECT_EQ(test, ring_buffer_overrun_cpu(buffer, cpu), 0UL);
	KUNIT_EXPECT_EQ(test, ring_buffer_dropped_events_cpu(buffer, cpu),
			(unsigned long)(n - cap));
	KUNIT_EXPECT_EQ(test, ring_buffer_oldest_event_ts(buffer, cpu), 1000ULL);

	/* The oldest events survive, in order, and no read reports a loss. */
	for (i = 0; i < cap; i++) {
		event = ring_buffer_consume(buffer, cpu, &ts, &lost);
		KUNIT_ASSERT_NOT_NULL(test, event);
		KUNIT_EXPECT_EQ(test, rbt_tag(ring_buffer_event_data(event)), i);
		KUNIT_EXPECT_EQ(test, ts, 1000ULL + i);
		KUNIT_EXPECT_EQ(test, lost, 0UL);
	}
	KUNIT_EXPECT_NULL(test, ring_buffer_consume(buffer, cpu, NULL, NULL));
	KUNIT_EXPECT_EQ(test, ring_buffer_read_events_cpu(buffer, cpu), (unsigned long)cap);

	/* Once read, the space is free again. */
	KUNIT_EXPECT_EQ(test, rbt_fill_buffer(buffer, per, len, 5000), per);
	KUNIT_EXPECT_EQ(test, ring_buffer_entries_cpu(buffer, cpu), (unsigned long)per);
}

/*
 * A full producer/consumer buffer is empty again once its last event is
 * read, even if the reader stops there (it knows how many it wants, or its
 * read(2) count ran out) and does not ask for one more. The events leave a
 * gap at the end of each sub-buffer, so the write that is refused does not
 * fit in the last one; that gap holds nothing to read.
 */
static void rbt_producer_consumer_drained(struct kunit *test)
{
	struct trace_buffer *buffer = rbt_alloc(test, RBT_SUBBUFS(4), 0);
	int cpu = rbt_cpu(test);
	unsigned int len, per, cap, i;
	struct ring_buffer_event *event;
	u8 data[200];

	/*
	 * The gap must hold a padding event with a length (8 bytes or more),
	 * whatever the page size makes the capacity.
	 */
	for (len = 100; len <= sizeof(data); len += 4)
		if (rbt_capacity(buffer) % rbt_event_bytes(len) >= 8)
			break;
	if (len > sizeof(data))
		kunit_skip(test, "no event size leaves a gap of 8 bytes or more");
	per = rbt_capacity(buffer) / rbt_event_bytes(len);
	cap = 4 * per;
	KUNIT_EXPECT_EQ(test, rbt_fill_buffer(buffer, cap, len, 1000), cap);
	KUNIT_EXPECT_EQ(test, -EBUSY, rbt_write(buffer, len, cap));
	rbt_fill(data, len, cap);
	KUNIT_EXPECT_EQ(test, -EBUSY, ring_buffer_write(buffer, len, data));
	KUNIT_EXPECT_EQ(test, ring_buffer_dropped_events_cpu(buffer, cpu), 2UL);
	KUNIT_EXPECT_FALSE(test, ring_buffer_empty_cpu(buffer, cpu));

	for (i = 0; i < cap; i++) {
		event = ring_buffer_consume(buffer, cpu, NULL, NULL);
		KUNIT_ASSERT_NOT_NULL_MSG(test, event, "event %u of %u", i, cap);
		KUNIT_EXPECT_EQ(test, rbt_tag(ring_buffer_event_data(event)), i);
	}
	/* Asked before any further read: nothing is left. */
	KUNIT_EXPECT_EQ(test, ring_buffer_entries_cpu(buffer, cpu), 0UL);
	KUNIT_EXPECT_TRUE(test, ring_buffer_empty_cpu(buffer, cpu));
	KUNIT_EXPECT_TRUE(test, ring_buffer_empty(buffer));
	KUNIT_EXPECT_NULL(test, ring_buffer_consume(buffer, cpu, NULL, NULL));
	KUNIT_EXPECT_TRUE(test, ring_buffer_empty(buffer));
}

/* ring_buffer_write() copies a whole event and fails like reserve does. */
static void rbt_write_api(struct kunit *test)
{
	struct trace_buffer *buffer = rbt_alloc(test, RBT_SUBBUFS(4), 0);
	int cpu = rbt_cpu(test);
	unsigned long max;
	struct ring_buffer_event *event;
	u8 data[64];
	u64 ts;

	rbt_fill(data, sizeof(data), 42);
	rbt_set_time(4242);
	KUNIT_EXPECT_EQ(test, 0, ring_buffer_write(buffer, sizeof(data), data));
	max = ring_buffer_max_event_size(buffer);
	KUNIT_EXPECT_EQ(test, -EBUSY, ring_buffer_write(buffer, max + 1, data));
	event = ring_buffer_consume(buffer, cpu, &ts, NULL);
	KUNIT_ASSERT_NOT_NULL(test, event);
	KUNIT_EXPECT_EQ(test, ts, 4242ULL);
	KUNIT_EXPECT_EQ(test, ring_buffer_event_length(event), rbt_event_room(sizeof(data)));
	KUNIT_EXPECT_TRUE(test, rbt_payload_ok(ring_buffer_event_data(event), sizeof(data), 42));
}

/* Switching a full buffer to overwrite mode lets the writer go on. */
static void rbt_change_overwrite(struct kunit *test)
{
	struct trace_buffer *buffer = rbt_alloc(test, RBT_SUBBUFS(RBT_PAGES), 0);
	int cpu = rbt_cpu(test);
	unsigned int per = rbt_capacity(buffer) / rbt_event_bytes(32);

	KUNIT_EXPECT_EQ(test, rbt_fill_buffer(buffer, 2 * RBT_PAGES * per, 32, 0),
			RBT_PAGES * per);
	KUNIT_EXPECT_EQ(test, -EBUSY, rbt_write(buffer, 32, 0));
	ring_buffer_change_overwrite(buffer, 1);
	KUNIT_EXPECT_EQ(test, 0, rbt_write(buffer, 32, 0));
	KUNIT_EXPECT_GT(test, ring_buffer_overrun_cpu(buffer, cpu), 0UL);
	ring_buffer_change_overwrite(buffer, 0);
	ring_buffer_reset(buffer);
	KUNIT_EXPECT_EQ(test, rbt_fill_buffer(buffer, 2 * RBT_PAGES * per, 32, 0),
			RBT_PAGES * per);
}

static struct kunit_case rbt_mode_cases[] = {
	KUNIT_CASE(rbt_overwrite_mode),
	KUNIT_CASE(rbt_producer_consumer_mode),
	KUNIT_CASE(rbt_producer_consumer_drained),
	KUNIT_CASE(rbt_write_api),
	KUNIT_CASE(rbt_change_overwrite),
	{}
};

static struct kunit_suite rbt_mode_suite = {
	.name = "ring_buffer_modes",
	.init = rbt_init,
	.test_cases = rbt_mode_cases,
};

/* ---- readers ---- */

static void rbt_peek_consume(struct kunit *test)
{
	struct trace_buffer *buffer = rbt_alloc(test, RBT_SUBBUFS(4), 0);
	int cpu = rbt_cpu(test);
	struct ring_buffer_event *a, *b;
	unsigned int i;
	u64 ts;

	KUNIT_EXPECT_TRUE(test, ring_buffer_empty(buffer));
	KUNIT_EXPECT_TRUE(test, ring_buffer_empty_cpu(buffer, cpu));
	KUNIT_EXPECT_NULL(test, ring_buffer_peek(buffer, cpu, &ts, NULL));
	for (i = 0; i < 3; i++)
		KUNIT_ASSERT_EQ(test, 0, rbt_write_at(buffer, 10 * (i + 1), 24, i));
	KUNIT_EXPECT_FALSE(test, ring_buffer_empty(buffer));
	KUNIT_EXPECT_EQ(test, ring_buffer_entries(buffer), 3UL);

	a = ring_buffer_peek(buffer, cpu, &ts, NULL);
	b = ring_buffer_peek(buffer, cpu, NULL, NULL);
	KUNIT_ASSERT_NOT_NULL(test, a);
	KUNIT_EXPECT_PTR_EQ(test, a, b);
	KUNIT_EXPECT_EQ(test, ts, 10ULL);
	KUNIT_EXPECT_EQ(test, ring_buffer_entries(buffer), 3UL);
	KUNIT_EXPECT_EQ(test, ring_buffer_read_events_cpu(buffer, cpu), 0UL);

	for (i = 0; i < 3; i++) {
		a = ring_buffer_consume(buffer, cpu, &ts, NULL);
		KUNIT_ASSERT_NOT_NULL(test, a);
		KUNIT_EXPECT_EQ(test, rbt_tag(ring_buffer_event_data(a)), i);
		KUNIT_EXPECT_EQ(test, ts, 10ULL * (i + 1));
		KUNIT_EXPECT_EQ(test, ring_buffer_entries(buffer), 2UL - i);
		KUNIT_EXPECT_EQ(test, ring_buffer_read_events_cpu(buffer, cpu), i + 1UL);
	}
	KUNIT_EXPECT_NULL(test, ring_buffer_consume(buffer, cpu, NULL, NULL));
	KUNIT_EXPECT_TRUE(test, ring_buffer_empty_cpu(buffer, cpu));
	/* A CPU the buffer has no per-CPU buffer for reads as empty. */
	KUNIT_EXPECT_NULL(test, ring_buffer_consume(buffer, nr_cpu_ids, NULL, NULL));
}

/* The iterator reads without consuming and can start over. */
static void rbt_iterator(struct kunit *test)
{
	struct trace_buffer *buffer = rbt_alloc(test, RBT_SUBBUFS(RBT_PAGES), 0);
	int cpu = rbt_cpu(test);
	unsigned int n = 3 * rbt_capacity(buffer) / rbt_event_bytes(48), i, pass;
	struct ring_buffer_iter *iter;
	struct ring_buffer_event *event;
	u64 ts;

	KUNIT_ASSERT_EQ(test, rbt_fill_buffer(buffer, n, 48, 100), n);
	iter = ring_buffer_read_start(buffer, cpu, GFP_KERNEL);
	KUNIT_ASSERT_NOT_NULL(test, iter);
	for (pass = 0; pass < 2; pass++) {
		for (i = 0; i < n; i++) {
			KUNIT_ASSERT_FALSE(test, ring_buffer_iter_empty(iter));
			event = ring_buffer_iter_peek(iter, &ts);
			KUNIT_ASSERT_NOT_NULL(test, event);
			KUNIT_EXPECT_EQ(test, rbt_tag(ring_buffer_event_data(event)), i);
			KUNIT_EXPECT_TRUE(test,
					  rbt_payload_ok(ring_buffer_event_data(event), 48, i));
			KUNIT_EXPECT_EQ(test, ts, 100ULL + i);
			ring_buffer_iter_advance(iter);
		}
		KUNIT_EXPECT_TRUE(test, ring_buffer_iter_empty(iter));
		KUNIT_EXPECT_NULL(test, ring_buffer_iter_peek(iter, &ts));
		KUNIT_EXPECT_FALSE(test, ring_buffer_iter_dropped(iter));
		ring_buffer_iter_reset(iter);
	}
	ring_buffer_read_finish(iter);
	KUNIT_EXPECT_EQ(test, ring_buffer_entries_cpu(buffer, cpu), (unsigned long)n);
	KUNIT_EXPECT_EQ(test, ring_buffer_read_events_cpu(buffer, cpu), 0UL);
}

/* A writer that laps the iterator shows up as ring_buffer_iter_dropped(). */
static void rbt_iterator_dropped(struct kunit *test)
{
	struct trace_buffer *buffer = rbt_alloc(test, RBT_SUBBUFS(4), RB_FL_OVERWRITE);
	int cpu = rbt_cpu(test);
	unsigned int per = rbt_capacity(buffer) / rbt_event_bytes(64), i;
	struct ring_buffer_iter *iter;
	struct ring_buffer_event *event;
	u64 ts, last;

	KUNIT_ASSERT_EQ(test, rbt_fill_buffer(buffer, 2 * per, 64, 1), 2 * per);
	iter = ring_buffer_read_start(buffer, cpu, GFP_KERNEL);
	KUNIT_ASSERT_NOT_NULL(test, iter);
	event = ring_buffer_iter_peek(iter, &ts);
	KUNIT_ASSERT_NOT_NULL(test, event);
	KUNIT_EXPECT_EQ(test, rbt_tag(ring_buffer_event_data(event)), 0U);
	ring_buffer_iter_advance(iter);

	/* Lap the ring twice while the iterator sits on the oldest sub-buffer. */
	KUNIT_ASSERT_EQ(test, rbt_fill_buffer(buffer, 10 * per, 64, 10000), 10 * per);

	/* The next peek lands past the lap and says events were dropped. */
	event = ring_buffer_iter_peek(iter, &ts);
	KUNIT_ASSERT_NOT_NULL(test, event);
	KUNIT_EXPECT_TRUE(test, ring_buffer_iter_dropped(iter));
	KUNIT_EXPECT_GE(test, ts, 10000ULL);
	last = ts;
	ring_buffer_iter_advance(iter);
	for (i = 0; (event = ring_buffer_iter_peek(iter, &ts)); i++) {
		KUNIT_EXPECT_FALSE(test, ring_buffer_iter_dropped(iter));
		KUNIT_EXPECT_EQ(test, ts, last + 1);
		last = ts;
		ring_buffer_iter_advance(iter);
		KUNIT_ASSERT_LT(test, i, 20 * per);
	}
	/* It read on to the newest event. */
	KUNIT_EXPECT_EQ(test, last, 10000ULL + 10 * per - 1);
	ring_buffer_read_finish(iter);
}

/*
 * A consuming read between a peek and the advance moves the iterator to the
 * reader's position; the advance passes the event it returned, never one it
 * did not, so the next peek is the first event left unread. Asking
 * ring_buffer_iter_empty() in between changes neither that nor the copy
 * the caller holds.
 */
static void rbt_iterator_after_consume(struct kunit *test)
{
	struct trace_buffer *buffer = rbt_alloc(test, RBT_SUBBUFS(RBT_PAGES), 0);
	int cpu = rbt_cpu(test);
	struct ring_buffer_iter *iter;
	struct ring_buffer_event *event;
	unsigned int ask_empty;
	u64 ts;

	for (ask_empty = 0; ask_empty < 2; ask_empty++) {
		ring_buffer_reset(buffer);
		KUNIT_ASSERT_EQ(test, rbt_fill_buffer(buffer, 8, 16, 1), 8U);
		iter = ring_buffer_read_start(buffer, cpu, GFP_KERNEL);
		KUNIT_ASSERT_NOT_NULL(test, iter);
		event = ring_buffer_iter_peek(iter, &ts);
		KUNIT_ASSERT_NOT_NULL(test, event);
		KUNIT_EXPECT_EQ(test, rbt_tag(ring_buffer_event_data(event)), 0U);

		KUNIT_ASSERT_NOT_NULL(test, ring_buffer_consume(buffer, cpu, NULL, NULL));
		KUNIT_ASSERT_NOT_NULL(test, ring_buffer_consume(buffer, cpu, NULL, NULL));
		if (ask_empty) {
			KUNIT_EXPECT_FALSE(test, ring_buffer_iter_empty(iter));
			KUNIT_EXPECT_EQ(test, rbt_tag(ring_buffer_event_data(event)), 0U);
		}
		ring_buffer_iter_advance(iter);

		event = ring_buffer_iter_peek(iter, &ts);
		KUNIT_ASSERT_NOT_NULL(test, event);
		KUNIT_EXPECT_EQ(test, rbt_tag(ring_buffer_event_data(event)), 2U);
		KUNIT_EXPECT_EQ(test, ts, 3ULL);
		KUNIT_EXPECT_FALSE(test, ring_buffer_iter_dropped(iter));
		ring_buffer_read_finish(iter);
	}
}

/*
 * ring_buffer_iter_empty() answers whether a peek would return NULL: once a
 * consuming read took everything, also for an iterator that has not moved.
 */
static void rbt_iterator_empty_after_consume(struct kunit *test)
{
	struct trace_buffer *buffer = rbt_alloc(test, RBT_SUBBUFS(RBT_PAGES), 0);
	int cpu = rbt_cpu(test);
	struct ring_buffer_iter *iter;
	u64 ts;

	KUNIT_ASSERT_EQ(test, rbt_fill_buffer(buffer, 8, 16, 1), 8U);
	iter = ring_buffer_read_start(buffer, cpu, GFP_KERNEL);
	KUNIT_ASSERT_NOT_NULL(test, iter);
	KUNIT_ASSERT_NOT_NULL(test, ring_buffer_iter_peek(iter, &ts));
	while (ring_buffer_consume(buffer, cpu, NULL, NULL))
		;
	KUNIT_EXPECT_TRUE(test, ring_buffer_iter_empty(iter));
	KUNIT_EXPECT_NULL(test, ring_buffer_iter_peek(iter, &ts));

	/* A new event is there for both. */
	KUNIT_ASSERT_EQ(test, rbt_write_at(buffer, 100, 16, 8), 0);
	KUNIT_EXPECT_FALSE(test, ring_buffer_iter_empty(iter));
	KUNIT_EXPECT_NOT_NULL(test, ring_buffer_iter_peek(iter, &ts));
	KUNIT_EXPECT_EQ(test, ts, 100ULL);
	ring_buffer_read_finish(iter);
}

/* A small deterministic generator (xorshift32) for generated call sequences. */
static u32 rbt_rand(u32 *state)
{
	u32 x = *state;

	x ^= x << 13;
	x ^= x >> 17;
	x ^= x << 5;
	return *state = x;
}

/*
 * Generated sequences of iterator calls mixed with writes and consuming
 * reads, each call checked against a model of the contract: the iterator
 * starts where the consuming reader is, and after a consuming read its
 * next peek starts there again; an advance passes the event the last peek
 * returned, or without one the event at the iterator, or after a consuming
 * read nothing (the reader's position is the next event already);
 * ring_buffer_iter_empty() says whether the next peek returns NULL and
 * moves nothing. Nothing is lost (producer/consumer mode, room for every
 * write), so the model is exact: every return value, tag and time stamp is
 * checked. The failure message lists the calls (W write, C consume, P
 * peek, A advance, E empty, R reset).
 */
#define RBT_MODEL_STEPS	60

/*
 * One write of a generated sequence: 8 to 2007 bytes, so that a sequence
 * crosses sub-buffers, and now and then a clock jump that needs a time
 * extend.
 */
static void rbt_model_write(struct kunit *test, struct trace_buffer *buffer, u32 *rnd,
			    unsigned int tag, u64 *now, u64 *stamp, unsigned int *len)
{
	*now += 1 + (rbt_rand(rnd) % 8 ? 0 : 1ULL << 28);
	stamp[tag] = *now;
	len[tag] = 8 + rbt_rand(rnd) % 2000;
	KUNIT_ASSERT_EQ(test, rbt_write_at(buffer, *now, len[tag], tag), 0);
}

static void rbt_iterator_model(struct kunit *test)
{
	/* Room for every write of a sequence: nothing is refused or lost. */
	struct trace_buffer *buffer = rbt_alloc(test, RBT_SUBBUFS(RBT_MODEL_STEPS), 0);
	enum { W, C, P, A, E, R, NOPS };
	int cpu = rbt_cpu(test);
	unsigned int seq, step, first, n, ci, ip, synced;
	unsigned int len[RBT_MODEL_STEPS + 4];
	u64 stamp[RBT_MODEL_STEPS + 4], now = 1000;
	u32 rnd = 0x5eed1234;
	char ops[RBT_MODEL_STEPS + 1];
	void *data;
	bool held;

	for (seq = 0; seq < 200; seq++) {
		struct ring_buffer_iter *iter;
		struct ring_buffer_event *event;
		u64 ts;

		ring_buffer_reset(buffer);
		first = rbt_rand(&rnd) % 4;
		for (n = 0; n < first; n++)
			rbt_model_write(test, buffer, &rnd, n, &now, stamp, len);
		iter = ring_buffer_read_start(buffer, cpu, GFP_KERNEL);
		KUNIT_ASSERT_NOT_NULL(test, iter);
		ci = 0;
		ip = 0;
		synced = 0;
		held = false;
		for (step = 0; step < RBT_MODEL_STEPS; step++) {
			unsigned int op = rbt_rand(&rnd) % NOPS;
			bool empty;

			/* The calls so far, for the failure message. */
			ops[step] = "WCPAER"[op];
			ops[step + 1] = 0;

			switch (op) {
			case W:
				rbt_model_write(test, buffer, &rnd, n++, &now, stamp, len);
				break;
			case C:
				event = ring_buffer_consume(buffer, cpu, &ts, NULL);
				KUNIT_ASSERT_EQ_MSG(test, !!event, ci < n, "seq %u: %u, %s",
						    seq, first, ops);
				if (!event)
					break;
				KUNIT_ASSERT_EQ(test, rbt_tag(ring_buffer_event_data(event)), ci);
				KUNIT_ASSERT_EQ(test, ts, stamp[ci]);
				ci++;
				break;
			case P:
				if (ci != synced) {
					ip = ci;
					synced = ci;
				}
				event = ring_buffer_iter_peek(iter, &ts);
				held = ip < n;
				KUNIT_ASSERT_EQ_MSG(test, !!event, held, "seq %u: %u, %s",
						    seq, first, ops);
				if (!event)
					break;
				data = ring_buffer_event_data(event);
				KUNIT_ASSERT_EQ_MSG(test, rbt_tag(data), ip, "seq %u: %u, %s",
						    seq, first, ops);
				KUNIT_ASSERT_EQ(test, ts, stamp[ip]);
				KUNIT_ASSERT_TRUE(test, rbt_payload_ok(data, len[ip], ip));
				KUNIT_ASSERT_FALSE(test, ring_buffer_iter_dropped(iter));
				break;
			case A:
				ring_buffer_iter_advance(iter);
				if (held) {
					ip++;
				} else if (ci != synced) {
					ip = ci;
					synced = ci;
				} else if (ip < n) {
					ip++;
				}
				held = false;
				break;
			case E:
				empty = ring_buffer_iter_empty(iter);
				if (ci != synced) {
					KUNIT_ASSERT_EQ_MSG(test, empty, ci >= n,
							    "seq %u: %u, %s", seq, first, ops);
					break;
				}
				KUNIT_ASSERT_EQ_MSG(test, empty, ip >= n, "seq %u: %u, %s",
						    seq, first, ops);
				break;
			case R:
				ring_buffer_iter_reset(iter);
				ip = ci;
				synced = ci;
				held = false;
				break;
			}
		}
		ring_buffer_read_finish(iter);
	}
}

static void rbt_read_page_partial_and_full(struct kunit *test)
{
	struct trace_buffer *buffer = rbt_alloc(test, RBT_SUBBUFS(RBT_PAGES), 0);
	int cpu = rbt_cpu(test);
	struct rbt_reader *r = rbt_reader(test, buffer, cpu);
	struct rbt_page *pg = kunit_kzalloc(test, sizeof(*pg), GFP_KERNEL);
	unsigned int per = rbt_capacity(buffer) / rbt_event_bytes(60), i;

	KUNIT_ASSERT_NOT_NULL(test, pg);
	/* Empty: nothing to read. */
	KUNIT_EXPECT_LT(test, rbt_read_page(test, r, 0, pg), 0);

	/* A partial sub-buffer: only a non-full read takes it. */
	KUNIT_ASSERT_EQ(test, rbt_fill_buffer(buffer, 3, 60, 10), 3U);
	KUNIT_EXPECT_LT(test, rbt_read_page(test, r, 1, pg), 0);
	KUNIT_ASSERT_EQ(test, 0, rbt_read_page(test, r, 0, pg));
	KUNIT_EXPECT_EQ(test, pg->nr, 3U);
	KUNIT_EXPECT_EQ(test, pg->time_stamp, 10ULL);
	KUNIT_EXPECT_EQ(test, ring_buffer_read_events_cpu(buffer, cpu), 3UL);
	KUNIT_EXPECT_TRUE(test, ring_buffer_empty_cpu(buffer, cpu));

	/* More written to the same sub-buffer reads from where the last read ended. */
	KUNIT_ASSERT_EQ(test, rbt_fill_buffer(buffer, 2, 60, 20), 2U);
	KUNIT_ASSERT_EQ(test, 0, rbt_read_page(test, r, 0, pg));
	KUNIT_ASSERT_EQ(test, pg->nr, 2U);
	KUNIT_EXPECT_EQ(test, pg->ev[0].ts, 20ULL);
	KUNIT_EXPECT_EQ(test, pg->ev[1].ts, 21ULL);
	KUNIT_EXPECT_EQ(test, rbt_tag(pg->ev[0].data), 0U);

	/* Whole sub-buffers: full reads take them one by one. */
	KUNIT_ASSERT_EQ(test, rbt_fill_buffer(buffer, 3 * per, 60, 1000), 3 * per);
	for (i = 0; i < 2; i++) {
		KUNIT_ASSERT_EQ(test, 0, rbt_read_page(test, r, 1, pg));
		KUNIT_EXPECT_GT(test, pg->nr, 0U);
		KUNIT_EXPECT_EQ(test, pg->commit & ~RBT_LEN_MASK, 0UL);
	}
	KUNIT_EXPECT_EQ(test, ring_buffer_entries_cpu(buffer, cpu) +
			ring_buffer_read_events_cpu(buffer, cpu), 5UL + 3 * per);
}

/* Events lost to overwrite are flagged, and counted, in the next page read. */
static void rbt_read_page_missed(struct kunit *test)
{
	struct trace_buffer *buffer = rbt_alloc(test, RBT_SUBBUFS(4), RB_FL_OVERWRITE);
	int cpu = rbt_cpu(test);
	struct rbt_reader *r = rbt_reader(test, buffer, cpu);
	struct rbt_page *pg = kunit_kzalloc(test, sizeof(*pg), GFP_KERNEL);
	unsigned int per = rbt_capacity(buffer) / rbt_event_bytes(200);
	unsigned long overrun, stored;
	void *data;

	KUNIT_ASSERT_NOT_NULL(test, pg);
	KUNIT_ASSERT_EQ(test, rbt_fill_buffer(buffer, 12 * per, 200, 1), 12 * per);
	overrun = ring_buffer_overrun_cpu(buffer, cpu);
	KUNIT_ASSERT_GT(test, overrun, 0UL);

	KUNIT_ASSERT_EQ(test, 0, rbt_read_page(test, r, 1, pg));
	KUNIT_EXPECT_EQ(test, pg->commit & RBT_MISSED_EVENTS, RBT_MISSED_EVENTS);
	/* 200-byte events leave room after the data for the count. */
	KUNIT_ASSERT_EQ(test, pg->commit & RBT_MISSED_STORED, RBT_MISSED_STORED);
	data = ring_buffer_read_page_data(r->rpage);
	memcpy(&stored, data + RBT_HDR + pg->len, sizeof(stored));
	KUNIT_EXPECT_EQ(test, stored, overrun);
	KUNIT_EXPECT_EQ(test, rbt_tag(pg->ev[0].data), 12 * per - (unsigned int)
			ring_buffer_entries_cpu(buffer, cpu) - pg->nr);

	/* Nothing was lost since: the next page is clean. */
	KUNIT_ASSERT_EQ(test, 0, rbt_read_page(test, r, 1, pg));
	KUNIT_EXPECT_EQ(test, pg->commit & ~RBT_LEN_MASK, 0UL);
}

static struct kunit_case rbt_read_cases[] = {
	KUNIT_CASE(rbt_peek_consume),
	KUNIT_CASE(rbt_iterator),
	KUNIT_CASE(rbt_iterator_dropped),
	KUNIT_CASE(rbt_iterator_after_consume),
	KUNIT_CASE(rbt_iterator_empty_after_consume),
	KUNIT_CASE(rbt_iterator_model),
	KUNIT_CASE(rbt_read_page_partial_and_full),
	KUNIT_CASE(rbt_read_page_missed),
	{}
};

static struct kunit_suite rbt_read_suite = {
	.name = "ring_buffer_reads",
	.init = rbt_init,
	.test_cases = rbt_read_cases,
};

/* ---- control: resize, orders, swap, reset, record on/off ---- */

/* Read every event on @cpu and check the tags run from @first, one by one. */
static void rbt_expect_tags(struct kunit *test, struct trace_buffer *buffer, int cpu,
			    u32 first, unsigned int n)
{
	struct ring_buffer_event *event;
	unsigned int i;

	for (i = 0; i < n; i++) {
		event = ring_buffer_consume(buffer, cpu, NULL, NULL);
		KUNIT_ASSERT_NOT_NULL_MSG(test, event, "event %u of %u", i, n);
		KUNIT_EXPECT_EQ(test, rbt_tag(ring_buffer_event_data(event)), first + i);
	}
	KUNIT_EXPECT_NULL(test, ring_buffer_consume(buffer, cpu, NULL, NULL));
}

static void rbt_resize(struct kunit *test)
{
	struct trace_buffer *buffer = rbt_alloc(test, RBT_SUBBUFS(4), 0);
	int cpu = rbt_cpu(test), other;
	unsigned int per = rbt_capacity(buffer) / rbt_event_bytes(40);

	KUNIT_ASSERT_EQ(test, ring_buffer_size(buffer, cpu), RBT_SUBBUFS(4));
	KUNIT_ASSERT_EQ(test, rbt_fill_buffer(buffer, 2 * per, 40, 0), 2 * per);

	/* Grow with data in it: nothing is lost and the new room is usable. */
	KUNIT_ASSERT_EQ(test, 0, ring_buffer_resize(buffer, RBT_SUBBUFS(16), RING_BUFFER_ALL_CPUS));
	KUNIT_EXPECT_EQ(test, ring_buffer_size(buffer, cpu), RBT_SUBBUFS(16));
	KUNIT_EXPECT_EQ(test, ring_buffer_entries_cpu(buffer, cpu), 2UL * per);
	KUNIT_EXPECT_EQ(test, rbt_fill_buffer(buffer, 20 * per, 40, 100000), 14 * per);
	ring_buffer_reset_cpu(buffer, cpu);

	/* Shrink with data in it: the buffer stays readable and in order. */
	KUNIT_ASSERT_EQ(test, rbt_fill_buffer(buffer, 2 * per, 40, 200000), 2 * per);
	KUNIT_ASSERT_EQ(test, 0, ring_buffer_resize(buffer, RBT_SUBBUFS(8), RING_BUFFER_ALL_CPUS));
	KUNIT_EXPECT_EQ(test, ring_buffer_size(buffer, cpu), RBT_SUBBUFS(8));
	rbt_expect_tags(test, buffer, cpu, 0, 2 * per);

	/* Sizes round up to whole sub-buffers, and two is the least. */
	KUNIT_ASSERT_EQ(test, 0, ring_buffer_resize(buffer, RBT_SUBBUFS(5) + 1,
						    RING_BUFFER_ALL_CPUS));
	KUNIT_EXPECT_EQ(test, ring_buffer_size(buffer, cpu), RBT_SUBBUFS(6));
	KUNIT_ASSERT_EQ(test, 0, ring_buffer_resize(buffer, 1, RING_BUFFER_ALL_CPUS));
	KUNIT_EXPECT_EQ(test, ring_buffer_size(buffer, cpu), RBT_SUBBUFS(2));

	/* One CPU alone. */
	KUNIT_ASSERT_EQ(test, 0, ring_buffer_resize(buffer, RBT_SUBBUFS(10), cpu));
	KUNIT_EXPECT_EQ(test, ring_buffer_size(buffer, cpu), RBT_SUBBUFS(10));
	for_each_online_cpu(other)
		if (other != cpu)
			KUNIT_EXPECT_EQ(test, ring_buffer_size(buffer, other), RBT_SUBBUFS(2));

	/* A CPU that does not exist changes nothing. */
	KUNIT_EXPECT_LE(test, ring_buffer_resize(buffer, RBT_SUBBUFS(4), nr_cpu_ids), 0);
	KUNIT_EXPECT_EQ(test, ring_buffer_size(buffer, cpu), RBT_SUBBUFS(10));
}

/* Sub-buffer orders 0..3 with data: sizes, events bigger than a page, reads. */
static void rbt_subbuf_orders(struct kunit *test)
{
	struct trace_buffer *buffer = rbt_alloc(test, RBT_SUBBUFS(32), 0);
	int cpu = rbt_cpu(test);
	struct rbt_reader *r = rbt_reader(test, buffer, cpu);
	struct rbt_page *pg = kunit_kzalloc(test, sizeof(*pg), GFP_KERNEL);
	int order;

	KUNIT_ASSERT_NOT_NULL(test, pg);
	KUNIT_EXPECT_EQ(test, ring_buffer_subbuf_order_get(buffer), 0);
	for (order = 0; order <= 3; order++) {
		unsigned int cap = (PAGE_SIZE << order) - RBT_HDR;
		unsigned int len = min_t(unsigned int, cap / 3, ring_buffer_max_event_size(buffer));
		unsigned int per = cap / rbt_event_bytes(len), n = 3 * per + 1, i;
		u64 t0 = 1000000 * (order + 1);

		/* Two events, one of them read, before the order changes. */
		KUNIT_ASSERT_EQ(test, rbt_fill_buffer(buffer, 2, 16, t0 - 10), 2U);
		KUNIT_ASSERT_NOT_NULL(test, ring_buffer_consume(buffer, cpu, NULL, NULL));
		KUNIT_ASSERT_EQ(test, 0, ring_buffer_subbuf_order_set(buffer, order));
		KUNIT_EXPECT_EQ(test, ring_buffer_subbuf_order_get(buffer), order);
		KUNIT_EXPECT_EQ(test, ring_buffer_subbuf_size_get(buffer),
				(int)(PAGE_SIZE << order));
		KUNIT_EXPECT_EQ(test, rbt_capacity(buffer), cap);
		/* The total size stays what was asked for, in bigger pieces. */
		KUNIT_EXPECT_GE(test, ring_buffer_size(buffer, cpu), RBT_SUBBUFS(32));
		KUNIT_EXPECT_LT(test, ring_buffer_size(buffer, cpu), RBT_SUBBUFS(32) + 2 * cap);
		if (order) {
			/*
			 * A change of order starts afresh: the old sub-buffers
			 * are gone, so nothing of them may still be counted
			 * (per_cpu/cpuN/stats, and since 6.14 the empty test).
			 */
			KUNIT_EXPECT_TRUE(test, ring_buffer_empty_cpu(buffer, cpu));
			KUNIT_EXPECT_EQ(test, ring_buffer_entries_cpu(buffer, cpu), 0UL);
			KUNIT_EXPECT_EQ(test, ring_buffer_read_events_cpu(buffer, cpu), 0UL);
			KUNIT_EXPECT_EQ(test, ring_buffer_bytes_cpu(buffer, cpu), 0UL);
		}
		ring_buffer_reset_cpu(buffer, cpu);

		KUNIT_ASSERT_EQ(test, rbt_fill_buffer(buffer, n, len, t0), n);
		for (i = 0; i < 3; i++) {
			KUNIT_ASSERT_EQ(test, 0, rbt_read_page(test, r, 1, pg));
			KUNIT_EXPECT_EQ(test, ring_buffer_read_page_size(r->rpage),
					PAGE_SIZE << order);
			KUNIT_ASSERT_EQ(test, pg->nr, per);
			KUNIT_EXPECT_EQ(test, pg->len, per * rbt_event_bytes(len));
			KUNIT_EXPECT_TRUE(test, rbt_payload_ok(pg->ev[0].data, len, i * per));
			KUNIT_EXPECT_EQ(test, pg->ev[per - 1].ts, t0 + (i + 1) * per - 1);
		}
		KUNIT_ASSERT_EQ(test, 0, rbt_read_page(test, r, 0, pg));
		KUNIT_ASSERT_EQ(test, pg->nr, 1U);
		KUNIT_EXPECT_EQ(test, pg->time_stamp, t0 + 3 * per);
		ring_buffer_reset(buffer);
	}
	KUNIT_EXPECT_EQ(test, -EINVAL, ring_buffer_subbuf_order_set(buffer, -1));
	KUNIT_EXPECT_EQ(test, ring_buffer_subbuf_order_get(buffer), 3);
	KUNIT_ASSERT_EQ(test, 0, ring_buffer_subbuf_order_set(buffer, 0));
}

/*
 * Sub-buffer orders 4..7 (64 KiB to 512 KiB) with data, at the least number
 * of sub-buffers (two per CPU: 1.5 MiB per CPU at order 7 with the reader
 * page). Events fill each sub-buffer to its end, across its pages; the first
 * sub-buffer is read with ring_buffer_read_page(), the second consumed.
 */
static void rbt_subbuf_orders_large(struct kunit *test)
{
	struct trace_buffer *buffer = rbt_alloc(test, RBT_SUBBUFS(2), 0);
	int cpu = rbt_cpu(test);
	struct rbt_reader *r = rbt_reader(test, buffer, cpu);
	struct rbt_page *pg = kunit_kzalloc(test, sizeof(*pg), GFP_KERNEL);
	struct ring_buffer_event *event;
	int order, err;
	u64 ts;

	KUNIT_ASSERT_NOT_NULL(test, pg);
	for (order = 4; order <= 7; order++) {
		unsigned int cap = (PAGE_SIZE << order) - RBT_HDR, len, bytes, per, i;
		u64 t0 = 1000000ULL * order;

		KUNIT_ASSERT_EQ(test, rbt_fill_buffer(buffer, 2, 16, t0 - 10), 2U);
		err = ring_buffer_subbuf_order_set(buffer, order);
		KUNIT_ASSERT_EQ_MSG(test, err, 0,
				    "order %d: could not get two %lu KiB sub-buffers per CPU",
				    order, (PAGE_SIZE << order) / 1024);
		KUNIT_EXPECT_EQ(test, ring_buffer_subbuf_order_get(buffer), order);
		KUNIT_EXPECT_EQ(test, ring_buffer_subbuf_size_get(buffer),
				(int)(PAGE_SIZE << order));
		KUNIT_EXPECT_EQ(test, rbt_capacity(buffer), cap);
		KUNIT_EXPECT_EQ(test, ring_buffer_size(buffer, cpu), 2UL * cap);
		KUNIT_EXPECT_TRUE(test, ring_buffer_empty_cpu(buffer, cpu));
		ring_buffer_reset_cpu(buffer, cpu);

		/* Both sub-buffers fill up; the event after them is dropped. */
		len = min_t(unsigned int, cap / 3, ring_buffer_max_event_size(buffer));
		bytes = rbt_event_bytes(len);
		per = cap / bytes;
		KUNIT_ASSERT_LE(test, per, (unsigned int)ARRAY_SIZE(pg->ev));
		KUNIT_ASSERT_EQ(test, rbt_fill_buffer(buffer, 2 * per + 1, len, t0), 2 * per);
		KUNIT_EXPECT_EQ(test, ring_buffer_entries_cpu(buffer, cpu), 2UL * per);
		KUNIT_EXPECT_EQ(test, ring_buffer_dropped_events_cpu(buffer, cpu), 1UL);

		KUNIT_ASSERT_EQ(test, 0, rbt_read_page(test, r, 1, pg));
		KUNIT_EXPECT_EQ(test, ring_buffer_read_page_size(r->rpage), PAGE_SIZE << order);
		KUNIT_EXPECT_EQ(test, pg->time_stamp, t0);
		KUNIT_EXPECT_EQ(test, pg->commit & ~RBT_LEN_MASK, 0UL);
		KUNIT_ASSERT_EQ_MSG(test, pg->nr, per, "order %d", order);
		KUNIT_EXPECT_EQ(test, pg->len, per * bytes);
		for (i = 0; i < per; i++) {
			KUNIT_EXPECT_EQ_MSG(test, pg->ev[i].offset, i * bytes,
					    "order %d event %u", order, i);
			KUNIT_EXPECT_EQ_MSG(test, pg->ev[i].ts, t0 + i,
					    "order %d event %u", order, i);
			KUNIT_EXPECT_TRUE_MSG(test, rbt_payload_ok(pg->ev[i].data, len, i),
					      "order %d event %u", order, i);
		}

		for (i = per; i < 2 * per; i++) {
			event = ring_buffer_consume(buffer, cpu, &ts, NULL);
			KUNIT_ASSERT_NOT_NULL_MSG(test, event, "order %d event %u", order, i);
			KUNIT_EXPECT_EQ_MSG(test, ts, t0 + i, "order %d event %u", order, i);
			KUNIT_EXPECT_EQ(test, ring_buffer_event_length(event), rbt_event_room(len));
			KUNIT_EXPECT_TRUE_MSG(test,
					      rbt_payload_ok(ring_buffer_event_data(event), len, i),
					      "order %d event %u", order, i);
		}
		KUNIT_EXPECT_NULL(test, ring_buffer_consume(buffer, cpu, NULL, NULL));
		KUNIT_EXPECT_TRUE(test, ring_buffer_empty_cpu(buffer, cpu));
		ring_buffer_reset(buffer);
	}
	/* Back to order 0: the size is kept, in small pieces. */
	KUNIT_ASSERT_EQ(test, 0, ring_buffer_subbuf_order_set(buffer, 0));
	KUNIT_EXPECT_GE(test, ring_buffer_size(buffer, cpu), 2 * ((PAGE_SIZE << 7) - RBT_HDR));
	KUNIT_EXPECT_LT(test, ring_buffer_size(buffer, cpu),
			2 * ((PAGE_SIZE << 7) - RBT_HDR) + RBT_SUBBUFS(1));
	KUNIT_ASSERT_EQ(test, 0, rbt_write_at(buffer, 5, 16, 5));
	rbt_expect_tags(test, buffer, cpu, 5, 1);
}

/*
 * One freed read page per CPU is kept for the next allocation, outside the
 * reader lock (design document, "Page reads and splice"): the next
 * allocation gets that page back, a sub-buffer a swap handed out included;
 * after an order change it gets one of the new order; a page splice still
 * holds is not kept. A kept page comes back as it was, a new one zeroed:
 * a mark in its last byte tells them apart (the page allocator may well
 * hand out the page just freed).
 */
static void rbt_read_page_spare(struct kunit *test)
{
	struct trace_buffer *buffer = rbt_alloc(test, RBT_SUBBUFS(8), 0);
	int cpu = rbt_cpu(test);
	struct buffer_data_read_page *rpage = NULL;
	u8 *data, *swapped;
	unsigned int per;
	int err;

	KUNIT_ASSERT_EQ(test, 0, ring_buffer_subbuf_order_set(buffer, 1));
	KUNIT_ASSERT_EQ(test, 0, ring_buffer_alloc_read_page(buffer, cpu, &rpage));
	data = ring_buffer_read_page_data(rpage);
	data[(PAGE_SIZE << 1) - 1] = 0x5a;
	ring_buffer_free_read_page(buffer, cpu, rpage);
	rpage = NULL;
	KUNIT_ASSERT_EQ(test, 0, ring_buffer_alloc_read_page(buffer, cpu, &rpage));
	KUNIT_EXPECT_PTR_EQ(test, (u8 *)ring_buffer_read_page_data(rpage), data);
	KUNIT_EXPECT_EQ(test, data[(PAGE_SIZE << 1) - 1], 0x5a);
	KUNIT_EXPECT_EQ(test, ring_buffer_read_page_size(rpage), PAGE_SIZE << 1);
	ring_buffer_free_read_page(buffer, cpu, rpage);

	/* The kept page is of order 1 now, the buffer's of order 0. */
	rpage = NULL;
	KUNIT_ASSERT_EQ(test, 0, ring_buffer_subbuf_order_set(buffer, 0));
	per = rbt_capacity(buffer) / rbt_event_bytes(64);
	KUNIT_ASSERT_EQ(test, 0, ring_buffer_alloc_read_page(buffer, cpu, &rpage));
	KUNIT_EXPECT_EQ(test, ring_buffer_read_page_size(rpage), PAGE_SIZE);
	KUNIT_EXPECT_EQ(test, compound_order(virt_to_page(ring_buffer_read_page_data(rpage))), 0);

	/* A full sub-buffer is swapped out; freed, it is the next read page. */
	KUNIT_ASSERT_EQ(test, rbt_fill_buffer(buffer, 2 * per, 64, 1000), 2 * per);
	data = ring_buffer_read_page_data(rpage);
	KUNIT_ASSERT_EQ(test, 0, ring_buffer_read_page(buffer, rpage, PAGE_SIZE, cpu, 1));
	swapped = ring_buffer_read_page_data(rpage);
	KUNIT_EXPECT_PTR_NE(test, swapped, data);
	swapped[PAGE_SIZE - 1] = 0xa5;
	ring_buffer_free_read_page(buffer, cpu, rpage);
	rpage = NULL;
	KUNIT_ASSERT_EQ(test, 0, ring_buffer_alloc_read_page(buffer, cpu, &rpage));
	KUNIT_EXPECT_PTR_EQ(test, (u8 *)ring_buffer_read_page_data(rpage), swapped);
	KUNIT_EXPECT_EQ(test, swapped[PAGE_SIZE - 1], 0xa5);

	/* A page with another reference (splice's) is not kept. */
	get_page(virt_to_page(swapped));
	ring_buffer_free_read_page(buffer, cpu, rpage);
	rpage = NULL;
	err = ring_buffer_alloc_read_page(buffer, cpu, &rpage);
	if (!err)
		KUNIT_EXPECT_PTR_NE(test, (u8 *)ring_buffer_read_page_data(rpage), swapped);
	put_page(virt_to_page(swapped));
	KUNIT_ASSERT_EQ(test, err, 0);
	KUNIT_EXPECT_EQ(test, 0, ring_buffer_read_page(buffer, rpage, PAGE_SIZE, cpu, 0));
	ring_buffer_free_read_page(buffer, cpu, rpage);
}

static void rbt_swap_cpu(struct kunit *test)
{
	struct trace_buffer *a = rbt_alloc(test, RBT_SUBBUFS(4), 0);
	struct trace_buffer *b = rbt_alloc(test, RBT_SUBBUFS(4), 0);
	struct trace_buffer *c = rbt_alloc(test, RBT_SUBBUFS(8), 0);
	int cpu = rbt_cpu(test);

	if (!IS_ENABLED(CONFIG_RING_BUFFER_ALLOW_SWAP))
		kunit_skip(test, "needs CONFIG_RING_BUFFER_ALLOW_SWAP");
	KUNIT_ASSERT_EQ(test, rbt_fill_buffer(a, 5, 16, 0), 5U);
	KUNIT_ASSERT_EQ(test, rbt_fill_buffer(b, 2, 16, 100), 2U);
	KUNIT_ASSERT_EQ(test, 0, ring_buffer_swap_cpu(a, b, cpu));
	KUNIT_EXPECT_EQ(test, ring_buffer_entries_cpu(a, cpu), 2UL);
	KUNIT_EXPECT_EQ(test, ring_buffer_entries_cpu(b, cpu), 5UL);
	rbt_expect_tags(test, b, cpu, 0, 5);
	rbt_expect_tags(test, a, cpu, 0, 2);

	/* Different sizes do not swap, and nothing moves. */
	KUNIT_ASSERT_EQ(test, rbt_fill_buffer(a, 3, 16, 1000), 3U);
	KUNIT_EXPECT_EQ(test, -EINVAL, ring_buffer_swap_cpu(a, c, cpu));
	KUNIT_EXPECT_EQ(test, ring_buffer_entries_cpu(a, cpu), 3UL);
	/* Nor does a disabled buffer. */
	ring_buffer_record_disable(b);
	KUNIT_EXPECT_EQ(test, -EAGAIN, ring_buffer_swap_cpu(a, b, cpu));
	ring_buffer_record_enable(b);
	KUNIT_EXPECT_EQ(test, -EINVAL, ring_buffer_swap_cpu(a, b, nr_cpu_ids));
}

/*
 * Each ring_buffer_alloc() call site gives its buffers' reader locks a
 * lockdep class of its own, and a swap of one CPU leaves each buffer with
 * CPU buffers of both. An order change takes every reader lock of its
 * buffer: on the other buffer it must not take the two classes in the
 * opposite order (the debug guest's lockdep would report a possible
 * deadlock on the console, which fails the run).
 */
static void rbt_swap_two_classes(struct kunit *test)
{
	int cpu = cpumask_first(cpu_online_mask);
	struct trace_buffer *a, *b;

	if (!IS_ENABLED(CONFIG_RING_BUFFER_ALLOW_SWAP))
		kunit_skip(test, "needs CONFIG_RING_BUFFER_ALLOW_SWAP");
	if (num_online_cpus() < 2)
		kunit_skip(test, "needs two CPUs");
	a = ring_buffer_alloc(RBT_SUBBUFS(4), 0);
	b = ring_buffer_alloc(RBT_SUBBUFS(4), 0);
	if (!a || !b) {
		if (a)
			ring_buffer_free(a);
		if (b)
			ring_buffer_free(b);
		KUNIT_FAIL_AND_ABORT(test, "no buffer");
	}
	KUNIT_EXPECT_EQ(test, 0, ring_buffer_swap_cpu(a, b, cpu));
	KUNIT_EXPECT_EQ(test, 0, ring_buffer_subbuf_order_set(a, 1));
	KUNIT_EXPECT_EQ(test, 0, ring_buffer_subbuf_order_set(b, 1));
	KUNIT_EXPECT_EQ(test, 0, ring_buffer_resize(a, RBT_SUBBUFS(8), RING_BUFFER_ALL_CPUS));
	KUNIT_EXPECT_EQ(test, 0, ring_buffer_resize(b, RBT_SUBBUFS(8), RING_BUFFER_ALL_CPUS));
	ring_buffer_free(b);
	ring_buffer_free(a);
}

static void rbt_reset(struct kunit *test)
{
	struct trace_buffer *buffer = rbt_alloc(test, RBT_SUBBUFS(4), RB_FL_OVERWRITE);
	int cpu = rbt_cpu(test);
	unsigned int per = rbt_capacity(buffer) / rbt_event_bytes(16);

	KUNIT_ASSERT_EQ(test, rbt_fill_buffer(buffer, 6 * per, 16, 0), 6 * per);
	KUNIT_ASSERT_NOT_NULL(test, ring_buffer_consume(buffer, cpu, NULL, NULL));
	KUNIT_ASSERT_GT(test, ring_buffer_overrun_cpu(buffer, cpu), 0UL);
	ring_buffer_reset_cpu(buffer, cpu);
	KUNIT_EXPECT_TRUE(test, ring_buffer_empty_cpu(buffer, cpu));
	KUNIT_EXPECT_EQ(test, ring_buffer_entries_cpu(buffer, cpu), 0UL);
	KUNIT_EXPECT_EQ(test, ring_buffer_overrun_cpu(buffer, cpu), 0UL);
	KUNIT_EXPECT_EQ(test, ring_buffer_read_events_cpu(buffer, cpu), 0UL);
	KUNIT_EXPECT_EQ(test, ring_buffer_bytes_cpu(buffer, cpu), 0UL);
	KUNIT_EXPECT_EQ(test, 0, rbt_write_at(buffer, 99, 16, 7));
	rbt_expect_tags(test, buffer, cpu, 7, 1);

	KUNIT_ASSERT_EQ(test, rbt_fill_buffer(buffer, 3, 16, 1000), 3U);
	ring_buffer_reset_online_cpus(buffer);
	KUNIT_EXPECT_TRUE(test, ring_buffer_empty(buffer));
	KUNIT_ASSERT_EQ(test, rbt_fill_buffer(buffer, 3, 16, 2000), 3U);
	ring_buffer_reset(buffer);
	KUNIT_EXPECT_TRUE(test, ring_buffer_empty(buffer));
	KUNIT_EXPECT_EQ(test, ring_buffer_entries(buffer), 0UL);
}

static void rbt_record_control(struct kunit *test)
{
	struct trace_buffer *buffer = rbt_alloc(test, RBT_SUBBUFS(4), 0);
	struct ring_buffer_event *event;
	int cpu = rbt_cpu(test);
	u32 tag;

	KUNIT_EXPECT_TRUE(test, ring_buffer_record_is_on(buffer));
	KUNIT_EXPECT_TRUE(test, ring_buffer_record_is_set_on(buffer));

	/* disable/enable nest: writes work only when every disable is undone. */
	ring_buffer_record_disable(buffer);
	ring_buffer_record_disable(buffer);
	KUNIT_EXPECT_FALSE(test, ring_buffer_record_is_on(buffer));
	KUNIT_EXPECT_TRUE(test, ring_buffer_record_is_set_on(buffer));
	KUNIT_EXPECT_EQ(test, -EBUSY, rbt_write(buffer, 8, 1));
	ring_buffer_record_enable(buffer);
	KUNIT_EXPECT_EQ(test, -EBUSY, rbt_write(buffer, 8, 2));
	ring_buffer_record_enable(buffer);
	KUNIT_EXPECT_TRUE(test, ring_buffer_record_is_on(buffer));
	KUNIT_EXPECT_EQ(test, 0, rbt_write(buffer, 8, 3));

	/* off/on is a switch, not a count. */
	ring_buffer_record_off(buffer);
	ring_buffer_record_off(buffer);
	KUNIT_EXPECT_FALSE(test, ring_buffer_record_is_on(buffer));
	KUNIT_EXPECT_FALSE(test, ring_buffer_record_is_set_on(buffer));
	KUNIT_EXPECT_EQ(test, -EBUSY, rbt_write(buffer, 8, 4));
	ring_buffer_record_on(buffer);
	KUNIT_EXPECT_TRUE(test, ring_buffer_record_is_on(buffer));
	KUNIT_EXPECT_EQ(test, 0, rbt_write(buffer, 8, 5));

	/* Off while disabled: set-on says off, and on alone does not enable. */
	ring_buffer_record_disable(buffer);
	ring_buffer_record_off(buffer);
	ring_buffer_record_on(buffer);
	KUNIT_EXPECT_TRUE(test, ring_buffer_record_is_set_on(buffer));
	KUNIT_EXPECT_FALSE(test, ring_buffer_record_is_on(buffer));
	ring_buffer_record_enable(buffer);
	KUNIT_EXPECT_TRUE(test, ring_buffer_record_is_on(buffer));

	/* One CPU. */
	ring_buffer_record_disable_cpu(buffer, cpu);
	KUNIT_EXPECT_EQ(test, -EBUSY, rbt_write(buffer, 8, 6));
	ring_buffer_record_enable_cpu(buffer, cpu);
	KUNIT_EXPECT_EQ(test, 0, rbt_write(buffer, 8, 7));

	/* Exactly the writes made while recording was on, in order. */
	KUNIT_EXPECT_EQ(test, ring_buffer_entries_cpu(buffer, cpu), 3UL);
	for (tag = 3; tag <= 7; tag += 2) {
		event = ring_buffer_consume(buffer, cpu, NULL, NULL);
		KUNIT_ASSERT_NOT_NULL(test, event);
		KUNIT_EXPECT_EQ(test, rbt_tag(ring_buffer_event_data(event)), tag);
	}
	KUNIT_EXPECT_NULL(test, ring_buffer_consume(buffer, cpu, NULL, NULL));
}

/* ---- waiting for data ---- */

struct rbt_waiter {
	struct trace_buffer	*buffer;
	int			cpu;
	int			full;
	bool			once;	/* NULL cond: return at the first wakeup */
	bool			stop;
	int			ret;
	struct completion	started;
	struct completion	done;
};

/* Only the watermark (or the end of the test) ends this wait. */
static bool rbt_wait_cond(void *arg)
{
	return READ_ONCE(((struct rbt_waiter *)arg)->stop);
}

static int rbt_waiter_fn(void *arg)
{
	struct rbt_waiter *w = arg;

	complete(&w->started);
	w->ret = ring_buffer_wait(w->buffer, w->cpu, w->full,
				  w->once ? NULL : rbt_wait_cond, w);
	complete_all(&w->done);	/* stays done: the test and the reaper both wait */
	return 0;
}

/* Make sure a waiter never outlives its buffer, whatever the test found. */
static void rbt_waiter_reap(void *arg)
{
	struct rbt_waiter *w = arg;

	WRITE_ONCE(w->stop, true);
	while (!wait_for_completion_timeout(&w->done, HZ / 10))
		ring_buffer_wake_waiters(w->buffer, w->cpu);
}

static struct rbt_waiter *rbt_waiter_start(struct kunit *test, struct trace_buffer *buffer,
					   int cpu, int full, bool once)
{
	struct rbt_waiter *w = kunit_kzalloc(test, sizeof(*w), GFP_KERNEL);
	struct task_struct *t;

	KUNIT_ASSERT_NOT_NULL(test, w);
	w->buffer = buffer;
	w->cpu = cpu;
	w->full = full;
	w->once = once;
	w->ret = 1;
	init_completion(&w->started);
	init_completion(&w->done);
	t = kthread_run(rbt_waiter_fn, w, "rbt-waiter");
	KUNIT_ASSERT_FALSE(test, IS_ERR(t));
	KUNIT_ASSERT_EQ(test, 0, kunit_add_action_or_reset(test, rbt_waiter_reap, w));
	wait_for_completion(&w->started);
	/* Give it time to go to sleep; it must still be waiting after. */
	msleep(50);
	return w;
}

static bool rbt_woken(struct rbt_waiter *w, unsigned int ms)
{
	return wait_for_completion_timeout(&w->done, msecs_to_jiffies(ms)) > 0;
}

/* full == 0: any data wakes the reader. */
static void rbt_wait_any(struct kunit *test)
{
	struct trace_buffer *buffer = rbt_alloc(test, RBT_SUBBUFS(8), 0);
	struct rbt_waiter *w = rbt_waiter_start(test, buffer, rbt_cpu(test), 0, true);

	KUNIT_EXPECT_FALSE(test, rbt_woken(w, 50));
	KUNIT_ASSERT_EQ(test, 0, rbt_write(buffer, 16, 1));
	KUNIT_EXPECT_TRUE(test, rbt_woken(w, 5000));
	KUNIT_EXPECT_EQ(test, w->ret, 0);
}

/*
 * full == 50 and 100: with a condition that never holds, only the watermark
 * ends the wait (a NULL condition would return at any wakeup).
 */
static void rbt_wait_watermark(struct kunit *test)
{
	int cpu = rbt_cpu(test), full;

	for (full = 50; full <= 100; full += 50) {
		struct trace_buffer *buffer = rbt_alloc(test, RBT_SUBBUFS(8), 0);
		/*
		 * The sub-buffer being written counts as full: the watermark is
		 * met once full% of all sub-buffers, less that one, are complete.
		 * Writing until a count of complete sub-buffers is reached keeps
		 * the test independent of how many bytes an event takes.
		 */
		size_t need = DIV_ROUND_UP(full * 8, 100) - 1;
		struct rbt_waiter *w = rbt_waiter_start(test, buffer, cpu, full, false);
		unsigned int i;

		for (i = 0; ring_buffer_nr_dirty_pages(buffer, cpu) < need - 1; i++)
			KUNIT_ASSERT_EQ(test, 0, rbt_write(buffer, 100, i));
		KUNIT_ASSERT_EQ(test, 0, rbt_write(buffer, 100, i));
		KUNIT_EXPECT_FALSE_MSG(test, rbt_woken(w, 100), "full %d", full);
		while (ring_buffer_nr_dirty_pages(buffer, cpu) < need)
			KUNIT_ASSERT_EQ(test, 0, rbt_write(buffer, 100, ++i));
		KUNIT_EXPECT_TRUE_MSG(test, rbt_woken(w, 5000), "full %d", full);
		KUNIT_EXPECT_EQ(test, w->ret, 0);
	}
}

/* ring_buffer_wake_waiters() releases a reader with nothing to read. */
static void rbt_wake_waiters(struct kunit *test)
{
	struct trace_buffer *buffer = rbt_alloc(test, RBT_SUBBUFS(8), 0);
	struct rbt_waiter *w = rbt_waiter_start(test, buffer, rbt_cpu(test), 0, true);
	struct rbt_waiter *all = rbt_waiter_start(test, buffer, RING_BUFFER_ALL_CPUS, 0, true);

	KUNIT_EXPECT_FALSE(test, rbt_woken(w, 50));
	ring_buffer_wake_waiters(buffer, rbt_cpu(test));
	KUNIT_EXPECT_TRUE(test, rbt_woken(w, 5000));
	KUNIT_EXPECT_EQ(test, w->ret, 0);
	KUNIT_EXPECT_FALSE(test, rbt_woken(all, 50));
	ring_buffer_wake_waiters(buffer, RING_BUFFER_ALL_CPUS);
	KUNIT_EXPECT_TRUE(test, rbt_woken(all, 5000));
	KUNIT_EXPECT_EQ(test, all->ret, 0);
	KUNIT_EXPECT_TRUE(test, ring_buffer_empty(buffer));
}

/*
 * ring_buffer_poll_wait() with no poll table, as a plain number: KUnit
 * compares integers, and sparse keeps __poll_t apart from them.
 */
static unsigned int rbt_poll(struct trace_buffer *buffer, int cpu, int full)
{
	return (__force unsigned int)ring_buffer_poll_wait(buffer, cpu, NULL, NULL, full);
}

#define RBT_READY	((__force unsigned int)(EPOLLIN | EPOLLRDNORM))

/*
 * ring_buffer_poll_wait() with no poll table (poll_wait() does nothing then):
 * the readiness it reports. full == 0 wants any data; full == 50 wants half
 * the sub-buffers, counted as rbt_wait_watermark() does. A reader of all CPUs
 * waits for any data, whatever full says.
 */
static void rbt_poll_wait(struct kunit *test)
{
	struct trace_buffer *buffer = rbt_alloc(test, RBT_SUBBUFS(8), 0);
	const unsigned int none = 0, ready = RBT_READY;
	const int all = RING_BUFFER_ALL_CPUS;
	int cpu = rbt_cpu(test);
	size_t need = DIV_ROUND_UP(50 * 8, 100) - 1;
	unsigned int i = 0;

	KUNIT_EXPECT_EQ(test, rbt_poll(buffer, cpu, 0), none);
	KUNIT_EXPECT_EQ(test, rbt_poll(buffer, cpu, 50), none);
	KUNIT_EXPECT_EQ(test, rbt_poll(buffer, all, 0), none);
	KUNIT_EXPECT_EQ(test, rbt_poll(buffer, all, 50), none);

	KUNIT_ASSERT_EQ(test, 0, rbt_write(buffer, 100, i));
	KUNIT_EXPECT_EQ(test, rbt_poll(buffer, cpu, 0), ready);
	KUNIT_EXPECT_EQ(test, rbt_poll(buffer, cpu, 50), none);
	KUNIT_EXPECT_EQ(test, rbt_poll(buffer, all, 0), ready);
	KUNIT_EXPECT_EQ(test, rbt_poll(buffer, all, 50), ready);

	/* One sub-buffer short of the watermark, then at it. */
	while (ring_buffer_nr_dirty_pages(buffer, cpu) < need - 1)
		KUNIT_ASSERT_EQ(test, 0, rbt_write(buffer, 100, ++i));
	KUNIT_ASSERT_EQ(test, 0, rbt_write(buffer, 100, ++i));
	KUNIT_EXPECT_EQ(test, rbt_poll(buffer, cpu, 50), none);
	while (ring_buffer_nr_dirty_pages(buffer, cpu) < need)
		KUNIT_ASSERT_EQ(test, 0, rbt_write(buffer, 100, ++i));
	KUNIT_EXPECT_EQ(test, rbt_poll(buffer, cpu, 50), ready);
	KUNIT_EXPECT_EQ(test, rbt_poll(buffer, cpu, 0), ready);
	KUNIT_EXPECT_EQ(test, rbt_poll(buffer, all, 50), ready);

	/* Read empty, nothing is ready again. */
	rbt_expect_tags(test, buffer, cpu, 0, i + 1);
	KUNIT_EXPECT_EQ(test, rbt_poll(buffer, cpu, 0), none);
	KUNIT_EXPECT_EQ(test, rbt_poll(buffer, cpu, 50), none);
	KUNIT_EXPECT_EQ(test, rbt_poll(buffer, all, 0), none);
	KUNIT_EXPECT_EQ(test, rbt_poll(buffer, all, 50), none);

	/* A CPU the buffer has no per-CPU buffer for. */
	KUNIT_EXPECT_EQ(test, rbt_poll(buffer, nr_cpu_ids, 0),
			(__force unsigned int)EPOLLERR);
}

/*
 * A watermark so low that no sub-buffer need be dirty (full * nr <= 100)
 * still wants data: an empty CPU is never ready, or trace-cmd's splice and
 * poll readers spin on an idle CPU. Also right after a reset, and after
 * everything was read.
 */
static void rbt_poll_low_watermark(struct kunit *test)
{
	struct trace_buffer *buffer = rbt_alloc(test, RBT_SUBBUFS(2), 0);
	const unsigned int ready = RBT_READY;
	int cpu = rbt_cpu(test), full;

	for (full = 1; full <= 50; full += 49)
		KUNIT_EXPECT_EQ_MSG(test, rbt_poll(buffer, cpu, full),
				    0, "empty, full=%d", full);
	ring_buffer_reset_cpu(buffer, cpu);
	KUNIT_EXPECT_EQ(test, rbt_poll(buffer, cpu, 1), 0);
	KUNIT_ASSERT_EQ(test, 0, rbt_write(buffer, 100, 0));
	KUNIT_EXPECT_EQ(test, rbt_poll(buffer, cpu, 1), ready);
	rbt_expect_tags(test, buffer, cpu, 0, 1);
	KUNIT_EXPECT_EQ(test, rbt_poll(buffer, cpu, 1), 0);
}

/* A poll table whose one wait entry counts the wake-ups it gets. */
struct rbt_poller {
	poll_table		pt;
	wait_queue_entry_t	entry;
	wait_queue_head_t	*head;
	atomic_t		woken;
};

static int rbt_poller_wake(wait_queue_entry_t *entry, unsigned int mode, int sync, void *key)
{
	atomic_inc(&container_of(entry, struct rbt_poller, entry)->woken);
	return 0;
}

static void rbt_poller_queue(struct file *filp, wait_queue_head_t *head, poll_table *pt)
{
	struct rbt_poller *p = container_of(pt, struct rbt_poller, pt);

	init_waitqueue_func_entry(&p->entry, rbt_poller_wake);
	p->head = head;
	add_wait_queue(head, &p->entry);
}

/*
 * Poll with @p's table, whose entry stays queued as an epoll registration's
 * does, then write events until @dirty sub-buffers are dirty (at least
 * one event), and report whether the entry was woken within 200 ms: the
 * wake-up comes from irq_work, which UML runs at a tick.
 */
static bool rbt_poll_then_write(struct kunit *test, struct trace_buffer *buffer, int full,
				unsigned int want, size_t dirty, u32 *tag)
{
	struct rbt_poller p = { .woken = ATOMIC_INIT(0) };
	int cpu = rbt_cpu(test), ms;

	init_poll_funcptr(&p.pt, rbt_poller_queue);
	KUNIT_EXPECT_EQ(test, want, (__force unsigned int)
			ring_buffer_poll_wait(buffer, cpu, NULL, &p.pt, full));
	do {
		KUNIT_EXPECT_EQ(test, 0, rbt_write(buffer, 100, ++*tag));
	} while (ring_buffer_nr_dirty_pages(buffer, cpu) < dirty);
	for (ms = 0; ms < 200 && !atomic_read(&p.woken); ms += 20)
		msleep(20);
	if (p.head)
		remove_wait_queue(p.head, &p.entry);
	return atomic_read(&p.woken);
}

/*
 * Which polls arm a wake-up. One that finds its condition unmet is woken
 * by the commit that meets it. One that finds a watermark already reached
 * arms nothing: trace-cmd polls with one before every splice, and a
 * wake-up armed then costs the next commit an irq_work (an interrupt) that
 * nobody waits for. One for any data arms even when ready, for an
 * edge-triggered epoll, which waits on without polling again.
 */
static void rbt_poll_arms_wakeup(struct kunit *test)
{
	struct trace_buffer *buffer = rbt_alloc(test, RBT_SUBBUFS(8), 0);
	size_t need = DIV_ROUND_UP(50 * 8, 100) - 1;
	u32 tag = 0;

	KUNIT_EXPECT_TRUE(test, rbt_poll_then_write(test, buffer, 0, 0, 0, &tag));
	KUNIT_EXPECT_TRUE(test, rbt_poll_then_write(test, buffer, 0, RBT_READY, 0, &tag));
	KUNIT_EXPECT_TRUE(test, rbt_poll_then_write(test, buffer, 50, 0, need, &tag));
	KUNIT_EXPECT_FALSE(test, rbt_poll_then_write(test, buffer, 50, RBT_READY, 0, &tag));
}

/*
 * poll() and select() queue their entry on the first pass only, and epoll
 * at EPOLL_CTL_ADD; later passes poll with no queueing at all. After a
 * snapshot swap of the CPU (irqsoff's new maximum, echo 1 >
 * per_cpu/cpuN/snapshot), a write to the CPU buffer that came in must
 * still wake that entry, or trace-cmd's recorder for the CPU sleeps while
 * its buffer fills.
 */
static void rbt_poll_after_swap(struct kunit *test)
{
	struct trace_buffer *buffer = rbt_alloc(test, RBT_SUBBUFS(4), 0);
	struct trace_buffer *spare = rbt_alloc(test, RBT_SUBBUFS(4), 0);
	struct rbt_poller p = { .woken = ATOMIC_INIT(0) };
	int cpu = rbt_cpu(test), ms;

	if (!IS_ENABLED(CONFIG_RING_BUFFER_ALLOW_SWAP))
		kunit_skip(test, "needs CONFIG_RING_BUFFER_ALLOW_SWAP");
	init_poll_funcptr(&p.pt, rbt_poller_queue);
	KUNIT_EXPECT_EQ(test, 0U, (__force unsigned int)
			ring_buffer_poll_wait(buffer, cpu, NULL, &p.pt, 0));
	KUNIT_ASSERT_NOT_NULL(test, p.head);
	KUNIT_ASSERT_EQ(test, 0, ring_buffer_swap_cpu(spare, buffer, cpu));
	/* A wake-up the swap may send is not the one this test wants. */
	msleep(100);
	atomic_set(&p.woken, 0);
	KUNIT_EXPECT_EQ(test, rbt_poll(buffer, cpu, 0), 0U);
	KUNIT_EXPECT_EQ(test, 0, rbt_write(buffer, 100, 1));
	for (ms = 0; ms < 200 && !atomic_read(&p.woken); ms += 20)
		msleep(20);
	remove_wait_queue(p.head, &p.entry);
	KUNIT_EXPECT_GT(test, atomic_read(&p.woken), 0);
}

/*
 * The other side of the swap: a reader of the snapshot's CPU
 * (per_cpu/cpuN/snapshot_raw) waits for the data a swap brings in. It must
 * be woken once the snapshot has it: by the swap itself, or at the latest
 * by the next write to the CPU, as before the waiters stayed with their
 * buffer.
 */
static void rbt_poll_snapshot_after_swap(struct kunit *test)
{
	struct trace_buffer *buffer = rbt_alloc(test, RBT_SUBBUFS(4), 0);
	struct trace_buffer *snapshot = rbt_alloc(test, RBT_SUBBUFS(4), 0);
	struct rbt_poller p = { .woken = ATOMIC_INIT(0) };
	int cpu = rbt_cpu(test), ms;

	if (!IS_ENABLED(CONFIG_RING_BUFFER_ALLOW_SWAP))
		kunit_skip(test, "needs CONFIG_RING_BUFFER_ALLOW_SWAP");
	KUNIT_ASSERT_EQ(test, 0, rbt_write(buffer, 100, 1));
	init_poll_funcptr(&p.pt, rbt_poller_queue);
	KUNIT_EXPECT_EQ(test, 0U, (__force unsigned int)
			ring_buffer_poll_wait(snapshot, cpu, NULL, &p.pt, 0));
	KUNIT_ASSERT_NOT_NULL(test, p.head);
	KUNIT_ASSERT_EQ(test, 0, ring_buffer_swap_cpu(snapshot, buffer, cpu));
	KUNIT_EXPECT_EQ(test, 0, rbt_write(buffer, 100, 2));
	for (ms = 0; ms < 200 && !atomic_read(&p.woken); ms += 20)
		msleep(20);
	remove_wait_queue(p.head, &p.entry);
	KUNIT_EXPECT_GT(test, atomic_read(&p.woken), 0);
	KUNIT_EXPECT_FALSE(test, ring_buffer_empty_cpu(snapshot, cpu));
}

static struct kunit_case rbt_wait_cases[] = {
	KUNIT_CASE(rbt_wait_any),
	KUNIT_CASE(rbt_wait_watermark),
	KUNIT_CASE(rbt_wake_waiters),
	KUNIT_CASE(rbt_poll_wait),
	KUNIT_CASE(rbt_poll_low_watermark),
	KUNIT_CASE(rbt_poll_arms_wakeup),
	KUNIT_CASE(rbt_poll_after_swap),
	KUNIT_CASE(rbt_poll_snapshot_after_swap),
	{}
};

static struct kunit_suite rbt_wait_suite = {
	.name = "ring_buffer_wait",
	.init = rbt_init,
	.test_cases = rbt_wait_cases,
};

/* ---- the persistent (boot-surviving) range buffer ---- */

#define RBT_RANGE_SUBBUFS	10	/* per CPU, metadata included */

struct rbt_range {
	void		*mem;
	unsigned long	size;
};

static void rbt_range_free(void *arg)
{
	vfree(((struct rbt_range *)arg)->mem);
}

static struct rbt_range *rbt_range(struct kunit *test)
{
	struct rbt_range *rg = kunit_kzalloc(test, sizeof(*rg), GFP_KERNEL);

	KUNIT_ASSERT_NOT_NULL(test, rg);
	rg->size = nr_cpu_ids * RBT_RANGE_SUBBUFS * PAGE_SIZE;
	rg->mem = vzalloc(rg->size);
	KUNIT_ASSERT_NOT_NULL(test, rg->mem);
	KUNIT_ASSERT_EQ(test, 0, kunit_add_action_or_reset(test, rbt_range_free, rg));
	return rg;
}

/* A "boot": a buffer over the block; the caller frees it before the next. */
static struct trace_buffer *rbt_range_boot(struct kunit *test, struct rbt_range *rg)
{
	struct trace_buffer *buffer;

	buffer = ring_buffer_alloc_range(0, RB_FL_OVERWRITE, 0, (unsigned long)rg->mem, rg->size);
	if (!buffer)
		kunit_skip(test, "no persistent range buffer (see the kernel log for why)");
	ring_buffer_set_clock(buffer, rbt_clock);
	return buffer;
}

/* Where the payload of the event tagged @tag sits in the block, or NULL. */
static u8 *rbt_range_find(struct rbt_range *rg, u32 tag, unsigned int len)
{
	u8 *p, *end = rg->mem + rg->size - len;

	for (p = rg->mem; p <= end; p += 4)
		if (rbt_tag(p) == tag && rbt_payload_ok(p, len, tag))
			return p;
	return NULL;
}

/* Write, "reboot" onto the same memory, and read the last boot's events. */
/*
 * The last boot: three sub-buffers' worth of 100-byte events, event i at
 * time @t0 + @step * i tagged @tag + i, then the buffer is freed. Returns
 * how many were written.
 */
static unsigned int rbt_range_last_boot(struct kunit *test, struct rbt_range *rg,
					u64 t0, u64 step, u32 tag)
{
	struct trace_buffer *buffer = rbt_range_boot(test, rg);
	unsigned int i, n = 3 * (PAGE_SIZE / rbt_event_bytes(100));

	for (i = 0; i < n; i++)
		KUNIT_ASSERT_EQ(test, 0, rbt_write_at(buffer, t0 + step * i, 100, tag + i));
	ring_buffer_free(buffer);
	return n;
}

static void rbt_persistent_reboot(struct kunit *test)
{
	struct rbt_range *rg = rbt_range(test);
	unsigned int i, n = rbt_range_last_boot(test, rg, 5000, 3, 0x5000);
	struct trace_buffer *buffer = rbt_range_boot(test, rg);
	int cpu = rbt_cpu(test);
	struct ring_buffer_event *event;
	long text, data;
	u64 ts;

	KUNIT_EXPECT_EQ(test, ring_buffer_entries_cpu(buffer, cpu), (unsigned long)n);
	/* The same kernel image: no relocation to report. */
	KUNIT_EXPECT_FALSE(test, ring_buffer_last_boot_delta(buffer, &text, &data));
	for (i = 0; i < n; i++) {
		event = ring_buffer_consume(buffer, cpu, &ts, NULL);
		KUNIT_ASSERT_NOT_NULL_MSG(test, event, "event %u of %u", i, n);
		KUNIT_EXPECT_TRUE(test, rbt_payload_ok(ring_buffer_event_data(event), 100,
						       0x5000 + i));
		KUNIT_EXPECT_EQ(test, ts, 5000ULL + 3 * i);
	}
	KUNIT_EXPECT_NULL(test, ring_buffer_consume(buffer, cpu, NULL, NULL));
	ring_buffer_free(buffer);
}

/* After the last boot's events are read, the buffer records and reads anew. */
static void rbt_persistent_continue(struct kunit *test)
{
	struct rbt_range *rg = rbt_range(test);
	unsigned int i, n = rbt_range_last_boot(test, rg, 5000, 3, 0x5000);
	struct trace_buffer *buffer = rbt_range_boot(test, rg);
	int cpu = rbt_cpu(test);
	struct ring_buffer_event *event;
	u64 ts;

	for (i = 0; i < n; i++)
		KUNIT_ASSERT_NOT_NULL(test, ring_buffer_consume(buffer, cpu, NULL, NULL));
	for (i = 0; i < 3; i++)
		KUNIT_EXPECT_EQ(test, 0, rbt_write_at(buffer, 90000 + i, 100, 0x9000 + i));
	for (i = 0; i < 3; i++) {
		event = ring_buffer_consume(buffer, cpu, &ts, NULL);
		KUNIT_ASSERT_NOT_NULL(test, event);
		KUNIT_EXPECT_EQ(test, rbt_tag(ring_buffer_event_data(event)), 0x9000U + i);
		KUNIT_EXPECT_EQ(test, ts, 90000ULL + i);
	}
	KUNIT_EXPECT_NULL(test, ring_buffer_consume(buffer, cpu, NULL, NULL));
	ring_buffer_free(buffer);
}

/* The buffer of a boot that found damage records and reads anew; then it goes. */
static void rbt_range_records_again(struct kunit *test, struct trace_buffer *buffer)
{
	struct ring_buffer_event *event;

	KUNIT_EXPECT_EQ(test, 0, rbt_write_at(buffer, 90000, 100, 0x9000));
	event = ring_buffer_consume(buffer, rbt_cpu(test), NULL, NULL);
	KUNIT_EXPECT_TRUE(test, event && rbt_tag(ring_buffer_event_data(event)) == 0x9000U);
	ring_buffer_free(buffer);
}

enum rbt_damage { RBT_EVENT_HEADER, RBT_SUBBUF_COMMIT, RBT_GARBAGE };

/*
 * Damage what the last boot left and boot again: the damaged data must not
 * come back, whatever does come back must be intact and in order, nothing
 * crashes, and the buffer records again.
 */
static void rbt_persistent_damage(struct kunit *test, enum rbt_damage how)
{
	struct rbt_range *rg = rbt_range(test);
	unsigned int i, n = rbt_range_last_boot(test, rg, 5000, 1, 0x6000), victim = n / 2;
	struct trace_buffer *buffer;
	int cpu = rbt_cpu(test);
	struct ring_buffer_event *event;
	u32 next = 0, tag;
	u8 *p;

	p = rbt_range_find(rg, 0x6000 + victim, 100);
	KUNIT_ASSERT_NOT_NULL(test, p);
	switch (how) {
	case RBT_EVENT_HEADER:
		/* A data event whose length runs far past its sub-buffer. */
		if (RBT_FORCE_8) {
			((u32 *)p)[-2] = 0;
			((u32 *)p)[-1] = 0x7ffffff0;
		} else {
			/* type_len 0 takes its length from the tag: 0x6000 and more. */
			((u32 *)p)[-1] = 0;
		}
		break;
	case RBT_SUBBUF_COMMIT:
		/* Sub-buffers are page aligned; make its commit impossible. */
		((struct rbt_subbuf *)PTR_ALIGN_DOWN(p, PAGE_SIZE))->commit = 3 * PAGE_SIZE;
		break;
	case RBT_GARBAGE:
		for (i = 0; i < rg->size / 4; i++)
			((u32 *)rg->mem)[i] = i * 2654435761u;
		break;
	}

	buffer = rbt_range_boot(test, rg);
	for (i = 0; (event = ring_buffer_consume(buffer, cpu, NULL, NULL)); i++) {
		KUNIT_ASSERT_LT(test, i, n);
		tag = rbt_tag(ring_buffer_event_data(event));
		KUNIT_EXPECT_TRUE(test, rbt_payload_ok(ring_buffer_event_data(event), 100, tag));
		KUNIT_EXPECT_GE(test, tag, 0x6000 + next);
		KUNIT_EXPECT_NE(test, tag, 0x6000 + victim);
		next = tag - 0x6000 + 1;
	}
	KUNIT_EXPECT_LT(test, i, n);
	if (how == RBT_GARBAGE)
		KUNIT_EXPECT_EQ(test, i, 0U);
	rbt_range_records_again(test, buffer);
}

static void rbt_persistent_bad_event(struct kunit *test)
{
	rbt_persistent_damage(test, RBT_EVENT_HEADER);
}

static void rbt_persistent_bad_commit(struct kunit *test)
{
	rbt_persistent_damage(test, RBT_SUBBUF_COMMIT);
}

static void rbt_persistent_garbage(struct kunit *test)
{
	rbt_persistent_damage(test, RBT_GARBAGE);
}

/*
 * Read everything back; each event must be whole and later than the one
 * before. @losses (may be NULL) gets the loss reported with each.
 */
static unsigned int rbt_range_drain(struct kunit *test, struct trace_buffer *buffer,
				    unsigned int len, u32 *tags, unsigned int max,
				    unsigned long *losses)
{
	struct ring_buffer_event *event;
	unsigned long l;
	unsigned int i;
	u32 tag;

	for (i = 0; (event = ring_buffer_consume(buffer, rbt_cpu(test), NULL, &l)); i++) {
		KUNIT_ASSERT_LT(test, i, max);
		tag = rbt_tag(ring_buffer_event_data(event));
		KUNIT_EXPECT_TRUE_MSG(test, rbt_payload_ok(ring_buffer_event_data(event), len, tag),
				      "event %u (tag %#x) is not whole", i, tag);
		if (i)
			KUNIT_EXPECT_GT_MSG(test, tag, tags[i - 1], "event %u out of order", i);
		tags[i] = tag;
		if (losses)
			losses[i] = l;
	}
	return i;
}

/*
 * A crash while the reader is half way through a sub-buffer: the next boot
 * reads that sub-buffer again from its start, then everything after it,
 * so nothing unread is lost. The sub-buffers read whole before it come
 * back only if reading them left their data in place (7.3's rewind walks
 * back over such sub-buffers); the test reports how many did.
 */
static void rbt_persistent_crash_while_reading(struct kunit *test)
{
	struct rbt_range *rg = rbt_range(test);
	struct trace_buffer *buffer = rbt_range_boot(test, rg);
	unsigned int per = rbt_capacity(buffer) / rbt_event_bytes(100);
	unsigned int i, got, n = 4 * per, read = per + per / 2;
	int cpu = rbt_cpu(test);
	u32 *tags;

	for (i = 0; i < n; i++)
		KUNIT_ASSERT_EQ(test, 0, rbt_write_at(buffer, 5000 + 3 * i, 100, 0x5000 + i));
	for (i = 0; i < read; i++)
		KUNIT_ASSERT_NOT_NULL(test, ring_buffer_consume(buffer, cpu, NULL, NULL));
	ring_buffer_free(buffer);

	buffer = rbt_range_boot(test, rg);
	tags = kunit_kcalloc(test, n, sizeof(*tags), GFP_KERNEL);
	KUNIT_ASSERT_NOT_NULL(test, tags);
	got = rbt_range_drain(test, buffer, 100, tags, n, NULL);
	ring_buffer_free(buffer);
	KUNIT_ASSERT_GT(test, got, 0U);
	KUNIT_EXPECT_EQ(test, tags[got - 1], 0x5000U + n - 1);
	KUNIT_EXPECT_EQ_MSG(test, tags[got - 1] - tags[0], got - 1, "a gap in what came back");
	/* The reader's sub-buffer starts with event @per. */
	KUNIT_EXPECT_LE(test, tags[0], 0x5000U + per);
	kunit_info(test, "%u of the %u events read before the crash came back\n",
		   got - min(got, n - read), read);
}

/* The last boot's memory, moved: the next kernel maps it elsewhere. */
static void rbt_persistent_relocated(struct kunit *test)
{
	struct rbt_range *rg = rbt_range(test), *moved = rbt_range(test);
	unsigned int n = rbt_range_last_boot(test, rg, 5000, 3, 0x5000);
	struct trace_buffer *buffer;
	u32 *tags = kunit_kcalloc(test, n, sizeof(*tags), GFP_KERNEL);

	KUNIT_ASSERT_NOT_NULL(test, tags);
	memcpy(moved->mem, rg->mem, rg->size);
	memset(rg->mem, 0, rg->size);
	buffer = rbt_range_boot(test, moved);
	KUNIT_EXPECT_EQ(test, rbt_range_drain(test, buffer, 100, tags, n, NULL), n);
	KUNIT_EXPECT_EQ(test, tags[0], 0x5000U);
	ring_buffer_free(buffer);
}

/* A range that starts off a page boundary works, and keeps its data. */
static void rbt_persistent_unaligned(struct kunit *test)
{
	struct rbt_range *rg = rbt_range(test);
	struct rbt_range off = { .mem = rg->mem + 100, .size = rg->size - 100 };
	unsigned int n = rbt_range_last_boot(test, &off, 5000, 3, 0x5000);
	struct trace_buffer *buffer = rbt_range_boot(test, &off);
	u32 *tags = kunit_kcalloc(test, n, sizeof(*tags), GFP_KERNEL);

	KUNIT_ASSERT_NOT_NULL(test, tags);
	KUNIT_EXPECT_EQ(test, rbt_range_drain(test, buffer, 100, tags, n, NULL), n);
	ring_buffer_free(buffer);
}

/* Fewer than three sub-buffers per CPU: no buffer, and nothing written. */
static void rbt_persistent_too_small(struct kunit *test)
{
	struct rbt_range *rg = rbt_range(test);
	struct trace_buffer *buffer;

	memset(rg->mem, 0xa5, rg->size);
	buffer = ring_buffer_alloc_range(0, RB_FL_OVERWRITE, 0, (unsigned long)rg->mem,
					 nr_cpu_ids * 2 * PAGE_SIZE);
	KUNIT_EXPECT_NULL(test, buffer);
	if (buffer)
		ring_buffer_free(buffer);
	KUNIT_EXPECT_NULL(test, memchr_inv(rg->mem, 0xa5, rg->size));
}

/*
 * The next boot divides the range differently (another CPU count, another
 * size): whatever it keeps is whole and in order, and it records anew.
 */
static void rbt_persistent_regeometry(struct kunit *test)
{
	struct rbt_range *rg = rbt_range(test);
	unsigned int n = rbt_range_last_boot(test, rg, 5000, 3, 0x5000);
	struct rbt_range less = { .mem = rg->mem, .size = rg->size - nr_cpu_ids * PAGE_SIZE };
	struct trace_buffer *buffer = rbt_range_boot(test, &less);
	u32 *tags = kunit_kcalloc(test, n + 1, sizeof(*tags), GFP_KERNEL);

	KUNIT_ASSERT_NOT_NULL(test, tags);
	rbt_range_drain(test, buffer, 100, tags, n, NULL);
	rbt_range_records_again(test, buffer);
}

/*
 * Two reboots, with part of the data read in between: every event unread
 * when the second boot ends comes back in the third, after the first
 * boot's, in order.
 */
static void rbt_persistent_two_reboots(struct kunit *test)
{
	struct rbt_range *rg = rbt_range(test);
	unsigned int i, got, n = rbt_range_last_boot(test, rg, 5000, 3, 0x5000);
	struct trace_buffer *buffer = rbt_range_boot(test, rg);
	u32 *tags = kunit_kcalloc(test, n + 8, sizeof(*tags), GFP_KERNEL);

	KUNIT_ASSERT_NOT_NULL(test, tags);
	for (i = 0; i < n / 2; i++)
		KUNIT_ASSERT_NOT_NULL(test, ring_buffer_consume(buffer, rbt_cpu(test), NULL, NULL));
	for (i = 0; i < 8; i++)
		KUNIT_EXPECT_EQ(test, 0, rbt_write_at(buffer, 90000 + i, 100, 0x9000 + i));
	ring_buffer_free(buffer);

	buffer = rbt_range_boot(test, rg);
	got = rbt_range_drain(test, buffer, 100, tags, n + 8, NULL);
	KUNIT_ASSERT_GE(test, got, n - n / 2 + 8);
	/* The unread ones of the first boot, then the second boot's. */
	for (i = 0; i < n - n / 2; i++)
		KUNIT_EXPECT_EQ(test, tags[got - 8 - (n - n / 2) + i], 0x5000U + n / 2 + i);
	for (i = 0; i < 8; i++)
		KUNIT_EXPECT_EQ(test, tags[got - 8 + i], 0x9000U + i);
	ring_buffer_free(buffer);
}

/*
 * Read everything back: the events tagged @tag or more are exactly @nr,
 * tagged @tag on and timed @t0 on, one apart. Returns how many events
 * with a smaller tag (the earlier boots') came back.
 */
static unsigned int rbt_range_expect_last(struct kunit *test, struct trace_buffer *buffer,
					  unsigned int nr, u32 tag, u64 t0)
{
	struct ring_buffer_event *event;
	unsigned int i = 0, before = 0;
	u64 ts;

	while ((event = ring_buffer_consume(buffer, rbt_cpu(test), &ts, NULL))) {
		if (rbt_tag(ring_buffer_event_data(event)) < tag) {
			before++;
			continue;
		}
		KUNIT_EXPECT_EQ(test, rbt_tag(ring_buffer_event_data(event)), tag + i);
		KUNIT_EXPECT_EQ_MSG(test, ts, t0 + i, "event %u", i);
		i++;
	}
	KUNIT_EXPECT_EQ(test, i, nr);
	return before;
}

/*
 * A real reboot restarts the clock: the new boot's events are earlier than
 * the last boot's ones. They keep their own times, and the next boot finds
 * them after all of the last boot's.
 */
static void rbt_persistent_clock_restarts(struct kunit *test)
{
	struct rbt_range *rg = rbt_range(test);
	unsigned int i, n = rbt_range_last_boot(test, rg, 500000, 3, 0x5000);
	struct trace_buffer *buffer = rbt_range_boot(test, rg);

	/* Small events: room for them is left after the last boot's. */
	for (i = 0; i < 3; i++)
		KUNIT_EXPECT_EQ(test, 0, rbt_write_at(buffer, 100 + i, 8, 0x9000 + i));
	ring_buffer_free(buffer);

	buffer = rbt_range_boot(test, rg);
	KUNIT_EXPECT_EQ(test, rbt_range_expect_last(test, buffer, 3, 0x9000, 100), n);
	ring_buffer_free(buffer);
}

/*
 * The last boot read everything, so the sub-buffer the writer was on is
 * the reader's: this boot's writer starts there and must still go round
 * the ring, losing nothing while there is room.
 */
static void rbt_persistent_reader_held_tail(struct kunit *test)
{
	struct rbt_range *rg = rbt_range(test);
	unsigned int i, n = rbt_range_last_boot(test, rg, 5000, 3, 0x5000);
	struct trace_buffer *buffer = rbt_range_boot(test, rg);

	for (i = 0; i < n; i++)
		KUNIT_ASSERT_NOT_NULL(test, ring_buffer_consume(buffer, rbt_cpu(test), NULL, NULL));
	ring_buffer_free(buffer);

	/* One and a half times the last boot's: well past one sub-buffer. */
	buffer = rbt_range_boot(test, rg);
	for (i = 0; i < n + n / 2; i++)
		KUNIT_ASSERT_EQ(test, 0, rbt_write_at(buffer, 90000 + i, 100, 0x9000 + i));
	rbt_range_expect_last(test, buffer, n + n / 2, 0x9000, 90000);
	ring_buffer_free(buffer);
}

/*
 * A persistent buffer keeps its pages where the next boot finds them: no
 * resize, no order change, and a page read copies rather than giving the
 * reader one of the range's pages.
 */
static void rbt_persistent_pinned(struct kunit *test)
{
	struct rbt_range *rg = rbt_range(test);
	struct trace_buffer *buffer = rbt_range_boot(test, rg);
	unsigned long size = ring_buffer_size(buffer, rbt_cpu(test));
	struct buffer_data_read_page *rpage;
	void *data;
	int i;

	KUNIT_EXPECT_EQ(test, ring_buffer_resize(buffer, 2 * size, RING_BUFFER_ALL_CPUS), -EBUSY);
	KUNIT_EXPECT_EQ(test, ring_buffer_size(buffer, rbt_cpu(test)), size);
	KUNIT_EXPECT_EQ(test, ring_buffer_subbuf_order_set(buffer, 1), -EBUSY);
	KUNIT_EXPECT_EQ(test, ring_buffer_subbuf_order_get(buffer), 0);
	for (i = 0; i < 50; i++)
		KUNIT_ASSERT_EQ(test, 0, rbt_write_at(buffer, 7000 + i, 100, 0x7000 + i));
	KUNIT_ASSERT_EQ(test, 0, ring_buffer_alloc_read_page(buffer, rbt_cpu(test), &rpage));
	KUNIT_EXPECT_GE(test, ring_buffer_read_page(buffer, rpage, PAGE_SIZE, rbt_cpu(test), 1), 0);
	data = ring_buffer_read_page_data(rpage);
	KUNIT_EXPECT_TRUE(test, data < rg->mem || data >= rg->mem + rg->size);
	KUNIT_EXPECT_EQ(test, rbt_tag(((struct rbt_subbuf *)data)->data + (RBT_FORCE_8 ? 8 : 4)),
			0x7000U);
	ring_buffer_free_read_page(buffer, rbt_cpu(test), rpage);
	ring_buffer_free(buffer);
}

/* The ways a last boot's sub-buffer can be torn. */
enum rbt_tear {
	RBT_TEAR_COMMIT_PAST_CAPACITY,	/* commit between capacity and page size */
	RBT_TEAR_MISSED_BITS,		/* loss flags, which the ring never holds */
	RBT_TEAR_EVENT_PAST_COMMIT,	/* the last event runs past commit */
	RBT_TEAR_ZERO_PADDING,		/* a padding that would end the page early */
	RBT_TEAR_TIME_BACKWARDS,	/* an absolute time stamp going back */
	RBT_TEAR_HALF_WRITTEN,		/* commit inside the last event */
};

/* The header word of the event whose payload is at @p. */
static u32 *rbt_event_word(u8 *p)
{
	return (u32 *)p - (RBT_FORCE_8 ? 2 : 1);
}

/*
 * An iterator (`trace`) over a buffer whose last boot lost a torn
 * sub-buffer reports the drop once, at the first event after it (tag
 * @after), as a consuming read reports the loss there.
 */
static void rbt_range_iter_gap(struct kunit *test, struct trace_buffer *buffer, u32 after)
{
	struct ring_buffer_iter *iter = ring_buffer_read_start(buffer, rbt_cpu(test), GFP_KERNEL);
	struct ring_buffer_event *event;
	unsigned int drops = 0;
	u32 tag;

	KUNIT_ASSERT_NOT_NULL(test, iter);
	ring_buffer_iter_reset(iter);	/* as trace.c starts one */
	while ((event = ring_buffer_iter_peek(iter, NULL))) {
		tag = rbt_tag(ring_buffer_event_data(event));
		if (ring_buffer_iter_dropped(iter)) {
			drops++;
			KUNIT_EXPECT_EQ_MSG(test, tag, after,
					    "the iterator reports a drop before tag %#x", tag);
		}
		ring_buffer_iter_advance(iter);
	}
	ring_buffer_read_finish(iter);
	KUNIT_EXPECT_EQ_MSG(test, drops, 1U, "the iterator reports the gap once");
}

/*
 * Tear the middle sub-buffer of the last boot in one way: that sub-buffer
 * alone is dropped, every event of the others comes back whole and in
 * order, the gap is reported where it is (a loss of no known size to a
 * consuming read, a drop to an iterator; "[LOST EVENTS]" in trace_pipe and
 * trace, as 7.2 shows it), and the buffer records again.
 */
static void rbt_persistent_torn_at(struct kunit *test, enum rbt_tear how, bool oldest)
{
	struct rbt_range *rg = rbt_range(test);
	unsigned int i, n, got, on_victim = 0, cap = PAGE_SIZE - RBT_HDR;
	struct trace_buffer *buffer = rbt_range_boot(test, rg);
	bool abs = how == RBT_TEAR_TIME_BACKWARDS || oldest;
	struct rbt_subbuf *victim;
	unsigned long *losses;
	u32 *tags, last = 0;
	u8 *p;

	/* The last boot: three sub-buffers of 100-byte events. */
	ring_buffer_set_time_stamp_abs(buffer, abs);
	n = 3 * (cap / (rbt_event_bytes(100) + (abs ? 8 : 0)));
	for (i = 0; i < n; i++)
		KUNIT_ASSERT_EQ(test, 0, rbt_write_at(buffer, 5000 + i, 100, 0x6000 + i));
	ring_buffer_free(buffer);
	tags = kunit_kcalloc(test, n + 1, sizeof(*tags), GFP_KERNEL);
	losses = kunit_kcalloc(test, n + 1, sizeof(*losses), GFP_KERNEL);
	KUNIT_ASSERT_NOT_NULL(test, tags);
	KUNIT_ASSERT_NOT_NULL(test, losses);

	p = rbt_range_find(rg, 0x6000 + (oldest ? 0 : n / 2), 100);
	KUNIT_ASSERT_NOT_NULL(test, p);
	victim = (struct rbt_subbuf *)PTR_ALIGN_DOWN(p, PAGE_SIZE);
	for (i = 0; i < n; i++) {
		u8 *q = rbt_range_find(rg, 0x6000 + i, 100);

		KUNIT_ASSERT_NOT_NULL(test, q);
		if (PTR_ALIGN_DOWN(q, PAGE_SIZE) == (void *)victim) {
			on_victim++;
			last = i;
		}
	}
	KUNIT_ASSERT_GT(test, on_victim, 2U);
	KUNIT_ASSERT_LT(test, last + 1, n);	/* the victim is not the newest */

	switch (how) {
	case RBT_TEAR_COMMIT_PAST_CAPACITY:
		victim->commit = cap + 8;
		break;
	case RBT_TEAR_MISSED_BITS:
		victim->commit |= RBT_MISSED_EVENTS;
		break;
	case RBT_TEAR_EVENT_PAST_COMMIT:
		p = rbt_range_find(rg, 0x6000 + last, 100);
		if (RBT_FORCE_8)
			rbt_event_word(p)[1] += 64;
		else
			*rbt_event_word(p) = (*rbt_event_word(p) & ~0x1fU) | 28;
		break;
	case RBT_TEAR_ZERO_PADDING:
		*rbt_event_word(p) = RBT_TYPE_PADDING;
		break;
	case RBT_TEAR_TIME_BACKWARDS:
		/* The TIME_STAMP in front of the event: back to time 0. */
		rbt_event_word(p)[-2] = RBT_TYPE_TIME_STAMP;
		rbt_event_word(p)[-1] = 0;
		break;
	case RBT_TEAR_HALF_WRITTEN:
		victim->commit -= rbt_event_bytes(100) / 2;
		break;
	}

	buffer = rbt_range_boot(test, rg);
	/* trace_pipe peeks first; in absolute mode that passes a TIME_STAMP. */
	KUNIT_EXPECT_NOT_NULL(test, ring_buffer_peek(buffer, rbt_cpu(test), NULL, NULL));
	rbt_range_iter_gap(test, buffer, 0x6000 + last + 1);
	got = rbt_range_drain(test, buffer, 100, tags, n, losses);
	KUNIT_EXPECT_EQ_MSG(test, got, n - on_victim, "only the torn sub-buffer may go");
	for (i = 0; i < got; i++) {
		KUNIT_EXPECT_TRUE(test, tags[i] < 0x6000 + last + 1 - on_victim ||
				  tags[i] > 0x6000 + last);
		/* The torn one's events cannot be counted: a loss of no size. */
		if (tags[i] == 0x6000 + last + 1)
			KUNIT_EXPECT_EQ_MSG(test, losses[i], (unsigned long)-1,
					    "the loss before tag %#x", tags[i]);
		else
			KUNIT_EXPECT_EQ_MSG(test, losses[i], 0UL,
					    "a loss before tag %#x", tags[i]);
	}
	rbt_range_records_again(test, buffer);
}

static void rbt_persistent_torn(struct kunit *test, enum rbt_tear how)
{
	rbt_persistent_torn_at(test, how, false);
}

static void rbt_persistent_torn_commit(struct kunit *test)
{
	rbt_persistent_torn(test, RBT_TEAR_COMMIT_PAST_CAPACITY);
}

static void rbt_persistent_torn_missed(struct kunit *test)
{
	rbt_persistent_torn(test, RBT_TEAR_MISSED_BITS);
}

static void rbt_persistent_torn_event(struct kunit *test)
{
	rbt_persistent_torn(test, RBT_TEAR_EVENT_PAST_COMMIT);
}

static void rbt_persistent_torn_padding(struct kunit *test)
{
	rbt_persistent_torn(test, RBT_TEAR_ZERO_PADDING);
}

static void rbt_persistent_torn_time(struct kunit *test)
{
	rbt_persistent_torn(test, RBT_TEAR_TIME_BACKWARDS);
}

static void rbt_persistent_torn_half(struct kunit *test)
{
	rbt_persistent_torn(test, RBT_TEAR_HALF_WRITTEN);
}

/*
 * The oldest sub-buffer torn, in absolute mode: the gap is in front of
 * the first event, which the reader is to report before anything is read
 * (a peek, as trace_pipe's, passes the TIME_STAMP before it and must not
 * hide the gap from an iterator).
 */
static void rbt_persistent_torn_oldest(struct kunit *test)
{
	rbt_persistent_torn_at(test, RBT_TEAR_COMMIT_PAST_CAPACITY, true);
}

static struct kunit_case rbt_persistent_cases[] = {
	KUNIT_CASE(rbt_persistent_reboot),
	KUNIT_CASE(rbt_persistent_continue),
	KUNIT_CASE(rbt_persistent_crash_while_reading),
	KUNIT_CASE(rbt_persistent_bad_event),
	KUNIT_CASE(rbt_persistent_bad_commit),
	KUNIT_CASE(rbt_persistent_garbage),
	KUNIT_CASE(rbt_persistent_relocated),
	KUNIT_CASE(rbt_persistent_unaligned),
	KUNIT_CASE(rbt_persistent_too_small),
	KUNIT_CASE(rbt_persistent_regeometry),
	KUNIT_CASE(rbt_persistent_two_reboots),
	KUNIT_CASE(rbt_persistent_clock_restarts),
	KUNIT_CASE(rbt_persistent_reader_held_tail),
	KUNIT_CASE(rbt_persistent_pinned),
	KUNIT_CASE(rbt_persistent_torn_commit),
	KUNIT_CASE(rbt_persistent_torn_missed),
	KUNIT_CASE(rbt_persistent_torn_event),
	KUNIT_CASE(rbt_persistent_torn_padding),
	KUNIT_CASE(rbt_persistent_torn_time),
	KUNIT_CASE(rbt_persistent_torn_half),
	KUNIT_CASE(rbt_persistent_torn_oldest),
	{}
};

static struct kunit_suite rbt_persistent_suite = {
	.name = "ring_buffer_persistent",
	.init = rbt_init,
	.test_cases = rbt_persistent_cases,
};

/* Out-of-range arguments get an errno and change nothing. */
static void rbt_bad_input(struct kunit *test)
{
	struct trace_buffer *buffer = rbt_alloc(test, RBT_SUBBUFS(4), 0);
	struct trace_buffer *other = rbt_alloc(test, RBT_SUBBUFS(4), 0);
	int cpu = rbt_cpu(test);

	KUNIT_EXPECT_EQ(test, -EINVAL, ring_buffer_subbuf_order_set(buffer, -1));
	KUNIT_EXPECT_EQ(test, -EINVAL, ring_buffer_subbuf_order_set(buffer, 30));
	KUNIT_EXPECT_EQ(test, ring_buffer_subbuf_order_get(buffer), 0);
	KUNIT_EXPECT_EQ(test, -ENODEV, ring_buffer_resize(buffer, RBT_SUBBUFS(8), nr_cpu_ids));
	KUNIT_EXPECT_EQ(test, ring_buffer_size(buffer, cpu), RBT_SUBBUFS(4));
	KUNIT_EXPECT_EQ(test, -EINVAL, ring_buffer_swap_cpu(buffer, other, nr_cpu_ids));
	KUNIT_EXPECT_EQ(test, ring_buffer_size(buffer, nr_cpu_ids), 0UL);
	KUNIT_EXPECT_EQ(test, ring_buffer_entries_cpu(buffer, nr_cpu_ids), 0UL);
}

/* Brings the CPU back whatever the test found. */
static void rbt_cpu_up_action(void *arg)
{
	unsigned int cpu = (uintptr_t)arg;

	if (!cpu_online(cpu))
		WARN(add_cpu(cpu), "ring_buffer_kunit: CPU %u stays offline\n", cpu);
}

/*
 * A CPU that comes online after the buffer was allocated gets a per-CPU
 * buffer of the size the others have (the one asked for, or the one they
 * were resized to), and what is written on it lands there. Needs CPU
 * hotplug and a CPU 1 to take offline: the x86_64 guests have both, UML
 * has neither.
 */
static void rbt_cpu_hotplug(struct kunit *test)
{
	const unsigned int hp = 1;
	struct trace_buffer *asked, *resized;
	unsigned int per, i;
	int home = rbt_cpu(test), err;
	u64 ts;

	if (!IS_ENABLED(CONFIG_HOTPLUG_CPU))
		kunit_skip(test, "needs CONFIG_HOTPLUG_CPU");
	if (!cpu_online(hp))
		kunit_skip(test, "needs CPU %u online (%u possible, %u online)", hp,
			   num_possible_cpus(), num_online_cpus());
	/* Stay off the CPU that goes away. */
	if (home == hp) {
		home = cpumask_any_but(cpu_online_mask, hp);
		KUNIT_ASSERT_LT(test, (unsigned int)home, nr_cpu_ids);
		KUNIT_ASSERT_EQ(test, 0, set_cpus_allowed_ptr(current, cpumask_of(home)));
	}

	err = remove_cpu(hp);
	KUNIT_ASSERT_EQ_MSG(test, err, 0, "remove_cpu(%u)", hp);
	err = kunit_add_action_or_reset(test, rbt_cpu_up_action, (void *)(uintptr_t)hp);
	KUNIT_ASSERT_EQ(test, err, 0);
	KUNIT_ASSERT_FALSE(test, cpu_online(hp));

	asked = rbt_alloc(test, RBT_SUBBUFS(6), 0);
	resized = rbt_alloc(test, RBT_SUBBUFS(6), 0);
	KUNIT_ASSERT_EQ(test, 0, ring_buffer_resize(resized, RBT_SUBBUFS(10),
						    RING_BUFFER_ALL_CPUS));
	KUNIT_ASSERT_EQ(test, ring_buffer_size(resized, home), RBT_SUBBUFS(10));

	err = add_cpu(hp);
	KUNIT_ASSERT_EQ_MSG(test, err, 0, "add_cpu(%u)", hp);
	KUNIT_ASSERT_TRUE(test, cpu_online(hp));
	KUNIT_EXPECT_EQ(test, ring_buffer_size(asked, hp), RBT_SUBBUFS(6));
	KUNIT_EXPECT_EQ(test, ring_buffer_size(asked, home), RBT_SUBBUFS(6));
	KUNIT_EXPECT_EQ(test, ring_buffer_size(resized, hp), RBT_SUBBUFS(10));
	KUNIT_EXPECT_TRUE(test, ring_buffer_empty(asked));
	KUNIT_EXPECT_TRUE(test, ring_buffer_empty(resized));

	/* Written on the new CPU: a few events, then until the buffer is full. */
	KUNIT_ASSERT_EQ(test, 0, set_cpus_allowed_ptr(current, cpumask_of(hp)));
	KUNIT_ASSERT_EQ(test, (unsigned int)raw_smp_processor_id(), hp);
	KUNIT_ASSERT_EQ(test, rbt_fill_buffer(asked, 5, 16, 500), 5U);
	per = rbt_capacity(resized) / rbt_event_bytes(40);
	KUNIT_EXPECT_EQ(test, rbt_fill_buffer(resized, 11 * per, 40, 1000), 10 * per);
	KUNIT_ASSERT_EQ(test, 0, set_cpus_allowed_ptr(current, cpumask_of(home)));

	KUNIT_EXPECT_EQ(test, ring_buffer_entries_cpu(asked, hp), 5UL);
	KUNIT_EXPECT_EQ(test, ring_buffer_entries_cpu(asked, home), 0UL);
	KUNIT_EXPECT_EQ(test, ring_buffer_entries_cpu(resized, hp), 10UL * per);
	KUNIT_EXPECT_EQ(test, ring_buffer_entries_cpu(resized, home), 0UL);
	KUNIT_ASSERT_NOT_NULL(test, ring_buffer_peek(asked, hp, &ts, NULL));
	KUNIT_EXPECT_EQ(test, ts, 500ULL);
	rbt_expect_tags(test, asked, hp, 0, 5);
	KUNIT_EXPECT_NULL(test, ring_buffer_consume(asked, home, NULL, NULL));
	for (i = 0; i < 10 * per; i++) {
		struct ring_buffer_event *event = ring_buffer_consume(resized, hp, &ts, NULL);

		KUNIT_ASSERT_NOT_NULL_MSG(test, event, "event %u", i);
		KUNIT_EXPECT_EQ(test, rbt_tag(ring_buffer_event_data(event)), i);
		KUNIT_EXPECT_EQ(test, ts, 1000ULL + i);
	}
	KUNIT_EXPECT_TRUE(test, ring_buffer_empty(resized));
}

static struct kunit_case rbt_control_cases[] = {
	KUNIT_CASE(rbt_resize),
	KUNIT_CASE(rbt_subbuf_orders),
	KUNIT_CASE(rbt_subbuf_orders_large),
	KUNIT_CASE(rbt_read_page_spare),
	KUNIT_CASE(rbt_swap_cpu),
	KUNIT_CASE(rbt_swap_two_classes),
	KUNIT_CASE(rbt_reset),
	KUNIT_CASE(rbt_record_control),
	KUNIT_CASE(rbt_bad_input),
	KUNIT_CASE(rbt_cpu_hotplug),
	{}
};

static struct kunit_suite rbt_control_suite = {
	.name = "ring_buffer_control",
	.init = rbt_init,
	.test_cases = rbt_control_cases,
};

/* ---- nesting ---- */

/* ring_buffer_nest_start() lets one context write inside its own write. */
static void rbt_nest(struct kunit *test)
{
	struct trace_buffer *buffer = rbt_alloc(test, RBT_SUBBUFS(4), 0);
	int cpu = rbt_cpu(test);
	struct ring_buffer_event *outer, *event;
	u64 ts;

	rbt_set_time(100);
	outer = ring_buffer_lock_reserve(buffer, 32);
	KUNIT_ASSERT_NOT_NULL(test, outer);
	rbt_fill(ring_buffer_event_data(outer), 32, 1);
	ring_buffer_nest_start(buffer);
	KUNIT_EXPECT_EQ(test, 0, rbt_write_at(buffer, 200, 32, 2));
	ring_buffer_nest_end(buffer);
	KUNIT_EXPECT_EQ(test, 0, ring_buffer_unlock_commit(buffer));

	/* Reserved first, so read first; each keeps its own time. */
	event = ring_buffer_consume(buffer, cpu, &ts, NULL);
	KUNIT_ASSERT_NOT_NULL(test, event);
	KUNIT_EXPECT_EQ(test, rbt_tag(ring_buffer_event_data(event)), 1U);
	KUNIT_EXPECT_EQ(test, ts, 100ULL);
	event = ring_buffer_consume(buffer, cpu, &ts, NULL);
	KUNIT_ASSERT_NOT_NULL(test, event);
	KUNIT_EXPECT_EQ(test, rbt_tag(ring_buffer_event_data(event)), 2U);
	KUNIT_EXPECT_EQ(test, ts, 200ULL);
	KUNIT_EXPECT_EQ(test, ring_buffer_entries_cpu(buffer, cpu), 0UL);
}

/*
 * Without nest_start a write inside a write of the same context is
 * recursion, except once: an interrupt that arrives before the context
 * count changes looks like recursion too, and must not lose its event.
 */
static void rbt_recursion(struct kunit *test)
{
	struct trace_buffer *buffer = rbt_alloc(test, RBT_SUBBUFS(4), 0);
	int cpu = rbt_cpu(test);
	struct ring_buffer_event *a, *b, *c;

	a = ring_buffer_lock_reserve(buffer, 8);
	KUNIT_ASSERT_NOT_NULL(test, a);
	b = ring_buffer_lock_reserve(buffer, 8);
	KUNIT_EXPECT_NOT_NULL(test, b);
	c = ring_buffer_lock_reserve(buffer, 8);
	KUNIT_EXPECT_NULL(test, c);
	if (c)
		ring_buffer_unlock_commit(buffer);
	if (b)
		ring_buffer_unlock_commit(buffer);
	ring_buffer_unlock_commit(buffer);
	KUNIT_EXPECT_EQ(test, ring_buffer_entries_cpu(buffer, cpu), b ? 2UL : 1UL);
	/* Everything unwound: a plain write works again. */
	KUNIT_EXPECT_EQ(test, 0, rbt_write(buffer, 8, 9));
}

#define RBT_TAG_TASK	0x00000000u
#define RBT_TAG_HARDIRQ	0x10000000u
#define RBT_TAG_SOFTIRQ	0x20000000u
#define RBT_TAG_SRC	0xf0000000u

struct rbt_irq_writer {
	struct hrtimer		timer;
	struct trace_buffer	*buffer;
	u32			tag;
	unsigned int		written;
	unsigned int		failed;
	bool			stop;
};

static enum hrtimer_restart rbt_irq_write(struct hrtimer *timer)
{
	struct rbt_irq_writer *w = container_of(timer, struct rbt_irq_writer, timer);

	if (rbt_write(w->buffer, 20, w->tag | w->written) == 0)
		w->written++;
	else
		w->failed++;
	if (READ_ONCE(w->stop) || w->written >= 5000)
		return HRTIMER_NORESTART;
	hrtimer_forward_now(timer, ns_to_ktime(100 * NSEC_PER_USEC));
	return HRTIMER_RESTART;
}

static void rbt_irq_start(struct rbt_irq_writer *w, struct trace_buffer *buffer,
			  u32 tag, enum hrtimer_mode mode)
{
	memset(w, 0, sizeof(*w));
	w->buffer = buffer;
	w->tag = tag;
	hrtimer_init(&w->timer, CLOCK_MONOTONIC, mode);
	w->timer.function = rbt_irq_write;
	hrtimer_start(&w->timer, ns_to_ktime(100 * NSEC_PER_USEC), mode);
}

static void rbt_irq_stop(struct rbt_irq_writer *w)
{
	WRITE_ONCE(w->stop, true);
	hrtimer_cancel(&w->timer);
}

/*
 * A task writes in a loop while hard and soft interrupt handlers on the same
 * CPU write into it. Every event reads back once, each source's in its own
 * order, time never goes backwards, and the counters add up exactly.
 */
static void rbt_interrupt_writers(struct kunit *test)
{
	struct trace_buffer *buffer = rbt_alloc(test, RBT_SUBBUFS(1024), 0);
	struct rbt_irq_writer *hard = kunit_kzalloc(test, sizeof(*hard), GFP_KERNEL);
	struct rbt_irq_writer *soft = kunit_kzalloc(test, sizeof(*soft), GFP_KERNEL);
	unsigned int next[3] = {}, task = 0, task_failed = 0, lost = 0;
	int cpu = rbt_cpu(test);
	struct ring_buffer_event *event;
	unsigned long deadline;
	u64 ts, last = 0, spin_until;

	KUNIT_ASSERT_NOT_NULL(test, hard);
	KUNIT_ASSERT_NOT_NULL(test, soft);
	WRITE_ONCE(rbt_step, 1);
	rbt_irq_start(hard, buffer, RBT_TAG_HARDIRQ, HRTIMER_MODE_REL_PINNED_HARD);
	rbt_irq_start(soft, buffer, RBT_TAG_SOFTIRQ, HRTIMER_MODE_REL_PINNED_SOFT);
	deadline = jiffies + msecs_to_jiffies(500);
	/* Bounded so that the buffer never fills and nothing is dropped. */
	while (task < 30000 &&
	       (time_before(jiffies, deadline) || hard->written < 10 || soft->written < 10)) {
		if (rbt_write(buffer, 12 + task % 64, RBT_TAG_TASK | task) == 0)
			task++;
		else
			task_failed++;
		/* Spin, not sleep: timers should find the task writing. */
		spin_until = ktime_get_ns() + 20 * NSEC_PER_USEC;
		while (ktime_get_ns() < spin_until)
			cpu_relax();
	}
	rbt_irq_stop(hard);
	rbt_irq_stop(soft);
	WRITE_ONCE(rbt_step, 0);

	kunit_info(test, "events written (failed): task %u (%u), hardirq %u (%u), softirq %u (%u)\n",
		   task, task_failed, hard->written, hard->failed, soft->written, soft->failed);
	KUNIT_EXPECT_GE(test, hard->written, 10U);
	KUNIT_EXPECT_GE(test, soft->written, 10U);
	KUNIT_EXPECT_EQ(test, ring_buffer_entries_cpu(buffer, cpu),
			(unsigned long)(task + hard->written + soft->written));
	KUNIT_EXPECT_EQ(test, ring_buffer_dropped_events_cpu(buffer, cpu),
			(unsigned long)(task_failed + hard->failed + soft->failed));

	while ((event = ring_buffer_consume(buffer, cpu, &ts, NULL))) {
		u32 tag = rbt_tag(ring_buffer_event_data(event));
		unsigned int src = (tag & RBT_TAG_SRC) >> 28;

		KUNIT_ASSERT_LT(test, src, 3U);
		KUNIT_EXPECT_EQ(test, tag & ~RBT_TAG_SRC, next[src]);
		next[src] = (tag & ~RBT_TAG_SRC) + 1;
		if (ts < last)
			lost++;
		last = ts;
	}
	KUNIT_EXPECT_EQ(test, lost, 0U);
	KUNIT_EXPECT_EQ(test, next[0], task);
	KUNIT_EXPECT_EQ(test, next[1], hard->written);
	KUNIT_EXPECT_EQ(test, next[2], soft->written);
}

static struct kunit_case rbt_nest_cases[] = {
	KUNIT_CASE(rbt_nest),
	KUNIT_CASE(rbt_recursion),
	KUNIT_CASE(rbt_interrupt_writers),
	{}
};

static struct kunit_suite rbt_nest_suite = {
	.name = "ring_buffer_nesting",
	.init = rbt_init,
	.test_cases = rbt_nest_cases,
};

/*
 * Timings for comparing two kernels ("scripts/rbdev bench"). They assert
 * nothing about speed; each figure is printed as "rb-bench: <name> = <value>".
 * By default they run few events, so that every KUnit run times its paths
 * once without taking long even under emulation; the benchmark asks for
 * more. Under QEMU's -icount shift=0 the clock counts instructions, and a
 * figure in ns is one in instructions.
 */
static unsigned long bench_events = 20000;
module_param(bench_events, ulong, 0444);
MODULE_PARM_DESC(bench_events, "events per figure of the ring_buffer_bench suite");

static unsigned long rbt_bench_events(void)
{
	return max(bench_events, 1UL);
}

static void rbt_bench_print(struct kunit *test, const char *name, u64 num, u64 den)
{
	/* Two decimals without floating point. */
	u64 v = den ? div64_u64(num * 100, den) : 0;

	kunit_info(test, "rb-bench: %s = %llu.%02llu\n", name, v / 100, v % 100);
}

static void rbt_bench_write(struct kunit *test)
{
	static const unsigned int sizes[] = { 8, 16, 64, 256 };
	unsigned long n = rbt_bench_events(), done, i;
	unsigned int s, mode;
	char name[64];

	for (mode = 0; mode < 2; mode++) {
		struct trace_buffer *buffer =
			rbt_alloc(test, RBT_SUBBUFS(1024), mode ? RB_FL_OVERWRITE : 0);

		for (s = 0; s < ARRAY_SIZE(sizes); s++) {
			/* Batches that fit, so producer/consumer mode never fails. */
			unsigned long batch =
				RBT_SUBBUFS(1024) / rbt_event_bytes(sizes[s]) * 9 / 10;
			u64 ns = 0, t0;

			for (done = 0; done < n; done += batch) {
				unsigned long todo = min(batch, n - done);

				ring_buffer_reset(buffer);
				t0 = ktime_get_ns();
				for (i = 0; i < todo; i++) {
					struct ring_buffer_event *e =
						ring_buffer_lock_reserve(buffer, sizes[s]);

					if (unlikely(!e))
						break;
					*(u32 *)ring_buffer_event_data(e) = i;
					ring_buffer_unlock_commit(buffer);
				}
				ns += ktime_get_ns() - t0;
				KUNIT_ASSERT_EQ(test, i, todo);
			}
			snprintf(name, sizeof(name), "write.%s.%uB.ns_per_event",
				 mode ? "overwrite" : "consumer", sizes[s]);
			rbt_bench_print(test, name, ns, n);
		}
	}
}

static void rbt_bench_write_api(struct kunit *test)
{
	struct trace_buffer *buffer = rbt_alloc(test, RBT_SUBBUFS(1024), RB_FL_OVERWRITE);
	unsigned long n = rbt_bench_events(), i;
	u8 data[64] = {};
	u64 t0 = ktime_get_ns();

	for (i = 0; i < n; i++)
		ring_buffer_write(buffer, sizeof(data), data);
	rbt_bench_print(test, "write.ring_buffer_write.64B.ns_per_event",
			ktime_get_ns() - t0, n);
}

/* Fill the buffer with 64-byte events; returns how many. */
static unsigned long rbt_bench_fill(struct trace_buffer *buffer)
{
	unsigned long n = min(rbt_bench_events(),
			      RBT_SUBBUFS(1024) / rbt_event_bytes(64) * 9 / 10), i;
	u8 data[64] = {};

	ring_buffer_reset(buffer);
	for (i = 0; i < n; i++)
		ring_buffer_write(buffer, sizeof(data), data);
	return n;
}

static void rbt_bench_read(struct kunit *test)
{
	struct trace_buffer *buffer = rbt_alloc(test, RBT_SUBBUFS(1024), 0);
	int cpu = rbt_cpu(test);
	struct rbt_reader *r = rbt_reader(test, buffer, cpu);
	struct rbt_page *pg = kunit_kzalloc(test, sizeof(*pg), GFP_KERNEL);
	struct ring_buffer_iter *iter;
	unsigned long n, got, bytes;
	u64 t0, ns;

	KUNIT_ASSERT_NOT_NULL(test, pg);

	n = rbt_bench_fill(buffer);
	t0 = ktime_get_ns();
	for (got = 0; ring_buffer_consume(buffer, cpu, NULL, NULL); got++)
		;
	ns = ktime_get_ns() - t0;
	KUNIT_EXPECT_EQ(test, got, n);
	rbt_bench_print(test, "read.consume.kevents_per_sec", (u64)got * NSEC_PER_MSEC, ns);

	n = rbt_bench_fill(buffer);
	t0 = ktime_get_ns();
	iter = ring_buffer_read_start(buffer, cpu, GFP_KERNEL);
	KUNIT_ASSERT_NOT_NULL(test, iter);
	for (got = 0; ring_buffer_iter_peek(iter, NULL); got++)
		ring_buffer_iter_advance(iter);
	ring_buffer_read_finish(iter);
	ns = ktime_get_ns() - t0;
	KUNIT_EXPECT_EQ(test, got, n);
	rbt_bench_print(test, "read.iterator.kevents_per_sec", (u64)got * NSEC_PER_MSEC, ns);

	n = rbt_bench_fill(buffer);
	t0 = ktime_get_ns();
	for (got = 0, bytes = 0; rbt_read_page(test, r, 0, pg) >= 0; bytes += pg->len)
		got += pg->nr;
	ns = ktime_get_ns() - t0;
	KUNIT_EXPECT_EQ(test, got, n);
	rbt_bench_print(test, "read.read_page_parsed.MB_per_sec", (u64)bytes * 1000, ns);
}

static struct kunit_case rbt_bench_cases[] = {
	KUNIT_CASE_SLOW(rbt_bench_write),
	KUNIT_CASE_SLOW(rbt_bench_write_api),
	KUNIT_CASE_SLOW(rbt_bench_read),
	{}
};

static struct kunit_suite rbt_bench_suite = {
	.name = "ring_buffer_bench",
	.init = rbt_init,
	.test_cases = rbt_bench_cases,
};

kunit_test_suites(&rbt_abi_suite, &rbt_time_suite, &rbt_mode_suite, &rbt_read_suite,
		  &rbt_control_suite, &rbt_nest_suite, &rbt_wait_suite,
		  &rbt_persistent_suite, &rbt_bench_suite);

MODULE_DESCRIPTION("KUnit tests for the ring buffer");
MODULE_LICENSE("GPL");
