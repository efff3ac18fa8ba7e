"""Discover the rules: every Rule subclass defined in a module of ``fusionlint.rules``."""

from __future__ import annotations

import functools
import importlib
import pkgutil
import re
from collections.abc import Mapping

from fusionlint.rule import Rule

_RULE_MODULE = re.compile(r"^FL\d{3}_\w+$")
_CODE = re.compile(r"^FL\d{3}$")
_NAME = re.compile(r"^[a-z0-9]+(-[a-z0-9]+)*$")


class RuleDefinitionError(Exception):
    pass


@functools.lru_cache(maxsize=1)
def all_rules() -> dict[str, type[Rule]]:
    """code -> Rule class, sorted by code. Import errors in a rule module are reported, not hidden."""
    import fusionlint.rules as package

    found: dict[str, type[Rule]] = {}
    for info in sorted(pkgutil.iter_modules(package.__path__), key=lambda m: m.name):
        if not _RULE_MODULE.match(info.name):
            continue
        module = importlib.import_module(f"{package.__name__}.{info.name}")
        for value in vars(module).values():
            if isinstance(value, type) and issubclass(value, Rule) and value is not Rule and value.__module__ == module.__name__:
                check_rule(value)
                if value.code in found:
                    raise RuleDefinitionError(f"duplicate rule code {value.code} in {module.__name__}")
                found[value.code] = value
    return dict(sorted(found.items()))


def check_rule(rule: type[Rule]) -> None:
    """Catch malformed rule classes at load time rather than as odd output later."""
    import libcst as cst  # here: a warm cached run lists no rule and never pays libcst's import

    for attr in ("code", "name", "message", "effects"):
        if not hasattr(rule, attr):
            raise RuleDefinitionError(f"{rule.__name__} lacks `{attr}`")
    if not _CODE.match(rule.code):
        raise RuleDefinitionError(f"{rule.__name__}: code {rule.code!r} is not FL###")
    if not _NAME.match(rule.name):
        raise RuleDefinitionError(f"{rule.__name__}: name {rule.name!r} is not kebab-case")
    if rule.scope not in ("compiled", "file"):
        raise RuleDefinitionError(f"{rule.__name__}: scope must be 'compiled' or 'file'")
    for node_type in handled_node_types(rule):
        if not isinstance(getattr(cst, node_type, None), type):
            raise RuleDefinitionError(f"{rule.__name__}: visit_{node_type} names no libcst node type")


@functools.lru_cache(maxsize=None)
def handled_node_types(rule: type[Rule]) -> frozenset[str]:
    return frozenset(name[len("visit_"):] for name in dir(rule) if name.startswith("visit_"))


def unknown_selectors(selectors: list[str], codes) -> list[str]:
    """Selectors (exact codes or prefixes, "ALL") that match no known rule code."""
    codes = list(codes)
    return [s for s in selectors if s.upper() != "ALL" and not any(c.startswith(s.upper()) for c in codes)]


class RulesOnDemand(Mapping):
    """``all_rules()`` as a mapping that imports the rules on first use: a reporter asks for rule
    metadata only for some formats (SARIF's descriptors, the text report's statistics), and a warm
    cached run that needs none is spared importing every rule module and libcst (~0.3 s)."""

    def __getitem__(self, code: str) -> type[Rule]:
        return all_rules()[code]

    def __iter__(self):
        return iter(all_rules())

    def __len__(self) -> int:
        return len(all_rules())
