/* The floor for a waiting scenario instance (issue 5): a bare libuv timer plus a small struct.
 *
 *   timers N INTERVAL_MS DURATION_S
 *
 * Creates N repeating libuv timers, each with its own 64-byte record (two allocations per
 * instance, as an engine would make them), spread evenly over one interval so that they fire
 * at a steady rate of N / INTERVAL per second. The callback touches the record (an attempt
 * count and a deadline), nothing else: no I/O. After DURATION_S it prints one line of JSON
 * with the RSS (from /proc/self/statm, before and after creating the timers) and the CPU the
 * process used while the timers fired (getrusage), and exits.
 *
 * bench/idle-instances compiles it with `cc -O2 timers.c -luv` into a temporary directory.
 */
#include <inttypes.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/resource.h>
#include <sys/time.h>
#include <unistd.h>
#include <uv.h>

typedef struct {
  uint64_t id;
  uint64_t attempts;
  uint64_t deadline_ms;
  uint64_t last_fire_ms;
  uint32_t step;
  uint32_t state;
  char pad[24];
} record_t; /* 64 bytes */

_Static_assert(sizeof(record_t) == 64, "record_t should be 64 bytes");

static uint64_t fires = 0;

static void on_fire(uv_timer_t* t) {
  record_t* r = (record_t*)t->data;
  r->attempts++;
  r->last_fire_ms = uv_now(t->loop);
  if (r->last_fire_ms > r->deadline_ms) r->state = 1;
  fires++;
}

static long rss_bytes(void) {
  long pages = 0, resident = 0;
  FILE* f = fopen("/proc/self/statm", "r");
  if (!f) return -1;
  if (fscanf(f, "%ld %ld", &pages, &resident) != 2) resident = -1;
  fclose(f);
  return resident * sysconf(_SC_PAGESIZE);
}

static double cpu_seconds(void) {
  struct rusage ru;
  getrusage(RUSAGE_SELF, &ru);
  return ru.ru_utime.tv_sec + ru.ru_utime.tv_usec / 1e6 + ru.ru_stime.tv_sec + ru.ru_stime.tv_usec / 1e6;
}

static double wall_seconds(void) {
  struct timeval tv;
  gettimeofday(&tv, NULL);
  return tv.tv_sec + tv.tv_usec / 1e6;
}

static void on_stop(uv_timer_t* t) { uv_stop(t->loop); }

int main(int argc, char** argv) {
  if (argc != 4) {
    fprintf(stderr, "usage: timers N INTERVAL_MS DURATION_S\n");
    return 2;
  }
  uint64_t n = strtoull(argv[1], NULL, 10);
  uint64_t interval = strtoull(argv[2], NULL, 10);
  double duration = atof(argv[3]);
  if (n == 0 || interval == 0 || duration <= 0) {
    fprintf(stderr, "timers: N, INTERVAL_MS and DURATION_S must be > 0\n");
    return 2;
  }
  uv_loop_t* loop = uv_default_loop();
  long rss0 = rss_bytes();
  double setup0 = wall_seconds();
  uv_update_time(loop);
  uint64_t now = uv_now(loop);
  for (uint64_t i = 0; i < n; ++i) {
    uv_timer_t* t = malloc(sizeof(uv_timer_t));
    record_t* r = calloc(1, sizeof(record_t));
    if (!t || !r) {
      fprintf(stderr, "timers: out of memory at %" PRIu64 "\n", i);
      return 1;
    }
    r->id = i;
    r->deadline_ms = now + 240 * interval;
    uv_timer_init(loop, t);
    t->data = r;
    uv_timer_start(t, on_fire, 1 + (i * interval) / n, interval); /* spread over one interval */
  }
  double setup_s = wall_seconds() - setup0;
  long rss1 = rss_bytes();

  uv_timer_t stop;
  uv_timer_init(loop, &stop);
  uv_timer_start(&stop, on_stop, (uint64_t)(duration * 1000), 0);
  double cpu0 = cpu_seconds(), wall0 = wall_seconds();
  uv_run(loop, UV_RUN_DEFAULT);
  double cpu = cpu_seconds() - cpu0, wall = wall_seconds() - wall0;
  long rss2 = rss_bytes();
  double cores = cpu / wall;
  double fires_per_s = fires / wall;
  printf("{\"timers\": %" PRIu64 ", \"interval_ms\": %" PRIu64 ", \"duration_s\": %.2f, \"setup_s\": %.3f, "
         "\"uv_timer_t_bytes\": %zu, \"record_bytes\": %zu, "
         "\"rss_before_bytes\": %ld, \"rss_after_setup_bytes\": %ld, \"rss_end_bytes\": %ld, "
         "\"rss_per_timer_bytes\": %.1f, \"cpu_s\": %.3f, \"cores\": %.4f, \"fires\": %" PRIu64 ", "
         "\"fires_per_s\": %.1f, \"cpu_us_per_fire\": %.3f}\n",
         n, interval, wall, setup_s, sizeof(uv_timer_t), sizeof(record_t), rss0, rss1, rss2,
         (double)(rss2 - rss0) / n, cpu, cores, fires, fires_per_s, fires ? cpu * 1e6 / fires : 0.0);
  return 0;
}
