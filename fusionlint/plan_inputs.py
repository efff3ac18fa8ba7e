"""What a file's lint reads of CPython's tree, made where the summary already parsed it.

The static pass parses every file with CPython to summarise it for the project model, and, until
this module, parsed each linted file with CPython a second time: the sparse plan (``fusionlint.sparse``)
needs the names each definition uses, the descriptions of the methods it may leave out and the
file's outline (size, depth, top-level definitions). Keeping the trees from the first parse to the
lint is out of the question (tens of MB per large file, and the summaries are made in other processes
than the lint), but what the plan reads of a tree is small. So the summary's parse also makes a
file's ``PlanInputs`` (``sparse.prepare``: the same functions on the same tree) and this store writes
them, pickled, into a directory private to the run; the lint takes them back instead of parsing the
file again when the text it reads is the one summarised (its hash and length). A file with nothing
stored (no compiled-code marker in its text, a text changed since, a store that failed to write) is
parsed again as before, so the plan is the same either way.

The directory holds one file per summarised file; the run's processes are forks of the one that made
it (the summary workers, the lint workers), and it is removed when the run ends.
"""

from __future__ import annotations

import ast
import hashlib
import os
import pickle
import shutil
import tempfile
from dataclasses import dataclass
from typing import Optional

from fusionlint.outline import Outline

# A file whose text holds none of these has no forward/backward method, autograd Function or compile
# call: it is linted only when the project model reaches one of its functions from another file (the
# engine's own screen), and then parsed again. Keeping its inputs would cost more than that parse.
COMPILED_MARKERS = ("forward", "compile", "Function", "backward")


@dataclass
class PlanInputs:
    outline: Outline
    names: object  # fusionlint.sparse.CodeNames, with the left-out methods' descriptions made


class PlanInputStore:
    """``put`` a summarised file's plan inputs; ``get`` them back for the very same text."""

    def __init__(self, directory: str, linted: Optional[frozenset[str]] = None) -> None:
        self.directory = directory
        # the display paths of the files the run lints (None: any): the model also summarises the
        # project's other files (pre-commit names a few files of thousands), whose inputs no one reads
        self.linted = linted

    @classmethod
    def create(cls, linted: Optional[frozenset[str]] = None) -> Optional["PlanInputStore"]:
        try:
            return cls(tempfile.mkdtemp(prefix="fusionlint-plan-"), linted)
        except OSError:  # no writable temporary directory: every linted file is parsed again
            return None

    def _file(self, shown: str) -> str:
        return os.path.join(self.directory, hashlib.sha1(shown.encode("utf-8", "surrogatepass")).hexdigest())

    def put(self, shown: str, text: str, tree: ast.Module) -> None:
        """Store the plan inputs of ``text`` (``shown``), made from its CPython ``tree``."""
        if self.linted is not None and shown not in self.linted:
            return
        if not any(marker in text for marker in COMPILED_MARKERS):
            return
        from fusionlint import sparse  # (libcst under it: imported only by a run that analyses files)
        from fusionlint.outline import outline_of
        from fusionlint.precheck import MAX_NODES

        try:
            inputs = PlanInputs(outline_of(tree, text, MAX_NODES), sparse.prepare(tree, text))
            data = pickle.dumps((hash(text), len(text), inputs), protocol=pickle.HIGHEST_PROTOCOL)
            path = self._file(shown)
            partial = f"{path}.{os.getpid()}.partial"
            with open(partial, "wb") as fh:
                fh.write(data)
            os.replace(partial, path)  # a reader sees a whole file or none
        except Exception:  # noqa: BLE001 - only a saving: the lint parses the file again
            return

    def get(self, shown: str, text: str) -> Optional[PlanInputs]:
        try:
            with open(self._file(shown), "rb") as fh:
                text_hash, length, inputs = pickle.loads(fh.read())
        except Exception:  # noqa: BLE001 - none stored, or unreadable: the lint parses the file
            return None
        if text_hash != hash(text) or length != len(text):
            return None
        return inputs

    def close(self) -> None:
        shutil.rmtree(self.directory, ignore_errors=True)
