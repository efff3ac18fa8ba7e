"""Facts that cross file boundaries, gathered from raw text before any file is parsed.

The run needs a few project-wide answers before it lints one file: which class names are
``nn.Module`` / ``autograd.Function`` subclasses (``class Block(MyBase)`` where ``MyBase`` lives
elsewhere), which functions are decorated ``torch.compiler.disable``, and where attributes are
assigned (``model.threshold = ...``). A regular-expression scan answers them at a small fraction
of a parse, so the index never costs a parse and screening can still skip most files.
"""

from __future__ import annotations

import re
from collections import defaultdict
from dataclasses import dataclass, field

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
# `obj.attr = value` and `obj.attr op= value`, but not `==`, `<=`, `>=`, `!=`.
_ATTR_WRITE_RE = re.compile(r"\b(\w+)\.(\w+)[ \t]*(?:[-+*/%@&|^]|//|\*\*|<<|>>)?=(?!=)")

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


@dataclass
class ProjectIndex:
    """What one run knows about all of its files."""

    # class name -> base expressions as written (last component is enough to chase local bases)
    class_bases: dict[str, list[str]] = field(default_factory=lambda: defaultdict(list))
    disabled_functions: set[str] = field(default_factory=set)
    attribute_writes: dict[str, list[tuple[str, int]]] = field(default_factory=lambda: defaultdict(list))
    _kind_cache: dict[str, str | None] = field(default_factory=dict)

    def add_file(self, path: str, text: str) -> None:
        for match in _CLASS_RE.finditer(text):
            bases = [b.strip() for b in match.group(2).split(",")]
            self.class_bases[match.group(1)].extend(b for b in bases if b and "=" not in b)
        if "disable" in text:
            for match in _DISABLE_RE.finditer(text):
                self.disabled_functions.add(match.group(2))
            for match in _DISABLE_ASSIGN_RE.finditer(text):
                self.disabled_functions.add(match.group(1))
        for match in _ATTR_WRITE_RE.finditer(text):
            if match.group(1) == "self":
                continue  # per-class writes come from the parsed file itself
            line = text.count("\n", 0, match.start()) + 1
            self.attribute_writes[match.group(2)].append((path, line))
        self._kind_cache.clear()

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


def base_kind(base: str, lookup) -> str | None:
    """Classify one base expression as written (``nn.Module``, ``MyBase``, ``torch.autograd.Function``)."""
    if base in MODULE_ROOTS or base.startswith(("nn.", "torch.nn.")) and is_torch_module_base(
        "torch.nn." + base.rsplit(".", 1)[-1]
    ):
        return "module"
    if base in FUNCTION_ROOTS:
        return "autograd_function"
    return lookup(base.rsplit(".", 1)[-1])
