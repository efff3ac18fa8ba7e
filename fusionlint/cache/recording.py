"""Which cross-file facts one file's analysis read, and whether they still hold.

While a file is linted, the engine's project model (``fusionlint.project.model.Project``) and
regex name index (``fusionlint.analysis.project.ProjectIndex``) are seen through the proxies
below. Each question asked (the kind of a class, its attributes gathered from bases and
subclasses in any file, a function's propagated compiled context, whether a name is
compiler-disabled somewhere...) is logged with a digest of its answer. A cached entry stays
valid while every logged question still gets the same answer: editing a base class in another
file changes the answer to ``attributes``/``class_kind`` of its subclasses and so invalidates
exactly the files that asked.

A question the proxies do not know (an attribute added to either class later) marks the file
as not cacheable rather than letting an unrecorded fact through.
"""

from __future__ import annotations

import dataclasses
from typing import Any, Callable, Optional

from fusionlint.cache.store import digest

Read = tuple[tuple, str]  # (question, digest of the answer)


class Recorder:
    """The log of one file's questions; ``None`` as current log means nothing is recorded."""

    def __init__(self) -> None:
        self.reads: Optional[dict[tuple, str]] = None
        self.cacheable = True
        self.texts: dict = {}  # see ``Answers.texts``

    def begin(self) -> None:
        self.reads, self.cacheable, self.texts = {}, True, {}

    def end(self) -> tuple[Optional[list[Read]], bool]:
        reads, self.reads = self.reads, None
        return (sorted(reads.items(), key=repr) if reads is not None else None), self.cacheable

    def log(self, question: tuple, answer: Any, shown_by: Optional[Callable[[], Any]] = None) -> Any:
        """``answer``, with the question logged; ``shown_by``: what the digest is taken of instead (an
        equivalent, cheaper stand-in for the answer, as ``_ask`` gives it)."""
        if self.reads is not None and question not in self.reads:
            self.reads[question] = answer_digest(answer if shown_by is None else shown_by(), self.texts)
        return answer

    def unknown(self, name: str) -> None:
        if self.reads is not None:
            self.cacheable = False


def answer_digest(answer: Any, texts: Optional[dict] = None) -> str:
    if type(answer) is ClassesRead:
        return digest(answer.text({} if texts is None else texts).encode("utf-8", "surrogatepass"))
    return digest(_canonical(answer).encode("utf-8", "surrogatepass"))


class ClassesRead:
    """What ``Project.attributes`` is made of, standing for it in a digest: the classes' own attribute
    facts in the order it gathers them (the same classes give the same answer). Each class is then
    rendered once per pass over many entries instead of once per subclass that asks about it: a
    question about a shared base (``PreTrainedModel``) gathers hundreds of classes, and digesting the
    gathered answers took half of the re-check after an edit of transformers' llama (3.0 of 6.4 CPU s).

    Without the facts' lines: the lint reads a line only through ``Project.submodule_set_at``, a question
    of its own (a test checks that no other read happens in a lint whose entry is kept). A line inserted at
    the top of transformers' modeling_utils.py moved every attribute fact of ``PreTrainedModel``, and
    824 entries of the zoo were linted again for that alone."""

    __slots__ = ("classes",)

    def __init__(self, classes: list) -> None:
        self.classes = classes  # [(FileSummary, ClassSummary)]

    def text(self, texts: dict) -> str:
        """``texts``: id of a class -> (the class, the digest of its text), kept as long as the classes are
        unchanged (the class is held so that its id is not reused). Digests, not the texts: a pass over
        the zoo's entries renders 16,492 classes, 5 MiB of text held until the lint."""
        parts = []
        for summary, cls in self.classes:
            known = texts.get(id(cls))
            if known is None or known[0] is not cls:
                facts = ", ".join(f"{attr}: [" + ", ".join([f"{f.kind} {f.ctor} {f.method} {f.elements!r}" for f in found]) + "]"
                                  for attr, found in cls.attrs.items())
                text = f"<file {summary.path} {summary.module}> {cls.name}: {{{facts}}}"
                known = texts[id(cls)] = (cls, digest(text.encode("utf-8", "surrogatepass")))
            parts.append(known[1])
        return "\n".join(parts)


class Answers(dict):
    """question -> digest of its answer in one run's model (many entries ask the same questions: the
    attributes of a shared base class, a helper's facts), and ``texts``, the digest of each class's
    attribute facts as ``ClassesRead`` renders them."""

    def __init__(self) -> None:
        super().__init__()
        self.texts: dict = {}


def _canonical(value: Any) -> str:
    """A stable text for an answer: project objects by name, sets sorted, dataclasses field by field.

    Stable across processes, not only within one: a ``repr`` of a set of strings follows the
    process's string hash seed, so a dataclass holding one (``FunctionFacts.tensor_calls``) got a
    new digest in every run and its entry was never served after an edit anywhere in the project.

    Written for speed (a cold cached run of the zoo digests 136,000 answers; the attribute facts of a
    class are the largest): plain values first, each dataclass's field names looked up once per type."""
    kind = type(value)
    if kind in _PLAIN:
        return repr(value)
    if not _SUMMARIES:
        from fusionlint.project.summary import ClassSummary, FileSummary  # (pulls in libcst: not at import)

        _SUMMARIES.extend((FileSummary, ClassSummary))
    if isinstance(value, _SUMMARIES[0]):
        return f"<file {value.path} {value.module}>"
    if isinstance(value, _SUMMARIES[1]):
        return f"<class {value.name}>"
    if isinstance(value, dict):
        return "{" + ", ".join(f"{_canonical(k)}: {_canonical(v)}" for k, v in value.items()) + "}"
    if isinstance(value, (list, tuple)):
        return "[" + ", ".join([_canonical(v) for v in value]) + "]"
    if isinstance(value, (set, frozenset)):
        return "{" + ", ".join(sorted([_canonical(v) for v in value])) + "}"
    names = _FIELD_NAMES.get(kind, _UNSEEN)
    if names is _UNSEEN:
        is_dataclass = dataclasses.is_dataclass(kind)
        names = _FIELD_NAMES[kind] = tuple(f.name for f in dataclasses.fields(kind)) if is_dataclass else None
    if names is not None:
        return f"{kind.__name__}(" + ", ".join([f"{name}={_canonical(getattr(value, name))}" for name in names]) + ")"
    return repr(value)


_PLAIN = frozenset({str, int, bool, float, type(None), bytes})
_SUMMARIES: list[type] = []  # FileSummary, ClassSummary
_UNSEEN = object()
_FIELD_NAMES: dict[type, Optional[tuple[str, ...]]] = {}  # dataclass -> its fields' names; other types -> None


# -- the project model ------------------------------------------------------------------------------


class RecordingModel:
    """``Project`` as the engine and ``apply_project`` ask it, one file at a time."""

    def __init__(self, model, recorder: Recorder) -> None:
        self._model = model
        self._rec = recorder
        self.files = _RecordingFiles(model, recorder)

    @property
    def real(self):
        return self._model

    @property
    def name_index(self):
        return self._model.name_index

    @name_index.setter
    def name_index(self, value) -> None:
        self._model.name_index = value

    def add(self, shown, path, text) -> None:  # the linted file's own text: part of the entry's key
        self._model.add(shown, path, text)

    @property
    def plan_inputs(self):  # what the file's own text parses to (fusionlint.plan_inputs): no cross-file fact
        return self._model.plan_inputs

    def has(self, shown: str) -> bool:
        return self._rec.log(("model.has", shown), self._model.has(shown))

    def has_compiled(self, shown: str) -> bool:
        return self._rec.log(("model.has_compiled", shown), self._model.has_compiled(shown))

    def class_kind(self, summary, cls, seen: frozenset = frozenset()):
        return self._rec.log(("model.class_kind", summary.path, cls.name), self._model.class_kind(summary, cls, seen))

    def attributes(self, summary, cls):
        return self._rec.log(("model.attributes", summary.path, cls.name), self._model.attributes(summary, cls),
                             lambda: ClassesRead(self._model.attribute_sources(summary, cls)))

    def tensor_classes(self, summary):
        return self._rec.log(("model.tensor_classes", summary.path), self._model.tensor_classes(summary))

    def submodule_ctors(self, summary, cls):
        return self._rec.log(("model.submodule_ctors", summary.path, cls.name), self._model.submodule_ctors(summary, cls))

    def submodule_set_at(self, summary, cls, attr: str, ctor: str):
        return self._rec.log(("model.submodule_set_at", summary.path, cls.name, attr, ctor),
                             self._model.submodule_set_at(summary, cls, attr, ctor))

    def site_line(self, path: str, qualname: str, site: int):
        return self._rec.log(("model.site_line", path, qualname, site), self._model.site_line(path, qualname, site))

    def submodule_items(self, summary, cls, attr: str):
        return self._rec.log(("model.submodule_items", summary.path, cls.name, attr), self._model.submodule_items(summary, cls, attr))

    def function_facts(self, shown: str, qualname: str):
        return self._rec.log(("model.function_facts", shown, qualname), self._model.function_facts(shown, qualname))

    def binds_logger(self, qual: str) -> bool:
        return self._rec.log(("model.binds_logger", qual), self._model.binds_logger(qual))

    def __getattr__(self, name: str):
        self._rec.unknown(f"model.{name}")
        return getattr(self._model, name)


class _RecordingFiles:
    """``model.files.get(path)``: the file's own summary, which depends on its module name too."""

    def __init__(self, model, recorder: Recorder) -> None:
        self._model, self._rec = model, recorder

    def get(self, shown: str, default=None):
        found = self._model.files.get(shown, default)
        self._rec.log(("model.summary", shown), None if found is None else (found.module, found.is_package))
        return found

    def __contains__(self, shown: str) -> bool:
        return self._rec.log(("model.has", shown), shown in self._model.files)

    def __getitem__(self, shown: str):
        found = self.get(shown)
        if found is None:
            raise KeyError(shown)
        return found

    def __getattr__(self, name: str):
        self._rec.unknown(f"model.files.{name}")
        return getattr(self._model.files, name)


# -- the regex name index ---------------------------------------------------------------------------


class RecordingIndex:
    """``ProjectIndex`` as ``mark_compiled`` and the rules ask it."""

    def __init__(self, index, recorder: Recorder) -> None:
        self._index = index
        self._rec = recorder
        self.disabled_functions = _RecordingSet(index, "disabled_functions", recorder)
        self.attribute_writes = _RecordingTable(index, "attribute_writes", recorder)
        self.self_attribute_writes = _RecordingTable(index, "self_attribute_writes", recorder)

    @property
    def real(self):
        return self._index

    @property
    def generation(self) -> int:
        return self._index.generation

    def class_kind(self, name: str, _seen: frozenset = frozenset()):
        return self._rec.log(("index.class_kind", name), self._index.class_kind(name, _seen))

    def python_number_uses(self, attr: str):
        return self._rec.log(("index.python_number_uses", attr), self._index.python_number_uses(attr))

    def __getattr__(self, name: str):
        value = getattr(self._index, name)  # AttributeError passes (getattr(ctx.project, "x", None))
        if name == "file_mentions" and callable(value):
            return lambda path, cls: self._rec.log(("index.file_mentions", path, cls), value(path, cls))
        self._rec.unknown(f"index.{name}")
        return value


class _RecordingSet:
    def __init__(self, index, name: str, recorder: Recorder) -> None:
        self._index, self._name, self._rec = index, name, recorder

    def __contains__(self, item) -> bool:
        return self._rec.log((f"index.{self._name}", item), item in getattr(self._index, self._name))

    def __getattr__(self, name: str):
        self._rec.unknown(f"index.{self._name}.{name}")
        return getattr(getattr(self._index, self._name), name)

    def __iter__(self):
        self._rec.unknown(f"index.{self._name}.__iter__")
        return iter(getattr(self._index, self._name))


class _RecordingTable:
    def __init__(self, index, name: str, recorder: Recorder) -> None:
        self._index, self._name, self._rec = index, name, recorder

    def _lookup(self, key):
        table = getattr(self._index, self._name)
        return list(table[key]) if key in table else None  # not table.get: a defaultdict must not grow

    def get(self, key, default=None):
        found = self._rec.log((f"index.{self._name}", key), self._lookup(key))
        return default if found is None else found

    def __contains__(self, key) -> bool:
        return self.get(key) is not None

    def __getitem__(self, key):
        found = self.get(key)
        return found if found is not None else []

    def __getattr__(self, name: str):
        self._rec.unknown(f"index.{self._name}.{name}")
        return getattr(getattr(self._index, self._name), name)


# The questions whose answers are lines. The model's views that decide whether its answers still hold
# (``fusionlint.project.model.propagation_view``, ``class_view``) leave lines out, so an edit that only
# moves lines keeps the model's answers; these are asked again whenever the model's others are not.
LINE_QUESTIONS = frozenset({"model.site_line", "model.submodule_set_at"})
# The questions answered from the files, their order and module names, and each file's classes, imports and
# loggers alone (what ``class_view`` and the comparison of ``loggers``/``aliases`` cover): not from function
# bodies or the propagated facts (``function_facts``, ``has_compiled``, ``submodule_items`` read those).
CLASS_QUESTIONS = frozenset({
    "model.has", "model.summary", "model.class_kind", "model.attributes", "model.tensor_classes",
    "model.submodule_ctors", "model.binds_logger",
})


# -- asking again -----------------------------------------------------------------------------------


def still_holds(reads: list[Read], model, index, known: Optional[Answers] = None) -> bool:
    """Do the project model and index of this run give every logged question the same answer?

    ``known``: filled as questions are asked, so that each distinct question is answered and
    digested once per run (see ``Answers``)."""
    known = Answers() if known is None else known
    for question, expected in reads:
        found = known.get(question)
        if found is None:
            try:
                found = answer_digest(_ask(question, model, index), known.texts)
            except _Gone:
                found = ""  # no answer: differs from every recorded digest
            known[question] = found
        if found != expected:
            return False
    return True


class _Gone(Exception):
    """The question names a file or class the project no longer has."""


def _class_of(model, path: str, name: str):
    summary = model.files.get(path)
    cls = summary.classes.get(name) if summary is not None else None
    if cls is None:
        raise _Gone()
    return summary, cls


def _table(index, name: str, key):
    table = getattr(index, name)
    return list(table[key]) if key in table else None


_QUESTIONS: dict[str, Callable] = {
    "model.has": lambda m, i, shown: m.has(shown),
    "model.has_compiled": lambda m, i, shown: m.has_compiled(shown),
    "model.summary": lambda m, i, shown: (
        None if m.files.get(shown) is None else (m.files[shown].module, m.files[shown].is_package)
    ),
    "model.class_kind": lambda m, i, path, name: m.class_kind(*_class_of(m, path, name)),
    "model.attributes": lambda m, i, path, name: ClassesRead(m.attribute_sources(*_class_of(m, path, name))),
    "model.function_facts": lambda m, i, shown, qual: m.function_facts(shown, qual),
    "model.binds_logger": lambda m, i, qual: m.binds_logger(qual),
    "model.tensor_classes": lambda m, i, path: None if m.files.get(path) is None else m.tensor_classes(m.files[path]),
    "model.submodule_items": lambda m, i, path, name, attr: m.submodule_items(*_class_of(m, path, name), attr),
    "model.submodule_ctors": lambda m, i, path, name: m.submodule_ctors(*_class_of(m, path, name)),
    "model.submodule_set_at": lambda m, i, path, name, attr, ctor: m.submodule_set_at(*_class_of(m, path, name), attr, ctor),
    "model.site_line": lambda m, i, path, qual, site: m.site_line(path, qual, site),
    "index.class_kind": lambda m, i, name: i.class_kind(name),
    "index.python_number_uses": lambda m, i, attr: i.python_number_uses(attr),
    "index.file_mentions": lambda m, i, path, cls: i.file_mentions(path, cls),
    "index.disabled_functions": lambda m, i, name: name in i.disabled_functions,
    "index.attribute_writes": lambda m, i, key: _table(i, "attribute_writes", key),
    "index.self_attribute_writes": lambda m, i, key: _table(i, "self_attribute_writes", key),
}


def _ask(question: tuple, model, index):
    ask = _QUESTIONS.get(question[0])
    if ask is None:
        raise _Gone()
    return ask(model, index, *question[1:])
