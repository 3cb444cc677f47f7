"""The task system: lm-eval's YAML keys, safe loading, includes, !function, index, hash, prompts."""

import re
import shutil
import sys
import textwrap

import pytest

from lalm_eval.errors import ConfigError
from lalm_eval.tasks import GroupConfig, Task, TaskConfig, TaskManager, UnknownTaskError

BASE = """\
dataset_path: some/dataset
test_split: test
doc_to_text: "{{ question }}"
doc_to_target: "{{ answer }}"
metric_list:
  - metric: exact_match
    aggregation: mean
    higher_is_better: true
metadata:
  version: 1.0
"""


def write(folder, name, text):
    path = folder / name
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(textwrap.dedent(text), encoding="utf-8")
    return path


def task_yaml(folder, name, extra="", base=BASE):
    """``<name>.yaml`` including ``_base_<name>.yaml`` (a file without ``task``: not indexed)."""
    write(folder, f"_base_{name}.yaml", base)
    return write(folder, f"{name}.yaml", f"include: _base_{name}.yaml\ntask: {name}\n{textwrap.dedent(extra)}")


def manager(*paths):
    return TaskManager(include_paths=list(paths), include_defaults=False)


# -- config keys --------------------------------------------------------------------------------


def test_unknown_key_names_key_file_and_known_keys(tmp_path):
    f = task_yaml(tmp_path, "t", "doc_to_choise: [a, b]\n")
    with pytest.raises(ConfigError) as e:
        Task.from_yaml(f)
    msg = str(e.value)
    assert "'doc_to_choise'" in msg and str(f) in msg and "doc_to_target" in msg and "metric_list" in msg
    f = task_yaml(tmp_path, "u", "doc_to_choice: [a, b]\n")
    with pytest.raises(ConfigError, match="'doc_to_choice' \\(an lm-eval key lalm-eval does not support"):
        Task.from_yaml(f)


def test_metric_without_aggregation_names_file_and_metric(tmp_path):
    base = BASE.replace("    aggregation: mean\n", "")
    f = task_yaml(tmp_path, "t", base=base)
    with pytest.raises(ConfigError, match=r"t\.yaml: metric_list\[0\] \(metric 'exact_match'\): missing 'aggregation'"):
        Task.from_yaml(f)
    f = task_yaml(tmp_path, "u", base=BASE.replace("    higher_is_better: true\n", ""))
    with pytest.raises(ConfigError, match=r"u\.yaml: .*'exact_match'.*missing 'higher_is_better'"):
        Task.from_yaml(f)


@pytest.mark.parametrize(
    "extra, pattern",
    [
        ("output_type: multiple_choice\n", r"output_type: 'multiple_choice' is not supported"),
        ("metadata: {}\n", r"metadata: must be a mapping with a 'version'"),
        ("doc_to_target: answer\n", r"doc_to_target: 'answer' looks like an lm-eval column name.*\{\{ answer \}\}"),
        ("doc_to_text: '{{ question '\n", r"doc_to_text: invalid Jinja2 template"),
        ("process_docs: utils.fn\n", r"process_docs: must be a !function"),
    ],
)
def test_departures_from_lm_eval_are_errors(tmp_path, extra, pattern):
    f = task_yaml(tmp_path, "t", extra)
    with pytest.raises(ConfigError, match=pattern) as e:
        Task.from_yaml(f)
    assert str(f) in str(e.value)


def test_group_config_keys(tmp_path):
    g = GroupConfig.from_dict(
        {
            "group": "g",
            "task": ["a", "b"],
            "aggregate_metric_list": [{"metric": "acc", "aggregation": "mean", "weight_by_size": True}],
        }
    )
    assert g.task == ["a", "b"]
    with pytest.raises(ConfigError, match=r"g\.yaml: unknown group key 'tasks'"):
        GroupConfig.from_dict({"group": "g", "tasks": ["a"]}, "g.yaml")
    with pytest.raises(ConfigError, match="aggregation must be 'mean'"):
        GroupConfig.from_dict(
            {"group": "g", "task": ["a"], "aggregate_metric_list": [{"metric": "acc", "aggregation": "max"}]}
        )


# -- YAML loading --------------------------------------------------------------------------------


def test_a_key_written_twice_is_an_error(tmp_path):
    f = write(tmp_path, "t.yaml", "task: t\n" + BASE + "doc_to_text: '{{ other }}'\n")
    with pytest.raises(ConfigError, match=r"t\.yaml:12: key 'doc_to_text' is written twice \(first on line 4\)"):
        Task.from_yaml(f)


def test_include_inherits_overrides_and_chains(tmp_path):
    write(tmp_path, "_base.yaml", BASE + "description: base\ngeneration_kwargs: {max_new_tokens: 8}\n")
    write(tmp_path, "sub/_mid.yaml", "include: ../_base.yaml\ndescription: mid\ntag: fam\n")
    f = write(tmp_path, "sub/t.yaml", "include: _mid.yaml\ntask: t\ngeneration_kwargs: {max_new_tokens: 32}\n")
    c = Task.from_yaml(f).config
    assert c.dataset_path == "some/dataset" and c.description == "mid" and c.tags == ["fam"]
    assert c.generation_kwargs == {"max_new_tokens": 32}
    assert manager(tmp_path).resolve(["fam"]) == ["t"]  # the inherited tag is indexed


def test_include_cycle_is_an_error(tmp_path):
    write(tmp_path, "a.yaml", "include: b.yaml\ntask: a\n")
    write(tmp_path, "b.yaml", "include: a.yaml\n")
    with pytest.raises(ConfigError, match=r"include cycle: .*a\.yaml -> .*b\.yaml -> .*a\.yaml"):
        Task.from_yaml(tmp_path / "a.yaml")
    with pytest.raises(ConfigError, match="no such file"):
        Task.from_yaml(write(tmp_path, "c.yaml", "include: missing.yaml\ntask: c\n"))


def test_function_resolves_to_a_hook_beside_the_yaml(tmp_path):
    write(tmp_path, "utils.py", "def text(doc):\n    return 'Q: ' + doc['question']\n")
    write(tmp_path, "pkg/fmt.py", "def target(doc):\n    return doc['answer'].upper()\n")
    f = task_yaml(
        tmp_path,
        "t",
        "doc_to_text: !function utils.text\ndoc_to_target: !function pkg.fmt.target\n"
        "hooks:\n  prepare_dataset: !function utils.text\n",
    )
    task = Task.from_yaml(f)
    doc = {"question": "who?", "answer": "alice"}
    assert task.render_text(doc) == "Q: who?" and task.render_target(doc) == "ALICE"
    assert task.hook("prepare_dataset").__name__ == "text" and task.hook("absent") is None


@pytest.mark.parametrize("spec", ["../evil.fn", "/tmp/evil.fn", "os.system", "evil", "sub..x.fn"])
def test_function_outside_the_task_folder_is_refused(tmp_path, spec):
    write(tmp_path, "evil.py", "def fn(doc):\n    return 'pwned'\n")
    folder = tmp_path / "tasks"
    f = task_yaml(folder, "t", f"process_docs: !function {spec}\n")
    with pytest.raises(ConfigError, match=re.escape(str(f))):
        Task.from_yaml(f)


def test_function_through_a_symlink_out_of_the_folder_is_refused(tmp_path):
    write(tmp_path, "outside/evil.py", "def fn(doc):\n    return 1\n")
    (tmp_path / "tasks").mkdir()
    (tmp_path / "tasks" / "link").symlink_to(tmp_path / "outside", target_is_directory=True)
    f = task_yaml(tmp_path / "tasks", "t", "process_docs: !function link.evil.fn\n")
    with pytest.raises(ConfigError, match="resolves outside the task folder"):
        Task.from_yaml(f)


def test_python_tags_are_refused(tmp_path):
    marker = tmp_path / "ran"
    f = task_yaml(tmp_path, "t", f"description: !!python/object/apply:os.system ['touch {marker}']\n")
    with pytest.raises(ConfigError, match=re.escape(str(f))):
        Task.from_yaml(f)
    with pytest.raises(ConfigError):
        manager(tmp_path)  # indexing is safe loading too
    assert not marker.exists()


# -- the index -----------------------------------------------------------------------------------


def test_groups_and_tags_expand_recursively_in_order(tmp_path):
    for name, tag in [("a", "fam"), ("b", "fam"), ("c", None), ("d", "other")]:
        task_yaml(tmp_path, name, f"tag: [{tag}]\n" if tag else "")
    write(tmp_path, "g_inner.yaml", "group: inner\ntask: [c, fam]\n")
    write(
        tmp_path,
        "g_outer.yaml",
        "group: outer\ntask: [d, inner, a]\n"
        "aggregate_metric_list: [{metric: exact_match, aggregation: mean, weight_by_size: true}]\n",
    )
    write(tmp_path, "data.yaml", "- just\n- data\n")  # non-task YAML in a task folder is ignored
    tm = manager(tmp_path)
    assert tm.all_tasks() == ["a", "b", "c", "d"] and tm.all_groups() == ["inner", "outer"]
    assert tm.all_tags() == ["fam", "other"]
    assert tm.resolve(["outer"]) == ["d", "c", "a", "b"]
    assert tm.resolve(["b", "outer", "b"]) == ["b", "d", "c", "a"]
    assert tm.load_group("outer").aggregate_metric_list[0]["weight_by_size"] is True
    with pytest.raises(ConfigError, match="is a group"):
        tm.load_task("outer")


def test_group_cycle_is_an_error(tmp_path):
    write(tmp_path, "g1.yaml", "group: g1\ntask: [g2]\n")
    write(tmp_path, "g2.yaml", "group: g2\ntask: [g1]\n")
    with pytest.raises(ConfigError, match="group cycle: g1 -> g2 -> g1"):
        manager(tmp_path).resolve(["g1"])


def test_duplicate_names_name_both_files(tmp_path):
    one, two = task_yaml(tmp_path / "x", "same"), task_yaml(tmp_path / "y", "same")
    with pytest.raises(ConfigError, match="duplicate name 'same'") as e:
        manager(tmp_path)
    assert str(one) in str(e.value) and str(two) in str(e.value)
    write(tmp_path / "y", "same.yaml", "group: x_group\ntask: [same]\n")
    write(tmp_path / "z", "g.yaml", "group: x_group\ntask: [same]\n")
    with pytest.raises(ConfigError, match="duplicate name 'x_group'"):
        manager(tmp_path)


def test_unknown_name_suggests_the_close_one(tmp_path):
    task_yaml(tmp_path, "palm_recognition")
    tm = manager(tmp_path)
    with pytest.raises(UnknownTaskError, match="did you mean palm_recognition") as e:
        tm.resolve(["palm_recogniton"])
    assert isinstance(e.value, KeyError) and not str(e.value).startswith("'")
    with pytest.raises(KeyError, match="did you mean palm_recognition"):
        tm.load_task("palm_recogntion")


def test_indexing_is_lazy_and_does_not_import_hooks(tmp_path):
    write(tmp_path, "boom.py", "raise RuntimeError('imported boom')\n")
    task_yaml(tmp_path, "good")
    task_yaml(tmp_path, "bad", "doc_to_text: !function boom.text\n")
    modules = set(sys.modules)
    tm = manager(tmp_path)
    assert tm.all_tasks() == ["bad", "good"]
    assert tm.load_task("good").render_text({"question": "q"}) == "q"
    bad = tm.load_task("bad")  # loading checks the path but imports nothing
    assert not any("boom" in m for m in set(sys.modules) - modules)
    with pytest.raises(ConfigError, match="importing hook module .*boom.py failed"):
        bad.render_text({"question": "q"})


# -- hash and prompts ----------------------------------------------------------------------------


def test_task_hash_follows_config_and_hook_source(tmp_path):
    hook = write(tmp_path, "utils.py", "def text(doc):\n    return doc['question']\n")
    f = task_yaml(tmp_path, "t", "doc_to_text: !function utils.text\n")
    h0 = manager(tmp_path).load_task("t").task_hash
    assert Task.from_yaml(f).task_hash == h0
    shutil.copytree(tmp_path, tmp_path.parent / (tmp_path.name + "_moved"))  # no absolute path in the hash
    assert Task.from_yaml(tmp_path.parent / (tmp_path.name + "_moved") / "t.yaml").task_hash == h0
    f.write_text("# same config, other layout\n" + "".join(reversed(f.read_text().splitlines(True))))
    assert Task.from_yaml(f).task_hash == h0
    hook.write_text(hook.read_text() + "# edited\n")
    h1 = Task.from_yaml(f).task_hash
    assert h1 != h0
    f.write_text(f.read_text() + "metadata: {version: 1.1}\n")
    assert Task.from_yaml(f).task_hash not in (h0, h1)


def test_templates_render_doc_fields_strictly(tmp_path):
    task = Task.from_yaml(task_yaml(tmp_path, "t"))
    assert task.render_text({"question": "who?", "answer": "x"}) == "who?"
    with pytest.raises(
        ConfigError,
        match=r"task 't': doc_to_text: 'question' is undefined in the template .*; use the doc's fields: answer",
    ):
        task.render_text({"answer": "x"})


def test_messages_with_two_audios_and_a_description(tmp_path):
    f = task_yaml(tmp_path, "t", "doc_to_audio: '{{ [enrollment, test] }}'\ndescription: 'Listen, {{ name }}.'\n")
    task = Task.from_yaml(f)
    enrol, test = {"array": [0.0], "sampling_rate": 16000}, {"array": [1.0], "sampling_rate": 16000}
    doc = {"question": "Same speaker?", "answer": "yes", "enrollment": enrol, "test": test, "name": "judge"}
    assert task.audio_of(doc) == [enrol, test]
    assert task.messages(doc) == [
        {"role": "system", "content": [{"type": "text", "text": "Listen, judge."}]},
        {"role": "user", "content": [{"type": "audio"}, {"type": "audio"}, {"type": "text", "text": "Same speaker?"}]},
    ]


def test_doc_to_messages_wins(tmp_path):
    write(
        tmp_path,
        "chat.py",
        "def msgs(doc):\n    return [{'role': 'user', 'content': [{'type': 'audio'}, "
        "{'type': 'text', 'text': doc['q']}]}]\n",
    )
    f = task_yaml(tmp_path, "t", "doc_to_messages: !function chat.msgs\ndoc_to_audio: '{{ audio }}'\n")
    task = Task.from_yaml(f)
    assert task.messages({"q": "hi", "audio": "a.wav"}) == [
        {"role": "user", "content": [{"type": "audio"}, {"type": "text", "text": "hi"}]}
    ]
    assert task.audio_of({"audio": "a.wav"}) == ["a.wav"]
    assert isinstance(task.config, TaskConfig)
