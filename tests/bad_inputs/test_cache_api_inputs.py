"""Bad and odd inputs of the caches, of the API adapters against hostile servers, and secrets
(issue 20; ids ``cache-``, ``api-``, ``secret-``).

The CLI rows run ``lalm-eval --model openai_audio|gemini`` in this process against the local
protocol servers of tests/api_servers.py (OpenAI chat completions with ``input_audio``, Gemini
``generateContent``) on a two-doc task of 1-s tones (built once for the module), with the cache
file made bad first: a damaged page, a text file, a zero-byte file, a cache folder that is a
file, a write lock another process holds, an incompatible table, an older version's table. The
hostile answers of both protocols (HTML, malformed JSON, an empty body, no ``choices`` /
``candidates``, empty choices, null content, 401, 429 with Retry-After, a hang, a 500 then
success, a redirect and a redirect loop, a huge body, an error object under status 200) and the
judges' text-LLM client are table rows of the adapters themselves (one request each: what the CLI
would count per doc), listed in ``EXTRA_CASE_IDS``. The secret rows grep every file the run wrote.
"""

from __future__ import annotations

import json
import sqlite3
import threading
import time
from pathlib import Path

import pytest

from lalm_eval.api import Response
from tests.api_contract import SECRET, request
from tests.api_servers import GeminiServer, OpenAIServer
from tests.bad_inputs.harness import Case, Result, run_case, run_cli

TASK = "bad_cache_api_who"
PRICED = {"openai": "gpt-4o-audio-preview", "gemini": "gemini-2.5-flash"}
MODEL = {"openai": "openai_audio", "gemini": "gemini"}
KEY_ENVS = ("OPENAI_API_KEY", "GEMINI_API_KEY", "GOOGLE_API_KEY")
WORLD: dict = {}  # the module's dataset, task folder and servers (the `world` fixture)


# --- the module's world: a two-doc task, both protocol servers ---------------------------------


def _build_task(root: Path) -> Path:
    import datasets

    from lalm_eval.hub.card import front_matter, write_card
    from lalm_eval.hub.parquet import export_dataset_dict
    from tests.test_evaluator import flac

    rows = {
        "question": ["Who speaks in clip 0?", "Who speaks in clip 1?"],
        "answer": ["Alice", "Bob"],
        "audio": [{"bytes": flac(1.0, 200 + 50 * i), "path": None} for i in range(2)],
    }
    features = datasets.Features(
        {
            "question": datasets.Value("string"),
            "answer": datasets.Value("string"),
            "audio": datasets.Audio(sampling_rate=16000),
        }
    )
    files = export_dataset_dict(
        {"main": datasets.DatasetDict({"test": datasets.Dataset.from_dict(rows, features=features)})}, root / "ds"
    )
    write_card(root / "ds", f"---\n{front_matter(files)}\n---\n")
    tasks = root / "tasks"
    tasks.mkdir()
    (tasks / "who.yaml").write_text(
        f"""task: {TASK}
dataset_path: {root / "ds"}
dataset_name: main
test_split: test
doc_to_audio: "{{{{ audio }}}}"
doc_to_text: "{{{{ question }}}}"
doc_to_target: "{{{{ answer }}}}"
generation_kwargs: {{max_new_tokens: 4}}
metric_list:
  - {{metric: exact_match, aggregation: mean, higher_is_better: true}}
metadata: {{version: 1}}
""",
        encoding="utf-8",
    )
    return tasks


@pytest.fixture(scope="module", autouse=True)
def world(tmp_path_factory):
    """The task, both servers, and no provider key in the environment (loopback servers need none)."""
    root = tmp_path_factory.mktemp("cache_api")
    with pytest.MonkeyPatch.context() as mp, OpenAIServer() as openai, GeminiServer() as gemini:
        for env in KEY_ENVS:
            mp.delenv(env, raising=False)
        WORLD.update(tasks=_build_task(root), openai=openai, gemini=gemini)
        yield WORLD
        WORLD.clear()


def server(protocol: str, *actions: dict, match: str | None = None):
    """The protocol's server with its script and records reset, then ``actions`` queued."""
    srv = WORLD[protocol]
    srv.clear_script()
    srv.records.clear()
    if actions:
        srv.script(*actions, match=match)
    return srv


def eval_argv(tmp: Path, protocol: str = "openai", cache: Path | None = None, model_args: str = "", *flags) -> list:
    """``lalm-eval`` on the two-doc task against ``protocol``'s server (one request at a time)."""
    srv = WORLD[protocol]
    args = f"model={PRICED[protocol]},base_url={srv.base_url},retry_delay=0.01,timeout=2,max_retries=1,concurrency=1"
    return [
        "--model",
        MODEL[protocol],
        "--model_args",
        args + (f",{model_args}" if model_args else ""),
        "--tasks",
        TASK,
        "--include_path",
        WORLD["tasks"],
        "--cache_dir",
        cache or tmp / "cache",
        "--output_path",
        tmp / "out",
        "--max_failure_share",
        "1",
        *flags,
    ]


def results(tmp: Path) -> dict:
    (path,) = (tmp / "out").glob("results_*.json")
    return json.loads(path.read_text(encoding="utf-8"))


def sent(protocol: str) -> int:
    return len(WORLD[protocol].records)


# --- cache files made bad ----------------------------------------------------------------------


def _filled_cache(path: Path, n: int = 300) -> None:
    from lalm_eval.cache import ResponseCache

    with ResponseCache(path) as cache:  # closing checkpoints the WAL into the file
        cache.put_many((f"earlier-{i:04d}", Response(f"an earlier answer {i} " + "x" * 200)) for i in range(n))


def damaged_page(tmp: Path) -> list:
    server("openai")
    _filled_cache(tmp / "cache" / "responses.sqlite")
    with open(tmp / "cache" / "responses.sqlite", "r+b") as f:  # one b-tree page overwritten
        f.seek(4096 * 6)
        f.write(b"\xff" * 4096)
    return eval_argv(tmp)


def check_damaged(tmp: Path, result: Result) -> None:
    from lalm_eval.cache import ResponseCache

    folder = tmp / "cache"
    (damaged,) = [p for p in folder.glob("responses.sqlite.damaged-*") if not p.name.endswith(("-wal", "-shm"))]
    with ResponseCache(folder / "responses.sqlite") as fresh:
        kept = len(fresh)
    assert 250 < kept < 300 and f"its {kept} readable rows" in result.error_line  # one page's rows lost
    assert damaged.stat().st_size > 0 and sent("openai") == 0  # kept, and stopped before any model call
    again = run_cli("lalm-eval", eval_argv(tmp))  # the rerun the message asks for: it resumes
    assert again.rc == 0 and sent("openai") == 2, again.err[-2000:]
    with ResponseCache(folder / "responses.sqlite") as fresh:
        assert len(fresh) == kept + 2


def not_sqlite(tmp: Path) -> list:
    server("openai")
    (tmp / "cache").mkdir()
    (tmp / "cache" / "responses.sqlite").write_text("these are my notes, not a cache\n", encoding="utf-8")
    return eval_argv(tmp)


def check_untouched(tmp: Path, result: Result) -> None:
    assert (tmp / "cache" / "responses.sqlite").read_text(encoding="utf-8") == "these are my notes, not a cache\n"
    assert sent("openai") == 0


def zero_byte(tmp: Path) -> list:
    server("openai")
    (tmp / "cache").mkdir()
    (tmp / "cache" / "responses.sqlite").write_bytes(b"")
    return eval_argv(tmp)


def check_answered(tmp: Path, result: Result) -> None:
    assert sent("openai") == 2 and results(tmp)["results"][TASK]["exact_match,none"] is not None


def cache_dir_is_file(tmp: Path) -> list:
    server("openai")
    (tmp / "cache").write_text("a file where the cache folder should be\n", encoding="utf-8")
    return eval_argv(tmp)


LOCKS: list[sqlite3.Connection] = []


def locked(tmp: Path) -> list:
    """Another process's write transaction, held for 3 s (longer than the 0.3 s busy timeout)."""
    server("openai")
    (tmp / "cache").mkdir()
    holder = sqlite3.connect(str(tmp / "cache" / "responses.sqlite"), isolation_level=None, check_same_thread=False)
    holder.execute("PRAGMA journal_mode = WAL")
    holder.execute("CREATE TABLE IF NOT EXISTS other (x)")
    holder.execute("BEGIN IMMEDIATE")
    LOCKS.append(holder)
    threading.Timer(3.0, lambda: (holder.execute("ROLLBACK"), holder.close())).start()
    return eval_argv(tmp)


def no_model_call(*_) -> None:
    assert sent("openai") == 0  # refused before any request was sent


def foreign_table(tmp: Path) -> list:
    server("openai")
    (tmp / "cache").mkdir()
    with sqlite3.connect(tmp / "cache" / "responses.sqlite") as db:
        db.execute("CREATE TABLE responses (k TEXT, v TEXT)")
        db.execute("INSERT INTO responses VALUES ('a', 'b')")
    return eval_argv(tmp)


def older_table(tmp: Path) -> list:
    """An older version's file: the table without the ``meta`` column it gained later."""
    server("openai")
    (tmp / "cache").mkdir()
    with sqlite3.connect(tmp / "cache" / "responses.sqlite") as db:
        db.execute("CREATE TABLE responses (key TEXT PRIMARY KEY, text TEXT, error TEXT, created REAL)")
        db.execute("INSERT INTO responses VALUES ('old', 'an old answer', NULL, 0)")
    return eval_argv(tmp)


# --- hostile servers through the CLI -------------------------------------------------------------

HTML = "<!DOCTYPE html><html><head><title>Welcome to nginx!</title></head><body>It works</body></html>"


def html(protocol: str):
    def make(tmp: Path) -> list:
        server(protocol, *[{"raw": HTML, "content_type": "text/html"}] * 2)
        return eval_argv(tmp, protocol)

    return make


def check_html(protocol: str):
    def check(tmp: Path, result: Result) -> None:
        doc = results(tmp)
        assert doc["sample_info"][TASK]["failures"] == {"error": 2}
        errors = [e["error"] for e in doc["errors"][TASK]]
        assert len(errors) == 2 and all("the server answered HTML, not JSON" in e for e in errors), errors
        assert all("Welcome to nginx" in e for e in errors)  # its first bytes

    return check


def refused_key(protocol: str):
    def make(tmp: Path) -> list:
        server(protocol, *[{"status": 401, "message": "Incorrect API key provided"}] * 2)
        return eval_argv(tmp, protocol)

    return make


def check_stopped(protocol: str):
    def check(tmp: Path, result: Result) -> None:
        assert sent(protocol) == 1  # stopped at the first refusal, not one failure per doc
        assert not list((tmp / "out").glob("results_*.json"))

    return check


# --- secrets ---------------------------------------------------------------------------------------


def echoing(tmp: Path) -> list:
    """A hostile server: the key it was sent comes back in one answer and in one error body."""
    server("openai", {"text": "sure, your key is {auth} ok"}, match="clip 0")
    server_ = WORLD["openai"]
    server_.script({"status": 400, "message": "bad request from {auth}"}, match="clip 1")
    return eval_argv(tmp, "openai", None, "", "--log_samples")


def check_no_secret_written(tmp: Path, result: Result) -> None:
    records = WORLD["openai"].records
    assert len(records) == 2 and all(SECRET in json.dumps(r.headers) for r in records)  # it was sent
    written = [p for p in tmp.rglob("*") if p.is_file()]
    assert any(p.name == "responses.sqlite" for p in written) and any(p.suffix == ".jsonl" for p in written)
    leaks = [str(p.relative_to(tmp)) for p in written if SECRET.encode() in p.read_bytes()]
    assert leaks == [], leaks
    assert SECRET not in result.out + result.err
    doc = results(tmp)
    assert "***" in json.dumps(doc["errors"])  # the error body was kept, the key masked
    (samples,) = (tmp / "out").glob("samples_*.jsonl")
    assert "sure, your key is Bearer *** ok" in samples.read_text(encoding="utf-8")


def judge_key_in_spec(tmp: Path) -> list:
    """A judge spec that carries its key (``api_key=...``): the results JSON records the spec."""
    server("openai")
    spec = f"openai:model=judge-m,base_url={WORLD['openai'].base_url},api_key={SECRET}"
    return eval_argv(tmp, "openai", None, "", "--judge", spec)


def check_spec_key_masked(tmp: Path, result: Result) -> None:
    text = next((tmp / "out").glob("results_*.json")).read_text(encoding="utf-8")
    assert SECRET not in text and "api_key=***" in text


CASES = [
    Case(
        "cache-damaged-page",
        "lalm-eval",
        damaged_page,
        says=("responses.sqlite", "response cache is damaged", "rerun"),
        check=check_damaged,
    ),
    Case(
        "cache-not-sqlite",
        "lalm-eval",
        not_sqlite,
        says=("responses.sqlite", "not a SQLite file", "response cache"),
        check=check_untouched,
    ),
    Case("cache-zero-byte-file", "lalm-eval", zero_byte, exit=0, check=check_answered),
    Case(
        "cache-dir-flag-is-a-file",
        "lalm-eval",
        cache_dir_is_file,
        says=("--cache_dir", "{tmp}/cache"),
        check=lambda tmp, result: no_model_call(),
    ),
    Case(
        "cache-locked-by-another-process",
        "lalm-eval",
        locked,
        says=("responses.sqlite", "write lock", "busy timeout of 0.3 s"),
        check=no_model_call,
        env={"LALM_EVAL_BUSY_TIMEOUT": "0.3"},
    ),
    Case(
        "cache-foreign-table",
        "lalm-eval",
        foreign_table,
        says=("responses.sqlite", "no 'key' primary key", "move it away"),
        check=lambda tmp, result: no_model_call(),
    ),
    Case("cache-older-version-table", "lalm-eval", older_table, exit=0, check=check_answered),
    Case("api-openai-html-200", "lalm-eval", html("openai"), exit=0, check=check_html("openai")),
    Case("api-gemini-html-200", "lalm-eval", html("gemini"), exit=0, check=check_html("gemini")),
    Case(
        "api-openai-401-stops-the-run",
        "lalm-eval",
        refused_key("openai"),
        says=("OPENAI_API_KEY", "HTTP 401", "Incorrect API key provided", "api_key_env"),
        check=check_stopped("openai"),
    ),
    Case(
        "api-gemini-401-stops-the-run",
        "lalm-eval",
        refused_key("gemini"),
        says=("GEMINI_API_KEY", "HTTP 401", "api_key_env"),
        check=check_stopped("gemini"),
    ),
    Case(
        "secret-echoed-key-never-written",
        "lalm-eval",
        echoing,
        exit=0,
        check=check_no_secret_written,
        env={"OPENAI_API_KEY": SECRET},
    ),
    Case("secret-judge-api-key-in-spec", "lalm-eval", judge_key_in_spec, exit=0, check=check_spec_key_masked),
]


@pytest.mark.parametrize("case", [c.param() for c in CASES])
def test_bad_input(case, tmp_path):
    run_case(case, tmp_path)


# --- the stores themselves: each names its file and kind ------------------------------------------


def _stores():
    from lalm_eval.cache import MetricValueCache, ResponseCache
    from lalm_eval.fingerprint import FileHashCache
    from lalm_eval.judges.cache import JudgeCache
    from lalm_eval.llm.cache import ReplyCache

    return {
        "responses.sqlite": (ResponseCache, "response cache"),
        "metric_values.sqlite": (MetricValueCache, "metric-value cache"),
        "judge_cache.sqlite": (JudgeCache, "judge cache"),
        "llm_replies.sqlite": (ReplyCache, "text-LLM reply cache"),
        "file_hashes.sqlite": (FileHashCache, "file-hash cache"),
    }


STORE_FILES = [
    "responses.sqlite",
    "metric_values.sqlite",
    "judge_cache.sqlite",
    "llm_replies.sqlite",
    "file_hashes.sqlite",
]


def _damage(path: Path) -> None:
    """Fill the store's table with 300 rows, then overwrite one of its b-tree pages."""
    db = sqlite3.connect(path, isolation_level=None)
    (table,) = [r[0] for r in db.execute("SELECT name FROM sqlite_master WHERE type='table'")]
    columns = [r[1] for r in db.execute(f"PRAGMA table_info({table})")]
    values = ", ".join("?" * len(columns))
    rows = [(f"key-{i:04d}", *[f"value {i} " + "y" * 200] * (len(columns) - 1)) for i in range(300)]
    db.execute("BEGIN")
    db.executemany(f"INSERT INTO {table} VALUES ({values})", rows)
    db.execute("COMMIT")
    db.close()
    with open(path, "r+b") as f:
        f.seek(4096 * 6)
        f.write(b"\xff" * 4096)


@pytest.mark.parametrize("name", STORE_FILES, ids=[f"cache-kind-{n.split('.')[0]}" for n in STORE_FILES])
def test_a_damaged_store_names_its_file_and_kind_and_keeps_its_readable_rows(name, tmp_path):
    from lalm_eval.sqlite_store import StoreError

    cls, kind = _stores()[name]
    cls(tmp_path / name).close()
    _damage(tmp_path / name)
    with pytest.raises(StoreError) as err:
        cls(tmp_path / name)
    message = str(err.value)
    assert message.startswith(f"{tmp_path / name}: the {kind} is damaged") and "response cache" not in message.replace(
        kind, ""
    )
    with cls(tmp_path / name) as fresh:  # the rerun opens the salvaged file
        assert 250 < len(fresh) < 300
    assert list(tmp_path.glob(f"{name}.damaged-*"))


def test_cache_folder_is_a_file(tmp_path):
    from lalm_eval.cache import ResponseCache
    from lalm_eval.sqlite_store import StoreError

    (tmp_path / "cache").write_text("not a folder\n")
    for path in (tmp_path / "cache" / "responses.sqlite", tmp_path / "cache" / "deeper" / "responses.sqlite"):
        with pytest.raises(StoreError, match=f"^{tmp_path / 'cache'}: is a file, so the response cache"):
            ResponseCache(path)
    (tmp_path / "folder.sqlite").mkdir()
    with pytest.raises(StoreError, match="folder.sqlite: is a folder, not the response cache file"):
        ResponseCache(tmp_path / "folder.sqlite")


def test_rows_a_locked_write_could_not_store_are_kept_and_added_on_the_next_open(tmp_path):
    from lalm_eval.cache import ResponseCache
    from lalm_eval.sqlite_store import StoreError

    path = tmp_path / "responses.sqlite"
    cache = ResponseCache(path, busy_timeout_s=0.2)
    holder = sqlite3.connect(path, isolation_level=None)
    holder.execute("BEGIN IMMEDIATE")  # another process starts writing after this one opened the file
    with pytest.raises(StoreError, match=r"write lock .* kept in responses.sqlite.unsaved-"):
        cache.put_many([("k1", Response("paid-for answer"))])
    holder.execute("ROLLBACK")
    holder.close()
    cache.close()
    (unsaved,) = tmp_path.glob("responses.sqlite.unsaved-*.jsonl")
    with ResponseCache(path) as again:
        assert again.get_many(["k1"])["k1"].text == "paid-for answer"
    assert not unsaved.exists()


def test_a_store_follows_a_repair_made_by_another_instance(tmp_path):
    """A data-parallel rank (or the adapter's own cache beside the evaluator's) that set a damaged
    file aside: the other instances write into the fresh file, never into the damaged copy, and
    recreate a file removed under them."""
    from lalm_eval.cache import ResponseCache

    path = tmp_path / "responses.sqlite"
    first, second = ResponseCache(path), ResponseCache(path)
    first.close()
    for suffix in ("-wal", "-shm", ""):
        if Path(f"{path}{suffix}").exists():
            Path(f"{path}{suffix}").rename(tmp_path / f"set-aside{suffix}")
    with ResponseCache(path) as fresh:
        second.put_many([("k", Response("kept"))])
        assert fresh.get_many(["k"])["k"].text == "kept"
    path.unlink()
    second.put_many([("k2", Response("kept too"))])
    assert path.exists() and len(second) == 1
    second.close()


def test_a_damaged_file_hash_cache_only_slows_fingerprints_down(tmp_path, caplog):
    from lalm_eval import fingerprint

    folder = tmp_path / "model"
    folder.mkdir()
    (folder / "model.safetensors").write_bytes(b"weights")
    store = tmp_path / "hashes" / "file_hashes.sqlite"
    fingerprint.FileHashCache(store).close()
    _damage(store)
    first = fingerprint.folder_fingerprint(folder, cache=store)
    assert "file-hash cache is damaged" in caplog.text and str(store) in caplog.text
    fingerprint._STORES.pop(store, None)
    assert fingerprint.folder_fingerprint(folder, cache=store) == first  # the salvaged file serves again


# --- hostile servers, both protocols: one request each ----------------------------------------------

_EMPTY_CHOICES = {"openai": '{"id": "x", "model": "m", "choices": []}', "gemini": '{"candidates": []}'}
_NULL_CONTENT = {
    "openai": '{"id": "x", "model": "m", "choices": [{"index": 0, "message": {"role": "assistant", "content": null},'
    ' "finish_reason": "stop"}]}',
    "gemini": '{"candidates": [{"content": {"role": "model", "parts": []}, "finishReason": "STOP"}]}',
}
_KEY = {"openai": "choices", "gemini": "candidates"}


def _json(raw: str) -> dict:
    return {"raw": raw, "content_type": "application/json"}


#: (id, actions(protocol), adapter args, what must come out: failure kind or None for an answer,
#: fragments of the failure message, attempts)
HOSTILE = [
    ("malformed-json", lambda p: [_json('{"choices": [{"message": ')], {}, "error", ["not valid JSON", "choices"], 1),
    ("empty-body", lambda p: [_json("")], {}, "error", ["empty body", "HTTP 200"], 1),
    (
        "no-choices",
        lambda p: [_json('{"id": "x", "model": "m"}')],
        {},
        "error",
        ["no '{key}'", "its keys: id, model"],
        1,
    ),
    ("empty-choices", lambda p: [_json(_EMPTY_CHOICES[p])], {}, "error", ["{key}"], 1),
    ("null-content", lambda p: [_json(_NULL_CONTENT[p])], {}, "error", ["no text part|content is null"], 1),
    ("json-not-an-object", lambda p: [_json("[1, 2, 3]")], {}, "error", ["not an object (list"], 1),
    (
        "error-object-in-200",
        lambda p: [_json('{"error": {"message": "quota exceeded"}}')],
        {},
        "error",
        ["an error with HTTP 200", "quota exceeded"],
        1,
    ),
    (
        "html-502-retried",
        lambda p: [{"raw": HTML, "status": 502}] * 2,
        {},
        "retries_exhausted",
        ["HTML, not JSON", "Welcome to nginx"],
        2,
    ),
    (
        "huge-body",
        lambda p: [_json('{"pad": "' + "z" * 1_500_000 + '"}')],
        {"max_reply_mb": 1},
        "error",
        ["1.5 MB, over the max_reply_mb limit of 1 MB"],
        1,
    ),
    ("redirect-loop", lambda p: [{"redirect": "/v1/loop", "status": 307}] * 25, {}, "error", ["redirect loop"], 1),
    ("redirect-followed", lambda p: [{"redirect": "/v1/moved", "status": 307}], {}, None, [], 1),
    ("429-retry-after-honoured", lambda p: [{"status": 429, "retry_after": "0.25"}], {}, None, [], 2),
    ("500-then-success", lambda p: [{"status": 500}], {}, None, [], 2),
    ("hang-times-out", lambda p: [{"hold": True}] * 2, {"timeout": 0.2}, "retries_exhausted", ["timed out"], 2),
]
HOSTILE_IDS = [f"api-{p}-{row[0]}" for row in HOSTILE for p in ("openai", "gemini")]


def _adapter(protocol: str, fresh: bool = False, **args):
    """The protocol's adapter on its server (one per set of args: a Gemini client costs ~0.4 s to
    make; ``fresh`` for one that must read the environment again)."""
    from lalm_eval.models.gemini import GeminiAdapter
    from lalm_eval.models.openai_audio import OpenAIAudioAdapter

    key = (protocol, tuple(sorted(args.items())))
    if fresh or key not in WORLD.setdefault("adapters", {}):
        cls = OpenAIAudioAdapter if protocol == "openai" else GeminiAdapter
        base = {"model": PRICED[protocol], "base_url": WORLD[protocol].base_url, "retry_delay": 0.01, "max_retries": 1}
        adapter = cls(**{**base, "timeout": 2, **args})
        if fresh:
            return adapter
        WORLD["adapters"][key] = adapter
    return WORLD["adapters"][key]


@pytest.mark.parametrize("protocol,row", [(p, row) for row in HOSTILE for p in ("openai", "gemini")], ids=HOSTILE_IDS)
def test_a_hostile_answer_is_a_counted_failure_saying_what_the_server_did(protocol, row):
    _, actions, args, kind, fragments, attempts = row
    srv = server(protocol, *actions(protocol))
    t0 = time.monotonic()
    (resp,) = _adapter(protocol, **args).generate([request()])
    srv.release()
    srv._released.clear()
    assert resp.failure == kind, (resp.error, resp.text)
    assert resp.meta.get("attempts") == attempts
    for fragment in fragments:  # "a|b": either
        assert any(alt in resp.error for alt in fragment.format(key=_KEY[protocol]).split("|")), resp.error
    if kind is None:
        assert resp.text == "answer 1 audio(s)"
    if row[0].startswith("429"):
        first, second = srv.records[:2]
        assert second.t_start - first.t_start >= 0.25  # Retry-After, not the 0.01 s backoff
    if row[0] == "hang-times-out":
        assert time.monotonic() - t0 < 3 and "after" in resp.error


@pytest.mark.parametrize(
    "protocol,status,message",
    [
        ("openai", 403, "Project lacks access"),
        ("gemini", 403, "Permission denied"),
        ("gemini", 400, "API key not valid. Please pass a valid API key."),
    ],
    ids=["api-openai-403-stops", "api-gemini-403-stops", "api-gemini-400-key-not-valid-stops"],
)
def test_a_refused_key_stops_the_call_naming_its_variable(protocol, status, message, monkeypatch):
    from lalm_eval.models.api_base import AuthFailed

    env = "OPENAI_API_KEY" if protocol == "openai" else "GEMINI_API_KEY"
    monkeypatch.setenv(env, SECRET)
    srv = server(protocol, *[{"status": status, "message": message}] * 3)
    adapter = _adapter(protocol, fresh=True, concurrency=1)
    with pytest.raises(AuthFailed) as err:
        adapter.generate([request(0), request(1), request(2)])
    assert str(err.value).startswith(f"{env}: ") and f"HTTP {status}" in str(err.value)
    assert SECRET not in str(err.value) and len(srv.records) == 1


@pytest.mark.parametrize(
    "protocol", ["openai", "gemini"], ids=["api-openai-401-keeps-answers", "api-gemini-401-keeps-answers"]
)
def test_answers_received_before_a_refused_key_are_kept(protocol, tmp_path):
    from lalm_eval.cache import ResponseCache
    from lalm_eval.models.api_base import AuthFailed

    srv = server(protocol, {"text": "paid for"}, *[{"status": 401, "message": "key revoked"}] * 3)
    adapter = _adapter(protocol, fresh=True, concurrency=1, cache_dir=str(tmp_path))
    with pytest.raises(AuthFailed):
        adapter.generate([request(i, key=f"k{i}") for i in range(4)])
    assert len(srv.records) == 2  # the answer, the refusal, then nothing more was sent
    with ResponseCache(tmp_path / "responses.sqlite") as cache:
        assert {k: r.text for k, r in cache.get_many([f"k{i}" for i in range(4)]).items()} == {"k0": "paid for"}


# --- the judges' text-LLM client against the same servers --------------------------------------------


def _judge_llm(**options):
    from lalm_eval.llm import get_text_llm

    return get_text_llm("openai", model="judge-m", base_url=WORLD["openai"].base_url, retry_delay=0.01, **options)


@pytest.mark.parametrize(
    "action,fragment",
    [
        ({"raw": HTML, "content_type": "text/html"}, "the server answered HTML, not JSON"),
        (_json('{"choices": [{"message": '), "not valid JSON"),
        (_json(""), "empty body"),
        (_json('{"id": "x"}'), "has no 'choices'"),
    ],
    ids=["api-judge-html", "api-judge-malformed-json", "api-judge-empty-body", "api-judge-no-choices"],
)
def test_the_judge_client_says_what_the_server_sent(action, fragment):
    from lalm_eval.llm.base import LLMError

    server("openai", action)
    (got,) = _judge_llm().complete_each([[{"role": "user", "content": "Score this."}]])
    assert isinstance(got, LLMError) and fragment in str(got), got


def test_the_judge_client_stops_on_a_refused_key(monkeypatch):
    from lalm_eval.errors import ConfigError

    monkeypatch.setenv("MY_JUDGE_KEY", SECRET)
    srv = server("openai", *[{"status": 401, "message": "invalid key {auth}"}] * 4)
    with pytest.raises(ConfigError) as err:
        _judge_llm(api_key_env="MY_JUDGE_KEY", concurrency=1).complete_each(
            [[{"role": "user", "content": f"Score {i}."}] for i in range(4)]
        )
    assert str(err.value).startswith("MY_JUDGE_KEY: ") and "HTTP 401" in str(err.value)
    assert SECRET not in str(err.value) and len(srv.records) == 1


# --- secrets beyond the CLI run -------------------------------------------------------------------------


def test_a_judge_reply_echoing_the_key_is_stored_redacted(tmp_path, monkeypatch):
    from lalm_eval.judges import CACHE_FILE, JudgeItem, make_judge

    monkeypatch.setenv("MY_JUDGE_KEY", SECRET)
    server("openai", {"text": json.dumps({"score": 1, "comment": "fine, says {auth}"})})
    judge = make_judge("palm_captioning", _judge_llm(api_key_env="MY_JUDGE_KEY"), tmp_path)
    (verdict,) = judge.judge([JudgeItem("What does Bob say?", "Bob greets.", "Hello")])
    assert verdict.score == 1.0 and "***" in json.dumps(verdict.detail)
    assert all(SECRET.encode() not in p.read_bytes() for p in tmp_path.iterdir() if p.name.startswith(CACHE_FILE))


def test_the_gemini_key_from_api_key_env_never_reaches_an_answer_or_error(monkeypatch):
    monkeypatch.setenv("MY_GEMINI", SECRET)
    server("gemini", {"text": "key={auth}"}, match="#0")
    WORLD["gemini"].script({"status": 400, "message": "bad {auth}"}, match="#1")
    answer, failed = _adapter("gemini", fresh=True, api_key_env="MY_GEMINI").generate([request(0), request(1)])
    assert answer.text == "key=***" and failed.failure == "bad_request" and "bad ***" in failed.error
    assert SECRET not in json.dumps([answer.meta, failed.meta])


def test_short_or_unnamed_values_are_never_masked(monkeypatch):
    from lalm_eval.redaction import redact

    monkeypatch.setenv("TINY_API_KEY", "abc")  # too short to be a key: masking it would garble text
    monkeypatch.setenv("PLAIN_SETTING", "a-long-but-ordinary-value")
    monkeypatch.setenv("OTHER_TOKEN", "tok-0123456789")
    assert redact("abc a-long-but-ordinary-value tok-0123456789") == "abc a-long-but-ordinary-value ***"


EXTRA_CASE_IDS = [
    *[f"cache-kind-{n.split('.')[0]}" for n in STORE_FILES],
    "cache-folder-is-a-file",
    "cache-locked-write-rows-kept",
    "cache-repair-followed-by-other-instances",
    "cache-damaged-file-hashes-degrade",
    *HOSTILE_IDS,
    "api-openai-403-stops",
    "api-gemini-403-stops",
    "api-gemini-400-key-not-valid-stops",
    "api-openai-401-keeps-answers",
    "api-gemini-401-keeps-answers",
    "api-judge-html",
    "api-judge-malformed-json",
    "api-judge-empty-body",
    "api-judge-no-choices",
    "api-judge-401-stops",
    "secret-judge-reply-echo",
    "secret-gemini-api-key-env",
    "secret-short-values-kept",
]
