"""Profiles (PALM Table 11) and human descriptions (Table 22 HD) for corpora that lack them.

PALM-Bench §4.1: "We use Qwen-Plus to generate initial profiles … from the full ASR
transcripts". :func:`generate_profiles` asks any :class:`~lalm_eval.llm.TextLLM` for one strict
JSON profile per speaker (prompts ``prompts/profile_generation.<lang>.j2``) and validates it
against the embedded corpus's field lists; :func:`generate_human_descriptions` asks for a
perceptual voice description grounded in measured acoustics (``prompts/human_description.<lang>.j2``).
All chats of a call go to the LLM as one batch. A reply that is not valid is retried once, in
the same chat with the error appended (the template's ``retry`` macro); a second invalid reply
raises :class:`DataError` naming the speaker. Record ``llm.settings`` beside the output.
"""

from __future__ import annotations

from pathlib import Path

from lalm_eval.errors import ConfigError, DataError
from lalm_eval.llm import TextLLM
from lalm_eval.llm.ask import ReplyInvalid, ask_json
from lalm_eval.templating import jinja_env
from palm_bench.acoustic import VoiceMeasurements, description_context
from palm_bench.corpus.embedded import INTEREST_FIELDS, PROFILE_FIELDS
from palm_bench.corpus.types import Speaker

PROMPTS_DIR = Path(__file__).resolve().parent / "prompts"
TEXT_FIELDS = ("occupation", "personality", "speaking_style", "intro")
MAX_HD_CHARS = 1500


def _prompt(kind: str, language: str, context: dict):
    """The rendered prompt module: ``str(module)`` is the prompt, ``module.retry(error)`` the retry."""
    import jinja2

    name = f"{kind}.{language}.j2"
    try:
        return jinja_env(PROMPTS_DIR).get_template(name).make_module(context)
    except jinja2.TemplateNotFound:
        raise ConfigError(f"{PROMPTS_DIR / name}: prompt template not found (language {language!r})") from None


def _text(value, field: str) -> str:
    if not isinstance(value, str) or not value.strip():
        raise ReplyInvalid("must be a non-empty string", field)
    return value.strip()


def validate_profile(obj) -> dict:
    """A profile with exactly the PALM Table 11 fields, in canonical order; raises on anything else."""
    if not isinstance(obj, dict):
        raise ReplyInvalid(f"profile must be a JSON object, got {type(obj).__name__}")
    missing = [f for f in PROFILE_FIELDS if f not in obj]
    extra = sorted(set(obj) - set(PROFILE_FIELDS))
    if missing or extra:
        raise ReplyInvalid(
            f"missing {missing}, unexpected {extra}; need exactly {list(PROFILE_FIELDS)}", (missing or extra)[0]
        )
    age = obj["age"]
    if isinstance(age, float) and age.is_integer():
        age = int(age)
    if not isinstance(age, int) or isinstance(age, bool) or not 1 <= age <= 120:
        raise ReplyInvalid(f"must be an integer between 1 and 120, got {age!r}", "age")
    interests = obj["interests"]
    if not isinstance(interests, dict):
        raise ReplyInvalid("must be a JSON object", "interests")
    missing = [f for f in INTEREST_FIELDS if f not in interests]
    extra = sorted(set(interests) - set(INTEREST_FIELDS))
    if missing or extra:
        raise ReplyInvalid(f"missing {missing}, unexpected {extra}; need exactly {list(INTEREST_FIELDS)}", "interests")
    profile = {"age": age, **{f: _text(obj[f], f) for f in TEXT_FIELDS}}
    profile["interests"] = {k: _text(interests[k], f"interests.{k}") for k in INTEREST_FIELDS}
    return {f: profile[f] for f in PROFILE_FIELDS}


def validate_description(obj) -> str:
    """``{"description": "..."}`` → the description (non-empty, at most ``MAX_HD_CHARS``)."""
    if not isinstance(obj, dict) or "description" not in obj:
        raise ReplyInvalid('reply must be a JSON object with the field "description"', "description")
    text = _text(obj["description"], "description")
    if len(text) > MAX_HD_CHARS:
        raise ReplyInvalid(f"is {len(text)} characters long; at most {MAX_HD_CHARS}", "description")
    return text


def generate_profiles(
    llm: TextLLM,
    speakers: list[Speaker],
    transcripts: dict[str, list[str]],
    language: str | None = None,
    max_transcript_chars: int = 60000,
) -> dict[str, dict]:
    """One validated PALM Table 11 profile per speaker, inferred from their transcripts only.

    ``language`` (``en``/``zh``) selects the prompt and the language of the values; ``None``
    uses each speaker's own. Transcripts beyond ``max_transcript_chars`` (in order) are left out.
    """
    prompts = {}
    for sp in speakers:
        lines = [t.strip() for t in transcripts.get(sp.id, []) if t and t.strip()]
        if not lines:
            raise DataError("transcripts", f"no transcript for speaker {sp.id!r}", field=sp.id)
        kept, total = [], 0
        for line in lines:
            if kept and total + len(line) > max_transcript_chars:
                break
            kept.append(line)
            total += len(line)
        prompts[sp.id] = _prompt(
            "profile_generation",
            language or sp.language,
            {
                "name": sp.name or sp.name_latin or sp.id,
                "gender": sp.gender or "",
                "transcripts": kept,
                "interest_fields": list(INTEREST_FIELDS),
            },
        )
    return ask_json(llm, prompts, validate_profile, "generated profile for speaker")


def generate_human_descriptions(
    llm: TextLLM,
    speakers: list[Speaker],
    measurements: dict[str, VoiceMeasurements],
    language: str | None = None,
    notes: dict[str, str] | None = None,
) -> dict[str, str]:
    """A 3–5 sentence perceptual description (Table 22 HD style) per speaker.

    ``measurements`` (from :func:`palm_bench.acoustic.measure_voice`) are the evidence the
    description must agree with; ``notes`` adds free-text evidence per speaker (e.g. "a TTS
    voice"). ``language`` as in :func:`generate_profiles`.
    """
    prompts = {}
    for sp in speakers:
        if sp.id not in measurements:
            raise DataError("measurements", f"no voice measurements for speaker {sp.id!r}", field=sp.id)
        lang = language or sp.language
        prompts[sp.id] = _prompt(
            "human_description",
            lang,
            {
                "name": sp.name or sp.name_latin or sp.id,
                "gender": sp.gender or "",
                "m": description_context(measurements[sp.id], lang),
                "notes": (notes or {}).get(sp.id, ""),
            },
        )
    return ask_json(llm, prompts, validate_description, "generated human description for speaker")
