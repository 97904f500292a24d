// SPDX-License-Identifier: GPL-2.0
/*
 * KUnit suite "ring_buffer_nmi": NMIs as nested writers.
 *
 * A kthread bound to one CPU writes tagged events in a loop, alternating
 * ring_buffer_write() and reserve/commit, while the test thread on another
 * CPU sends that CPU NMIs through the local APIC; the NMI handler writes a
 * tagged event of its own into the same buffer, nesting inside whatever the
 * kthread was doing. The test thread also consumes the buffer, slowly, so
 * the small ring overflows (overwrite mode) or fills (producer/consumer
 * mode). In the end every event must be accounted for exactly: read once,
 * in its source's order, or lost (overrun) or never written (a failed
 * reservation, counted in the dropped or commit-overrun statistics).
 *
 * Every local NMI runs every NMI_LOCAL handler, so the handler claims one
 * only while the test has NMIs in flight to that CPU (ctx->pending). Only
 * one NMI is in flight at a time, so at worst an unrelated NMI arriving
 * just before ours is claimed in its place, and ours is then reported as
 * unknown. The NMI handler is the only writer of the NMI source's counters,
 * which the test reads only after unregister_nmi_handler() has waited for
 * it; likewise the kthread's after kthread_stop().
 *
 * NMIs are sent with the x86 APIC; elsewhere (UML included) the cases skip.
 */

#include <kunit/test.h>
#include <linux/cpumask.h>
#include <linux/delay.h>
#include <linux/kthread.h>
#include <linux/module.h>
#include <linux/ring_buffer.h>
#include <linux/sched.h>
#include <linux/timekeeping.h>

#ifdef CONFIG_X86_LOCAL_APIC
#include <asm/apic.h>
#include <asm/nmi.h>
#endif

#define RBN_NMIS		3000
#define RBN_NMI_TIMEOUT_NS	NSEC_PER_SEC
/* Eight order-0 sub-buffers per CPU: small, so that it overflows. */
#define RBN_BUFFER_SIZE		(8 * PAGE_SIZE)
/* Events the test consumes after each NMI, and after every 256th NMI. */
#define RBN_READ_SLOW		2
#define RBN_READ_DRAIN		4096
#define RBN_MAX_FILL		200
#define RBN_MAX_REPORTS		5

enum { RBN_THREAD, RBN_NMI, RBN_NR_SRC };

struct rbn_item {
	u32	seq;
	u16	src;
	u16	len;		/* bytes of fill[] */
	u8	fill[];
};

struct rbn_source {
	unsigned long	written;
	unsigned long	failed;
};

struct rbn_ctx {
	struct kunit		*test;
	struct trace_buffer	*buffer;
	struct task_struct	*writer;
	int			cpu;
	/* Writers: each source's counters have a single writer. */
	struct rbn_source	src[RBN_NR_SRC];
	atomic_t		pending;	/* NMIs sent, not yet handled */
	bool			in_write;	/* the kthread is inside a write */
	unsigned long		nested;		/* NMIs that found it there */
	/* Reader: the test thread. */
	unsigned long		next[RBN_NR_SRC];
	unsigned long		read;
	unsigned long		lost;
	unsigned int		bad;
};

static struct rbn_ctx *rbn_active;

static unsigned int rbn_len(unsigned int src, u32 seq)
{
	return src == RBN_NMI ? seq % 61 : (seq * 37) % RBN_MAX_FILL;
}

static u8 rbn_byte(unsigned int src, u32 seq, unsigned int i)
{
	return seq * 13 + i + src * 97;
}

static void rbn_fill(struct rbn_item *item, unsigned int src, u32 seq)
{
	unsigned int i;

	item->seq = seq;
	item->src = src;
	item->len = rbn_len(src, seq);
	for (i = 0; i < item->len; i++)
		item->fill[i] = rbn_byte(src, seq, i);
}

/* One event of @src, through ring_buffer_write() on odd sequence numbers. */
static void rbn_write(struct rbn_ctx *ctx, unsigned int src)
{
	struct rbn_source *s = &ctx->src[src];
	u32 seq = s->written;
	unsigned int size = sizeof(struct rbn_item) + rbn_len(src, seq);
	u32 copy[DIV_ROUND_UP(sizeof(struct rbn_item) + RBN_MAX_FILL, 4)];
	struct ring_buffer_event *event;
	int ret = -EBUSY;

	if (seq & 1) {
		rbn_fill((struct rbn_item *)copy, src, seq);
		ret = ring_buffer_write(ctx->buffer, size, copy);
	} else {
		event = ring_buffer_lock_reserve(ctx->buffer, size);
		if (event) {
			rbn_fill(ring_buffer_event_data(event), src, seq);
			ret = ring_buffer_unlock_commit(ctx->buffer);
		}
	}
	if (ret)
		s->failed++;
	else
		s->written++;
}

static int rbn_writer(void *arg)
{
	struct rbn_ctx *ctx = arg;
	unsigned long n;

	for (n = 1; !kthread_should_stop(); n++) {
		WRITE_ONCE(ctx->in_write, true);
		rbn_write(ctx, RBN_THREAD);
		WRITE_ONCE(ctx->in_write, false);
		if (!(n % 64))
			cond_resched();
	}
	return 0;
}

#ifdef CONFIG_X86_LOCAL_APIC
static int rbn_nmi(unsigned int type, struct pt_regs *regs)
{
	struct rbn_ctx *ctx = READ_ONCE(rbn_active);

	if (!ctx || raw_smp_processor_id() != ctx->cpu || atomic_read(&ctx->pending) <= 0)
		return NMI_DONE;
	if (READ_ONCE(ctx->in_write))
		ctx->nested++;
	rbn_write(ctx, RBN_NMI);
	atomic_dec(&ctx->pending);
	return NMI_HANDLED;
}

static const char *rbn_unsupported(void)
{
	return boot_cpu_has(X86_FEATURE_APIC) ? NULL : "no local APIC";
}

static int rbn_nmi_register(void)
{
	return register_nmi_handler(NMI_LOCAL, rbn_nmi, 0, "rb_nmi_kunit");
}

static void rbn_nmi_unregister(void)
{
	unregister_nmi_handler(NMI_LOCAL, "rb_nmi_kunit");
}

static void rbn_send_nmi(int cpu)
{
	__apic_send_IPI_mask(cpumask_of(cpu), NMI_VECTOR);
}
#else
static const char *rbn_unsupported(void)
{
	return "the test sends NMIs through the x86 local APIC";
}

static int rbn_nmi_register(void)
{
	return -EOPNOTSUPP;
}

static void rbn_nmi_unregister(void)
{
}

static void rbn_send_nmi(int cpu)
{
}
#endif

static void rbn_check(struct rbn_ctx *ctx, struct ring_buffer_event *event)
{
	struct rbn_item *item = ring_buffer_event_data(event);
	unsigned int length = ring_buffer_event_length(event);
	const char *what = NULL;
	unsigned int i;

	if (length < sizeof(*item) || item->src >= RBN_NR_SRC)
		what = "bad header";
	else if (item->seq < ctx->next[item->src])
		what = "repeated or out of order";
	else if (item->len != rbn_len(item->src, item->seq) ||
		 length < sizeof(*item) + item->len)
		what = "wrong length";
	for (i = 0; !what && i < item->len; i++) {
		if (item->fill[i] != rbn_byte(item->src, item->seq, i))
			what = "corrupt payload";
	}
	if (!what) {
		ctx->next[item->src] = item->seq + 1UL;
		return;
	}
	if (ctx->bad++ < RBN_MAX_REPORTS)
		KUNIT_FAIL(ctx->test, "event %lu: %s: src %u seq %u len %u, length %u",
			   ctx->read, what, item->src, item->seq, item->len, length);
}

static void rbn_read(struct rbn_ctx *ctx, unsigned long max)
{
	struct ring_buffer_event *event;
	unsigned long lost;

	while (max-- && (event = ring_buffer_consume(ctx->buffer, ctx->cpu, NULL, &lost))) {
		ctx->lost += lost;
		rbn_check(ctx, event);
		ctx->read++;
	}
}

static void rbn_free_buffer(void *buffer)
{
	ring_buffer_free(buffer);
}

static void rbn_unregister(void *ctx)
{
	rbn_nmi_unregister();
	WRITE_ONCE(rbn_active, NULL);
}

static void rbn_stop_writer(void *arg)
{
	struct rbn_ctx *ctx = arg;

	kthread_stop(ctx->writer);
}

/* Sets up @ctx with the writer running on another CPU than the test. */
static void rbn_start(struct kunit *test, struct rbn_ctx *ctx, unsigned int flags)
{
	const char *why = rbn_unsupported();
	int home, ret;

	if (why)
		kunit_skip(test, "%s", why);
	if (num_online_cpus() < 2)
		kunit_skip(test, "needs two online CPUs");
	home = cpumask_first(cpu_online_mask);
	ctx->cpu = cpumask_next(home, cpu_online_mask);
	/* The test thread dies with the case, and its affinity with it. */
	KUNIT_ASSERT_EQ(test, 0, set_cpus_allowed_ptr(current, cpumask_of(home)));

	ctx->test = test;
	ctx->buffer = ring_buffer_alloc(RBN_BUFFER_SIZE, flags);
	KUNIT_ASSERT_NOT_NULL(test, ctx->buffer);
	KUNIT_ASSERT_EQ(test, 0, kunit_add_action_or_reset(test, rbn_free_buffer, ctx->buffer));

	KUNIT_ASSERT_NULL(test, rbn_active);
	WRITE_ONCE(rbn_active, ctx);
	ret = rbn_nmi_register();
	if (ret)
		WRITE_ONCE(rbn_active, NULL);
	KUNIT_ASSERT_EQ(test, 0, ret);
	KUNIT_ASSERT_EQ(test, 0, kunit_add_action_or_reset(test, rbn_unregister, ctx));

	ctx->writer = kthread_run_on_cpu(rbn_writer, ctx, ctx->cpu, "rb_nmi_writer/%u");
	KUNIT_ASSERT_FALSE(test, IS_ERR(ctx->writer));
	KUNIT_ASSERT_EQ(test, 0, kunit_add_action_or_reset(test, rbn_stop_writer, ctx));
}

/* Sends the NMIs one at a time, reading a little while each is in flight. */
static void rbn_hammer(struct kunit *test, struct rbn_ctx *ctx)
{
	unsigned long sent;
	u64 deadline;

	for (sent = 0; sent < RBN_NMIS; sent++) {
		atomic_inc(&ctx->pending);
		rbn_send_nmi(ctx->cpu);
		deadline = ktime_get_ns() + RBN_NMI_TIMEOUT_NS;
		/* Sleep rather than spin: an emulator may share one host thread. */
		while (atomic_read(&ctx->pending)) {
			if (ktime_get_ns() > deadline) {
				KUNIT_FAIL(test, "NMI %lu not handled within a second", sent);
				return;
			}
			usleep_range(10, 50);
		}
		rbn_read(ctx, sent % 256 ? RBN_READ_SLOW : RBN_READ_DRAIN);
	}
}

static void rbn_run(struct kunit *test, unsigned int flags)
{
	struct rbn_ctx *ctx = kunit_kzalloc(test, sizeof(*ctx), GFP_KERNEL);
	struct rbn_source *thr, *nmi;
	unsigned long written, failed, dropped, overrun;

	KUNIT_ASSERT_NOT_NULL(test, ctx);
	rbn_start(test, ctx, flags);
	rbn_hammer(test, ctx);
	kunit_release_action(test, rbn_stop_writer, ctx);
	kunit_release_action(test, rbn_unregister, ctx);
	rbn_read(ctx, ULONG_MAX);

	thr = &ctx->src[RBN_THREAD];
	nmi = &ctx->src[RBN_NMI];
	written = thr->written + nmi->written;
	failed = thr->failed + nmi->failed;
	overrun = ring_buffer_overrun_cpu(ctx->buffer, ctx->cpu);
	dropped = ring_buffer_dropped_events_cpu(ctx->buffer, ctx->cpu) +
		  ring_buffer_commit_overrun_cpu(ctx->buffer, ctx->cpu);
	kunit_info(test, "thread: %lu written, %lu failed; NMI: %lu written, %lu failed, %lu inside a thread write\n",
		   thr->written, thr->failed, nmi->written, nmi->failed, ctx->nested);
	kunit_info(test, "read %lu, lost %lu, overrun %lu, dropped %lu\n",
		   ctx->read, ctx->lost, overrun, dropped);

	KUNIT_EXPECT_EQ(test, ctx->bad, 0U);
	KUNIT_EXPECT_EQ(test, nmi->written + nmi->failed, (unsigned long)RBN_NMIS);
	KUNIT_EXPECT_LE(test, ctx->next[RBN_THREAD], thr->written);
	KUNIT_EXPECT_LE(test, ctx->next[RBN_NMI], nmi->written);
	KUNIT_EXPECT_EQ(test, ctx->read + ctx->lost, written);
	KUNIT_EXPECT_EQ(test, ctx->lost, overrun);
	KUNIT_EXPECT_EQ(test, failed, dropped);
	KUNIT_EXPECT_EQ(test, ring_buffer_entries_cpu(ctx->buffer, ctx->cpu), 0UL);
	if (!(flags & RB_FL_OVERWRITE))
		KUNIT_EXPECT_EQ(test, overrun, 0UL);
}

static void rbn_overwrite(struct kunit *test)
{
	rbn_run(test, RB_FL_OVERWRITE);
}

static void rbn_producer_consumer(struct kunit *test)
{
	rbn_run(test, 0);
}

static struct kunit_case rbn_cases[] = {
	KUNIT_CASE_SLOW(rbn_overwrite),
	KUNIT_CASE_SLOW(rbn_producer_consumer),
	{}
};

static struct kunit_suite rbn_suite = {
	.name = "ring_buffer_nmi",
	.test_cases = rbn_cases,
};

kunit_test_suite(rbn_suite);

MODULE_DESCRIPTION("KUnit tests of NMI writers in the ring buffer");
MODULE_LICENSE("GPL");
