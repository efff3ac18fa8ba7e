"""Facts that cross file boundaries, gathered from raw text before any file is parsed.

The run needs a few project-wide answers before it lints one file: which class names are
``nn.Module`` / ``autograd.Function`` subclasses (``class Block(MyBase)`` where ``MyBase`` lives
elsewhere), which functions are decorated ``torch.compiler.disable``, and where attributes are
assigned (``model.threshold = ...``) or used as a Python number (``round(model.threshold, 2)``). A
regular-expression scan answers them at a small fraction of a parse, so the index never costs a
parse and screening can still skip most files.
"""

from __future__ import annotations

import bisect
import re
import sys
from array import array
from collections import defaultdict
from dataclasses import dataclass, field
from typing import Callable, Iterable, Optional, Union

_CLASS_RE = re.compile(r"^[ \t]*class[ \t]+(\w+)[ \t]*\(([^)]*)\)[ \t]*:", re.M)
_DISABLE_RE = re.compile(
    r"^[ \t]*@[ \t]*([\w.]*(?:compiler\.disable|_dynamo\.disable|_disable_dynamo))\b[^\n]*\n"
    r"(?:[ \t]*@[^\n]*\n)*[ \t]*(?:async[ \t]+)?def[ \t]+(\w+)",
    re.M,
)
# `fast_path = torch.compiler.disable(slow_path)`: the assigned name is a disabled callable too.
_DISABLE_ASSIGN_RE = re.compile(
    r"^[ \t]*(\w+)[ \t]*=[ \t]*[\w.]*(?:compiler\.disable|_dynamo\.disable|_disable_dynamo)\(", re.M
)
# `obj.attr = value` and `obj.attr op= value`, but not `==`, `<=`, `>=`, `!=`: found from the dot, and `obj`
# read back from it (`_attribute_writes`). The same matches as r"\b(\w+)\.(\w+)..." tried at every word
# start, which cost two thirds of the index (transformers 5.24.0: 1.79 CPU s against 0.41).
_ATTR_WRITE_RE = re.compile(r"\.(\w+)[ \t]*(?:[-+*/%@&|^]|//|\*\*|<<|>>)?=(?!=)")
# Code that needs an attribute to be a Python number (the buffer fix would hand it a tensor):
# `round(m.t, 2)`, `float(m.t)`, `int(`, `str(`, `repr(`, `math.log(m.t)` take it as first argument...
_CONVERT_RE = re.compile(r"\b(round|float|int|str|repr|math\.\w+)\([ \t]*\w+(?:\.\w+)*\.(\w+)[ \t]*[,)]")
# ...`json.dumps(...)`/`.format(...)` anywhere in their arguments on that line, f-strings in a `{}` field.
_SERIALISE_RE = re.compile(r"\b(json\.dumps?|\.format)\(([^\n]*)")
_FSTRING_RE = re.compile(r"""\b[fF][rR]?(?:'[^'\n]*'|"[^"\n]*")""")
_FIELD_RE = re.compile(r"\{([^{}\n]*)\}")
_NEWLINE_RE = re.compile("\n")
_DOTTED_ATTR_RE = re.compile(r"\b\w+(?:\.\w+)*\.(\w+)")

MODULE_ROOTS = frozenset({"Module", "torch.nn.Module", "nn.Module", "torch.nn.modules.module.Module"})
FUNCTION_ROOTS = frozenset(
    {"torch.autograd.Function", "autograd.Function", "torch.autograd.function.Function", "Function"}
)
# torch.nn classes that are not modules.
_NN_NOT_MODULES = frozenset({"Parameter", "Buffer", "ParameterList", "ParameterDict", "UninitializedParameter"})


def is_torch_module_base(qualname: str) -> bool:
    """True for ``torch.nn.Module`` and the torch.nn classes that derive from it (``torch.nn.Linear``)."""
    if qualname in ("torch.nn.Module", "torch.nn.modules.module.Module"):
        return True
    if qualname.startswith("torch.nn."):
        last = qualname.rsplit(".", 1)[-1]
        return last[:1].isupper() and last not in _NN_NOT_MODULES
    return False


def is_autograd_function_base(qualname: str) -> bool:
    return qualname in ("torch.autograd.Function", "torch.autograd.function.Function")


@dataclass(frozen=True)
class _FileFacts:
    """What one file contributed, kept so that a changed file can be taken back out exactly.

    Kept for every file of the run: names are interned (a regex match makes a new string each
    time, and most attribute and base names repeat across files), and the writes are stored as
    two flat columns (names, lines) instead of one 56-byte (name, line) tuple per write."""

    class_bases: tuple[tuple[str, tuple[str, ...]], ...]
    disabled: tuple[str, ...]
    attribute_names: tuple[str, ...]  # of `obj.attr = ...` (obj is not self), in file order
    attribute_lines: array  # their lines (array of unsigned ints)
    self_attribute_names: tuple[str, ...]  # of `self.attr = ...`
    self_attribute_lines: array

    @property
    def attribute_writes(self) -> Iterable[tuple[str, int]]:
        """(attribute, line) of `obj.attr = ...`, obj not self."""
        return zip(self.attribute_names, self.attribute_lines)

    @property
    def self_attribute_writes(self) -> Iterable[tuple[str, int]]:
        """(attribute, line) of `self.attr = ...`."""
        return zip(self.self_attribute_names, self.self_attribute_lines)


_name = sys.intern


def _scan(text: str) -> _FileFacts:
    classes = []
    for match in _CLASS_RE.finditer(text):
        bases = [b.strip() for b in match.group(2).split(",")]
        classes.append((_name(match.group(1)), tuple(_name(b) for b in bases if b and "=" not in b)))
    disabled: list[str] = []
    if "disable" in text:
        disabled.extend(_name(m.group(2)) for m in _DISABLE_RE.finditer(text))
        disabled.extend(_name(m.group(1)) for m in _DISABLE_ASSIGN_RE.finditer(text))
    names: list[str] = []
    lines = array("I")
    self_names: list[str] = []
    self_lines = array("I")
    line_of = _LineOf(text)
    for obj, attr, start in _attribute_writes(text):
        if obj == "self":
            self_names.append(_name(attr))
            self_lines.append(line_of(start))
        else:
            names.append(_name(attr))
            lines.append(line_of(start))
    return _FileFacts(tuple(classes), tuple(disabled), tuple(names), lines, tuple(self_names), self_lines)


def _attribute_writes(text: str) -> Iterable[tuple[str, str, int]]:
    """(obj, attr, offset of obj) of each `obj.attr = ...` / `obj.attr op= ...`, obj a word (no call or
    subscript before the dot)."""
    for match in _ATTR_WRITE_RE.finditer(text):
        dot = start = match.start()
        while start and (text[start - 1].isalnum() or text[start - 1] == "_"):  # what \w matches
            start -= 1
        if start != dot:
            yield text[start:dot], match.group(1), start


# (path, line) entries of the tables below hold line numbers above 256 as int objects: one per distinct
# number for the whole index instead of one per entry
_LINES: dict[int, int] = {}


@dataclass
class ProjectIndex:
    """What one run (or one editor workspace) knows about all of its files.

    Files can be added, replaced and removed one at a time (``update_file``/``remove_file``):
    the language server re-scans only the file that changed, never the whole project.
    """

    # class name -> base expressions as written (last component is enough to chase local bases)
    class_bases: dict[str, list[str]] = field(default_factory=lambda: defaultdict(list))
    disabled_functions: set[str] = field(default_factory=set)
    # attribute name -> (path, line) of `obj.attr = ...` / `obj.attr op= ...` (obj is not `self`)
    attribute_writes: dict[str, list[tuple[str, int]]] = field(default_factory=lambda: defaultdict(list))
    # each file's text, or what reads it again (a run keeps no texts: they would grow with the corpus)
    _texts: dict[str, Union[str, Callable[[], str]]] = field(default_factory=dict)
    _number_uses: dict[str, list[tuple[str, int, str]]] = field(default_factory=dict)
    _kind_cache: dict[str, str | None] = field(default_factory=dict)
    _files: dict[str, _FileFacts] = field(default_factory=dict)
    _disabled_count: dict[str, int] = field(default_factory=dict)  # files declaring each name disabled
    # bumped whenever a cross-file fact changes, so caches built on this index (the project model's)
    # know to start over
    generation: int = 0

    def add_file(self, path: str, text: str, reread: Optional[Callable[[], str]] = None) -> None:
        self.update_file(path, text, reread)

    def update_file(
        self, path: str, text: str, reread: Optional[Callable[[], str]] = None, facts: "_FileFacts | None" = None
    ) -> None:
        """Index ``text`` as the content of ``path``, replacing what an earlier version contributed.

        ``reread`` (the file's current text) lets the index drop ``text`` and read it again for the
        searches of ``python_number_uses``; without it the text is kept (an editor's unsaved buffer).
        ``facts``: what ``scanned(text)`` gave for this very text earlier (the findings cache keeps it).
        """
        facts = _scan(text) if facts is None else facts
        kept = text if reread is None else reread
        if self._files.get(path) == facts:
            # An edit inside a function body: no cross-file fact changed, only the text that
            # python_number_uses searches.
            self._texts[path] = kept
            self._number_uses.clear()
            return
        self.remove_file(path)
        self.generation += 1
        self._files[path] = facts
        for name, bases in facts.class_bases:
            self.class_bases[name].extend(bases)
        for name in facts.disabled:
            self._disabled_count[name] = self._disabled_count.get(name, 0) + 1
            self.disabled_functions.add(name)
        for attr, line in facts.attribute_writes:
            self.attribute_writes[attr].append((path, _LINES.setdefault(line, line)))
        self._texts[path] = kept
        self._number_uses.clear()
        self._kind_cache.clear()

    def scanned(self, path: str) -> "_FileFacts | None":
        """What the scan of ``path``'s current text found (for the findings cache to keep)."""
        return self._files.get(path)

    def remove_file(self, path: str) -> None:
        facts = self._files.pop(path, None)
        if facts is None:
            return
        self.generation += 1
        for name, bases in facts.class_bases:
            kept = self.class_bases[name]
            for base in bases:
                kept.remove(base)
            if not kept:
                del self.class_bases[name]
        for name in facts.disabled:
            self._disabled_count[name] -= 1
            if not self._disabled_count[name]:
                del self._disabled_count[name]
                self.disabled_functions.discard(name)
        writes = self.attribute_writes
        for attr in set(facts.attribute_names):
            rest = [entry for entry in writes[attr] if entry[0] != path]
            if rest:
                writes[attr] = rest
            else:
                del writes[attr]
        self._texts.pop(path, None)
        self._number_uses.clear()
        self._kind_cache.clear()

    def __contains__(self, path: str) -> bool:
        return path in self._files

    @property
    def self_attribute_writes(self) -> "_SelfWrites":
        """attribute name -> [(path, line)] of `self.attr = ...` / `self.attr op= ...` in any class, in the
        files' order: read from each file's facts when asked (only the buffer fix asks, for a few names
        per run; a table of every write, kept for the whole run, held 4.9 MiB on the zoo)."""
        return _SelfWrites(self._files)

    def python_number_uses(self, attr: str) -> list[tuple[str, int, str]]:
        """(path, line, how) wherever code in the run needs ``<obj>.attr`` as a Python number: "round(",
        "json.dumps(", "an f-string"... Searched on demand (the buffer fix asks for one name at a time), so
        indexing pays nothing for it; a literal search for ``.attr`` finds the lines to look at."""
        if attr in self._number_uses:
            return self._number_uses[attr]
        found: list[tuple[str, int, str]] = []
        needle = re.compile(r"\." + re.escape(attr) + r"\b")
        for path, kept in self._texts.items():
            text = kept if isinstance(kept, str) else kept()
            last_line = -1
            for match in needle.finditer(text):
                start = text.rfind("\n", 0, match.start()) + 1
                if start == last_line:
                    continue  # one look per line
                last_line = start
                end = text.find("\n", match.end())
                line_text = text[start : end if end >= 0 else len(text)]
                how = _number_use_on_line(line_text, attr)
                if how is not None:
                    found.append((path, text.count("\n", 0, start) + 1, how))
        self._number_uses[attr] = found
        return found

    def class_kind(self, name: str, _seen: frozenset[str] = frozenset()) -> str | None:
        """"module", "autograd_function" or None for a class name defined somewhere in the run."""
        if name in self._kind_cache:
            return self._kind_cache[name]
        if name in _seen or name not in self.class_bases:
            return None
        kind = None
        for base in self.class_bases[name]:
            kind = base_kind(base, lambda n: self.class_kind(n, _seen | {name}))
            if kind:
                break
        self._kind_cache[name] = kind
        return kind


class _SelfWrites:
    """``ProjectIndex.self_attribute_writes``: a read-only mapping over the files' facts."""

    __slots__ = ("_files",)

    def __init__(self, files: dict[str, _FileFacts]) -> None:
        self._files = files

    def _find(self, attr: str) -> list[tuple[str, int]]:
        out: list[tuple[str, int]] = []
        for path, facts in self._files.items():
            names = facts.self_attribute_names
            if attr in names:  # a scan in C; the pairs are built for the few files that match
                out.extend((path, line) for name, line in zip(names, facts.self_attribute_lines) if name == attr)
        return out

    def get(self, attr: str, default=None):
        return self._find(attr) or default

    def __getitem__(self, attr: str) -> list[tuple[str, int]]:
        found = self._find(attr)
        if not found:
            raise KeyError(attr)
        return found

    def __contains__(self, attr: str) -> bool:
        return any(attr in facts.self_attribute_names for facts in self._files.values())

    def __bool__(self) -> bool:
        return any(facts.self_attribute_names for facts in self._files.values())


def _number_use_on_line(line: str, attr: str) -> str | None:
    """How ``line`` needs ``<obj>.attr`` as a Python number ("round(", "json.dumps(", "an f-string"), or None."""
    for match in _CONVERT_RE.finditer(line):
        if match.group(2) == attr:
            return f"{match.group(1)}("
    for match in _SERIALISE_RE.finditer(line):
        if any(m.group(1) == attr for m in _DOTTED_ATTR_RE.finditer(match.group(2))):
            return f"{match.group(1).lstrip('.')}("
    for match in _FSTRING_RE.finditer(line):
        for fld in _FIELD_RE.finditer(match.group(0)):
            if any(m.group(1) == attr for m in _DOTTED_ATTR_RE.finditer(fld.group(1))):
                return "an f-string"
    return None


class _LineOf:
    """1-based line of an offset in ``text``; the newline offsets are found once, on first use."""

    def __init__(self, text: str) -> None:
        self._text = text
        self._starts: list[int] | None = None

    def __call__(self, offset: int) -> int:
        if self._starts is None:
            self._starts = [m.start() for m in _NEWLINE_RE.finditer(self._text)]
        return bisect.bisect_left(self._starts, offset) + 1


def base_kind(base: str, lookup) -> str | None:
    """Classify one base expression as written (``nn.Module``, ``MyBase``, ``torch.autograd.Function``)."""
    if base in MODULE_ROOTS or base.startswith(("nn.", "torch.nn.")) and is_torch_module_base(
        "torch.nn." + base.rsplit(".", 1)[-1]
    ):
        return "module"
    if base in FUNCTION_ROOTS:
        return "autograd_function"
    return lookup(base.rsplit(".", 1)[-1])
