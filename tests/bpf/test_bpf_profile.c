// SPDX-License-Identifier: MIT
/*
 * Loads profile.bpf.o through its skeleton (as the collector does), attaches
 * it to the cpu-clock of every online CPU with a pid filter on a real
 * workload, and checks the records: only that process, user IPs inside its
 * executable mappings, frame-pointer stacks or (with stack_bytes) copies of
 * the user stack that hold the chain's return addresses, kernel addresses,
 * the sample period; then exec and exit events of a child.
 */
#include <errno.h>
#include <math.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>

#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include <linux/perf_event.h>

#include "kfeatures.h"
#include "lowprof/cpus.h"
#include "profile.h"
#include "profile.skel.h"

#define FREQ 99

struct seen {
	pid_t pid;
	uint32_t stack_bytes; /* the copy size the program was loaded with */
	int bad_copy, copy_with_ret;
	uint64_t text_lo, text_hi; /* the workload's executable mapping */
	/*
	 * user IPs outside it in samples without a kernel stack: checked at
	 * the end against all its executable mappings then (libc, ld.so, the
	 * vDSO), which a process that is still starting adds while sampled
	 */
	uint64_t out_ip[1024];
	int nout, out_over;
	uint64_t fs; /* a thread's thread pointer: its copies end there */
	int thread_samples, past_fs, at_fs;
	int samples, bad_pid, bad_ip, short_ustack, with_kstack, bad_kaddr, bad_period;
	int execs, exits;
	char exec_comm[LP_BPF_COMM_LEN + 1];
};

struct run {
	struct profile_bpf *skel;
	struct coll_features feat;
	struct ring_buffer *rb;
	struct bpf_link *links[LP_MAX_CPUS + 2];
	int pfds[LP_MAX_CPUS];
	int nlinks, npfds;
};

static int on_event(void *ctx, void *data, size_t size)
{
	struct seen *s = ctx;
	const struct lp_ev_hdr *h = data;

	assert_true(size >= sizeof(*h));
	if (h->type == LP_EV_EXEC || h->type == LP_EV_EXIT) {
		if ((pid_t)h->pid != s->pid)
			return 0;
		if (h->type == LP_EV_EXEC) {
			s->execs++;
			memcpy(s->exec_comm, h->comm, LP_BPF_COMM_LEN);
		} else {
			s->exits++;
		}
		return 0;
	}
	assert_int_equal(h->type, LP_EV_SAMPLE);
	const struct lp_ev_sample *e = data;

	assert_true(size >= LP_EV_SAMPLE_FIXED_SIZE + (size_t)(e->nkstack + e->nustack) * 8);
	if (s->stack_bytes) {
		const uint8_t *copy = (const uint8_t *)&e->stack[e->nkstack + e->nustack];
		bool ret = false;

		/* the copy replaces the frame-pointer walk, and only its bytes travel */
		if (e->nustack || !e->stack_len || e->stack_len > s->stack_bytes ||
		    size < LP_EV_SAMPLE_FIXED_SIZE + (size_t)e->nkstack * 8 + e->stack_len)
			s->bad_copy++;
		/* a return address into the workload's text: chain_* called it */
		for (uint32_t off = 0; off + 8 <= e->stack_len && !ret; off += 8) {
			uint64_t v;

			memcpy(&v, copy + off, 8);
			ret = v >= s->text_lo && v < s->text_hi;
		}
		s->copy_with_ret += ret;
		if (s->fs && h->tid != h->pid) {
			s->thread_samples++;
			s->past_fs += e->sp + e->stack_len > s->fs;
			s->at_fs += e->sp + e->stack_len == s->fs;
		}
		s->samples++;
		if ((pid_t)h->pid != s->pid)
			s->bad_pid++;
		return 0;
	}
	s->samples++;
	if ((pid_t)h->pid != s->pid)
		s->bad_pid++;
	/*
	 * Outside the workload's text: a sample that hit inside the kernel
	 * (syscall, page fault) has the user IP where it entered, anywhere;
	 * one without a kernel stack hit user code elsewhere (the clock read
	 * in the vDSO or libc, ld.so): one of the process's executable
	 * mappings, checked at the end (check_outside_ips)
	 */
	if ((e->ip < s->text_lo || e->ip >= s->text_hi) && !e->nkstack) {
		if (s->nout < (int)(sizeof(s->out_ip) / sizeof(s->out_ip[0])))
			s->out_ip[s->nout++] = e->ip;
		else
			s->out_over++;
	}
	if (e->nustack < 3)
		s->short_ustack++;
	if (e->nkstack) {
		s->with_kstack++;
		for (int i = 0; i < e->nkstack; i++)
			if (e->stack[i] < 0xffff800000000000ull)
				s->bad_kaddr++;
	}
	/* cpu-clock period in ns: 1e9 / FREQ within a factor of two */
	if (e->period_ns < 1000000000ull / FREQ / 2 || e->period_ns > 2000000000ull / FREQ)
		s->bad_period++;
	return 0;
}

/*
 * The executable mappings of pid, all of them or those whose line holds
 * name: at most max, into lo[i]..hi[i]; returns how many.
 */
static int exec_maps(pid_t pid, const char *name, uint64_t *lo, uint64_t *hi, int max)
{
	char path[64], line[512];
	int n = 0;
	FILE *f;

	snprintf(path, sizeof(path), "/proc/%d/maps", pid);
	f = fopen(path, "r");
	assert_non_null(f);
	while (fgets(line, sizeof(line), f)) {
		unsigned long long l, h;
		char perms[5];

		if (sscanf(line, "%llx-%llx %4s", &l, &h, perms) == 3 && perms[2] == 'x' &&
		    (!name || strstr(line, name))) {
			assert_true(n < max);
			lo[n] = l;
			hi[n++] = h;
		}
	}
	fclose(f);
	return n;
}

/*
 * Waits (up to 30 s: a loaded machine can take long to exec) until the
 * forked child runs the workload whose path ends in name, then finds its
 * executable mapping.
 */
static void find_text(struct seen *s, const char *name)
{
	uint64_t lo[4], hi[4];
	char path[64], exe[4096];

	snprintf(path, sizeof(path), "/proc/%d/exe", s->pid);
	for (int i = 0;; i++) {
		ssize_t n = readlink(path, exe, sizeof(exe) - 1);

		if (n > 0 && (exe[n] = '\0', strstr(exe, name)))
			break;
		assert_true(i < 3000);
		usleep(10 * 1000);
	}
	assert_true(exec_maps(s->pid, name, lo, hi, 4) >= 1);
	s->text_lo = lo[0];
	s->text_hi = hi[0];
	assert_true(s->text_hi > s->text_lo);
}

/*
 * The rule for samples outside the workload's text without a kernel stack:
 * their IP is in one of the process's executable mappings (its own, libc,
 * ld.so, the vDSO). Read now, after the run, while the child still lives:
 * a sample taken before the dynamic loader mapped libc can only be in what
 * was mapped then, which is still mapped. Returns how many are not.
 */
static int check_outside_ips(const struct seen *s)
{
	uint64_t x_lo[64], x_hi[64];
	int nx = exec_maps(s->pid, NULL, x_lo, x_hi, 64), bad = s->out_over;

	for (int k = 0; k < s->nout; k++) {
		bool mapped = false;

		for (int i = 0; i < nx && !mapped; i++)
			mapped = s->out_ip[k] >= x_lo[i] && s->out_ip[k] < x_hi[i];
		bad += !mapped;
	}
	return bad;
}

static void run_attach(struct run *r, struct seen *s, uint32_t key, uint8_t one,
		       const uint32_t *cpus, int ncpus, bool raw)
{
	assert_int_equal(bpf_map__update_elem(r->skel->maps.pids, &key, sizeof(key), &one,
					      sizeof(one), BPF_ANY),
			 0);
	r->rb = ring_buffer__new(bpf_map__fd(r->skel->maps.events), on_event, s, NULL);
	assert_non_null(r->rb);
	for (int i = 0; i < ncpus; i++) {
		struct perf_event_attr attr = {.type = PERF_TYPE_SOFTWARE,
					       .size = sizeof(attr),
					       .config = PERF_COUNT_SW_CPU_CLOCK,
					       .sample_freq = FREQ,
					       .freq = 1};
		int fd = (int)syscall(__NR_perf_event_open, &attr, -1, (int)cpus[i], -1,
				      PERF_FLAG_FD_CLOEXEC);

		assert_true(fd >= 0);
		r->pfds[r->npfds++] = fd;
		r->links[r->nlinks] =
			bpf_program__attach_perf_event(r->skel->progs.on_cpu_sample, fd);
		assert_non_null(r->links[r->nlinks]);
		r->nlinks++;
	}
	r->links[r->nlinks] =
		bpf_program__attach(raw ? r->skel->progs.on_exec_raw : r->skel->progs.on_exec);
	assert_non_null(r->links[r->nlinks++]);
	r->links[r->nlinks] =
		bpf_program__attach(raw ? r->skel->progs.on_exit_raw : r->skel->progs.on_exit);
	assert_non_null(r->links[r->nlinks++]);
}

static void run_start(struct run *r, struct seen *s, pid_t pid, bool raw)
{
	uint32_t cpus[LP_MAX_CPUS], key = (uint32_t)pid;
	int ncpus = lp_online_cpus(cpus, LP_MAX_CPUS);
	uint8_t one = 1;

	assert_true(ncpus > 0);
	memset(r, 0, sizeof(*r));
	r->skel = profile_bpf__open();
	assert_non_null(r->skel);
	r->skel->rodata->filter_pids = true;
	r->skel->rodata->stack_bytes = s->stack_bytes;
	bpf_map__set_max_entries(r->skel->maps.events, 1 << 20);
	bpf_map__set_max_entries(r->skel->maps.scratch, cpus[ncpus - 1] + 1);
	/* fitted to this kernel as the collector fits them (LOWPROF_FALLBACKS too) */
	assert_int_equal(coll_features__probe(&r->feat), 0);
	coll_features__apply_profile(&r->feat, r->skel, raw);
	assert_int_equal(profile_bpf__load(r->skel), 0);
	run_attach(r, s, key, one, cpus, ncpus, raw);
}

static void run_stop(struct run *r)
{
	for (int i = 0; i < r->nlinks; i++)
		bpf_link__destroy(r->links[i]);
	for (int i = 0; i < r->npfds; i++)
		close(r->pfds[i]);
	ring_buffer__consume(r->rb);
	ring_buffer__free(r->rb);
	profile_bpf__destroy(r->skel);
}

static void drain_for(struct run *r, int ms)
{
	for (int t = 0; t < ms; t += 100) {
		usleep(100 * 1000);
		ring_buffer__consume(r->rb);
	}
}

/* CPU time (user + system, all threads) pid has used so far, in ms */
static long cpu_ms(pid_t pid)
{
	char path[64], buf[1024], *p;
	unsigned long ut, st;
	size_t n;
	FILE *f;

	snprintf(path, sizeof(path), "/proc/%d/stat", pid);
	f = fopen(path, "r");
	assert_non_null(f);
	n = fread(buf, 1, sizeof(buf) - 1, f);
	fclose(f);
	buf[n] = '\0';
	/* after "pid (comm) ": state, 5 numbers, flags and 4 fault counts, utime, stime */
	p = strrchr(buf, ')');
	assert_non_null(p);
	assert_int_equal(
		sscanf(p + 1, " %*c %*d %*d %*d %*d %*d %*u %*u %*u %*u %*u %lu %lu", &ut, &st), 2);
	return (long)((ut + st) * 1000 / (unsigned long)sysconf(_SC_CLK_TCK));
}

/*
 * Drains until pid has had CPU_WANT_MS of CPU since the programs were
 * attached (on a loaded machine that takes longer than the wall time; up
 * to 60 s), and returns the CPU time it had: the samples are checked
 * against it, never against the wall time.
 */
#define CPU_WANT_MS 2000
static long drain_cpu(struct run *r, pid_t pid)
{
	long c0 = cpu_ms(pid), c = c0;
	time_t end = time(NULL) + 60;

	while (c - c0 < CPU_WANT_MS && time(NULL) < end) {
		usleep(100 * 1000);
		ring_buffer__consume(r->rb);
		c = cpu_ms(pid);
	}
	/* too little to tell a loss from the noise: a machine loaded far beyond the tests' */
	assert_true(c - c0 >= CPU_WANT_MS / 2);
	return c - c0;
}

/*
 * Whether got samples are as many as FREQ takes of cpu_ms of one process's
 * CPU time (E), within its noise: on a shared CPU the workload runs in
 * slices shorter than the period, each seen with probability its length /
 * period, so the count's standard deviation is up to sqrt(E): at least
 * E - 4 sqrt(E), and 3 fewer for the 10 ms ticks the CPU time is counted
 * in. Fewer means samples were lost or missed. (Alone on a CPU it is seen
 * at every period: E exactly.)
 */
static bool enough_samples(int got, long cpu)
{
	double e = (double)cpu * FREQ / 1000;

	printf("%d samples for %ld ms of the workload's CPU: %.0f expected, at least %.0f\n", got,
	       cpu, e, e - 4 * sqrt(e) - 3);
	return got >= e - 4 * sqrt(e) - 3;
}

static void test_samples_of_one_process(void **state)
{
	struct seen s = {0};
	struct run r;
	pid_t child = fork();

	if (child == 0) {
		execl(LP_WORKLOAD, LP_WORKLOAD, "20", (char *)NULL);
		_exit(127);
	}
	s.pid = child;
	find_text(&s, "chain-fp");
	run_start(&r, &s, child, false);
	long cpu = drain_cpu(&r, child);
	const struct lp_bpf_stats st = r.skel->bss->stats;

	run_stop(&r);
	s.bad_ip = check_outside_ips(&s);
	kill(child, SIGKILL);
	waitpid(child, NULL, 0);

	printf("samples %d (stats: %llu filtered, %llu ring full), kstack in %d, %d outside its "
	       "text without one\n",
	       s.samples, (unsigned long long)st.filtered, (unsigned long long)st.ringbuf_full,
	       s.with_kstack, s.nout);
	assert_true(enough_samples(s.samples, cpu));
	assert_int_equal(s.bad_pid, 0);
	assert_int_equal(s.bad_ip, 0);
	assert_int_equal(s.bad_kaddr, 0);
	assert_int_equal(s.bad_period, 0);
	/* main -> chain_one -> chain_two (-> chain_three) -> chain_leaf */
	assert_true(s.short_ustack <= s.samples / 10);
	assert_int_equal(st.ringbuf_full, 0);
}

/*
 * With stack_bytes set, samples carry the top of the user stack instead of
 * a frame-pointer walk: the workload built without frame pointers still has
 * its callers' return addresses in the copy, which is all the symbolizer's
 * unwinder needs.
 */
static void test_stack_copies(void **state)
{
	struct seen s = {.stack_bytes = 16384};
	struct run r;
	pid_t child = fork();

	if (child == 0) {
		execl(LP_WORKLOAD_NOFP, LP_WORKLOAD_NOFP, "20", (char *)NULL);
		_exit(127);
	}
	s.pid = child;
	find_text(&s, "chain-nofp");
	run_start(&r, &s, child, false);
	long cpu = drain_cpu(&r, child);
	const struct lp_bpf_stats st = r.skel->bss->stats;

	run_stop(&r);
	kill(child, SIGKILL);
	waitpid(child, NULL, 0);
	printf("samples %d, copies with a return address into the workload %d\n", s.samples,
	       s.copy_with_ret);
	assert_true(enough_samples(s.samples, cpu));
	assert_int_equal(s.bad_pid, 0);
	assert_int_equal(s.bad_copy, 0);
	/* chain_leaf is always called from chain_three, inside the copy */
	assert_true(s.copy_with_ret >= s.samples * 9 / 10);
	assert_int_equal(st.ringbuf_full, 0);
}

/*
 * A thread that was running before the programs were loaded (so its first
 * stack pointer was never seen): its copies end at its thread pointer, the
 * top of its frames' part of the stack mapping; the thread descriptor
 * above it, with its stack and pointer guards, is not copied.
 */
static void test_stack_copies_thread(void **state)
{
	struct seen s = {.stack_bytes = 16384};
	char line[64] = {0};
	struct run r;
	int out[2];
	ssize_t n;
	pid_t child;

	assert_int_equal(pipe(out), 0);
	child = fork();
	if (child == 0) {
		dup2(out[1], STDOUT_FILENO);
		close(out[0]);
		execl(LP_WORKLOAD_NOFP, LP_WORKLOAD_NOFP, "20", "0", "thread", (char *)NULL);
		_exit(127);
	}
	close(out[1]);
	n = read(out[0], line, sizeof(line) - 1);
	close(out[0]);
	assert_true(n > 2);
	s.fs = strtoull(line, NULL, 16);
	assert_true(s.fs != 0);
	s.pid = child;
	find_text(&s, "chain-nofp");
	run_start(&r, &s, child, false);
	long cpu = drain_cpu(&r, child);
	run_stop(&r);
	kill(child, SIGKILL);
	waitpid(child, NULL, 0);
	printf("thread samples %d: copies ending at the thread pointer %d, past it %d, with a "
	       "return address into the workload %d of %d\n",
	       s.thread_samples, s.at_fs, s.past_fs, s.copy_with_ret, s.samples);
	/* the main thread waits for the one that runs the chain: its CPU is the process's */
	assert_true(enough_samples(s.thread_samples, cpu));
	assert_int_equal(s.bad_copy, 0);
	assert_int_equal(s.past_fs, 0);
	assert_true(s.at_fs >= s.thread_samples * 9 / 10);
	assert_true(s.copy_with_ret >= s.samples * 9 / 10);
}

static void exec_and_exit(bool raw)
{
	struct seen s = {0};
	struct run r;
	int go[2];
	char c = 0;
	pid_t child;

	assert_int_equal(pipe(go), 0);
	child = fork();
	if (child == 0) {
		close(go[1]);
		if (read(go[0], &c, 1) != 1)
			_exit(126);
		execl("/bin/true", "true", (char *)NULL);
		_exit(127);
	}
	close(go[0]);
	s.pid = child;
	run_start(&r, &s, child, raw);
	assert_int_equal(write(go[1], &c, 1), 1);
	close(go[1]);
	waitpid(child, NULL, 0);
	drain_for(&r, 300);
	run_stop(&r);
	assert_int_equal(s.execs, 1);
	assert_string_equal(s.exec_comm, "true");
	assert_int_equal(s.exits, 1);
}

static void test_exec_and_exit_events(void **state)
{
	exec_and_exit(false);
}

/* the raw_tp fallback the collector uses where tp_btf is refused */
static void test_exec_and_exit_events_raw_tp(void **state)
{
	exec_and_exit(true);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_samples_of_one_process),
		cmocka_unit_test(test_stack_copies),
		cmocka_unit_test(test_stack_copies_thread),
		cmocka_unit_test(test_exec_and_exit_events),
		cmocka_unit_test(test_exec_and_exit_events_raw_tp),
	};

	if (geteuid() != 0) {
		printf("SKIP: the BPF tests load programs and need root\n");
		return 77;
	}
	return cmocka_run_group_tests(tests, NULL, NULL);
}
