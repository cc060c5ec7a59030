#!/usr/bin/python3
# SPDX-License-Identifier: MIT
"""Adds up meson's testlog.json of every build given and prints one closing
line "N passed, N failed". A skipped test counts as failed: the CI script
installs every tool, so a skip means something is missing."""
import json
import sys

passed = failed = 0
for path in sys.argv[1:]:
    with open(path) as f:
        for line in f:
            line = line.strip()
            if not line:
                continue
            t = json.loads(line)
            res = t.get("result")
            if res in ("OK", "EXPECTEDFAIL"):
                passed += 1
            else:
                failed += 1
                print(f"  not ok: {path}: {t.get('name')} ({res})")
print(f"{passed} passed, {failed} failed")
sys.exit(1 if failed or passed == 0 else 0)
