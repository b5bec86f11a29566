#!/usr/bin/python3
# SPDX-License-Identifier: MIT
"""Monitoring as operators run it, in one guest (tests/prometheus/run-in-guest.sh).

Starts maia-exporter on 127.0.0.1 and Debian's Prometheus server (its own
config, a temporary storage directory, a 2 s scrape interval), runs real work
(a GEMM on maia0 and a ring all-reduce over both devices), then asks
Prometheus's HTTP API (/api/v1/query) for the device, power and fabric series
and checks their labels and values against independent references: the PCI
addresses the kernel lists in sysfs, the default power cap, the bytes a ring
all-reduce must send, the flops of the GEMM and the published peak of the
chip model (a Maia 100: BF16 800 TFLOP/s) on hardware 1.8. Last, every PromQL query of the Grafana dashboard
(userspace/grafana/maia-dashboard.json, parsed, not copied) must return data,
and the alerting rules (userspace/prometheus/maia-alerts.yml) pass promtool's
unit tests (tests/prometheus/maia-alerts-test.yml), load into the same
Prometheus and evaluate against the real series without an error. Then
maia-serve (disaggregated over the two devices) answers one completion and
Prometheus, which scrapes it as job maia-serve, must show its counters: one
request completed, its tokens, one TTFT sample, K/V bytes pushed, no block held.

Prints TAP. Every wait is for an event (the exporter answers, Prometheus is
ready, a scrape newer than the work); the deadlines only stop a hang.
"""
import json
import os
import re
import signal
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.parse
import urllib.request

TOP = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
BIN = os.path.join(TOP, "build", "userspace", "bin")
LIB = os.path.join(TOP, "build", "userspace", "lib")
DASHBOARD = os.path.join(TOP, "userspace", "grafana", "maia-dashboard.json")
ALERTS = os.path.join(TOP, "userspace", "prometheus", "maia-alerts.yml")
ALERTS_TEST = os.path.join(TOP, "tests", "prometheus", "maia-alerts-test.yml")

EXPORTER = ("127.0.0.1", 9400)
SERVE = ("127.0.0.1", 8077)	# maia-serve --mode disagg, scraped as job maia-serve
SERVE_TOKENS = 8
PROM = ("127.0.0.1", 9090)
SCRAPE_INTERVAL = "2s"
# Grafana's variables, as Grafana would expand them: "All" devices is the
# variable's allValue; $__rate_interval is at least 4 scrape intervals, and
# 1m keeps samples from before the work in the window on a slow guest.
GRAFANA_VARS = {"device": ".*", "__rate_interval": "1m"}
COLL_BYTES = 4 << 20		# one all-reduce of 4 MiB FP32 over 2 devices
NDEV = 2
HANG_GUARD_S = 240		# a wait longer than this is a hang, not slowness
DEFAULT_CAP_W = 500.0		# the firmware's TDP (Documentation/telemetry.rst)

results = []


def tap(ok, name, detail=""):
    results.append(ok)
    print("%s %d - %s" % ("ok" if ok else "not ok", len(results), name), flush=True)
    if not ok and detail:
        for line in str(detail).splitlines():
            print("#   " + line, flush=True)
    return ok


def wait_for(what, probe, alive=None):
    """Call probe() until it returns a true value; None on a hang or a death."""
    deadline = time.monotonic() + HANG_GUARD_S
    while time.monotonic() < deadline:
        if alive is not None and alive.poll() is not None:
            print("# %s: the process exited with %s" % (what, alive.returncode), flush=True)
            return None
        v = probe()
        if v:
            return v
        time.sleep(0.2)
    print("# %s: nothing after %d s (hang guard)" % (what, HANG_GUARD_S), flush=True)
    return None


def http_get(addr, path, timeout=30):
    url = "http://%s:%d%s" % (addr[0], addr[1], path)
    with urllib.request.urlopen(url, timeout=timeout) as r:
        return r.status, r.read().decode()


def try_get(addr, path):
    try:
        return http_get(addr, path)
    except (OSError, urllib.error.URLError):
        return None


def query(expr, at=None):
    """The result vector of an instant query; raises on an API error."""
    params = {"query": expr}
    if at is not None:
        params["time"] = "%.3f" % at
    _, body = http_get(PROM, "/api/v1/query?" + urllib.parse.urlencode(params))
    doc = json.loads(body)
    if doc.get("status") != "success":
        raise RuntimeError("%s: %s" % (expr, doc.get("error")))
    if doc["data"]["resultType"] != "vector":
        raise RuntimeError("%s: result type %s" % (expr, doc["data"]["resultType"]))
    return doc["data"]["result"]


def by_labels(result, *keys):
    """{(label values...): float value} of a query result."""
    return {tuple(s["metric"].get(k) for k in keys): float(s["value"][1]) for s in result}


def pci_addresses():
    """device name -> PCI address, from the kernel (the reference for labels)."""
    out = {}
    for a in sorted(os.listdir("/sys/class/accel")):
        dev = os.path.join("/sys/class/accel", a, "device")
        drv = os.path.join(dev, "driver")
        if os.path.exists(drv) and os.path.basename(os.readlink(drv)) == "maia":
            out["maia" + a[len("accel"):]] = os.path.basename(os.readlink(dev))
    return out


def expand_grafana(expr):
    """The query as Grafana sends it; an unknown variable is an error."""
    def sub(m):
        name = m.group(1) or m.group(2)
        if name not in GRAFANA_VARS:
            raise KeyError("dashboard variable $%s has no expansion in the test" % name)
        return GRAFANA_VARS[name]
    return re.sub(r"\$\{(\w+)\}|\$(\w+)", sub, expr)


def promtool(*args):
    """(exit status, output) of promtool with these arguments."""
    r = subprocess.run(["promtool"] + list(args), stdout=subprocess.PIPE,
                       stderr=subprocess.STDOUT, text=True, timeout=HANG_GUARD_S,
                       cwd=os.path.dirname(ALERTS_TEST))
    return r.returncode, r.stdout


def alert_rules():
    """The alerting rules Prometheus lists, once every one has been evaluated."""
    try:
        _, body = http_get(PROM, "/api/v1/rules?type=alert")
    except (OSError, urllib.error.URLError):
        return None
    rules = [r for g in json.loads(body)["data"]["groups"] for r in g["rules"]]
    if not rules or any(r.get("lastEvaluation", "0001-").startswith("0001-") for r in rules):
        return None
    return rules


def stop(proc, name):
    """SIGTERM, then wait for the exit; True when it exited by itself."""
    if proc.poll() is not None:
        print("# %s had already exited with %s" % (name, proc.returncode), flush=True)
        return False
    proc.send_signal(signal.SIGTERM)
    try:
        proc.wait(timeout=60)
        return True
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()
        print("# %s ignored SIGTERM for 60 s: killed" % name, flush=True)
        return False


def serve_scrape(env, tmp, prom):
    """maia-serve's /metrics through the real Prometheus: one completion, then its counters."""
    ready = os.path.join(tmp, "serve.ready")
    log = open(os.path.join(tmp, "serve.log"), "w")
    serve = subprocess.Popen(
        [os.path.join(BIN, "maia-serve"), "--mode", "disagg", "--bind", SERVE[0], "--port",
         str(SERVE[1]), "--ready-file", ready], env=env, stdout=log, stderr=subprocess.STDOUT)
    try:
        if not tap(wait_for("maia-serve", lambda: os.path.exists(ready) or None, serve),
                   "maia-serve (disaggregated over maia0 and maia1) listens on %s:%d" % SERVE):
            return
        body = json.dumps({"prompt": "Prometheus scrapes maia-serve", "max_tokens": SERVE_TOKENS,
                           "temperature": 0}).encode()
        req = urllib.request.Request("http://%s:%d/v1/completions" % SERVE, data=body,
                                     headers={"Content-Type": "application/json"})
        try:
            with urllib.request.urlopen(req, timeout=HANG_GUARD_S) as r:
                reply = json.loads(r.read().decode())
        except (urllib.error.URLError, ValueError) as e:
            reply = {"error": str(e)}
        done = time.time()
        tap(reply.get("usage", {}).get("completion_tokens") == SERVE_TOKENS,
            "a completion of %d tokens from maia-serve" % SERVE_TOKENS, json.dumps(reply))
        fresh = wait_for("a scrape of maia-serve after the completion", lambda: [
            s for s in query('timestamp(up{job="maia-serve"})')
            if float(s["value"][1]) > done and
            [u for u in query('up{job="maia-serve"}') if u["value"][1] == "1"]], prom)
        if not tap(bool(fresh), 'prometheus scraped maia-serve after it: up{job="maia-serve"} '
                   '== 1'):
            return
        want = {"maia_serve_requests_completed_total": 1,
                "maia_serve_generated_tokens_total": SERVE_TOKENS,
                "maia_serve_ttft_seconds_count": 1, "maia_serve_requests_failed_total": 0,
                "maia_serve_kv_blocks_used": 0, "maia_serve_fallbacks_total": 0}
        got = {m: [float(s["value"][1]) for s in query('%s{job="maia-serve"}' % m)]
               for m in want}
        moved = [float(s["value"][1]) for s in
                 query('maia_serve_kv_transfer_bytes_total{job="maia-serve"}')]
        tap(all(got[m] == [float(v)] for m, v in want.items()) and moved and moved[0] > 0,
            "maia-serve's series in Prometheus: 1 completed, %d tokens, 1 TTFT sample, "
            "0 failed, no KV block held, K/V bytes pushed (%s)" % (SERVE_TOKENS, moved),
            json.dumps(got))
    finally:
        tap(stop(serve, "maia-serve"), "maia-serve stopped on SIGTERM")
        log.close()
        if not all(results):
            with open(os.path.join(tmp, "serve.log")) as f:
                for line in f.read().splitlines()[-20:]:
                    print("# serve.log: %s" % line)


def main():
    tmp = tempfile.mkdtemp(prefix="prom-test.")
    env = dict(os.environ, LD_LIBRARY_PATH=LIB)
    # The guest's loopback starts down (its init configures no network).
    subprocess.run(["ip", "link", "set", "lo", "up"], check=True)

    devices = pci_addresses()
    tap(sorted(devices) == ["maia%d" % i for i in range(NDEV)],
        "the guest has %d maia devices" % NDEV, devices)

    exporter_log = open(os.path.join(tmp, "exporter.log"), "w")
    exporter = subprocess.Popen(
        [os.path.join(BIN, "maia-exporter"), "--bind", EXPORTER[0], "--port", str(EXPORTER[1])],
        env=env, stdout=exporter_log, stderr=subprocess.STDOUT)
    got = wait_for("maia-exporter", lambda: try_get(EXPORTER, "/metrics"), exporter)
    tap(got is not None and got[0] == 200 and "MAIA_FI_FABRIC_TX_BYTES{" in got[1],
        "maia-exporter serves /metrics on %s:%d" % EXPORTER)

    config = os.path.join(tmp, "prometheus.yml")
    with open(config, "w") as f:
        f.write("global:\n  scrape_interval: %s\n  scrape_timeout: %s\n"
                "  evaluation_interval: %s\n"
                "rule_files:\n  - %s\n"
                "scrape_configs:\n  - job_name: maia\n    static_configs:\n"
                "      - targets: ['%s:%d']\n"
                "  - job_name: maia-serve\n    static_configs:\n"
                "      - targets: ['%s:%d']\n"
                % (SCRAPE_INTERVAL, SCRAPE_INTERVAL, SCRAPE_INTERVAL, ALERTS,
                   EXPORTER[0], EXPORTER[1], SERVE[0], SERVE[1]))
    prom_log = open(os.path.join(tmp, "prometheus.log"), "w")
    prom = subprocess.Popen(
        ["prometheus", "--config.file=" + config,
         "--storage.tsdb.path=" + os.path.join(tmp, "data"),
         "--web.listen-address=%s:%d" % PROM, "--log.level=warn"],
        stdout=prom_log, stderr=subprocess.STDOUT)
    try:
        ready = wait_for("prometheus", lambda: try_get(PROM, "/-/ready"), prom)
        if not tap(ready is not None and ready[0] == 200, "prometheus is ready on %s:%d" % PROM):
            return
        up = wait_for("first scrape",
                      lambda: [s for s in query('up{job="maia"}') if s["value"][1] == "1"], prom)
        if not tap(bool(up), 'prometheus scraped the exporter: up{job="maia"} == 1'):
            return
        before = {m: by_labels(query(m), "device", "port") for m in (
            "MAIA_FI_DEV_HBM_READ_BYTES", "MAIA_FI_DEV_BUSY_TIME",
            "MAIA_FI_DEV_TOTAL_ENERGY_CONSUMPTION", "MAIA_FI_FABRIC_TX_BYTES",
            "MAIA_FI_FABRIC_RX_BYTES", "MAIA_FI_PROF_FLOPS_TOTAL", "MAIA_FI_PROF_MODELED_TIME")}

        work = [[os.path.join(BIN, "maia-gemm"), "256", "256", "256"],
                [os.path.join(BIN, "maia-coll-perf"), "--ndev", str(NDEV), "--op", "all_reduce",
                 "--dtype", "fp32", "--min-bytes", str(COLL_BYTES), "--max-bytes",
                 str(COLL_BYTES), "--iters", "1", "--warmup", "0"]]
        failed = []
        for cmd in work:
            try:
                r = subprocess.run(cmd, env=env, stdout=subprocess.PIPE,
                                   stderr=subprocess.STDOUT, text=True, timeout=HANG_GUARD_S)
            except subprocess.TimeoutExpired:
                failed.append("%s: hung (%d s)" % (os.path.basename(cmd[0]), HANG_GUARD_S))
                continue
            for line in r.stdout.splitlines():
                print("# " + line)
            if r.returncode:
                failed.append("%s: exit %d" % (os.path.basename(cmd[0]), r.returncode))
        tap(not failed, "work ran: a 256^3 GEMM on maia0, a 4 MiB all-reduce over 2 devices",
            "\n".join(failed))
        work_end = time.time()

        # Everything below looks at the first scrape that started after the work.
        fresh = wait_for("a scrape after the work", lambda: [
            s for s in query('timestamp(up{job="maia"})') if float(s["value"][1]) > work_end],
            prom)
        if not tap(bool(fresh), "prometheus scraped the exporter after the work"):
            return

        # Device series and their labels against sysfs.
        util = query("MAIA_FI_DEV_UTIL")
        labels = {s["metric"]["device"]: s["metric"] for s in util}
        bad = [d for d, pci in devices.items() if d not in labels or
               labels[d].get("pci_address") != pci or
               not labels[d].get("modelName", "").startswith("Maia") or
               labels[d].get("job") != "maia" or
               labels[d].get("instance") != "%s:%d" % EXPORTER]
        tap(len(util) == NDEV and not bad,
            "device series: MAIA_FI_DEV_UTIL per device, labels device, pci_address (as in "
            "sysfs), modelName, job, instance", json.dumps([s["metric"] for s in util]))

        after = {m: by_labels(query(m), "device", "port") for m in before}

        def moved(metric, device, at_least=0.0, port=None):
            keys = [k for k in after[metric] if k[0] == device and (port is None or k[1] == port)]
            delta = sum(after[metric][k] - before[metric].get(k, 0.0) for k in keys)
            return bool(keys) and delta > at_least, delta

        ok_r, d_r = moved("MAIA_FI_DEV_HBM_READ_BYTES", "maia0")
        ok_b, d_b = moved("MAIA_FI_DEV_BUSY_TIME", "maia0")
        tap(ok_r and ok_b, "maia0 HBM bytes read (+%d) and busy time (+%.6f s) moved" % (d_r, d_b))

        power = by_labels(query("MAIA_FI_DEV_POWER_USAGE"), "device")
        cap = by_labels(query("MAIA_FI_DEV_POWER_CAP"), "device")
        energy = [moved("MAIA_FI_DEV_TOTAL_ENERGY_CONSUMPTION", d) for d in sorted(devices)]
        tap(sorted(k[0] for k in power) == sorted(devices) and all(v > 0 for v in power.values())
            and all(v == DEFAULT_CAP_W for v in cap.values()) and len(cap) == NDEV
            and all(e[0] for e in energy),
            "power series: power > 0 W, cap %g W, energy moved on every device" % DEFAULT_CAP_W,
            "power %s cap %s energy %s" % (power, cap, energy))

        # The chip model and modeled time (hardware 1.8): every device is a
        # Maia 100 at its published BF16 peak; the GEMM's 2 x 256^3 flops
        # and some modeled time went by on maia0.
        info = by_labels(query("MAIA_FI_DEV_MODEL_INFO"), "device", "model")
        peak = by_labels(query('MAIA_FI_DEV_PEAK_TFLOPS{dtype="bf16"}'), "device")
        ok_f, d_f = moved("MAIA_FI_PROF_FLOPS_TOTAL", "maia0", 2 * 256 ** 3 - 1)
        ok_m, d_m = moved("MAIA_FI_PROF_MODELED_TIME", "maia0")
        tap(set(info) == {(d, "maia100") for d in devices}
            and peak == {(d,): 800.0 for d in devices} and ok_f and ok_m,
            "chip model series: maia100 on every device, BF16 peak 800 TFLOP/s; maia0 flops "
            "+%d, modeled time +%.6f s" % (d_f, d_m), "info %s peak %s" % (info, peak))

        link = by_labels(query("MAIA_FI_FABRIC_LINK_UP"), "device", "port")
        want = {(d, str(p)) for d in devices for p in range(2)}
        tap(set(link) == want and all(v == 1.0 for v in link.values()),
            "fabric series: MAIA_FI_FABRIC_LINK_UP == 1 on ports 0 and 1 of every device",
            json.dumps({"%s/%s" % k: v for k, v in link.items()}))

        # A ring all-reduce of S bytes sends and receives 2(n-1)/n x S per
        # rank (payload only: the counters include frame headers too).
        need = 2 * (NDEV - 1) / NDEV * COLL_BYTES
        tx = {d: moved("MAIA_FI_FABRIC_TX_BYTES", d, need - 1) for d in sorted(devices)}
        rx = {d: moved("MAIA_FI_FABRIC_RX_BYTES", d, need - 1) for d in sorted(devices)}
        tap(all(v[0] for v in tx.values()) and all(v[0] for v in rx.values()),
            "fabric tx and rx bytes moved by >= %d on every device (ring all-reduce): tx %s, "
            "rx %s" % (need, {d: int(v[1]) for d, v in tx.items()},
                       {d: int(v[1]) for d, v in rx.items()}))

        # The dashboard's queries, as Grafana would send them.
        with open(DASHBOARD) as f:
            dash = json.load(f)
        panels = [p for p in dash["panels"] if p.get("targets")]
        tap(len(panels) >= 7, "the dashboard has %d panels with queries" % len(panels))
        for p in panels:
            empty = []
            for t in p["targets"]:
                try:
                    res = query(expand_grafana(t["expr"]))
                except (KeyError, RuntimeError, OSError) as e:
                    empty.append("%s: %s" % (t["expr"], e))
                    continue
                devs = {s["metric"].get("device") for s in res}
                if devs != set(devices):
                    empty.append("%s: series for %s" % (t["expr"], sorted(map(str, devs))))
            tap(not empty, "dashboard panel '%s': its %d queries return data for every device"
                % (p["title"], len(p["targets"])), "\n".join(empty))

        # The alerting rules: promtool's checks, then the server's own evaluation.
        rc, out = promtool("check", "rules", ALERTS)
        tap(rc == 0, "promtool check rules maia-alerts.yml", out)
        rc, out = promtool("test", "rules", ALERTS_TEST)
        tap(rc == 0, "promtool test rules: every alert fires on its series, not on the "
            "healthy ones", out)
        rules = wait_for("the alerting rules evaluated", alert_rules, prom)
        bad = [(r["name"], r.get("health"), r.get("lastError")) for r in rules or []
               if r.get("health") != "ok"]
        tap(bool(rules) and len(rules) >= 9 and not bad,
            "prometheus loaded %d alerting rules and evaluated each against the real series "
            "without an error" % len(rules or []), json.dumps(bad))
        down = [r for r in rules or [] if r["name"] == "MaiaFabricLinkDown"]
        tap(len(down) == 1 and not down[0].get("alerts"),
            "MaiaFabricLinkDown is neither pending nor firing: every link is up",
            json.dumps(down))
        serve_scrape(env, tmp, prom)
    finally:
        stopped = stop(prom, "prometheus") & stop(exporter, "maia-exporter")
        tap(stopped, "prometheus and maia-exporter stopped on SIGTERM")
        for log in (prom_log, exporter_log):
            log.close()
        if not all(results):
            for name in ("prometheus.log", "exporter.log"):
                with open(os.path.join(tmp, name)) as f:
                    for line in f.read().splitlines()[-20:]:
                        print("# %s: %s" % (name, line))


if __name__ == "__main__":
    main()
    print("1..%d" % len(results))
    sys.exit(0 if results and all(results) else 1)
