"""Building blocks of the ``cascade`` adapter (:mod:`lalm_eval.models.cascade`).

- :mod:`.segmentation`: voice activity (webrtcvad) → speech regions → sliding windows →
  smoothed per-window labels → merged segments, with no ground truth;
- :mod:`.enrollment`: enrolled subjects from a folder or a ``datasets`` config, their centroids,
  and the threshold calibration (leave one clip out, EER);
- :mod:`.asr`: offline English speech recognition with pocketsphinx (optional extra ``asr``);
- :mod:`.answers`: task routing and answer templates read from ``cascade_answers.yaml``.
"""
