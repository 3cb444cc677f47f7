"""The toy benchmark's judge; its template is ``prompts/speaker.j2`` beside this module."""

from lalm_eval.judges.base import Judge, number, text


class SpeakerJudge(Judge):
    name, prompt_version, template = "toy_speaker", "1", "speaker.j2"

    def validate(self, reply, item):
        score = number(reply, "score", lo=0.0, hi=1.0)
        return score, {"score": score, "comment": text(reply, "comment")}
