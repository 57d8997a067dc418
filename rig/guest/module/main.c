// SPDX-License-Identifier: GPL-2.0
/*
 * rigprintk: the printk-rig's in-guest test module.
 *
 * It drives printk from inside the guest the way the scenarios need it:
 * per-CPU floods of tagged records, NMIs that print (or panic), irq_works
 * that print in hard irq context, a CPU that spins with interrupts off,
 * panics and oopses in task, irq and NMI context, a test console (legacy,
 * registered early or late: it receives the history and counts the writes
 * made in a flooding caller's context), a second nbcon console on the
 * rig's second UART (uart2_console.c, early or late), markers on the instrumented UART
 * around the tagged printk() calls, and the duration of every tagged
 * printk() call of the floods, irq_works and NMIs. It builds and runs on vanilla 6.12 and on
 * the patched kernel alike.
 *
 * Configuration comes from module parameters, given on the kernel command
 * line as rigprintk.NAME=VALUE (rig-init passes them to finit_module()).
 * Actions start when "1" is written to /sys/module/rigprintk/parameters/run;
 * the write returns when they are done. Writing "1" to .../flush waits until
 * every console has printed everything (rig-init does it before the run
 * ends, since on the patched kernel the consoles print from threads).
 *
 * Every message it prints carries a tag the rig parses:
 *   rigprintk: scen=S cpu=C ctx=X seq=N lvl=L[ t=NS][ pad=xxx...]
 * where seq counts per CPU and per context (task, irq, nmi) from 0 and t
 * (with stamp=1) is local_clock() read just before the printk() call.
 * At the end of a run it prints one summary line per kind of call (flood,
 * irq, nmi):
 *   rigprintk: stat scen=S kind=K calls=N p50_ns=.. p99_ns=.. p999_ns=.. max_ns=..
 * and, when the test console is registered,
 *   rigprintk: console scen=S writes=N by_flood_callers=M
 *
 * Markers (32-bit writes to the UART's marker port) are
 *   RIG_MARK_RUN_BEGIN, RIG_MARK_RUN_END, RIG_MARK_SPIN_BEGIN/END and RIG_MARK_SELF_NMI
 *   (written by the spinning CPU with interrupts off), RIG_MARK_DEADLINE (the
 *   end of the quiet wait after the floods, liveness_ms), RIG_MARK_NMI_ENTER/EXIT
 *   (nmi_markers: around every local NMI, the kernel's handlers included),
 *   and (phase << 28 | ctx << 24 | seq) with
 *   phase 1 before and 2 after a tagged printk() call, ctx 0 task, 1 irq,
 *   2 nmi; the vCPU is in the log record itself.
 */
#include <linux/atomic.h>
#include <linux/completion.h>
#include <linux/console.h>
#include <linux/cpumask.h>
#include <linux/debugfs.h>
#include <linux/delay.h>
#include <linux/io.h>
#include <linux/irq_work.h>
#include <linux/kdebug.h>
#include <linux/kmsg_dump.h>
#include <linux/kthread.h>
#include <linux/module.h>
#include <linux/moduleparam.h>
#include <linux/nmi.h>
#include <linux/percpu.h>
#include <linux/printk.h>
#include <linux/sched/clock.h>
#include <linux/slab.h>
#include <linux/smp.h>
#include <linux/sort.h>
#include <linux/sysrq.h>
#include <linux/vmalloc.h>
#include <asm/apic.h>
#include <asm/nmi.h>

#include "protocol.h"
#include "rigprintk.h"


enum rig_ctx { CTX_TASK, CTX_IRQ, CTX_NMI, CTX_NR };
static const char * const ctx_names[CTX_NR] = { "task", "irq", "nmi" };

/* ---- parameters ---------------------------------------------------- */

static char *scen = "none";
module_param(scen, charp, 0644);
MODULE_PARM_DESC(scen, "scenario name put into every tag");

static unsigned int flood_count;
module_param(flood_count, uint, 0644);
MODULE_PARM_DESC(flood_count, "records each flooding CPU prints (0: no flood)");

static unsigned long flood_cpus = ~0UL;
module_param(flood_cpus, ulong, 0644);
MODULE_PARM_DESC(flood_cpus, "mask of CPUs that flood (default: all online)");

static int flood_level = 6;
module_param(flood_level, int, 0644);
MODULE_PARM_DESC(flood_level, "loglevel of flood records (default 6, INFO)");

static unsigned int flood_len;
module_param(flood_len, uint, 0644);
MODULE_PARM_DESC(flood_len, "padding bytes added to each flood record");

static bool flood_irqsoff;
module_param(flood_irqsoff, bool, 0644);
MODULE_PARM_DESC(flood_irqsoff, "flood records are printed with interrupts disabled around each call");

static unsigned int flood_delay_us;
module_param(flood_delay_us, uint, 0644);
MODULE_PARM_DESC(flood_delay_us, "delay between two records of one CPU");

static unsigned int flood_emerg_every;
module_param(flood_emerg_every, uint, 0644);
MODULE_PARM_DESC(flood_emerg_every, "every Nth flood record at flood_emerg_level (0: none)");

static int flood_emerg_level = 3;
module_param(flood_emerg_level, int, 0644);
MODULE_PARM_DESC(flood_emerg_level, "loglevel of those records (default 3, ERR)");

static bool flood_wait = true;
module_param(flood_wait, bool, 0644);
MODULE_PARM_DESC(flood_wait, "run waits for the floods before it sends NMIs, spins or crashes");

static unsigned int flood_backlog_ms;
module_param(flood_backlog_ms, uint, 0644);
MODULE_PARM_DESC(flood_backlog_ms, "with flood_wait=0: wait this long after the floods start");

static unsigned long nmi_cpus;
module_param(nmi_cpus, ulong, 0644);
MODULE_PARM_DESC(nmi_cpus, "mask of CPUs to send an NMI IPI to");

static unsigned int nmi_count = 1;
module_param(nmi_count, uint, 0644);
MODULE_PARM_DESC(nmi_count, "tagged messages the NMI handler prints per NMI");

static int nmi_level = 3;
module_param(nmi_level, int, 0644);
MODULE_PARM_DESC(nmi_level, "loglevel of NMI messages (default 3, ERR)");

static bool nmi_then_panic;
module_param_named(nmi_panic, nmi_then_panic, bool, 0644);
MODULE_PARM_DESC(nmi_panic, "the NMI handlers (IPI and unknown) panic after printing");

static bool unknown_nmi;
module_param(unknown_nmi, bool, 0644);
MODULE_PARM_DESC(unknown_nmi, "print tagged messages for NMIs nobody claims (QMP inject-nmi, UART trigger)");

static unsigned long unknown_nmi_cpus = ~0UL;
module_param(unknown_nmi_cpus, ulong, 0644);
MODULE_PARM_DESC(unknown_nmi_cpus, "CPUs on which those NMIs print (others only claim them)");

static unsigned long irq_cpus;
module_param(irq_cpus, ulong, 0644);
MODULE_PARM_DESC(irq_cpus, "mask of CPUs on which an irq_work prints tagged messages in hard irq context");

static int irq_level = 6;
module_param(irq_level, int, 0644);
MODULE_PARM_DESC(irq_level, "loglevel of those messages (default 6, INFO); nmi_count of them per CPU");

static int printer_cpu = -1;
module_param(printer_cpu, int, 0644);
MODULE_PARM_DESC(printer_cpu, "pin the consoles' printer threads to this CPU during the run (-1: no)");

static int spin_cpu = -1;
module_param(spin_cpu, int, 0644);
MODULE_PARM_DESC(spin_cpu, "CPU that spins with interrupts off during the run (-1: none)");

static unsigned int spin_ms;
module_param(spin_ms, uint, 0644);
MODULE_PARM_DESC(spin_ms, "how long it spins at least (on, while an NMI sent to it is pending)");

static unsigned int spin_nmi_at_ms;
module_param(spin_nmi_at_ms, uint, 0644);
MODULE_PARM_DESC(spin_nmi_at_ms, "the spinning CPU sends itself an NMI this long into the spin (0: no)");

static char *crash = "none";
module_param(crash, charp, 0644);
MODULE_PARM_DESC(crash, "none, panic-task, panic-irq, panic-nmi, oops-task, oops-irq, oops-nmi");

static int crash_cpu = -1;
module_param(crash_cpu, int, 0644);
MODULE_PARM_DESC(crash_cpu, "CPU for the NMI crash (-1: the last online CPU)");

static bool late_console;
module_param(late_console, bool, 0644);
MODULE_PARM_DESC(late_console, "register a test console at the end of the run (it receives the history)");

static bool test_console_early;
module_param_named(early_console, test_console_early, bool, 0644);
MODULE_PARM_DESC(early_console, "register the test console at the start of the run (it prints along)");

static char *second_console = "none";
module_param(second_console, charp, 0644);
MODULE_PARM_DESC(second_console, "none, early (prints along from the run's start) or late (at the run's end, with the history): the nbcon console on the second UART");

static bool markers;
module_param(markers, bool, 0644);
MODULE_PARM_DESC(markers, "write markers to the UART before and after each tagged printk()");

static bool nmi_markers;
module_param(nmi_markers, bool, 0644);
MODULE_PARM_DESC(nmi_markers, "write markers to the UART when a local NMI enters and leaves its handlers");

static bool stamp;
module_param(stamp, bool, 0644);
MODULE_PARM_DESC(stamp, "put the time of the call (local_clock() ns) into each tag");

static int sysrq_cpu = -1;
module_param(sysrq_cpu, int, 0644);
MODULE_PARM_DESC(sysrq_cpu, "after the floods started, this CPU handles sysrq_key (-1: none)");

static char *sysrq_key = "l";
module_param(sysrq_key, charp, 0644);
MODULE_PARM_DESC(sysrq_key, "the sysrq key it handles (default l: backtrace of all CPUs)");

static bool abandon_emergency;
module_param(abandon_emergency, bool, 0644);
MODULE_PARM_DESC(abandon_emergency, "at load: before the floods, a thread dies inside the emergency section of its oops");

static int abandon_cpu = -1;
module_param(abandon_cpu, int, 0644);
MODULE_PARM_DESC(abandon_cpu, "CPU of that thread (-1: the last online CPU)");

static unsigned int liveness_ms;
module_param(liveness_ms, uint, 0644);
MODULE_PARM_DESC(liveness_ms, "after the floods, print nothing for this long, then write MARK_DEADLINE (0: no wait)");

static unsigned int single_level = 8;
module_param(single_level, uint, 0644);
MODULE_PARM_DESC(single_level, "print one tagged record at this level at run (8: none)");

static unsigned int single_len;
module_param(single_len, uint, 0644);
MODULE_PARM_DESC(single_len, "padding bytes added to that record");

static int single_cpu = -1;
module_param(single_cpu, int, 0644);
MODULE_PARM_DESC(single_cpu, "CPU that prints it (-1: wherever the run is)");

static unsigned int migrate_count;
module_param(migrate_count, uint, 0644);
MODULE_PARM_DESC(migrate_count, "tagged records whose caller is moved to the other CPU "
		 "inside printk() (needs printk_delay)");

static unsigned int migrate_after_ms = 5;
module_param(migrate_after_ms, uint, 0644);
MODULE_PARM_DESC(migrate_after_ms, "how long into the printk() call the caller is moved");

static unsigned int cont_count;
module_param(cont_count, uint, 0644);
MODULE_PARM_DESC(cont_count, "at run, print this many tagged records in three pieces with pr_cont()");

static int cont_level = 3;
module_param(cont_level, int, 0644);
MODULE_PARM_DESC(cont_level, "loglevel of those records (default 3, ERR)");

static bool flush_first;
module_param(flush_first, bool, 0644);
MODULE_PARM_DESC(flush_first, "wait until the consoles printed everything before the run's actions");

static unsigned int flood_start_ms;
module_param(flood_start_ms, uint, 0644);
MODULE_PARM_DESC(flood_start_ms, "each flooding CPU waits this long before its first record");

/* Is @cpu in the CPU mask parameter @mask? */
static bool cpu_chosen(unsigned int cpu, unsigned long mask)
{
	return cpu < BITS_PER_LONG && (mask & BIT(cpu));
}

/* ---- tagged printing, markers and timing ----------------------------- */

static DEFINE_PER_CPU(unsigned int [CTX_NR], tag_seq);

struct timing {
	u32 *ns;
	unsigned int max_calls;
	atomic_t calls;
};

static struct timing task_timing, irq_timing, nmi_timing;
static char pad[1024];

/* Markers of the run and the spin are always written; per-call ones on request. */
static void mark_always(u32 value)
{
	outl(value, RIG_MARKER_PORT);
	uart2_console_mark(value);
}

static void mark(u32 value)
{
	if (markers)
		mark_always(value);
}

static enum rig_ctx current_ctx(void)
{
	if (in_nmi())
		return CTX_NMI;
	if (in_hardirq() || in_serving_softirq())
		return CTX_IRQ;
	return CTX_TASK;
}

static void timing_add(struct timing *t, u64 ns)
{
	unsigned int i = atomic_inc_return(&t->calls) - 1;

	if (t->ns && i < t->max_calls)
		t->ns[i] = min_t(u64, ns, U32_MAX);
}

/* One tagged printk() call at @level with @padlen bytes of padding. */
/* What identifies one tagged printk() call: see the tag format above. */
struct rig_tag {
	enum rig_ctx ctx;
	unsigned int cpu;
	unsigned int seq;
	u32 marker;		/* the low 28 bits of its markers */
};

/* The next tag of this context on @cpu, the CPU the caller stays on. */
static struct rig_tag next_tag(unsigned int cpu)
{
	struct rig_tag t = { .ctx = current_ctx(), .cpu = cpu };

	t.seq = this_cpu_inc_return(tag_seq[t.ctx]) - 1;
	t.marker = (t.ctx << 24) | (t.seq & 0xffffff);
	return t;
}

static unsigned int pad_len(unsigned int padlen)
{
	return min_t(unsigned int, padlen, sizeof(pad) - 1);
}

static void tagged_printk(int level, unsigned int padlen, struct timing *t)
{
	/*
	 * Raw: the callers are pinned to their CPU (the flood threads, S14's
	 * caller, whose move inside printk() comes after this read on
	 * purpose) or run in interrupt or NMI context; a task that is not
	 * may be moved, and its tag then names the CPU it started on.
	 * DEBUG_PREEMPT reports smp_processor_id() in such a task.
	 */
	struct rig_tag tag = next_tag(raw_smp_processor_id());
	char when[32] = "";
	u64 t0, t1;

	padlen = pad_len(padlen);
	mark(RIG_MARK_BEFORE << 28 | tag.marker);
	t0 = local_clock();
	if (stamp)
		snprintf(when, sizeof(when), " t=%llu", t0);
	printk("%c%crigprintk: scen=%s cpu=%u ctx=%s seq=%u lvl=%d%s%s%.*s\n",
	       KERN_SOH_ASCII, '0' + level, scen, tag.cpu, ctx_names[tag.ctx], tag.seq,
	       level, when, padlen ? " pad=" : "", padlen, pad);
	t1 = local_clock();
	mark(RIG_MARK_AFTER << 28 | tag.marker);
	if (t)
		timing_add(t, t1 - t0);
}

/*
 * A tagged record built in three pieces, the way pr_cont() callers build
 * theirs: the whole record parses as a tag, a piece alone does not. On one
 * CPU throughout, so that the record's CPU is the tag's.
 */
static void cont_printk(int level, unsigned int padlen)
{
	struct rig_tag tag = next_tag(get_cpu());

	padlen = pad_len(padlen);
	printk("%c%crigprintk: scen=%s cpu=%u ctx=%s",
	       KERN_SOH_ASCII, '0' + level, scen, tag.cpu, ctx_names[tag.ctx]);
	pr_cont(" seq=%u lvl=%d", tag.seq, level);
	/* The call that completes the record is the one marked. */
	mark(RIG_MARK_BEFORE << 28 | tag.marker);
	pr_cont("%s%.*s\n", padlen ? " pad=" : "", padlen, pad);
	mark(RIG_MARK_AFTER << 28 | tag.marker);
	put_cpu();
}

/*
 * Records whose caller changes CPU inside printk(): the caller is pinned to
 * one CPU, and a helper thread moves it to the other one while printk()
 * waits out printk_delay, after the record's timestamp was taken. Each
 * call is followed by a line saying where the call began and ended.
 */
struct migration {
	struct task_struct *task;
	unsigned int to;
};

static int migrate_fn(void *data)
{
	struct migration *m = data;

	msleep(migrate_after_ms);
	set_cpus_allowed_ptr(m->task, cpumask_of(m->to));
	return 0;
}

static int migrate_printks(void)
{
	struct migration m = { .task = current };
	struct task_struct *mover;
	unsigned int i, from, seq;
	int ret = 0;

	for (i = 0; i < migrate_count; i++) {
		from = i % 2;
		m.to = 1 - from;
		if (!cpu_online(m.to)) {
			ret = -ENODEV;
			break;
		}
		set_cpus_allowed_ptr(current, cpumask_of(from));
		seq = per_cpu(tag_seq[CTX_TASK], from);
		mover = kthread_create(migrate_fn, &m, "rig-mover");
		if (IS_ERR(mover)) {
			ret = PTR_ERR(mover);
			break;
		}
		/* kthread_stop() below needs it even if it already returned. */
		get_task_struct(mover);
		wake_up_process(mover);
		tagged_printk(LOGLEVEL_INFO, 0, NULL);
		pr_info("rigprintk: scen=%s migrate seq=%u from=%u now=%u\n",
			scen, seq, from, raw_smp_processor_id());
		kthread_stop(mover);
		put_task_struct(mover);
	}
	/* On every path: the run goes on (or ends) unpinned. */
	set_cpus_allowed_ptr(current, cpu_possible_mask);
	return ret;
}

static int timing_init(struct timing *t, unsigned int max_calls)
{
	atomic_set(&t->calls, 0);
	t->max_calls = max_calls;
	t->ns = max_calls ? vmalloc(array_size(max_calls, sizeof(u32))) : NULL;
	return max_calls && !t->ns ? -ENOMEM : 0;
}

static int cmp_u32(const void *a, const void *b)
{
	u32 x = *(const u32 *)a, y = *(const u32 *)b;

	return x < y ? -1 : x > y;
}

static void timing_report(struct timing *t, const char *kind)
{
	unsigned int n = min_t(unsigned int, atomic_read(&t->calls), t->max_calls);

	if (!t->ns || !n)
		return;
	sort(t->ns, n, sizeof(u32), cmp_u32, NULL);
	pr_info("rigprintk: stat scen=%s kind=%s calls=%u p50_ns=%u p99_ns=%u p999_ns=%u max_ns=%u\n",
		scen, kind, n, t->ns[n / 2], t->ns[(u64)n * 99 / 100],
		t->ns[(u64)n * 999 / 1000], t->ns[n - 1]);
}

static void timing_free(struct timing *t)
{
	vfree(t->ns);
	t->ns = NULL;
}

/* ---- floods ----------------------------------------------------------- */

static DECLARE_COMPLETION(flood_go);
static atomic_t floods_running;
static DECLARE_COMPLETION(floods_done);

static int flood_fn(void *unused)
{
	unsigned int i;

	wait_for_completion(&flood_go);
	if (flood_start_ms)
		msleep(flood_start_ms);
	for (i = 0; i < flood_count; i++) {
		bool emerg = flood_emerg_every && (i % flood_emerg_every) == flood_emerg_every - 1;
		int level = emerg ? flood_emerg_level : flood_level;
		unsigned long flags;

		if (flood_irqsoff) {
			local_irq_save(flags);
			tagged_printk(level, flood_len, &task_timing);
			local_irq_restore(flags);
		} else {
			tagged_printk(level, flood_len, &task_timing);
		}
		if (flood_delay_us)
			udelay(flood_delay_us);
		else if (!(i & 63))
			cond_resched();
	}
	if (atomic_dec_and_test(&floods_running))
		complete(&floods_done);
	return 0;
}

static int floods_start(void)
{
	unsigned int cpu, n = 0;

	if (!flood_count)
		return 0;
	for_each_online_cpu(cpu) {
		if (cpu_chosen(cpu, flood_cpus))
			n++;
	}
	if (timing_init(&task_timing, n * flood_count))
		return -ENOMEM;
	atomic_set(&floods_running, n);
	reinit_completion(&floods_done);
	reinit_completion(&flood_go);
	for_each_online_cpu(cpu) {
		struct task_struct *t;

		if (!cpu_chosen(cpu, flood_cpus))
			continue;
		t = kthread_create_on_cpu(flood_fn, NULL, cpu, "rigflood/%u");
		if (IS_ERR(t))
			return PTR_ERR(t);
		wake_up_process(t);
	}
	complete_all(&flood_go);
	return n;
}

/* ---- NMIs --------------------------------------------------------------- */

/*
 * Set while an NMI aimed at the spinning CPU has not yet been handled there:
 * the spin goes on past spin_ms until it is (at most SPIN_NMI_WAIT_MS more),
 * so that the NMI lands inside the window however late the host runs the
 * sender. Cleared by the NMI handlers on spin_cpu.
 */
static atomic_t spin_awaits_nmi;
#define SPIN_NMI_WAIT_MS	5000

static bool spin_targets(unsigned long cpus)
{
	return spin_cpu >= 0 && cpu_chosen(spin_cpu, cpus);
}

static void spin_nmi_handled(void)
{
	if (smp_processor_id() == spin_cpu)
		atomic_set(&spin_awaits_nmi, 0);
}

static DEFINE_PER_CPU(bool, nmi_armed);
static atomic_t nmis_seen;
static atomic_t crash_nmi_armed;

static void nmi_print(void)
{
	unsigned int i;

	for (i = 0; i < nmi_count; i++)
		tagged_printk(nmi_level, 0, &nmi_timing);
}

static int rig_nmi_local_handle(void)
{
	if (atomic_read(&crash_nmi_armed) && smp_processor_id() == crash_cpu) {
		atomic_set(&crash_nmi_armed, 0);
		if (!strcmp(crash, "panic-nmi")) {
			tagged_printk(0, 0, NULL);
			panic("rigprintk: panic in NMI on CPU %d", smp_processor_id());
		}
		tagged_printk(0, 0, NULL);
		*(volatile int *)NULL = 0;	/* oops in NMI context */
		return NMI_HANDLED;
	}
	if (!this_cpu_read(nmi_armed))
		return NMI_DONE;
	this_cpu_write(nmi_armed, false);
	nmi_print();
	spin_nmi_handled();
	atomic_inc(&nmis_seen);
	if (nmi_then_panic)
		panic("rigprintk: panic from the NMI handler on CPU %d", smp_processor_id());
	return NMI_HANDLED;
}

/*
 * The first and the last local NMI handler (the kernel's own, such as the
 * all-CPU backtrace, run between them): a CPU's time in NMI is then read
 * off the register log, and taken out of the windows it interrupted.
 */
static int rig_nmi_enter(unsigned int type, struct pt_regs *regs)
{
	if (nmi_markers)
		mark_always(RIG_MARK_NMI_ENTER);
	return NMI_DONE;
}

static int rig_nmi_local(unsigned int type, struct pt_regs *regs)
{
	int ret = rig_nmi_local_handle();

	if (nmi_markers)
		mark_always(RIG_MARK_NMI_EXIT);
	return ret;
}

static int rig_nmi_unknown(unsigned int type, struct pt_regs *regs)
{
	unsigned int cpu = smp_processor_id();

	if (!unknown_nmi)
		return NMI_DONE;
	if (!cpu_chosen(cpu, unknown_nmi_cpus))
		return NMI_HANDLED;
	nmi_print();
	spin_nmi_handled();
	atomic_inc(&nmis_seen);
	if (nmi_then_panic)
		panic("rigprintk: panic from an unknown NMI on CPU %u", cpu);
	return NMI_HANDLED;
}

static void send_nmi(unsigned int cpu)
{
	__apic_send_IPI_mask(cpumask_of(cpu), NMI_VECTOR);
}

/* Wait up to about 5 s until the handlers counted @sent events in @seen. */
static void wait_handled(atomic_t *seen, unsigned int sent, const char *what)
{
	int waited;

	for (waited = 0; atomic_read(seen) < sent && waited < 5000; waited++)
		usleep_range(1000, 2000);
	if (atomic_read(seen) < sent)
		pr_err("rigprintk: %d of %u %s\n", atomic_read(seen), sent, what);
}

static void nmis_send(void)
{
	unsigned int cpu, sent = 0;

	atomic_set(&nmis_seen, 0);
	for_each_online_cpu(cpu) {
		if (!cpu_chosen(cpu, nmi_cpus))
			continue;
		per_cpu(nmi_armed, cpu) = true;
		smp_wmb();	/* armed before the NMI arrives */
		send_nmi(cpu);
		sent++;
	}
	wait_handled(&nmis_seen, sent, "NMIs handled");
}

/* ---- tagged messages from hard irq context ---------------------------------- */

static DEFINE_PER_CPU(struct irq_work, print_irq_work);
static atomic_t irqs_seen;

static void irq_print_fn(struct irq_work *w)
{
	unsigned int i;

	for (i = 0; i < nmi_count; i++)
		tagged_printk(irq_level, 0, &irq_timing);
	atomic_inc(&irqs_seen);
}

/* On the target CPU (irq_work_queue_on() is not exported): raise its irq_work. */
static void irq_raise_here(void *unused)
{
	irq_work_queue(this_cpu_ptr(&print_irq_work));
}

static void irqs_send(void)
{
	unsigned int cpu, sent = 0;

	atomic_set(&irqs_seen, 0);
	for_each_online_cpu(cpu) {
		if (!cpu_chosen(cpu, irq_cpus))
			continue;
		/* Hard irq context, also on PREEMPT_RT. */
		*per_cpu_ptr(&print_irq_work, cpu) = IRQ_WORK_INIT_HARD(irq_print_fn);
		smp_call_function_single(cpu, irq_raise_here, NULL, 1);
		sent++;
	}
	wait_handled(&irqs_seen, sent, "irq_works run");
}

/* ---- a CPU spinning with interrupts off ------------------------------------ */

/* Set by the spinner with interrupts off; polled, so that no wakeup is needed. */
static atomic_t spin_started;
static DECLARE_COMPLETION(spin_done);
static struct cpumask run_cpus;
/* local_clock() when the spin began and ended, printed with "spin done". */
static u64 spin_begin_ns, spin_end_ns;
static int spin_fn(void *unused)
{
	u64 now, end, limit, self_nmi;
	bool self_nmi_sent = !spin_nmi_at_ms;

	local_irq_disable();
	atomic_set(&spin_started, 1);
	mark_always(RIG_MARK_SPIN_BEGIN);
	now = spin_begin_ns = local_clock();
	end = now + (u64)spin_ms * NSEC_PER_MSEC;
	limit = end + (u64)SPIN_NMI_WAIT_MS * NSEC_PER_MSEC;
	self_nmi = now + (u64)spin_nmi_at_ms * NSEC_PER_MSEC;
	while (now < end || (atomic_read(&spin_awaits_nmi) && now < limit)) {
		/*
		 * From this CPU itself: an NMI from another CPU depends on
		 * that CPU running its sender, and work on it may be waiting
		 * for this one to take interrupts again.
		 */
		if (!self_nmi_sent && now >= self_nmi) {
			this_cpu_write(nmi_armed, true);
			mark_always(RIG_MARK_SELF_NMI);
			send_nmi(smp_processor_id());
			self_nmi_sent = true;
		}
		touch_nmi_watchdog();
		cpu_relax();
		now = local_clock();
	}
	spin_end_ns = now;
	mark_always(RIG_MARK_SPIN_END);
	local_irq_enable();
	complete(&spin_done);
	return 0;
}

static int spin_start(void)
{
	struct task_struct *t;

	if (spin_cpu < 0 || !spin_ms)
		return 0;
	if (!cpu_online(spin_cpu))
		return -EINVAL;
	atomic_set(&spin_started, 0);
	reinit_completion(&spin_done);
	atomic_set(&spin_awaits_nmi, spin_nmi_at_ms || spin_targets(nmi_cpus) ||
		   (unknown_nmi && spin_targets(unknown_nmi_cpus)));
	/*
	 * Announce the spin from another CPU: a task woken by the spinner
	 * may be queued on the spinning CPU and then waits for the spin's end.
	 */
	cpumask_andnot(&run_cpus, cpu_online_mask, cpumask_of(spin_cpu));
	if (!cpumask_empty(&run_cpus))
		set_cpus_allowed_ptr(current, &run_cpus);
	t = kthread_create_on_cpu(spin_fn, NULL, spin_cpu, "rigspin/%u");
	if (IS_ERR(t))
		return PTR_ERR(t);
	/*
	 * Not preemptible from the wakeup to the announcement: a task that
	 * preempts the announcer may wait for the spinning CPU, such as the
	 * kworker that frees the module's init memory and flushes the TLB of
	 * every CPU, and the announcement would then come after the spin.
	 */
	preempt_disable();
	wake_up_process(t);
	/*
	 * Poll rather than sleep: a wakeup sent by the spinner, which has
	 * interrupts off, could wait for the spin's end, and with it the
	 * announcement below (seen as a 5 s spin in real-time runs).
	 */
	while (!atomic_read(&spin_started))
		cpu_relax();
	/*
	 * At ERR level, so that an emergency write puts it on the wire from
	 * here: the printer thread's wakeup is one irq_work per console, and
	 * when a record printed just before the spin left it pending on the
	 * spinning CPU, no other CPU can wake the printer until the spin ends.
	 */
	pr_err("rigprintk: scen=%s cpu %d spins with interrupts off for %u ms\n",
		scen, spin_cpu, spin_ms);
	preempt_enable();
	return 1;
}

/* ---- panics and oopses -------------------------------------------------------- */

static void crash_now(const char *how)
{
	tagged_printk(0, 0, NULL);
	if (!strncmp(how, "panic", 5))
		panic("rigprintk: %s on CPU %d", how, raw_smp_processor_id());
	*(volatile int *)NULL = 0;
}

static void crash_irq_fn(struct irq_work *w)
{
	crash_now(crash);
}

static struct irq_work crash_irq_work = IRQ_WORK_INIT_HARD(crash_irq_fn);

static int crash_task_fn(void *unused)
{
	crash_now(crash);
	return 0;
}

/*
 * A crash in irq or NMI context ends the run as a panic, but not at once:
 * an oops first prints its report, and in its emergency section it flushes
 * the whole console backlog, seconds on a busy 115200-baud console. The
 * run must not return meanwhile, or init would end the run before the
 * panic. A crash that never panics fails the run instead of hanging it.
 */
#define CRASH_PANIC_WAIT_MS	20000

static int crash_wait_panic(void)
{
	msleep(CRASH_PANIC_WAIT_MS);
	pr_err("rigprintk: scen=%s crash=%s did not panic within %u ms\n",
	       scen, crash, CRASH_PANIC_WAIT_MS);
	return -ETIMEDOUT;
}

static int crash_start(void)
{
	struct task_struct *t;

	if (!strcmp(crash, "none"))
		return 0;
	if (!strcmp(crash, "panic-task")) {
		crash_now(crash);
	} else if (!strcmp(crash, "oops-task")) {
		/* In a thread of its own, so that the oops does not kill init. */
		t = kthread_run(crash_task_fn, NULL, "rigoops");
		if (IS_ERR(t))
			return PTR_ERR(t);
		msleep(100);
	} else if (!strcmp(crash, "panic-irq") || !strcmp(crash, "oops-irq")) {
		irq_work_queue(&crash_irq_work);
		return crash_wait_panic();
	} else if (!strcmp(crash, "panic-nmi") || !strcmp(crash, "oops-nmi")) {
		if (crash_cpu < 0)
			crash_cpu = cpumask_last(cpu_online_mask);
		atomic_set(&crash_nmi_armed, 1);
		send_nmi(crash_cpu);
		return crash_wait_panic();
	} else {
		pr_err("rigprintk: unknown crash=%s\n", crash);
		return -EINVAL;
	}
	return 0;
}

/* ---- an emergency section that is never left ---------------------------------- */

/*
 * An oops enters an emergency section (oops_enter()) and leaves it in
 * oops_exit(), before the task dies. An oops inside the oops kills the task
 * between the two: the die notifier below faults once, on the first oops of
 * the thread, so the nested oops ends the thread and the outer oops never
 * reaches oops_exit(). Its CPU stays in an emergency section for good; the
 * printer threads must not stay parked with it.
 */
static atomic_t abandon_armed;
static void flush_consoles(void);

static bool in_abandon_thread(void)
{
	return in_task() && (current->flags & PF_KTHREAD) &&
	       !strncmp(current->comm, "rigabandon/", 11);
}

static int abandon_die_notify(struct notifier_block *nb, unsigned long val, void *data)
{
	if (val == DIE_OOPS && in_abandon_thread() && atomic_xchg(&abandon_armed, 0))
		*(volatile int *)NULL = 0;	/* the oops inside the oops */
	return NOTIFY_DONE;
}

static struct notifier_block abandon_nb = { .notifier_call = abandon_die_notify };

static int abandon_fn(void *unused)
{
	atomic_set(&abandon_armed, 1);
	*(volatile int *)NULL = 0;
	return 0;
}

#define ABANDON_WAIT_MS		5000

static int abandon_start(void)
{
	struct task_struct *t;
	int cpu = abandon_cpu, waited;

	if (!abandon_emergency)
		return 0;
	if (cpu < 0)
		cpu = cpumask_last(cpu_online_mask);
	if (!cpu_online(cpu))
		return -EINVAL;
	t = kthread_create_on_cpu(abandon_fn, NULL, cpu, "rigabandon/%u");
	if (IS_ERR(t))
		return PTR_ERR(t);
	/* Once: die_lock stays taken after the nested oops (see above). */
	abandon_emergency = false;
	get_task_struct(t);
	wake_up_process(t);
	for (waited = 0; !READ_ONCE(t->exit_state) && waited < ABANDON_WAIT_MS; waited += 10)
		msleep(10);
	waited = READ_ONCE(t->exit_state) ? 0 : -ETIMEDOUT;
	put_task_struct(t);
	if (waited) {
		pr_err("rigprintk: scen=%s the thread on cpu %d did not die within %u ms\n",
		       scen, cpu, ABANDON_WAIT_MS);
		return waited;
	}
	/*
	 * The dying thread's last messages ("note: ... exited with irqs
	 * disabled") were printed on that CPU, still in its emergency
	 * section, so that printk() call flushes the consoles itself for as
	 * long as records keep coming. Let it finish before the floods, or
	 * it prints them and hides the printers.
	 */
	flush_consoles();
	pr_info("rigprintk: scen=%s cpu %d left an emergency section behind\n", scen, cpu);
	return 0;
}

/* ---- the test console (registered early or late) ------------------------------ */

#define CONLOG_SIZE	(512 * 1024)
static char *conlog;
static size_t conlog_len;
static DEFINE_SPINLOCK(conlog_lock);

static atomic_t conlog_writes, conlog_writes_by_flooders;

/*
 * The flood threads do nothing but printk(): a write in one of them is a
 * write in the printk() caller's context, which the printer threads of the
 * seed design avoid for every console, legacy ones like this one included.
 */
static bool in_flood_thread(void)
{
	return in_task() && (current->flags & PF_KTHREAD) &&
	       !strncmp(current->comm, "rigflood/", 9);
}

static void rig_console_write(struct console *con, const char *s, unsigned int n)
{
	unsigned long flags;

	atomic_inc(&conlog_writes);
	if (in_flood_thread())
		atomic_inc(&conlog_writes_by_flooders);
	spin_lock_irqsave(&conlog_lock, flags);
	n = min_t(size_t, n, CONLOG_SIZE - conlog_len);
	memcpy(conlog + conlog_len, s, n);
	conlog_len += n;
	spin_unlock_irqrestore(&conlog_lock, flags);
}

static struct console rig_console = {
	.name	= "rigcon",
	.write	= rig_console_write,
	.flags	= CON_PRINTBUFFER | CON_ENABLED,
	.index	= -1,
};

static ssize_t conlog_read(struct file *f, char __user *buf, size_t count, loff_t *pos)
{
	return simple_read_from_buffer(buf, count, pos, conlog, READ_ONCE(conlog_len));
}

static const struct file_operations conlog_fops = {
	.owner	= THIS_MODULE,
	.read	= conlog_read,
	.llseek	= default_llseek,
};

static struct dentry *debug_dir;

/* Register the test console once; it receives the history (CON_PRINTBUFFER). */
static int test_console_register(void)
{
	if (conlog)
		return 0;
	conlog = vzalloc(CONLOG_SIZE);
	if (!conlog)
		return -ENOMEM;
	atomic_set(&conlog_writes, 0);
	atomic_set(&conlog_writes_by_flooders, 0);
	register_console(&rig_console);
	return 0;
}

static void test_console_report(void)
{
	if (conlog)
		pr_info("rigprintk: console scen=%s writes=%d by_flood_callers=%d\n",
			scen, atomic_read(&conlog_writes),
			atomic_read(&conlog_writes_by_flooders));
}

/* ---- pinning the printer threads ------------------------------------------------ */

/* nbcon consoles have a printer thread each; the legacy ones share one. */
static void pin_printers(int cpu)
{
	struct console *con;
	int cookie;

	if (cpu < 0 || !cpu_online(cpu))
		return;
	cookie = console_srcu_read_lock();
	for_each_console_srcu(con) {
#ifdef CONFIG_PRINTK
		if (con->kthread)
			set_cpus_allowed_ptr(con->kthread, cpumask_of(cpu));
#endif
	}
	console_srcu_read_unlock(cookie);
}

/* ---- flushing every console ----------------------------------------------------- */

/*
 * console_start() waits until the console printed every record stored
 * before the call (pr_flush, which is not exported), on legacy and nbcon
 * consoles alike, and on vanilla and patched kernels. On a console that is
 * already enabled it changes nothing else. Not console_stop(): it disables
 * the console until console_start(), and a panic in that window (a crash
 * on another CPU) would then print nothing at all.
 */
static void flush_consoles_once(void)
{
	struct console *con, *list[16];
	int n = 0, i;

	console_list_lock();
	for_each_console(con) {
		if (n < ARRAY_SIZE(list) && (con->flags & CON_ENABLED))
			list[n++] = con;
	}
	console_list_unlock();
	for (i = 0; i < n; i++)
		console_start(list[i]);
}

/* The sequence number the next record will get (kmsg_dump's view of it). */
static u64 next_record_seq(void)
{
	struct kmsg_dump_iter iter;

	kmsg_dump_rewind(&iter);
	return iter.next_seq;
}

/*
 * Records stored while a flush waits (an NMI the UART fired at the printer,
 * the kernel's report that the NMI handler took long) are not covered by
 * it: flush again until a whole flush passed without a new record.
 */
#define FLUSH_PASSES_MAX	10

static void flush_consoles(void)
{
	unsigned int pass;
	u64 before;

	for (pass = 0; pass < FLUSH_PASSES_MAX; pass++) {
		before = next_record_seq();
		flush_consoles_once();
		if (next_record_seq() == before)
			return;
	}
	pr_warn("rigprintk: consoles still busy after %u flushes\n", FLUSH_PASSES_MAX);
}

static int flush_set(const char *val, const struct kernel_param *kp)
{
	flush_consoles();
	return 0;
}

static const struct kernel_param_ops flush_ops = { .set = flush_set };
module_param_cb(flush, &flush_ops, NULL, 0200);
MODULE_PARM_DESC(flush, "write 1: wait until every console printed everything");

/* ---- the run ------------------------------------------------------------------------ */

static DEFINE_MUTEX(run_lock);

/* The run's own task on @cpu, if it is a CPU that is online (-1: stay). */
static void run_on(int cpu)
{
	if (cpu >= 0 && cpu_online(cpu))
		set_cpus_allowed_ptr(current, cpumask_of(cpu));
}

static void run_anywhere(void)
{
	set_cpus_allowed_ptr(current, cpu_possible_mask);
}

static int do_run(void)
{
	int floods, spinning, ret;

	mark_always(RIG_MARK_RUN_BEGIN);
	pr_info("rigprintk: scen=%s run begin\n", scen);

	if (timing_init(&nmi_timing, 4096) || timing_init(&irq_timing, 4096))
		return -ENOMEM;
	if (test_console_early) {
		ret = test_console_register();
		if (ret)
			return ret;
	}
	if (!strcmp(second_console, "early")) {
		ret = uart2_console_register(false);
		if (ret)
			return ret;
	}
	pin_printers(printer_cpu);
	if (flush_first)
		flush_consoles();
	ret = abandon_start();
	if (ret)
		return ret;

	floods = floods_start();
	if (floods < 0)
		return floods;
	if (floods && flood_wait)
		wait_for_completion(&floods_done);
	else if (floods && flood_backlog_ms)
		msleep(flood_backlog_ms);

	/* The kernel's own handler, as the console's keyboard would call it. */
	if (sysrq_cpu >= 0 && cpu_online(sysrq_cpu)) {
		run_on(sysrq_cpu);
		handle_sysrq(sysrq_key[0]);
		run_anywhere();
	}

	/* After the floods started: with flood_wait=0, while they queue. */
	if (single_level < 8) {
		run_on(single_cpu);
		tagged_printk(single_level, single_len, NULL);
		run_anywhere();
	}

	if (migrate_count) {
		ret = migrate_printks();
		if (ret)
			return ret;
	}

	/* Records in pieces, also while the floods queue. */
	if (cont_count) {
		unsigned int i;

		run_on(single_cpu);
		for (i = 0; i < cont_count; i++)
			cont_printk(cont_level, single_len);
		run_anywhere();
	}

	spinning = spin_start();
	if (spinning < 0)
		return spinning;
	if (nmi_cpus)
		nmis_send();
	if (irq_cpus)
		irqs_send();
	ret = crash_start();
	if (ret)
		return ret;

	if (spinning) {
		wait_for_completion(&spin_done);
		pr_info("rigprintk: scen=%s cpu %d spin done begin_ns=%llu end_ns=%llu\n",
			scen, spin_cpu, spin_begin_ns, spin_end_ns);
		set_cpus_allowed_ptr(current, cpu_possible_mask);
	}
	if (floods && !flood_wait)
		wait_for_completion(&floods_done);

	/*
	 * Nothing prints meanwhile: whatever of the floods reaches the wire
	 * before the marker was printed by the consoles' own printers.
	 */
	if (liveness_ms) {
		msleep(liveness_ms);
		mark_always(RIG_MARK_DEADLINE);
	}

	/* Last, so that it gets the history of everything above. */
	if (late_console) {
		ret = test_console_register();
		if (ret)
			return ret;
	}
	if (!strcmp(second_console, "late")) {
		ret = uart2_console_register(true);
		if (ret)
			return ret;
	}

	timing_report(&task_timing, "flood");
	timing_report(&irq_timing, "irq");
	timing_report(&nmi_timing, "nmi");
	timing_free(&task_timing);
	timing_free(&irq_timing);
	timing_free(&nmi_timing);
	test_console_report();
	pr_info("rigprintk: scen=%s run end\n", scen);
	mark_always(RIG_MARK_RUN_END);
	return 0;
}

static int run_set(const char *val, const struct kernel_param *kp)
{
	int ret;

	mutex_lock(&run_lock);
	ret = do_run();
	mutex_unlock(&run_lock);
	return ret;
}

static const struct kernel_param_ops run_ops = { .set = run_set };
module_param_cb(run, &run_ops, NULL, 0200);
MODULE_PARM_DESC(run, "write 1: run the configured actions, return when done");

/* ---- module ------------------------------------------------------------------------- */

/*
 * The die notifier is registered only when asked for at load: code on the
 * oops path shifts the instruction count of runs that do not use it, and
 * with it the golden transcripts of -icount runs.
 */
static bool die_notifier_registered;

static int __init rigprintk_init(void)
{
	int ret;

	memset(pad, 'x', sizeof(pad) - 1);
	if (strcmp(second_console, "none") && strcmp(second_console, "early") &&
	    strcmp(second_console, "late")) {
		pr_err("rigprintk: second_console=%s: not none, early or late\n", second_console);
		return -EINVAL;
	}
	ret = register_nmi_handler(NMI_LOCAL, rig_nmi_enter, NMI_FLAG_FIRST, "rigprintk-enter");
	if (ret)
		return ret;
	ret = register_nmi_handler(NMI_LOCAL, rig_nmi_local, 0, "rigprintk");
	if (ret)
		goto out_enter;
	ret = register_nmi_handler(NMI_UNKNOWN, rig_nmi_unknown, 0, "rigprintk");
	if (ret)
		goto out_local;
	if (abandon_emergency) {
		ret = register_die_notifier(&abandon_nb);
		if (ret)
			goto out_unknown;
		die_notifier_registered = true;
	}
	debug_dir = debugfs_create_dir("rigprintk", NULL);
	debugfs_create_file("console", 0400, debug_dir, NULL, &conlog_fops);
	pr_info("rigprintk: loaded, scen=%s\n", scen);
	return 0;

out_unknown:
	unregister_nmi_handler(NMI_UNKNOWN, "rigprintk");
out_local:
	unregister_nmi_handler(NMI_LOCAL, "rigprintk");
out_enter:
	unregister_nmi_handler(NMI_LOCAL, "rigprintk-enter");
	return ret;
}

static void __exit rigprintk_exit(void)
{
	uart2_console_unregister();
	if (conlog) {
		unregister_console(&rig_console);
		vfree(conlog);
	}
	debugfs_remove_recursive(debug_dir);
	if (die_notifier_registered)
		unregister_die_notifier(&abandon_nb);
	unregister_nmi_handler(NMI_UNKNOWN, "rigprintk");
	unregister_nmi_handler(NMI_LOCAL, "rigprintk");
	unregister_nmi_handler(NMI_LOCAL, "rigprintk-enter");
}

module_init(rigprintk_init);
module_exit(rigprintk_exit);
MODULE_DESCRIPTION("printk-rig test module: floods, NMIs, panics, timing, markers");
MODULE_LICENSE("GPL");
