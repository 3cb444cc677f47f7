"""One builder on lalm_eval.hub.builder.BenchBuilder: the first clips of the embedded corpus."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import datasets

from lalm_eval.hub.builder import BenchBuilder, BenchBuilderConfig, Rendered

FEATURES = datasets.Features(
    {
        "audio": datasets.Audio(sampling_rate=16000),
        "clip_id": datasets.Value("string"),
        "speaker": datasets.Value("string"),
        "text": datasets.Value("string"),
        "language": datasets.Value("string"),
    }
)


@dataclasses.dataclass(frozen=True)
class ToyConfig:
    clips: int = 4

    def to_dict(self) -> dict:
        return dataclasses.asdict(self)


def load_config(preset: str) -> ToyConfig:
    return ToyConfig(clips=4 if preset == "tiny" else 8)


class ToyRooms(BenchBuilder):
    BUILDER_CONFIGS = [BenchBuilderConfig(name="rooms")]

    def _info(self):
        return datasets.DatasetInfo(features=FEATURES)

    def make_plan(self):
        from palm_bench.corpus.embedded import load_embedded_corpus

        corpus = load_embedded_corpus()
        english = [u for u in corpus.utterances if u.language == "en"][: self.config.build.clips]
        return [(u, corpus.speakers[u.speaker].name or u.speaker) for u in english]

    def units(self, split):
        return list(range(len(self.plan)))

    def render(self, unit):
        utterance, _ = self.plan[unit]
        return Rendered(utterance.load_audio(), utterance.id)

    def rows(self, unit, audio):
        utterance, name = self.plan[unit]
        yield {"audio": audio.audio, "clip_id": utterance.id, "speaker": name, "text": utterance.text, "language": "en"}


def build(out: Path, cfg: ToyConfig, cache_dir: Path) -> None:
    from lalm_eval.hub.card import front_matter, render_card
    from lalm_eval.hub.export import export_builders, finish_folder

    out.mkdir(parents=True, exist_ok=True)
    files, _ = export_builders(
        lambda config, tmp: ToyRooms(config_name=config, cache_dir=tmp, build=cfg), ["rooms"], out, work_dir=out
    )
    from toy_bench import CARDS

    card = render_card("toy.md.j2", {"configs_yaml": front_matter(files, root=out), "rows": cfg.clips}, templates=CARDS)
    finish_folder(out, card, {"config": cfg.to_dict()})
