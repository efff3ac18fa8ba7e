"""The vocabulary every part of fusionlint shares: effects, findings, fixes and the Rule base class.

A rule is one small class (Fixit style). It declares what it claims torch does (its effects),
its docs, and VALID/INVALID examples that the test suite runs automatically. It never reads
files or prints: the engine hands it libcst nodes inside compiled code plus a RuleContext, and
the rule calls ``ctx.report(...)``.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, ClassVar, Optional, Sequence

if TYPE_CHECKING:  # pragma: no cover
    import libcst as cst

    from fusionlint.analysis.context import RuleContext


class Effect(str, enum.Enum):
    """What a pattern costs under torch.compile. Every rule that claims a cost names at least one;
    informational rules (off by default, severity info) claim none."""

    GRAPH_BREAK = "graph-break"
    HOST_SYNC = "host-sync"
    RECOMPILE = "recompile"
    EXTRA_KERNEL = "extra-kernel"
    RUNTIME_ERROR = "runtime-error"
    SILENT_DIVERGENCE = "silent-divergence"


class Applicability(str, enum.Enum):
    SAFE = "safe"  # applied by --fix
    UNSAFE = "unsafe"  # applied only with --unsafe-fixes: may change behaviour in corner cases


class Severity(str, enum.Enum):
    ERROR = "error"  # code that raises or silently computes something else
    WARNING = "warning"  # code that runs, but slower than it should under compile
    INFO = "info"  # informational, off by default


@dataclass(frozen=True)
class Edit:
    """Replace the text between two 1-based (line, column) positions; end is exclusive.

    Columns count Unicode code points, like libcst and SARIF's ``unicodeCodePoints``.
    An insertion has start == end. ``original`` is the source of the node the edit replaces, as
    libcst rendered it when the fix was computed: applying the edit checks that the range still
    holds it, so a wrong position can never overwrite unrelated code. None: not checked.
    """

    line: int
    column: int
    end_line: int
    end_column: int
    content: str
    original: Optional[str] = field(default=None, compare=False, repr=False)


@dataclass(frozen=True)
class Fix:
    applicability: Applicability
    edits: tuple[Edit, ...]
    title: str = ""


@dataclass
class Finding:
    path: str  # repo-relative POSIX path (or as given when outside the root)
    line: int  # 1-based
    column: int  # 1-based, code points
    end_line: int
    end_column: int  # 1-based, exclusive
    code: str
    name: str
    message: str
    effects: tuple[Effect, ...]
    severity: Severity
    context: Optional[str] = None  # the chain as displayed: "Model.forward → self._mask"
    fix: Optional[Fix] = None
    # Filled by the confirm pass: a plain JSON-able dict, see fusionlint/confirm.
    confirmation: Optional[dict] = None
    # Why the code is compiled, one frame per call: ("Model.forward", "self._mask"); () when the
    # finding is not about compiled code or came from elsewhere (the confirm pass). ``context`` is
    # its rendering, kept for the text/JSON/SARIF output.
    chain: tuple[str, ...] = ()

    @property
    def sort_key(self) -> tuple:
        return (self.path, self.line, self.column, self.code)


@dataclass
class FileError:
    """A file that could not be linted (unreadable, undecodable, syntax error...)."""

    path: str
    message: str
    line: Optional[int] = None
    column: Optional[int] = None
    code: str = "FL000"


@dataclass
class RunResult:
    findings: list[Finding] = field(default_factory=list)
    errors: list[FileError] = field(default_factory=list)
    files_checked: int = 0
    fixed: int = 0  # fixes applied (with --fix)


@dataclass(frozen=True)
class Invalid:
    """An INVALID example: code that must produce a finding of the rule.

    ``expected_fix`` (when given) is the whole source after applying the rule's fix;
    ``line`` (when given) is the 1-based line the finding must start on.
    ``unsafe`` says the fix is expected only with --unsafe-fixes.
    """

    code: str
    expected_fix: Optional[str] = None
    line: Optional[int] = None
    count: Optional[int] = None  # exact number of findings, when it matters


class Rule:
    """Base class of every rule. Subclasses live in ``rules/FLxxx_name.py``, one per module.

    Subclasses define class attributes and ``visit_<CSTNodeType>(self, node, ctx)`` handlers
    (optionally ``leave_<CSTNodeType>``). The engine calls a handler only for nodes inside
    compiled code (``scope = "compiled"``, the default) or for every node of the file
    (``scope = "file"``) and passes a RuleContext. Handlers call ``ctx.report``.

    A rule instance is created per file, so handlers may keep per-file state on ``self``.
    """

    code: ClassVar[str]
    name: ClassVar[str]  # kebab-case
    message: ClassVar[str]  # default message; ctx.report may pass a more specific one
    effects: ClassVar[tuple[Effect, ...]]
    severity: ClassVar[Severity] = Severity.WARNING
    default_enabled: ClassVar[bool] = True
    fix_applicability: ClassVar[Optional[Applicability]] = None  # None: no fix offered
    scope: ClassVar[str] = "compiled"  # "compiled" or "file"
    # False for rules whose findings come only from the confirm pass (FL900): they have no
    # VALID/INVALID examples to run statically.
    static: ClassVar[bool] = True
    # The file is skipped before parsing unless it contains one of these substrings.
    triggers: ClassVar[tuple[str, ...]] = ()
    gb_ids: ClassVar[tuple[str, ...]] = ()  # PyTorch graph-break registry ids, e.g. ("GB0124",)
    measured_on: ClassVar[tuple[str, ...]] = ()  # e.g. ("torch 2.13.0 CPU", "torch 2.11.0 H200")
    # Ruff-style markdown docs: What it does / Why is this bad? / Example / Use instead / Fix safety
    docs: ClassVar[str] = ""
    VALID: ClassVar[Sequence[str]] = ()
    INVALID: ClassVar[Sequence[Invalid]] = ()

    def __init__(self) -> None:
        pass

    @classmethod
    def summary(cls) -> str:
        """First sentence of the docs' "What it does" section, for listings and SARIF."""
        text = cls.docs.strip()
        for block in text.split("\n\n"):
            block = block.strip()
            if block and not block.startswith("#"):
                return " ".join(block.split())
        return cls.message

    @classmethod
    def help_url(cls) -> str:
        return f"https://github.com/fusionlint/fusionlint/blob/main/docs/rules.md#{cls.code.lower()}"
