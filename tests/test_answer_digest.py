"""The text an answer's digest is taken of (``fusionlint.cache.recording._canonical``) is the one its
plain definition gives, for every answer a cached run over the fixtures records: the fast version
must not change what a cached entry compares."""

from __future__ import annotations

import dataclasses
from pathlib import Path

from fusionlint.cache import recording
from fusionlint.config import load_settings
from fusionlint.project.summary import ClassSummary, FileSummary
from fusionlint.runner import RunOptions, run

ROOT = Path(__file__).resolve().parent.parent


def _plain(value) -> str:
    """The definition: project objects by name, mappings and sequences item by item, sets sorted,
    dataclasses field by field, anything else its repr."""
    if isinstance(value, FileSummary):
        return f"<file {value.path} {value.module}>"
    if isinstance(value, ClassSummary):
        return f"<class {value.name}>"
    if isinstance(value, dict):
        return "{" + ", ".join(f"{_plain(k)}: {_plain(v)}" for k, v in value.items()) + "}"
    if isinstance(value, (list, tuple)):
        return "[" + ", ".join(_plain(v) for v in value) + "]"
    if isinstance(value, (set, frozenset)):
        return "{" + ", ".join(sorted(_plain(v) for v in value)) + "}"
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return type(value).__name__ + "(" + ", ".join(
            f"{f.name}={_plain(getattr(value, f.name))}" for f in dataclasses.fields(value)) + ")"
    return repr(value)


def test_every_recorded_answer_reads_as_its_plain_definition(tmp_path, monkeypatch):
    answers = []
    original = recording.Recorder.log

    def log(self, question, answer, shown_by=None):
        answers.append(answer)
        if shown_by is not None:  # a stand-in digested instead: the classes the answer is made of
            answers.extend(cls.attrs for _, cls in shown_by().classes)
        return original(self, question, answer, shown_by)

    monkeypatch.setattr(recording.Recorder, "log", log)
    settings = dataclasses.replace(load_settings(ROOT), root=tmp_path)  # the cache goes under tmp_path
    run([str(ROOT / "fixtures"), str(ROOT / "examples")], settings, RunOptions(jobs=1, cache=True))
    kinds = {type(a) for a in answers}
    assert dict in kinds and len(answers) > 500  # attribute facts among them
    for answer in answers:
        assert recording._canonical(answer) == _plain(answer)
    # odd values take the general paths
    for value in [True, 1.5, b"x", None, int, {1, 2}, frozenset({"b", "a"}), (1, [2, {"k": None}])]:
        assert recording._canonical(value) == _plain(value)
