// SPDX-License-Identifier: GPL-2.0
/*
 * prbstress: the printk ringbuffer under concurrent writers and readers.
 *
 * The shape of the seed's ringbuffer test: N writer threads, each pinned to
 * a CPU, write ~33-byte records as fast as they can into a private 16 KB
 * ringbuffer; two reader threads pinned together to one other CPU read it
 * concurrently. Each reader checks every record it gets (length, content,
 * sequence numbers strictly rising, each writer's records in order) and
 * counts the records it saw and the ones overwritten before it got to them.
 *
 * The ringbuffer is the kernel's own code: the build copies the flavor's
 * kernel/printk/printk_ringbuffer.c into this module (its functions are not
 * exported), so vanilla and patched each run the code their kernel runs.
 *
 * Parameters: writers=1,2,3 runs the test once per count, on a fresh buffer;
 * records=N records per run (split between the writers). One result line
 * per run, read by `rig bench` from /dev/kmsg:
 *   prbstress: result writers=W records=N ns=T reserve_failed=F
 *              r0_seen= r0_lost= r0_bad= r1_seen= r1_lost= r1_bad=
 * ns is the guest's clock from the first writer's start to the last
 * writer's end (virtual time under -icount).
 */
#define pr_fmt(fmt) "prbstress: " fmt

#include <linux/completion.h>
#include <linux/cpumask.h>
#include <linux/delay.h>
#include <linux/kthread.h>
#include <linux/module.h>
#include <linux/sched.h>
#include <linux/slab.h>
#include <linux/timekeeping.h>

#include "printk_ringbuffer.h"

/*
 * printk_ringbuffer.c reads these two printk.c globals (not exported) only
 * when this CPU is in panic; the module's own copies keep them false.
 */
bool debug_non_panic_cpus;
bool legacy_allow_panic_sync;

#define DESC_BITS	9	/* 512 descriptors */
#define TEXT_BITS	5	/* 32 bytes a record on average: 2^14 = 16 KB of text */
#define RECORD_LEN	33	/* "wW:NNNNNNNNNN:" and filler */
#define MAX_WRITERS	16
#define READERS		2

static char writers_list[64] = "1";
module_param_string(writers, writers_list, sizeof(writers_list), 0444);
MODULE_PARM_DESC(writers, "writer counts, one run each (e.g. 1,2,3)");
static unsigned long records = 100000;
module_param(records, ulong, 0444);
MODULE_PARM_DESC(records, "records written per run, split between the writers");

static struct printk_ringbuffer rb;
static struct prb_desc descs[1 << DESC_BITS];
static struct printk_info infos[1 << DESC_BITS];
static char text[1 << (DESC_BITS + TEXT_BITS)] __aligned(__alignof__(unsigned long));

struct writer {
	unsigned int id;
	unsigned long count;
	unsigned long reserve_failed;
};

struct reader {
	unsigned long long seen, lost, bad;
	unsigned long next_of[MAX_WRITERS];	/* next record number per writer */
};

static struct writer writer_state[MAX_WRITERS];
static struct reader reader_state[READERS];
static atomic_t writers_left;
static bool writers_done;		/* set once every writer has finished */
static u64 start_ns, end_ns;
static DECLARE_COMPLETION(all_done);
static atomic_t threads_left;

static char filler(unsigned int w, unsigned long n)
{
	return 'a' + (w + n) % 26;
}

/* The record a writer writes: its id, its record number, filler to RECORD_LEN. */
static void fill_record(char *buf, unsigned int w, unsigned long n)
{
	int len = snprintf(buf, RECORD_LEN + 1, "w%u:%010lu:", w, n);

	memset(buf + len, filler(w, n), RECORD_LEN - len);
}

static int writer_fn(void *arg)
{
	struct writer *wr = arg;
	struct prb_reserved_entry e;
	struct printk_record r;
	unsigned long n;

	for (n = 0; n < wr->count; n++) {
		/* a failed prb_reserve() zeroes r: set the size before each try */
		for (prb_rec_init_wr(&r, RECORD_LEN); !prb_reserve(&e, &rb, &r);
		     prb_rec_init_wr(&r, RECORD_LEN)) {
			/* the oldest block is still reserved by another writer */
			wr->reserve_failed++;
			cpu_relax();
		}
		fill_record(r.text_buf, wr->id, n);
		r.info->text_len = RECORD_LEN;
		r.info->caller_id = wr->id;
		prb_final_commit(&e);
		if ((n & 255) == 0)
			cond_resched();
	}
	if (atomic_dec_and_test(&writers_left)) {
		end_ns = ktime_get_ns();
		WRITE_ONCE(writers_done, true);
	}
	if (atomic_dec_and_test(&threads_left))
		complete(&all_done);
	return 0;
}

/* Is this record one a writer wrote, and the next one of that writer? */
static bool check_record(struct reader *rd, const char *buf, unsigned int len,
			 unsigned int nr_writers)
{
	char expect[RECORD_LEN + 1];
	unsigned int w;
	unsigned long n;

	if (len != RECORD_LEN || sscanf(buf, "w%u:%lu:", &w, &n) != 2 || w >= nr_writers)
		return false;
	fill_record(expect, w, n);
	if (memcmp(buf, expect, RECORD_LEN) != 0 || n < rd->next_of[w])
		return false;
	rd->next_of[w] = n + 1;
	return true;
}

static unsigned int run_writers;

static int reader_fn(void *arg)
{
	struct reader *rd = arg;
	struct printk_info info;
	struct printk_record r;
	char buf[RECORD_LEN + 8];
	u64 seq = 0;

	prb_rec_init_rd(&r, &info, buf, sizeof(buf));
	for (;;) {
		bool done = READ_ONCE(writers_done);

		if (!prb_read_valid(&rb, seq, &r)) {
			if (done)
				break;
			cond_resched();
			continue;
		}
		if (info.seq < seq) {
			rd->bad++;		/* sequence numbers must rise */
		} else {
			rd->lost += info.seq - seq;
			rd->seen++;
			if (!check_record(rd, buf, info.text_len, run_writers))
				rd->bad++;
		}
		seq = info.seq + 1;
		if ((rd->seen & 63) == 0)
			cond_resched();
	}
	if (atomic_dec_and_test(&threads_left))
		complete(&all_done);
	return 0;
}

static int start_pinned(int (*fn)(void *), void *arg, unsigned int cpu, const char *what,
			unsigned int i)
{
	struct task_struct *t = kthread_create(fn, arg, "prbstress/%s%u", what, i);

	if (IS_ERR(t))
		return PTR_ERR(t);
	kthread_bind(t, cpu);
	wake_up_process(t);
	return 0;
}

static int run(unsigned int nr_writers)
{
	unsigned int cpus = num_online_cpus(), reader_cpu = cpus - 1, i;
	unsigned long reserve_failed = 0;
	int err = 0;

	prb_init(&rb, text, DESC_BITS + TEXT_BITS, descs, DESC_BITS, infos);
	memset(writer_state, 0, sizeof(writer_state));
	memset(reader_state, 0, sizeof(reader_state));
	run_writers = nr_writers;
	WRITE_ONCE(writers_done, false);
	atomic_set(&writers_left, nr_writers);
	atomic_set(&threads_left, nr_writers + READERS);
	reinit_completion(&all_done);

	/* readers first, so that they are waiting when the first record lands */
	for (i = 0; i < READERS; i++)
		err = err ?: start_pinned(reader_fn, &reader_state[i], reader_cpu, "reader", i);
	start_ns = ktime_get_ns();
	for (i = 0; i < nr_writers; i++) {
		writer_state[i].id = i;
		writer_state[i].count = records / nr_writers + (i < records % nr_writers);
		/* every CPU but the readers' one, in turn */
		err = err ?: start_pinned(writer_fn, &writer_state[i],
					  cpus > 1 ? i % (cpus - 1) : 0, "writer", i);
	}
	if (err)
		return err;	/* kthread_create only fails at boot when memory is gone */
	wait_for_completion(&all_done);

	for (i = 0; i < nr_writers; i++)
		reserve_failed += writer_state[i].reserve_failed;
	pr_info("result writers=%u records=%lu ns=%llu reserve_failed=%lu r0_seen=%llu r0_lost=%llu r0_bad=%llu r1_seen=%llu r1_lost=%llu r1_bad=%llu\n",
		nr_writers, records, end_ns - start_ns, reserve_failed,
		reader_state[0].seen, reader_state[0].lost, reader_state[0].bad,
		reader_state[1].seen, reader_state[1].lost, reader_state[1].bad);
	return 0;
}

static int __init prbstress_init(void)
{
	char list[sizeof(writers_list)], *p = list, *tok;
	unsigned int n;
	int err;

	strscpy(list, writers_list, sizeof(list));
	pr_info("start writers=%s records=%lu buffer=%u bytes record=%u bytes cpus=%u\n",
		writers_list, records, 1U << (DESC_BITS + TEXT_BITS), RECORD_LEN,
		num_online_cpus());
	while ((tok = strsep(&p, ",")) != NULL) {
		if (kstrtouint(tok, 10, &n) || n == 0 || n > MAX_WRITERS) {
			pr_err("writers=%s: each count must be 1..%d\n", writers_list, MAX_WRITERS);
			return -EINVAL;
		}
		err = run(n);
		if (err)
			return err;
	}
	pr_info("done\n");
	return 0;
}
module_init(prbstress_init);

static void __exit prbstress_exit(void)
{
}
module_exit(prbstress_exit);

MODULE_LICENSE("GPL");
MODULE_DESCRIPTION("printk ringbuffer stress: pinned writers, two readers on one CPU");
