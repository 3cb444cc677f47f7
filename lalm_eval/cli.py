"""``lalm-eval``: the evaluation harness's command line.

For now it reports the installation (version and where the task and card folders are); the
evaluation flags (``--model --tasks ...``) arrive with the harness.
"""

from __future__ import annotations

import argparse
import json

from lalm_eval import __version__
from lalm_eval.resources import RESOURCE_NAMES, resource_dir


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(prog="lalm-eval", description="Evaluate audio-language models")
    ap.add_argument("--version", action="version", version=f"lalm-eval {__version__}")
    sub = ap.add_subparsers(dest="command", required=True)
    sub.add_parser("paths", help="print where the task and hub-card folders of this install are")
    args = ap.parse_args(argv)
    if args.command == "paths":
        print(json.dumps({name: str(resource_dir(name)) for name in RESOURCE_NAMES}, indent=2))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
