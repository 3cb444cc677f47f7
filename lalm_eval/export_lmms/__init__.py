"""lalm-eval's tasks inside lmms-eval: ``lalm-eval export-tasks --to lmms-eval`` writes lmms-eval
task folders whose hooks call the tasks as ``lalm-eval`` loads them (:mod:`.exporter`,
:mod:`.bridge`); ``lalm-eval score-samples`` scores lmms-eval's ``--log_samples`` output with the
tasks' metrics and judges and writes ``lalm-eval``'s results and report (:mod:`.samples`)."""
