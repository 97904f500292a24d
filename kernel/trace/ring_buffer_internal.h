/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Structures shared by the ring buffer's files. The design, the invariants
 * R1-R5 and the memory-ordering pairs M1-M7 referred to in comments are in
 * Documentation/trace/ring-buffer-design.rst.
 *
 * A per-CPU buffer is an array of sub-buffer descriptors indexed by a small
 * id, and a ring of slots holding ids in the order the writer fills them.
 * Writers on one CPU share two packed words:
 *
 *   write:  vpos:22 | id:22 | offset:20   (local64_t, this CPU's writers only)
 *   head:   vpos:22 | behind:22           (atomic64_t, writers and the reader)
 *   commit: vpos:22 | id:22               (atomic64_t, the outermost writer
 *                                          stores it, everyone reads it)
 *
 * vpos is a slot position counted modulo 2 * nr, so that a full ring and an
 * empty one differ. Every change of either word is a cmpxchg of the whole
 * word, so one compare decides every race between a writer, a nested writer
 * and the reader; no flag bits live in pointers.
 */
#ifndef _RING_BUFFER_INTERNAL_H
#define _RING_BUFFER_INTERNAL_H

#include <linux/ring_buffer.h>
#include <linux/irq_work.h>
#include <linux/spinlock.h>
#include <linux/mutex.h>
#include <linux/wait.h>
#include <linux/rcupdate.h>
#include <linux/jump_label.h>
#include <linux/preempt.h>
#include <asm/local64.h>
#include <asm/local.h>

/* ---- the ABI: sub-buffer and event layout ---- */

/* Where 64-bit loads must be aligned, every event is 8-byte aligned. */
#ifdef CONFIG_HAVE_64BIT_ALIGNED_ACCESS
# define RB_FORCE_8		1
# define RB_ARCH_ALIGN		8U
#else
# define RB_FORCE_8		0
# define RB_ARCH_ALIGN		4U
#endif

struct rb_page {
	u64		time_stamp;	/* time of the first event */
	local_t		commit;		/* bytes of committed events */
	unsigned char	data[] __aligned(RB_ARCH_ALIGN);
};

#define RB_PAGE_HDR		offsetof(struct rb_page, data)
#define RB_EVENT_HDR		4U
#define RB_SMALL_MAX		(4U * RINGBUF_TYPE_DATA_TYPE_LEN_MAX)
#define RB_LEN_TIME		8U	/* TIME_EXTEND and TIME_STAMP */
#define RB_DELTA_BITS		27
#define RB_DELTA_MASK		((1ULL << RB_DELTA_BITS) - 1)
#define RB_STAMP_BITS		59
#define RB_STAMP_MASK		((1ULL << RB_STAMP_BITS) - 1)
#define RB_MISSED_EVENTS	BIT(31)
#define RB_MISSED_STORED	BIT(30)
#define RB_MISSED_MASK		(RB_MISSED_EVENTS | RB_MISSED_STORED)
#define RB_MAX_ORDER		7

/* ---- packed words ---- */

#define RB_OFF_BITS		20
#define RB_ID_BITS		22
#define RB_VPOS_BITS		22
#define RB_MAX_SUBBUFS		((1U << (RB_ID_BITS - 1)) - 1)

static inline u64 rb_wword(u32 vpos, u32 id, u32 off)
{
	return ((u64)vpos << (RB_ID_BITS + RB_OFF_BITS)) |
	       ((u64)id << RB_OFF_BITS) | off;
}

static inline u32 rb_w_off(u64 w)
{
	return w & ((1U << RB_OFF_BITS) - 1);
}

static inline u32 rb_w_id(u64 w)
{
	return (w >> RB_OFF_BITS) & ((1U << RB_ID_BITS) - 1);
}

static inline u32 rb_w_vpos(u64 w)
{
	return w >> (RB_ID_BITS + RB_OFF_BITS);
}

/*
 * A {vpos, id} pair in one word: the head ({its vpos, the id behind it})
 * and the commit point ({its vpos, its id}).
 */
static inline u64 rb_pair(u32 vpos, u32 id)
{
	return ((u64)vpos << RB_ID_BITS) | id;
}

static inline u32 rb_pair_vpos(u64 p)
{
	return p >> RB_ID_BITS;
}

static inline u32 rb_pair_id(u64 p)
{
	return p & ((1U << RB_ID_BITS) - 1);
}

/* ---- per-CPU structures ---- */

struct rb_subbuf {
	struct rb_page	*page;
	local_t		events;		/* data events reserved in this lap */
	unsigned int	data_end;	/* where events end once closed */
	unsigned int	tail_bytes;	/* unused end, counted in entries_bytes */
	unsigned long	gen;		/* bumped when the writer enters it */
	unsigned long	events_before;	/* events written before this one */
};

/* One open reservation: enough to discard it and to give its time. */
struct rb_open {
	u64		ts;
	u64		start;		/* write word before the reservation */
	u64		end;		/* write word after it */
};

#define RB_MAX_OPEN		8

struct rb_waiters {
	struct irq_work		work;
	wait_queue_head_t	wait;
	wait_queue_head_t	full_wait;
	atomic_t		seq;		/* bumped by ring_buffer_wake_waiters() */
	bool			pending;	/* someone waits for any data */
	bool			full_pending;	/* someone waits for a watermark */
	int			full_min;	/* lowest watermark waited for */
	bool			per_cpu;	/* in a rb_cpu_buffer, else in the buffer */
	/*
	 * The waiters' recheck (design, "Waiting and waking"): recheck_req
	 * counts the requests not yet covered by a grace period that began
	 * after them; recheck_covered is how many the queued one covers.
	 */
	struct rcu_head		recheck;
	atomic_t		recheck_req;
	int			recheck_covered;
};

struct trace_buffer;

struct rb_cpu_buffer {
	/* This CPU's writers only. */
	local64_t		write;
	local_t			committing;	/* open writers on this CPU */
	unsigned long		ctx;		/* recursion bits */
	unsigned int		ctx_shift;	/* 5 per ring_buffer_nest_start() */
	struct rb_open		open[RB_MAX_OPEN];
	u64			last_ts;	/* the stamp record */
	u64			last_end;

	/* Written by this CPU's writers, read by everyone. */
	local_t			entries;	/* committed events */
	local_t			overrun;	/* events evicted */
	local_t			commit_overrun;
	local_t			dropped_events;
	local_t			entries_bytes;
	local_t			entered;	/* sub-buffers entered */
	local_t			evicted;	/* sub-buffers evicted */
	atomic64_t		commit;		/* the commit point: rb_pair() */

	/* Shared with the reader. */
	atomic64_t		head;
	u32			*slots;		/* nr ids in ring order */
	struct rb_subbuf	*subbufs;	/* nr + 1 descriptors by id */
	unsigned int		nr;

	/* The reader, under reader_lock. */
	raw_spinlock_t		reader_lock;
	u32			reader_id;
	unsigned int		read_pos;	/* bytes consumed on the reader's page */
	u64			read_stamp;	/* time of the event at read_pos */
	unsigned long		seen;		/* events before the reader's page */
	unsigned long		lost_events;	/* to report with the next read */
	unsigned long		reads;		/* bumped on every consuming step */
	unsigned long		read;		/* events consumed */
	unsigned long		read_bytes;
	unsigned long		taken;		/* sub-buffers taken by the reader */

	/* Control. */
	struct trace_buffer	*buffer;
	int			cpu;
	atomic_t		record_disabled;
	atomic_t		resize_disabled;
	atomic_t		ctl;		/* RB_CTL_*: who may change this CPU buffer */
	struct rb_page		*spare;		/* a free page for read pages */
	unsigned int		spare_order;
	struct rb_waiters	waiters;
};

struct rb_test_hook;

struct trace_buffer {
	unsigned int			flags;
	int				cpus_nr;
	atomic_t			record_disabled;
	atomic_t			resizing;
	cpumask_var_t			cpumask;
	struct lock_class_key		*reader_lock_key;
	struct mutex			mutex;		/* serializes control operations */
	struct rb_cpu_buffer		**cpus;
	struct hlist_node		node;
	u64				(*clock)(void);
	struct rb_waiters		waiters;
	bool				time_stamp_abs;
	unsigned int			subbuf_order;
	unsigned int			subbuf_size;	/* bytes, header included */
	unsigned int			max_data_size;
#if IS_ENABLED(CONFIG_RING_BUFFER_KUNIT_TEST)
	struct rb_test_hook		*test_hook;
#endif
};

#define RB_BUFFER_OFF		BIT(20)

/*
 * A control operation (under buffer->mutex) and the snapshot swap (any
 * context, interrupts off) each claim a CPU buffer with one cmpxchg from
 * RB_CTL_IDLE, so neither can act on a CPU buffer the other is moving.
 */
enum { RB_CTL_IDLE, RB_CTL_QUIESCED, RB_CTL_SWAPPING };

struct buffer_data_read_page {
	unsigned int	order;
	struct rb_page	*data;
};

struct ring_buffer_iter {
	struct rb_cpu_buffer	*cpu_buffer;
	u32			id;
	unsigned int		vpos;
	unsigned int		offset;		/* next event on the sub-buffer */
	unsigned long		gen;
	unsigned long		reads;		/* cpu_buffer->reads when started */
	u64			read_stamp;	/* time before the event at offset */
	u64			event_ts;	/* time of the copied event */
	bool			dropped;
	bool			have_event;
	unsigned int		event_size;
	struct ring_buffer_event *event;	/* a copy, event_size bytes */
};

/*
 * An impossible state, which this code relies on and cannot re-check
 * cheaply everywhere: warn once and stop recording on that CPU buffer for
 * good, rather than write through a broken invariant. Evaluates to @cond.
 */
#define RB_WARN_STOP(cpu, cond)		rb_warn_stop(cpu, unlikely(cond), #cond)

static inline bool rb_warn_stop(struct rb_cpu_buffer *cpu, bool broken, const char *what)
{
	if (broken) {
		atomic_inc(&cpu->record_disabled);
		WARN_ONCE(1, "ring buffer: CPU %d stopped: %s\n", cpu->cpu, what);
	}
	return broken;
}

/*
 * Where 64-bit atomics are emulated with hashed spinlocks, an NMI that
 * touches one (the commit point, the head) may spin on a lock the code it
 * interrupted holds: NMI writers are refused, and NMI readers find nothing.
 */
static inline bool rb_nmi_no_atomic64(void)
{
	return IS_ENABLED(CONFIG_GENERIC_ATOMIC64) && in_nmi();
}

/* ---- small helpers used by every file ---- */

static inline unsigned int rb_capacity(struct trace_buffer *buffer)
{
	return buffer->subbuf_size - RB_PAGE_HDR;
}

static inline unsigned int rb_vpos_next(struct rb_cpu_buffer *cpu, unsigned int vpos)
{
	return vpos + 1 == 2 * cpu->nr ? 0 : vpos + 1;
}

/* Distance from @from forward to @to, in slots, modulo 2 * nr. */
static inline unsigned int rb_vpos_dist(struct rb_cpu_buffer *cpu, unsigned int from,
					unsigned int to)
{
	return to >= from ? to - from : to + 2 * cpu->nr - from;
}

static inline struct rb_subbuf *rb_subbuf(struct rb_cpu_buffer *cpu, u32 id)
{
	return &cpu->subbufs[id];
}

/* ---- test points ---- */

/*
 * Each point names the kind of shared access that follows it. The
 * interleaving suite runs another context's whole operation at a point:
 * a nested writer, a reader on another CPU, a control operation.
 */
enum rb_test_point {
	RB_TP_WRITE,		/* the write word is read */
	RB_TP_WRITE_CAS,	/* ... or changed */
	RB_TP_HEAD,		/* the head word is read */
	RB_TP_HEAD_CAS,		/* ... or changed */
	RB_TP_SLOT,		/* a slot is read */
	RB_TP_SLOT_SET,		/* ... or written */
	RB_TP_COMMIT,		/* the commit point is read */
	RB_TP_COMMIT_SET,	/* ... or moved */
	RB_TP_LEN,		/* a page's committed length is read */
	RB_TP_LEN_SET,		/* ... or stored */
	RB_TP_BOOKS,		/* a sub-buffer's events, events_before, gen, data_end */
	RB_TP_STAMP,		/* the stamp record is read */
	RB_TP_STAMP_SET,	/* ... or stored */
	RB_TP_MODE,		/* a setting, or the CPU buffer's owner, is read */
	RB_TP_OPEN,		/* the count of open writers is read or changed */
	RB_TP_CONTROL,		/* a snapshot swap is about to claim its CPU buffers */
	RB_TP_NR,
};

typedef void (*rb_test_fn)(struct trace_buffer *buffer, int cpu,
			   enum rb_test_point pt, void *data);

#if IS_ENABLED(CONFIG_RING_BUFFER_KUNIT_TEST)
struct rb_test_hook {
	rb_test_fn	fn;
	void		*data;
};

void rb_set_test_hook(struct trace_buffer *buffer, rb_test_fn fn, void *data);
void rb_test_hooks_enable(bool on);
int rb_check_invariants(struct trace_buffer *buffer, int cpu);

/* Off (a no-op jump) unless a white-box suite is running. */
DECLARE_STATIC_KEY_FALSE(rb_test_hooks);

static __always_inline void rb_test_point(struct rb_cpu_buffer *cpu, enum rb_test_point pt)
{
	struct rb_test_hook *hook;

	if (!static_branch_unlikely(&rb_test_hooks))
		return;
	hook = READ_ONCE(cpu->buffer->test_hook);
	if (hook)
		hook->fn(cpu->buffer, cpu->cpu, pt, hook->data);
}
#else
static __always_inline void rb_test_point(struct rb_cpu_buffer *cpu, enum rb_test_point pt)
{
}
#endif

/*
 * ---- shared state: every access is a test point ----
 *
 * On the write, publish, move, evict, discard and reader-swap paths
 * (ring_buffer.c), state that another context may change between two
 * instructions is read and written only through the helpers below, and
 * each helper is a test point just before its access. So a new access
 * comes with its point, and the interleaving suite, which injects at
 * every point hit, tries every place another context can run as far as
 * the shared state can tell. `rbdev test` fails when ring_buffer.c
 * touches one of these fields directly outside the functions that run
 * quiesced ("check-points" in scripts/rbdev).
 *
 * Not behind points: ctx, ctx_shift and open[] (a nested writer restores
 * them before it returns, so no interleaving can show a change), the
 * statistics counters (nothing branches on them but the watermark, which
 * tolerates any value), and the reader's fields under reader_lock.
 */

static __always_inline u64 rb_write_word(struct rb_cpu_buffer *cpu)
{
	rb_test_point(cpu, RB_TP_WRITE);
	return local64_read(&cpu->write);
}

static __always_inline bool rb_write_cas(struct rb_cpu_buffer *cpu, u64 old, u64 new)
{
	rb_test_point(cpu, RB_TP_WRITE_CAS);
	return local64_cmpxchg(&cpu->write, old, new) == old;
}

/* The acquire pairs with the full barrier of the head's cmpxchg (M3). */
static __always_inline u64 rb_head_word(struct rb_cpu_buffer *cpu)
{
	rb_test_point(cpu, RB_TP_HEAD);
	return atomic64_read_acquire(&cpu->head);
}

static __always_inline bool rb_head_cas(struct rb_cpu_buffer *cpu, u64 old, u64 new)
{
	rb_test_point(cpu, RB_TP_HEAD_CAS);
	return atomic64_cmpxchg(&cpu->head, old, new) == old;
}

/* The id stored in the slot of @vpos, without R1 (see rb_slot_id()). */
static __always_inline u32 rb_slot(struct rb_cpu_buffer *cpu, unsigned int vpos)
{
	rb_test_point(cpu, RB_TP_SLOT);
	return READ_ONCE(cpu->slots[vpos % cpu->nr]);
}

static __always_inline void rb_slot_set(struct rb_cpu_buffer *cpu, unsigned int vpos, u32 id)
{
	rb_test_point(cpu, RB_TP_SLOT_SET);
	WRITE_ONCE(cpu->slots[vpos % cpu->nr], id);
}

static inline unsigned int rb_vpos_prev(struct rb_cpu_buffer *cpu, unsigned int vpos)
{
	return vpos ? vpos - 1 : 2 * cpu->nr - 1;
}

/* The id in the slot at @vpos, with R1 applied (see the design document). */
static inline u32 rb_slot_id(struct rb_cpu_buffer *cpu, unsigned int vpos)
{
	u64 h = rb_head_word(cpu);

	if (vpos % cpu->nr == rb_vpos_prev(cpu, rb_pair_vpos(h)) % cpu->nr)
		return rb_pair_id(h);
	return rb_slot(cpu, vpos);
}

/*
 * The commit point is one word, {vpos, id}. Readers on other CPUs decide
 * what is closed from its id; this CPU's nested writers decide what they
 * may evict from its vpos. Both must come from the same store: with two
 * stores, a nested writer between them either evicted a sub-buffer that
 * readers still took for the commit one (vpos first), or, after a reader
 * moved the head meanwhile, read a stale vpos that wrapped round to just
 * behind the tail and evicted unpublished events (id first). The acquire
 * pairs with the release in rb_commit_set() (M2): data and lengths
 * published before it are visible.
 */
static __always_inline u64 rb_commit_word(struct rb_cpu_buffer *cpu)
{
	rb_test_point(cpu, RB_TP_COMMIT);
	return atomic64_read_acquire(&cpu->commit);	/* M2, pairs with rb_commit_set() */
}

/* The sub-buffer holding the commit point. */
static __always_inline u32 rb_commit_id(struct rb_cpu_buffer *cpu)
{
	return rb_pair_id(rb_commit_word(cpu));
}

/* Move the commit point to slot @vpos, sub-buffer @id: one store. */
static __always_inline void rb_commit_set(struct rb_cpu_buffer *cpu, unsigned int vpos, u32 id)
{
	rb_test_point(cpu, RB_TP_COMMIT_SET);
	atomic64_set_release(&cpu->commit, rb_pair(vpos, id));	/* M2 */
}

/*
 * Bytes of committed data on a page, the missed-events bits masked. The
 * read barrier pairs with the smp_wmb() in rb_len_set() (M1): the bytes
 * below the length are then visible.
 */
static inline unsigned int rb_page_len(struct rb_page *page)
{
	unsigned long commit = local_read(&page->commit);

	smp_rmb();	/* M1, pairs with rb_len_set() */
	return commit & ~RB_MISSED_MASK;
}

static __always_inline unsigned int rb_len(struct rb_cpu_buffer *cpu, struct rb_page *page)
{
	rb_test_point(cpu, RB_TP_LEN);
	return rb_page_len(page);
}

/* Publish @len bytes of @page: the bytes first (M1, pairs with rb_page_len()). */
static __always_inline void rb_len_set(struct rb_cpu_buffer *cpu, struct rb_page *page,
				       unsigned int len)
{
	rb_test_point(cpu, RB_TP_LEN_SET);
	smp_wmb();	/* M1, pairs with rb_page_len() */
	local_set(&page->commit, len);
}

static __always_inline long rb_sb_events(struct rb_cpu_buffer *cpu, struct rb_subbuf *sb)
{
	rb_test_point(cpu, RB_TP_BOOKS);
	return local_read(&sb->events);
}

static __always_inline void rb_sb_events_add(struct rb_cpu_buffer *cpu, struct rb_subbuf *sb,
					     long n)
{
	rb_test_point(cpu, RB_TP_BOOKS);
	local_add(n, &sb->events);
}

static __always_inline unsigned long rb_sb_before(struct rb_cpu_buffer *cpu,
						  struct rb_subbuf *sb)
{
	rb_test_point(cpu, RB_TP_BOOKS);
	return READ_ONCE(sb->events_before);
}

static __always_inline void rb_sb_before_set(struct rb_cpu_buffer *cpu, struct rb_subbuf *sb,
					     unsigned long n)
{
	rb_test_point(cpu, RB_TP_BOOKS);
	WRITE_ONCE(sb->events_before, n);
}

/* The writer is about to enter @sb: iterators see gen change before data (M5). */
static __always_inline void rb_sb_enter(struct rb_cpu_buffer *cpu, struct rb_subbuf *sb)
{
	rb_test_point(cpu, RB_TP_BOOKS);
	WRITE_ONCE(sb->gen, sb->gen + 1);
	smp_wmb();	/* M5, pairs with the iterator's smp_load_acquire() of gen */
}

/* The writer left @sb with @end bytes reserved; the rest is its tail. */
static __always_inline void rb_sb_close(struct rb_cpu_buffer *cpu, struct rb_subbuf *sb,
					unsigned int end, unsigned int cap)
{
	rb_test_point(cpu, RB_TP_BOOKS);
	WRITE_ONCE(sb->data_end, end);
	WRITE_ONCE(sb->tail_bytes, cap - end);
}

static __always_inline unsigned int rb_sb_end(struct rb_cpu_buffer *cpu, struct rb_subbuf *sb)
{
	rb_test_point(cpu, RB_TP_BOOKS);
	return READ_ONCE(sb->data_end);
}

static __always_inline unsigned int rb_sb_tail(struct rb_cpu_buffer *cpu, struct rb_subbuf *sb)
{
	rb_test_point(cpu, RB_TP_BOOKS);
	return READ_ONCE(sb->tail_bytes);
}

/* The stamp record {last_ts, last_end}: see "Time stamps" in the design. */
static __always_inline u64 rb_stamp_ts(struct rb_cpu_buffer *cpu)
{
	rb_test_point(cpu, RB_TP_STAMP);
	return READ_ONCE(cpu->last_ts);
}

static __always_inline u64 rb_stamp_end(struct rb_cpu_buffer *cpu)
{
	rb_test_point(cpu, RB_TP_STAMP);
	return READ_ONCE(cpu->last_end);
}

static __always_inline void rb_stamp_set(struct rb_cpu_buffer *cpu, u64 ts, u64 end)
{
	rb_test_point(cpu, RB_TP_STAMP_SET);
	WRITE_ONCE(cpu->last_ts, ts);
	barrier();	/* a nested reader of last_end == end finds ts stored */
	WRITE_ONCE(cpu->last_end, end);
}

static __always_inline bool rb_abs_mode(struct rb_cpu_buffer *cpu, struct trace_buffer *buffer)
{
	rb_test_point(cpu, RB_TP_MODE);
	return READ_ONCE(buffer->time_stamp_abs);
}

static __always_inline bool rb_overwrite(struct rb_cpu_buffer *cpu, struct trace_buffer *buffer)
{
	rb_test_point(cpu, RB_TP_MODE);
	return READ_ONCE(buffer->flags) & RB_FL_OVERWRITE;
}

static __always_inline struct trace_buffer *rb_owner(struct rb_cpu_buffer *cpu)
{
	rb_test_point(cpu, RB_TP_MODE);
	return READ_ONCE(cpu->buffer);
}

/* M6: recording on again means the rebuilt ring is visible. */
static __always_inline bool rb_recording(struct rb_cpu_buffer *cpu, struct trace_buffer *buffer)
{
	rb_test_point(cpu, RB_TP_MODE);
	return !atomic_read(&buffer->record_disabled) &&
	       !atomic_read_acquire(&cpu->record_disabled);
}

static __always_inline long rb_open_count(struct rb_cpu_buffer *cpu)
{
	rb_test_point(cpu, RB_TP_OPEN);
	return local_read(&cpu->committing);
}

static __always_inline void rb_open_add(struct rb_cpu_buffer *cpu, long n)
{
	rb_test_point(cpu, RB_TP_OPEN);
	local_add(n, &cpu->committing);
	barrier();	/* a nested writer must see the count before our next step */
}

unsigned int rb_event_bytes(unsigned int len);
unsigned int rb_event_size(struct ring_buffer_event *event);
u64 rb_event_stamp(struct rb_page *page, struct ring_buffer_event *event);

/* ring_buffer.c: reader side of the ring */
bool rb_reader_page(struct rb_cpu_buffer *cpu);
void rb_reset_cpu_ring(struct rb_cpu_buffer *cpu);
/* Publish everything up to write word @w; also used by control ops, quiesced. */
void rb_publish(struct rb_cpu_buffer *cpu, u64 w);
void rb_wakeup_work(struct irq_work *work);
bool rb_unread(struct rb_cpu_buffer *cpu);
bool rb_watermark_hit(struct rb_cpu_buffer *cpu, int full);
unsigned long rb_dirty(struct rb_cpu_buffer *cpu);

/* ring_buffer_control.c */
struct rb_cpu_buffer *rb_cpu(struct trace_buffer *buffer, int cpu);
void rb_waiters_init(struct rb_waiters *w, bool per_cpu);

/* ring_buffer_read.c */
struct ring_buffer_event *rb_peek_reader(struct rb_cpu_buffer *cpu, u64 *ts,
					 unsigned long *lost);
void rb_advance_reader(struct rb_cpu_buffer *cpu);

#endif /* _RING_BUFFER_INTERNAL_H */
