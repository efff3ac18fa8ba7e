"""RuleContext: everything a rule handler may ask about the node it is looking at."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Callable, Iterator, Optional, TypeVar

import libcst as cst

from fusionlint.semantic.bindings import bindings
from fusionlint.analysis.index import ClassInfo, FileIndex, FunctionInfo, ParentLink
from fusionlint.semantic.is_compiling import skipped_while_compiling
from fusionlint.analysis.names import resolve
from fusionlint.analysis.project import ProjectIndex
from fusionlint.semantic.tensors import TensorFacts
from fusionlint.analysis.walk import iter_nodes
from fusionlint.rule import Applicability, Effect

if TYPE_CHECKING:  # pragma: no cover
    from fusionlint.rule import Rule

_T = TypeVar("_T")


@dataclass(frozen=True)
class NodeEdit:
    """Replace the source of ``node`` with ``text`` (positions are resolved after the traversal).

    ``where`` = "replace" | "before" | "after": insert ``text`` before/after the node instead.
    """

    node: cst.CSTNode
    text: str
    where: str = "replace"


@dataclass(frozen=True)
class PendingFix:
    applicability: Applicability
    edits: tuple[NodeEdit, ...]
    title: str = ""


@dataclass
class Report:
    rule: "Rule"
    node: cst.CSTNode
    message: str
    fix: Optional[PendingFix]
    frames: tuple[str, ...]  # the compiled chain, () outside compiled code
    effects: Optional[tuple] = None
    # nodes whose start lines replace LINE_REFS in the message once positions are known (after the rules)
    line_refs: tuple[cst.CSTNode, ...] = ()
    # the top-level statement the rule was visiting: positions render only these (fusionlint.positions)
    statement: Optional[cst.CSTNode] = None
    # the method of that statement (a class) the rule was visiting, if any: rendered first, alone
    method: Optional[cst.FunctionDef] = None
    # Dynamo gives up on the frame at this break and runs the rest of the function eagerly (GB0015 on a
    # resumed frame's sparse input): what comes after it breaks only once it is gone (every_iteration)
    ends_frame: bool = False

    @property
    def chain(self) -> Optional[str]:
        return " → ".join(self.frames) if self.frames else None


# the placeholder a message carries for the lines of its Report.line_refs ("also line {lines}")
LINE_REFS = "{lines}"


class RuleContext:
    """Handed to every rule handler; cheap to create (one per file, re-pointed per node)."""

    def __init__(
        self, module: cst.Module, index: FileIndex, project: ProjectIndex, path: str, *, torch_version: tuple[int, int]
    ) -> None:
        self.module = module
        self.file = index
        self.project = project
        self.path = path
        self.torch_version = torch_version  # (major, minor) findings are judged against: `target-torch`
        self.model = None  # the run's project model (fusionlint.project.model.Project), set by the engine
        self.reports: list[Report] = []
        # ids of the nodes where a graph break needs no stated condition (set by the engine before the
        # rules that ask for them run: ``Rule.after_breaks``)
        self.breaks: frozenset[int] = frozenset()
        self.function: Optional[FunctionInfo] = None
        self.cls: Optional[ClassInfo] = None
        self._parents: ParentLink = None
        self._rule: Optional["Rule"] = None
        self._node: Optional[cst.CSTNode] = None
        self._memo: dict = {}

    # set by the engine before each handler call
    def _point(self, rule: "Rule", node: cst.CSTNode, function, cls, parents: ParentLink) -> None:
        self._rule, self._node, self.function, self.cls, self._parents = rule, node, function, cls, parents

    # -- where are we ------------------------------------------------------------------------------
    @property
    def frames(self) -> tuple[str, ...]:
        """The compiled chain of the current function, one frame per call: ("Model.forward", "self._mask")."""
        frames = self.function.frames if self.function is not None else None
        return frames or ()

    @property
    def chain(self) -> Optional[str]:
        return self.function.chain if self.function is not None else None

    @property
    def in_compiled(self) -> bool:
        return self.chain is not None

    @property
    def builds_self(self) -> bool:
        """The current code is a class's ``__init__`` (reached from compiled code through a constructor
        call): ``self`` is an object this call makes, so its attributes are not state that guards check
        from one call to the next (a write there recompiles nothing)."""
        fn = self.function
        while fn is not None and fn.parent is not None:
            fn = fn.parent
        return fn is not None and fn.name == "__init__" and fn.cls is not None

    @property
    def autograd_function(self) -> Optional[str]:
        """``"MyFn.forward"`` when the current code runs inside a custom ``autograd.Function``'s
        forward/backward (directly, in a nested def, or in a helper first reached from it)."""
        if not self.frames:
            return None
        root = self.frames[0]
        cls_name, _, method = root.rpartition(".")
        cls = self.file.classes.get(cls_name)
        if cls is not None and cls.kind == "autograd_function" and method in ("forward", "backward"):
            return root
        return None

    @property
    def parents(self) -> tuple[cst.CSTNode, ...]:
        """Ancestors of the current node, nearest first."""
        out = []
        link = self._parents
        while link is not None:
            out.append(link[0])
            link = link[1]
        return tuple(out)

    def iter_parents(self) -> Iterator[cst.CSTNode]:
        link = self._parents
        while link is not None:
            yield link[0]
            link = link[1]

    @property
    def parent(self) -> Optional[cst.CSTNode]:
        return self._parents[0] if self._parents is not None else None

    def statement(self) -> Optional[cst.CSTNode]:
        """The nearest enclosing small statement (``Expr``, ``Assign``...) or compound statement."""
        node = self._node
        if isinstance(node, (cst.BaseSmallStatement, cst.BaseCompoundStatement)):
            return node
        for parent in self.iter_parents():
            if isinstance(parent, (cst.BaseSmallStatement, cst.BaseCompoundStatement)):
                return parent
        return None

    # -- names and values ----------------------------------------------------------------------------
    def qualname(self, expr: cst.BaseExpression) -> Optional[str]:
        return resolve(expr, self.file.aliases)

    def alias_for(self, module: str, default: Optional[str] = None) -> Optional[str]:
        """The local name bound to ``module`` (``torch`` -> ``torch``, ``numpy`` -> ``np``), if imported."""
        for local, target in self.file.aliases.items():
            if target == module:
                return local
        return default

    def facts(self, function: Optional[FunctionInfo] = None) -> Optional[TensorFacts]:
        fn = function or self.function
        if fn is None:
            return None
        if fn._facts is None:
            fn._facts = TensorFacts(fn, self.file)
        return fn._facts  # type: ignore[return-value]

    def bindings(self, function: Optional[FunctionInfo] = None) -> dict:
        """name -> values of its bindings in the function (see fusionlint.semantic.bindings)."""
        fn = function or self.function
        if fn is None:
            return {}
        if fn._bindings is None:
            fn._bindings = bindings(fn.node)
        return fn._bindings  # type: ignore[return-value]

    def memo(self, key, compute: Callable[[], _T]) -> _T:
        """Per-file cache shared by every rule: ``compute()`` runs once per ``key`` in this file
        (e.g. ``("weak-params", id(fn.node))``). Only for facts that depend on the file alone."""
        try:
            return self._memo[key]
        except KeyError:
            value = self._memo[key] = compute()
            return value

    def nodes(self, kind: type) -> list:
        """Every node of exactly type ``kind`` in the file (nested defs included), in walk order: the
        engine's records when its one traversal kept that type, else one walk over the module."""
        records = self.file.records.get(kind.__name__)
        if records is not None:
            return [rec.node for rec in records]
        return self.memo(
            ("nodes", kind),
            lambda: [n for n in iter_nodes(self.module, (kind,), into_nested_defs=True) if type(n) is kind],
        )

    def is_tensor(self, expr: cst.BaseExpression) -> bool:
        facts = self.facts()
        return facts.is_tensor(expr) if facts is not None else False

    def code(self, node: cst.CSTNode) -> str:
        return self.module.code_for_node(node)

    def indent(self) -> str:
        """Indentation (as written) of the statement that contains the current node."""
        parts = []
        for parent in self.iter_parents():
            if isinstance(parent, cst.IndentedBlock):
                parts.append(parent.indent if parent.indent is not None else self.module.default_indent)
        return "".join(reversed(parts))

    # -- reporting ---------------------------------------------------------------------------------
    def report(
        self,
        node: cst.CSTNode,
        message: Optional[str] = None,
        fix: Optional[PendingFix] = None,
        effects: Optional[tuple] = None,
        line_refs: tuple[cst.CSTNode, ...] = (),
        tensor: Optional[cst.BaseExpression] = None,
        no_reason: bool = False,
        ends_frame: bool = False,
    ) -> None:
        """Report ``node``. ``effects`` narrows the rule's effects for this finding (a subset);
        ``line_refs``: other nodes whose lines the message names through ``LINE_REFS``; ``tensor``: the
        value the finding stands on being a tensor (``x`` of ``x.unsqueeze_(0)``), whose reason the
        message then ends with, for a rule that does not explain every finding (``explains_tensors``);
        ``no_reason``: add no reason at all (a finding about a parameter that is None here); ``ends_frame``:
        Dynamo skips the rest of the function at this break (``Report.ends_frame``)."""
        assert self._rule is not None
        if self._never_traced():
            return
        message = message or self._rule.message
        why = None if no_reason else self._why_tensor(node if tensor is None else tensor, explain=tensor is not None)
        if why:
            message = f"{message} ({why})"
        top, method = self._top()
        self.reports.append(Report(self._rule, node, message, fix, self.frames, effects, tuple(line_refs), top, method, ends_frame))

    def _top(self) -> tuple[Optional[cst.CSTNode], Optional[cst.FunctionDef]]:
        """The module-level statement that holds the current node (the node itself at the top), and
        the method of it (a class) that holds the node, if any."""
        chain = [self._node]
        for parent in self.iter_parents():
            if isinstance(parent, cst.Module):
                break
            chain.append(parent)
        top = chain[-1]
        if isinstance(top, cst.Module):
            return None, None
        # class -> its IndentedBlock -> a def in it
        method = chain[-3] if len(chain) >= 3 and isinstance(top, cst.ClassDef) else None
        return top, method if isinstance(method, cst.FunctionDef) and chain[-2] is top.body else None

    def _never_traced(self) -> bool:
        """True when the finding's claim is about traced code and the current node sits in the eager-only
        branch of an ``is_compiling()`` test (``if not torch.compiler.is_compiling(): ...``): Dynamo takes
        the other branch, so nothing there breaks, syncs or recompiles. A rule that also claims a
        runtime error (a bad ``view``, an in-place op autograd rejects) keeps its finding: that code fails
        in eager too."""
        if not self.frames or Effect.RUNTIME_ERROR in self._rule.effects:
            return False
        return skipped_while_compiling(self.parents, self.qualname, self._node)

    def _why_tensor(self, node: cst.CSTNode, explain: bool = False) -> Optional[str]:
        """"`lens` is a tensor: passed from Net.forward at net.py:12" when the finding reads a parameter
        that only the project model knows to be a tensor; for a rule that ``explains_tensors``, the
        first name of the node (in source order) that the function's tensor facts hold, with why."""
        fn = self.function
        if fn is not None and self._rule is not None and (self._rule.explains_tensors or explain):
            facts = self.facts(fn)
            # `x[mask]`: the index is what the finding is about, so its names come first
            parts = [*node.slice, node.value] if isinstance(node, cst.Subscript) else [node]
            names = []
            for part in parts:
                attrs = {id(a.attr) for a in iter_nodes(part, (cst.Attribute,), into_nested_defs=True)}
                names += [n for n in iter_nodes(part, (cst.Name,), into_nested_defs=True) if id(n) not in attrs]
                if isinstance(part, cst.Name):
                    names.append(part)
            for name in names:
                why = facts.why(name.value)
                if why:
                    return f"`{name.value}` is a tensor: {why}"
            return None
        known = fn.tensor_params if fn is not None else None
        if not known:
            return None
        for name in iter_nodes(node, (cst.Name,), into_nested_defs=True):
            if isinstance(name, cst.Name) and name.value in known:
                return f"`{name.value}` is a tensor: {known[name.value]}"
        if isinstance(node, cst.Name) and node.value in known:
            return f"`{node.value}` is a tensor: {known[node.value]}"
        return None

    @staticmethod
    def replace(node: cst.CSTNode, text: str) -> NodeEdit:
        return NodeEdit(node, text)

    @staticmethod
    def insert_before(node: cst.CSTNode, text: str) -> NodeEdit:
        return NodeEdit(node, text, "before")

    @staticmethod
    def insert_after(node: cst.CSTNode, text: str) -> NodeEdit:
        return NodeEdit(node, text, "after")

    @staticmethod
    def fix(applicability: Applicability, *edits: NodeEdit, title: str = "") -> PendingFix:
        return PendingFix(applicability, tuple(edits), title)
