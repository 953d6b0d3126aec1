// SPDX-License-Identifier: MIT
/*
 * Loads offcpu.bpf.o through its skeleton (as the collector does), attaches
 * its sched_switch and sys_exit programs (sched_switch alone where the
 * kernel has BPF task work) with a pid filter, and checks what
 * it records for a child that alternately sleeps in nanosleep and in poll,
 * while another process moves it between CPU 0 and CPU 1 during every block
 * so that it wakes up on another CPU than the one it went to sleep on: per blocking syscall (told
 * apart by the kernel stack), the recorded off-CPU time against the time the
 * child measured itself; unbiased weights when sampling (event and time
 * modes); user stack copies; no records of other processes.
 */
#include <errno.h>
#include <math.h>
#include <poll.h>
#include <sched.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>

#include <bpf/bpf.h>
#include <bpf/libbpf.h>

#include "kfeatures.h"
#include "lowprof/clock.h"
#include "lowprof/cpus.h"
#include "profile.h"
#include "offcpu.h"
#include "offcpu.skel.h"

enum { K_SLEEP, K_POLL, K_OTHER, K_N };

struct ksym {
	uint64_t addr;
	int kind; /* what a frame in this function says about the block */
};

static struct ksym *ksyms;
static size_t nksyms;

static int ksym_cmp(const void *a, const void *b)
{
	const struct ksym *x = a, *y = b;

	return x->addr < y->addr ? -1 : x->addr > y->addr;
}

/* Text symbols of /proc/kallsyms, each tagged with the block kind it shows. */
static void load_ksyms(void)
{
	static const char *const sleep_fns[] = {"hrtimer_nanosleep", "do_nanosleep",
						"common_nsleep", NULL};
	static const char *const poll_fns[] = {"do_sys_poll", "do_poll", NULL};
	char line[512], name[256], type;
	unsigned long long addr;
	size_t cap = 0;
	FILE *f = fopen("/proc/kallsyms", "r");

	assert_non_null(f);
	while (fgets(line, sizeof(line), f)) {
		if (sscanf(line, "%llx %c %255s", &addr, &type, name) != 3)
			continue;
		if (type != 't' && type != 'T')
			continue;
		if (nksyms == cap) {
			cap = cap ? cap * 2 : 65536;
			ksyms = realloc(ksyms, cap * sizeof(*ksyms));
			assert_non_null(ksyms);
		}
		ksyms[nksyms].addr = addr;
		ksyms[nksyms].kind = K_OTHER;
		for (int i = 0; sleep_fns[i]; i++)
			if (!strcmp(name, sleep_fns[i]))
				ksyms[nksyms].kind = K_SLEEP;
		for (int i = 0; poll_fns[i]; i++)
			if (!strcmp(name, poll_fns[i]))
				ksyms[nksyms].kind = K_POLL;
		nksyms++;
	}
	fclose(f);
	qsort(ksyms, nksyms, sizeof(*ksyms), ksym_cmp);
	assert_true(nksyms > 1000 && ksyms[nksyms - 1].addr != 0); /* root sees addresses */
}

static int frame_kind(uint64_t a)
{
	size_t lo = 0, hi = nksyms;

	while (hi - lo > 1) {
		size_t mid = (lo + hi) / 2;

		if (ksyms[mid].addr <= a)
			lo = mid;
		else
			hi = mid;
	}
	return ksyms[lo].addr <= a ? ksyms[lo].kind : K_OTHER;
}

struct seen {
	pid_t pid;
	uint32_t stack_bytes;
	int records[K_N], bad_pid, with_copy[K_N], no_ustack;
	uint64_t blocked[K_N], weight[K_N];
	uint64_t period_ns;   /* time mode: set before the run */
	int under_rule;	      /* time mode: records weighing less than max(blocked, period) */
	uint64_t blocked_min; /* shortest block of any record */
};

static int on_event(void *ctx, void *data, size_t size)
{
	struct seen *s = ctx;
	const struct lp_ev_offcpu *e = data;
	int kind = K_OTHER;

	assert_true(size >= LP_EV_OFFCPU_FIXED_SIZE);
	assert_int_equal(e->hdr.type, LP_EV_OFFCPU);
	assert_true(size >=
		    LP_EV_OFFCPU_FIXED_SIZE + (size_t)(e->nkstack + e->nustack) * 8 + e->stack_len);
	if ((pid_t)e->hdr.pid != s->pid) {
		s->bad_pid++;
		return 0;
	}
	for (int i = 0; i < e->nkstack && kind == K_OTHER; i++)
		kind = frame_kind(e->stack[i]);
	s->records[kind]++;
	s->blocked[kind] += e->blocked_ns;
	s->weight[kind] += e->weight_ns;
	if (e->stack_len && e->stack_len <= s->stack_bytes && e->sp)
		s->with_copy[kind]++;
	if (!e->ip)
		s->no_ustack++;
	if (s->period_ns &&
	    e->weight_ns < (e->blocked_ns > s->period_ns ? e->blocked_ns : s->period_ns))
		s->under_rule++;
	if (!s->blocked_min || e->blocked_ns < s->blocked_min)
		s->blocked_min = e->blocked_ns;
	return 0;
}

struct child_result {
	uint64_t ns[K_N]; /* time off CPU in the blocking calls, measured by the child */
	uint64_t calls[K_N];
	uint64_t moved; /* blocks that ended on another CPU than they began */
	/*
	 * What the rules make of the calls the child measured, so the checks
	 * follow the blocks it got (on a loaded machine a 1 ms poll can be off
	 * CPU far longer, waiting for a CPU after its wake-up) rather than the
	 * lengths it asked for. A call's off time is its block's or more (a
	 * preemption in the call adds to it, not to the block):
	 */
	uint64_t over_min[K_N]; /* calls off CPU min_ns or more: the most min_ns keeps */
	double kept[K_N];	/* time mode: sum of min(1, off / period), the records expected */
	double kept_var[K_N];	/* and the variance of that count, sum of p(1 - p) */
};

/*
 * The calling thread's time off CPU so far, give or take a constant: wall
 * time less its CPU time. Its change across a blocking call is the time the
 * call kept the thread off CPU, which is what an off-CPU sample stands for;
 * the wall time alone would also count the system call's own CPU time,
 * which is large where the CPU is emulated (tests/vm).
 */
static uint64_t off_ns(void)
{
	uint64_t cpu = lp_clock_ns(CLOCK_THREAD_CPUTIME_ID);

	return lp_clock_ns(CLOCK_MONOTONIC) - cpu;
}

static void pin(pid_t pid, int cpu)
{
	cpu_set_t set;

	CPU_ZERO(&set);
	CPU_SET(cpu, &set);
	sched_setaffinity(pid, sizeof(set), &set);
}

/*
 * The child and the mover run at a real-time priority (SCHED_FIFO 1): a
 * loaded machine's other tasks then neither preempt the child in the
 * middle of a call nor keep it waiting for a CPU after a wake-up, so the
 * off time it measures per call is the block the programs see, not that
 * plus its waits for a CPU outside the block (which are no block, and are
 * rightly not recorded); and the mover moves it in time. The programs treat
 * every policy alike. Where that is refused (an RT group with no budget),
 * the test runs as it is, and says so.
 */
static void realtime(const char *who)
{
	struct sched_param sp = {.sched_priority = 1};

	if (sched_setscheduler(0, SCHED_FIFO, &sp))
		printf("note: the %s runs without a real-time priority: %s\n", who,
		       strerror(errno));
}

/*
 * The mover, another process: each time the child says it is about to
 * block, waits half the shortest block and moves the child to the other
 * CPU, so that it wakes up on a CPU other than the one it blocked on.
 */
static void mover_main(int from_child, pid_t child, uint32_t wait_us)
{
	struct timespec ts = {0, (long)wait_us * 1000};
	int cpu = 1;
	char c;

	realtime("mover");
	while (read(from_child, &c, 1) == 1) {
		nanosleep(&ts, NULL);
		pin(child, cpu);
		cpu ^= 1;
	}
	_exit(0);
}

struct cfg {
	uint32_t mode;
	double rate;
	uint64_t period_ns, min_ns;
	uint32_t sleep_us, poll_us, ms;
};

/* One call of kind k kept the child off CPU for off ns. */
static void child_count(struct child_result *r, const struct cfg *cfg, int k, uint64_t off)
{
	r->ns[k] += off;
	r->calls[k]++;
	r->over_min[k] += off >= cfg->min_ns;
	if (cfg->period_ns) {
		double p = off >= cfg->period_ns ? 1 : (double)off / (double)cfg->period_ns;

		r->kept[k] += p;
		r->kept_var[k] += p * (1 - p);
	}
}

/* The child: sleep_us in nanosleep, then poll_us in poll, for ms. */
static void child_main(int go, int out, int to_mover, const struct cfg *cfg)
{
	uint32_t sleep_us = cfg->sleep_us, poll_us = cfg->poll_us, ms = cfg->ms;
	struct child_result r = {0};
	uint64_t end, t;
	int before;
	char c;

	realtime("child");
	pin(0, 0);
	if (read(go, &c, 1) != 1)
		_exit(126);
	end = lp_clock_ns(CLOCK_MONOTONIC) + (uint64_t)ms * 1000000;
	while (lp_clock_ns(CLOCK_MONOTONIC) < end) {
		struct timespec ts = {0, (long)sleep_us * 1000};

		if (write(to_mover, &c, 1) != 1)
			_exit(124);
		before = sched_getcpu();
		t = off_ns();
		nanosleep(&ts, NULL);
		child_count(&r, cfg, K_SLEEP, off_ns() - t);
		r.moved += sched_getcpu() != before;
		if (write(to_mover, &c, 1) != 1)
			_exit(124);
		before = sched_getcpu();
		t = off_ns();
		poll(NULL, 0, (int)(poll_us / 1000));
		child_count(&r, cfg, K_POLL, off_ns() - t);
		r.moved += sched_getcpu() != before;
	}
	_exit(write(out, &r, sizeof(r)) == sizeof(r) ? 0 : 125);
}

/*
 * The off-CPU object fitted to this kernel as the collector fits it
 * (kfeatures.h, LOWPROF_FALLBACKS too), loaded: with sched_switch's
 * prev_state first, and without it where the kernel refuses that.
 */
static struct offcpu_bpf *open_offcpu(const struct seen *s, const struct cfg *cfg,
				      const uint32_t *cpus, int ncpus)
{
	struct coll_features f;
	struct offcpu_bpf *skel;
	int err;

	assert_int_equal(coll_features__probe(&f), 0);
	for (;;) {
		skel = offcpu_bpf__open();
		assert_non_null(skel);
		skel->rodata->filter_pids = true;
		skel->rodata->stack_bytes = s->stack_bytes;
		skel->rodata->mode = cfg->mode;
		skel->rodata->rate_threshold =
			cfg->rate >= 1 ? LP_OFFCPU_ALWAYS : (uint64_t)(cfg->rate * 4294967296.0);
		skel->rodata->period_ns = cfg->period_ns;
		skel->rodata->min_ns = cfg->min_ns;
		bpf_map__set_max_entries(skel->maps.events, 4 << 20);
		bpf_map__set_max_entries(skel->maps.scratch, cpus[ncpus - 1] + 1);
		bpf_map__set_max_entries(skel->maps.counts, cpus[ncpus - 1] + 1);
		bpf_map__set_max_entries(skel->maps.pending, 128);
		/* BPF task work where the collector would take it */
		assert_int_equal(coll_features__apply_offcpu(&f, skel, NULL,
							     cfg->mode == LP_OFFCPU_TIME ||
								     cfg->rate <= 0.05),
				 0);
		err = offcpu_bpf__load(skel);
		if (!err || !f.have[COLL_F_SWITCH_STATE])
			break;
		offcpu_bpf__destroy(skel);
		coll_features__lack(&f, COLL_F_SWITCH_STATE);
	}
	assert_int_equal(err, 0);
	return skel;
}

static void run(const struct cfg *cfg, struct seen *s, struct child_result *res,
		struct lp_offcpu_counts *tot)
{
	uint32_t cpus[LP_MAX_CPUS], key;
	int ncpus = lp_online_cpus(cpus, LP_MAX_CPUS), go[2], out[2], mv[2], status;
	struct bpf_link *l1, *l2;
	struct offcpu_bpf *skel;
	struct ring_buffer *rb;
	uint8_t one = 1;
	pid_t child, mover;

	assert_true(ncpus >= 2 && cpus[0] == 0 && cpus[1] == 1);
	if (!nksyms)
		load_ksyms();
	assert_int_equal(pipe(go), 0);
	assert_int_equal(pipe(out), 0);
	assert_int_equal(pipe(mv), 0);
	child = fork();
	if (child == 0) {
		close(go[1]);
		close(out[0]);
		close(mv[0]);
		child_main(go[0], out[1], mv[1], cfg);
	}
	mover = fork();
	if (mover == 0) {
		close(go[1]);
		close(mv[1]);
		mover_main(mv[0], child,
			   (cfg->sleep_us < cfg->poll_us ? cfg->sleep_us : cfg->poll_us) / 2);
	}
	close(go[0]);
	close(out[1]);
	close(mv[0]);
	close(mv[1]);
	s->pid = child;
	s->stack_bytes = 16384;

	skel = open_offcpu(s, cfg, cpus, ncpus);
	key = (uint32_t)child;
	assert_int_equal(bpf_map__update_elem(skel->maps.pids, &key, sizeof(key), &one, sizeof(one),
					      BPF_ANY),
			 0);
	rb = ring_buffer__new(bpf_map__fd(skel->maps.events), on_event, s, NULL);
	assert_non_null(rb);
	/* with BPF task work, sched_switch alone (kfeatures.h) */
	if (bpf_program__autoload(skel->progs.offcpu_switch_tw)) {
		l1 = bpf_program__attach(skel->progs.offcpu_switch_tw);
		l2 = NULL;
	} else {
		l1 = bpf_program__attach(skel->progs.offcpu_switch);
		l2 = bpf_program__attach(skel->progs.offcpu_sys_exit);
		assert_non_null(l2);
	}
	assert_non_null(l1);

	assert_int_equal(write(go[1], &one, 1), 1);
	close(go[1]);
	while (waitpid(child, &status, WNOHANG) == 0) {
		usleep(100 * 1000);
		ring_buffer__consume(rb);
	}
	assert_true(WIFEXITED(status) && WEXITSTATUS(status) == 0);
	assert_int_equal(waitpid(mover, &status, 0), mover);
	assert_int_equal(read(out[0], res, sizeof(*res)), sizeof(*res));
	close(out[0]);
	bpf_link__destroy(l1);
	bpf_link__destroy(l2);
	ring_buffer__consume(rb);
	memset(tot, 0, sizeof(*tot));
	for (int i = 0; i < ncpus; i++) {
		struct lp_offcpu_counts c;

		key = cpus[i];
		assert_int_equal(bpf_map__lookup_elem(skel->maps.counts, &key, sizeof(key), &c,
						      sizeof(c), 0),
				 0);
		for (size_t j = 0; j < sizeof(c) / 8; j++)
			((uint64_t *)tot)[j] += ((uint64_t *)&c)[j];
	}
	ring_buffer__free(rb);
	offcpu_bpf__destroy(skel);
	printf("child: %llu nanosleeps %.1f ms, %llu polls %.1f ms, %llu woke on another CPU\n",
	       (unsigned long long)res->calls[K_SLEEP], res->ns[K_SLEEP] / 1e6,
	       (unsigned long long)res->calls[K_POLL], res->ns[K_POLL] / 1e6,
	       (unsigned long long)res->moved);
	printf("records: sleep %d (blocked %.1f ms, weight %.1f ms, copies %d), poll %d "
	       "(blocked %.1f ms, weight %.1f ms, copies %d), other %d (%.1f ms); no ustack %d\n",
	       s->records[K_SLEEP], s->blocked[K_SLEEP] / 1e6, s->weight[K_SLEEP] / 1e6,
	       s->with_copy[K_SLEEP], s->records[K_POLL], s->blocked[K_POLL] / 1e6,
	       s->weight[K_POLL] / 1e6, s->with_copy[K_POLL], s->records[K_OTHER],
	       s->weight[K_OTHER] / 1e6, s->no_ustack);
	printf("counts: switches %llu sampled %llu short %llu lost %llu emitted %llu no_ustack "
	       "%llu kstack_err %llu storage_err %llu\n",
	       (unsigned long long)tot->switches, (unsigned long long)tot->sampled,
	       (unsigned long long)tot->short_blocks, (unsigned long long)tot->lost,
	       (unsigned long long)tot->emitted, (unsigned long long)tot->no_ustack,
	       (unsigned long long)tot->kstack_errors, (unsigned long long)tot->storage_errors);
}

static void assert_within(double got, double want, double tol)
{
	if (got < want * (1 - tol) || got > want * (1 + tol))
		fail_msg("%.3f ms is not within %.0f%% of %.3f ms", got / 1e6, tol * 100,
			 want / 1e6);
}

/* Rate 1: every block recorded, per syscall within 15% of the child's own clock. */
static void test_event_rate_1(void **state)
{
	struct cfg cfg = {.mode = LP_OFFCPU_EVENT,
			  .rate = 1,
			  .sleep_us = 20000,
			  .poll_us = 20000,
			  .ms = 1500};
	struct lp_offcpu_counts tot;
	struct child_result res;
	struct seen s = {0};

	run(&cfg, &s, &res, &tot);
	assert_int_equal(s.bad_pid, 0);
	assert_within((double)s.blocked[K_SLEEP], (double)res.ns[K_SLEEP], 0.15);
	assert_within((double)s.blocked[K_POLL], (double)res.ns[K_POLL], 0.15);
	/* rate 1: the weight is the blocked time */
	assert_true(s.weight[K_SLEEP] == s.blocked[K_SLEEP]);
	/* every block of 20 ms was seen, and returned through its syscall */
	assert_true(s.records[K_SLEEP] >= (int)res.calls[K_SLEEP] - 1);
	assert_true(s.records[K_POLL] >= (int)res.calls[K_POLL] - 1);
	assert_true(s.with_copy[K_SLEEP] >= s.records[K_SLEEP] - 1);
	assert_true(s.with_copy[K_POLL] >= s.records[K_POLL] - 1);
	/* most blocks ended on the other CPU: the storage follows the task */
	assert_true(res.moved >= (res.calls[K_SLEEP] + res.calls[K_POLL]) / 2);
	assert_int_equal(tot.lost, 0);
}

/* Rate 0.1: each block's weight is blocked / 0.1; the total is unbiased. */
static void test_event_rate_01(void **state)
{
	struct cfg cfg = {.mode = LP_OFFCPU_EVENT,
			  .rate = 0.1,
			  .sleep_us = 1000,
			  .poll_us = 1000,
			  .ms = 5000};
	struct lp_offcpu_counts tot;
	struct child_result res;
	struct seen s = {0};

	run(&cfg, &s, &res, &tot);
	assert_int_equal(s.bad_pid, 0);
	assert_within((double)(s.weight[K_SLEEP] + s.weight[K_POLL]),
		      (double)(res.ns[K_SLEEP] + res.ns[K_POLL]), 0.25);
	/* about one block in ten */
	assert_true(s.records[K_SLEEP] + s.records[K_POLL] <
		    (int)(res.calls[K_SLEEP] + res.calls[K_POLL]) / 5);
	assert_true(s.with_copy[K_SLEEP] + s.with_copy[K_POLL] >=
		    (s.records[K_SLEEP] + s.records[K_POLL]) * 9 / 10);
	assert_int_equal(tot.lost, 0);
}

/*
 * Time mode, period 2 ms: every 5 ms nanosleep is recorded with its own
 * length as weight; 1 ms polls are sampled with probability ~0.5 and weigh
 * 2 ms each; both totals are unbiased. (~330 poll samples: the total's
 * standard deviation is ~4%.)
 */
static void test_time_mode(void **state)
{
	struct cfg cfg = {.mode = LP_OFFCPU_TIME,
			  .period_ns = 2000000,
			  .sleep_us = 5000,
			  .poll_us = 1000,
			  .ms = 4000};
	struct lp_offcpu_counts tot;
	struct child_result res;
	struct seen s = {.period_ns = 2000000};

	run(&cfg, &s, &res, &tot);
	assert_int_equal(s.bad_pid, 0);
	/*
	 * nearly every sleep: a sleep the mover's affinity change splits into
	 * two blocks shorter than the period is sampled with probability < 1
	 * (its weight stays unbiased, checked below)
	 */
	assert_true(s.records[K_SLEEP] >= (int)res.calls[K_SLEEP] * 97 / 100);
	/*
	 * every record weighs max(its block, the period): a whole 5 ms sleep
	 * its own length, a split one's pieces at least the period
	 */
	assert_int_equal(s.under_rule, 0);
	assert_within((double)s.weight[K_SLEEP], (double)res.ns[K_SLEEP], 0.15);
	assert_within((double)s.weight[K_POLL], (double)res.ns[K_POLL], 0.25);
	/*
	 * polls shorter than the period are sampled, not all kept: no more
	 * records than the rule keeps of the polls the child measured (a
	 * call's off time is its block's or more), within 4 standard
	 * deviations
	 */
	printf("polls: %d records, the rule keeps %.1f +- %.1f of the child's\n", s.records[K_POLL],
	       res.kept[K_POLL], sqrt(res.kept_var[K_POLL]));
	assert_true(s.records[K_POLL] <= res.kept[K_POLL] + 4 * sqrt(res.kept_var[K_POLL]) + 2);
	assert_int_equal(tot.lost, 0);
}

/* min_ns drops short blocks (counted), keeps long ones. */
static void test_min_ns(void **state)
{
	struct cfg cfg = {.mode = LP_OFFCPU_EVENT,
			  .rate = 1,
			  .min_ns = 5000000,
			  .sleep_us = 20000,
			  .poll_us = 1000,
			  .ms = 1000};
	struct lp_offcpu_counts tot;
	struct child_result res;
	struct seen s = {0};

	run(&cfg, &s, &res, &tot);
	/*
	 * The rule itself: no record of a block under the minimum. A 1 ms
	 * poll can block longer than 5 ms on a loaded machine, and is then
	 * rightly recorded, so polls are allowed, each counted against the
	 * short ones.
	 */
	assert_true(s.blocked_min >= cfg.min_ns);
	/* a poll's block is no longer than the call's off time the child measured */
	printf("polls: %d records, %llu of %llu off CPU for %llu ns or more\n", s.records[K_POLL],
	       (unsigned long long)res.over_min[K_POLL], (unsigned long long)res.calls[K_POLL],
	       (unsigned long long)cfg.min_ns);
	assert_true(s.records[K_POLL] <= (int)res.over_min[K_POLL] + 1);
	assert_true(s.records[K_SLEEP] >= (int)res.calls[K_SLEEP] - 1);
	assert_true(tot.short_blocks + (uint64_t)s.records[K_POLL] >= res.calls[K_POLL] - 1);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_event_rate_1),
		cmocka_unit_test(test_event_rate_01),
		cmocka_unit_test(test_time_mode),
		cmocka_unit_test(test_min_ns),
	};

	if (geteuid() != 0) {
		printf("SKIP: the BPF tests load programs and need root\n");
		return 77;
	}
	if (sysconf(_SC_NPROCESSORS_ONLN) < 2) {
		printf("SKIP: needs two online CPUs\n");
		return 77;
	}
	return cmocka_run_group_tests(tests, NULL, NULL);
}
