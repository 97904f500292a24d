/* SPDX-License-Identifier: GPL-2.0 */
/*
 * What the ring buffer's files share: the sub-buffer and event format, the
 * structures, and the accessors of state that writers and readers share.
 * The files form layers, each using only this header and the layers below:
 *
 *   ring_buffer_internal.h   format, structures, accessors (static inlines)
 *   ring_buffer.c            the ring: write path, publish, the reader's swap
 *   ring_buffer_read.c       consuming reads, iterators, page reads
 *   ring_buffer_persist.c    buffers in a caller's memory that outlive a boot
 *   ring_buffer_control.c    allocation, resize, reset, swap, stats, waiting
 *   ring_buffer_map.c        user-space mappings: the meta page, GET_READER
 *
 * A per-CPU buffer is an array of sub-buffer descriptors indexed by a small
 * id, and a ring of nr slots holding ids in the order the writer fills
 * them. vpos is a slot position counted modulo 2 * nr, so that a full ring
 * and an empty one differ. Three packed words describe the ring:
 *
 *   write:  vpos:22 | id:22 | offset:20   (local64_t, this CPU's writers)
 *   head:   vpos:22 | behind:22           (atomic64_t, writers and reader)
 *   commit: vpos:22 | id:22               (atomic64_t, the outermost writer
 *                                          stores it, everyone reads it)
 *
 * Each changes only as a whole word, so one compare decides every race
 * between a writer, a nested writer and the reader; no flag bits live in
 * pointers. With hv, c and t the vpos of head, commit and write:
 *
 * R1  Every id is the reader's or in exactly one slot. The slot at hv - 1
 *     holds head.behind whatever slots[] says there (rb_slot_id()).
 * R2  Only the reader changes which id sits in a slot, and only at the head.
 *     Every other store to slots[] writes the id R1 already gives it.
 * R3  The head moves only by a cmpxchg of the head word, one slot at a
 *     time: a reader swap or an eviction. The winner owns that sub-buffer.
 * R4  hv - 1 <= c <= t <= hv + nr - 1. Sub-buffers from hv to c hold
 *     committed data (c's own may hold none yet); every one before c is
 *     closed and not empty.
 * R5  Only the outermost writer of a CPU moves its commit point, when it
 *     ends (rb_end_write()): it stands still while a nested writer is open.
 *
 * The memory-ordering pairs, each named where its barrier is:
 *
 * M1  rb_len_set(): bytes, smp_wmb(), length  /  rb_page_len(): length,
 *     smp_rmb(), bytes.
 * M2  rb_commit_set(): release of the commit word  /  rb_commit_word():
 *     acquire; the lengths and events_before published before it are seen.
 * M3  Whoever moves the head settles the slot behind it (stores the id R1
 *     gives it) before its cmpxchg; the acquire in rb_head_word() pairs
 *     with that cmpxchg, so a new head comes with its settled slot.
 * M4  The head's cmpxchg is fully ordered for both the evictor and the
 *     reader; exactly one wins a head value.
 * M5  rb_sb_enter(): gen++, smp_wmb(), then the sub-buffer is written  /
 *     the iterator: acquire of gen, copy, smp_rmb(), gen again.
 * M6  Control: record_disabled is raised before a CPU buffer is rebuilt
 *     or swapped and lowered after, with a release (rb_resume_cpus(),
 *     ring_buffer_swap_cpu()); writers test it with an acquire and
 *     preemption off (rb_recording()). A grace period after the raise no
 *     writer is left; the swap, on its CPU with interrupts off, instead
 *     refuses while one has counted itself open.
 * M7  Wake-ups: a writer publishes, then reads the waiters' flags; a waiter
 *     sets its flag, smp_mb(), checks, and asks for a recheck after a grace
 *     period (rb_wait_cond()).
 * A CPU coming up: trace_rb_cpu_prepare() stores the CPU buffer and its
 * pointer, smp_wmb(), sets the mask bit  /  rb_cpu(): the bit, smp_rmb(),
 * the pointer.
 *
 * Writers of one CPU nest strictly, so between them barrier() is enough.
 * The arguments are in Documentation/trace/ring-buffer-design.rst.
 */
#ifndef _RING_BUFFER_INTERNAL_H
#define _RING_BUFFER_INTERNAL_H

#include <linux/ring_buffer.h>
#include <linux/cpumask.h>
#include <linux/irq_work.h>
#include <linux/spinlock.h>
#include <linux/mutex.h>
#include <linux/wait.h>
#include <linux/rcupdate.h>
#include <linux/jump_label.h>
#include <linux/notifier.h>
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
/* A loss nobody can count (a torn sub-buffer): trace.c prints "[LOST EVENTS]". */
#define RB_LOST_UNKNOWN		((unsigned long)-1)
#define RB_MAX_ORDER		7

static inline bool rb_is_data(struct ring_buffer_event *event)
{
	return event->type_len <= RINGBUF_TYPE_DATA_TYPE_LEN_MAX;
}

/*
 * Bytes an event of @len payload bytes takes, header included. Payloads
 * above RB_SMALL_MAX (all of them where 8-byte alignment is forced) carry
 * their length in array[0]. A 12-byte event becomes 16, so that it can
 * always be rewritten as a time event plus the smallest padding.
 */
static inline unsigned int rb_event_bytes(unsigned int len)
{
	unsigned int bytes;

	len = max(len, 1U);
	if (RB_FORCE_8 || len > RB_SMALL_MAX)
		return ALIGN(len + 2 * RB_EVENT_HDR, RB_ARCH_ALIGN);
	bytes = ALIGN(len + RB_EVENT_HDR, 4);
	return bytes == 12 ? 16 : bytes;
}

/* Bytes @event takes on its sub-buffer; 0 ends a sub-buffer's events. */
static inline unsigned int rb_event_size(struct ring_buffer_event *event)
{
	switch (event->type_len) {
	case RINGBUF_TYPE_PADDING:
		return event->time_delta ? event->array[0] + RB_EVENT_HDR : 0;
	case RINGBUF_TYPE_TIME_EXTEND:
	case RINGBUF_TYPE_TIME_STAMP:
		return RB_LEN_TIME;
	case 0:
		return event->array[0] + RB_EVENT_HDR;
	default:
		return event->type_len * 4 + RB_EVENT_HDR;
	}
}

/* A TIME_STAMP's 59 bits; the bits above come from its sub-buffer's stamp. */
static inline u64 rb_event_stamp(struct rb_page *page, struct ring_buffer_event *event)
{
	u64 low = ((u64)event->array[0] << RB_DELTA_BITS) | event->time_delta;

	return (low & RB_STAMP_MASK) | (READ_ONCE(page->time_stamp) & ~RB_STAMP_MASK);
}

/*
 * The running time after @event on @page, given the time @ts before it.
 * A padding's delta only marks it as having a length: it adds no time.
 */
static inline u64 rb_time_after(struct rb_page *page, struct ring_buffer_event *event, u64 ts)
{
	switch (event->type_len) {
	case RINGBUF_TYPE_PADDING:
		return ts;
	case RINGBUF_TYPE_TIME_EXTEND:
		return ts + (((u64)event->array[0] << RB_DELTA_BITS) | event->time_delta);
	case RINGBUF_TYPE_TIME_STAMP:
		return rb_event_stamp(page, event);
	default:
		return ts + event->time_delta;
	}
}

/* Callers may hand us the TIME_EXTEND or TIME_STAMP in front of an event. */
static inline struct ring_buffer_event *rb_skip_time(struct ring_buffer_event *event)
{
	if (event->type_len >= RINGBUF_TYPE_TIME_EXTEND)
		return (void *)event + RB_LEN_TIME;
	return event;
}

/*
 * The first payload byte of a data event: a type_len 0 event spends
 * array[0] on its length.
 */
static inline void *rb_data_payload(struct ring_buffer_event *event)
{
	return event->type_len ? (void *)&event->array[0] : (void *)&event->array[1];
}

/* The same past the time event an event may carry in front. */
static inline void *rb_event_payload(struct ring_buffer_event *event)
{
	return rb_data_payload(rb_skip_time(event));
}

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
	u64		events_before;	/* events written before this one */
	bool		torn_before;	/* the last boot's torn ones were just before */
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
	struct trace_buffer	*buffer;	/* whose waiters these are, */
	int			cpu;		/* for one CPU or RING_BUFFER_ALL_CPUS */
	/*
	 * The waiters' recheck (M7): recheck_req counts the requests not yet
	 * covered by a grace period that began after them; recheck_covered
	 * is how many the queued one covers.
	 */
	struct rcu_head		recheck;
	atomic_t		recheck_req;
	int			recheck_covered;
};

/*
 * The head of a persistent CPU buffer's chunk of memory (see
 * ring_buffer_persist.c), followed by its slots; the sub-buffers come
 * after, from the next sub-buffer boundary, in id order. It holds no
 * pointer, so the chunk may reappear at any address. Everything in it
 * comes from a kernel that may have crashed: the next boot checks every
 * field before it uses one.
 */
struct rb_range_meta {
	u32	magic;		/* RB_RANGE_MAGIC: this layout */
	u32	meta_size;	/* this header with its slots, in bytes */
	u32	subbuf_size;
	u32	nr;		/* slots; the CPU buffer has nr + 1 sub-buffers */
	u32	cpu;
	u32	pad;
	u64	text_addr;	/* where this kernel's text and data were, */
	u64	data_addr;	/* for the next boot's delta */
	u64	saved_commit;	/* the commit point, kept by rb_publish() */
	u64	dropped;	/* sub-buffers found torn, over all boots */
	u32	slots[];	/* the ring: cpu_buffer->slots */
};

#define RB_RANGE_MAGIC		0x52425031	/* "RBP1" */

struct trace_buffer;

struct rb_cpu_buffer {
	/* This CPU's writers only. */
	local64_t		write;
	local_t			open_count;	/* open writers on this CPU */
	unsigned long		ctx;		/* recursion bits */
	unsigned int		ctx_shift;	/* 5 per ring_buffer_nest_start() */
	struct rb_open		open[RB_MAX_OPEN];
	u64			stamp_ts;	/* the stamp record: the event that */
	u64			stamp_end;	/* ends at stamp_end has stamp_ts */

	/* Written by this CPU's writers, read by everyone. */
	local_t			entries;	/* committed events */
	local_t			overrun;	/* events evicted */
	local_t			commit_overrun;
	local_t			dropped_events;
	local_t			entries_bytes;
	local_t			subbufs_entered;
	local_t			subbufs_evicted;
	atomic64_t		commit;		/* the commit point: rb_pair() */

	/* Shared with the reader. */
	atomic64_t		head;
	u32			*slots;		/* nr ids in ring order */
	struct rb_subbuf	*subbufs;	/* nr + 1 descriptors by id */
	unsigned int		nr;

	/* The reader, under reader_lock. */
	raw_spinlock_t		reader_lock;
	struct lock_class_key	*lock_key;	/* its lockdep class: see rb_lock_quiesced() */
	u32			reader_id;
	unsigned int		read_pos;	/* bytes consumed on the reader's page */
	u64			read_stamp;	/* time of the event at read_pos */
	u64			next_before;	/* events_before of the next, if no loss */
	unsigned long		lost_events;	/* to report with the next read */
	unsigned long		reader_gen;	/* bumped when the reader takes data or a page */
	unsigned long		read_events;	/* events consumed */
	unsigned long		read_bytes;
	unsigned long		subbufs_taken;

	/* Control. */
	struct trace_buffer	*buffer;
	int			cpu;
	atomic_t		record_disabled;
	atomic_t		resize_disabled;
	atomic_t		ctl;		/* RB_CTL_*: who may change this CPU buffer */
	struct rb_page		*spare;		/* a free page for read pages: xchg() */

	/*
	 * User-space mappings (ring_buffer_map.c). mapped, meta and the mmap
	 * ids change under map_lock, buffer->mutex and reader_lock together,
	 * so holding any one of them is enough to read them.
	 */
	struct mutex		map_lock;	/* map, unmap and GET_READER */
	unsigned int		mapped;		/* vmas that map this CPU buffer */
	struct trace_buffer_meta *meta;		/* the meta page, while mapped */
	u32			*map_id;	/* by id: its mmap id */
	u32			*map_subbuf;	/* by mmap id: the id */
	/* subbufs_taken when the meta page last named the reader's sub-buffer */
	unsigned long		map_handed;

	/* In a persistent buffer: its meta, which holds slots[] too. */
	struct rb_range_meta	*range;
};

struct rb_test_hook;

struct trace_buffer {
	unsigned int			flags;
	atomic_t			record_disabled;
	cpumask_var_t			cpumask;
	cpumask_var_t			quiesced;	/* CPUs a control operation stopped */
	struct lock_class_key		*reader_lock_key;
	struct mutex			mutex;		/* serializes control operations */
	struct rb_cpu_buffer		**cpus;
	struct hlist_node		node;
	u64				(*clock)(void);
	struct rb_waiters		waiters;	/* for data on any CPU */
	/*
	 * By CPU: a waiter for one CPU waits on its buffer's queue for that
	 * CPU, not on the CPU buffer, which a snapshot swap can move to
	 * another buffer under a poll() or epoll that queued there once.
	 */
	struct rb_waiters		*cpu_waiters;
	bool				time_stamp_abs;
	unsigned int			subbuf_order;
	unsigned int			subbuf_size;	/* bytes, header included */
	unsigned int			max_data_size;
	/* A persistent buffer (ring_buffer_persist.c): the memory it lives in. */
	unsigned long			range_start;	/* sub-buffer aligned */
	unsigned long			range_chunk;	/* bytes per possible CPU */
	unsigned int			range_nr;	/* slots per CPU */
	long				text_delta;	/* this boot's addresses less the */
	long				data_delta;	/* last boot's */
	struct notifier_block		flush_nb;
#if IS_ENABLED(CONFIG_RING_BUFFER_TEST_POINTS)
	struct rb_test_hook		*test_hook;
#endif
};

#define RB_BUFFER_OFF		BIT(20)

/*
 * A control operation (under buffer->mutex), the snapshot swap (any
 * context, interrupts off) and a first mapping (ring_buffer_map.c) each
 * claim a CPU buffer with one cmpxchg from RB_CTL_IDLE, so none can act on
 * a CPU buffer another is moving: in particular the swap either sees a
 * mapping and refuses, or has moved the CPU buffer before it is mapped.
 */
enum { RB_CTL_IDLE, RB_CTL_QUIESCED, RB_CTL_SWAPPING, RB_CTL_MAPPING };

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
	unsigned long		reader_gen;	/* cpu_buffer->reader_gen when started */
	u64			read_stamp;	/* time before the event at offset */
	u64			event_ts;	/* time of the copied event */
	bool			dropped;
	bool			have_event;	/* event holds the item at offset */
	bool			peeked;		/* ...and a peek returned it */
	unsigned int		event_size;
	struct ring_buffer_event *event;	/* a copy, event_size bytes */
};

/*
 * An impossible state, which this code relies on and cannot re-check
 * cheaply everywhere: warn once and stop recording on that CPU buffer for
 * good, rather than write through a broken invariant. Evaluates to @cond.
 */
#define RB_WARN_STOP(cpu_buffer, cond)	rb_warn_stop(cpu_buffer, unlikely(cond), #cond)

/* Out of line and cold: the paths that test an invariant pay one branch. */
static noinline __cold __maybe_unused void rb_stop_broken(struct rb_cpu_buffer *cpu_buffer,
							  const char *what)
{
	atomic_inc(&cpu_buffer->record_disabled);
	WARN_ONCE(1, "ring buffer: CPU %d stopped: %s\n", cpu_buffer->cpu, what);
}

static __always_inline bool rb_warn_stop(struct rb_cpu_buffer *cpu_buffer, bool broken,
					 const char *what)
{
	if (broken)
		rb_stop_broken(cpu_buffer, what);
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

/* The largest payload a reservation accepts: a TIME_STAMP goes first in @abs mode. */
static inline unsigned long rb_max_payload(struct trace_buffer *buffer, bool abs)
{
	return abs ? buffer->max_data_size - RB_LEN_TIME : buffer->max_data_size;
}

/* The per-CPU buffer of @cpu, or NULL if @cpu has none. */
static inline struct rb_cpu_buffer *rb_cpu(struct trace_buffer *buffer, int cpu)
{
	if (cpu < 0 || cpu >= nr_cpu_ids || !cpumask_test_cpu(cpu, buffer->cpumask))
		return NULL;
	/*
	 * Pairs with trace_rb_cpu_prepare()'s smp_wmb(): with the bit seen, the
	 * pointer and the CPU buffer it points to are initialized. The bit
	 * test is a control dependency only, which orders no later load
	 * (tests/litmus/Mcpu.litmus).
	 */
	smp_rmb();
	return READ_ONCE(buffer->cpus[cpu]);
}

static inline unsigned int rb_capacity(struct trace_buffer *buffer)
{
	return buffer->subbuf_size - RB_PAGE_HDR;
}

static inline unsigned int rb_vpos_next(struct rb_cpu_buffer *cpu_buffer, unsigned int vpos)
{
	return vpos + 1 == 2 * cpu_buffer->nr ? 0 : vpos + 1;
}

static inline unsigned int rb_vpos_prev(struct rb_cpu_buffer *cpu_buffer, unsigned int vpos)
{
	return vpos ? vpos - 1 : 2 * cpu_buffer->nr - 1;
}

/* Distance from @from forward to @to, in slots, modulo 2 * nr. */
static inline unsigned int rb_vpos_dist(struct rb_cpu_buffer *cpu_buffer, unsigned int from,
					unsigned int to)
{
	return to >= from ? to - from : to + 2 * cpu_buffer->nr - from;
}

/* R1: is the slot of @vpos the one behind the head @h, whose id @h carries? */
static inline bool rb_behind_head(struct rb_cpu_buffer *cpu_buffer, unsigned int vpos, u64 h)
{
	return vpos % cpu_buffer->nr ==
	       rb_vpos_prev(cpu_buffer, rb_pair_vpos(h)) % cpu_buffer->nr;
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
	RB_TP_QUIESCED,		/* a control operation reads a CPU buffer's claim */
	RB_TP_NR,
};

typedef void (*rb_test_fn)(struct trace_buffer *buffer, int cpu,
			   enum rb_test_point pt, void *data);

#if IS_ENABLED(CONFIG_RING_BUFFER_TEST_POINTS)
struct rb_test_hook {
	rb_test_fn	fn;
	void		*data;
};

void rb_set_test_hook(struct trace_buffer *buffer, rb_test_fn fn, void *data);
void rb_test_hooks_enable(bool on);
int rb_check_invariants(struct trace_buffer *buffer, int cpu);

/* Off (a no-op jump) unless a white-box suite is running. */
DECLARE_STATIC_KEY_FALSE(rb_test_hooks);

static __always_inline void rb_test_point(struct rb_cpu_buffer *cpu_buffer,
					  enum rb_test_point pt)
{
	struct rb_test_hook *hook;

	if (!static_branch_unlikely(&rb_test_hooks))
		return;
	hook = READ_ONCE(cpu_buffer->buffer->test_hook);
	if (hook)
		hook->fn(cpu_buffer->buffer, cpu_buffer->cpu, pt, hook->data);
}
#else
static __always_inline void rb_test_point(struct rb_cpu_buffer *cpu_buffer,
					  enum rb_test_point pt)
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

static __always_inline u64 rb_write_word(struct rb_cpu_buffer *cpu_buffer)
{
	rb_test_point(cpu_buffer, RB_TP_WRITE);
	return local64_read(&cpu_buffer->write);
}

static __always_inline bool rb_write_cas(struct rb_cpu_buffer *cpu_buffer, u64 old, u64 new)
{
	rb_test_point(cpu_buffer, RB_TP_WRITE_CAS);
	return local64_cmpxchg(&cpu_buffer->write, old, new) == old;
}

/* M3, M4: the acquire pairs with the fully ordered rb_head_cas(). */
static __always_inline u64 rb_head_word(struct rb_cpu_buffer *cpu_buffer)
{
	rb_test_point(cpu_buffer, RB_TP_HEAD);
	return atomic64_read_acquire(&cpu_buffer->head);
}

static __always_inline bool rb_head_cas(struct rb_cpu_buffer *cpu_buffer, u64 old, u64 new)
{
	rb_test_point(cpu_buffer, RB_TP_HEAD_CAS);
	return atomic64_cmpxchg(&cpu_buffer->head, old, new) == old;
}

/* What slots[] says at @vpos, without R1: see rb_slot_id(). */
static __always_inline u32 rb_slot(struct rb_cpu_buffer *cpu_buffer, unsigned int vpos)
{
	rb_test_point(cpu_buffer, RB_TP_SLOT);
	return READ_ONCE(cpu_buffer->slots[vpos % cpu_buffer->nr]);
}

static __always_inline void rb_slot_set(struct rb_cpu_buffer *cpu_buffer, unsigned int vpos,
					u32 id)
{
	rb_test_point(cpu_buffer, RB_TP_SLOT_SET);
	WRITE_ONCE(cpu_buffer->slots[vpos % cpu_buffer->nr], id);
}

/* The id in the slot at @vpos, with R1 applied. */
static inline u32 rb_slot_id(struct rb_cpu_buffer *cpu_buffer, unsigned int vpos)
{
	u64 h = rb_head_word(cpu_buffer);

	if (rb_behind_head(cpu_buffer, vpos, h))
		return rb_pair_id(h);
	return rb_slot(cpu_buffer, vpos);
}

/*
 * The id at the head @h. The head's own slot is never the one behind it
 * (nr >= 2), so there slots[] is right as it stands (R1).
 */
static __always_inline u32 rb_head_id(struct rb_cpu_buffer *cpu_buffer, u64 h)
{
	return rb_slot(cpu_buffer, rb_pair_vpos(h));
}

/*
 * The commit point is one word, {vpos, id}. Readers on other CPUs decide
 * what is closed from its id; this CPU's nested writers decide what they
 * may evict from its vpos. Both must come from the same store: with two
 * stores, a nested writer between them either evicted a sub-buffer that
 * readers still took for the commit one (vpos first), or, after a reader
 * moved the head meanwhile, read a stale vpos that wrapped round to just
 * behind the tail and evicted unpublished events (id first).
 */
static __always_inline u64 rb_commit_word(struct rb_cpu_buffer *cpu_buffer)
{
	rb_test_point(cpu_buffer, RB_TP_COMMIT);
	return atomic64_read_acquire(&cpu_buffer->commit);	/* M2, pairs with rb_commit_set() */
}

/* The sub-buffer holding the commit point. */
static __always_inline u32 rb_commit_id(struct rb_cpu_buffer *cpu_buffer)
{
	return rb_pair_id(rb_commit_word(cpu_buffer));
}

/* Move the commit point to slot @vpos, sub-buffer @id: one store. */
static __always_inline void rb_commit_set(struct rb_cpu_buffer *cpu_buffer, unsigned int vpos,
					  u32 id)
{
	rb_test_point(cpu_buffer, RB_TP_COMMIT_SET);
	/* M2, pairs with rb_commit_word() */
	atomic64_set_release(&cpu_buffer->commit, rb_pair(vpos, id));
}

/* Bytes of committed data on a page, the missed-events bits masked. */
static inline unsigned int rb_page_len(struct rb_page *page)
{
	unsigned long commit = local_read(&page->commit);

	smp_rmb();	/* M1, pairs with rb_len_set() */
	return commit & ~RB_MISSED_MASK;
}

static __always_inline unsigned int rb_len(struct rb_cpu_buffer *cpu_buffer, struct rb_page *page)
{
	rb_test_point(cpu_buffer, RB_TP_LEN);
	return rb_page_len(page);
}

/* Publish @len bytes of @page. */
static __always_inline void rb_len_set(struct rb_cpu_buffer *cpu_buffer, struct rb_page *page,
				       unsigned int len)
{
	rb_test_point(cpu_buffer, RB_TP_LEN_SET);
	smp_wmb();	/* M1, pairs with rb_page_len() */
	local_set(&page->commit, len);
}

/*
 * The committed length of sub-buffer @id, and in *@closed whether that
 * length is final. The commit point is read first (M2): once it names
 * another sub-buffer, the writer has left @id and published all of it.
 */
static __always_inline unsigned int rb_committed(struct rb_cpu_buffer *cpu_buffer, u32 id,
						 bool *closed)
{
	*closed = rb_commit_id(cpu_buffer) != id;
	return rb_len(cpu_buffer, cpu_buffer->subbufs[id].page);
}

static __always_inline long rb_sb_events(struct rb_cpu_buffer *cpu_buffer, struct rb_subbuf *sb)
{
	rb_test_point(cpu_buffer, RB_TP_BOOKS);
	return local_read(&sb->events);
}

static __always_inline void rb_sb_events_add(struct rb_cpu_buffer *cpu_buffer,
					     struct rb_subbuf *sb, long n)
{
	rb_test_point(cpu_buffer, RB_TP_BOOKS);
	local_add(n, &sb->events);
}

static __always_inline u64 rb_sb_before(struct rb_cpu_buffer *cpu_buffer,
					struct rb_subbuf *sb)
{
	rb_test_point(cpu_buffer, RB_TP_BOOKS);
	return READ_ONCE(sb->events_before);
}

static __always_inline void rb_sb_before_set(struct rb_cpu_buffer *cpu_buffer,
					     struct rb_subbuf *sb, u64 n)
{
	rb_test_point(cpu_buffer, RB_TP_BOOKS);
	WRITE_ONCE(sb->events_before, n);
	/* Its books start afresh: a gap the last boot left is behind it now. */
	WRITE_ONCE(sb->torn_before, false);
}

/* Were the last boot's torn sub-buffers right before @sb? */
static __always_inline bool rb_sb_torn(struct rb_cpu_buffer *cpu_buffer, struct rb_subbuf *sb)
{
	rb_test_point(cpu_buffer, RB_TP_BOOKS);
	return READ_ONCE(sb->torn_before);
}

/* The writer is about to enter @sb: iterators must see gen change first. */
static __always_inline void rb_sb_enter(struct rb_cpu_buffer *cpu_buffer, struct rb_subbuf *sb)
{
	rb_test_point(cpu_buffer, RB_TP_BOOKS);
	WRITE_ONCE(sb->gen, sb->gen + 1);
	smp_wmb();	/* M5, pairs with rb_iter_lapped() */
}

/* The writer left @sb with @end bytes reserved; the rest is its tail. */
static __always_inline void rb_sb_close(struct rb_cpu_buffer *cpu_buffer, struct rb_subbuf *sb,
					unsigned int end, unsigned int cap)
{
	rb_test_point(cpu_buffer, RB_TP_BOOKS);
	WRITE_ONCE(sb->data_end, end);
	WRITE_ONCE(sb->tail_bytes, cap - end);
}

static __always_inline unsigned int rb_sb_end(struct rb_cpu_buffer *cpu_buffer,
					      struct rb_subbuf *sb)
{
	rb_test_point(cpu_buffer, RB_TP_BOOKS);
	return READ_ONCE(sb->data_end);
}

static __always_inline unsigned int rb_sb_tail(struct rb_cpu_buffer *cpu_buffer,
					       struct rb_subbuf *sb)
{
	rb_test_point(cpu_buffer, RB_TP_BOOKS);
	return READ_ONCE(sb->tail_bytes);
}

/* The stamp record {stamp_ts, stamp_end}: see "Time stamps" in the design. */
static __always_inline u64 rb_stamp_ts(struct rb_cpu_buffer *cpu_buffer)
{
	rb_test_point(cpu_buffer, RB_TP_STAMP);
	return READ_ONCE(cpu_buffer->stamp_ts);
}

static __always_inline u64 rb_stamp_end(struct rb_cpu_buffer *cpu_buffer)
{
	rb_test_point(cpu_buffer, RB_TP_STAMP);
	return READ_ONCE(cpu_buffer->stamp_end);
}

static __always_inline void rb_stamp_set(struct rb_cpu_buffer *cpu_buffer, u64 ts, u64 end)
{
	rb_test_point(cpu_buffer, RB_TP_STAMP_SET);
	WRITE_ONCE(cpu_buffer->stamp_ts, ts);
	barrier();	/* a nested reader of stamp_end == end finds ts stored */
	WRITE_ONCE(cpu_buffer->stamp_end, end);
}

static __always_inline bool rb_abs_mode(struct rb_cpu_buffer *cpu_buffer,
					struct trace_buffer *buffer)
{
	rb_test_point(cpu_buffer, RB_TP_MODE);
	return READ_ONCE(buffer->time_stamp_abs);
}

static __always_inline bool rb_overwrite(struct rb_cpu_buffer *cpu_buffer,
					 struct trace_buffer *buffer)
{
	rb_test_point(cpu_buffer, RB_TP_MODE);
	return READ_ONCE(buffer->flags) & RB_FL_OVERWRITE;
}

static __always_inline struct trace_buffer *rb_owner(struct rb_cpu_buffer *cpu_buffer)
{
	rb_test_point(cpu_buffer, RB_TP_MODE);
	return READ_ONCE(cpu_buffer->buffer);
}

/* Recording on again means the rebuilt ring is visible. */
static __always_inline bool rb_recording(struct rb_cpu_buffer *cpu_buffer,
					 struct trace_buffer *buffer)
{
	rb_test_point(cpu_buffer, RB_TP_MODE);
	/* M6, pairs with rb_resume_cpus() */
	return !atomic_read(&buffer->record_disabled) &&
	       !atomic_read_acquire(&cpu_buffer->record_disabled);
}

static __always_inline long rb_open_count(struct rb_cpu_buffer *cpu_buffer)
{
	rb_test_point(cpu_buffer, RB_TP_OPEN);
	return local_read(&cpu_buffer->open_count);
}

/* The record of the innermost open reservation on this CPU buffer. */
static __always_inline struct rb_open *rb_open_top(struct rb_cpu_buffer *cpu_buffer)
{
	return &cpu_buffer->open[rb_open_count(cpu_buffer) - 1];
}

static __always_inline void rb_open_add(struct rb_cpu_buffer *cpu_buffer, long n)
{
	rb_test_point(cpu_buffer, RB_TP_OPEN);
	local_add(n, &cpu_buffer->open_count);
	barrier();	/* a nested writer must see the count before our next step */
}

/* Claim @cpu_buffer for @state (RB_CTL_*): false if another claim holds it. */
static inline bool rb_ctl_claim(struct rb_cpu_buffer *cpu_buffer, int state)
{
	rb_test_point(cpu_buffer, RB_TP_CONTROL);
	return atomic_cmpxchg(&cpu_buffer->ctl, RB_CTL_IDLE, state) == RB_CTL_IDLE;
}

/* Give a claim back: what it changed is visible to the next claimer. */
static inline void rb_ctl_release(struct rb_cpu_buffer *cpu_buffer)
{
	atomic_set_release(&cpu_buffer->ctl, RB_CTL_IDLE);	/* pairs with rb_ctl_claim() */
}

/* Empty @sb and its page, for a CPU buffer nobody else can touch. */
static inline void rb_sb_clear(struct rb_subbuf *sb)
{
	struct rb_page *page = sb->page;	/* once: the stores could alias it */

	page->time_stamp = 0;
	local_set(&page->commit, 0);
	local_set(&sb->events, 0);
	sb->data_end = 0;
	sb->tail_bytes = 0;
	sb->events_before = 0;
	sb->torn_before = false;
}

/* How often readers may spoil a resize's plan before one is made under the lock. */
#define RB_PLAN_TRIES		4

/* ---- defined in ring_buffer.c, for the layers above ---- */

/* Publish everything up to write word @w; also used by control ops, quiesced. */
void rb_publish(struct rb_cpu_buffer *cpu_buffer, u64 w);
void rb_reset_cpu_state(struct rb_cpu_buffer *cpu_buffer, u32 reader);
void rb_reset_cpu_ring(struct rb_cpu_buffer *cpu_buffer, u32 reader);
bool rb_reader_refill(struct rb_cpu_buffer *cpu_buffer);
bool rb_unread(struct rb_cpu_buffer *cpu_buffer, u32 *id);
bool rb_watermark_hit(struct rb_cpu_buffer *cpu_buffer, int full);
unsigned long rb_dirty(struct rb_cpu_buffer *cpu_buffer);

/* ---- defined in ring_buffer_read.c ---- */

void rb_reader_consume(struct rb_cpu_buffer *cpu_buffer, unsigned int end);

/* ---- defined in ring_buffer_persist.c ---- */

int rb_range_layout(struct trace_buffer *buffer, unsigned long start, unsigned long size);
int rb_range_attach(struct rb_cpu_buffer *cpu_buffer);

/*
 * The pages of a mapped or a persistent CPU buffer stay where they are:
 * user space sees them, or the next boot must find them.
 */
static inline bool rb_pages_pinned(struct rb_cpu_buffer *cpu_buffer)
{
	return cpu_buffer->mapped || cpu_buffer->range;
}

/*
 * Read pages and the sub-buffers a swap hands out come from the page
 * allocator with __GFP_COMP, so such a page knows its own order (0 for a
 * single page): a read page kept across an order change is told apart and
 * freed whole. A persistent buffer's sub-buffers are not such pages; they
 * never leave the ring (rb_pages_pinned()).
 */
static inline unsigned int rb_data_page_order(struct rb_page *page)
{
	return compound_order(virt_to_page(page));
}

static inline void rb_free_data_page(struct rb_page *page)
{
	free_pages((unsigned long)page, rb_data_page_order(page));
}

/* ---- defined in ring_buffer_control.c ---- */

void rb_meta_update(struct rb_cpu_buffer *cpu_buffer);

#endif /* _RING_BUFFER_INTERNAL_H */
