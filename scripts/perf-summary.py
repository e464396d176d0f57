#!/usr/bin/env python3
"""Medians over the rounds of scripts/perf-rounds.sh: `hookline bench` JSON reports and criterion
point estimates (time per iteration), each with its ratio as measured within its own round."""
import glob
import json
import re
import statistics
import sys

out = sys.argv[1] if len(sys.argv) > 1 else "/tmp/hookline-perf"
UNITS = {"ps": 1e-3, "ns": 1.0, "µs": 1e3, "us": 1e3, "ms": 1e6, "s": 1e9}


def med(values):
    return statistics.median(values) if values else float("nan")


def cli():
    names = sorted({re.sub(r"^r\d-", "", p.split("/")[-1][:-5]) for p in glob.glob(f"{out}/r*-*.json")})
    print("| run | calls/s | p50 µs | p99 µs | ratio to direct (throughput) | direct ns/call |")
    print("|---|---|---|---|---|---|")
    for name in names:
        paths = sorted(glob.glob(f"{out}/r?-{name}.json"))
        reports = [json.load(open(p)) for p in paths if open(p).read().strip()]
        if not reports:
            print(f"| {name} | failed in every round | | | | |")
            continue
        if name == "memory":
            for r in reports:
                print(f"<!-- memory: {r['sessions']} sessions, before {r['rss_before']}, after {r['rss_after']}, {r['bytes_per_session']:.0f} B/session -->")
            print(f"| memory | median {med([r['bytes_per_session'] for r in reports]):.0f} bytes/session, "
                  f"after {med([r['rss_after'] for r in reports]) / 2**20:.1f} MiB | | | | |")
            continue
        print(f"| {name} | {med([r['calls_per_second'] for r in reports]) / 1e3:.0f} k "
              f"| {med([r['latency']['p50_ns'] for r in reports]) / 1e3:.2f} "
              f"| {med([r['latency']['p99_ns'] for r in reports]) / 1e3:.2f} "
              f"| {med([r['throughput_ratio'] for r in reports]):.3f} "
              f"({', '.join('%.3f' % r['throughput_ratio'] for r in reports)}) "
              f"| {med([r['direct_ns_per_call'] for r in reports]):.0f} |")


def criterion():
    for bench in ["pipeline", "external", "gateway", "rules"]:
        rounds = []
        for p in sorted(glob.glob(f"{out}/r?-criterion-{bench}.txt")):
            found, name = {}, None
            for line in open(p):
                line = line.rstrip()
                m = re.match(r"^(\S+/\S+)", line)
                if m and "time:" not in line:
                    name = m.group(1)
                m = re.search(r"time:\s+\[\S+ \S+ (\S+) (\S+) \S+ \S+\]", line)
                if m and name and name not in found:
                    found[name] = float(m.group(1)) * UNITS[m.group(2)]
            rounds.append(found)
        if not rounds:
            continue
        print(f"\n**{bench}** (median of {len(rounds)} rounds, ns per iteration; per-round values)\n")
        print("| benchmark | median ns | rounds |")
        print("|---|---|---|")
        for name in rounds[0]:
            values = [r[name] for r in rounds if name in r]
            print(f"| {name} | {med(values):.1f} | {', '.join(f'{v:.1f}' for v in values)} |")


cli()
criterion()
