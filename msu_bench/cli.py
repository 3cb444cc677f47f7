"""``msu-bench``: the MSU-Bench command line (build, export and push arrive with the builder)."""

from __future__ import annotations

import argparse

from msu_bench import __version__


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(prog="msu-bench", description="MSU-Bench: multi-speaker conversation understanding")
    ap.add_argument("--version", action="version", version=f"msu-bench {__version__}")
    ap.parse_args(argv)
    ap.print_help()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
