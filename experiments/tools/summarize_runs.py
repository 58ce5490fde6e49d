#!/usr/bin/env python3
"""Summarises //experiments:run result files into a markdown table beside the published values.

Usage: summarize_runs.py RESULTS.jsonl > table.md
Each line of RESULTS.jsonl is one run's final JSON (as printed by //experiments:run), with a
"label" key naming the row (e.g. "fedavg", "fedavg (dropout at eval)"). Nothing here is typed in
by hand except the paper's published values, which are quoted from
../shared/papers/seeds_fedgkc_fedtad.md (FedTAD Table 2).
"""
import collections
import json
import statistics
import sys

PAPER = {  # FedTAD Table 2 (mean ± std over 3 runs), Louvain 5/10/20 clients
    "fedavg": {"cora": (80.6, 73.6, 56.0), "citeseer": (71.5, 68.9, 66.3),
               "coauthor_cs": (90.4, 85.9, 83.9), "coauthor_physics": (94.7, 91.6, 90.3)},
    "fedprox": {"cora": (80.9, 73.3, 56.3), "citeseer": (71.3, 69.1, 65.9),
                "coauthor_cs": (90.5, 86.1, 84.1), "coauthor_physics": (94.7, 91.6, 90.3)},
}
DATASETS = ["cora", "citeseer", "coauthor_cs", "coauthor_physics"]


def main(path):
    runs = collections.defaultdict(list)
    protocols = set()
    for line in open(path):
        if not line.strip():
            continue
        r = json.loads(line)
        runs[(r["label"], r["dataset"], r["clients"])].append(r)
        protocols.add(r["protocol"].split(" split=")[0])
    labels = sorted({k[0] for k in runs})
    print("| method | " + " | ".join(f"{d} {k}" for d in DATASETS for k in (5, 10, 20)) + " |")
    print("|---" * (1 + 3 * len(DATASETS)) + "|")
    for label in labels:
        cells = []
        for d in DATASETS:
            for i, k in enumerate((5, 10, 20)):
                rs = runs.get((label, d, k), [])
                if not rs:
                    cells.append("not run")
                    continue
                accs = [r["test_acc"] for r in rs]
                m = statistics.mean(accs)
                s = statistics.stdev(accs) if len(accs) > 1 else 0.0
                base = label.split(" ")[0]
                paper = PAPER.get(base, {}).get(d)
                ref = f" (paper {paper[i]}, Δ {m - paper[i]:+.1f})" if paper else ""
                cells.append(f"{m:.1f} ± {s:.1f}{ref}")
        print(f"| {label} | " + " | ".join(cells) + " |")
    print()
    print("Runs per cell: " + ", ".join(sorted({str(len(v)) for v in runs.values()})) +
          " (training seeds 2024, 1, 2; partition seed 2024 fixed).")
    print("Protocols: " + "; ".join(sorted(protocols)))


if __name__ == "__main__":
    main(sys.argv[1])
