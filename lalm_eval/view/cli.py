"""``lalm-eval view RUN_DIR [RUN_DIR ...] [--output_path DIR] [--serve]``."""

from __future__ import annotations

import argparse
import os
from pathlib import Path

from lalm_eval.errors import ConfigError


def parser() -> argparse.ArgumentParser:
    ap = argparse.ArgumentParser(
        prog="lalm-eval view",
        description="a static sample browser (audio, runs side by side) of --log_samples run folders; "
        "opens from disk, no server or network needed",
    )
    ap.add_argument("folders", nargs="+", help="--output_path folders of lalm-eval runs (with --log_samples)")
    ap.add_argument("--output_path", default=None, help="the site's folder (default: <first run>/view)")
    ap.add_argument("--serve", action="store_true", help="also serve the site on 127.0.0.1 (Ctrl-C stops)")
    ap.add_argument("--port", type=int, default=8000, help="--serve: the port (default 8000; 0: any free one)")
    ap.add_argument("--cache_dir", default=None, help="where the tasks' datasets are cached (as for lalm-eval)")
    ap.add_argument("--include_path", action="append", default=None, help="extra task folder (repeatable)")
    return ap


def serve(folder: Path, port: int) -> None:
    import functools
    import http.server

    handler = functools.partial(http.server.SimpleHTTPRequestHandler, directory=str(folder))
    with http.server.ThreadingHTTPServer(("127.0.0.1", port), handler) as server:
        print(f"serving http://127.0.0.1:{server.server_address[1]}/ (Ctrl-C stops)", flush=True)
        server.serve_forever()


def main(argv=None) -> int:
    from lalm_eval.flags import default_cache, include_paths_flag, writable_folder
    from lalm_eval.view.clips import extract_clips
    from lalm_eval.view.join import join_runs
    from lalm_eval.view.runs import read_runs
    from lalm_eval.view.site import check_output, write_site

    args = parser().parse_args(argv)
    if any(not f.strip() for f in args.folders):
        raise ConfigError("view: a folder argument is empty; give the --output_path folders of lalm-eval runs")
    folders = [Path(os.path.expanduser(f)) for f in args.folders]
    if not 0 <= args.port <= 65535:
        raise ConfigError(f"--port {args.port}: not a port; give 0 to 65535")
    include = include_paths_flag(args.include_path) if args.include_path else None
    runs = read_runs(folders)
    out = Path(os.path.expanduser(args.output_path)) if args.output_path else folders[0] / "view"
    check_output(out)
    cache_dir = writable_folder(default_cache() if args.cache_dir is None else args.cache_dir, "--cache_dir")
    rows, counts = join_runs(runs)

    def extract(rows, stage):
        return extract_clips(rows, stage, cache_dir, include)

    data = write_site(runs, rows, counts, out, extract)
    clips = data["clips"]
    missing = sum(clips["missing"].values())
    print(
        f"lalm-eval view: {len(rows)} docs of {len(counts)} task(s) from {len(runs)} run(s); "
        f"{clips['written']} audio clip(s) written, {clips['shared']} shared, {missing} doc(s) without audio"
    )
    for reason, n in clips["missing"].items():
        print(f"lalm-eval view:   no audio: {n} doc(s): {reason}")
    print(f"lalm-eval view: wrote {out / 'index.html'}")
    if args.serve:
        serve(out, args.port)
    return 0
