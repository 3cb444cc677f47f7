"""Reader for MagicData conversational speech (MSU uses MDT-AA007, zh, and MDT-AD015, en).

**Best guess, unverified**: no specification of those two catalogue numbers was found. The
layout read is that of the documented MagicData conversational corpus, MagicData-RAMC
(MDT2021S003, https://www.openslr.org/123/)::

    corpus_dir/[<release>/]TXT/<conversation>.txt
                          /WAV/<conversation>.wav
                          /SPKINFO.txt            optional: CHANNEL SPEAKER_ID GENDER AGE REGION ...

Each TXT line is tab-separated: ``[start,end]`` (seconds), speaker id, a speaker field
(RAMC: ``女,普通话`` = gender, dialect), text. Lines whose text is empty or only bracketed marks
(``[*]``, ``[+]``, ``[++]``, ``[SONANT]``, ``[MUSIC]``, ``[LAUGHTER]``) are noise marks, dropped
uncounted; bracketed marks inside a text are stripped. A line without ``[start,end]``, speaker
and speaker field, or with start >= end, is a counted skip (file:line); so is a ``SPKINFO.txt``
row without ``CHANNEL``, ``SPEAKER_ID`` and ``GENDER``. Turns past the end of the audio are cut
and counted (:func:`msu_bench.corpora.make_conversation`).

Text files are UTF-8 (a byte-order mark is dropped) unless ``encoding`` says otherwise: Chinese
MagicData copies are often GBK, read with ``--corpus-option encoding=gbk``; a file that does not
decode is a counted skip saying so.

Gender comes from the speaker field's first item (``女``/``F``/``female`` -> female,
``男``/``M``/``male`` -> male), else from ``SPKINFO.txt``; the field's second item, if any, goes to
``accent`` as written; SPKINFO's region to ``region``. Speaker ids are the corpus ids.
Conversation ids are ``magicdata-<conversation>``; the language is the ``language`` argument.
"""

from __future__ import annotations

import logging
import re
from pathlib import Path

from lalm_eval.hub.readers import SkipLog, check_encoding, read_text, unreadable_text
from msu_bench.corpora import (
    check_language,
    make_conversation,
    normalize_gender,
    require_dir,
    require_some,
    strip_tags,
)
from msu_bench.types import ReadReport, SpeakerInfo

log = logging.getLogger(__name__)

SPAN = re.compile(r"^\[\s*(\d+(?:\.\d*)?)\s*,\s*(\d+(?:\.\d*)?)\s*\]$")


def prepare_magicdata(corpus_dir, language: str = "zh", encoding: str = "utf-8") -> ReadReport:
    """Read every ``TXT/*.txt`` conversation (with its ``WAV/*.wav``) under ``corpus_dir``."""
    check_language(language, "magicdata")
    encoding = check_encoding(encoding)
    root = require_dir(corpus_dir, "MagicData")
    txt_dirs = [root / "TXT"] if (root / "TXT").is_dir() else sorted(root.glob("*/TXT"))
    conversations, skips = [], SkipLog(log, logging.DEBUG)  # listed in the report, not logged
    for txt_dir in txt_dirs:
        info = _read_spkinfo(txt_dir.parent / "SPKINFO.txt", skips, encoding)
        for path in sorted(txt_dir.glob("*.txt")):
            conv = _read_conversation(path, txt_dir.parent / "WAV", info, language, skips, encoding)
            if conv is not None:
                conversations.append(conv)
    require_some(conversations, root, "MagicData", "TXT/<conversation>.txt + WAV/<conversation>.wav", skips=skips.items)
    return ReadReport(conversations, skips=skips.items)


def _read_conversation(path: Path, wav_dir: Path, info: dict, language: str, skips: SkipLog, encoding: str = "utf-8"):
    try:
        lines = read_text(path, encoding).splitlines()
    except (OSError, UnicodeError) as exc:
        skips.add(str(path), unreadable_text("transcript", exc, encoding))
        return None
    turns, speakers = [], {}
    for number, line in enumerate(lines, 1):
        if not line.strip():
            continue
        fields = [f.strip() for f in line.split("\t")]
        span = SPAN.match(fields[0])
        if span is None or len(fields) < 3 or not fields[1]:
            skips.add(f"{path}:{number}", "expected [start,end]<TAB>speaker<TAB>field<TAB>text")
            continue
        start, end = float(span[1]), float(span[2])
        text = strip_tags(" ".join(fields[3:]))
        if not text:
            continue  # a noise mark such as [*]
        if start >= end:
            skips.add(f"{path}:{number}", f"start {start:.3f} >= end {end:.3f}")
            continue
        speaker = fields[1]
        turns.append((speaker, start, end, text, f"{path}:{number}"))
        if speaker not in speakers:
            speakers[speaker] = _speaker(speaker, fields[2], info.get(speaker, {}), language)
    return make_conversation(
        f"magicdata-{path.stem}",
        source="magicdata",
        language=language,
        annotation=path,
        audio=wav_dir / f"{path.stem}.wav",
        turns=turns,
        speakers=speakers,
        skips=skips,
    )


def _speaker(speaker: str, field: str, info: dict, language: str) -> SpeakerInfo:
    items = [x.strip() for x in re.split(r"[,，]", field) if x.strip()]
    gender = normalize_gender(items[0]) if items else None
    return SpeakerInfo(
        id=speaker,
        gender=gender or normalize_gender(info.get("gender")),
        accent=items[1] if len(items) > 1 else None,
        region=info.get("region"),
        language=language,
    )


def _read_spkinfo(path: Path, skips: SkipLog, encoding: str = "utf-8") -> dict[str, dict]:
    """``SPKINFO.txt`` (RAMC): ``CHANNEL SPEAKER_ID GENDER AGE REGION,CITY DEVICE``, tab-separated."""
    if not path.is_file():
        return {}
    try:
        rows = [line.split("\t") for line in read_text(path, encoding).splitlines()]
    except (OSError, UnicodeError) as exc:
        skips.add(str(path), unreadable_text("speaker info", exc, encoding))
        return {}
    info = {}
    for number, row in enumerate(rows[1:], 2):  # header line first
        row = [c.strip() for c in row]
        if not any(row):
            continue
        if len(row) >= 3 and row[1]:
            info[row[1]] = {"gender": row[2], "region": row[4] if len(row) > 4 and row[4] else None}
        else:
            skips.add(f"{path}:{number}", "expected CHANNEL<TAB>SPEAKER_ID<TAB>GENDER<TAB>AGE<TAB>REGION...")
    return info
