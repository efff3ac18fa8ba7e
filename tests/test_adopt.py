"""``summary.adopt``: a summary made in another process (or loaded from the cache) shares its values with
this process's summaries, and stays equal to what was made."""

from __future__ import annotations

import dataclasses
import pickle

from fusionlint.project.summary import CallSite, adopt, adopt_values, summarize

SOURCE = (
    "import torch\nfrom torch import nn\n\n\n"
    "class Net(nn.Module):\n"
    "    def forward(self, hidden_states, mask=None):\n"
    "        x = self.proj(hidden_states)\n"
    "        if mask is not None:\n"
    "            x = helper(x, mask, scale=2)\n"
    "        return torch.relu(x)\n\n\n"
    "def helper(x, mask, scale=1):\n"
    "    return x.masked_fill(mask, 0) * scale\n"
)


def _made_elsewhere(text: str, path: str):
    """A summary as it comes out of a pickle (a worker's, or the cache's): nothing shared with this process."""
    return pickle.loads(pickle.dumps(summarize(text, path, path[:-3], False)))


def _call_sites(summary) -> list[CallSite]:
    return [site for fn in summary.functions.values() for site in fn.calls]


def test_an_adopted_summary_equals_what_was_made():
    made = summarize(SOURCE, "a.py", "a", False)
    assert adopt(_made_elsewhere(SOURCE, "a.py")) == made


def test_call_sites_of_two_files_share_every_field_once_adopted():
    first = _call_sites(adopt(_made_elsewhere(SOURCE, "a.py")))
    second = _call_sites(adopt(_made_elsewhere(SOURCE, "b.py")))
    assert len(first) == len(second) >= 2
    for one, other in zip(first, second):
        assert one == other and one is not other
        for field in dataclasses.fields(CallSite):
            value = getattr(one, field.name)
            if isinstance(value, (str, tuple, frozenset)) and value:  # (every field a call site has)
                assert getattr(other, field.name) is value, field.name


def test_a_value_shared_already_is_returned_as_it_is():
    sites = _call_sites(adopt(_made_elsewhere(SOURCE, "a.py")))
    args = next(site.args for site in sites if site.args)
    copy = pickle.loads(pickle.dumps(args))
    assert copy == args and copy is not args
    assert adopt_values(copy) is args


def _fresh(text: str) -> str:
    return "".join(list(text))  # a new string object, as an unpickled one is


# a value for every field of the objects ``adopt`` spells out field by field; a field added to one of
# them without a value here fails the test below (and may be missing from ``_adopt_function``)
_FIELD_VALUES = {
    "FunctionSummary": lambda: {
        "qualname": _fresh("Net.forward"), "name": _fresh("forward"), "cls": _fresh("Net"), "parent": _fresh("Net"),
        "params": (_fresh("p"),), "star": _fresh("args"), "decorators": (_fresh("torch.no_grad"),),
        "calls": (_fresh("c"),), "tensor_uses": frozenset({_fresh("x")}), "returns": (frozenset({("param", _fresh("x"))}),),
        "items": (2, frozenset({1})), "bool_items": frozenset({1}), "item_values": ((_fresh("v"),),),
        "wrappers": (_fresh("inner"),), "break_conds": ((_fresh("flag"), "==", "True", True),),
        "size_items": frozenset({0}), "flag_params": frozenset({_fresh("flag")}),
        "static": False, "line": 3, "breaks": 1, "break_line": 4, "returns_host": True, "returns_sparse": False,
        "call_lines": b"\x04\x00",
    },
    "CallSite": lambda: {
        "how": _fresh("name"), "target": _fresh("helper"), "args": ((_fresh("a"),),), "kwargs": ((_fresh("k"), ()),),
        "line": 7, "written": _fresh("helper"), "consts": ((_fresh("1"),), ()), "conds": ((_fresh("f"), "is", "None", True),),
        "every": True,
    },
}


def test_every_field_of_a_function_and_a_call_site_is_shared_once_adopted():
    from fusionlint.project import summary

    for name, values in _FIELD_VALUES.items():
        kind = getattr(summary, name)
        assert {f.name for f in dataclasses.fields(kind)} == set(values()), name
        one, other = adopt_values(kind(**values())), adopt_values(kind(**values()))
        assert one == other == kind(**values())
        for field in dataclasses.fields(kind):
            value = getattr(one, field.name)
            if isinstance(value, (str, tuple, frozenset)):
                assert getattr(other, field.name) is value, (name, field.name)
