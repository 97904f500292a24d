// SPDX-License-Identifier: GPL-2.0
/*
 * Startup self test of the ring buffer (CONFIG_RING_BUFFER_STARTUP_TEST).
 *
 * Late in boot, one writer thread per online CPU writes events of varying
 * size into a private overwrite-mode buffer for RB_TEST_SECONDS. Interrupts
 * write too: a hammer thread sends IPIs to every CPU, and each writer queues
 * a hard irq_work while it holds a reservation, so that one lands inside an
 * open event. A reader thread consumes concurrently but naps between passes,
 * so the small ring overflows. After the writers stop, the rest is drained
 * and every CPU must add up exactly:
 *
 *  - each event carries its source (thread or interrupt) and that source's
 *    sequence number; per source, the numbers read strictly increase and
 *    stay below the number of events that source committed;
 *  - events read + events reported lost by ring_buffer_consume() == events
 *    committed, and lost == ring_buffer_overrun_cpu();
 *  - failed reservations == dropped events + commit overruns;
 *  - every payload byte is the one its writer put there.
 *
 * Each source's counters have one writer: the thread, or the interrupt
 * handlers of that CPU, which are all hard irq (or run with irqs off) and so
 * never nest in each other. The reader's counters are its own until
 * kthread_stop(), which orders them before the report.
 */

#define pr_fmt(fmt) "ring buffer selftest: " fmt

#include <linux/cpumask.h>
#include <linux/delay.h>
#include <linux/init.h>
#include <linux/irq_work.h>
#include <linux/kthread.h>
#include <linux/printk.h>
#include <linux/ring_buffer.h>
#include <linux/security.h>
#include <linux/slab.h>
#include <linux/smp.h>

#define RB_TEST_SECONDS		10
/* Per CPU; small enough that the napping reader loses events. */
#define RB_TEST_BUFFER_SIZE	(64 * 1024)
#define RB_TEST_READER_NAP_MS	200
#define RB_TEST_READ_BATCH	10000
/* Thread events per in-reservation irq_work. */
#define RB_TEST_NEST_EVERY	16
#define RB_TEST_MAX_REPORTS	5

enum { RB_SRC_THREAD, RB_SRC_IRQ, RB_NR_SRC };

struct rb_test_item {
	u32	seq;
	u16	src;
	u16	len;		/* bytes of pattern[] */
	u8	pattern[];
};

#define RB_TEST_MAX_SIZE	(sizeof(struct rb_test_item) + 1024)

struct rb_test_src {
	unsigned long	committed;
	unsigned long	failed;
};

struct rb_test_cpu {
	/* Writer side. */
	struct rb_test_src	src[RB_NR_SRC];
	struct irq_work		irq_work;
	struct task_struct	*thread;
	void			*scratch;
	int			cpu;
	/* Reader side. */
	unsigned long		next[RB_NR_SRC];
	unsigned long		read;
	unsigned long		lost;
	unsigned int		errors;
};

static struct trace_buffer *rb_test_buffer __initdata;
static struct rb_test_cpu *rb_test_cpus __initdata;
static struct cpumask rb_test_mask __initdata;
static struct task_struct *rb_test_hammer __initdata;
static struct task_struct *rb_test_reader __initdata;

/* Mostly small events, one in 32 large enough to need the long header. */
static unsigned int __init rb_test_len(unsigned int src, u32 seq)
{
	u32 h = (seq + 1) * 2654435761u ^ src * 0x9e3779b9u;

	return (h >> 8) % 32 ? h % 100 : h % 1024;
}

static u8 __init rb_test_byte(unsigned int src, u32 seq, unsigned int i)
{
	return seq * 31 + i + src * 101;
}

static unsigned int __init rb_test_fill(struct rb_test_item *item,
					unsigned int src, u32 seq)
{
	unsigned int i, len = rb_test_len(src, seq);

	item->seq = seq;
	item->src = src;
	item->len = len;
	for (i = 0; i < len; i++)
		item->pattern[i] = rb_test_byte(src, seq, i);
	return sizeof(*item) + len;
}

static void __init rb_test_write(struct rb_test_cpu *tc, unsigned int src, bool nest)
{
	struct rb_test_src *s = &tc->src[src];
	u32 seq = s->committed;
	struct ring_buffer_event *event;

	event = ring_buffer_lock_reserve(rb_test_buffer,
					 sizeof(struct rb_test_item) + rb_test_len(src, seq));
	if (!event) {
		s->failed++;
		return;
	}
	/* Irqs are on: the self-IPI arrives while this event is open. */
	if (nest)
		irq_work_queue(&tc->irq_work);
	rb_test_fill(ring_buffer_event_data(event), src, seq);
	ring_buffer_unlock_commit(rb_test_buffer);
	s->committed++;
}

static void __init rb_test_write_copy(struct rb_test_cpu *tc)
{
	struct rb_test_src *s = &tc->src[RB_SRC_THREAD];
	unsigned int size = rb_test_fill(tc->scratch, RB_SRC_THREAD, s->committed);

	if (ring_buffer_write(rb_test_buffer, size, tc->scratch))
		s->failed++;
	else
		s->committed++;
}

static void __init rb_test_irq_work(struct irq_work *work)
{
	rb_test_write(container_of(work, struct rb_test_cpu, irq_work), RB_SRC_IRQ, false);
}

static void __init rb_test_ipi(void *unused)
{
	rb_test_write(&rb_test_cpus[smp_processor_id()], RB_SRC_IRQ, false);
}

static int __init rb_test_writer(void *arg)
{
	struct rb_test_cpu *tc = arg;
	unsigned long n;

	for (n = 0; !kthread_should_stop(); n++) {
		if (n % 4 == 3)
			rb_test_write_copy(tc);
		else
			rb_test_write(tc, RB_SRC_THREAD, n % RB_TEST_NEST_EVERY == 0);
		/* Bursts of eight, so that the ring fills between reads. */
		if (n % 8 == 7)
			usleep_range(100 + (n / 8 % 3) * 100, 1000);
	}
	return 0;
}

static int __init rb_test_hammer_fn(void *unused)
{
	while (!kthread_should_stop()) {
		on_each_cpu_mask(&rb_test_mask, rb_test_ipi, NULL, true);
		usleep_range(20, 100);
	}
	return 0;
}

static void __init rb_test_bad(struct rb_test_cpu *tc, const char *what,
			       struct rb_test_item *item, unsigned int length)
{
	if (tc->errors++ >= RB_TEST_MAX_REPORTS)
		return;
	pr_err("Ring buffer FAILED: cpu %d: %s in event %lu (length %u)\n",
	       tc->cpu, what, tc->read, length);
	print_hex_dump(KERN_ERR, "event: ", DUMP_PREFIX_OFFSET, 16, 1, item,
		       min(length, 64U), false);
}

static void __init rb_test_check(struct rb_test_cpu *tc, struct ring_buffer_event *event)
{
	struct rb_test_item *item = ring_buffer_event_data(event);
	unsigned int length = ring_buffer_event_length(event);
	unsigned int i;

	if (length < sizeof(*item) || item->src >= RB_NR_SRC)
		return rb_test_bad(tc, "bad header", item, length);
	if (item->seq < tc->next[item->src])
		return rb_test_bad(tc, "repeated or out of order", item, length);
	if (item->len != rb_test_len(item->src, item->seq) ||
	    length < sizeof(*item) + item->len)
		return rb_test_bad(tc, "wrong length", item, length);
	for (i = 0; i < item->len; i++) {
		if (item->pattern[i] != rb_test_byte(item->src, item->seq, i))
			return rb_test_bad(tc, "corrupt payload", item, length);
	}
	tc->next[item->src] = item->seq + 1UL;
}

static void __init rb_test_drain(struct rb_test_cpu *tc, unsigned long max)
{
	struct ring_buffer_event *event;
	unsigned long lost;

	while (max-- &&
	       (event = ring_buffer_consume(rb_test_buffer, tc->cpu, NULL, &lost))) {
		tc->lost += lost;
		rb_test_check(tc, event);
		tc->read++;
		cond_resched();
	}
}

static int __init rb_test_reader_fn(void *unused)
{
	int cpu;

	while (!kthread_should_stop()) {
		/* Bounded, so that one busy CPU does not starve the others. */
		for_each_cpu(cpu, &rb_test_mask)
			rb_test_drain(&rb_test_cpus[cpu], RB_TEST_READ_BATCH);
		schedule_timeout_interruptible(msecs_to_jiffies(RB_TEST_READER_NAP_MS));
	}
	return 0;
}

/* Everything that writes has stopped when this returns. */
static void __init rb_test_stop(void)
{
	int cpu;

	if (!IS_ERR_OR_NULL(rb_test_hammer))
		kthread_stop(rb_test_hammer);
	for_each_cpu(cpu, &rb_test_mask) {
		struct rb_test_cpu *tc = &rb_test_cpus[cpu];

		if (!IS_ERR_OR_NULL(tc->thread))
			kthread_stop(tc->thread);
		irq_work_sync(&tc->irq_work);
		kfree(tc->scratch);
	}
	/* Order the interrupt handlers' counters before the report. */
	smp_mb();
	if (!IS_ERR_OR_NULL(rb_test_reader))
		kthread_stop(rb_test_reader);
}

static bool __init rb_test_report(struct rb_test_cpu *tc)
{
	struct rb_test_src *thr = &tc->src[RB_SRC_THREAD], *irq = &tc->src[RB_SRC_IRQ];
	unsigned long committed = thr->committed + irq->committed;
	unsigned long failed = thr->failed + irq->failed;
	unsigned long overrun = ring_buffer_overrun_cpu(rb_test_buffer, tc->cpu);
	unsigned long dropped = ring_buffer_dropped_events_cpu(rb_test_buffer, tc->cpu) +
				ring_buffer_commit_overrun_cpu(rb_test_buffer, tc->cpu);
	unsigned long left = ring_buffer_entries_cpu(rb_test_buffer, tc->cpu);

	pr_info("cpu %d: committed %lu (thread %lu, irq %lu), read %lu, lost %lu, overrun %lu, failed %lu, dropped %lu\n",
		tc->cpu, committed, thr->committed, irq->committed, tc->read,
		tc->lost, overrun, failed, dropped);
	if (tc->errors || tc->next[RB_SRC_THREAD] > thr->committed ||
	    tc->next[RB_SRC_IRQ] > irq->committed || tc->read + tc->lost != committed ||
	    tc->lost != overrun || failed != dropped || left) {
		pr_err("Ring buffer FAILED: cpu %d: %u bad events, next sequence %lu/%lu, %lu left; want read + lost == committed, lost == overrun, failed == dropped\n",
		       tc->cpu, tc->errors, tc->next[RB_SRC_THREAD], tc->next[RB_SRC_IRQ], left);
		return false;
	}
	return true;
}

static int __init rb_test_start(void)
{
	int cpu;

	for_each_cpu(cpu, &rb_test_mask) {
		rb_test_cpus[cpu].cpu = cpu;
		rb_test_cpus[cpu].irq_work = IRQ_WORK_INIT_HARD(rb_test_irq_work);
	}
	for_each_cpu(cpu, &rb_test_mask) {
		struct rb_test_cpu *tc = &rb_test_cpus[cpu];

		tc->scratch = kmalloc(RB_TEST_MAX_SIZE, GFP_KERNEL);
		if (!tc->scratch)
			return -ENOMEM;
		tc->thread = kthread_create_on_cpu(rb_test_writer, tc, cpu, "rbtester/%u");
		if (IS_ERR(tc->thread))
			return PTR_ERR(tc->thread);
	}
	rb_test_reader = kthread_create(rb_test_reader_fn, NULL, "rbreader");
	if (IS_ERR(rb_test_reader))
		return PTR_ERR(rb_test_reader);
	rb_test_hammer = kthread_create(rb_test_hammer_fn, NULL, "rbhammer");
	if (IS_ERR(rb_test_hammer))
		return PTR_ERR(rb_test_hammer);

	/* All created before any runs: no write can fail for a missing peer. */
	for_each_cpu(cpu, &rb_test_mask)
		wake_up_process(rb_test_cpus[cpu].thread);
	wake_up_process(rb_test_reader);
	wake_up_process(rb_test_hammer);
	return 0;
}

static int __init rb_selftest(void)
{
	bool ok = true;
	int cpu, ret;

	if (security_locked_down(LOCKDOWN_TRACEFS)) {
		pr_warn("lockdown is enabled, skipping the ring buffer test\n");
		return 0;
	}
	pr_info("running for %d seconds ...\n", RB_TEST_SECONDS);

	cpumask_copy(&rb_test_mask, cpu_online_mask);
	rb_test_cpus = kcalloc(nr_cpu_ids, sizeof(*rb_test_cpus), GFP_KERNEL);
	rb_test_buffer = ring_buffer_alloc(RB_TEST_BUFFER_SIZE, RB_FL_OVERWRITE);
	if (!rb_test_cpus || !rb_test_buffer) {
		pr_err("Ring buffer FAILED: out of memory\n");
		goto out;
	}

	ret = rb_test_start();
	if (!ret)
		msleep(RB_TEST_SECONDS * MSEC_PER_SEC);
	rb_test_stop();
	if (ret) {
		pr_err("Ring buffer FAILED: cannot start the test threads (%d)\n", ret);
		goto out;
	}

	for_each_cpu(cpu, &rb_test_mask) {
		rb_test_drain(&rb_test_cpus[cpu], ULONG_MAX);
		ok &= rb_test_report(&rb_test_cpus[cpu]);
	}
	if (ok)
		pr_info("Ring buffer PASSED!\n");
	else
		pr_err("Ring buffer FAILED!\n");
out:
	if (rb_test_buffer)
		ring_buffer_free(rb_test_buffer);
	kfree(rb_test_cpus);
	return 0;
}

late_initcall(rb_selftest);
