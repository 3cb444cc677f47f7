"""Hooks of the toy tasks: the dataset is built once from the embedded corpus (lalm_eval's factory)."""

from lalm_eval.hub.build_once import prepare_dataset_hook


def _load_config(preset):
    from toy_bench.builder import load_config

    return load_config(preset)


def _build(out, cfg, cache_dir):
    from toy_bench.builder import build

    build(out, cfg, cache_dir)


prepare_dataset = prepare_dataset_hook(
    "toy-rooms", "tiny", load_config=_load_config, build=_build, build_command="toy-bench build"
)
