#!/usr/bin/env python3
"""``lalm-eval view`` at scale: a synthetic site of 5,000 docs x 3 runs (the real page and scripts,
rows shaped like a real run's, no audio files) opened from disk in headless Chromium. Prints, per
repeat, the first render (the page's own ``first_render_ms``: data parsed to rows shown), a filter
change (speakers = 2 and "runs disagree") and a sort by a metric, then the medians. Goal: under
1 s each.

    python bench/view_scale.py [--docs 5000] [--runs 3] [--repeats 3] [--json]

Needs Debian's chromium + chromium-driver and selenium (``.ci/run`` installs them for the tests).
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from lalm_eval.view.clips import ClipReport  # noqa: E402
from lalm_eval.view.site import write_site  # noqa: E402
from tests.test_view_browser import CHROMIUM, DRIVER, filter_and_sort, make_driver, open_site, synthetic_site  # noqa: E402


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--docs", type=int, default=5000)
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args()
    if not (CHROMIUM and DRIVER):
        print("view_scale.py: error: chromium / chromedriver not found; apt-get install chromium chromium-driver")
        return 2
    with tempfile.TemporaryDirectory() as tmp:
        template, site = Path(tmp) / "template", Path(tmp) / "big"
        write_site([], [], {}, template, lambda rows, stage: ClipReport())
        synthetic_site(template, site, docs=args.docs, n_runs=args.runs)
        size = (site / "data.js").stat().st_size
        figures = []
        driver = make_driver()
        try:
            for k in range(args.repeats):
                open_site(driver, site)
                first = driver.execute_script("return window.LALM_VIEW_STATE.first_render_ms")
                filter_ms, sort_ms, matched = filter_and_sort(driver)
                figures.append((first, filter_ms, sort_ms))
                print(f"repeat {k + 1}: first render {first:.0f} ms, filter {filter_ms:.0f} ms "
                      f"({matched} rows), sort {sort_ms:.0f} ms")  # fmt: skip
        finally:
            driver.quit()
    med = [statistics.median(f[i] for f in figures) for i in range(3)]
    print(f"{args.docs} docs x {args.runs} runs (data.js {size / 1e6:.1f} MB), median of {args.repeats}: "
          f"first render {med[0]:.0f} ms, filter {med[1]:.0f} ms, sort {med[2]:.0f} ms (goal < 1000 ms each)")  # fmt: skip
    if args.json:
        print(json.dumps({"first_render_ms": med[0], "filter_ms": med[1], "sort_ms": med[2], "data_js_bytes": size}))
    return 0


if __name__ == "__main__":
    sys.exit(main())
