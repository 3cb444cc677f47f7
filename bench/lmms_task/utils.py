"""lmms-eval hooks of bench/lmms_task/palm_rec64.yaml.in: the clip's audio and its question as exported."""


def doc_to_audio(doc):
    return [doc["audio"]]


def doc_to_text(doc, lmms_eval_specific_kwargs=None):
    return doc["question"]
