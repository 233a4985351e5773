"""Shared pieces of corral's benchmarks (bench/seed-polling, bench/idle-instances, bench/poll-scale,
bench/http-client, bench/rebalance, bench/reload, bench/soak, ...).

Standard library only. Everything here talks to 127.0.0.1 or a Unix socket, and every process
it starts is started in a process group of its own so that stop() can end the whole group by
its id (never by name).

What is measured, and how:
- latency: GET /latency over one keep-alive TCP connection, one probe every 10 ms from this
  (single-threaded) driver; a probe with no answer within PROBE_TIMEOUT_S counts as unanswered
  and is recorded at PROBE_TIMEOUT_S, the worst latency, not dropped;
- CPU: utime+stime from /proc/<pid>/stat of the system's root process and all its descendants
  (threads are included in their process's counters);
- RSS: the sum of resident pages from /proc/<pid>/statm over the same processes, sampled every
  200 ms (a sum over forked processes counts shared pages once per process: an upper bound);
- polls received: corral-target's GET /stats "polls" counter (it counts GET /status/<id>).
"""
import http.client
import json
import re
import os
import platform
import select
import shutil
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import threading
import time

PAGE = os.sysconf("SC_PAGE_SIZE")
TICK = os.sysconf("SC_CLK_TCK")
PROBE_TIMEOUT_S = 1.0
PROBE_EVERY_S = 0.010
RSS_EVERY_S = 0.200

REPO = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
DEFAULT_BIN = os.path.join(REPO, "build", "bin")


class BenchError(Exception):
    pass


# --------------------------------------------------------------------------- signals

def exit_on_sigterm():
    """Turns SIGTERM (and SIGHUP) into SystemExit so that every finally: block runs."""
    def handler(signum, frame):
        raise SystemExit(128 + signum)
    signal.signal(signal.SIGTERM, handler)
    signal.signal(signal.SIGHUP, handler)


# --------------------------------------------------------------------------- /proc

def descendants(pid):
    """pid and every live descendant, through /proc/<pid>/task/<tid>/children."""
    out, todo = [], [pid]
    while todo:
        p = todo.pop()
        out.append(p)
        try:
            for tid in os.listdir(f"/proc/{p}/task"):
                try:
                    with open(f"/proc/{p}/task/{tid}/children") as f:
                        todo += [int(c) for c in f.read().split()]
                except OSError:
                    pass
        except OSError:
            pass
    return out


def cpu_seconds(pids):
    total = 0
    for p in pids:
        try:
            with open(f"/proc/{p}/stat") as f:
                fields = f.read().rsplit(")", 1)[1].split()
            total += int(fields[11]) + int(fields[12])
        except (OSError, IndexError):
            pass
    return total / TICK


def cpu_seconds_with_reaped(pid):
    """CPU seconds of pid and of the children it has waited for (cutime + cstime): with the live
    descendants' cpu_seconds() added, a supervisor's total even when its children come and go."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            fields = f.read().rsplit(")", 1)[1].split()
        return sum(int(x) for x in fields[11:15]) / TICK
    except (OSError, IndexError):
        return 0.0


def rss_bytes(pids):
    total = 0
    for p in pids:
        try:
            with open(f"/proc/{p}/statm") as f:
                total += int(f.read().split()[1]) * PAGE
        except (OSError, IndexError):
            pass
    return total


def pss_bytes(pids):
    """Proportional set size (shared pages split between sharers); read once, at a window's end."""
    total = 0
    for p in pids:
        try:
            with open(f"/proc/{p}/smaps_rollup") as f:
                for line in f:
                    if line.startswith("Pss:"):
                        total += int(line.split()[1]) * 1024
                        break
        except OSError:
            pass
    return total


def smaps_rollup(pids):
    """/proc/<pid>/smaps_rollup summed over pids, in bytes per field (Rss, Pss, Private_Dirty, ...)."""
    out = {}
    for p in pids:
        try:
            with open(f"/proc/{p}/smaps_rollup") as f:
                for line in f:
                    parts = line.split()
                    if len(parts) == 3 and parts[2] == "kB":
                        k = parts[0].rstrip(":")
                        out[k] = out.get(k, 0) + int(parts[1]) * 1024
        except OSError:
            pass
    return out


def open_fds(pid):
    """Open file descriptors of pid (entries of /proc/<pid>/fd); None when it is gone."""
    try:
        return len(os.listdir(f"/proc/{pid}/fd"))
    except OSError:
        return None


def file_bytes(paths):
    """Sizes of files by path (0 for a missing one)."""
    out = {}
    for p in paths:
        try:
            out[p] = os.path.getsize(p)
        except OSError:
            out[p] = 0
    return out


def prometheus_values(text, name):
    """The samples of metric `name` in Prometheus text: {label string (e.g. 'reason="x"'): value}."""
    out = {}
    for line in text.splitlines():
        if not line.startswith(name) or line.startswith("#"):
            continue
        head, _, value = line.rpartition(" ")
        metric, _, labels = head.partition("{")
        if metric != name:
            continue
        try:
            out[labels.rstrip("}")] = float(value)
        except ValueError:
            pass
    return out


def machine_nice_seconds():
    """CPU seconds the whole machine spent in niced processes (the "nice" column of /proc/stat)."""
    with open("/proc/stat") as f:
        return int(f.readline().split()[2]) / TICK


def machine_busy_seconds():
    """CPU seconds spent by the whole machine (all cores), from /proc/stat."""
    with open("/proc/stat") as f:
        parts = f.readline().split()[1:]
    v = [int(x) for x in parts]
    idle = v[3] + (v[4] if len(v) > 4 else 0)
    # guest time is already inside user/nice
    return (sum(v[:8]) - idle) / TICK


def machine_busy_cores(over_s=2.0):
    """Cores the whole machine keeps busy over the next over_s seconds."""
    b0, t0 = machine_busy_seconds(), time.time()
    time.sleep(over_s)
    return (machine_busy_seconds() - b0) / (time.time() - t0)


def wait_machine_quiet(max_wait_s, busy_below=0.15, over_s=2.0):
    """Waits (up to max_wait_s) until the machine is nearly idle. Returns (cores busy, waited s)."""
    t0 = time.time()
    while True:
        busy = machine_busy_cores(over_s)
        if busy < busy_below or time.time() - t0 >= max_wait_s:
            return round(busy, 3), round(time.time() - t0, 1)


def tcp_active_opens():
    """Connections this machine opened (connect() calls that started a handshake), from /proc/net/snmp."""
    with open("/proc/net/snmp") as f:
        lines = [l.split() for l in f if l.startswith("Tcp:")]
    return int(lines[1][lines[0].index("ActiveOpens")])


def tcp_established_to(port):
    """Established TCP connections whose remote end is 127.0.0.1:port."""
    n = 0
    want = f":{port:04X}"
    try:
        with open("/proc/net/tcp") as f:
            next(f)
            for line in f:
                parts = line.split()
                if parts[3] == "01" and parts[2].endswith(want):
                    n += 1
    except OSError:
        pass
    return n


def loadavg():
    with open("/proc/loadavg") as f:
        return f.read().strip()


def loadavg1():
    return float(loadavg().split()[0])


def machine_info(bin_dir=None):
    info = {
        "nproc": os.cpu_count(),
        "usable_cpus": len(os.sched_getaffinity(0)),
        "kernel": platform.release(),
        "os": _os_release(),
        "python": platform.python_version(),
        "loadavg_at_start": loadavg(),
        "fd_limit": _fd_limit(),
    }
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    info["cpu_model"] = line.split(":", 1)[1].strip()
                    break
        with open("/proc/meminfo") as f:
            info["mem_total_gib"] = round(int(f.readline().split()[1]) / 2**20, 1)
    except OSError:
        pass
    if bin_dir:
        info["corral_version"] = _cmd_out([os.path.join(bin_dir, "corral"), "--version"])
        # The commit (and whether the tree had changes), build type and libraries.
        build = _cmd_out([os.path.join(bin_dir, "corral"), "version", "--json"])
        try:
            info["corral_build"] = json.loads(build) if build else None
        except ValueError:
            info["corral_build"] = build
    info["node_version"] = _cmd_out(["node", "--version"])
    return info


def _fd_limit():
    import resource
    return resource.getrlimit(resource.RLIMIT_NOFILE)[0]


def _os_release():
    try:
        with open("/etc/os-release") as f:
            for line in f:
                if line.startswith("PRETTY_NAME="):
                    return line.split("=", 1)[1].strip().strip('"')
    except OSError:
        pass
    return platform.platform()


def _cmd_out(cmd):
    try:
        return subprocess.run(cmd, capture_output=True, text=True, timeout=10).stdout.strip()
    except (OSError, subprocess.SubprocessError):
        return None


# --------------------------------------------------------------------------- processes

class Proc:
    """A child in its own process group; stop() ends the group by its id."""

    def __init__(self, argv, log_path=None, stdout_pipe=False, cwd=None, env=None):
        self.argv = argv
        self.log_path = log_path
        out = subprocess.PIPE if stdout_pipe else (open(log_path, "w") if log_path else subprocess.DEVNULL)
        self.p = subprocess.Popen(argv, stdout=out, stderr=subprocess.STDOUT if not stdout_pipe else
                                  (open(log_path + ".err", "w") if log_path else None),
                                  text=True, cwd=cwd, env=env, start_new_session=True)
        self.pid = self.p.pid

    def alive(self):
        return self.p.poll() is None

    def read_listen_line(self, timeout=15):
        """Reads 'listening on HOST:PORT' from stdout; returns the port."""
        r, _, _ = select.select([self.p.stdout], [], [], timeout)
        if not r:
            raise BenchError(f"{self.argv[0]} did not say where it listens within {timeout}s")
        line = self.p.stdout.readline().strip()
        if "listening on" not in line:
            raise BenchError(f"{self.argv[0]}: unexpected first line {line!r}")
        m = re.search(r":(\d+)", line)
        if not m:
            raise BenchError(f"{self.argv[0]}: no port in {line!r}")
        return int(m.group(1))

    def stop(self, sig=signal.SIGTERM, grace=30.0):
        """Signals the process, waits up to grace, then SIGKILLs its whole group. Returns seconds."""
        t0 = time.time()
        if self.p.poll() is None:
            try:
                self.p.send_signal(sig)
            except ProcessLookupError:
                pass
            try:
                self.p.wait(grace)
            except subprocess.TimeoutExpired:
                pass
        try:
            os.killpg(self.pid, signal.SIGKILL)  # workers, threads' helpers: whatever is left
        except (ProcessLookupError, PermissionError):
            pass
        try:
            self.p.wait(10)
        except subprocess.TimeoutExpired:
            pass
        return time.time() - t0


def http_json(host, port, method, path, body=None, timeout=5.0):
    c = http.client.HTTPConnection(host, port, timeout=timeout)
    try:
        c.request(method, path, body=json.dumps(body) if body is not None else None,
                  headers={"Content-Type": "application/json"} if body is not None else {})
        r = c.getresponse()
        data = r.read()
        try:
            return r.status, json.loads(data or b"null")
        except ValueError:
            return r.status, data.decode(errors="replace")
    finally:
        c.close()


def free_tcp_port():
    """A TCP port on 127.0.0.1 that was free a moment ago (for servers that cannot listen on port 0)."""
    s = socket.socket()
    try:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]
    finally:
        s.close()


class KeepAliveGet:
    """GET requests to 127.0.0.1:port over one keep-alive connection, reopened when the server has
    closed it (one retry). `opened` counts the connections it opened."""

    def __init__(self, port, timeout=5.0):
        self.port = port
        self.timeout = timeout
        self.conn = None
        self.opened = 0

    def get(self, path):
        for attempt in (0, 1):
            try:
                if self.conn is None:
                    self.conn = http.client.HTTPConnection("127.0.0.1", self.port, timeout=self.timeout)
                    self.opened += 1
                self.conn.request("GET", path)
                r = self.conn.getresponse()
                data = r.read()
                if r.will_close:
                    self.close()
                return r.status, data
            except (OSError, http.client.HTTPException):
                self.close()
                if attempt:
                    raise

    def close(self):
        if self.conn is not None:
            try:
                self.conn.close()
            except Exception:
                pass
            self.conn = None


class UnixHTTPConnection(http.client.HTTPConnection):
    def __init__(self, path, timeout=5.0):
        super().__init__("corral", timeout=timeout)
        self.unix_path = path

    def connect(self):
        s = socket.socket(socket.AF_UNIX)
        s.settimeout(self.timeout)
        s.connect(self.unix_path)
        self.sock = s


class PendingRequest:
    """A request sent now whose answer is read later, so that probing goes on meanwhile."""

    def __init__(self, conn, method, path, body=None):
        self.conn = conn
        self.sent_at = time.time()
        payload = json.dumps(body) if body is not None else None
        conn.request(method, path, body=payload,
                     headers={"Content-Type": "application/json"} if body is not None else {})
        self.status = None
        self.body = None
        self.answered_at = None

    def ready(self):
        if self.status is not None:
            return True
        r, _, _ = select.select([self.conn.sock], [], [], 0)
        if not r:
            return False
        resp = self.conn.getresponse()
        data = resp.read()
        self.status = resp.status
        try:
            self.body = json.loads(data or b"null")
        except ValueError:
            self.body = data.decode(errors="replace")
        self.answered_at = time.time()
        self.conn.close()
        return True

    def close(self):
        try:
            self.conn.close()
        except Exception:
            pass


# --------------------------------------------------------------------------- corral-target

class Target:
    """corral-target on `host` (an address of this machine; with `launcher`, such as
    ["ip", "netns", "exec", NS], one of a network namespace)."""

    def __init__(self, bin_dir, workdir, processes=1, host="127.0.0.1", launcher=None):
        path = os.path.join(bin_dir, "corral-target")
        if not os.access(path, os.X_OK):
            raise BenchError(f"{path} not found: build with tools/build or pass --bin DIR")
        argv = (launcher or []) + [path, "--listen", f"{host}:0"]
        if processes > 1:
            argv += ["--processes", str(processes)]
        self.proc = Proc(argv, log_path=os.path.join(workdir, "target.log"), stdout_pipe=True)
        self.host = host
        self.port = self.proc.read_listen_line()
        self.base = f"http://{host}:{self.port}"
        self.pids = descendants(self.proc.pid)

    def stats(self):
        return http_json(self.host, self.port, "GET", "/stats", timeout=10)[1]

    def polls(self):
        return self.stats()["polls"]

    def cpu(self):
        return cpu_seconds(self.pids)

    def wait_quiet(self, max_s=30.0, quiet_polls_per_s=5):
        """Waits until the target receives (almost) no polls: the last system is really gone."""
        t_end = time.time() + max_s
        last = self.polls()
        while time.time() < t_end:
            time.sleep(1.0)
            now = self.polls()
            if now - last <= quiet_polls_per_s:
                return True
            last = now
        return False

    def stop(self):
        self.proc.stop(grace=5)


# --------------------------------------------------------------------------- systems under test

class Corral:
    name = "corral"

    def __init__(self, bin_dir, workdir, config=None, launcher=None, host="127.0.0.1"):
        """`launcher`: an argv the daemon's argv is appended to, which must exec it (so that the
        pid is the daemon's), e.g. a shell that starts something in its session first, or
        ["ip", "netns", "exec", NS] with `host` an address of that namespace."""
        self.home = tempfile.mkdtemp(prefix="corral-home-", dir=workdir)
        self.host = host
        argv = [os.path.join(bin_dir, "corral"), "daemon", "--home", self.home, "--listen", f"{host}:0"]
        self.config = config
        if config:
            cfg_path = os.path.join(self.home, "bench-config.json")
            with open(cfg_path, "w") as f:
                json.dump(config, f)
            argv += ["--config", cfg_path]
        self.proc = Proc((launcher or []) + argv, log_path=os.path.join(self.home, "daemon.out"))
        self.pid = self.proc.pid
        self.sock = os.path.join(self.home, "corral.sock")
        self.run_id = None
        self.instances = 0

    def api(self, method, path, body=None, timeout=10.0):
        c = UnixHTTPConnection(self.sock, timeout=timeout)
        try:
            c.request(method, path, body=json.dumps(body) if body is not None else None)
            r = c.getresponse()
            data = r.read()
            try:
                return r.status, json.loads(data or b"null")
            except ValueError:
                return r.status, data.decode(errors="replace")
        finally:
            c.close()

    def wait_ready(self, timeout=30.0):
        deadline = time.time() + timeout
        while True:
            if not self.proc.alive():
                raise BenchError(f"corral daemon exited with {self.proc.p.returncode}: {self.log_tail()}")
            try:
                _, health = self.api("GET", "/health", timeout=2)
                if health["workers_ready"] == health["workers_wanted"] and health["workers_ready"] > 0:
                    self.port = int(health["listen"].rsplit(":", 1)[1])
                    self.workers = health["workers_wanted"]
                    self.version = health.get("version")
                    return
            except (OSError, ValueError, KeyError, TypeError, http.client.HTTPException):
                pass
            if time.time() > deadline:
                raise BenchError(f"corral daemon not ready within {timeout}s: {self.log_tail()}")
            time.sleep(0.05)

    def log_tail(self, n=2000):
        try:
            with open(os.path.join(self.home, "daemon.out")) as f:
                return f.read()[-n:]
        except OSError:
            return ""

    def pids(self):
        return descendants(self.pid)

    @staticmethod
    def scenario(target_base, interval_s, max_polls, timeout_s):
        return {"name": "seed-poll", "steps": [{
            "name": "poll status",
            "request": {"url": f"{target_base}/status/{{{{instance}}}}"},
            "poll": {"every": f"{int(round(interval_s * 1000))}ms", "max_attempts": max_polls,
                     "timeout": f"{int(timeout_s)}s",
                     # corral-target answers {"status":"N"}: the condition never holds.
                     "until": [{"json": "/status", "equals": "Y"}]}}]}

    def trigger(self, target_base, n, interval_s, max_polls=240, scenario_extra=None):
        """Sends POST /runs now; returns a PendingRequest to read later. `scenario_extra`: top-level
        keys added to the scenario (e.g. {"start_spread": "0s"}); none by default, so that a build
        from before such a key runs the same document."""
        self.instances = n
        timeout_s = max(3600, interval_s * max_polls * 2)
        scenario = self.scenario(target_base, interval_s, max_polls, timeout_s)
        scenario.update(scenario_extra or {})
        body = {"scenario": scenario, "instances": n}
        return PendingRequest(UnixHTTPConnection(self.sock, timeout=60), "POST", "/runs", body)

    def accept_trigger(self, pending):
        if pending.status != 201:
            raise BenchError(f"POST /runs answered {pending.status}: {pending.body}")
        self.run_id = pending.body["run"]

    def running(self):
        """Instances running right now (None when unknown), with the full counts."""
        if not self.run_id:
            return None, None
        try:
            st, r = self.api("GET", f"/runs/{self.run_id}", timeout=5)
            return r["counts"]["running"], r["counts"]
        except (OSError, ValueError, KeyError, TypeError, http.client.HTTPException):
            return None, None

    def running_request(self):
        """GET /runs/<id> sent now, read later (None before the run exists)."""
        if not self.run_id:
            return None
        return PendingRequest(UnixHTTPConnection(self.sock, timeout=30), "GET", f"/runs/{self.run_id}")

    @staticmethod
    def parse_running(pending):
        try:
            return pending.body["counts"]["running"], pending.body["counts"]
        except (KeyError, TypeError):
            return None, None

    def stop(self):
        return self.proc.stop(grace=30)


class NodeRef:
    """bench/reference-node/server.js, mode timer or piscina."""

    def __init__(self, mode, workdir, connections=512):
        self.name = f"node-{mode}"
        self.mode = mode
        self.dir = os.path.join(REPO, "bench", "reference-node")
        ensure_node_modules(self.dir)
        self.proc = Proc(["node", os.path.join(self.dir, "server.js"), "--port", "0",
                          "--connections", str(connections)],
                         log_path=os.path.join(workdir, f"node-{mode}.log"), stdout_pipe=True)
        self.pid = self.proc.pid
        self.port = self.proc.read_listen_line()
        self.instances = 0
        self.last_stats = None

    def wait_ready(self, timeout=30.0):
        deadline = time.time() + timeout
        while time.time() < deadline:
            try:
                st, _ = http_json("127.0.0.1", self.port, "GET", "/latency", timeout=2)
                if st == 200:
                    self.version = _cmd_out(["node", "--version"])
                    return
            except OSError:
                pass
            time.sleep(0.05)
        raise BenchError("node reference server not ready")

    def pids(self):
        return descendants(self.pid)

    def trigger(self, target_base, n, interval_s, max_polls=240):
        self.instances = n
        path = (f"/trigger?n={n}&url={target_base}&interval_ms={int(round(interval_s * 1000))}"
                f"&max_polls={max_polls}&mode={self.mode}")
        return PendingRequest(http.client.HTTPConnection("127.0.0.1", self.port, timeout=120), "POST", path)

    def accept_trigger(self, pending):
        if pending.status != 202:
            raise BenchError(f"POST /trigger answered {pending.status}: {pending.body}")

    def running(self):
        try:
            st, s = http_json("127.0.0.1", self.port, "GET", "/stats", timeout=30)
            return s["running"], s
        except (OSError, ValueError, KeyError, TypeError, http.client.HTTPException):
            return None, None

    def running_request(self):
        return PendingRequest(http.client.HTTPConnection("127.0.0.1", self.port, timeout=30), "GET", "/stats")

    @staticmethod
    def parse_running(pending):
        try:
            return pending.body["running"], pending.body
        except (KeyError, TypeError):
            return None, None

    def stop(self):
        return self.proc.stop(grace=10)


def ensure_node_modules(d):
    if os.path.isdir(os.path.join(d, "node_modules", "express")) and \
       os.path.isdir(os.path.join(d, "node_modules", "piscina")) and \
       os.path.isdir(os.path.join(d, "node_modules", "undici")):
        return
    if not shutil.which("npm"):
        raise BenchError("npm not found: the Node.js reference needs node 20 and npm")
    print(f"installing the Node.js reference's packages: npm ci --prefix {d}", file=sys.stderr)
    r = subprocess.run(["npm", "ci", "--prefix", d, "--no-audit", "--no-fund"], capture_output=True, text=True)
    if r.returncode != 0:
        raise BenchError(f"npm ci failed: {r.stderr[-2000:]}")


class PollSampler(threading.Thread):
    """corral-target's GET /stats "polls" counter read once a second, on a thread of its own, over
    one keep-alive connection (/stats counts neither as a poll nor as a request). Deadline-driven:
    sample k is taken at t0 + k * every_s, never drifting by the time a read takes; a sample that
    is late (the driver or the target waited for a CPU) keeps its real time, and its bucket is
    divided by the real time between two reads. At most max_samples reads, then it stops."""

    def __init__(self, port, every_s=1.0, max_samples=3600):
        super().__init__(daemon=True)
        self.port = port
        self.every_s = every_s
        self.max_samples = max_samples
        self.samples = []  # (time.time() when read, polls)
        self.errors = 0
        self.stop_flag = threading.Event()

    def run(self):
        get = KeepAliveGet(self.port, timeout=2.0)
        t0 = time.time()
        k = 0
        try:
            while not self.stop_flag.is_set() and k < self.max_samples:
                due = t0 + k * self.every_s
                wait = due - time.time()
                if wait > 0 and self.stop_flag.wait(wait):
                    break
                try:
                    st, data = get.get("/stats")
                    if st == 200:
                        self.samples.append((time.time(), json.loads(data)["polls"]))
                    else:
                        self.errors += 1
                except (OSError, http.client.HTTPException, ValueError, KeyError):
                    self.errors += 1
                k += 1
                # a read that overran whole periods skips them instead of firing a catch-up burst
                if time.time() > t0 + k * self.every_s + self.every_s:
                    k = int((time.time() - t0) / self.every_s) + 1
        finally:
            get.close()

    def stop(self):
        self.stop_flag.set()
        self.join(10)

    def buckets(self, a=None, b=None):
        """Polls per second between consecutive reads taken within [a, b]."""
        s = [(t, p) for t, p in self.samples if (a is None or t >= a) and (b is None or t <= b)]
        return [(t1, (p1 - p0) / (t1 - t0)) for (t0, p0), (t1, p1) in zip(s, s[1:]) if t1 > t0]


def rate_buckets_summary(buckets, every_s=1.0):
    """max/mean and p99/mean of per-second poll rates: 1.0 is an even rate; a run whose instances
    poll together shows one tall bucket per interval."""
    rates = [r for _, r in buckets]
    if not rates:
        return None
    mean = sum(rates) / len(rates)
    gaps = [t1 - t0 for (t0, _), (t1, _) in zip(buckets, buckets[1:])]
    return {
        "buckets": len(rates), "every_s": every_s,
        "mean_per_s": round(mean, 1), "max_per_s": round(max(rates), 1), "min_per_s": round(min(rates), 1),
        "p99_per_s": round(pct(rates, 0.99), 1), "p50_per_s": round(pct(rates, 0.50), 1),
        "max_over_mean": round(max(rates) / mean, 3) if mean else None,
        "p99_over_mean": round(pct(rates, 0.99) / mean, 3) if mean else None,
        "stdev_over_mean": round(statistics.pstdev(rates) / mean, 3) if mean else None,
        "longest_gap_s": round(max(gaps), 3) if gaps else None,
        "series_per_s": [round(r) for r in rates],
    }


# --------------------------------------------------------------------------- probing

class Prober:
    """GET /latency over one keep-alive connection; every probe is recorded."""

    def __init__(self, port, timeout=PROBE_TIMEOUT_S, host="127.0.0.1"):
        self.port = port
        self.host = host
        self.timeout = timeout
        self.conn = None
        self.samples = []  # (wall time at send, seconds, answered)

    def probe(self):
        t_wall = time.time()
        t0 = time.perf_counter()
        try:
            if self.conn is None:
                self.conn = http.client.HTTPConnection(self.host, self.port, timeout=self.timeout)
            self.conn.request("GET", "/latency")
            r = self.conn.getresponse()
            r.read()
            dt = time.perf_counter() - t0
            if dt > self.timeout:  # answered, but later than a probe may take
                self.samples.append((t_wall, self.timeout, False))
            else:
                self.samples.append((t_wall, dt, True))
        except (OSError, http.client.HTTPException):
            # no answer within the timeout (or the connection broke): the worst latency
            self.samples.append((t_wall, self.timeout, False))
            try:
                self.conn.close()
            except Exception:
                pass
            self.conn = None
            # do not hammer a server that refuses connections: keep the 10 ms cadence honest
            rest = self.timeout - (time.perf_counter() - t0)
            if rest > 0:
                time.sleep(min(rest, self.timeout))

    def close(self):
        if self.conn:
            self.conn.close()


def pct(values, p):
    if not values:
        return None
    s = sorted(values)
    return s[min(len(s) - 1, int(p * (len(s) - 1) + 0.5))]


class ProbeThread(threading.Thread):
    """A Prober asking GET /latency every `every_s` on a thread of its own, until stop()."""

    def __init__(self, port, every_s=0.01, host="127.0.0.1"):
        super().__init__(daemon=True)
        self.prober = Prober(port, host=host)
        self.every_s = every_s
        self.stop_flag = False

    def run(self):
        while not self.stop_flag:
            t0 = time.perf_counter()
            self.prober.probe()
            time.sleep(max(0.0, self.every_s - (time.perf_counter() - t0)))

    def stop(self):
        self.stop_flag = True
        self.join(5)


def job_poll_scenario(name, done_s, every="1s"):
    """POST {{base}}/jobs for a job done after `done_s`, then poll it every `every` until done."""
    return {"name": name, "steps": [
        {"name": "start", "request": {"method": "POST", "url": "{{base}}/jobs",
                                      "json": {"done_after_ms": done_s * 1000}},
         "expect": [{"status": 201}], "capture": {"id": {"json": "/id"}}},
        {"name": "wait", "request": {"url": "{{base}}/jobs/{{id}}"},
         "poll": {"every": every, "timeout": "10m",
                  "until": [{"json": "/status", "equals": "done"}]}}]}


def latency_summary(samples, a, b):
    lat = [l for t, l, ok in samples if a <= t < b]
    lost = sum(1 for t, l, ok in samples if a <= t < b and not ok)
    ms = lambda v: round(v * 1000, 2) if v is not None else None
    return {"probes": len(lat), "unanswered": lost, "p50_ms": ms(pct(lat, 0.50)),
            "p99_ms": ms(pct(lat, 0.99)), "max_ms": ms(max(lat) if lat else None)}


def per_second_max(samples, a, b):
    """Worst probe of each second of a window, in ms (a short time series for the JSON)."""
    out = {}
    for t, l, ok in samples:
        if a <= t < b:
            k = int(t - a)
            out[k] = max(out.get(k, 0), l)
    return [round(out.get(k, 0) * 1000, 1) for k in range(int(b - a) + 1)] if out else []


class Window:
    """Measures one window: probes every 10 ms, RSS every 200 ms, running every `running_every`."""

    def __init__(self, name, system, target, prober, interval_s):
        self.name = name
        self.system = system
        self.target = target
        self.prober = prober
        self.interval = interval_s

    def run(self, duration=None, stop=None, running_every=1.0, on_tick=None, max_s=None):
        """Runs until `duration` seconds passed or stop(now, running, info) returns True.

        Returns the summary dict for the window."""
        sysm, tgt = self.system, self.target
        t0 = time.time()
        pids = sysm.pids()
        cpu0, tcpu0, busy0, self0 = cpu_seconds(pids), tgt.cpu(), machine_busy_seconds(), _self_cpu()
        polls0, opens0 = tgt.polls(), tcp_active_opens()
        peak_rss, rss_samples = rss_bytes(pids), 1
        running_samples = []
        next_rss = t0 + RSS_EVERY_S
        next_running = t0
        next_probe = t0
        pending_run, pending_at = None, 0.0
        stopped_by = None
        while True:
            now = time.time()
            if duration is not None and now >= t0 + duration:
                stopped_by = "duration"
                break
            if max_s is not None and now >= t0 + max_s:
                stopped_by = "max_time"
                break
            if not sysm.proc.alive():
                raise BenchError(f"{sysm.name} exited during the {self.name} window "
                                 f"(code {sysm.proc.p.returncode})")
            if now >= next_probe:
                self.prober.probe()
                next_probe = max(next_probe + PROBE_EVERY_S, time.time())
            now = time.time()
            if now >= next_rss:
                pids = sysm.pids()
                peak_rss = max(peak_rss, rss_bytes(pids))
                rss_samples += 1
                next_rss = now + RSS_EVERY_S
            # The running count is asked for without waiting for the answer, so that a
            # server that does not answer does not hold up the latency probes.
            if pending_run is None and now >= next_running:
                try:
                    pending_run, pending_at = sysm.running_request(), now
                except OSError:
                    pending_run = None
                if pending_run is None:
                    running_samples.append((now, None))
                    next_running = now + running_every
                    if stop is not None and stop(now, None, None):
                        stopped_by = "condition"
                        break
            elif pending_run is not None:
                try:
                    answered = pending_run.ready()
                except (OSError, http.client.HTTPException):
                    answered, pending_run.body = True, None
                if answered:
                    running, info = sysm.parse_running(pending_run)
                    pending_run = None
                    now = time.time()
                    running_samples.append((now, running))
                    next_running = now + running_every
                    if stop is not None and stop(now, running, info):
                        stopped_by = "condition"
                        break
                elif now - pending_at > 60:
                    pending_run.close()
                    pending_run = None
                    running_samples.append((now, None))
                    next_running = now
            if on_tick:
                on_tick()
            sleep_for = next_probe - time.time()
            if sleep_for > 0:
                time.sleep(min(sleep_for, PROBE_EVERY_S))
        if pending_run is not None:
            pending_run.close()
        t1 = time.time()
        pids = sysm.pids()
        cpu1, tcpu1, busy1, self1 = cpu_seconds(pids), tgt.cpu(), machine_busy_seconds(), _self_cpu()
        peak_rss = max(peak_rss, rss_bytes(pids))
        polls1, opens1 = tgt.polls(), tcp_active_opens()
        dur = t1 - t0
        n = sysm.instances
        sched = n / self.interval if n else 0
        running_vals = [r for _, r in running_samples if r is not None]
        sys_cores = (cpu1 - cpu0) / dur
        tgt_cores = (tcpu1 - tcpu0) / dur
        self_cores = (self1 - self0) / dur
        other = (busy1 - busy0) / dur - sys_cores - tgt_cores - self_cores
        pps = (polls1 - polls0) / dur
        out = {
            "start": round(t0, 3), "duration_s": round(dur, 2), "ended_by": stopped_by,
            "latency": latency_summary(self.prober.samples, t0, t1),
            "cpu_cores": round(sys_cores, 3),
            "peak_rss_mb": round(peak_rss / 2**20, 1),
            "end_pss_mb": round(pss_bytes(pids) / 2**20, 1),
            "processes": len(pids),
            "rss_samples": rss_samples,
            "running": {"min": min(running_vals) if running_vals else None,
                        "max": max(running_vals) if running_vals else None,
                        "end": running_vals[-1] if running_vals else None,
                        "samples": len(running_samples)},
            "polls_per_s": round(pps, 1),
            "scheduled_polls_per_s": round(sched, 1),
            "polls_fraction": round(pps / sched, 4) if sched else None,
            "target_cpu_cores": round(tgt_cores, 3),
            # connections opened on this machine per second (the system's to the target, and the
            # driver's few) and connections open to the target at the end: pooling at work
            "tcp_opens_per_s": round((opens1 - opens0) / dur, 1),
            "connections_to_target_at_end": tcp_established_to(tgt.port),
            "driver_cpu_cores": round(self_cores, 3),
            "other_cpu_cores": round(max(other, 0.0), 3),
        }
        if self.name != "baseline":
            out["latency_per_second_max_ms"] = per_second_max(self.prober.samples, t0, t1)
        self.t0, self.t1 = t0, t1
        return out


def _self_cpu():
    t = os.times()
    return t.user + t.system


# --------------------------------------------------------------------------- small helpers

def median(values):
    v = [x for x in values if x is not None]
    return statistics.median(v) if v else None


def today():
    return time.strftime("%Y-%m-%d")


def fmt(v, digits=2):
    if v is None:
        return "–"
    if isinstance(v, float):
        if abs(v) >= 1000:
            return f"{v:,.0f}"
        return f"{v:.{digits}f}"
    if isinstance(v, int):
        return f"{v:,}"
    return str(v)
