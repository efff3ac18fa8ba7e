"""The project model: files linked by imports, classes by module-qualified name, and the call graph
along which compiled context and tensor facts propagate across files.

Built from ``FileSummary`` objects (every Python file under the root); the derived facts are
computed once, on the first question, and recomputed only when a file's text changes (a fix round).
"""

from __future__ import annotations

import ast
import dataclasses
import re
from collections import Counter, OrderedDict, deque
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable, Iterable, Optional

from fusionlint.analysis.names import through_aliases
from fusionlint.analysis.project import MODULE_ROOTS, is_autograd_function_base, is_torch_module_base
from fusionlint.pickling import by_fields
from fusionlint.plan_inputs import PlanInputStore
from fusionlint.project.reasons import BREAK, At, Reason, TwoCalls, Why, render
from fusionlint.project.summary import (
    DIM_SIZE, DIM_SIZES, HOST_VALUE, LOOP_INDEX, NO_NAMES, NOT_NONE, SIZE, SIZES_PASSED, SELF_TRUTH, SELF_TRUTH_AT_ENTRY,
    AttrFact, CallSite, ClassSummary, FileSummary, FunctionSummary, call_line, forget_shared, summarize,
)
from fusionlint.semantic.param_names import NON_TENSOR_PARAM
from fusionlint.semantic.values import TENSOR, Value

# a base that makes a class a tensor subclass, as the summary resolves it
TENSOR_BASES = frozenset({"torch.Tensor", "torch._tensor.Tensor"})

_COMPILE_DECORATORS = ("torch.compile", "torch.compiler.compile")
_DISABLE_DECORATORS = ("torch.compiler.disable", "torch._dynamo.disable", "torch._disable_dynamo")
_FORWARD_REPLACING_DECORATORS = frozenset({"use_experts_implementation"})
_TENSOR_ATTR_KINDS = frozenset({"param", "buffer", "tensor"})
# ``Project.attributes`` answers kept (least recently asked dropped first): one answer copies the facts
# of a class's bases and subclasses, and keeping one for every class the run asks about grew with the
# corpus (24 MiB of (file, fact) pairs on the zoo). The lint phase asks about the classes of the file
# at hand, again and again, and about few others.
_ATTRIBUTES_KEPT = 256


@by_fields
@dataclass(slots=True)  # one per compiled function (13,530 on the zoo): no __dict__ each
class FunctionFacts:
    """What the project knows about one compiled function."""

    frames: tuple[str, ...]  # the call chain that makes torch.compile trace it: ("Net.forward", "self.mix")
    kind: str  # "forward" | "autograd_forward" | "autograd_backward" | "compiled" | "helper"
    # name -> why it is a tensor (``reasons``: text with the places it names, shown with their lines by the lint)
    tensor_params: dict[str, Why] = field(default_factory=dict)
    # callees as written ("self.embed", "helpers.norm") whose project function returns a tensor
    tensor_calls: frozenset[str] = frozenset()
    # callees as written whose project function returns tuples: (the positions where every return has
    # a tensor, those where it has a boolean tensor): what `h, mask = to_dense_batch(x, batch)` binds
    item_calls: dict[str, tuple[frozenset[int], frozenset[int]]] = field(default_factory=dict)
    # callees as written that only hand back one of their arguments (`default(val, d)`: `val if
    # exists(val) else d`): (their parameters in order, those returned). Whether the call gives a
    # tensor depends on what each call passes, so they are in no `tensor_calls`
    passthrough_calls: dict[str, tuple[tuple[str, ...], tuple[str, ...]]] = field(default_factory=dict)
    # a helper's parameters that every compiled call passes the same constant: name -> its repr
    # (`set_attention_type("original_full")`), or None once two calls differ or one is not a constant
    constants: dict[str, Optional[str]] = field(default_factory=dict)
    # a helper's parameters whose value changes from one compiled call to another: name -> how
    # ("'sum' at a.py:12, 'max' at b.py:40"; "a tensor size at a.py:12"). A helper that is a
    # Dynamo frame of its own (it breaks the graph) is compiled again for each value (FL208). None: none
    varying: Optional[dict[str, Why]] = None
    # calling it breaks the graph (fusionlint.project.breaks), so Dynamo runs it as a frame of its own:
    # where ("line 48", "`coalesce` at line 209, which breaks"), None when no break is sure
    splits: Optional[Why] = None
    splits_every_call: bool = False  # ... on every call, not only on some path
    # callees as written whose every call breaks: the caller resumes in a new frame after each
    breaking_calls: frozenset[str] = frozenset()
    # callees as written that break and return a value read from a tensor (PyG's `maybe_num_nodes`): the
    # caller's resumed frame gets the value as a constant
    host_calls: frozenset[str] = frozenset()
    # callees as written that break and return a sparse tensor (PyG's `to_torch_coo_tensor`): the caller's
    # resumed frame cannot take it as an input
    sparse_calls: frozenset[str] = frozenset()
    # callees as written that break and return tuples with sizes at these positions (Longformer's
    # `_pad_to_window_size` returns `padding_len` first): the caller's resumed frame gets them as ints
    size_calls: Optional[dict[str, frozenset[int]]] = None
    # a decorator's wrapper (`wrapped_func` of `@deprecate_kwarg`): the functions it decorates that break
    # the graph when called, when there are two or more: (qualname, path, where it breaks) each. One code
    # object that Dynamo compiles as a frame of its own for each of them (FL209)
    shared_by: tuple[tuple[str, str, Why], ...] = ()

    @property
    def chain(self) -> str:
        return " → ".join(self.frames)


def module_name(path: Path) -> tuple[str, bool]:
    """``pkg/sub/mod.py`` -> ("pkg.sub.mod", False), walking up while directories are packages."""
    is_package = path.name == "__init__.py"
    parts = [] if is_package else [path.stem]
    directory = path.parent
    if is_package:
        parts.append(directory.name)
        directory = directory.parent
    while (directory / "__init__.py").is_file() and directory != directory.parent:
        parts.append(directory.name)
        directory = directory.parent
    return ".".join(reversed(parts)) or path.stem, is_package


class Project:
    def __init__(self, keep_units: bool = False) -> None:
        # keep_units: re-summarise a changed file one top-level definition at a time (an editor's model)
        self.keep_units = keep_units
        self.files: dict[str, FileSummary] = {}  # display path -> summary
        self.modules: dict[str, FileSummary] = {}
        self._facts: Optional[dict[tuple[str, str], FunctionFacts]] = None
        self._compiled_modules: Optional[set[str]] = None
        self._class_memo: dict = {}
        self._attributes: OrderedDict = OrderedDict()  # (path, class) -> ``attributes``, the last few
        # the run's regex name index (fusionlint.analysis.project): the last fallback for a base's kind
        self.name_index = None
        # while the propagation runs: module -> qualnames of its functions the propagation looked up
        # (found or not); kept with its facts (``propagation_view``)
        self._probing: Optional[dict[str, set[str]]] = None
        self._probes: Optional[dict[str, frozenset[str]]] = None
        # called before the propagation runs: the findings cache loads summaries without their
        # function bodies (fusionlint/cache/session.py) and puts them back only when they are read
        self.before_propagation: Optional[Callable[[], None]] = None
        self._name_generation = -1  # the name index's generation the caches below were built on
        self._bodies_dropped = False  # ``drop_bodies``: the propagation cannot run again
        # where a run keeps what each summarised file's lint reads of CPython's tree (None: nowhere)
        self.plan_inputs: Optional[PlanInputStore] = None

    # -- building -------------------------------------------------------------------------------
    def add(self, shown: str, path: Optional[Path], text: str) -> None:
        """Summarise ``text`` (the file at ``path``, shown as ``shown``); unparsable files are left out."""
        old = self.files.get(shown)
        if old is not None and old.text_hash == hash(text):
            return
        if old is not None and path is None:  # a new text of a known file (a fix round): same module
            module, is_package = old.module, old.is_package
        else:
            module, is_package = module_name(path if path is not None else Path(shown))
        store = self.plan_inputs
        with_tree = (lambda tree: store.put(shown, text, tree)) if store is not None else None
        summary = summarize(text, shown, module, is_package, previous=old, keep_units=self.keep_units, with_tree=with_tree)
        if old is None and summary is None:
            return  # unparsable before and now: nothing the derived facts read has changed
        if summary is None and self.keep_units:
            # An editor's buffer in the middle of an edit (`self.norm(` typed): the last text that parsed
            # stands for the file (the buffer's own lint reports the syntax error), so the other files'
            # findings do not come and go with the keystrokes, and the propagated facts still hold when
            # the text parses again as it was
            return
        if old is not None and summary is not None and summary.module == old.module:
            # A new text of the same file keeps its place: the files' order decides which file holds a
            # module name and which chain reaches a function first, so the propagated facts of the
            # order before hold for the new text when what the propagation read of it is the same (an
            # edit in an editor's buffer outside the compiled code: a full propagation is seconds in a
            # project as large as transformers).
            facts_hold = self._facts_hold(old, summary)
            self.files[shown] = summary
            if self.modules.get(old.module) is old:
                self.modules[old.module] = summary
            if facts_hold:
                self._class_memo = {}  # (they hold the summaries they were made from)
                self._attributes = OrderedDict()
            else:
                self._forget()
            return
        if old is not None:
            if self.modules.get(old.module) is old:  # another file may hold the name (two `train.py` scripts)
                del self.modules[old.module]
            del self.files[shown]
        if summary is not None:
            self.files[shown] = summary
            self.modules.setdefault(module, summary)
        self._forget()

    def _facts_hold(self, old: FileSummary, new: FileSummary) -> bool:
        """Are the propagated facts (computed with ``old``) those the propagation would give with ``new``?"""
        if self._facts is None or self._probes is None or self._bodies_dropped:
            return False
        entered = frozenset(qualname for path, qualname in self._facts if path == old.path)
        probed = self._probes.get(old.module, frozenset())
        return propagation_view(old, entered, probed) == propagation_view(new, entered, probed)

    def remove(self, shown: str) -> None:
        """Take a file out (deleted, or no longer readable)."""
        old = self.files.pop(shown, None)
        if old is not None:
            if self.modules.get(old.module) is old:
                del self.modules[old.module]
            self._forget()

    # -- hooks for the findings cache (fusionlint/cache/session.py) -----------------------------------
    def add_summary(self, summary: FileSummary) -> None:
        """``add`` with the summary already made (a cached one for unchanged content)."""
        self.remove(summary.path)
        self.files[summary.path] = summary
        self.modules.setdefault(summary.module, summary)
        self._forget()

    def reorder(self, shown_in_order: list[str]) -> None:
        """The model as if its files had been added in this order (others after, as they are): which
        file of a module name is its module goes by order. For summaries taken in out of order."""
        files = {shown: self.files[shown] for shown in shown_in_order if shown in self.files}
        files.update(self.files)
        self.files, self.modules = files, {}
        for summary in files.values():
            self.modules.setdefault(summary.module, summary)
        self._forget()

    def export_facts(self) -> Optional[dict[tuple[str, str], FunctionFacts]]:
        """The propagated facts, if computed (to be saved and handed to ``import_facts`` later)."""
        return self._facts

    def export_probes(self) -> Optional[dict[str, frozenset[str]]]:
        """The functions the propagation looked up, by module (with the facts: ``propagation_view``)."""
        return self._probes if self._facts is not None else None

    def import_facts(self, facts: dict[tuple[str, str], FunctionFacts], probes: Optional[dict] = None) -> None:
        """Take propagated facts computed earlier over exactly these summaries and name index."""
        self._forget()
        self._name_generation = getattr(self.name_index, "generation", 0)
        self._facts = facts
        self._probes = probes

    def _probe(self, summary: FileSummary, qualname: str) -> None:
        if self._probing is not None:
            self._probing.setdefault(summary.module, set()).add(qualname)
    # -- end hooks

    def _forget(self) -> None:
        self._facts = None
        self._compiled_modules = None
        self._class_memo = {}
        self._attributes = OrderedDict()

    def _fresh(self) -> None:
        """Drop derived facts when the name index they fell back on has changed since."""
        generation = getattr(self.name_index, "generation", 0)
        if generation != self._name_generation:
            self._name_generation = generation
            self._forget()

    def has(self, shown: str) -> bool:
        return shown in self.files

    def has_compiled(self, shown: str) -> bool:
        """Does any function of this file run under torch.compile (reached from anywhere in the project)?"""
        summary = self.files.get(shown)
        if summary is None:
            return False
        self._fresh()
        self.function_facts(shown, "")
        assert self._facts is not None
        if self._compiled_modules is None:
            self._compiled_modules = {path for path, _ in self._facts}
        return summary.path in self._compiled_modules

    # -- symbols --------------------------------------------------------------------------------
    def resolve(self, qual: str, depth: int = 0):
        """("class", file, ClassSummary) / ("function", file, FunctionSummary) / None for a dotted name."""
        if depth > 8 or not qual:
            return None
        parts = qual.split(".")
        for i in range(len(parts) - 1, 0, -1):
            summary = self.modules.get(".".join(parts[:i]))
            if summary is None:
                continue
            found = self._in_file(summary, parts[i:], depth)
            if found is not None:
                return found
        return None

    def binds_logger(self, qual: str, depth: int = 0) -> bool:
        """Is the dotted name ``pkg.utils.logger`` a module-level logger of a project file (followed
        through re-exports: ``from .log import logger`` in ``pkg/utils/__init__.py``)?"""
        module, _, name = qual.rpartition(".")
        summary = self.modules.get(module)
        if summary is None or depth > 8:
            return False
        if name in getattr(summary, "loggers", ()):
            return True
        target = summary.aliases.get(name)
        return target is not None and target != qual and self.binds_logger(target, depth + 1)

    def _in_file(self, summary: FileSummary, rest: list[str], depth: int):
        head = rest[0]
        cls = summary.classes.get(head)
        if cls is not None:
            if len(rest) == 1:
                return ("class", summary, cls)
            if len(rest) == 2 and rest[1] in cls.methods:
                self._probe(summary, cls.qual(rest[1]))
                return ("function", summary, summary.functions[cls.qual(rest[1])])
            return None
        self._probe(summary, head)
        fn = summary.functions.get(head)
        if fn is not None and len(rest) == 1:
            return ("function", summary, fn)
        target = summary.aliases.get(head)
        if target is not None and target != f"{summary.module}.{head}":
            return self.resolve(".".join([target, *rest[1:]]), depth + 1)
        sub = self.modules.get(f"{summary.module}.{head}")
        if sub is not None and len(rest) > 1:
            return self._in_file(sub, rest[1:], depth + 1)
        if sub is None and len(rest) == 1:
            # the modules this one star-imports (`from .conv import *`), in import order: they bind names, so
            # only a name is looked up there (not `pkg.a.b`: every shorter prefix of a dotted name missing
            # from a partial tree would search hundreds of star imports again, transformers'
            # models/__init__.py among them); each answer is remembered, a cycle finds nothing
            memo_key = ("star", summary.module, head)
            memo = self._class_memo
            if memo_key in memo:
                return memo[memo_key]
            memo[memo_key] = None
            for key, star in summary.aliases.items():
                if key[:1] == "*" and star != summary.module:
                    found = self.resolve(f"{star}.{head}", depth + 1)
                    if found is not None:
                        memo[memo_key] = found
                        return found
        return None

    def _class(self, summary: FileSummary, written: str):
        """The project class a base/constructor expression (resolved through imports) names, if any."""
        if written in summary.classes:
            return summary, summary.classes[written]
        found = self.resolve(written) if "." in written else None
        if found is not None and found[0] == "class":
            return found[1], found[2]
        return None

    def _class_by_name(self, written: str):
        """Fallback for a base the imports do not lead to (``from .layers import *``, a vendored copy):
        a project class of that last name, as the per-run name index has always done."""
        if "by-name" not in self._class_memo:
            names: dict[str, tuple[FileSummary, ClassSummary]] = {}
            for summary in self.files.values():
                for cls in summary.classes.values():
                    names.setdefault(cls.name, (summary, cls))
            self._class_memo["by-name"] = names
        return self._class_memo["by-name"].get(written.rsplit(".", 1)[-1])

    # -- classes --------------------------------------------------------------------------------
    def class_kind(self, summary: FileSummary, cls: ClassSummary, seen: frozenset = frozenset()) -> Optional[str]:
        if not seen:
            self._fresh()
        key = ("kind", summary.path, cls.name)
        if key in self._class_memo:
            return self._class_memo[key]
        kind = None
        for base in cls.bases:
            if base in MODULE_ROOTS or is_torch_module_base(base):
                kind = "module"
            elif is_autograd_function_base(base):
                kind = "autograd_function"
            else:
                found = self._class(summary, base) or self._class_by_name(base)
                if found is not None and (found[0].path, found[1].name) not in seen:
                    kind = self.class_kind(found[0], found[1], seen | {(summary.path, cls.name)})
                elif found is None and self.name_index is not None:
                    kind = self.name_index.class_kind(base.rsplit(".", 1)[-1])
            if kind:
                break
        self._class_memo[key] = kind
        return kind

    def tensor_classes(self, summary: FileSummary) -> frozenset[str]:
        """The names this file's code resolves to project classes that subclass ``torch.Tensor`` (its
        own, and those its imports name: PyG's ``EdgeIndex``, ``Index``): ``isinstance(x, Index)`` then
        guards a tensor."""
        key = ("tensor-classes", summary.path)
        if key not in self._class_memo:
            found = {name for name, cls in summary.classes.items() if self._is_tensor_class(summary, cls)}
            for target in set(summary.aliases.values()):
                hit = self.resolve(target) if "." in target else None
                if hit is not None and hit[0] == "class" and self._is_tensor_class(hit[1], hit[2]):
                    found.add(target)
            self._class_memo[key] = frozenset(found)
        return self._class_memo[key]

    def _is_tensor_class(self, summary: FileSummary, cls: ClassSummary) -> bool:
        return any(base in TENSOR_BASES for _, c in self.mro(summary, cls) for base in c.bases)

    def mro(self, summary: FileSummary, cls: ClassSummary) -> list[tuple[FileSummary, ClassSummary]]:
        key = ("mro", summary.path, cls.name)
        if key not in self._class_memo:
            out: list[tuple[FileSummary, ClassSummary]] = []
            seen: set[tuple[str, str]] = set()
            todo = [(summary, cls)]
            while todo and len(out) < 64:
                s, c = todo.pop(0)
                if (s.path, c.name) in seen:
                    continue
                seen.add((s.path, c.name))
                out.append((s, c))
                bases = [self._class(s, b) for b in c.bases]
                todo[:0] = [b for b in bases if b is not None]
            self._class_memo[key] = out
        return self._class_memo[key]

    def _subclasses(self) -> dict[tuple[str, str], list[tuple[FileSummary, ClassSummary]]]:
        key = ("subclasses",)
        if key not in self._class_memo:
            subs: dict[tuple[str, str], list] = {}
            for summary in self.files.values():
                for cls in summary.classes.values():
                    for base in cls.bases:
                        found = self._class(summary, base)
                        if found is not None:
                            subs.setdefault((found[0].path, found[1].name), []).append((summary, cls))
            self._class_memo[key] = subs
        return self._class_memo[key]

    def subclasses(self, summary: FileSummary, cls: ClassSummary) -> list[tuple[FileSummary, ClassSummary]]:
        key = ("subs", summary.path, cls.name)
        if key in self._class_memo:  # (the pairs are those of ``_subclasses``: the memo is a list of references)
            return self._class_memo[key]
        subs = self._subclasses()
        out, seen, todo = [], {(summary.path, cls.name)}, list(subs.get((summary.path, cls.name), ()))
        while todo and len(out) < 256:
            pair = todo.pop(0)
            s, c = pair
            if (s.path, c.name) in seen:
                continue
            seen.add((s.path, c.name))
            out.append(pair)
            todo.extend(subs.get((s.path, c.name), ()))
        self._class_memo[key] = out
        return out

    def attributes(self, summary: FileSummary, cls: ClassSummary) -> dict[str, list[tuple[FileSummary, AttrFact]]]:
        """attr -> facts from the class, its bases (MRO order) and its subclasses, with the defining file."""
        key = (summary.path, cls.name)
        kept = self._attributes
        if key in kept:
            kept.move_to_end(key)
            return kept[key]
        out: dict[str, list] = {}
        for s, c in self.attribute_sources(summary, cls):
            for attr, facts in c.attrs.items():
                out.setdefault(attr, []).extend((s, f) for f in facts)
        kept[key] = out
        if len(kept) > _ATTRIBUTES_KEPT:
            kept.popitem(last=False)
        return out

    def attribute_facts(self, summary: FileSummary, cls: ClassSummary, attr: str) -> list[tuple[FileSummary, AttrFact]]:
        """``attributes(summary, cls).get(attr, [])``, without building the other attributes' lists
        (what the propagation asks, for many classes, one attribute at a time)."""
        key = (summary.path, cls.name)
        if key in self._attributes:
            return self._attributes[key].get(attr, [])
        return [(s, f) for s, c in self.attribute_sources(summary, cls) for f in c.attrs.get(attr, ())]

    def submodule_ctors(self, summary: FileSummary, cls: ClassSummary) -> dict[str, tuple[str, ...]]:
        """attr -> the constructors of the modules it is set to, in ``attributes``' order (where each is set:
        ``submodule_set_at``)."""
        out: dict[str, dict[str, None]] = {}
        for attr, facts in self.attributes(summary, cls).items():
            for _, fact in facts:
                if fact.kind in MODULE_KINDS and fact.ctor:
                    out.setdefault(attr, {})[fact.ctor] = None
        return {attr: tuple(ctors) for attr, ctors in out.items()}

    def submodule_set_at(self, summary: FileSummary, cls: ClassSummary, attr: str, ctor: str) -> Optional[str]:
        """"path:line" of the first write that sets ``attr`` to a ``ctor`` module (``submodule_ctors``). The
        only place the lint reads an attribute fact's line, asked when a finding shows it: the findings cache
        digests ``attributes`` without lines, so that a line inserted above a base class keeps its
        subclasses' entries (the zoo: 824 of them for a line at the top of transformers' modeling_utils.py),
        and records this answer on its own."""
        for owner, fact in self.attributes(summary, cls).get(attr, ()):
            if fact.kind in MODULE_KINDS and fact.ctor == ctor:
                return f"{owner.path}:{fact.line}"
        return None

    def site_line(self, path: str, qualname: str, site: int) -> Optional[int]:
        """The line of a place the propagated facts name (``fusionlint.project.reasons.At``): the
        ``site``-th call of a function, or its first sure break (BREAK). The facts hold no lines (an edit
        that only moves lines keeps them); the lint asks this where it shows a fact's reason."""
        summary = self.files.get(path)
        fn = summary.functions.get(qualname) if summary is not None else None
        if fn is None:
            return None
        if site == BREAK:
            return fn.break_line or None
        return call_line(fn, site)

    def shown(self, why: Optional[Why]) -> Optional[str]:
        """The text of a fact's reason with the lines of the places it names (None stays None)."""
        return None if why is None else render(why, lambda at: self.site_line(at.path, at.qualname, at.site))

    def attribute_sources(self, summary: FileSummary, cls: ClassSummary) -> list[tuple[FileSummary, ClassSummary]]:
        """The classes ``attributes`` gathers from, in its order: the class, its bases, its subclasses."""
        return [*self.mro(summary, cls), *self.subclasses(summary, cls)]

    def attr_class(self, summary: FileSummary, fact: AttrFact):
        """The project class an ``object`` attribute is an instance of, if it is a project class."""
        return self._class(summary, fact.ctor) if fact.kind == "object" and fact.ctor else None

    def submodule_items(self, summary: FileSummary, cls: ClassSummary, attr: str) -> Optional[tuple[int, frozenset[int]]]:
        """What ``a, b, c = self.<attr>(x)`` unpacks when ``attr`` is only ever a project module whose
        ``forward`` returns tuples of one length (``FunctionSummary.items``): (the length, the
        positions that are surely no tensor in every such class), else None."""
        found: Optional[tuple[int, frozenset[int]]] = None
        for owner, fact in self.attributes(summary, cls).get(attr, ()):
            target = self.attr_class(owner, fact)
            if target is None or self.forward_replaced(*target):
                return None
            forward = self.method(*target, "forward")
            items = forward[1].items if forward is not None else None
            if items is None or (found is not None and found[0] != items[0]):
                return None
            found = items if found is None else (items[0], found[1] & items[1])
        return found

    def forward_replaced(self, summary: FileSummary, cls: ClassSummary) -> bool:
        """True when the ``forward`` that instances of ``cls`` run was swapped for a dispatcher by a class
        decorator (``@use_experts_implementation``) on ``cls`` or on the base it inherits ``forward`` from:
        the decorator assigns the class's ``forward``, so subclasses that do not define their own get the
        dispatcher too (transformers 5.24: ``BeamExperts(DeepseekV4Experts)``)."""
        for _, c in self.mro(summary, cls):
            if any(d.rsplit(".", 1)[-1] in _FORWARD_REPLACING_DECORATORS for d in c.decorators):
                return True
            if "forward" in c.methods:
                return False
        return False

    def method(self, summary: FileSummary, cls: ClassSummary, name: str, skip_self: bool = False):
        for s, c in self.mro(summary, cls)[1 if skip_self else 0 :]:
            if name in c.methods:
                self._probe(s, c.qual(name))
                return s, s.functions[c.qual(name)]
        return None

    # -- the compiled context -------------------------------------------------------------------
    def propagate(self) -> None:
        """Run the project-wide propagation now if it is not done: before ``--jobs`` workers fork,
        so that it is computed once and shared, not once in every worker."""
        self._fresh()
        if self._facts is None:
            if self._bodies_dropped:  # it would read empty bodies and compute other facts
                raise RuntimeError("the project model's function bodies were dropped: it cannot propagate again")
            if self.before_propagation is not None:
                self.before_propagation()
            self._probing = {}
            try:
                self._facts = _Propagation(self).run()
                self._probes = {module: frozenset(names) for module, names in self._probing.items()}
            finally:
                self._probing = None

    def drop_bodies(self) -> None:
        """Free what only the propagation reads (call sites, returned values, tensor uses), once it
        has run, for a run in which no summary changes any more (a read-only run: every linted text is
        checked to be the one summarised). They are about 30 % of the summaries' memory (timm: 23.8 -> 16.6 MiB traced)."""
        self.propagate()
        for summary in self.files.values():
            for fn in summary.functions.values():
                # shared empties: one new empty list (or frozenset) per function was 10 % of what stays
                fn.calls, fn.returns, fn.tensor_uses = (), (), NO_NAMES
        # only the findings cache reads them (export_probes), and a run with a cache keeps its bodies
        self._probes = None
        # the MROs and subclass lists the propagation asked for (4.5 MiB traced on the zoo): the lint
        # phase asks again only for the classes of the files it lints
        self._class_memo = {}
        forget_shared()  # what no summary is made from any more: the table of shared call values
        self._bodies_dropped = True

    def function_facts(self, shown: str, qualname: str) -> Optional[FunctionFacts]:
        self.propagate()
        summary = self.files.get(shown)
        if summary is None:
            return None
        return self._facts.get((summary.path, qualname))


_UNSEEN = object()  # a memo's slot not filled yet (None is an answer: no callee)
MODULE_KINDS = frozenset({"object", "modules"})  # attribute facts of a module set to the attribute


class _Passed:
    """The constants compiled calls pass one parameter, as (the constant, the call's place, the caller's
    facts), one per constant and caller, in the order seen; kept as what is asked of them (a popular
    helper's list was scanned whole at each call: 2.3 M comparisons on transformers)."""

    __slots__ = ("first", "second", "seen")

    def __init__(self) -> None:
        self.first: Optional[tuple[str, At, FunctionFacts]] = None
        self.second = None  # the first one whose constant is not the first's
        self.seen: set[tuple[str, int]] = set()  # (constant, id of the caller's facts)

    def other_than(self, value: str) -> Optional[tuple[str, At, FunctionFacts]]:
        """The first call seen that passed another constant than ``value``."""
        if self.first is not None and self.first[0] != value:
            return self.first
        return self.second

    def add(self, value: str, at: At, caller: FunctionFacts) -> None:
        if (value, id(caller)) in self.seen:  # (callers' facts live as long as the propagation)
            return
        self.seen.add((value, id(caller)))
        if self.first is None:
            self.first = (value, at, caller)
        elif self.second is None and value != self.first[0]:
            self.second = (value, at, caller)


class _Propagation:
    """Entry points, then a worklist over call sites: callees become compiled (first chain wins) and
    the tensor-ness of each argument flows into the callee's parameter."""

    def __init__(self, project: Project) -> None:
        self.p = project
        self.facts: dict[tuple[str, str], FunctionFacts] = {}
        self.where: dict[tuple[str, str], tuple[FileSummary, FunctionSummary]] = {}
        self.queue: deque[tuple[FileSummary, FunctionSummary]] = deque()
        # how often each (path, qualname) is in the queue: `(file, fn) in self.queue` compared the
        # summaries field by field (dataclass __eq__), 18 M comparisons and ~60 % of the
        # propagation's time on transformers
        self.queued: Counter = Counter()
        self.returns: set[tuple[str, str]] = set()  # compiled functions that return a tensor
        # (id of the callee's facts, parameter) -> the constants compiled calls pass it
        self.passed: dict[tuple, _Passed] = {}
        # (id of the callee's facts, parameter) -> why it varies: a size, a loop index... ("sure"), two
        # callers passing other constants ("pairs": how, the two callers), a caller's parameter that
        # varies ("derived": how, the caller's facts, its parameter); sorted out after the propagation
        # (_keep_cocompiled_varying): constants that differ only between calls of separately compiled
        # models recompile nothing
        self.why_varying: dict[tuple, dict] = {}
        # a decorator's wrapper -> the keys of the functions it decorates (the tuples ``facts`` is keyed by)
        self.decorated: dict[tuple[str, str], list[tuple[str, str]]] = {}
        # id of a function -> the callee of each of its call sites, found when first asked (_UNSEEN before):
        # what a site reaches depends only on the summaries, and the rounds ask again for every site of
        # every re-queued function (transformers: 368,000 questions about 56,000 sites, half of the
        # propagation's time). One list per function, not an entry per site: what the propagation keeps
        # only while it runs is allocated among the facts it keeps, and the memory it held is not given
        # back (an entry per site left the process 12 MiB larger after it)
        self.site_callees: dict[int, list] = {}
        self.site_overrides: dict[int, list] = {}  # as ``site_callees``, for ``_overrides``
        # (file, function, how, target) -> (the call site that stands for a call whose result a value uses,
        # its callee or _UNSEEN)
        self.result_sites: dict[tuple[str, str, str, str], list] = {}
        self.uses_results: dict[tuple[str, str], bool] = {}  # ``_uses_call_results`` of each entered function

    def run(self) -> dict[tuple[str, str], FunctionFacts]:
        for summary in list(self.p.files.values()):
            self._entries(summary)
        steps = 0
        # Returns flow back to call sites, which may make more arguments tensors, which may make more
        # returns tensors: a few rounds (each one re-reads only functions that use a call's result).
        for _ in range(4):
            while self.queue and steps < 200_000:
                steps += 1
                summary, fn = self.queue.popleft()
                self.queued[(summary.path, fn.qualname)] -= 1
                self._calls(summary, fn)
            new = {
                key for key, (summary, fn) in self.where.items()
                if key not in self.returns and fn.returns and _passes_through(fn) is None
                and all(self._tensor(value, summary, fn, self.facts[key]) for value in fn.returns)
            }
            if not new:
                break
            self.returns |= new
            for key, w in self.where.items():
                uses = self.uses_results.get(key)
                if uses is None:
                    uses = self.uses_results[key] = _uses_call_results(w[1])
                if uses:
                    self._queue(*w)
        for key, (summary, fn) in self.where.items():
            self.facts[key].tensor_calls = frozenset(
                site.written for i, site in enumerate(fn.calls)
                if site.written and self.returns and self._returns_tensor(self._site_callee(summary, fn, i))
            ) or NO_NAMES
            for i, site in enumerate(fn.calls):
                if site.written and site.written not in self.facts[key].item_calls:
                    items = self._returned_items(self._site_callee(summary, fn, i))
                    if items is not None:
                        self.facts[key].item_calls[site.written] = items
                if site.written and site.how in ("name", "dotted"):
                    found = self._site_callee(summary, fn, i)
                    returned = _passes_through(found[1]) if found is not None else None
                    if returned is not None:
                        names = tuple(p.name for p in found[1].params)
                        self.facts[key].passthrough_calls[site.written] = (names, returned)
        graph = _CallGraph(self._splits())
        self._keep_cocompiled_varying(graph.roots)
        self._shared_wrappers(graph)
        return self.facts

    def _splits(self) -> list[tuple[FunctionFacts, FunctionFacts, CallSite, bool]]:
        """Which compiled functions break the graph when called: one with a sure break of its own, or a
        call to one (on every call when the break and the call are on every call's path)."""
        # (caller, callee, call site, whether the constants the call passes rule out every break of the
        # callee's own, the site's index in the caller), flat: one small tuple per call between compiled functions
        edges: list[tuple[FunctionFacts, FunctionFacts, CallSite, bool, int]] = []
        where_of = {id(facts): key for key, facts in self.facts.items()}
        for key, (summary, fn) in self.where.items():
            facts = self.facts[key]
            if fn.breaks and not (fn.break_conds and _breaks_ruled_out(fn.break_conds, facts.constants)):
                facts.splits = Reason((At(summary.path, fn.qualname, BREAK, False),))
                facts.splits_every_call = fn.breaks == 2
            hosts = sparse = None
            known = None  # the constants every compiled caller passes: made when a call needs them
            for i, site in enumerate(fn.calls):
                if site.conds and facts.constants:
                    if known is None:
                        known = {n: c for n, c in facts.constants.items() if c is not None}
                    if known and dead_branch(site.conds, known):
                        continue  # in a branch the constants every compiled caller passes rule out
                found = self._site_callee(summary, fn, i)
                if found is not None:
                    callee = self.facts.get((found[0].path, found[1].qualname))
                    if callee is not None and callee is not facts:
                        spared = False
                        if found[1].break_conds and site.consts is not None:
                            if known is None:
                                known = {n: c for n, c in facts.constants.items() if c is not None}
                            params = found[1].params[1:] if found[2] and not found[1].static else found[1].params
                            spared = _breaks_ruled_out(found[1].break_conds, _passed(site, params, known, found[1].star))
                        edges.append((facts, callee, site, spared, i))
                    if found[1].returns_host and site.written:
                        hosts = (hosts or set()) | {site.written}
                    if found[1].returns_sparse and site.written:
                        sparse = (sparse or set()) | {site.written}
                    if found[1].size_items and site.written:
                        if facts.size_calls is None:
                            facts.size_calls = {}
                        facts.size_calls[site.written] = found[1].size_items
            if hosts:
                facts.host_calls = frozenset(hosts)
            if sparse:
                facts.sparse_calls = frozenset(sparse)
        # the functions that break through a call (not only through a break of their own, which a
        # call's constants may rule out)
        via_calls: set[int] = set()
        for _ in range(8):  # call chains longer than this are not followed
            changed = False
            for facts, callee, site, spared, i in edges:
                if callee.splits is None or (spared and id(callee) not in via_calls):
                    continue
                if id(facts) not in via_calls:
                    via_calls.add(id(facts))
                    changed = True
                if facts.splits is None:
                    path, qual = where_of[id(facts)]
                    facts.splits = Reason((f"`{site.written or site.target}` at ", At(path, qual, i, False), ", which breaks"))
                    changed = True
                if callee.splits_every_call and site.every and not facts.splits_every_call:
                    facts.splits_every_call = True
                    changed = True
            if not changed:
                break
        breaking: dict[int, set[str]] = {}
        for facts, callee, site, spared, _ in edges:
            if site.written and callee.splits_every_call and not (spared and id(callee) not in via_calls):
                breaking.setdefault(id(facts), set()).add(site.written)
        for facts in self.facts.values():
            written = breaking.get(id(facts))
            if written:
                facts.breaking_calls = frozenset(written)
        return edges

    def _shared_wrappers(self, graph: "_CallGraph") -> None:
        """A decorator's wrapper is one code object for every function it decorates. Called from
        compiled code, it is inlined with the function it wraps, unless that function breaks the graph:
        then the wrapper is a Dynamo frame of its own, compiled again for each decorated function (its
        guards on the function it closes over and on its arguments fail: torch 2.13, measured). That
        costs a recompile when two such functions run under one compiled call: one is reached from the
        other, or both from a common caller (m2m_100's `@deprecate_kwarg` model, decoder and head
        `forward`s). In transformers 5.24.0, `@can_return_tuple` wraps 1,499 functions: 803 break on some
        path, 362 of those under one compiled call with another."""
        roots, by_id = graph.roots, graph.by_id
        for key, decorated in self.decorated.items():
            breaking = [(qual, path, self.facts[path, qual]) for path, qual in decorated if self.facts[path, qual].splits is not None]
            if len(breaking) < 2:
                continue
            first_under: dict[int, int] = {}  # a root -> the first breaking function reached from it
            together: set[int] = set()
            shared_root = None
            for i, (_, _, facts) in enumerate(breaking):
                for root in sorted(roots(facts), key=lambda r: by_id[r].frames):  # not by id: the same in every run
                    j = first_under.setdefault(root, i)
                    if j != i:
                        together.update((i, j))
                        shared_root = shared_root or (root, facts)
            if together:
                wrapper = self.facts[key]
                wrapper.shared_by = tuple(
                    sorted((breaking[i][0], breaking[i][1], breaking[i][2].splits) for i in together)
                )
                # the chain from a caller of two of them: the module whose compile shows the recompile
                path = _path_from(shared_root[0], shared_root[1], graph.callers)
                if path is not None:
                    wrapper.frames = path + wrapper.frames[-1:]

    def _enter(self, summary: FileSummary, fn: FunctionSummary, frames: tuple[str, ...], kind: str) -> Optional[FunctionFacts]:
        key = (summary.path, fn.qualname)
        facts = self.facts.get(key)
        if facts is not None:
            return facts  # (looked up when it was entered)
        self.p._probe(summary, fn.qualname)
        if any(d in _DISABLE_DECORATORS for d in fn.decorators):
            return None
        facts = self.facts[key] = FunctionFacts(frames, kind)
        self.where[key] = (summary, fn)
        if kind != "helper":
            facts.tensor_params.update(_entry_params(fn, facts.chain, kind))
        self._queue(summary, fn)
        for decorator in fn.decorators:
            self._enter_wrappers(summary, fn, decorator, facts, key)
        return facts

    def _enter_wrappers(self, summary: FileSummary, fn: FunctionSummary, decorator: str, facts: FunctionFacts,
                        key: tuple[str, str]) -> None:
        """``@checked def forward(...)``: what runs is the function ``checked`` returns, which calls
        ``forward``; Dynamo traces that wrapper too (torch 2.13: an ``.item()`` in it breaks the graph)."""
        if not decorator or decorator in _COMPILE_DECORATORS:
            return
        if "." in decorator:
            found = self.p.resolve(decorator)
            if found is None or found[0] != "function":
                return
            owner, deco = found[1], found[2]
        else:
            self.p._probe(summary, decorator)
            deco = summary.functions.get(decorator)
            if deco is None or decorator in summary.aliases:
                return
            owner = summary
        for qual in deco.wrappers:
            wrapper = owner.functions.get(qual)
            if wrapper is None:
                continue
            where = qual if owner is summary else f"{owner.module}.{qual}"
            wrapped = self._enter(owner, wrapper, facts.frames + (f"@{decorator.rsplit('.', 1)[-1]} ({where})",), "helper")
            if wrapped is None:
                continue
            self.decorated.setdefault((owner.path, qual), []).append(key)
            for param in wrapper.params:  # `def wrapper(self, x)` around `forward(self, x)`
                why = facts.tensor_params.get(param.name)
                if why is not None and param.name not in wrapped.tensor_params:
                    wrapped.tensor_params[param.name] = why

    def _entries(self, summary: FileSummary) -> None:
        for cls in summary.classes.values():
            kind = self.p.class_kind(summary, cls)
            if kind == "module" and "forward" in cls.methods:
                if not any(d.rsplit(".", 1)[-1] in _FORWARD_REPLACING_DECORATORS for d in cls.decorators):
                    self._enter(summary, summary.functions[cls.qual("forward")], (f"{cls.name}.forward",), "forward")
            elif kind == "autograd_function":
                for name in ("forward", "backward"):
                    if name in cls.methods:
                        self._enter(summary, summary.functions[cls.qual(name)], (f"{cls.name}.{name}",), f"autograd_{name}")
        for fn in summary.functions.values():
            if fn.parent is None and any(d in _COMPILE_DECORATORS for d in fn.decorators):
                self._enter(summary, fn, (fn.qualname,), "compiled")
        for target in sorted(summary.compile_targets):  # a set: sorted, so the first chain is the same in every process
            self.p._probe(summary, target)
            fn = summary.functions.get(target)
            if fn is not None:
                self._enter(summary, fn, (fn.qualname,), "compiled")
            elif target in summary.classes and "forward" in summary.classes[target].methods:
                self._enter(summary, summary.functions[summary.classes[target].qual("forward")], (f"{target}.forward",), "forward")

    # -- one function's call sites ----------------------------------------------------------------
    def _calls(self, summary: FileSummary, fn: FunctionSummary) -> None:
        facts = self.facts[(summary.path, fn.qualname)]
        known = {n: c for n, c in facts.constants.items() if c is not None}
        for i, site in enumerate(fn.calls):
            if known and dead_branch(site.conds, known):
                continue  # in a branch the constants every compiled caller passes rule out
            found = self._site_callee(summary, fn, i)
            if found is not None:
                self._flow(summary, fn, facts, known, i, site, found)
            if site.how == "self" and fn.cls:
                # `self.m()` in a method runs the override of the object's own class: a base's
                # `edge_updater` calling `self.edge_update(...)` runs GATConv's when self is a GATConv
                memo = self.site_overrides.get(id(fn))
                if memo is None:
                    memo = self.site_overrides[id(fn)] = [_UNSEEN] * len(fn.calls)
                if memo[i] is _UNSEEN:
                    memo[i] = tuple(self._overrides(summary, fn, site))
                for override in memo[i]:
                    self._flow(summary, fn, facts, known, i, site, override)

    def _overrides(self, summary: FileSummary, fn: FunctionSummary, site: CallSite):
        """(file, function, True, chain label) for each subclass of ``fn``'s class that defines the method
        ``self.<site.target>(...)`` calls."""
        cls = summary.classes.get(fn.cls)
        if cls is None:
            return
        for sub_file, sub in self.p.subclasses(summary, cls):
            if site.target not in sub.methods:
                continue
            qual = sub.qual(site.target)
            self.p._probe(sub_file, qual)
            callee = sub_file.functions.get(qual)
            if callee is not None:
                # the chain names the receiver's class: the first chain that reaches the base method may
                # come from another subclass (propagation is not per receiver)
                owner = sub.name if sub_file is summary else f"{sub_file.module}.{sub.name}"
                label = f"self.{site.target} of a {owner}"
                yield sub_file, callee, True, label

    def _flow(self, summary: FileSummary, fn: FunctionSummary, facts: FunctionFacts, known: dict, i: int,
              site: CallSite, found: tuple) -> None:
        """Enter one callee of ``fn``'s i-th call site and flow the call's arguments into its parameters."""
        callee_file, callee, skip_first, label = found
        callee_facts = self._enter(callee_file, callee, facts.frames + (label,), "helper")
        if callee_facts is None:
            return
        at = At(summary.path, fn.qualname, i, True)
        passed = None  # "passed from <caller> at <this call>": one for every parameter the call passes a tensor
        params = callee.params[1:] if skip_first and not callee.static else callee.params
        changed = False
        for param, value in zip(params, site.args):
            if param.annotation == "other" or param.name in callee.flag_params:  # the callee says what it takes
                continue  # (`flag: bool | None`, `flag = default(flag, self.training)`)
            if value is not None and param.name not in callee_facts.tensor_params and self._tensor(value, summary, fn, facts):
                passed = passed or Reason((f"passed from {facts.frames[-1]} at ", at))
                callee_facts.tensor_params[param.name] = passed
                changed = True
        if site.kwargs:
            names = {p.name for p in params if p.annotation != "other" and p.name not in callee.flag_params}
            for name, value in site.kwargs:
                if name in names and name not in callee_facts.tensor_params and self._tensor(value, summary, fn, facts):
                    passed = passed or Reason((f"passed from {facts.frames[-1]} at ", at))
                    callee_facts.tensor_params[name] = passed
                    changed = True
        if callee_facts.kind == "helper":
            # a method of this object (not `self.processor(...)`, an attribute object's __call__)
            same_object = site.how in ("self", "super") and callee.name == site.target
            changed = _pass_constants(site, params, callee_facts.constants, known, same_object, callee.star) or changed
            changed = self._note_varying(site, at, params, facts, callee_facts) or changed
        if changed and not self.queued[(callee_file.path, callee.qualname)]:
            self._queue(callee_file, callee)

    def _note_varying(self, site: CallSite, at: At, params, caller: FunctionFacts, callee: FunctionFacts) -> bool:
        """Mark the callee's parameters that this call passes a tensor size (``x.size(0)``, ``(N, N)``,
        ``x.shape``), a parameter of the caller that varies, or a constant other than an earlier call's;
        True when something changed."""
        if site.consts is None:
            return False
        positional, keywords = site.consts
        by_name = dict(keywords)
        changed = False
        for i, param in enumerate(params):
            value = positional[i] if i < len(positional) else by_name.get(param.name, param.literal)
            key = (id(callee), param.name)
            why = self.why_varying.get(key)
            if why is not None and why["sure"] is not None:
                continue  # varies whatever the other calls pass
            how = kind = None
            if isinstance(value, tuple):  # a parameter of the caller passed on
                if caller.varying and value[1] in caller.varying:
                    how = Reason((f"`{value[1]}` at ", at, ", which varies: ", caller.varying[value[1]]))
                    kind = ("derived", how, caller, value[1])
                else:
                    value = caller.constants.get(value[1])
            if how is None and value == DIM_SIZE:
                how = Reason(("a tensor size at ", at))
            elif how is None and value in (DIM_SIZES, SIZE):
                how = Reason((f"{SIZES_PASSED} at ", at))
            elif how is None and value == LOOP_INDEX:
                how = Reason(("a loop index at ", at))
            elif how is None and value == HOST_VALUE:
                how = Reason(("a value read from a tensor at ", at))
            elif how is None and value is not None and not value.startswith("<"):
                seen = self.passed.get(key)
                if seen is None:
                    seen = self.passed[key] = _Passed()
                other = seen.other_than(value)
                if other is not None:  # (both calls on one line: shown with the line once)
                    how = TwoCalls(other[0], other[1], value, at)
                    kind = ("pair", how, other[2], caller)
                seen.add(value, at, caller)
            if how is None:
                continue
            if why is None:
                why = self.why_varying[key] = {"sure": None, "pairs": [], "derived": [], "facts": callee, "name": param.name}
            if kind is None:
                why["sure"] = how
            elif kind[0] == "pair":
                why["pairs"].append(kind[1:])
            else:
                why["derived"].append(kind[1:])
            if callee.varying is None:
                callee.varying = {}
            if param.name not in callee.varying or kind is None:
                callee.varying[param.name] = how
                changed = True
        return changed

    def _keep_cocompiled_varying(self, roots) -> None:
        """Drop what varies only between callers that no compiled call runs together (``roots``: the
        functions without a compiled caller each one is reached from): a helper called with `'sum'`
        in one model and `'max'` in another is compiled once in each. What varies because a caller's
        parameter varies goes with it."""
        kept: dict[tuple, Optional[str]] = {}
        for key, why in self.why_varying.items():
            if why["sure"] is not None:
                kept[key] = why["sure"]
            else:
                kept[key] = next((how for how, a, b in why["pairs"] if a is b or roots(a) & roots(b)), None)
        changed = True
        while changed:  # a derived reason holds while the caller's parameter still varies
            changed = False
            for key, why in self.why_varying.items():
                if kept[key] is None:
                    for how, caller, name in why["derived"]:
                        if kept.get((id(caller), name)) is not None:
                            kept[key] = how
                            changed = True
                            break
        for key, why in self.why_varying.items():
            facts, name = why["facts"], why["name"]
            if kept[key] is None:
                facts.varying.pop(name, None)
                if not facts.varying:
                    facts.varying = None
            else:
                facts.varying[name] = kept[key]

    def _queue(self, summary: FileSummary, fn: FunctionSummary) -> None:
        self.queue.append((summary, fn))
        self.queued[(summary.path, fn.qualname)] += 1

    def _site_callee(self, summary: FileSummary, fn: FunctionSummary, i: int):
        """``_find_callee`` of ``fn``'s i-th call site, found once."""
        memo = self.site_callees.get(id(fn))  # (the summaries live as long as the propagation: ids stay)
        if memo is None:
            memo = self.site_callees[id(fn)] = [_UNSEEN] * len(fn.calls)
        found = memo[i]
        if found is _UNSEEN:
            found = memo[i] = self._find_callee(summary, fn, fn.calls[i])
        return found

    def _result_callee(self, summary: FileSummary, fn: FunctionSummary, how: str, target: str):
        """The callee of a call (in ``fn``) whose result a value uses, found once."""
        key = (summary.path, fn.qualname, how, target)
        memo = self.result_sites.get(key)
        if memo is None:
            memo = self.result_sites[key] = [CallSite(how, target, (), (), 0), _UNSEEN]
        if memo[1] is _UNSEEN:
            memo[1] = self._find_callee(summary, fn, memo[0])
        return memo[1]

    def _find_callee(self, summary: FileSummary, fn: FunctionSummary, site: CallSite):
        """(file, function, first parameter is the receiver, chain label) for a call site, or None."""
        p = self.p
        cls = summary.classes.get(fn.cls) if fn.cls else None
        if site.how in ("self", "super") and cls is not None:
            found = p.method(summary, cls, site.target, skip_self=site.how == "super")
            if found is not None:
                label = f"self.{site.target}" if site.how == "self" else f"super().{site.target}"
                if found[0] is not summary:
                    label = f"{found[0].module}.{found[1].qualname}"
                return found[0], found[1], True, label
            if site.how == "super":
                return None
            return self._attribute_call(summary, cls, site.target)
        if site.how == "self-sub" and cls is not None:
            attr, _, method = site.target.partition(".")
            return self._attribute_call(summary, cls, attr, method)
        if site.how == "self-elem" and cls is not None:
            attr, _, method = site.target.partition(".")
            return self._element_call(summary, cls, attr, method)
        if site.how == "name":
            p._probe(summary, f"{fn.qualname}.<locals>.{site.target}")
            p._probe(summary, site.target)
            local = summary.functions.get(f"{fn.qualname}.<locals>.{site.target}") or (
                summary.functions.get(site.target) if site.target not in summary.aliases else None
            )
            if local is not None:
                return summary, local, False, site.target
            if site.target in summary.classes and site.target not in summary.aliases:
                return self._constructor(summary, summary.classes[site.target], summary)
            target = summary.aliases.get(site.target)
            if target is None:
                return None
            return self._function(target, summary)
        if site.how == "dotted":
            head, _, rest = site.target.partition(".")
            local = summary.classes.get(head) if head not in summary.aliases and "." not in rest else None
            if local is not None:  # `PScan.pscan(A, X)`: a method of a class of this file, called on the class
                found = p.method(summary, local, rest)
                if found is None:
                    return None
                receiver = "classmethod" in found[1].decorators  # a staticmethod or plain function takes what is passed
                label = site.target if found[0] is summary else f"{found[0].module}.{found[1].qualname}"
                return found[0], found[1], receiver, label
            return self._function(site.target, summary)
        return None

    def _function(self, qual: str, caller: FileSummary):
        found = self.p.resolve(qual)
        if found is not None and found[0] == "class":
            return self._constructor(found[1], found[2], caller)
        if found is None or found[0] != "function":
            return None
        return found[1], found[2], found[2].cls is not None, f"{found[1].module}.{found[2].qualname}"

    def _constructor(self, summary: FileSummary, cls: ClassSummary, caller: FileSummary):
        """``Cls(...)``: Dynamo traces the ``__init__`` it runs (its own or a project base's), in the
        caller's context; a class whose ``__init__`` comes from outside the project is not followed."""
        if self.p.class_kind(summary, cls) == "autograd_function":
            return None  # `Fn.apply` is how it runs; constructing one is not traced this way
        method = self.p.method(summary, cls, "__init__")
        if method is None:
            return None
        label = method[1].qualname if method[0] is caller else f"{method[0].module}.{method[1].qualname}"
        return method[0], method[1], True, label

    def _element_call(self, summary: FileSummary, cls: ClassSummary, attr: str, method_name: str):
        """``for layer in self.layers: layer.method_name(...)`` (or ``self.layers[i].method_name(...)``):
        that method of the project class of the container's elements (``nn.ModuleList([Block(...) ...])``)."""
        for owner, fact in self.p.attribute_facts(summary, cls, attr):
            if fact.kind != "modules":
                continue
            for ctor in fact.elements:
                found = self.p._class(owner, ctor) if ctor else None
                if found is None:
                    continue
                name = method_name
                if name == "__call__" and self.p.class_kind(found[0], found[1]) == "module":
                    if self.p.forward_replaced(found[0], found[1]):
                        continue  # a dispatching forward: its body is not what is traced
                    name = "forward"
                method = self.p.method(found[0], found[1], name)
                if method is None:
                    continue
                label = method[1].qualname if method[0] is summary else f"{method[0].module}.{method[1].qualname}"
                return method[0], method[1], True, label
        return None

    def _attribute_call(self, summary: FileSummary, cls: ClassSummary, attr: str, method_name: Optional[str] = None):
        """``self.attr(...)``: the forward of a project submodule, or ``__call__`` of an object;
        ``self.attr.method_name(...)``: that method of the attribute's project class."""
        for owner, fact in self.p.attribute_facts(summary, cls, attr):
            if fact.kind == "ref" and method_name is None:
                # `self.gumbel_sample = gumbel_sample` in a method: the module-level function it names
                found_fn = self._referenced_function(owner, fact.ctor)
                if found_fn is not None:
                    return found_fn
                continue
            found = self.p.attr_class(owner, fact)
            if found is None:
                continue
            target_file, target_cls = found
            if method_name is None and self.p.forward_replaced(target_file, target_cls):
                continue  # its forward is a dispatcher, the body is not what is traced (as for entries)
            if method_name is not None:
                name = method_name
            else:
                name = "forward" if self.p.class_kind(target_file, target_cls) == "module" else "__call__"
            method = self.p.method(target_file, target_cls, name)
            if method is None:
                continue
            label = f"{method[1].qualname}" if method[0] is summary else f"{method[0].module}.{method[1].qualname}"
            return method[0], method[1], True, label
        return None

    def _referenced_function(self, owner: FileSummary, name: str):
        """The module-level function ``name`` (as the owner's file writes it, through its imports) denotes,
        as a callee that gets no receiver; None for anything else (a class, a variable, outside the project)."""
        fn = owner.functions.get(name) if "." not in name else None
        if fn is not None:
            return (owner, fn, False, name) if fn.cls is None and fn.parent is None else None
        found = self.p.resolve(name) if "." in name else None
        if found is None or found[0] != "function" or found[2].cls is not None:
            return None
        return found[1], found[2], False, f"{found[1].module}.{found[2].qualname}"

    # -- is an argument a tensor in the caller? -------------------------------------------------------
    def _tensor(self, value: Value, summary: FileSummary, fn: FunctionSummary, facts: FunctionFacts) -> bool:
        for atom in value:
            if atom == TENSOR:
                return True
            what, name = atom
            if what == "items":  # a list or dict of tensors is not one (its items are: `parts[0]`)
                continue
            if what == "param":
                if name in facts.tensor_params and name not in fn.flag_params:
                    return True
            elif what == "call":
                how = "dotted" if "." in name else "name"
                target = through_aliases(name, summary.aliases) if how == "dotted" else name
                if self.returns and self._returns_tensor(self._result_callee(summary, fn, how, target)):
                    return True
            elif fn.cls is not None and fn.cls in summary.classes:
                cls = summary.classes[fn.cls]
                if what == "self-call" and self.p.method(summary, cls, name) is not None:
                    if self.returns and self._returns_tensor(self._result_callee(summary, fn, "self", name)):
                        return True
                    continue
                attrs = self.p.attribute_facts(summary, cls, name)
                if what == "self-attr" and any(f.kind in _TENSOR_ATTR_KINDS for _, f in attrs):
                    return True
                if what == "self-call" and any(_module_fact(self.p, o, f) for o, f in attrs):
                    return True
        return False

    def _returned_items(self, found):
        """``FunctionFacts.item_calls`` of one call (to ``found``): None when its callee returns no tuple with a tensor."""
        if found is None or not found[1].item_values:
            return None
        callee_file, callee = found[0], found[1]
        facts = self.facts.get((callee_file.path, callee.qualname))
        if facts is None:
            return None
        # a tensor by its own computation or a parameter annotated as one, not one that is a tensor only
        # because a caller passed forward's unannotated argument (sew-d's `get_mask` returns its
        # `local_context` as `dropout`, a float)
        annotated = {p.name for p in callee.params if p.annotation == "tensor"}
        tensors = frozenset(
            i for i, per_return in enumerate(callee.item_values)
            if all(
                any(atom == TENSOR or (isinstance(atom, tuple) and atom[0] == "param" and atom[1] in annotated)
                    for atom in value)
                for value in per_return
            )
        ) | callee.bool_items
        return (tensors, callee.bool_items) if tensors else None

    def _returns_tensor(self, found) -> bool:
        """Does this callee return a tensor (as far as the rounds so far know)?"""
        return found is not None and (found[0].path, found[1].qualname) in self.returns


# what every compiled caller knows of a ``self.<attr>`` when it calls a method of the same object
# (``FunctionFacts.constants`` under the key "self.<attr>"); JOINED marks that a first call was joined
TRUTHY, FALSY, _SELF_JOINED = "<truthy>", "<falsy>", "self."


def _self_truths(site: CallSite, same_object: bool) -> dict[str, str]:
    """The ``self.<attr>`` truths a call of a method of the same object is made under
    (``if self.merged: self.unmerge()``)."""
    if not same_object:
        return {}  # another object: what this one's attributes hold says nothing of it
    out: dict[str, str] = {}
    for name, op, _literal, sense in site.conds:
        if op in (SELF_TRUTH, SELF_TRUTH_AT_ENTRY):
            out[name] = TRUTHY if sense else FALSY
    return out


def _pass_constants(site: CallSite, params, constants: dict[str, Optional[str]], known: dict[str, str],
                    same_object: bool = False, star: Optional[str] = None) -> bool:
    """Join the constants one compiled call passes into the callee's; True when they changed."""
    changed = _join_self_truths(_self_truths(site, same_object), constants)
    passed = _passed(site, params, known, star)
    for name, value in passed.items():
        if name not in constants:
            constants[name] = value
            changed = True
        elif constants[name] is not None and constants[name] != value:
            constants[name] = None
            changed = True
    return changed


def _passed(site: CallSite, params, known: dict[str, str], star: Optional[str] = None) -> dict[str, Optional[str]]:
    """What one call passes each parameter: the repr of a constant (a default when not passed), or None;
    for a ``*star`` parameter, how many values it gets, as ``len(star)`` (``if len(caches) == 1:``)."""
    if site.consts is None:
        return {p.name: None for p in params} | ({f"len({star})": None} if star else {})
    positional, keywords = site.consts
    by_name = dict(keywords)
    passed = {}
    for i, param in enumerate(params):
        if i < len(positional):
            value = positional[i]
        elif param.name in by_name:
            value = by_name[param.name]
        else:
            value = param.literal  # the default: its repr, or None when it is not a constant
        if isinstance(value, tuple):  # a parameter of the caller passed on
            value = known.get(value[1])
        # a size or a loop index: `is None` is all it decides
        passed[param.name] = NOT_NONE if value in (DIM_SIZE, DIM_SIZES, LOOP_INDEX, HOST_VALUE) else value
    if star:
        passed[f"len({star})"] = repr(max(0, len(positional) - len(params)))
    return passed


def _join_self_truths(truths: dict[str, str], constants: dict[str, Optional[str]]) -> bool:
    """A ``self.<attr>`` truth holds for the callee only if every compiled call is made under it."""
    changed = False
    first = _SELF_JOINED not in constants
    if first:
        constants[_SELF_JOINED] = None
        changed = True
    for name, value in truths.items():
        if name not in constants:
            constants[name] = value if first else None  # a caller before this one did not know it
            changed = True
        elif constants[name] is not None and constants[name] != value:
            constants[name] = None
            changed = True
    for name, value in constants.items():
        if name.startswith("self.") and name != _SELF_JOINED and name not in truths and value is not None:
            constants[name] = None
            changed = True
    return changed


class _CallGraph:
    """The compiled call edges read upwards: who calls each function, and the functions without a
    compiled caller that each is reached from (its roots: the modules a user compiles)."""

    def __init__(self, edges: list[tuple[FunctionFacts, FunctionFacts, CallSite, bool, int]]) -> None:
        # id of a callee -> the edges into it (the tuples of ``edges`` themselves: no new ones)
        self.callers: dict[int, list[tuple[FunctionFacts, FunctionFacts, CallSite, bool]]] = {}
        for edge in edges:
            self.callers.setdefault(id(edge[1]), []).append(edge)
        self._memo: dict[int, frozenset[int]] = {}
        self.by_id: dict[int, FunctionFacts] = {}  # the roots met so far

    def roots(self, facts: FunctionFacts) -> frozenset[int]:
        """The ids of the functions without a compiled caller that ``facts`` is reached from (itself, if none)."""
        found = self._memo.get(id(facts))
        if found is None:
            seen, stack, tops = {id(facts)}, [facts], set()
            while stack:
                node = stack.pop()
                above = self.callers.get(id(node))
                if not above:
                    tops.add(id(node))
                    self.by_id[id(node)] = node
                for up, *_ in above or ():
                    if id(up) not in seen:
                        seen.add(id(up))
                        stack.append(up)
            found = self._memo[id(facts)] = frozenset(tops)
        return found


def _path_from(root: int, facts: FunctionFacts, callers: dict[int, list]) -> Optional[tuple[str, ...]]:
    """The frames of a call chain from the function with id ``root`` down to ``facts``: the root's own
    frames, then each callee as its caller writes it (``callers``: id -> [(caller, callee, call site, ...)])."""
    below: dict[int, Optional[tuple[FunctionFacts, FunctionFacts, CallSite]]] = {id(facts): None}
    stack = [facts]
    while stack:
        node = stack.pop()
        if id(node) == root:
            frames = list(node.frames)
            step = below[id(node)]
            while step is not None:
                _, callee, site = step
                frames.append(site.written or site.target)
                step = below[id(callee)]
            return tuple(frames)
        for up, _, site, *_ in callers.get(id(node), ()):
            if id(up) not in below:
                below[id(up)] = (up, node, site)
                stack.append(up)
    return None


def _breaks_ruled_out(break_conds: tuple, constants: dict[str, Optional[str]]) -> bool:
    """Every break of a function is in a branch that the constants all its compiled callers pass rule
    out (``DynamicCache(config=...)``: its ``.item()`` is under ``if ddp_cache_data is not None:``)."""
    known = {n: c for n, c in constants.items() if c is not None}
    return bool(known) and all(dead_branch(conds, known) for conds in break_conds)


def dead_branch(conds, known: dict[str, str]) -> bool:
    """Does one of the branch tests around a call fail for the constants ``known``?"""
    for param, op, literal, in_body in conds:
        value = known.get(param)
        if value is None:
            continue
        holds = constant_test(value, op, literal)
        if holds is not None and holds != in_body:
            return True
    return False


def constant_test(value: str, op: str, literal: str) -> Optional[bool]:
    """``value op literal`` for two constants' reprs; None when it cannot be told."""
    if op == SELF_TRUTH_AT_ENTRY:  # the callers' truth of ``self.<attr>``, tested before anything ran
        return value == TRUTHY if value in (TRUTHY, FALSY) else None
    if op == SELF_TRUTH or value in (TRUTHY, FALSY):
        return None  # tested after other statements ran (or compared to a literal): not known
    if op in ("is", "is not"):
        if literal != "None" and value != "None":
            return None
        same = value == literal
        return same if op == "is" else not same
    try:
        same = ast.literal_eval(value) == ast.literal_eval(literal)
    except (ValueError, SyntaxError):
        return None
    return same if op == "==" else not same


def propagation_view(summary: FileSummary, entered: frozenset[str], probed: frozenset[str]) -> tuple:
    """What ``_Propagation`` (and the class lookups it makes) reads of one file, given the qualnames
    of this file's functions it entered and those it looked up (found or not, ``Project._probe``):
    two summaries with the same view over the same other files give the same propagated facts.

    By induction over its steps: it reads every file's module name, imports, classes (bases,
    methods, attribute kinds and constructors, decorators) and compile targets; of functions, the
    top-level ones under ``torch.compile`` (entry points) and those it looked up by name, their
    signature; the bodies (call sites, returns, names used as tensors) only of the functions it
    entered; lines never (the facts name places by function and call site: ``reasons.At``). So an edit
    inside a function that is not compiled, a new function nothing calls, or lines inserted anywhere
    keep the facts (fusionlint.cache reuses them instead of propagating again)."""
    classes = [
        (c.name, tuple(c.bases), c.methods, tuple(c.decorators),
         tuple((attr, tuple((f.kind, f.ctor, f.method, f.elements) for f in facts)) for attr, facts in c.attrs.items()))
        for c in summary.classes.values()
    ]
    functions = [
        (fn.qualname, fn.name, fn.cls, fn.parent, tuple(fn.params), fn.star, fn.static, tuple(fn.decorators),
         fn.wrappers,
         (tuple([_site_view(site) for site in fn.calls]), fn.returns, fn.tensor_uses, fn.breaks, fn.break_conds,
          fn.returns_host, fn.returns_sparse, fn.flag_params, fn.size_items)
         if fn.qualname in entered else None)
        for fn in summary.functions.values()
        if fn.qualname in entered or fn.qualname in probed
        or (fn.parent is None and any(d in _COMPILE_DECORATORS for d in fn.decorators))
    ]
    return (summary.path, summary.module, summary.is_package, tuple(summary.aliases.items()), classes, functions,
            frozenset(summary.compile_targets))


def class_view(summary: FileSummary, modules: dict) -> tuple:
    """What the class questions (``Project.class_kind``, ``attributes``, ``mro``, ``subclasses``) read
    of one file: its module, imports and classes, without lines (the lint reads an attribute fact's
    line only through ``Project.submodule_set_at``, which the findings cache asks again whatever this
    view says). Functions only where one changes what a dotted name resolves to (``_in_file`` finds a
    function before an import or a submodule of the same name)."""
    classes = [
        (c.name, tuple(c.bases), c.methods, tuple(c.decorators),
         tuple((attr, tuple([_fact_view(f) for f in facts])) for attr, facts in c.attrs.items()))
        for c in summary.classes.values()
    ]
    shadowing = sorted(
        name for name in summary.functions
        if "." not in name and (name in summary.aliases or f"{summary.module}.{name}" in modules)
    )
    return (summary.path, summary.module, summary.is_package, tuple(summary.aliases.items()), classes, shadowing)


# what a call site is to the propagation: every field but its line
_SITE_FIELDS = tuple(f.name for f in dataclasses.fields(CallSite) if f.name != "line")


_FACT_FIELDS = tuple(f.name for f in dataclasses.fields(AttrFact) if f.name != "line")


def _site_view(site: CallSite) -> tuple:
    return tuple([getattr(site, name) for name in _SITE_FIELDS])


def _fact_view(fact: AttrFact) -> tuple:
    return tuple([getattr(fact, name) for name in _FACT_FIELDS])


def _uses_call_results(fn: FunctionSummary) -> bool:
    """Does a call site or a return of ``fn`` use the result of another call (which may now be a tensor)?"""
    def uses(value) -> bool:
        return value is not None and any(atom != TENSOR and atom[0] in ("call", "self-call") for atom in value)

    return any(uses(v) for v in fn.returns) or any(
        any(uses(v) for v in site.args) or any(uses(v) for _, v in site.kwargs) for site in fn.calls
    )


def _module_fact(project: Project, owner: FileSummary, fact: AttrFact) -> bool:
    """Is this attribute a module whose call returns a tensor (a torch.nn layer or a project module)?"""
    # A project module's forward may return a list of feature maps, a tuple or a ModelOutput (found on
    # transformers 5.24: backbone features, a Hungarian matcher's index pairs), so only torch.nn layers
    # known to return one tensor count.
    if fact.kind != "object":
        return False
    return fact.ctor.startswith("torch.nn.") and is_torch_module_base(fact.ctor) and fact.ctor.rsplit(".", 1)[-1] not in (
        "LSTM", "GRU", "RNN", "MultiheadAttention", "Transformer", "ModuleList", "ModuleDict")


def _passes_through(fn: FunctionSummary) -> Optional[tuple[str, ...]]:
    """The parameters a plain function returns when every `return` hands back only parameters
    (`return val if exists(val) else d`), else None."""
    if not fn.returns or fn.cls is not None or fn.star:
        return None
    names = {p.name for p in fn.params}
    returned: set[str] = set()
    for value in fn.returns:
        if not value:
            return None
        for atom in value:
            if not (isinstance(atom, tuple) and atom[0] == "param" and atom[1] in names):
                return None
            returned.add(atom[1])
    # in the parameters' order: a value is a frozenset, whose order follows the process's string hash seed,
    # and the facts (and so the findings cache's digests of them) must not (58 functions of the zoo
    # differed between two runs, and 50 files were linted again after an edit for that alone)
    return tuple(p.name for p in fn.params if p.name in returned)


def _entry_params(fn: FunctionSummary, chain: str, kind: str) -> dict[str, str]:
    """Parameters of an entry point that hold tensors: the first (``self``/``ctx``) is skipped for
    methods; an annotation other than Tensor, a non-None default or a configuration-like name
    (unless the body uses it as a tensor) says "not a tensor"."""
    out: dict[str, str] = {}
    params = fn.params
    if (fn.cls is not None and not fn.static) or kind.startswith("autograd_"):
        params = params[1:]
    why = f"parameter of {chain}"
    for param in params:
        if param.annotation == "tensor":
            if param.default != "literal":
                out[param.name] = why
            continue
        if param.annotation == "other":
            continue
        if param.default not in (None, "none") or param.name in fn.flag_params:
            continue
        if param.name in fn.tensor_uses:  # `lens.any()`: a tensor, whatever its name says
            out[param.name] = f"{why}, used as one"
        elif not NON_TENSOR_PARAM.search(param.name):
            out[param.name] = why
    if fn.star:
        out[fn.star] = why
    return out


def build(paths: Iterable[tuple[str, Path, str]]) -> Project:
    project = Project()
    for shown, path, text in paths:
        project.add(shown, path, text)
    return project
