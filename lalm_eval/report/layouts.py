"""Report layouts as data: the tables a benchmark's report prints, declared next to its tasks.

A task says which report its sample rows feed (``metadata.report: <name>`` in the task YAML). A
task folder's ``report_layouts*.yaml`` declares reports (the task-metadata fields copied onto
each row, the layouts printed by default, the plots) and layouts (tables); this module finds those
files (:class:`LayoutIndex`) and renders them (:func:`render_layout`). The harness names no
benchmark field: a new benchmark adds a task folder with its YAML and edits nothing here.

Two kinds of layout:

- ``grid``: rows keyed by row fields (``model``, a task-metadata field …); columns are a tree of
  field filters (``{field, values, labels, columns}``), plain groups (``{label, columns}``) and
  leaves (``{metric, label, mean}`` or ``{count: true}``). A leaf's cell is the metric over the
  rows that pass every filter on its path, under the aggregation its tasks declare (the mean, or
  their ``metric_list`` ``median`` / ``corpus``: :mod:`lalm_eval.report.cells`): over the samples
  (``mean: samples``, the default) or the mean of the per-``<field>`` values (``mean: task_name``:
  the mean of task values).
  ``metric: "*"`` stands for every selected metric that has a value under the leaf's innermost
  field filter (or a reason it is missing). ``for_each_metric`` prints one table per metric.
- ``distribution``: for each column group (``columns: [model]``) the percentage of each value of a
  categorical per-sample field (e.g. ``error_type`` from a metric's details) among the rows that
  have one; optionally per row block (``blocks: tier``) and drawn as a seeded sample of N rows per
  ``sample_per`` group first. Percentages are rounded by largest remainder, so that every column
  (every block of a column) sums to exactly 100.00.

Every value prints as a percentage with two decimals (each registered metric declares its full
name and factor to %: ``display_name`` and ``percent`` on its class, see
:class:`lalm_eval.metrics.scoring.Metric`); a cell without a value prints "—" with the reason in a
footnote, a metric that declares no scale prints as computed with a footnote saying so.
"""

from __future__ import annotations

import dataclasses
import math
import random
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

import yaml

from lalm_eval.errors import ConfigError, UnknownNameError
from lalm_eval.report.cells import aggregate
from lalm_eval.report.tables import DASH, _markdown, order_key, value
from lalm_eval.seeding import stable_int

LAYOUT_GLOB = "report_layouts*.yaml"
KINDS = ("grid", "distribution")
_REPORT_KEYS = {"title", "metadata_fields", "default", "plots", "plot_metrics"}
_LAYOUT_KEYS = {"report", "title", "kind", "digits", "where", "notes"}
_GRID_KEYS = _LAYOUT_KEYS | {"rows", "row_order", "row_labels", "columns", "parts", "for_each_metric"}
_DIST_KEYS = _LAYOUT_KEYS | {
    "field",
    "from_metric",
    "values",
    "value_labels",
    "unclassified",
    "sample_per",
    "columns",
    "blocks",
    "block_labels",
}
_NODE_KEYS = {"field", "values", "order", "labels", "label", "columns", "metric", "mean", "count"}
_PLOT_KEYS = {"name", "kind", "x", "x_values", "x_label", "series", "where"}


def _registered_metric(metric: str):
    """The class or function registered as ``metric`` in the METRICS registry (entry-point plug-ins
    included), or None when no metric of that name is registered or it cannot be imported."""
    from lalm_eval.metrics.scoring import METRICS

    try:
        return METRICS.get(metric)
    except (UnknownNameError, ImportError, AttributeError):
        return None


def metric_name(metric: str) -> str:
    """The metric's full name, as its registered class (or function) declares it
    (``display_name``); the name itself when it declares none."""
    return getattr(_registered_metric(metric), "display_name", None) or metric


def percent_factor(metric: str) -> float | None:
    """The factor that turns ``metric``'s values into % (its class's ``percent``); None when the
    registered metric declares none, or no metric of that name is registered."""
    return getattr(_registered_metric(metric), "percent", None)


@dataclasses.dataclass(frozen=True)
class Report:
    name: str
    file: Path
    title: str
    metadata_fields: dict
    default: tuple[str, ...]
    plots: tuple[dict, ...]
    plot_metrics: tuple[str, ...]


@dataclasses.dataclass(frozen=True)
class Layout:
    name: str
    file: Path
    spec: dict

    @property
    def report(self) -> str:
        return self.spec["report"]

    @property
    def title(self) -> str:
        return self.spec.get("title", self.name)


def _check_keys(data: Mapping, allowed: set, file: Path, where: str) -> None:
    if not isinstance(data, Mapping):
        raise ConfigError(f"{file}: {where} must be a mapping, got {type(data).__name__}")
    unknown = sorted(set(data) - allowed)
    if unknown:
        raise ConfigError(f"{file}: unknown key(s) {unknown} in {where}; allowed: {sorted(allowed)}")


def _check_node(node: Mapping, file: Path, where: str) -> None:
    _check_keys(node, _NODE_KEYS, file, where)
    leaf = "metric" in node or "count" in node
    if leaf == ("columns" in node):
        raise ConfigError(f"{file}: {where} needs either 'columns' (a group) or 'metric' / 'count' (a leaf)")
    if "values" in node and "field" not in node:
        raise ConfigError(f"{file}: {where} has 'values' but no 'field'")
    values = node.get("values")
    if values is not None and values != "data" and not isinstance(values, list):
        raise ConfigError(f"{file}: {where}.values must be a list or 'data', got {values!r}")
    for i, child in enumerate(node.get("columns") or []):
        _check_node(child, file, f"{where}.columns[{i}]")


_LOADER = getattr(yaml, "CSafeLoader", yaml.SafeLoader)  # libyaml where PyYAML has it: 10x faster


def load_layout_file(path: str | Path) -> tuple[dict[str, Report], dict[str, Layout]]:
    """The reports and layouts of one YAML file; every key checked (``ConfigError`` naming the file)."""
    file = Path(path)
    try:
        data = yaml.load(file.read_text(encoding="utf-8"), Loader=_LOADER) or {}
    except (OSError, yaml.YAMLError) as exc:
        raise ConfigError(f"{file}: cannot read report layouts ({exc}); fix the YAML") from None
    if not isinstance(data, Mapping):
        raise ConfigError(
            f"{file}: report layouts must be a mapping, got {type(data).__name__}; "
            "write 'reports:' and 'layouts:' at its top level"
        )
    _check_keys({k: v for k, v in data.items() if not k.startswith("_")}, {"reports", "layouts"}, file, "the file")
    reports = {}
    for name, spec in (data.get("reports") or {}).items():
        _check_keys(spec, _REPORT_KEYS, file, f"reports.{name}")
        for i, plot in enumerate(spec.get("plots") or []):
            _check_keys(plot, _PLOT_KEYS, file, f"reports.{name}.plots[{i}]")
            if plot.get("kind") not in ("line", "bars"):
                raise ConfigError(f"{file}: reports.{name}.plots[{i}].kind must be 'line' or 'bars'")
        reports[name] = Report(
            name,
            file,
            spec.get("title", name),
            dict(spec.get("metadata_fields") or {}),
            tuple(spec.get("default") or ()),
            tuple(spec.get("plots") or ()),
            tuple(spec.get("plot_metrics") or ()),
        )
    layouts = {}
    for name, spec in (data.get("layouts") or {}).items():
        kind = (spec or {}).get("kind")
        if kind not in KINDS:
            raise ConfigError(f"{file}: layouts.{name}.kind must be one of {KINDS}, got {kind!r}")
        _check_keys(spec, _GRID_KEYS if kind == "grid" else _DIST_KEYS, file, f"layouts.{name}")
        if "report" not in spec:
            raise ConfigError(f"{file}: layouts.{name} needs 'report' (the metadata.report value of its tasks)")
        if kind == "grid":
            parts = spec.get("parts") or [{"columns": spec.get("columns")}]
            for p, part in enumerate(parts):
                _check_keys(part, {"title", "columns"}, file, f"layouts.{name}.parts[{p}]")
                if not part.get("columns"):
                    raise ConfigError(f"{file}: layouts.{name} needs 'columns' (or 'parts' with columns)")
                for i, node in enumerate(part["columns"]):
                    _check_node(node, file, f"layouts.{name}.columns[{i}]")
        else:
            for key in ("field", "values", "columns"):
                if key not in spec:
                    raise ConfigError(f"{file}: layouts.{name} (distribution) needs {key!r}")
        layouts[name] = Layout(name, file, dict(spec))
    for name, report in reports.items():
        for lay in report.default:
            if lay not in layouts:
                raise ConfigError(f"{file}: reports.{name}.default names {lay!r}, not a layout of this file")
    return reports, layouts


class LayoutIndex:
    """Every report and layout declared under the task folders (the installed ``tasks/`` and any
    ``include_paths``); a name declared twice is an error naming both files."""

    def __init__(self, reports: Mapping[str, Report], layouts: Mapping[str, Layout]):
        self.reports, self.layouts = dict(reports), dict(layouts)

    @classmethod
    def load(cls, include_paths: Iterable[str | Path] | None = None) -> LayoutIndex:
        from lalm_eval.resources import task_folders

        folders = [*task_folders(), *map(Path, include_paths or ())]
        files = sorted({f.resolve() for d in folders if Path(d).is_dir() for f in Path(d).rglob(LAYOUT_GLOB)})
        reports: dict[str, Report] = {}
        layouts: dict[str, Layout] = {}
        for file in files:
            new_reports, new_layouts = load_layout_file(file)
            for kind, seen, new in (("report", reports, new_reports), ("layout", layouts, new_layouts)):
                for name, item in new.items():
                    if name in seen:
                        raise ConfigError(f"{file}: {kind} {name!r} is already declared in {seen[name].file}")
                    seen[name] = item
        for name, lay in layouts.items():
            if lay.report not in reports:
                raise ConfigError(
                    f"{lay.file}: layouts.{name}.report {lay.report!r} is not a declared report; "
                    f"declared: {sorted(reports)}"
                )
        return cls(reports, layouts)

    def layout(self, name: str, flag: str = "--layout") -> Layout:
        """The layout ``name``; an unknown name is an error naming ``flag`` (what asked for it) and
        the close names."""
        if name not in self.layouts:
            import difflib

            close = difflib.get_close_matches(name, self.layouts, n=3)
            raise ConfigError(
                f"{flag}: unknown report layout {name!r}"
                + (f" (did you mean {', '.join(close)}?)" if close else "")
                + f"; pick one of {', '.join(sorted(self.layouts))}"
            )
        return self.layouts[name]

    def report(self, name: str) -> Report:
        if name not in self.reports:
            raise ConfigError(
                f"metadata.report {name!r} names no declared report (files {LAYOUT_GLOB} under the "
                f"task folders); declared: {', '.join(sorted(self.reports))}"
            )
        return self.reports[name]


# ---------------------------------------------------------------- rows


def tag_rows(
    rows: Iterable[Mapping], *, model: str, task: str, metadata: Mapping | None, report: Report | None
) -> list[dict]:
    """Scored sample rows of one task, tagged with ``model``, ``task_name``, ``task_id`` (the row's
    own, else the task name) and the task-metadata fields the report declares."""
    meta = metadata or {}
    fields = {f: meta.get(f, default) for f, default in (report.metadata_fields if report else {}).items()}
    return [
        {**r, **fields, "model": model, "task_name": task, "task_id": r.get("task_id", task)}
        for r in rows
        if "metrics" in r
    ]


def _same(a, b) -> bool:
    return a == b or str(a) == str(b)


def _matches(row: Mapping, where: Mapping | None) -> bool:
    for field, allowed in (where or {}).items():
        allowed = allowed if isinstance(allowed, list) else [allowed]
        if not any(_same(row.get(field), v) for v in allowed):
            return False
    return True


def _data_values(rows: Sequence[Mapping], field: str, order: Sequence | None) -> list:
    seen = []
    for r in rows:
        v = r.get(field)
        if v not in (None, "") and not any(_same(v, s) for s in seen):
            seen.append(v)
    order = list(order or [])
    ranked = [o for o in order if any(_same(o, s) for s in seen)]
    rest = sorted((s for s in seen if not any(_same(s, o) for o in order)), key=order_key)
    return ranked + rest


def _label(node: Mapping, v) -> str:
    labels = node.get("labels") or {}
    for k, lab in labels.items():
        if _same(k, v):
            return str(lab)
    return str(node["label"]).format(value=v) if "label" in node else str(v)


# ---------------------------------------------------------------- grid


@dataclasses.dataclass
class _Column:
    header: list[str]
    filters: list[tuple[str, Any]]
    metric: str | None
    mean: str
    count: bool


class _Cells:
    """The cells of one table: each the metric under its tasks' aggregation (:mod:`.cells`) over the
    cell's samples, or the mean of those values per ``by`` group; "—" and footnotes where none."""

    def __init__(self, digits: int, missing: Mapping[str, str], aggregations: Mapping | None = None):
        self.digits, self.missing, self.aggregations = digits, dict(missing), aggregations or {}
        self.dashed: list[str] = []
        self.unscaled: list[str] = []
        self.unaggregated: dict[str, str] = {}

    def _value(self, rows: Sequence[Mapping], metric: str) -> float | None:
        result, reason = aggregate(rows, metric, self.aggregations)
        if reason is not None:
            self.unaggregated.setdefault(metric, reason)
        return result

    def mean(self, rows: Sequence[Mapping], metric: str, by: str) -> str:
        if by == "samples":
            result = self._value(rows, metric)
        else:
            groups: dict = {}
            for r in rows:
                if value(r, metric) is not None:
                    groups.setdefault(str(r.get(by)), []).append(r)
            means = [self._value(g, metric) for g in groups.values()]
            result = sum(means) / len(means) if means and None not in means else None
        if result is None:
            if metric not in self.dashed:
                self.dashed.append(metric)
            return DASH
        factor = percent_factor(metric)
        if factor is None and metric not in self.unscaled:
            self.unscaled.append(metric)
        return f"{result * (factor or 1):.{self.digits}f}"

    def footnotes(self) -> list[str]:
        notes = [f"{DASH} {metric_name(m)}: {self.missing[m]}" for m in self.dashed if m in self.missing]
        notes += [
            f"{DASH} {metric_name(m)}: {self.unaggregated[m]}"
            for m in self.dashed
            if m not in self.missing and m in self.unaggregated
        ]
        if any(m not in self.missing and m not in self.unaggregated for m in self.dashed):
            notes.append(f"{DASH} {'other cells: ' if notes else ''}no sample has a value for that cell.")
        notes += [f"{m}: scale unknown to the report, printed as computed (not %)." for m in self.unscaled]
        return notes


def _expand(
    nodes: Sequence[Mapping],
    rows: Sequence[Mapping],
    header: list[str],
    filters: list,
    metrics: Sequence[str],
    scope: Sequence[Mapping],
) -> list[_Column]:
    """The leaf columns of a column tree. ``scope``: the rows matching the innermost field filter
    alone (what ``metric: "*"`` expands over); ``values: data`` lists the values present under the
    whole path."""
    out: list[_Column] = []
    for node in nodes:
        if "count" in node:
            out.append(_Column(header + [str(node.get("label", "n"))], filters, None, "samples", True))
        elif "metric" in node:
            names = (
                [node["metric"]]
                if node["metric"] != "*"
                else [m for m in metrics if any(m in (r.get("metrics") or {}) for r in scope)]
            )
            for m in names:
                label = node.get("label", metric_name(m)) if node["metric"] != "*" else metric_name(m)
                if node["metric"] == "*" and node.get("label") == "":
                    label = ""
                out.append(_Column(header + ([label] if label else []), filters, m, node.get("mean", "samples"), False))
        elif "field" in node:
            field = node["field"]
            values = node.get("values", "data")
            inner = [r for r in rows if all(_same(r.get(f), v) for f, v in filters)]
            values = _data_values(inner, field, node.get("order")) if values == "data" else values
            for v in values:  # "*" below expands over the rows of this value alone (same columns for
                sub = [r for r in rows if _same(r.get(field), v)]  # every value of an outer field)
                out += _expand(node["columns"], rows, header + [_label(node, v)], filters + [(field, v)], metrics, sub)
        else:
            out += _expand(node["columns"], rows, header + [str(node.get("label", ""))], filters, metrics, scope)
    return out


def _row_keys(rows: Sequence[Mapping], fields: Sequence[str], order: Mapping[str, Sequence]) -> list[tuple]:
    keys: list[tuple] = []
    for r in rows:
        k = tuple(r.get(f) for f in fields)
        if k not in keys:
            keys.append(k)

    def rank(k):  # declared order first, then the order of first appearance (runs as given)
        out = []
        for f, v in zip(fields, k):
            declared = [str(x) for x in (order or {}).get(f, [])]
            out.append(declared.index(str(v)) if str(v) in declared else len(declared))
        return tuple(out)

    return sorted(keys, key=rank)


def _grid(
    layout: Layout,
    rows: Sequence[Mapping],
    metrics: Sequence[str],
    missing: Mapping[str, str],
    columns: Sequence[Mapping],
    metric_override: str | None = None,
    aggregations: Mapping | None = None,
) -> tuple[str, list[str], list[str]]:
    spec = layout.spec
    if metric_override is not None:
        columns = _with_metric(columns, metric_override)
    cols = _expand(columns, rows, [], [], metrics, rows)
    fields = list(spec.get("rows") or ["model"])
    cells = _Cells(int(spec.get("digits", 2)), missing, aggregations)
    body = []
    row_labels = spec.get("row_labels") or {}
    for key in _row_keys(rows, fields, spec.get("row_order") or {}):
        members = [r for r in rows if tuple(r.get(f) for f in fields) == key]
        line = [_label({"labels": row_labels.get(f) or {}}, v) for f, v in zip(fields, key)]
        for c in cols:
            sub = [r for r in members if all(_same(r.get(f), v) for f, v in c.filters)]
            line.append(str(len(sub)) if c.count else cells.mean(sub, c.metric, c.mean))
        body.append(line)
    if not body:  # no rows: the header still shows the table's shape
        body.append([DASH] * len(fields) + [DASH] * len(cols))
        for c in cols:
            if c.metric and c.metric not in cells.dashed:
                cells.dashed.append(c.metric)
    header = [f.replace("_", " ").capitalize() for f in fields] + [" · ".join(p for p in c.header if p) for c in cols]
    shown = list(dict.fromkeys(c.metric for c in cols if c.metric))
    return _markdown(header, body), cells.footnotes(), shown


def _with_metric(nodes: Sequence[Mapping], metric: str) -> list[dict]:
    out = []
    for n in nodes:
        n = dict(n)
        if n.get("metric") == "*":
            n["metric"] = metric
            n.setdefault("label", "")
        if "columns" in n:
            n["columns"] = _with_metric(n["columns"], metric)
        out.append(n)
    return out


# ---------------------------------------------------------------- distribution


def _category(row: Mapping, field: str, from_metric: str | None):
    if from_metric:
        detail = (row.get("metric_details") or {}).get(from_metric)
        return detail.get(field) if isinstance(detail, Mapping) else None
    return row.get(field)


def largest_remainder(counts: Sequence[int], total: int = 10000) -> list[int]:
    """Integer shares of ``total`` proportional to ``counts`` that sum to ``total`` exactly
    (Hamilton's method; ties go to the earlier entry). All zero → all zero."""
    n = sum(counts)
    if not n:
        return [0] * len(counts)
    exact = [c * total / n for c in counts]
    floors = [math.floor(x) for x in exact]
    order = sorted(range(len(counts)), key=lambda i: (-(exact[i] - floors[i]), i))
    for i in order[: total - sum(floors)]:
        floors[i] += 1
    return floors


def sample_failures(rows: Sequence[Mapping], per: Sequence[str], size: int | None, seed: int) -> list[Mapping]:
    """Up to ``size`` rows per ``per`` group, drawn without replacement by a generator seeded from
    ``seed`` and the group's values (a group's draw does not change when other groups are added);
    rows are put in a fixed order (task, doc id) first, so folder order does not matter."""
    if size is None:
        return list(rows)
    groups: dict[tuple, list[Mapping]] = {}
    for r in rows:
        groups.setdefault(tuple(str(r.get(f)) for f in per), []).append(r)
    out = []
    for key in sorted(groups):
        members = sorted(groups[key], key=lambda r: (str(r.get("task_name")), order_key(r.get("doc_id"))))
        if len(members) > size:
            members = random.Random(stable_int(str(seed), *key)).sample(members, size)
        out += members
    return out


def _distribution(
    layout: Layout, rows: Sequence[Mapping], error_sample: int | None, seed: int
) -> tuple[str, list[str]]:
    spec = layout.spec
    field, source = spec["field"], spec.get("from_metric")
    values = list(spec["values"])
    unclassified = set(spec.get("unclassified") or [])
    labelled = [{**r, "_category": _category(r, field, source)} for r in rows]
    labelled = [r for r in labelled if r["_category"] is not None]
    skipped = [r for r in labelled if r["_category"] in unclassified]
    classified = [r for r in labelled if r["_category"] not in unclassified]
    other = sorted({str(r["_category"]) for r in classified} - set(map(str, values)))
    values += other
    drawn = sample_failures(classified, spec.get("sample_per") or list(spec["columns"]), error_sample, seed)
    col_fields = list(spec["columns"])
    col_keys = _row_keys(drawn, col_fields, {}) or [tuple(DASH for _ in col_fields)]
    block = spec.get("blocks")
    blocks = _data_values(drawn, block, list((spec.get("block_labels") or {}).keys())) if block else [None]
    labels = spec.get("value_labels") or {}
    header = ([block.replace("_", " ").capitalize()] if block else []) + [field.replace("_", " ").capitalize()]
    header += [" · ".join(str(v) for v in k) for k in col_keys]
    body = []
    for b in blocks:
        in_block = [r for r in drawn if b is None or _same(r.get(block), b)]
        shares = {}
        for k in col_keys:
            members = [r for r in in_block if tuple(r.get(f) for f in col_fields) == k]
            counts = [sum(_same(r["_category"], v) for r in members) for v in values]
            shares[k] = (largest_remainder(counts), len(members))
        block_label = _label({"labels": spec.get("block_labels") or {}}, b) if block else None
        for i, v in enumerate(values):
            line = ([block_label] if block else []) + [str(labels.get(v, v))]
            line += [f"{shares[k][0][i] / 100:.2f}" if shares[k][1] else DASH for k in col_keys]
            body.append(line)
        body.append(
            ([block_label] if block else []) + ["failed answers classified (n)"] + [str(shares[k][1]) for k in col_keys]
        )
    notes = []
    if error_sample is not None:
        per = ", ".join(spec.get("sample_per") or col_fields)
        notes.append(
            f"Sample: at most {error_sample} classified failed answers per {per}, drawn with seed {seed} "
            f"(--error_sample {error_sample} --seed {seed}) from {len(classified)}."
        )
    else:
        notes.append(f"All {len(classified)} classified failed answers (no --error_sample).")
    if skipped:
        notes.append(
            f"Left out: {len(skipped)} failed answers the classifier could not label "
            f"({', '.join(sorted(unclassified))})."
        )
    if not drawn:
        notes.append(f"{DASH}: no classified failed answer (the classifier runs only with --judge).")
    return _markdown(header, body), notes


# ---------------------------------------------------------------- entry points


def render_layout(
    layout: Layout,
    rows: Sequence[Mapping],
    *,
    metrics: Sequence[str] | None = None,
    missing: Mapping[str, str] | None = None,
    details: Mapping[str, Mapping[str, str]] | None = None,
    error_sample: int | None = None,
    seed: int = 0,
    aggregations: Mapping[str, Mapping[str, str]] | None = None,
) -> str:
    """One layout as Markdown: ``## title``, its table(s), then footnotes (the layout's notes, the
    reasons of "—" cells, what each shown metric's numbers rest on: ``details`` {task: {metric:
    text}}, over the tasks of the layout's rows). ``aggregations`` ({task: {metric: aggregation}},
    :func:`lalm_eval.report.cells.task_aggregations`): how a cell aggregates its samples (mean
    where a task declares none)."""
    spec, missing = layout.spec, dict(missing or {})
    given = len(rows)
    rows = [r for r in rows if _matches(r, spec.get("where"))]
    filtered_out = [] if rows or not given else [_where_note(spec["where"])]
    names = list(metrics) if metrics is not None else sorted({m for r in rows for m in (r.get("metrics") or {})})
    parts, notes = [f"## {layout.title}", ""], []
    used: list[str] = []
    if spec["kind"] == "distribution":
        table, notes = _distribution(layout, rows, error_sample, seed)
        parts.append(table)
        if spec.get("from_metric"):  # the judge behind the failures, its threshold and classifier
            used = [spec["from_metric"], f"{spec['from_metric']}:error_types"]
    else:
        sections = spec.get("parts") or [{"columns": spec["columns"]}]
        per_metric = (
            [m for m in names if any(m in (r.get("metrics") or {}) for r in rows)]
            if spec.get("for_each_metric")
            else [None]
        )
        for m in per_metric:
            for section in sections:
                title = " · ".join(t for t in (section.get("title"), metric_name(m) if m else None) if t)
                table, foot, shown = _grid(layout, rows, names, missing, section["columns"], m, aggregations)
                parts += ([f"### {title}", ""] if title else []) + [table]
                notes += [n for n in foot if n not in notes]
                used += [s for s in shown if s not in used]
    notes = list(spec.get("notes") or []) + filtered_out + notes
    tasks = list(dict.fromkeys(str(r.get("task_name")) for r in rows))
    for m in used:  # every distinct backbone / judge behind a shown metric, over the layout's tasks
        texts = list(dict.fromkeys(t for t in ((details or {}).get(task, {}).get(m) for task in tasks) if t))
        if texts:
            base, _, part = m.partition(":")
            label = metric_name(base) + (f", {part.replace('_', ' ')}" if part else "")
            notes.append(f"{label}: {'; '.join(texts)}")
    from lalm_eval.report.audio_heard import cut_lines

    notes += cut_lines(rows, by=("model", "task_name"))  # per model and task whose audio was cut, in bold
    text = "\n".join(parts).rstrip("\n")
    if notes:
        text += "\n\n" + "  \n".join(notes)
    return text + "\n"


def _where_note(where: Mapping) -> str:
    takes = ", ".join(f"{f} {' or '.join(map(str, v if isinstance(v, list) else [v]))}" for f, v in where.items())
    return f"{DASH}: no sample of the runs given is in this table (it takes the samples with {takes})."


def render_reports(
    rows_by_report: Mapping[str, Sequence[Mapping]], index: LayoutIndex, layouts: Sequence[str] | None = None, **kwargs
) -> str:
    """The requested layouts (default: each present report's ``default``), in the order asked."""
    if layouts:
        chosen = [index.layout(name) for name in layouts]
    else:
        chosen = [index.layouts[n] for rep in rows_by_report for n in index.report(rep).default]
    return "\n".join(render_layout(lay, rows_by_report.get(lay.report, []), **kwargs) for lay in chosen)


def report_plots(
    rows_by_report: Mapping[str, Sequence[Mapping]],
    index: LayoutIndex,
    out: Path,
    stamp: str,
    metrics: Sequence[str] | None = None,
) -> list[Path]:
    """The plots each present report declares, for the first two of its ``plot_metrics`` that
    have a value (or of ``metrics``)."""
    from lalm_eval.errors import DataError
    from lalm_eval.report import plots

    files = []
    for name, rows in rows_by_report.items():
        report = index.report(name)
        wanted = list(metrics or report.plot_metrics)
        present = [m for m in wanted if any(value(r, m) is not None for r in rows)][:2]
        for plot in report.plots:
            subset = [r for r in rows if _matches(r, plot.get("where"))]
            for m in present:
                path = out / f"plot_{plot['name']}_{m}_{stamp}.png"
                try:
                    if plot["kind"] == "line":
                        files.append(
                            plots.line_plot(
                                subset,
                                m,
                                path,
                                x_field=plot["x"],
                                x_values=plot.get("x_values"),
                                series=plot.get("series", ["model"]),
                                x_label=plot.get("x_label"),
                                y_label=metric_name(m),
                            )
                        )
                    else:
                        files.append(
                            plots.bar_plot(
                                subset,
                                m,
                                path,
                                x_field=plot["x"],
                                series=plot.get("series", ["model"]),
                                y_label=metric_name(m),
                            )
                        )
                except DataError as exc:  # no value to plot: say so instead of an empty picture
                    print(f"no {plot['name']} plot: {exc}")
    return files
