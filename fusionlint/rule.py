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
    path: str  # project-root-relative POSIX path (absolute when outside the root)
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


# FileError.code of a failure of fusionlint itself (a rule or the engine raised), not of the file.
INTERNAL_ERROR_CODE = "internal"


@dataclass
class FileError:
    """A file that could not be linted (unreadable, undecodable, syntax error...), or an internal
    error while linting it (``code == INTERNAL_ERROR_CODE``; ``rule`` names the rule that raised)."""

    path: str
    message: str
    line: Optional[int] = None
    column: Optional[int] = None
    code: str = "FL000"
    rule: Optional[str] = None


@dataclass
class RunResult:
    findings: list[Finding] = field(default_factory=list)
    errors: list[FileError] = field(default_factory=list)
    # Python files discovered, plus paths found but not walkable (broken symlinks, unreadable
    # directories): everything that should have been checked.
    files_found: int = 0
    files_checked: int = 0  # of those, the files every rule ran on (no file error)
    fixed: int = 0  # fixes applied (with --fix)
    target_torch: Optional[str] = None  # the torch version findings were judged against ("2.13")
    # Absolute paths of the Python files read: the confirm pass looks for modules with an
    # example among them, also where the static pass found nothing.
    paths: list[str] = field(default_factory=list)


def module_example(body: str) -> str:
    """The source of a VALID/INVALID example: ``body`` (indented methods) inside ``class Model(nn.Module)``."""
    return "import torch\nfrom torch import nn\n\n\nclass Model(nn.Module):\n" + body


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
    # True for a rule whose finding stands on a value being a tensor (`if mask:`, `int(n)`): its message
    # ends with why the semantic model says so ("`mask` is a tensor: assigned `x > 0` in Net.forward")
    explains_tensors: ClassVar[bool] = False
    # False for rules whose findings come only from the confirm pass (FL900): they have no
    # VALID/INVALID examples to run statically.
    static: ClassVar[bool] = True
    # The file is skipped before parsing unless it contains one of these substrings.
    triggers: ClassVar[tuple[str, ...]] = ()
    # True for a rule whose finding, reported on a ``for`` loop's iterable, claims a cost only the loop's
    # unrolling has: the engine drops it when every iteration breaks the graph (Dynamo then runs the
    # frame eagerly; fusionlint.analysis.every_iteration).
    void_in_breaking_loop: ClassVar[bool] = False
    # True for a rule about what a graph break costs beyond itself (FL208): the engine runs it after
    # the others, with ``ctx.breaks`` holding the nodes where the graph-break rules (selected or not)
    # report a break that needs no stated condition
    after_breaks: ClassVar[bool] = False

    @classmethod
    def pins(cls, text: str, names: set, aliases: dict) -> bool:
        """For a whole-file rule (``scope = "file"``): must a definition or statement with this source
        (``names``: its identifiers; ``aliases``: the file's imports) stay in the sparse parse's text
        (fusionlint.sparse)? Default: it holds a trigger. A rule may answer more narrowly, never less."""
        return any(t in text for t in cls.triggers)
    gb_ids: ClassVar[tuple[str, ...]] = ()  # PyTorch graph-break registry ids, e.g. ("GB0124",)
    measured_on: ClassVar[tuple[str, ...]] = ()
    # How the confirm pass must call a module to show this rule's effect, beyond its default calls:
    # "" (nothing more) or "mode-switch" (also in eval mode, then back in train mode).
    confirm_exercise: ClassVar[str] = ""  # e.g. ("torch 2.13.0 CPU", "torch 2.11.0 H200")
    # Ruff-style markdown docs: What it does / Why is this bad? / Example / Use instead / Fix safety
    docs: ClassVar[str] = ""
    VALID: ClassVar[Sequence[str]] = ()
    INVALID: ClassVar[Sequence[Invalid]] = ()

    def __init__(self) -> None:
        pass

    @classmethod
    def docs_section(cls, title: str) -> str:
        """The text of one ``## Title`` section of the docs ("" when absent); the title is
        matched case-insensitively, ignoring a trailing "?"."""
        wanted = title.strip().rstrip("?").lower()
        lines: list[str] = []
        inside = False
        for line in cls.docs.splitlines():
            if line.startswith("#"):
                if inside:
                    break
                inside = line.lstrip("#").strip().rstrip("?").lower() == wanted
                continue
            if inside:
                lines.append(line)
        return "\n".join(lines).strip()

    @classmethod
    def summary(cls) -> str:
        """First sentence of the docs' "What it does" section: one line of prose for listings and
        SARIF's ``shortDescription`` (GitHub shows it at the top of every alert). Falls back to the
        rule's message when the docs have no such section."""
        paragraph = []
        for line in cls.docs_section("What it does").splitlines():
            stripped = line.strip()
            # The first paragraph only: stop at a blank line, a list, a table or a code block.
            if not stripped or stripped.startswith(("- ", "* ", "|", "```", "#")):
                break
            paragraph.append(stripped)
        sentence = first_sentence(" ".join(paragraph))
        return sentence or cls.message

    @classmethod
    def help_url(cls, template: Optional[str]) -> Optional[str]:
        """The rule's documentation page from the ``docs-url`` setting (``{code}`` and ``{name}``
        are replaced), or None when no documentation URL is configured: fusionlint publishes no
        docs site of its own, and a made-up link is worse than none."""
        if not template:
            return None
        return template.replace("{code}", cls.code).replace("{name}", cls.name)


# Abbreviations whose dot does not end a sentence.
_ABBREVIATIONS = ("e.g.", "i.e.", "vs.", "cf.", "etc.)")


def first_sentence(text: str) -> str:
    """The first sentence of one paragraph of markdown prose, ending in a full stop.

    A sentence ends at ``.``, ``!``, ``?`` or ``:`` followed by a space or the end, outside
    inline code (so `t.item()` does not end it) and not after "e.g." and friends. A sentence
    that introduces something with ":" gets a full stop instead.
    """
    in_code = False
    for i, ch in enumerate(text):
        if ch == "`":
            in_code = not in_code
            continue
        if in_code or ch not in ".!?:":
            continue
        if i + 1 < len(text) and not text[i + 1].isspace():
            continue
        head = text[: i + 1]
        if head.lower().endswith(_ABBREVIATIONS):
            continue
        return head[:-1] + "." if ch == ":" else head
    text = text.strip()
    return text + "." if text and text[-1] not in ".!?" else text
