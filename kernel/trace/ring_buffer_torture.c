// SPDX-License-Identifier: GPL-2.0
/*
 * Ring buffer torture: writers in every context, every kind of reader and
 * every control operation at once, with exact accounting.
 *
 * Built in with CONFIG_RING_BUFFER_TORTURE_TEST and idle until started, at
 * boot with ring_buffer_torture.seconds=N or later by writing N to
 * /sys/module/ring_buffer_torture/parameters/seconds. It uses the ring
 * buffer's exported API only, so it runs on any ring buffer implementation.
 * It prints "rb-torture: status ..." every stat_interval seconds, then one
 * "rb-torture: verdict <check> PASS|FAIL" line per check (accounting,
 * time-order, coverage) and "rb-torture: end PASS|FAIL ...".
 *
 * Writers. Each CPU has five streams of events: a kthread (task context,
 * alternating reserve/commit and ring_buffer_write()), a soft and a hard
 * hrtimer, an NMI (x86: a self-NMI the task sends while it holds a
 * reservation and the hard timer sends at random) and nested writes the
 * task makes inside its own reservation with ring_buffer_nest_start().
 * A stream writes on one CPU only and never nests in itself, so its
 * counters are plain; an event carries its (cpu, stream, seq, len), and
 * its payload bytes follow from those. Sizes are random up to the largest
 * the buffer takes; some reservations are discarded.
 *
 * Readers. Per CPU one consuming reader at a time, taking turns by phase:
 * ring_buffer_consume(), ring_buffer_read_page() into a partial copy or a
 * swapped sub-buffer (full = 0), and read_page of full sub-buffers only
 * (full = 1). One more thread walks every CPU with iterators. Consuming
 * readers and the control thread's drains hold that CPU's rbx_cpu.lock,
 * so the events of one stream reach one reader in order.
 *
 * Control, while all of that runs: resize one CPU and all, snapshot swap of
 * one CPU and of all (with a spare buffer of the same geometry, drained at
 * once), record off/on, per-CPU record disable, overwrite on/off, absolute
 * time stamps on/off, CPU hotplug off/on. At the end of every phase the
 * writers pause, every CPU is drained, and for each CPU
 *
 *	written = read + overrun + retired
 *
 * must hold exactly, where written counts committed events, read those the
 * readers saw, overrun ring_buffer_overrun_cpu() since the last check and
 * retired the overrun of CPU buffers that a swap took away. Then, with the
 * writers still paused, a reset of one CPU or all or a sub-buffer order
 * change, and the next phase.
 *
 * Every event read is checked: its payload, its CPU, its stream's sequence
 * strictly increasing (nothing read twice, order kept) and, for consuming
 * readers, its time stamp not below the one read before it on that CPU
 * (counted apart: 6.12.117 breaks it in absolute mode). At the end, every
 * operation, NMIs and nested writes must have happened at least once.
 */

#define pr_fmt(fmt) "rb-torture: " fmt

#include <linux/cpu.h>
#include <linux/delay.h>
#include <linux/hrtimer.h>
#include <linux/init.h>
#include <linux/kthread.h>
#include <linux/module.h>
#include <linux/mutex.h>
#include <linux/prandom.h>
#include <linux/ring_buffer.h>
#include <linux/sched.h>
#include <linux/slab.h>

#ifdef CONFIG_X86_LOCAL_APIC
#include <asm/apic.h>
#include <asm/nmi.h>
#endif

static unsigned int seconds;
static unsigned int phase_ms = 3000;
module_param(phase_ms, uint, 0644);
MODULE_PARM_DESC(phase_ms, "length of a phase between two accounting checks");
static unsigned int stat_interval = 10;
module_param(stat_interval, uint, 0644);
MODULE_PARM_DESC(stat_interval, "seconds between status lines");
static bool hotplug = true;
module_param(hotplug, bool, 0644);
MODULE_PARM_DESC(hotplug, "take CPUs other than 0 offline and back");
static unsigned int park_cpus;
module_param(park_cpus, uint, 0644);
MODULE_PARM_DESC(park_cpus, "take this many CPUs offline once their rings exist; they stay offline");
static bool abs_ts = true;
module_param(abs_ts, bool, 0644);
MODULE_PARM_DESC(abs_ts, "switch absolute time stamps on and off");
static bool kcsan_canary;
module_param(kcsan_canary, bool, 0444);
MODULE_PARM_DESC(kcsan_canary, "first race two threads on purpose, for KCSAN to report");
static unsigned int timer_us = 200;
module_param(timer_us, uint, 0644);
MODULE_PARM_DESC(timer_us, "period of the soft and hard timer writers");

enum { RBX_TASK, RBX_SOFT, RBX_HARD, RBX_NMI, RBX_NEST, RBX_NR_STREAMS };
static const char * const rbx_stream_name[] = { "task", "softirq", "hardirq", "nmi", "nest" };

enum { RBX_CONSUME, RBX_PAGE, RBX_PAGE_FULL, RBX_NR_READERS };
static const char * const rbx_reader_name[] = { "consume", "read_page", "read_page_full" };

static unsigned int size_kb = 128;
module_param(size_kb, uint, 0644);
MODULE_PARM_DESC(size_kb, "largest per-CPU size a resize asks for; also 1/2, 1/4, 1/8 of it");

/* The @i-th of the four per-CPU sizes a resize picks from. */
static unsigned long rbx_size(unsigned int i)
{
	return ((unsigned long)max(size_kb, 16U) << 10) >> (3 - i % 4);
}

#define RBX_MAX_ERRORS	10

struct rbx_event {
	u32	seq;
	u8	cpu;
	u8	stream;
	u16	len;		/* payload bytes, this header included */
	u8	fill[];
};

struct rbx_stream {
	/* the writer's, read by control only while the writers are paused */
	u32		next;		/* seq of the next event */
	u64		written;	/* committed */
	u64		failed;		/* reservation refused */
	u64		discarded;
	u32		rnd;
	/* the readers', under rbx_cpu.lock */
	s64		last;		/* seq read last, -1 for none */
	u64		read;
};

struct rbx_cpu {
	int			cpu;
	struct rbx_stream	st[RBX_NR_STREAMS];
	struct mutex		lock;		/* the one consuming reader */
	u64			last_ts;	/* under lock */
	u64			overrun_base;	/* under lock */
	u64			retired;	/* under lock */
	struct buffer_data_read_page *rpage;	/* under lock */
	struct hrtimer		soft;
	struct hrtimer		hard;
	atomic_t		nmi_pending;
	struct task_struct	*writer;
	u8			*copy;		/* the task's ring_buffer_write() */
	struct mutex		iter_lock;	/* the iterator, against a swap */
};

static struct trace_buffer *rbx_buffer, *rbx_spare;
static struct rbx_cpu *rbx_cpus;
static int rbx_nr_cpus;
static unsigned int rbx_phase;
static bool rbx_stop;
static bool rbx_paused;
static atomic_t rbx_inflight;
static atomic_t rbx_errors;
static atomic_t rbx_ts_errors;
/* Readers hold it for reading over each pass; the quiet operations for writing. */
static DECLARE_RWSEM(rbx_quiet);
static bool rbx_have_nmi;
static struct task_struct *rbx_main;
static DEFINE_MUTEX(rbx_start_lock);

static struct {
	unsigned int ok, fail;
} rbx_ops[12];
static const char * const rbx_op_name[] = {
	"resize_cpu", "resize_all", "swap_cpu", "swap_all", "record_off",
	"record_disable_cpu", "overwrite", "abs_ts", "hotplug", "reset_cpu",
	"reset_all", "order",
};

enum {
	OP_RESIZE_CPU, OP_RESIZE_ALL, OP_SWAP_CPU, OP_SWAP_ALL, OP_RECORD_OFF,
	OP_DISABLE_CPU, OP_OVERWRITE, OP_ABS, OP_HOTPLUG, OP_RESET_CPU,
	OP_RESET_ALL, OP_ORDER, OP_NR
};

#define rbx_error(fmt, ...) do {					\
	if (atomic_inc_return(&rbx_errors) <= RBX_MAX_ERRORS)		\
		pr_err("error: " fmt "\n", ##__VA_ARGS__);		\
} while (0)

#define rbx_ts_error(fmt, ...) do {					\
	if (atomic_inc_return(&rbx_ts_errors) <= RBX_MAX_ERRORS)	\
		pr_err("time error: " fmt "\n", ##__VA_ARGS__);	\
} while (0)

/* The largest sub-buffer order the torture switches to; the copy buffer fits it. */
#define RBX_MAX_ORDER	2

static u32 rbx_rand(u32 *state)
{
	u32 x = *state ?: 0x9e3779b9;

	x ^= x << 13;
	x ^= x >> 17;
	x ^= x << 5;
	*state = x;
	return x;
}

static u8 rbx_byte(const struct rbx_event *ev, unsigned int i)
{
	return (u8)(ev->seq * 31 + i * 7 + ev->stream * 13 + ev->cpu);
}

/* A payload size: mostly small, now and then up to the largest allowed. */
static unsigned int rbx_len(u32 r)
{
	unsigned long max = ring_buffer_max_event_size(rbx_buffer);

	if (!(r & 63) && max > sizeof(struct rbx_event))
		return sizeof(struct rbx_event) + (r >> 6) % (max - sizeof(struct rbx_event) + 1);
	return sizeof(struct rbx_event) + (r >> 6) % 120;
}

static void rbx_fill(struct rbx_event *ev, int cpu, int stream, u32 seq, unsigned int len)
{
	unsigned int i;

	ev->seq = seq;
	ev->cpu = cpu;
	ev->stream = stream;
	ev->len = len;
	for (i = 0; i < len - sizeof(*ev); i++)
		ev->fill[i] = rbx_byte(ev, i);
}

#ifdef CONFIG_X86_LOCAL_APIC
static void rbx_send_nmi(struct rbx_cpu *c)
{
	if (!rbx_have_nmi)
		return;
	atomic_inc(&c->nmi_pending);
	/* Not the self-IPI shorthand: with x2APIC that cannot carry an NMI. */
	__apic_send_IPI_mask(cpumask_of(smp_processor_id()), NMI_VECTOR);
}
#else
static void rbx_send_nmi(struct rbx_cpu *c)
{
}
#endif

/*
 * One event of @stream through reserve/commit. The task stream also sends
 * an NMI and writes a nested event while it holds its reservation.
 */
static void rbx_reserve(struct rbx_cpu *c, int stream)
{
	struct rbx_stream *st = &c->st[stream];
	struct ring_buffer_event *event;
	unsigned int len = rbx_len(rbx_rand(&st->rnd));
	u32 r = rbx_rand(&st->rnd);	/* independent of the size */
	struct rbx_event *ev;

	event = ring_buffer_lock_reserve(rbx_buffer, len);
	if (!event) {
		st->failed++;
		return;
	}
	/* Preemption is off now; a migrated writer (hotplug) writes nothing. */
	if (smp_processor_id() != c->cpu) {
		ring_buffer_discard_commit(rbx_buffer, event);
		return;
	}
	ev = ring_buffer_event_data(event);
	rbx_fill(ev, c->cpu, stream, st->next++, len);
	/* Three decisions from three bit fields: every combination happens. */
	if (stream == RBX_TASK) {
		if (!(r & 7))
			rbx_send_nmi(c);
		if (!(r & (15 << 3))) {
			ring_buffer_nest_start(rbx_buffer);
			rbx_reserve(c, RBX_NEST);
			ring_buffer_nest_end(rbx_buffer);
		}
	}
	if (!(r & (31 << 7))) {
		ring_buffer_discard_commit(rbx_buffer, event);
		st->discarded++;
		return;
	}
	ring_buffer_unlock_commit(rbx_buffer);
	st->written++;
}

/* One event of @stream through ring_buffer_write(); preemption is off. */
static void rbx_write_copy(struct rbx_cpu *c, int stream)
{
	struct rbx_stream *st = &c->st[stream];
	unsigned int len = rbx_len(rbx_rand(&st->rnd));
	struct rbx_event *ev = (void *)c->copy;

	rbx_fill(ev, c->cpu, stream, st->next, len);
	if (ring_buffer_write(rbx_buffer, len, ev)) {
		st->failed++;
	} else {
		st->next++;
		st->written++;
	}
}

/* Pause protocol: see rbx_quiesce(). */
static bool rbx_enter(void)
{
	atomic_inc(&rbx_inflight);
	smp_mb__after_atomic();		/* pairs with smp_mb() in rbx_quiesce() */
	if (READ_ONCE(rbx_paused)) {
		atomic_dec(&rbx_inflight);
		return false;
	}
	return true;
}

static void rbx_exit(void)
{
	smp_mb__before_atomic();	/* the counters before the count */
	atomic_dec(&rbx_inflight);
}

static int rbx_writer(void *arg)
{
	struct rbx_cpu *c = arg;
	unsigned int n = 0;

	while (!kthread_should_stop()) {
		if (raw_smp_processor_id() != c->cpu) {
			/*
			 * Its CPU is or was offline: rbx_hotplug() gives the
			 * affinity back after add_cpu(), and the wake-up after
			 * the sleep places it there.
			 */
			usleep_range(1000, 2000);
			continue;
		}
		if (rbx_enter()) {
			preempt_disable();
			if (smp_processor_id() == c->cpu) {
				if (n & 1)
					rbx_write_copy(c, RBX_TASK);
				else
					rbx_reserve(c, RBX_TASK);
			}
			preempt_enable();
			rbx_exit();
		}
		if (!(++n & 63))
			cond_resched();
		if (!(n & 4095))
			usleep_range(200, 400);
	}
	return 0;
}

static enum hrtimer_restart rbx_timer(struct hrtimer *t, struct rbx_cpu *c, int stream)
{
	if (rbx_enter()) {
		if (smp_processor_id() == c->cpu) {
			rbx_reserve(c, stream);
			if (stream == RBX_HARD && !(rbx_rand(&c->st[stream].rnd) & 3))
				rbx_send_nmi(c);
		}
		rbx_exit();
	}
	if (READ_ONCE(rbx_stop))
		return HRTIMER_NORESTART;
	hrtimer_forward_now(t, ns_to_ktime((u64)timer_us * NSEC_PER_USEC));
	return HRTIMER_RESTART;
}

static enum hrtimer_restart rbx_soft_fn(struct hrtimer *t)
{
	return rbx_timer(t, container_of(t, struct rbx_cpu, soft), RBX_SOFT);
}

static enum hrtimer_restart rbx_hard_fn(struct hrtimer *t)
{
	return rbx_timer(t, container_of(t, struct rbx_cpu, hard), RBX_HARD);
}

/* Runs on the timers' CPU: pinned timers stay there until it goes offline. */
static void rbx_arm_timers(void *arg)
{
	struct rbx_cpu *c = arg;
	ktime_t period = ns_to_ktime((u64)timer_us * NSEC_PER_USEC);

	hrtimer_start(&c->soft, period, HRTIMER_MODE_REL_PINNED_SOFT);
	hrtimer_start(&c->hard, period, HRTIMER_MODE_REL_PINNED_HARD);
}

static void rbx_rearm_timers(struct rbx_cpu *c)
{
	hrtimer_cancel(&c->soft);
	hrtimer_cancel(&c->hard);
	smp_call_function_single(c->cpu, rbx_arm_timers, c, 1);
}

#ifdef CONFIG_X86_LOCAL_APIC
static int rbx_nmi(unsigned int type, struct pt_regs *regs)
{
	int cpu = raw_smp_processor_id();
	struct rbx_cpu *c;

	if (!rbx_cpus || cpu >= rbx_nr_cpus)
		return NMI_DONE;
	c = &rbx_cpus[cpu];
	if (atomic_dec_if_positive(&c->nmi_pending) < 0)
		return NMI_DONE;
	if (rbx_enter()) {
		rbx_reserve(c, RBX_NMI);
		rbx_exit();
	}
	return NMI_HANDLED;
}

static bool rbx_nmi_register(void)
{
	if (!boot_cpu_has(X86_FEATURE_APIC))
		return false;
	return !register_nmi_handler(NMI_LOCAL, rbx_nmi, 0, "rb_torture");
}

static void rbx_nmi_unregister(void)
{
	unregister_nmi_handler(NMI_LOCAL, "rb_torture");
}
#else
static bool rbx_nmi_register(void)
{
	return false;
}

static void rbx_nmi_unregister(void)
{
}
#endif

/* ---- readers ---- */

/* Check one event read from @cpu's buffer; @consumed: by a consuming reader. */
static void rbx_check(int cpu, const void *data, unsigned int length, u64 ts,
		      bool consumed, const char *who)
{
	const struct rbx_event *ev = data;
	struct rbx_cpu *c = &rbx_cpus[cpu];
	struct rbx_stream *st;
	unsigned int i;

	if (length < sizeof(*ev) || ev->len < sizeof(*ev) || ev->len > length ||
	    length > ALIGN(ev->len, 4) + 4 || ev->cpu != cpu || ev->stream >= RBX_NR_STREAMS) {
		rbx_error("%s cpu %d: bad event: length %u, header cpu %u stream %u seq %u len %u",
			  who, cpu, length, ev->cpu, ev->stream, ev->seq, ev->len);
		return;
	}
	for (i = 0; i < ev->len - sizeof(*ev); i++) {
		if (ev->fill[i] != rbx_byte(ev, i)) {
			rbx_error("%s cpu %d: %s seq %u: payload byte %u is %#x, not %#x",
				  who, cpu, rbx_stream_name[ev->stream], ev->seq, i,
				  ev->fill[i], rbx_byte(ev, i));
			return;
		}
	}
	if (!consumed)
		return;
	st = &c->st[ev->stream];
	if ((s64)ev->seq <= st->last)
		rbx_error("%s cpu %d: %s seq %u after seq %lld: %s",
			  who, cpu, rbx_stream_name[ev->stream], ev->seq, st->last,
			  (s64)ev->seq == st->last ? "read twice" : "out of order");
	st->last = ev->seq;
	st->read++;
	if (ts < c->last_ts)
		rbx_ts_error("%s cpu %d: %s seq %u: time stamp %llu below %llu",
			     who, cpu, rbx_stream_name[ev->stream], ev->seq, ts, c->last_ts);
	c->last_ts = ts;
}

/* Consume up to @max events of @buffer's @cpu; returns how many. */
static unsigned int rbx_consume(struct trace_buffer *buffer, int cpu, unsigned int max,
				const char *who)
{
	struct ring_buffer_event *event;
	unsigned int n = 0;
	u64 ts;

	while (n < max && (event = ring_buffer_consume(buffer, cpu, &ts, NULL))) {
		rbx_check(cpu, ring_buffer_event_data(event), ring_buffer_event_length(event),
			  ts, true, who);
		n++;
	}
	return n;
}

struct rbx_subbuf {
	u64		time_stamp;
	unsigned long	commit;
	unsigned char	data[];
};

#define RBX_LEN_MASK	((1UL << 27) - 1)
#define RBX_PADDING	29
#define RBX_TIME_EXTEND	30
#define RBX_TIME_STAMP	31

/* Walk a sub-buffer that read_page returned, checking every event. */
static unsigned int rbx_parse(int cpu, void *page, unsigned int capacity, const char *who)
{
	struct rbx_subbuf *sb = page;
	unsigned int len = sb->commit & RBX_LEN_MASK, off = 0, n = 0;
	u64 ts = sb->time_stamp;

	if (len > capacity) {
		rbx_error("%s cpu %d: sub-buffer length %u over %u", who, cpu, len, capacity);
		return 0;
	}
	while (off + 4 <= len) {
		struct ring_buffer_event *e = (void *)(sb->data + off);
		unsigned int bytes;

		/* Only a small data event has no array[0] to read. */
		if ((!e->type_len || e->type_len > 28) && off + 8 > len) {
			rbx_error("%s cpu %d: event header at %u of %u cut short",
				  who, cpu, off, len);
			return n;
		}
		switch (e->type_len) {
		case RBX_PADDING:
			if (!e->time_delta)
				return n;
			off += 4 + e->array[0];
			continue;
		case RBX_TIME_EXTEND:
			ts += ((u64)e->array[0] << 27) | e->time_delta;
			off += 8;
			continue;
		case RBX_TIME_STAMP:
			ts = (((u64)e->array[0] << 27) | e->time_delta) |
			     (sb->time_stamp & ~((1ULL << 59) - 1));
			off += 8;
			continue;
		}
		ts += e->time_delta;
		bytes = e->type_len ? 4 + 4 * e->type_len : 4 + e->array[0];
		if (off + bytes > len || bytes < 8) {
			rbx_error("%s cpu %d: event of %u bytes at %u of %u",
				  who, cpu, bytes, off, len);
			return n;
		}
		if (e->type_len)
			rbx_check(cpu, &e->array[0], bytes - 4, ts, true, who);
		else
			rbx_check(cpu, &e->array[1], bytes - 8, ts, true, who);
		off += bytes;
		n++;
	}
	if (off != len)
		rbx_error("%s cpu %d: events end at %u, length %u", who, cpu, off, len);
	return n;
}

static unsigned int rbx_read_page(struct rbx_cpu *c, int full, const char *who)
{
	int ret;

	ret = ring_buffer_alloc_read_page(rbx_buffer, c->cpu, &c->rpage);
	if (ret == -ENODEV || ret == -ENOMEM)
		return 0;	/* no buffer for that CPU; or try again */
	if (ret) {
		rbx_error("%s cpu %d: alloc_read_page: %d", who, c->cpu, ret);
		return 0;
	}
	ret = ring_buffer_read_page(rbx_buffer, c->rpage, ring_buffer_read_page_size(c->rpage),
				    c->cpu, full);
	if (ret < 0)
		return 0;
	return rbx_parse(c->cpu, ring_buffer_read_page_data(c->rpage),
			 ring_buffer_read_page_size(c->rpage) - offsetof(struct rbx_subbuf, data),
			 who) ?: 1;
}

static int rbx_reader(void *arg)
{
	struct rbx_cpu *c = arg;

	while (!kthread_should_stop()) {
		int kind = (c->cpu + READ_ONCE(rbx_phase)) % RBX_NR_READERS;
		unsigned int n;

		down_read(&rbx_quiet);
		mutex_lock(&c->lock);
		if (kind == RBX_CONSUME)
			n = rbx_consume(rbx_buffer, c->cpu, 256, rbx_reader_name[kind]);
		else
			n = rbx_read_page(c, kind == RBX_PAGE_FULL, rbx_reader_name[kind]);
		mutex_unlock(&c->lock);
		up_read(&rbx_quiet);
		if (!n)
			usleep_range(500, 1500);
		else
			cond_resched();
	}
	return 0;
}

static int rbx_iterator(void *arg)
{
	int cpu = 0;

	while (!kthread_should_stop()) {
		struct ring_buffer_iter *iter;
		struct ring_buffer_event *event;
		unsigned int n = 0;
		u64 ts;

		cpu = (cpu + 1) % rbx_nr_cpus;
		/* A swap must not take the CPU buffer away from under an iterator. */
		down_read(&rbx_quiet);
		mutex_lock(&rbx_cpus[cpu].iter_lock);
		iter = ring_buffer_read_start(rbx_buffer, cpu, GFP_KERNEL);
		while (iter && n++ < 500 && (event = ring_buffer_iter_peek(iter, &ts))) {
			rbx_check(cpu, ring_buffer_event_data(event),
				  ring_buffer_event_length(event), ts, false, "iterator");
			ring_buffer_iter_advance(iter);
		}
		if (iter)
			ring_buffer_read_finish(iter);
		mutex_unlock(&rbx_cpus[cpu].iter_lock);
		up_read(&rbx_quiet);
		if (!iter) {
			usleep_range(5000, 10000);
			continue;
		}
		usleep_range(1000, 3000);
	}
	return 0;
}

/* ---- control ---- */

static void rbx_op(int op, int ret)
{
	if (ret)
		rbx_ops[op].fail++;
	else
		rbx_ops[op].ok++;
}

static int rbx_resize(int cpu, unsigned long size)
{
	int ret = ring_buffer_resize(rbx_buffer, size, cpu);

	/* The spare follows, so that swaps keep working. */
	if (!ret)
		ret = ring_buffer_resize(rbx_spare, size, cpu);
	return ret;
}

struct rbx_swap_arg {
	int		cpu;
	int		ret;
	unsigned long	overrun_in;	/* of the CPU buffer swapped in */
	unsigned long	overrun_out;	/* of the one swapped out */
};

/*
 * On the swapped CPU with interrupts off, as the snapshot's per-CPU swap
 * does it: no writer of that CPU but an NMI can run in between, and an NMI
 * ends before the swap goes on. Reading both overrun counts here makes
 * them exact: the one swapped out gets no more writes.
 */
static void rbx_swap_ipi(void *arg)
{
	struct rbx_swap_arg *a = arg;

	a->overrun_in = ring_buffer_overrun_cpu(rbx_spare, a->cpu);
	a->ret = ring_buffer_swap_cpu(rbx_buffer, rbx_spare, a->cpu);
	a->overrun_out = ring_buffer_overrun_cpu(rbx_spare, a->cpu);
}

/*
 * Swap @cpu's buffer with the spare's; with the CPU's reader lock held, the
 * swapped-out events are drained into the accounting before any newer one
 * is read. The spare's CPU buffer is reset after the drain, so whatever
 * comes back from the spare next time starts empty.
 */
static int rbx_swap(int cpu)
{
	struct rbx_swap_arg a = { .cpu = cpu, .ret = -EAGAIN };
	struct rbx_cpu *c = &rbx_cpus[cpu];
	int ret;

	mutex_lock(&c->lock);
	mutex_lock(&c->iter_lock);
	/* The control thread does the hotplug, so @cpu stays as it is. */
	if (cpu_online(cpu)) {
		ret = smp_call_function_single(cpu, rbx_swap_ipi, &a, 1);
		if (ret)
			a.ret = ret;
	} else {
		rbx_swap_ipi(&a);	/* no writer there */
	}
	if (!a.ret) {
		c->retired += a.overrun_out - c->overrun_base;
		c->overrun_base = a.overrun_in;
		while (rbx_consume(rbx_spare, cpu, 1024, "swap drain"))
			;
		ring_buffer_reset_cpu(rbx_spare, cpu);
	}
	mutex_unlock(&c->iter_lock);
	mutex_unlock(&c->lock);
	return a.ret;
}

static int rbx_hotplug(u32 r)
{
	int cpu, ret;

	if (!IS_ENABLED(CONFIG_HOTPLUG_CPU) || !hotplug || rbx_nr_cpus < 2)
		return -EOPNOTSUPP;
	cpu = 1 + r % (rbx_nr_cpus - 1);
	if (!cpu_online(cpu))
		return -ENODEV;
	ret = remove_cpu(cpu);
	if (ret)
		return ret;
	msleep(20);
	ret = add_cpu(cpu);
	if (ret) {
		rbx_error("hotplug: CPU %d does not come back: %d", cpu, ret);
		return ret;
	}
	if (rbx_cpus[cpu].writer)
		set_cpus_allowed_ptr(rbx_cpus[cpu].writer, cpumask_of(cpu));
	rbx_rearm_timers(&rbx_cpus[cpu]);
	return 0;
}

/*
 * park_cpus=N takes the last N CPUs offline for the whole run, after their
 * rings exist: resizing and order changes still replace every CPU's ring,
 * while fewer CPUs run. Under an instruction-counting emulator whose CPUs
 * share one clock, a section's length is then the instructions of the CPUs
 * left running only (rbdev torture --irqsoff leaves one). They stay
 * offline after the run, so that such a measurement ends with the run and
 * not in the storm of bringing them back; writing 1 to their online files
 * in sysfs brings them back.
 */
static void rbx_park(void)
{
	unsigned int parked = 0;
	int cpu;

	for (cpu = rbx_nr_cpus - 1; cpu > 0 && parked < park_cpus; cpu--) {
		if (!IS_ENABLED(CONFIG_HOTPLUG_CPU) || !cpu_online(cpu) || remove_cpu(cpu))
			continue;
		parked++;
		/* Its timers moved to a running CPU, where they would write nothing. */
		hrtimer_cancel(&rbx_cpus[cpu].soft);
		hrtimer_cancel(&rbx_cpus[cpu].hard);
	}
	if (park_cpus)
		pr_info("parked %u CPUs\n", parked);
}

/* One control operation while everything runs; returns true for a hotplug. */
static bool rbx_control_step(u32 *rnd, bool *overwrite, bool *abs, bool may_hotplug)
{
	u32 r = rbx_rand(rnd);
	/* A hotplug now and then: at most one per phase, as they are slow. */
	int op = (r & 0xf000) || !may_hotplug ? r % OP_HOTPLUG : OP_HOTPLUG;
	int cpu = (r >> 16) % rbx_nr_cpus;
	unsigned long size = rbx_size(r >> 24);
	int i, ret = 0;

	switch (op) {
	case OP_RESIZE_CPU:
		ret = rbx_resize(cpu, size);
		break;
	case OP_RESIZE_ALL:
		ret = rbx_resize(RING_BUFFER_ALL_CPUS, size);
		break;
	case OP_SWAP_CPU:
		ret = rbx_swap(cpu);
		break;
	case OP_SWAP_ALL:
		for (i = 0; i < rbx_nr_cpus; i++)
			ret |= rbx_swap(i);
		break;
	case OP_RECORD_OFF:
		ring_buffer_record_off(rbx_buffer);
		usleep_range(500, 1000);
		ring_buffer_record_on(rbx_buffer);
		break;
	case OP_DISABLE_CPU:
		ring_buffer_record_disable_cpu(rbx_buffer, cpu);
		usleep_range(500, 1000);
		ring_buffer_record_enable_cpu(rbx_buffer, cpu);
		break;
	case OP_OVERWRITE:
		*overwrite = !*overwrite;
		ring_buffer_change_overwrite(rbx_buffer, *overwrite);
		ring_buffer_change_overwrite(rbx_spare, *overwrite);
		break;
	case OP_ABS:
		if (!abs_ts)
			return false;
		*abs = !*abs;
		ring_buffer_set_time_stamp_abs(rbx_buffer, *abs);
		ring_buffer_set_time_stamp_abs(rbx_spare, *abs);
		break;
	case OP_HOTPLUG:
		ret = rbx_hotplug(r >> 8);
		if (ret == -EOPNOTSUPP)
			return false;
		break;
	}
	rbx_op(op, ret);
	return op == OP_HOTPLUG;
}

/*
 * Stop the writers: after the smp_mb() here, a writer either saw rbx_paused
 * (and wrote nothing) or is counted in rbx_inflight, which it leaves after
 * its counters are written (smp_mb__before_atomic() in rbx_exit()).
 */
static void rbx_quiesce(void)
{
	WRITE_ONCE(rbx_paused, true);
	smp_mb();	/* pairs with smp_mb__after_atomic() in rbx_enter() */
	while (atomic_read(&rbx_inflight))
		usleep_range(100, 200);
	smp_mb();	/* the writers' counters after their exit */
}

/* Drain @c's CPU and check its accounting; the writers are paused. */
static void rbx_account_cpu(struct rbx_cpu *c)
{
	u64 written = 0, read = 0, overrun;
	int s;

	mutex_lock(&c->lock);
	while (rbx_consume(rbx_buffer, c->cpu, 1024, "drain"))
		;
	overrun = ring_buffer_overrun_cpu(rbx_buffer, c->cpu) - c->overrun_base;
	for (s = 0; s < RBX_NR_STREAMS; s++) {
		written += c->st[s].written;
		read += c->st[s].read;
	}
	if (written != read + overrun + c->retired)
		rbx_error("phase %u cpu %d: written %llu, read %llu + overrun %llu + retired %llu",
			  rbx_phase, c->cpu, written, read, overrun, c->retired);
	if (!ring_buffer_empty_cpu(rbx_buffer, c->cpu))
		rbx_error("phase %u cpu %d: not empty after the drain", rbx_phase, c->cpu);
	mutex_unlock(&c->lock);
}

static void rbx_account(void)
{
	int cpu;

	for (cpu = 0; cpu < rbx_nr_cpus; cpu++)
		rbx_account_cpu(&rbx_cpus[cpu]);
}

/* With the writers paused and everything accounted: reset or change order. */
static void rbx_quiet_op(u32 r)
{
	int cpu = (r >> 8) % rbx_nr_cpus, order = (r >> 16) % (RBX_MAX_ORDER + 1);
	int i, op, ret = 0;

	switch (r % 4) {
	case 0:
		op = OP_RESET_CPU;
		ring_buffer_reset_cpu(rbx_buffer, cpu);
		break;
	case 1:
		op = OP_RESET_ALL;
		ring_buffer_reset(rbx_buffer);
		break;
	case 2:
		op = OP_ORDER;
		ret = ring_buffer_subbuf_order_set(rbx_buffer, order);
		if (!ret)
			ret = ring_buffer_subbuf_order_set(rbx_spare, order);
		break;
	default:
		return;
	}
	rbx_op(op, ret);
	/* New counters start from what the buffer says now. */
	for (i = 0; i < rbx_nr_cpus; i++) {
		struct rbx_cpu *c = &rbx_cpus[i];
		int s;

		mutex_lock(&c->lock);
		c->overrun_base = ring_buffer_overrun_cpu(rbx_buffer, i);
		c->retired = 0;
		for (s = 0; s < RBX_NR_STREAMS; s++) {
			c->st[s].written = 0;
			c->st[s].read = 0;
		}
		mutex_unlock(&c->lock);
	}
}

/* A status line, not a check: reading counters as their writers change them is fine. */
#define rbx_racy(x)	data_race(x)

static void rbx_status(const char *what, unsigned long elapsed)
{
	u64 written = 0, failed = 0, discarded = 0, nmi = 0, nested = 0;
	char ops[256];
	int cpu, s, i, n = 0;

	if (!rbx_cpus)
		return;

	for (cpu = 0; cpu < rbx_nr_cpus; cpu++) {
		for (s = 0; s < RBX_NR_STREAMS; s++) {
			struct rbx_stream *st = &rbx_cpus[cpu].st[s];

			written += rbx_racy(st->next);
			failed += rbx_racy(st->failed);
			discarded += rbx_racy(st->discarded);
		}
		nmi += rbx_racy(rbx_cpus[cpu].st[RBX_NMI].next);
		nested += rbx_racy(rbx_cpus[cpu].st[RBX_NEST].next);
	}
	for (i = 0; i < OP_NR; i++)
		n += scnprintf(ops + n, sizeof(ops) - n, " %s=%u/%u", rbx_op_name[i],
			       rbx_ops[i].ok, rbx_ops[i].fail);
	pr_info("%s t=%lus phase=%u events=%llu nmi=%llu nest=%llu failed=%llu discarded=%llu errors=%d ops(ok/refused):%s\n",
		what, elapsed, rbx_phase, written, nmi, nested, failed, discarded,
		atomic_read(&rbx_errors), ops);
}

/*
 * A run that never managed an operation tested nothing about it: each must
 * have succeeded at least once, and NMIs and nested writes must have written.
 */
static bool rbx_coverage(void)
{
	static const int need[] = { OP_RESIZE_CPU, OP_RESIZE_ALL, OP_SWAP_CPU, OP_RECORD_OFF,
				    OP_DISABLE_CPU, OP_OVERWRITE, OP_RESET_CPU, OP_ORDER };
	u64 nmi = 0, nest = 0;
	bool ok = true;
	int i, cpu;

	for (i = 0; i < ARRAY_SIZE(need); i++) {
		if (!rbx_ops[need[i]].ok) {
			pr_err("coverage: %s never succeeded\n", rbx_op_name[need[i]]);
			ok = false;
		}
	}
	if (abs_ts && !rbx_ops[OP_ABS].ok) {
		pr_err("coverage: abs_ts never switched\n");
		ok = false;
	}
	if (IS_ENABLED(CONFIG_HOTPLUG_CPU) && hotplug && rbx_nr_cpus > 1 &&
	    !rbx_ops[OP_HOTPLUG].ok) {
		pr_err("coverage: no CPU went offline and back\n");
		ok = false;
	}
	for (cpu = 0; cpu < rbx_nr_cpus; cpu++) {
		/* next counts every reservation since the start */
		nmi += rbx_cpus[cpu].st[RBX_NMI].next;
		nest += rbx_cpus[cpu].st[RBX_NEST].next;
	}
	if (rbx_have_nmi && !nmi) {
		pr_err("coverage: no NMI wrote an event\n");
		ok = false;
	}
	if (!nest) {
		pr_err("coverage: no nested write\n");
		ok = false;
	}
	return ok;
}

static void rbx_stop_all(struct task_struct **readers, struct task_struct *iter)
{
	int cpu;

	WRITE_ONCE(rbx_stop, true);
	for (cpu = 0; cpu < rbx_nr_cpus; cpu++) {
		struct rbx_cpu *c = &rbx_cpus[cpu];

		if (c->writer)
			kthread_stop(c->writer);
		hrtimer_cancel(&c->soft);
		hrtimer_cancel(&c->hard);
		if (readers[cpu])
			kthread_stop(readers[cpu]);
	}
	if (iter)
		kthread_stop(iter);
}

/*
 * The canary: a deliberate data race (plain accesses from two CPUs) that a
 * working KCSAN set-up must report, so that a KCSAN run without reports
 * means something. Not part of the ring buffer's test; off by default.
 */
static unsigned long rbx_canary_word;

static int rbx_canary_writer(void *arg)
{
	unsigned long end = jiffies + 2 * HZ;

	while (time_before(jiffies, end) && !kthread_should_stop())
		rbx_canary_word++;
	return 0;
}

static int rbx_canary_reader(void *arg)
{
	unsigned long end = jiffies + 2 * HZ, seen = 0;

	while (time_before(jiffies, end) && !kthread_should_stop())
		seen += rbx_canary_word & 1;
	return seen & 1;
}

static void rbx_canary(void)
{
	struct task_struct *w, *r;

	if (!IS_ENABLED(CONFIG_KCSAN) || !kcsan_canary || num_online_cpus() < 2)
		return;
	w = kthread_create(rbx_canary_writer, NULL, "rbx_canary_w");
	r = kthread_create(rbx_canary_reader, NULL, "rbx_canary_r");
	if (IS_ERR(w) || IS_ERR(r)) {
		if (!IS_ERR(w))
			kthread_stop(w);
		if (!IS_ERR(r))
			kthread_stop(r);
		return;
	}
	kthread_bind(w, cpumask_first(cpu_online_mask));
	kthread_bind(r, cpumask_next(cpumask_first(cpu_online_mask), cpu_online_mask));
	get_task_struct(w);
	get_task_struct(r);
	wake_up_process(w);
	wake_up_process(r);
	msleep(2500);		/* both run for two seconds */
	kthread_stop(w);
	kthread_stop(r);
	put_task_struct(w);
	put_task_struct(r);
	pr_info("kcsan canary done\n");
}

static int rbx_run(void *arg)
{
	unsigned long t0 = jiffies, next_status, phase_end, secs = seconds;
	struct task_struct **readers, *iter = NULL;
	bool overwrite = true, abs = false, did_hotplug;
	u32 rnd = 0x12345678;
	int cpu, ret = -ENOMEM;

	rbx_stop = false;
	rbx_paused = false;
	rbx_phase = 0;
	atomic_set(&rbx_errors, 0);
	atomic_set(&rbx_ts_errors, 0);
	rbx_have_nmi = false;
	memset(rbx_ops, 0, sizeof(rbx_ops));
	rbx_nr_cpus = nr_cpu_ids;
	rbx_canary();
	rbx_cpus = kcalloc(rbx_nr_cpus, sizeof(*rbx_cpus), GFP_KERNEL);
	readers = kcalloc(rbx_nr_cpus, sizeof(*readers), GFP_KERNEL);
	rbx_buffer = ring_buffer_alloc(rbx_size(1), RB_FL_OVERWRITE);
	rbx_spare = ring_buffer_alloc(rbx_size(1), RB_FL_OVERWRITE);
	if (!rbx_cpus || !readers || !rbx_buffer || !rbx_spare)
		goto out;
	for (cpu = 0; cpu < rbx_nr_cpus; cpu++) {
		struct rbx_cpu *c = &rbx_cpus[cpu];
		int s;

		c->cpu = cpu;
		mutex_init(&c->lock);
		mutex_init(&c->iter_lock);
		c->copy = kmalloc(PAGE_SIZE << RBX_MAX_ORDER, GFP_KERNEL);
		if (!c->copy)
			goto out;
		for (s = 0; s < RBX_NR_STREAMS; s++) {
			c->st[s].last = -1;
			c->st[s].rnd = 0x1000193 * (cpu * RBX_NR_STREAMS + s + 1);
		}
		hrtimer_init(&c->soft, CLOCK_MONOTONIC, HRTIMER_MODE_REL_PINNED_SOFT);
		c->soft.function = rbx_soft_fn;
		hrtimer_init(&c->hard, CLOCK_MONOTONIC, HRTIMER_MODE_REL_PINNED_HARD);
		c->hard.function = rbx_hard_fn;
	}
	rbx_have_nmi = rbx_nmi_register();
	pr_info("start: %lu s, %d CPUs, phases of %u ms, sizes up to %u KiB, NMIs %s, hotplug %s\n",
		secs, rbx_nr_cpus, phase_ms, max(size_kb, 16U), rbx_have_nmi ? "on" : "unsupported",
		IS_ENABLED(CONFIG_HOTPLUG_CPU) && hotplug ? "on" : "off");

	cpus_read_lock();
	for_each_online_cpu(cpu) {
		struct rbx_cpu *c = &rbx_cpus[cpu];

		c->writer = kthread_create(rbx_writer, c, "rbx_writer/%d", cpu);
		if (IS_ERR(c->writer)) {
			c->writer = NULL;
			continue;
		}
		set_cpus_allowed_ptr(c->writer, cpumask_of(cpu));
		sched_set_normal(c->writer, 5);
		wake_up_process(c->writer);
		smp_call_function_single(cpu, rbx_arm_timers, c, 1);
	}
	cpus_read_unlock();
	for (cpu = 0; cpu < rbx_nr_cpus; cpu++) {
		readers[cpu] = kthread_run(rbx_reader, &rbx_cpus[cpu], "rbx_reader/%d", cpu);
		if (IS_ERR(readers[cpu]))
			readers[cpu] = NULL;
	}
	iter = kthread_run(rbx_iterator, NULL, "rbx_iter");
	if (IS_ERR(iter))
		iter = NULL;
	rbx_park();

	next_status = jiffies + stat_interval * HZ;
	while (time_before(jiffies, t0 + secs * HZ)) {
		phase_end = jiffies + msecs_to_jiffies(phase_ms);
		did_hotplug = false;
		while (time_before(jiffies, phase_end)) {
			did_hotplug |= rbx_control_step(&rnd, &overwrite, &abs, !did_hotplug);
			usleep_range(2000, 10000);
			if (time_after(jiffies, next_status)) {
				rbx_status("status", (jiffies - t0) / HZ);
				next_status = jiffies + stat_interval * HZ;
			}
		}
		rbx_quiesce();
		rbx_account();
		down_write(&rbx_quiet);
		rbx_quiet_op(rbx_rand(&rnd));
		up_write(&rbx_quiet);
		WRITE_ONCE(rbx_phase, rbx_phase + 1);
		WRITE_ONCE(rbx_paused, false);
	}
	rbx_stop_all(readers, iter);
	rbx_quiesce();
	rbx_account();
	ret = 0;
	pr_info("verdict accounting %s\n", atomic_read(&rbx_errors) ? "FAIL" : "PASS");
	pr_info("verdict time-order %s\n", atomic_read(&rbx_ts_errors) ? "FAIL" : "PASS");
	pr_info("verdict coverage %s\n", rbx_coverage() ? "PASS" : "FAIL");
out:
	rbx_status(atomic_read(&rbx_errors) || atomic_read(&rbx_ts_errors) || ret ||
		   !rbx_coverage() ? "end FAIL" : "end PASS", (jiffies - t0) / HZ);
	if (rbx_have_nmi)
		rbx_nmi_unregister();
	for (cpu = 0; rbx_cpus && cpu < rbx_nr_cpus; cpu++)
		if (rbx_cpus[cpu].rpage)
			ring_buffer_free_read_page(rbx_buffer, cpu, rbx_cpus[cpu].rpage);
	if (rbx_buffer)
		ring_buffer_free(rbx_buffer);
	if (rbx_spare)
		ring_buffer_free(rbx_spare);
	kfree(readers);
	for (cpu = 0; rbx_cpus && cpu < rbx_nr_cpus; cpu++)
		kfree(rbx_cpus[cpu].copy);
	kfree(rbx_cpus);
	rbx_cpus = NULL;
	mutex_lock(&rbx_start_lock);
	rbx_main = NULL;
	mutex_unlock(&rbx_start_lock);
	return 0;
}

static int rbx_start(void)
{
	struct task_struct *t;

	mutex_lock(&rbx_start_lock);
	if (rbx_main) {
		mutex_unlock(&rbx_start_lock);
		return -EBUSY;
	}
	t = kthread_run(rbx_run, NULL, "rb_torture");
	if (!IS_ERR(t))
		rbx_main = t;
	mutex_unlock(&rbx_start_lock);
	return PTR_ERR_OR_ZERO(t);
}

static bool rbx_booted;

static int rbx_seconds_set(const char *val, const struct kernel_param *kp)
{
	int ret = param_set_uint(val, kp);

	if (ret || !seconds || !rbx_booted)
		return ret;
	return rbx_start();
}

static const struct kernel_param_ops rbx_seconds_ops = {
	.set = rbx_seconds_set,
	.get = param_get_uint,
};
module_param_cb(seconds, &rbx_seconds_ops, &seconds, 0644);
MODULE_PARM_DESC(seconds, "run for this long; writing it starts a run (one at a time)");

static int __init rbx_init(void)
{
	rbx_booted = true;
	return seconds ? rbx_start() : 0;
}
late_initcall(rbx_init);
