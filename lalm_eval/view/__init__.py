"""``lalm-eval view``: a static sample browser (audio, runs side by side) of run folders.

Stages, one module each: :mod:`runs` (read the run folders) → :mod:`join` (one row per task and
doc id) → :mod:`clips` (each doc's audio, encoded once, named by its content hash) → :mod:`site`
(the folder, staged and renamed into place)."""
