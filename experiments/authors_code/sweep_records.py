"""What the oracles' whole-run sweeps share: seed ranges as the command line gives them, and one JSON
line per finished run appended to a records file (a rerun skips what is recorded)."""
import json
import os


def seeds_of(text):
    """'2024-2026,2030' -> [2024, 2025, 2026, 2030]."""
    out = []
    for part in text.split(','):
        lo, _, hi = part.partition('-')
        out.extend(range(int(lo), int(hi or lo) + 1))
    return out


def recorded(path, *fields):
    """The runs a records file already holds, as tuples of `fields` (none when it does not exist)."""
    if not os.path.exists(path):
        return set()
    with open(path) as f:
        return {tuple(json.loads(line)[k] for k in fields) for line in f}


def append_record(path, record):
    os.makedirs(os.path.dirname(path) or '.', exist_ok=True)
    with open(path, 'a') as f:
        f.write(json.dumps(record, sort_keys=True) + '\n')
