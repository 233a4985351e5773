#!/usr/bin/env python3
"""Writes the seed corpora of tests/fuzz/corpus/<target>/seed-*.

The seeds are committed; run this again only to change them (it rewrites seed-* files and
leaves every other file, such as crash-* regression inputs, alone). Each target's input
layout is described at the top of its .cc file.
"""
import json
import pathlib
import re
import struct

HERE = pathlib.Path(__file__).resolve().parent
ROOT = HERE.parents[1]


def write(target, seeds):
    out = HERE / "corpus" / target
    out.mkdir(parents=True, exist_ok=True)
    for old in out.glob("seed-*"):
        old.unlink()
    for name, data in seeds.items():
        if isinstance(data, str):
            data = data.encode()
        (out / f"seed-{name}").write_bytes(data)


# --- fuzz_ipc_decoder: [k][k split sizes][stream] -------------------------------------------

TYPES = {"hello": 1, "welcome": 2, "ready": 3, "heartbeat": 4, "stop": 5, "leaving": 6,
         "define_run": 7, "start": 8, "cancel": 9, "events": 10, "handback": 11}


def frame(type_byte, payload=b"", length=None):
    if isinstance(payload, (dict, list)):
        payload = json.dumps(payload, separators=(",", ":")).encode()
    elif isinstance(payload, str):
        payload = payload.encode()
    if length is None:
        length = len(payload) + 1
    return struct.pack(">IB", length, type_byte) + payload


def ipc_seeds():
    scenario = json.loads((ROOT / "examples" / "job-a-then-b.json").read_text())
    checkpoint = {"step": 1, "attempts": 3, "started_ms": 1764600000000, "vars": {"job": "7"}}
    frames = {
        "hello": frame(1, {"protocol": 1, "pid": 4242, "slot": 0}),
        "welcome": frame(2, {"protocol": 1, "slot": 0, "heartbeat_ms": 1000,
                             "max_memory_bytes": 1 << 30, "kernel_memory_bytes": 1 << 31,
                             "log_max_bytes": 10 << 20, "log_files": 5, "log_level": "info"}),
        "ready": frame(3),
        "heartbeat": frame(4, {"seq": 18446744073709551615, "loop_lag_ms": 0.25,
                               "rss_bytes": 52428800, "active": 3}),
        "stop": frame(5, {"grace_ms": 30000}),
        "leaving": frame(6, {"reason": "memory_soft", "rss_bytes": 1 << 30}),
        "define_run": frame(7, {"run": "r1-2f3a", "scenario": scenario,
                                "vars": {"base": "http://127.0.0.1:8081"}}),
        "start": frame(8, {"run": "r1-2f3a", "first": 0, "count": 100}),
        "start-resume": frame(8, {"run": "r1-2f3a", "resume": {"3": checkpoint}}),
        "cancel": frame(9, {"run": "r1-2f3a"}),
        "events": frame(10, {"events": [
            {"type": "step", "run": "r1-2f3a", "i": 0, "step": 0, "state": "passed",
             "status": 201, "vars": {"job": "7"}},
            {"type": "instance", "run": "r1-2f3a", "i": 0, "state": "failed",
             "reason": "expect: status was 503, expected 200 \u00e9\u2713"}]}),
        "handback": frame(11, {"instances": {"r1-2f3a": {"0": checkpoint, "1": checkpoint}}}),
    }
    seeds = {}
    for name, f in frames.items():
        seeds[f"{name}-whole"] = bytes([0]) + f
        seeds[f"{name}-bytewise"] = bytes([1, 1]) + f
    worker_stream = frames["hello"] + frames["ready"] + frames["heartbeat"] + frames["events"]
    master_stream = frames["welcome"] + frames["define_run"] + frames["start"] + frames["stop"]
    seeds["worker-stream-split-3-7-0-250"] = bytes([4, 3, 7, 0, 250]) + worker_stream
    seeds["master-stream-split-5-1-64"] = bytes([3, 5, 1, 64]) + master_stream
    seeds["mixed-directions"] = bytes([2, 2, 9]) + frames["hello"] + frames["welcome"]
    seeds["error-zero-length"] = bytes([0]) + frame(3, length=0)
    seeds["error-oversized"] = bytes([0]) + frame(3, length=(8 << 20) + 1)
    seeds["error-all-ones"] = bytes([0]) + b"\xff\xff\xff\xff garbage"
    seeds["error-unknown-type"] = bytes([0]) + frame(200, "{}")
    seeds["error-type-zero"] = bytes([0]) + frame(0, "{}")
    seeds["error-not-json"] = bytes([0]) + frame(4, "{{{")
    seeds["error-array-payload"] = bytes([0]) + frame(4, "[1]")
    seeds["error-invalid-utf8"] = bytes([0]) + frame(4, b'{"a":"\xff\xfe"}')
    seeds["error-after-frames"] = bytes([2, 4, 1]) + frames["ready"] + frame(4, "nul")
    seeds["truncated"] = bytes([0]) + frames["heartbeat"][:-3]
    seeds["number-edges"] = bytes([0]) + frame(4, '{"a":1e308,"b":-0.0,"c":-9223372036854775808,'
                                                  '"d":1.5e-320,"e":12345678901234567890123}')
    seeds["escapes"] = bytes([0]) + frame(6, r'{"reason":"\u0000\ud83d\ude00\"\\\/\b\f\n\r\t"}')
    return seeds


# --- fuzz_scenario_parser: JSON documents ----------------------------------------------------

STEP = {"request": {"url": "{{base}}/jobs"}}


def scenario(*steps, **extra):
    doc = {"name": "s", "steps": list(steps) or [STEP]}
    doc.update(extra)
    return doc


def with_field(step_extra=None, request_extra=None):
    step = {"request": {"url": "{{base}}/x", **(request_extra or {})}}
    step.update(step_extra or {})
    return scenario(step)


def scenario_seeds():
    seeds = {}
    for path in sorted((ROOT / "examples").glob("*.json")):
        seeds[f"example-{path.stem}"] = path.read_text()
    docs = (ROOT / "docs" / "scenarios.md").read_text()
    for i, block in enumerate(re.findall(r"```json\n(.*?)```", docs, re.S)):
        try:
            doc = json.loads(block)
        except json.JSONDecodeError:
            continue
        if "steps" not in doc and ("request" in doc or "sleep" in doc):
            doc = scenario(doc)  # a step shown on its own
        seeds[f"docs-{i}"] = json.dumps(doc, indent=1)
    poll = {"every": "1s", "timeout": "1m", "until": {"status": 200}}
    # One document per validation error the guide lists (docs/scenarios.md).
    errors = {
        "every-number": with_field({"poll": {**poll, "every": 10}}),
        "sleep-combined": scenario({"sleep": "1m30s"}),
        "timeout-zero": with_field(request_extra={"timeout": "0s"}),
        "unknown-variable": scenario({"request": {"url": "{{base}}/jobs/{{jobb}}"}}),
        "poll-unbounded": with_field({"poll": {"every": "1s", "until": {"status": 200}}}),
        "poll-expect": with_field({"poll": poll, "expect": {"status": 200}}),
        "json-no-op": with_field({"expect": {"json": "/a"}}),
        "lt-string": with_field({"expect": {"json": "/a", "lt": "5"}}),
        "attempts-zero": with_field({"retry": {"attempts": 0}}),
        "retry-on-unknown": with_field({"retry": {"on": ["timeout"]}}),
        "method-fetch": with_field(request_extra={"method": "FETCH"}),
        "url-no-scheme": scenario({"request": {"url": "h/"}}),
        "json-unclosed": with_field(request_extra={"json": {"a": "{{oops"}}),
        "json-and-body": with_field(request_extra={"json": {}, "body": "x"}),
        "capture-two-sources": with_field({"capture": {"a": {"json": "/a", "status": True}}}),
        "vars-builtin": scenario(vars={"run": 1}),
        "name-missing": {"steps": [STEP]},
        "pointer-no-slash": with_field({"expect": {"json": "id", "exists": True}}),
        "pointer-bad-escape": with_field({"expect": {"json": "/a~2", "exists": True}}),
        "regex-invalid": with_field({"expect": {"header": "X", "matches": "(a"}}),
        "header-line-break": with_field(request_extra={"headers": {"X": "a\r\nb"}}),
        "header-bad-name": with_field(request_extra={"headers": {"X Y": "a"}}),
        "capture-same-step": scenario({"request": {"url": "http://h/{{job}}"},
                                       "capture": {"job": {"json": "/id"}}}),
        "unknown-field": scenario({"request": {"url": "http://h/"}, "pol": {}}),
        "status-out-of-range": with_field({"expect": {"status": [200, 600]}}),
        "max-interval-short": with_field({"retry": {"initial_interval": "2s",
                                                    "max_interval": "1s"}}),
        "not-an-object": [1, 2, 3],
    }
    for name, doc in errors.items():
        seeds[f"invalid-{name}"] = json.dumps(doc)
    valid = {
        "every-feature": scenario(
            {"name": "all", "request": {"method": "patch", "url": "HTTPS://h/{{ base }}",
                                        "headers": {"X-Id": "{{uuid}}", "A": "{{env.HOME}}"},
                                        "json": {"n": "{{instance}}", "r": "{{run}}",
                                                 "deep": [[{"x": ["{{base}}"]}]]},
                                        "timeout": "1.5s"},
             "retry": {"attempts": 100, "initial_interval": "40s", "backoff": 10,
                       "on": ["transport", "5xx", "4xx", "expect"]},
             "expect": [{"status": [100, 599]}, {"json": "", "exists": True},
                        {"json": "/a~1b/~0c/0", "not_equals": None},
                        {"header": "x", "in": [1, "1", None]}, {"header": "y", "gt": -1e300},
                        {"body_contains": "\u00e9"}],
             "capture": {"v": {"json": ""}, "h": {"header": "h"}, "s": {"status": True},
                         "b": {"body": True}}},
            {"request": {"url": "{{v}}{{h}}{{s}}{{b}}", "body": "{{v}}"},
             "poll": {"every": "250ms", "max_attempts": 1000000, "backoff": 1,
                      "max_interval": "1d", "until": [{"json": "/x", "matches": "^(a|b)*$"}],
                      "fail_if": []}},
            {"sleep": "0ms"}, vars={"x": {"nested": [1, 2.5, True]}, "_": ""}),
    }
    for name, doc in valid.items():
        seeds[f"valid-{name}"] = json.dumps(doc)
    seeds["deep-json-body"] = ('{"name":"s","steps":[{"request":{"url":"{{base}}/x","json":' +
                               "[" * 400 + '"{{base}}"' + "]" * 400 + "}}]}")
    return seeds


# --- fuzz_conditions: status, flags, sections, body --------------------------------------------


def section(data):
    if isinstance(data, (dict, list)):
        data = json.dumps(data)
    if isinstance(data, str):
        data = data.encode()
    return struct.pack(">H", len(data)) + data


def conditions_input(status, conditions, captures=b"", template="", headers=(), body=b"",
                     give_json=True):
    flags = (1 if give_json else 0) | (len(headers) << 1)
    out = struct.pack(">HB", status, flags)
    out += section(conditions) + section(captures) + section(template)
    for name, value in headers:
        out += section(f"{name}:{value}".encode() if isinstance(value, str)
                       else name.encode() + b":" + value)
    return out + (body.encode() if isinstance(body, str) else body)


def conditions_seeds():
    job = '{"id":"7","status":"running","polls":3,"items":[1,2.5,"x",null,true],' \
          '"a/b":{"m~n":"ok"},"unicode":"caf\\u00e9 \\ud83d\\udc04"}'
    json_headers = [("Content-Type", "application/json; charset=utf-8"),
                    ("Content-Length", str(len(job))), ("Location", "/jobs/7")]
    all_captures = {"job": {"json": "/id"}, "whole": {"json": ""}, "loc": {"header": "location"},
                    "code": {"status": True}, "raw": {"body": True}}
    s = {}
    s["status-equals"] = conditions_input(200, {"status": 200}, body="{}")
    s["status-in"] = conditions_input(503, {"status": [200, 201, 503]})
    s["json-equals"] = conditions_input(200, [{"json": "/status", "equals": "running"}],
                                        all_captures, "{{job}}/{{loc}}", json_headers, job)
    s["json-every-op"] = conditions_input(200, [
        {"json": "/id", "matches": "^[0-9]+$"}, {"json": "/status", "in": ["queued", "running"]},
        {"json": "/error", "exists": False}, {"json": "/polls", "gt": 2},
        {"json": "/polls", "lt": 10}, {"json": "/status", "not_equals": "done"},
        {"json": "/items/1", "equals": 2.5}, {"json": "/a~1b/m~0n", "equals": "ok"},
        {"json": "/items/-", "exists": False}, {"json": "/items/99999999999999999999",
                                                "exists": False},
        {"json": "", "matches": "running"}], {"all": {"json": "/items"}},
        '{"n": {{instance}}}', json_headers, job)
    s["header-ops"] = conditions_input(200, [
        {"header": "content-type", "matches": "^application/json"},
        {"header": "CONTENT-LENGTH", "lt": 1000}, {"header": "x-count", "gt": 0.5},
        {"header": "x-count", "equals": 1}, {"header": "x-count", "in": ["1", 2]},
        {"header": "missing", "exists": False}], {"n": {"header": "X-Count"}}, "{{n}}",
        json_headers + [("X-Count", "1"), ("x-count", "2")], job)
    s["body-contains"] = conditions_input(200, [{"body_contains": '"status":"running"'}],
                                          {"raw": {"body": True}}, "{{raw}}", body=job,
                                          give_json=False)
    s["not-json-body"] = conditions_input(200, [{"json": "/id", "exists": True}],
                                          {"job": {"json": "/id"}}, body="<html>oops</html>")
    s["json-not-given"] = conditions_input(200, {"json": "/id", "equals": "7"},
                                           {"job": {"json": "/id"}}, body=job, give_json=False)
    s["invalid-utf8-body"] = conditions_input(
        200, [{"body_contains": "\u00e9"}, {"json": "", "exists": False}],
        {"raw": {"body": True}}, '{{raw}}', body=b"caf\xc3\xa9 \xff\xfe\xc3 \xed\xa0\x80 \xc0\xaf")
    s["invalid-utf8-header"] = conditions_input(
        200, [{"header": "X-Bin", "matches": "."}, {"header": "X-Bin", "equals": "\u00e9"}],
        {"h": {"header": "x-bin"}}, "{{h}}", [("X-Bin", b"\xff\x80\xc3")], "{}")
    s["invalid-utf8-string-in-json"] = conditions_input(
        200, {"json": "/a", "matches": "a"}, {"a": {"json": "/a"}}, "{{a}}",
        body=b'{"a":"\xff"}')
    s["long-header-value"] = conditions_input(
        200, {"header": "X-Long", "equals": "no"}, {}, "", [("X-Long", "\u00e9" * 200)])
    deep = "[" * 1000 + '"{{code}}"' + "]" * 1000
    s["deep-json-array"] = conditions_input(200, {"json": "/0/0/0/0", "exists": True},
                                            {"code": {"status": True}}, "", (), deep)
    deep_obj = '{"a":' * 600 + "1" + "}" * 600
    s["deep-json-object"] = conditions_input(200, {"json": "/a/a/a", "matches": "1"},
                                             {"whole": {"json": ""}}, "{{whole}}", (), deep_obj)
    s["deep-json-unclosed"] = conditions_input(200, {"json": "", "exists": False}, {}, "", (),
                                               "[" * 2000)
    s["numbers"] = conditions_input(
        200, [{"json": "/0", "lt": 1e308}, {"json": "/1", "gt": -1}, {"json": "/2", "equals": 0},
              {"header": "N", "lt": 1e-300}],
        {"n": {"json": "/3"}}, "{{n}}", [("N", "1e400")],
        "[1e308,-0.0,-0,18446744073709551615,-9223372036854775808,1.5e-320]")
    s["templates"] = conditions_input(
        201, {"status": 201}, {"id": {"json": "/id"}, "code": {"status": True}},
        "{{ id }}-{{run}}-{{instance}}-{{uuid}}-{{env.HOME}}-{{env.NOT_SET_ANYWHERE}}-{{nope}}",
        body='{"id":{"x":[1,"{{code}}"]},"t":"{{id}} and {{code}}","u":"{{instance}}"}')
    s["template-errors"] = conditions_input(200, {"status": 200}, {}, "{{a b}} {{ unclosed")
    s["regex-heavy"] = conditions_input(
        200, {"body_contains": "x"}, {}, "", (), "a" * 3000 + "!")
    s["regex-pattern"] = conditions_input(
        200, [{"header": "H", "matches": "(a+)+$"}, {"json": "/s", "matches": "\\p{Greek}+"}],
        {}, "", [("H", "a" * 100 + "b")], '{"s":"\u03b1\u03b2"}')
    s["empty"] = b""
    s["status-zero"] = conditions_input(0, {"status": 100}, {"c": {"status": True}}, "{{c}}")
    return s


# --- fuzz_load: JSON, a load section, a LoadSecond or a histogram ------------------------------

def histogram(values):
    """The JSON form of a histogram holding `values` (all below 2048: one bucket each)."""
    b, last = [], -1
    for v in sorted(set(values)):
        b += [v - last, values.count(v)]
        last = v
    return {"n": len(values), "min": min(values), "max": max(values), "sum": sum(values),
            "sat": 0, "b": b}


def load_seeds():
    h = histogram([3, 3, 7, 2000])
    second = {"load": "l1-abcd", "second": 2, "done": False, "vus": 10, "running": 9,
              "passed": 100, "failed": 2, "dropped": 1, "interrupted": 0, "late": h,
              "steps": {"0": {"requests": 4, "bytes": 100, "status": 1, "transport": 0,
                              "timeout": 1, "expect": 0, "latency": h, "raw": h}},
              "reasons": {"expect: status was 500": 2}}
    s = {}
    s["closed"] = json.dumps({"vus": 10, "duration": "30s", "pace": "1s", "think": "100ms",
                              "thresholds": {"latency{step:get}": ["p99 < 200ms"],
                                             "errors": ["rate < 1%", "count <= 3"]}})
    s["open-stages"] = json.dumps({"model": "open", "start": 5, "max_vus": 20, "stages": [
        {"duration": "10s", "target": 100}, {"duration": "0s", "target": 1},
        {"duration": "1m", "target": 0.5}], "thresholds": {
        "rps": ["> 10"], "dropped": [{"threshold": "rate < 0.1%", "abort_on_fail": True,
                                      "delay": "5s"}]}})
    s["held"] = json.dumps({"connections": 100000, "pace": "5s", "duration": "10m",
                            "source_addresses": ["127.0.0.1", "127.0.0.2"]})
    s["second"] = json.dumps(second)
    s["second-done"] = json.dumps({"load": "l2", "second": 0, "done": True,
                                   "reasons": {"cannot start: no": 1}})
    s["histogram"] = json.dumps(h)
    s["histogram-saturated"] = json.dumps(
        {"n": 1, "min": 3600000000, "max": 3600000000, "sum": 3600000000, "sat": 1,
         "b": [23221, 1]})
    s["all-in-one"] = json.dumps({"load": json.loads(s["closed"]), "second": second, "h": h})
    return s


# --- fuzz_tls_record: [version | piece][damage][where][plaintext...] -----------------------

def tls_seeds():
    body = b"HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\nhello" * 3
    return {
        "tls13-whole": bytes([2 << 1, 0, 0]) + body,
        "tls12-whole": bytes([1 | (2 << 1), 0, 0]) + body,
        "tls13-bytewise": bytes([0, 10, 0]) + body,
        "flipped": bytes([8 << 1, 100, 128]) + body,
        "cut-mid-record": bytes([16 << 1, 150, 100]) + body,
        "cut-at-start": bytes([16 << 1, 140, 0]) + body,
        "garbage-inserted": bytes([4 << 1, 200, 60]) + body,
        "close-notify": bytes([32 << 1, 230, 0]) + body,
        "empty": bytes([0, 0, 0]),
    }


# --- fuzz_h2_response: [piece][mode][status][frames: type, flags, stream, len, payload] ------

def h2_frame(type_, flags, stream_index, payload=b""):
    return bytes([type_, flags, stream_index, len(payload)]) + payload


def h2_seeds():
    data, rst, goaway, settings, ping, window = 0, 3, 7, 4, 6, 8
    end_stream = 1
    hello = h2_frame(data, end_stream, 1, b"hello")
    return {
        "headers-and-body": bytes([255, 8, 100]) + hello,
        "in-pieces": bytes([0, 8, 100]) + h2_frame(data, 0, 1, b"hel") + h2_frame(data, end_stream, 1, b"lo"),
        "head": bytes([255, 1 | 8, 100]),
        "no-content": bytes([255, 8, 104]) + h2_frame(data, end_stream, 1, b""),
        "gzip-lie": bytes([255, 8 | 16, 100]) + hello,
        "small-cap": bytes([255, 2 | 8, 100]) + h2_frame(data, end_stream, 1, b"x" * 200),
        "small-budget": bytes([255, 4 | 8, 100]) + h2_frame(data, end_stream, 1, b"y" * 100),
        "reset": bytes([255, 8, 100]) + h2_frame(rst, 0, 1, b"\x00\x00\x00\x02"),
        "goaway-refused": bytes([255, 0, 0]) + h2_frame(goaway, 0, 0, b"\x00\x00\x00\x00\x00\x00\x00\x00"),
        "settings-ping-window": bytes([64, 8, 100]) + h2_frame(settings, 0, 0, b"\x00\x03\x00\x00\x00\x01")
        + h2_frame(ping, 0, 0, b"12345678") + h2_frame(window, 0, 1, b"\x00\x01\x00\x00") + hello,
        "interim": bytes([255, 8, 3]) + h2_frame(1, 4, 1, b"\x88") + hello,
        "garbage": bytes([7, 0, 0]) + bytes(range(64)),
    }


if __name__ == "__main__":
    write("fuzz_tls_record", tls_seeds())
    write("fuzz_h2_response", h2_seeds())
    write("fuzz_load", load_seeds())
    write("fuzz_ipc_decoder", ipc_seeds())
    write("fuzz_scenario_parser", scenario_seeds())
    write("fuzz_conditions", conditions_seeds())
