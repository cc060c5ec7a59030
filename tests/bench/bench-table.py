#!/usr/bin/python3
# SPDX-License-Identifier: MIT
# bench-table.py - turn `bench --json` output (stdin) into the Markdown
# tables of docs/performance.md. Usage:
#   build-rel/tests/bench/bench --seconds 60 --json | tests/bench/bench-table.py
import json
import sys


def us(ns):
    return f"{ns / 1000:.1f}"


def main():
    d = json.load(sys.stdin)
    print(f"- sigil_crypto_impl: `{d['sigil_impl']}`; CPU: {d['cpu']} ({d['ncpus']} logical CPUs); "
          f"TSC {d['tsc_ghz']:.3f} GHz")
    print(f"- compiler: {d['compiler']}; build: {d['buildtype']}; "
          f"assertions {'on' if d.get('assertions') else 'off'}")
    print(f"- libsodium {d['libsodium']}; {d['openssl']}")
    print(f"- budget {d['seconds']:g} s; load average (1 min) at the end: {d['loadavg_1min_at_end']:.2f}; "
          f"failures during timing: {d['failures_during_timing']}")
    print()
    print("Per operation, in µs: thread-CPU-time median [p10 .. p90]; wall-clock median and minimum; "
          "TSC ticks (reference cycles) median.")
    print()
    print("| operation | implementation | cpu median [p10 .. p90] µs | wall median µs | wall min µs | ticks median | batches |")
    print("|---|---|---|---|---|---|---|")
    for name, op in d["ops"].items():
        if not op["ok"]:
            print(f"| {name} | CHECK FAILED, not timed | | | | | |")
            continue
        for impl, r in op["impls"].items():
            c = r["cpu_ns"]
            print(f"| {name} | {impl} | {us(c['median'])} [{us(c['p10'])} .. {us(c['p90'])}] | "
                  f"{us(r['ns']['median'])} | {us(r['ns']['min'])} | {r['cycles']['median']:.0f} | {r['batches']} |")
    print()
    print("sigil / best other (below 1.00: sigil is faster):")
    print()
    print("| operation | by cpu median | by wall median | by wall min | best other (cpu) |")
    print("|---|---|---|---|---|")
    for name, op in d["ops"].items():
        if op["ok"] and "ratio_vs_best_other" in op:
            print(f"| {name} | {op['cpu_ratio_vs_best_other']:.2f} | {op['ratio_vs_best_other']:.2f} | "
                  f"{op['min_ratio_vs_best_other']:.2f} | {op['best_other_by_cpu']} |")
    if "batch_ratio" in d:
        print()
        print("Batch verification (64 per batch), per signature, over single verification:")
        print()
        print("| against | by cpu median | by wall median |")
        print("|---|---|---|")
        br = d["batch_ratio"]
        for k, v in br.items():
            if k.startswith("vs_"):
                other = k[3:]
                print(f"| {other} single verify | {br['cpu_vs_' + other]:.2f} | {v:.2f} |")


if __name__ == "__main__":
    main()
