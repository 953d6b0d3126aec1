// SPDX-License-Identifier: MIT
#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <curl/curl.h>

#include "lowprof/log.h"
#include "lowprof/parse.h"
#include "lowprof/user.h"
#include "exporter.h"

static const char usage[] =
	"Usage: lowprof-exporter [OPTIONS] (--pyroscope URL | --otlp URL)...\n"
	"\n"
	"Delivers the windows 'lowprof run' (or a spooling lowprof-symbolizer)\n"
	"writes into its spool to the backends teams already run, in order, each\n"
	"window at least once:\n"
	"  --pyroscope URL  Grafana Pyroscope's push API (URL/push.v1.PusherService/Push,\n"
	"                   Connect, binary protobuf): one series per service and\n"
	"                   container, labels __name__ (process_cpu, off_cpu),\n"
	"                   service_name, host_name, container_id, pod_uid; the\n"
	"                   window's gzip'd pprof, pid and comm as sample labels\n"
	"  --otlp URL       OpenTelemetry profiles over OTLP/HTTP (POST\n"
	"                   URL/v1development/profiles, application/x-protobuf, gzip),\n"
	"                   one resource per process with host.name, service.name,\n"
	"                   process.pid, process.executable.*, container.id, k8s.pod.uid\n"
	"A window leaves the spool when every destination accepted it (2xx). No\n"
	"answer, 408, 429 and 5xx are tried again after a backoff (1 s doubling to\n"
	"--max-backoff, with jitter) or the answer's Retry-After; another 4xx sets\n"
	"the window aside in SPOOL/rejected/ (the newest --keep-rejected kept) and\n"
	"is said once per cause. The spool's byte budget (lowprof run --spool-bytes)\n"
	"removes the oldest windows while a backend is away: collection never\n"
	"waits for the exporter. Stopped, it keeps nothing but the spool: started\n"
	"again, it sends what is still there.\n"
	"\n"
	"Started as root it becomes --user; it runs under a seccomp filter of its\n"
	"own: sockets, files opened to read, spool files removed or moved aside,\n"
	"threads; no exec, no ptrace, no ELF parsing, no new process.\n"
	"\n"
	"Options:\n"
	"      --spool DIR        the spool (default /var/lib/lowprof/spool)\n"
	"      --pyroscope URL    push to Pyroscope at URL (http:// or https://)\n"
	"      --otlp URL         send OTLP profiles to the collector at URL\n"
	"      --pyroscope-headers FILE, --otlp-headers FILE\n"
	"                         extra headers for that destination, one \"Name: value\"\n"
	"                         per line (Authorization, X-Scope-OrgID, ...). FILE\n"
	"                         must be this user's (or root's) and readable by\n"
	"                         nobody else (0600; 0440 if the group is this\n"
	"                         user's): secrets never go on a command line (nor\n"
	"                         in URLs: a URL with user:password@ is refused)\n"
	"      --ca-file FILE     trust these CAs (PEM) for https, instead of the\n"
	"                         system's\n"
	"      --service-name NAME  Pyroscope's service_name and OTLP's service.name for\n"
	"                         every sample (default: per sample, \"container/\" and\n"
	"                         the container id's first 12 characters, else the\n"
	"                         executable's name)\n"
	"      --timeout SEC      one request's time limit (default 30)\n"
	"      --max-backoff SEC  the longest wait between tries (default 60)\n"
	"      --stop-grace SEC   on SIGTERM/SIGINT, go on delivering for up to SEC to\n"
	"                         empty the spool (default 5; 0: stop at once); a\n"
	"                         second signal stops at once\n"
	"      --keep-rejected N  refused windows kept in SPOOL/rejected/ (default 16)\n"
	"      --oneshot          exit once every window in the spool is delivered\n"
	"      --metrics ADDR     serve Prometheus metrics at http://ADDR/metrics\n"
	"                         (HOST:PORT, e.g. 127.0.0.1:9464; off by default)\n"
	"      --user USER        started as root, become USER (default lowprof)\n"
	"      --no-sandbox       no seccomp filter (debugging)\n"
	"      --ready-fd FD      write a byte to FD and close it once set up (lowprof run)\n"
	"      --exit-with-parent stop (as on SIGTERM) when the parent process dies\n"
	"      --check-sandbox DIR  enter the seccomp filter with DIR (an empty directory\n"
	"                         of --user's) as the spool, try what it must refuse,\n"
	"                         print each; exit 0 when all were refused (give\n"
	"                         --user before it)\n"
	"  -v, --verbose          say each window sent (twice: more)\n"
	"  -q, --quiet            errors only\n"
	"  -h, --help             this help\n"
	"      --version          the version\n";

enum {
	OPT_SPOOL = 256,
	OPT_PYRO,
	OPT_OTLP,
	OPT_PYRO_HDR,
	OPT_OTLP_HDR,
	OPT_CA,
	OPT_SERVICE,
	OPT_TIMEOUT,
	OPT_BACKOFF,
	OPT_GRACE,
	OPT_KEEP,
	OPT_ONESHOT,
	OPT_METRICS,
	OPT_USER,
	OPT_NO_SANDBOX,
	OPT_VERSION,
	OPT_READY_FD,
	OPT_CHECK_SANDBOX,
	OPT_EXIT_WITH_PARENT,
};

static const struct option longopts[] = {
	{"spool", required_argument, NULL, OPT_SPOOL},
	{"pyroscope", required_argument, NULL, OPT_PYRO},
	{"otlp", required_argument, NULL, OPT_OTLP},
	{"pyroscope-headers", required_argument, NULL, OPT_PYRO_HDR},
	{"otlp-headers", required_argument, NULL, OPT_OTLP_HDR},
	{"ca-file", required_argument, NULL, OPT_CA},
	{"service-name", required_argument, NULL, OPT_SERVICE},
	{"timeout", required_argument, NULL, OPT_TIMEOUT},
	{"max-backoff", required_argument, NULL, OPT_BACKOFF},
	{"stop-grace", required_argument, NULL, OPT_GRACE},
	{"keep-rejected", required_argument, NULL, OPT_KEEP},
	{"oneshot", no_argument, NULL, OPT_ONESHOT},
	{"metrics", required_argument, NULL, OPT_METRICS},
	{"user", required_argument, NULL, OPT_USER},
	{"no-sandbox", no_argument, NULL, OPT_NO_SANDBOX},
	{"verbose", no_argument, NULL, 'v'},
	{"quiet", no_argument, NULL, 'q'},
	{"help", no_argument, NULL, 'h'},
	{"version", no_argument, NULL, OPT_VERSION},
	{"ready-fd", required_argument, NULL, OPT_READY_FD},
	{"check-sandbox", required_argument, NULL, OPT_CHECK_SANDBOX},
	{"exit-with-parent", no_argument, NULL, OPT_EXIT_WITH_PARENT},
	{0},
};

/*
 * Whether libcurl can parse url (a port out of range, an unclosed IPv6
 * bracket): such a URL never works, and found only when sending it would
 * be retried for as long as the exporter runs.
 */
static int check_url_parses(const char *opt, const char *url)
{
	CURLU *h = curl_url();
	CURLUcode rc;

	if (!h) {
		lp_err("%s: out of memory", opt);
		return -ENOMEM;
	}
	rc = curl_url_set(h, CURLUPART_URL, url, 0);
	curl_url_cleanup(h);
	if (rc != CURLUE_OK) {
		lp_err("%s %s: not a URL: %s", opt, url, curl_url_strerror(rc));
		return -EINVAL;
	}
	return 0;
}

/* http:// or https://, a host, and no user:password@ in it */
static int check_url(const char *opt, const char *url)
{
	const char *auth = strstr(url, "://"), *end;

	if (strncmp(url, "http://", 7) && strncmp(url, "https://", 8)) {
		lp_err("%s %s: give an http:// or https:// URL", opt, url);
		return -EINVAL;
	}
	auth += 3;
	end = auth + strcspn(auth, "/?#");
	if (end == auth) {
		lp_err("%s %s: the URL has no host", opt, url);
		return -EINVAL;
	}
	if (memchr(auth, '@', (size_t)(end - auth))) {
		lp_err("%s: a URL with credentials in it is refused (they would show in ps and "
		       "logs): put an Authorization header in --%s-headers FILE instead",
		       opt, strcmp(opt, "--otlp") ? "pyroscope" : "otlp");
		return -EINVAL;
	}
	for (const char *p = url; *p; p++)
		if ((unsigned char)*p <= 0x20 || *p == 0x7f) {
			lp_err("%s: the URL has a space or a control character", opt);
			return -EINVAL;
		}
	return check_url_parses(opt, url);
}

static int seconds(const char *opt, const char *arg, uint64_t max, uint32_t *ms)
{
	uint64_t v;

	if (lp_parse_uint(arg, max, &v)) {
		lp_err("%s %s: give whole seconds, at most %llu", opt, arg,
		       (unsigned long long)max);
		return -EINVAL;
	}
	*ms = (uint32_t)(v * 1000);
	return 0;
}

int main(int argc, char **argv)
{
	struct exp_opts o = {
		.spool = "/var/lib/lowprof/spool",
		.user = "lowprof",
		.timeout_ms = 30000,
		.max_backoff_ms = 60000,
		.stop_grace_ms = 5000,
		.keep_rejected = 16,
		.sandbox = true,
		.ready_fd = -1,
	};
	int level = LP_LOG_INFO, c;
	uint64_t v;

	lp_log_init("lowprof-exporter", LP_LOG_INFO);
	while ((c = getopt_long(argc, argv, "vqh", longopts, NULL)) != -1) {
		switch (c) {
		case OPT_SPOOL:
			o.spool = optarg;
			break;
		case OPT_PYRO:
			if (check_url("--pyroscope", optarg))
				return 2;
			o.url[EXP_PYROSCOPE] = optarg;
			break;
		case OPT_OTLP:
			if (check_url("--otlp", optarg))
				return 2;
			o.url[EXP_OTLP] = optarg;
			break;
		case OPT_PYRO_HDR:
			o.headers_file[EXP_PYROSCOPE] = optarg;
			break;
		case OPT_OTLP_HDR:
			o.headers_file[EXP_OTLP] = optarg;
			break;
		case OPT_CA:
			o.ca_file = optarg;
			break;
		case OPT_SERVICE:
			if (!*optarg || strlen(optarg) > 120) {
				lp_err("--service-name: give 1 to 120 characters");
				return 2;
			}
			o.service_name = optarg;
			break;
		case OPT_TIMEOUT:
			if (seconds("--timeout", optarg, 3600, &o.timeout_ms) || !o.timeout_ms) {
				if (!o.timeout_ms)
					lp_err("--timeout: at least 1 second");
				return 2;
			}
			break;
		case OPT_BACKOFF:
			if (seconds("--max-backoff", optarg, 3600, &o.max_backoff_ms) ||
			    o.max_backoff_ms < 1000) {
				if (o.max_backoff_ms < 1000)
					lp_err("--max-backoff: at least 1 second");
				return 2;
			}
			break;
		case OPT_GRACE:
			if (seconds("--stop-grace", optarg, 600, &o.stop_grace_ms))
				return 2;
			break;
		case OPT_KEEP:
			if (lp_parse_uint(optarg, 100000, &v)) {
				lp_err("--keep-rejected %s: give a number up to 100000", optarg);
				return 2;
			}
			o.keep_rejected = (uint32_t)v;
			break;
		case OPT_ONESHOT:
			o.oneshot = true;
			break;
		case OPT_METRICS:
			o.metrics = optarg;
			break;
		case OPT_USER:
			o.user = optarg;
			break;
		case OPT_NO_SANDBOX:
			o.sandbox = false;
			break;
		case 'v':
			level = level < LP_LOG_INFO ? LP_LOG_INFO : LP_LOG_DEBUG;
			break;
		case 'q':
			level = LP_LOG_ERROR;
			break;
		case 'h':
			fputs(usage, stdout);
			return 0;
		case OPT_READY_FD:
			if (lp_parse_uint(optarg, 1023, &v) || v < 3) {
				lp_err("--ready-fd %s: give an inherited descriptor, 3 or more",
				       optarg);
				return 2;
			}
			o.ready_fd = (int)v;
			break;
		case OPT_EXIT_WITH_PARENT:
			o.exit_with_parent = true;
			o.parent = getppid();
			break;
		case OPT_CHECK_SANDBOX:
			if (lp_become_user(o.user, "--user"))
				return 2;
			return exp_sandbox_check(optarg);
		case OPT_VERSION:
			printf("lowprof-exporter %s\n", LOWPROF_VERSION);
			return 0;
		default:
			fputs(usage, stderr);
			return 2;
		}
	}
	if (optind < argc) {
		lp_err("unexpected argument: %s (see --help)", argv[optind]);
		return 2;
	}
	if (!o.url[EXP_PYROSCOPE] && !o.url[EXP_OTLP]) {
		lp_err("no destination: give --pyroscope URL, --otlp URL or both (see --help)");
		return 2;
	}
	for (int t = 0; t < EXP_NDEST; t++)
		if (o.headers_file[t] && !o.url[t]) {
			lp_err("--%s-headers without --%s", t == EXP_OTLP ? "otlp" : "pyroscope",
			       t == EXP_OTLP ? "otlp" : "pyroscope");
			return 2;
		}
	lp_log_init("lowprof-exporter", (enum lp_log_level)level);
	return exp_run(&o);
}
