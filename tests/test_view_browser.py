"""The acceptance of ``lalm-eval view`` in headless Chromium (Debian's chromium + chromium-driver,
selenium): the site of two small real runs opened from disk shows every sample, filters, plays
its audio at the clip's duration and asks nothing of the network; a synthetic 5,000 docs x 3
runs site filters the right rows (bench/view_scale.py times it). A screenshot is saved in the test's tmp dir."""

from __future__ import annotations

import json
import os
import shutil
import time
from pathlib import Path

import pytest

from tests.test_view import JUDGE_COMMENT, LIMIT, read_data, runs  # noqa: F401  (the module's fixture)

webdriver = pytest.importorskip("selenium.webdriver", reason="selenium is not installed (pip install selenium)")
CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")
DRIVER = shutil.which("chromedriver")
MISSING = "chromium / chromedriver missing (apt-get install --no-install-recommends chromium chromium-driver)"
# on a developer's machine the test skips without them; in CI (.ci/run installs them) it fails
pytestmark = pytest.mark.skipif(not (CHROMIUM and DRIVER) and not os.environ.get("CI"), reason=MISSING)


@pytest.fixture
def browser():
    if not (CHROMIUM and DRIVER):
        pytest.fail(f"CI is set and {MISSING}")
    driver = make_driver()
    yield driver
    driver.quit()


def make_driver():
    """Headless Debian chromium through selenium, its network log on (what left the page)."""
    from selenium.webdriver.chrome.service import Service

    options = webdriver.ChromeOptions()
    options.binary_location = CHROMIUM
    for flag in ("--headless=new", "--no-sandbox", "--disable-gpu", "--window-size=1400,1800", "--mute-audio"):
        options.add_argument(flag)
    options.add_argument("--autoplay-policy=no-user-gesture-required")
    options.set_capability("goog:loggingPrefs", {"performance": "ALL"})
    driver = webdriver.Chrome(service=Service(DRIVER), options=options)
    driver.set_script_timeout(30)
    return driver


def open_site(driver, site: Path) -> None:
    driver.get(site.joinpath("index.html").resolve().as_uri())
    deadline = time.monotonic() + 30
    while not driver.execute_script("return window.LALM_VIEW_STATE && window.LALM_VIEW_STATE.first_render_ms"):
        assert time.monotonic() < deadline, "the page never rendered its rows"
        time.sleep(0.05)


def shown(driver) -> list[tuple[str, str]]:
    return [
        tuple(x)
        for x in driver.execute_script(
            "return Array.from(document.querySelectorAll('#rows .sample')).map(e => [e.dataset.task, e.dataset.doc])"
        )
    ]


def test_site_of_two_runs_in_chromium(runs, browser, tmp_path):  # noqa: F811
    site = runs["site"]
    data = read_data(site)
    open_site(browser, site)
    rows = shown(browser)
    for task, n in data["runs"][0]["n_samples"].items():
        assert sum(t == task for t, _ in rows) == n == LIMIT  # the results' sample count
    card = browser.find_element("css selector", '#rows .sample[data-doc="1"]')
    assert "llm_judge (judge): " + JUDGE_COMMENT in card.text  # the judge's reasoning, shown as text
    browser.find_element("id", "f-disagree").click()
    want = sorted((r["task"], str(r["doc_id"])) for r in data["rows"] if r["disagree"])
    assert sorted(shown(browser)) == want == [("palm_recognition", "0")]
    browser.find_element("id", "f-disagree").click()
    browser.find_element("id", "f-missing").click()
    assert shown(browser) == [("palm_recognition", str(LIMIT - 1))]
    assert "missing: this run has no sample" in browser.find_element("css selector", "#rows .sample").text
    browser.find_element("id", "f-missing").click()
    check_audio_and_network(browser, site)
    browser.save_screenshot(str(tmp_path / "view.png"))
    assert (tmp_path / "view.png").stat().st_size > 10_000


def check_audio_and_network(browser, site: Path) -> None:
    """The first shown audio element's source exists and decodes to the clip's duration (±0.1 s);
    every request of the page stayed on the disk (file:// and the media controls' data: icons)."""
    from torchcodec.decoders import AudioDecoder

    duration = browser.execute_async_script(
        """const done = arguments[arguments.length - 1];
        const a = document.querySelector('#rows audio');
        a.addEventListener('loadedmetadata', () => done([a.getAttribute('src'), a.duration]));
        a.addEventListener('error', () => done([a.getAttribute('src'), -1]));
        a.preload = 'metadata'; a.load();"""
    )
    src, seconds = duration
    decoded = AudioDecoder(str(site / src)).get_all_samples()
    assert seconds > 0 and abs(seconds - decoded.data.shape[-1] / decoded.sample_rate) <= 0.1
    names = browser.execute_script(
        "return performance.getEntriesByType('navigation').concat(performance.getEntriesByType('resource'))"
        ".map(e => e.name)"
    )
    assert names and all(n.startswith("file://") for n in names), [n for n in names if not n.startswith("file://")]
    # every request the page made, as the DevTools network log saw it (resource timing omits file://)
    sent = [json.loads(e["message"])["message"] for e in browser.get_log("performance")]
    urls = [m["params"]["request"]["url"] for m in sent if m["method"] == "Network.requestWillBeSent"]
    assert {"data.js", "view.js", "view.css", Path(src).name} <= {u.rsplit("/", 1)[-1] for u in urls}
    local = ("file://", "data:")  # data: the media controls' own icons, inline
    assert all(u.startswith(local) for u in urls), [u for u in urls if not u.startswith(local)]


MAIN_JOB_VIEW = os.environ.get("LALM_MAIN_JOB_VIEW")


def choose(browser, select_id: str, value: str) -> None:
    """Set a filter's select to ``value`` ("" = all) as a user's choice does (a change event)."""
    select = browser.find_element("id", select_id)
    browser.execute_script(
        "arguments[0].value = arguments[1]; arguments[0].dispatchEvent(new Event('change'));", select, value
    )


def every_shown(browser) -> list[tuple[str, str]]:
    """The rows the filters match, every page of them ("more" clicked until it hides)."""
    more = browser.find_element("id", "more")
    while more.is_displayed():
        browser.execute_script("arguments[0].click()", more)  # below the fold: a script's click, as a user's
    return shown(browser)


@pytest.mark.main_job
@pytest.mark.skipif(not MAIN_JOB_VIEW, reason="LALM_MAIN_JOB_VIEW unset (the main-job CI stage sets it)")
def test_the_main_jobs_view_in_chromium(browser, tmp_path):
    """The view ``scripts/main.sh`` writes of its two runs (the cascade and the tiny model on
    ``palm,msu``), opened from disk: .ci/run's main-job stage runs it after the main job."""
    site = Path(MAIN_JOB_VIEW)
    data = read_data(site)
    assert len(data["runs"]) == 2
    open_site(browser, site)
    for task in data["counts"]:
        choose(browser, "f-task", "=" + task)
        rows = every_shown(browser)
        assert rows == [(task, str(r["doc_id"])) for r in data["rows"] if r["task"] == task]
        for k, run in enumerate(data["runs"]):
            answered = sum(r["task"] == task and r["answers"][k] is not None for r in data["rows"])
            assert answered == data["counts"][task][run["label"]] == run["n_samples"][task], (task, run["label"])
    choose(browser, "f-task", "")
    browser.find_element("id", "f-disagree").click()
    choose(browser, "f-meta-n_speakers", "=2")
    want = sorted(
        (r["task"], str(r["doc_id"])) for r in data["rows"] if r["disagree"] and r["meta"].get("n_speakers") == 2
    )
    assert want and sorted(every_shown(browser)) == want
    check_audio_and_network(browser, site)
    browser.save_screenshot(str(tmp_path / "main-job-view.png"))
    assert (tmp_path / "main-job-view.png").stat().st_size > 10_000


def synthetic_site(template_site: Path, out: Path, docs: int = 5000, n_runs: int = 3) -> None:
    """The real page and scripts with 5,000 docs x 3 runs of synthetic rows (no audio files)."""
    shutil.copytree(template_site, out, ignore=shutil.ignore_patterns("audio", "data.js"))
    data = read_data(template_site)
    base = (
        data["runs"][0]
        if data["runs"]
        else {"folder": "run", "stamp": "", "identity": {}, "n_samples": {}, "plots": []}
    )
    data["runs"] = [dict(base, label=f"run {k}") for k in range(n_runs)]
    rows = []
    for i in range(docs):
        answers = [
            {"response": f"answer {i % (k + 2)}", "filtered": f"answer {i % (k + 2)}", "metrics": {"token_f1": (i * (k + 1) % 97) / 97}}
            for k in range(n_runs)
        ]  # fmt: skip
        rows.append(
            {"task": f"task_{i % 5}", "doc_id": i, "question": f"Question {i}: who spoke?", "target": "Yes.",
             "meta": {"n_speakers": 2 + i % 4, "language": ["en", "zh"][i % 2]}, "answers": answers,
             "missing": 0, "disagree": len({a["filtered"] for a in answers}) > 1, "audio": [f"audio/{i:016x}.mp3"]}
        )  # fmt: skip
    data.update(rows=rows, metrics=["token_f1"], counts={f"task_{t}": {} for t in range(5)})
    (out / "data.js").write_text("window.LALM_VIEW = " + json.dumps(data) + ";\n", encoding="utf-8")


def filter_and_sort(browser) -> tuple[float, float, int]:
    """Speakers = 2 and "runs disagree", then sort by token_f1: (filter ms, sort ms, rows matched)."""
    return browser.execute_script(
        """const t0 = performance.now();
        const s = document.getElementById('f-meta-n_speakers'); s.value = '=2'; s.dispatchEvent(new Event('change'));
        document.getElementById('f-disagree').click();
        const t1 = performance.now();
        const q = document.getElementById('sort'); q.value = '-token_f1'; q.dispatchEvent(new Event('change'));
        return [t1 - t0, performance.now() - t1, window.LALM_VIEW_STATE.matched];"""
    )


def test_5000_docs_3_runs_filter_the_right_rows(runs, browser, tmp_path):  # noqa: F811
    """The scale case filters correctly; its timings are bench/view_scale.py's (no timed assertion here)."""
    site = tmp_path / "big"
    synthetic_site(runs["site"], site)
    open_site(browser, site)
    first = browser.execute_script("return window.LALM_VIEW_STATE.first_render_ms")
    filter_ms, sort_ms, matched = filter_and_sort(browser)
    want = sum(1 for i in range(5000) if 2 + i % 4 == 2 and len({i % (k + 2) for k in range(3)}) > 1)
    assert matched == want
    print(f"5000 docs x 3 runs: first render {first:.0f} ms, filter {filter_ms:.0f} ms, sort {sort_ms:.0f} ms")
