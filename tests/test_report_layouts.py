"""Report layouts as data (tasks/*/report_layouts.yaml rendered by lalm_eval/report/layouts.py):
the papers' tables (PALM Table 1, Tables 5–6; MSU Tables 3, 4, 6) with values worked out by hand,
the error-type distributions summing to 100 per column, the seeded sample of failed answers, the
file checks, and a third benchmark that adds a layout without touching lalm_eval."""

import json
import textwrap

import pytest

from lalm_eval.errors import ConfigError
from lalm_eval.report.layouts import LayoutIndex, largest_remainder, load_layout_file, render_layout, sample_failures
from lalm_eval.report.results import write_results, write_samples


def tables(markdown: str) -> list[tuple[list[str], list[list[str]]]]:
    """Every Markdown table of a text: (header, body rows)."""
    out, block = [], []
    for line in markdown.splitlines() + [""]:
        if line.startswith("|"):
            block.append([c.strip() for c in line.strip("|").split("|")])
        elif block:
            out.append((block[0], block[2:]))
            block = []
    return out


@pytest.fixture(scope="module")
def index():
    return LayoutIndex.load()


def palm_rows():
    """Two strategies × 4 speaker counts × recognition/captioning; values chosen by hand."""
    rows = []
    for strategy, f1 in (("base", 0.25), ("HD", 0.5)):
        for n in (1, 2, 3, 4):
            rows.append(
                {
                    "model": "Qwen2-Audio",
                    "strategy": strategy,
                    "task": "recognition",
                    "n_speakers": n,
                    "task_name": "palm_recognition",
                    "metrics": {"token_f1": f1, "llm_judge": 0.5, "bleu": 7.0, "bertscore": 0.61},
                }
            )
            rows.append(
                {
                    "model": "Qwen2-Audio",
                    "strategy": strategy,
                    "task": "captioning",
                    "n_speakers": n,
                    "task_name": "palm_captioning",
                    "metrics": {
                        "token_f1": 0.1,
                        "llm_judge": 1.0 if n == 1 else 0.0,
                        "bleu": 20.44,
                        "bertscore": 0.6911,
                    },
                }
            )
    return rows


TABLE1_HEADER = [
    "Strategy",
    "Model",
    "One speaker · Recognition · token F1",
    "One speaker · Recognition · LLM-judge score",
    "One speaker · Captioning · BLEU",
    "One speaker · Captioning · LLM-judge score",
    "Two speakers · Recognition · token F1",
    "Two speakers · Recognition · LLM-judge score",
    "Two speakers · Captioning · BLEU",
    "Two speakers · Captioning · LLM-judge score",
    "Three speakers · Recognition · token F1",
    "Three speakers · Recognition · LLM-judge score",
    "Three speakers · Captioning · BLEU",
    "Three speakers · Captioning · LLM-judge score",
    "Four speakers · Recognition · token F1",
    "Four speakers · Recognition · LLM-judge score",
    "Four speakers · Captioning · BLEU",
    "Four speakers · Captioning · LLM-judge score",
]


def test_palm_table1_header_is_table_1s_column_structure(index):
    # PALM Table 1: per One..Four Speaker, Recognition FS LS, Captioning BS(=BLEU) LS; rows = strategy × model
    text = render_layout(index.layout("palm_table1"), palm_rows())
    [(header, body)] = tables(text)
    assert header == TABLE1_HEADER
    assert [b[:2] for b in body] == [["Base Model", "Qwen2-Audio"], ["+ Human Description (HD)", "Qwen2-Audio"]]
    base = dict(zip(header, body[0]))
    # all in %, two decimals: token F1 0.25 → 25.00, BLEU (already 0–100) stays 20.44, judge 1.0 → 100.00
    assert base["One speaker · Recognition · token F1"] == "25.00"
    assert base["One speaker · Recognition · LLM-judge score"] == "50.00"
    assert base["One speaker · Captioning · BLEU"] == "20.44"
    assert base["One speaker · Captioning · LLM-judge score"] == "100.00"
    assert base["Two speakers · Captioning · LLM-judge score"] == "0.00"
    assert dict(zip(header, body[1]))["Four speakers · Recognition · token F1"] == "50.00"
    # the abbreviations are explained, never used as a column name
    assert "FS = F1-score" in text and "BS = BLEU in §5 and Table 1 but BERTScore in Tables 5–6" in text


def test_palm_table1_without_rows_keeps_its_header_and_says_why(index):
    text = render_layout(index.layout("palm_table1"), [], missing={"llm_judge": "no LLM judge configured"})
    [(header, body)] = tables(text)
    assert header == TABLE1_HEADER and set(body[0]) == {"—"}
    assert "— LLM-judge score: no LLM judge configured" in text


def test_palm_tables5_6_name_bertscore_in_full(index):
    text = render_layout(index.layout("palm_tables5_6"), palm_rows())
    (h5, b5), (h6, b6) = tables(text)
    assert "### Table 5: 1–2 speakers" in text and "### Table 6: 3–4 speakers" in text
    per_task = ["BLEU", "token F1", "BERTScore F1", "LLM-judge score"]
    assert h5[2:] == [
        f"{n} · {t} · {m}"
        for n in ("One speaker", "Two speakers")
        for t in ("Recognition", "Captioning")
        for m in per_task
    ]
    assert h6[2:] == [
        f"{n} · {t} · {m}"
        for n in ("Three speakers", "Four speakers")
        for t in ("Recognition", "Captioning")
        for m in per_task
    ]
    row = dict(zip(h5, b5[0]))
    assert row["One speaker · Captioning · BERTScore F1"] == "69.11"  # 0.6911 in %
    assert row["One speaker · Recognition · BERTScore F1"] == "61.00"


def test_no_layout_uses_an_abbreviation_as_a_column_name(index):
    rows = palm_rows()
    for name, lay in index.layouts.items():
        if lay.report != "palm_speakers":
            continue
        for header, _ in tables(render_layout(lay, rows)):
            for col in header:
                parts = set(col.split(" · "))
                assert not parts & {"BS", "FS", "LS"}, (name, col)


def msu_rows():
    """Tier 1 only. SR has two tasks: t_a (3 samples, all 1.0) and t_b (1 sample, 0.0) → the mean of
    task means is 0.5, the sample mean 0.75. SAC: one task, one sample, 0.0."""
    rows = [
        {
            "model": "m",
            "tier": "tier1",
            "capability": "sr",
            "task_name": "t_a",
            "doc_id": i,
            "language": "en",
            "metrics": {"llm_judge": 1.0},
        }
        for i in range(3)
    ]
    rows.append(
        {
            "model": "m",
            "tier": "tier1",
            "capability": "sr",
            "task_name": "t_b",
            "doc_id": 0,
            "language": "zh",
            "metrics": {"llm_judge": 0.0},
        }
    )
    rows.append(
        {
            "model": "m",
            "tier": "tier1",
            "capability": "sac",
            "task_name": "t_c",
            "doc_id": 0,
            "language": "en",
            "metrics": {"llm_judge": 0.0},
        }
    )
    return rows


def test_msu_table3_capability_is_the_mean_of_task_means_and_avg_over_all_cases(index):
    text = render_layout(index.layout("msu_table3"), msu_rows())
    [(header, body)] = tables(text)
    assert header == [
        "Model",
        "Tier 1 · SR",
        "Tier 1 · SAC",
        "Tier 1 · SPA",
        "Tier 1 · Avg",
        "Tier 2 · SDA",
        "Tier 2 · SCII",
        "Tier 2 · Avg",
        "Tier 3 · MSSI",
        "Tier 3 · MSRI",
        "Tier 3 · Avg",
        "Tier 4 · MST",
        "Tier 4 · MSIA",
        "Tier 4 · MSCR",
        "Tier 4 · Avg",
        "Avg",
    ]
    row = dict(zip(header, body[0]))
    assert row["Tier 1 · SR"] == "50.00"  # (1.0 + 0.0) / 2 tasks, not (1+1+1+0)/4 = 75.00
    assert row["Tier 1 · SAC"] == "0.00"
    assert row["Tier 1 · Avg"] == "60.00"  # all five samples: 3/5
    assert row["Avg"] == "60.00" and row["Tier 1 · SPA"] == "—"
    assert "mean of the capability's task means" in text and "computed on all involved cases" in text


def failures():
    """Model a: 3 failures in tier1 (perceptual ×2, reasoning), 1 in tier2 (rejection), one the
    classifier could not label. Model b: 3 failures, one of each of three types, all tier4."""

    def row(model, tier, doc, label):
        return {
            "model": model,
            "tier": tier,
            "task_name": f"msu_{tier}",
            "doc_id": doc,
            "metrics": {"llm_judge": 0.0},
            "metric_details": {"llm_judge": {"error_type": label}},
        }

    rows = [
        row("a", "tier1", 0, "perceptual"),
        row("a", "tier1", 1, "perceptual"),
        row("a", "tier1", 2, "reasoning"),
        row("a", "tier2", 0, "rejection"),
        row("a", "tier2", 1, "classifier_failure"),
        row("b", "tier4", 0, "perceptual"),
        row("b", "tier4", 1, "reasoning"),
        row("b", "tier4", 2, "answer_extraction"),
    ]
    rows.append(
        {
            "model": "a",
            "tier": "tier1",
            "task_name": "msu_tier1",
            "doc_id": 9,
            "metrics": {"llm_judge": 1.0},
            "metric_details": {"llm_judge": {}},
        }
    )  # passed: not counted
    return rows


def column_sums(body, first_value_col, skip_n=True):
    rows = [r for r in body if not (skip_n and "(n)" in " ".join(r))]
    return [round(sum(float(r[c]) for r in rows if r[c] != "—"), 2) for c in range(first_value_col, len(rows[0]))]


def test_msu_table4_shares_by_hand_and_columns_sum_to_100(index):
    text = render_layout(index.layout("msu_table4"), failures())
    [(header, body)] = tables(text)
    assert header == ["Error type", "a", "b"]
    assert [r[0] for r in body] == [
        "Rejection of Answer",
        "Answer Extraction Errors",
        "Perceptual Errors",
        "Reasoning Errors",
        "Lack of Knowledge",
        "failed answers classified (n)",
    ]
    cells = {r[0]: r[1:] for r in body}
    assert cells["Perceptual Errors"] == ["50.00", "33.33"]  # a: 2/4; b: 1/3
    # b's three thirds: the rounding remainder goes to the first row of the tie (sum exactly 100)
    assert cells["Answer Extraction Errors"] == ["0.00", "33.34"]
    assert cells["Reasoning Errors"] == ["25.00", "33.33"]
    assert cells["Rejection of Answer"] == ["25.00", "0.00"]
    assert cells["failed answers classified (n)"] == ["4", "3"]
    assert column_sums(body, 1) == [100.0, 100.0]
    assert "Left out: 1 failed answers the classifier could not label" in text


def test_msu_table6_each_tier_sums_to_100_per_model(index):
    text = render_layout(index.layout("msu_table6"), failures())
    [(header, body)] = tables(text)
    assert header == ["Tier", "Error type", "a", "b"]
    blocks = {}
    for r in body:
        blocks.setdefault(r[0], []).append(r)
    assert list(blocks) == ["Tier 1", "Tier 2", "Tier 4"]
    assert {r[1]: r[2] for r in blocks["Tier 1"]}["Perceptual Errors"] == "66.67"  # 2 of 3
    assert {r[1]: r[2] for r in blocks["Tier 1"]}["Reasoning Errors"] == "33.33"
    assert {r[1]: r[3] for r in blocks["Tier 1"]}["Perceptual Errors"] == "—"  # b failed nothing in tier 1
    for tier, rows in blocks.items():
        for col in (2, 3):
            vals = [r[col] for r in rows if "(n)" not in r[1]]
            if set(vals) != {"—"}:
                assert round(sum(map(float, vals)), 2) == 100.0, (tier, col)


def test_error_sample_draws_n_per_model_seeded(index):
    rows = [
        {
            "model": m,
            "tier": "tier1",
            "task_name": "t",
            "doc_id": i,
            "metrics": {"llm_judge": 0.0},
            "metric_details": {"llm_judge": {"error_type": ("perceptual", "reasoning")[i % 2]}},
        }
        for m in ("a", "b")
        for i in range(50)
    ]
    drawn = sample_failures(rows, ["model"], 10, seed=3)
    assert sorted(r["model"] for r in drawn).count("a") == 10 and len(drawn) == 20
    assert drawn == sample_failures(list(reversed(rows)), ["model"], 10, seed=3)  # order of the input
    assert [r["doc_id"] for r in drawn] != [r["doc_id"] for r in sample_failures(rows, ["model"], 10, seed=4)]
    text = render_layout(index.layout("msu_table4"), rows, error_sample=10, seed=3)
    [(header, body)] = tables(text)
    assert {r[0]: r[1:] for r in body}["failed answers classified (n)"] == ["10", "10"]
    assert column_sums(body, 1) == [100.0, 100.0]
    assert "--error_sample 10 --seed 3" in text


def test_largest_remainder_sums_exactly():
    assert largest_remainder([1, 1, 1]) == [3334, 3333, 3333]
    assert largest_remainder([2, 1]) == [6667, 3333]
    assert largest_remainder([0, 0]) == [0, 0]
    assert sum(largest_remainder([7, 3, 5, 11, 13])) == 10000


def test_error_type_layouts_list_the_classifiers_labels(index):
    from msu_bench.judges import ERROR_TYPES

    for name in ("msu_table4", "msu_table6"):
        assert sorted(index.layout(name).spec["values"]) == sorted(ERROR_TYPES)


def test_layout_files_are_checked(tmp_path):
    bad = tmp_path / "report_layouts.yaml"
    bad.write_text("reports: {r: {title: R}}\nlayouts: {x: {report: r, kind: grid, colums: []}}\n")
    with pytest.raises(ConfigError, match=r"report_layouts.yaml.*unknown key\(s\) \['colums'\]"):
        load_layout_file(bad)
    bad.write_text("reports: {r: {default: [nope]}}\nlayouts: {}\n")
    with pytest.raises(ConfigError, match="'nope', not a layout"):
        load_layout_file(bad)
    bad.write_text("reports: {}\nlayouts: {x: {report: r, kind: pie, columns: []}}\n")
    with pytest.raises(ConfigError, match="kind must be one of"):
        load_layout_file(bad)
    dup = tmp_path / "b" / "report_layouts.yaml"
    dup.parent.mkdir()
    dup.write_text("reports: {r: {}}\nlayouts: {palm_table1: {report: r, kind: grid, columns: [{metric: bleu}]}}\n")
    with pytest.raises(ConfigError, match="palm_table1.*already declared"):
        LayoutIndex.load([dup.parent])
    with pytest.raises(ConfigError, match="did you mean palm_table1"):
        LayoutIndex.load().layout("palm_tabel1")


THIRD = {
    "report_layouts.yaml": """
        reports:
          toy_rooms:
            metadata_fields: {room_kind: unknown}
            default: [toy_by_room]
        layouts:
          toy_by_room:
            report: toy_rooms
            title: "Toy: rooms"
            kind: grid
            rows: [model, room_kind]
            columns:
              - {field: room, values: [kitchen, hall], columns: [{metric: exact_match}]}
    """,
}


def test_a_third_benchmark_adds_its_layout_without_editing_the_harness(tmp_path):
    from lalm_eval.cli import main

    folder = tmp_path / "toy_tasks"
    folder.mkdir()
    for name, body in THIRD.items():
        (folder / name).write_text(textwrap.dedent(body))
    run = tmp_path / "run"
    rows = [
        {"doc_id": i, "room": room, "metrics": {"exact_match": v}}
        for i, (room, v) in enumerate((("kitchen", 1.0), ("kitchen", 0.0), ("hall", 1.0)))
    ]
    write_samples(run, "toy_task", rows, stamp="S")
    write_results(
        run,
        {
            "results": {"toy_task": {"alias": "toy", "exact_match,none": 2 / 3}},
            "configs": {"toy_task": {"metadata": {"report": "toy_rooms", "room_kind": "indoor"}}},
            "config": {"model": "m"},
        },
        stamp="S",
    )
    from lalm_eval.report.combine import combine

    text, _ = combine([run], include_paths=[folder])
    [(header, body)] = tables(text)
    assert header == ["Model", "Room kind", "kitchen · exact match", "hall · exact match"]
    assert body == [["m", "indoor", "50.00", "100.00"]]
    # unknown report name in a task: an error that lists the declared ones
    write_results(
        run,
        {
            "results": {"toy_task": {"alias": "toy"}},
            "configs": {"toy_task": {"metadata": {"report": "toy_rums"}}},
            "config": {"model": "m"},
        },
        stamp="T",
    )
    write_samples(run, "toy_task", rows, stamp="T")
    with pytest.raises(ConfigError, match="toy_rums.*declared: .*toy_rooms"):
        combine([run], include_paths=[folder])


def test_cli_report_layout_flags(tmp_path, capsys):
    from lalm_eval.cli import main

    for model in ("cascade", "tiny"):
        out = tmp_path / model
        samples = [
            {"doc_id": i, "task": "recognition", "n_speakers": 1, "metrics": {"token_f1": 0.5, "llm_judge": None}}
            for i in range(2)
        ]
        write_samples(out, "palm_recognition", samples, stamp="S")
        fails = [
            {
                "doc_id": i,
                "tier": "tier1",
                "capability": "sr",
                "metrics": {"llm_judge": 0.0},
                "metric_details": {"llm_judge": {"error_type": "perceptual" if i else "reasoning"}},
            }
            for i in range(4)
        ]
        write_samples(out, "msu_t1_sr_speaker_counting", fails, stamp="S")
        write_results(
            out,
            {
                "results": {"palm_recognition": {"alias": "r"}, "msu_t1_sr_speaker_counting": {"alias": "c"}},
                "configs": {
                    "palm_recognition": {"metadata": {"strategy": "base", "report": "palm_speakers"}},
                    "msu_t1_sr_speaker_counting": {"metadata": {"report": "msu_tiers"}},
                },
                "config": {"model": model},
            },
            stamp="S",
        )
    folders = [str(tmp_path / "cascade"), str(tmp_path / "tiny")]
    assert main(["report", *folders, "--layout", "palm_table1"]) == 0
    printed = capsys.readouterr().out
    [(header, body)] = tables(printed)
    assert header == TABLE1_HEADER and [b[1] for b in body] == ["cascade", "tiny"]
    assert main(["report", *folders, "--layout", "msu_table4,msu_table6", "--error_sample", "2", "--seed", "5"]) == 0
    printed = capsys.readouterr().out
    (h4, b4), (h6, b6) = tables(printed)
    assert h4 == ["Error type", "cascade", "tiny"]
    assert {r[0]: r[1:] for r in b4}["failed answers classified (n)"] == ["2", "2"]
    assert column_sums(b4, 1) == [100.0, 100.0]
    assert main(["report", *folders, "--layout", "msu_tabel4"]) == 2  # unknown layout: a clear error
    assert "did you mean msu_table4" in capsys.readouterr().err


def recipe_rows():
    """PALM Tables 2/3 inputs: three runs of one model (base, a LoRA and a prompt-tuning output),
    labelled by folder; base strategy only, and one HD row that the tables must leave out."""
    rows = []
    for run, f1 in (("base", 0.0), ("lora_attn", 0.5), ("prompt_tuning-4", 0.25)):
        for n in (1, 2):
            rows.append(
                {
                    "model": run,
                    "strategy": "base",
                    "task": "recognition",
                    "n_speakers": n,
                    "task_name": "palm_recognition",
                    "metrics": {"token_f1": f1 / n, "llm_judge": 0.5},
                }
            )
            rows.append(
                {
                    "model": run,
                    "strategy": "base",
                    "task": "captioning",
                    "n_speakers": n,
                    "task_name": "palm_captioning",
                    "metrics": {"bleu": 10.0 * n, "llm_judge": 0.25},
                }
            )
    rows.append(
        {
            "model": "base",
            "strategy": "HD",
            "task": "recognition",
            "n_speakers": 1,
            "task_name": "palm_recognition_hd",
            "metrics": {"token_f1": 1.0, "llm_judge": 1.0},
        }
    )
    return rows


def test_palm_table2_is_one_row_per_run_on_one_speaker_audio(index):
    ((header, body),) = tables(render_layout(index.layout("palm_table2"), recipe_rows()))
    assert header == [
        "Model",
        "Recognition · token F1",
        "Recognition · LLM-judge score",
        "Captioning · BLEU",
        "Captioning · LLM-judge score",
    ]
    # one-speaker rows only, the HD row left out: base 0.0, lora 0.5, prompt 0.25 (in %)
    assert body == [
        ["base", "0.00", "50.00", "10.00", "25.00"],
        ["lora_attn", "50.00", "50.00", "10.00", "25.00"],
        ["prompt_tuning-4", "25.00", "50.00", "10.00", "25.00"],
    ]


def test_palm_table3_has_table_1s_columns_and_one_row_per_run(index):
    ((header, body),) = tables(render_layout(index.layout("palm_table3"), recipe_rows()))
    assert header == ["Model"] + TABLE1_HEADER[2:]
    assert [r[0] for r in body] == ["base", "lora_attn", "prompt_tuning-4"]
    lora = body[1]
    assert lora[1:5] == ["50.00", "50.00", "10.00", "25.00"]  # one speaker
    assert lora[5:9] == ["25.00", "50.00", "20.00", "25.00"]  # two speakers: f1 0.5 / 2, BLEU 20
