"""Finding the files to lint, reading them safely, and writing fixed files back.

Three jobs, all free of torch and libcst:

* ``discover``: expand the paths given on the command line into a sorted list of Python files,
  skipping what nobody wants linted (VCS metadata, virtualenvs, build output, caches, what
  ``.gitignore`` excludes, the user's ``exclude`` globs). A file named explicitly is always linted.
* ``read_source``: bytes -> text the way the Python interpreter itself would decode them
  (PEP 263 cookie, UTF-8 BOM), turning every way that can fail into a ``SourceError`` with a
  message a user can act on, never a traceback.
* ``atomic_write``: replace a file so a crash or Ctrl-C mid-write never leaves it truncated
  (reports, outputs); ``write_fixed``: write a fix back only if the file is still what was read,
  keeping its owner, mode and hard links.
"""

from __future__ import annotations

import codecs
import fnmatch
import hashlib
import io
import os
import stat
import tempfile
import tokenize
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Optional, Sequence, Union

from fusionlint.rule import FileError

if TYPE_CHECKING:  # pragma: no cover
    import pathspec

PYTHON_SUFFIXES = (".py", ".pyi")

# Directory names never worth descending into. Applied to directories found while walking,
# never to a directory the user named explicitly (they asked for it).
DEFAULT_SKIP_NAMES = frozenset(
    {
        ".git",
        ".hg",
        ".svn",
        ".venv",
        "venv",
        ".tox",
        ".nox",
        "build",
        "dist",
        "__pycache__",
        ".eggs",
        "node_modules",
        ".mypy_cache",
        ".pytest_cache",
    }
)
DEFAULT_SKIP_GLOBS = ("*.egg-info",)

NOT_REGULAR = "not a regular file (FIFO, socket or device): skipped"

DEFAULT_MAX_BYTES = 10_000_000  # 10 MB: larger .py files are generated data, not models

PathLike = Union[str, "os.PathLike[str]"]


class UsageError(Exception):
    """A problem with how fusionlint was invoked (exit code 2), e.g. a path that does not exist."""


class SourceError(Exception):
    """A file that cannot be turned into text; ``line`` points at the culprit when known."""

    def __init__(self, message: str, line: Optional[int] = None) -> None:
        super().__init__(message)
        self.message = message
        self.line = line


# --------------------------------------------------------------------------- gitignore

# pathspec implements git's wildmatch rules (negation, dir-only, anchoring, ``**``, escapes);
# the RE2 backend matches in time linear in the path, where Python's ``re`` backtracks
# exponentially on patterns like ``*a*a*a*a*a*a*a*ab`` (README, "Design notes").
_GITIGNORE_BACKEND = "re2"


def parse_gitignore(text: str) -> "Optional[pathspec.GitIgnoreSpec]":
    """Compile the text of one ``.gitignore`` file; None when it holds no pattern."""
    import pathspec  # here, not at the top: a tree without a .gitignore (or a warm cached run) never pays its import

    lines = text.splitlines()
    try:
        spec = pathspec.GitIgnoreSpec.from_lines(lines, backend=_GITIGNORE_BACKEND)
    except ValueError:
        # One bad line (e.g. a trailing lone backslash) must not void the others: git skips it.
        kept = []
        for line in lines:
            try:
                pathspec.GitIgnoreSpec.from_lines([line], backend=_GITIGNORE_BACKEND)
            except ValueError:
                continue
            kept.append(line)
        spec = pathspec.GitIgnoreSpec.from_lines(kept, backend=_GITIGNORE_BACKEND)
    if not any(p.include is not None for p in spec.patterns):
        return None  # only comments and blank lines
    return spec


# One .gitignore in effect: its directory (absolute) and its compiled patterns.
_IgnoreFile = tuple[str, "pathspec.GitIgnoreSpec"]


def _load_gitignore(directory: str) -> Optional[_IgnoreFile]:
    path = os.path.join(directory, ".gitignore")
    try:
        with open(path, encoding="utf-8", errors="replace") as fh:
            text = fh.read()
    except (FileNotFoundError, NotADirectoryError, IsADirectoryError):
        return None
    except OSError:
        # An unreadable .gitignore is not worth failing the run over; git would warn too.
        return None
    spec = parse_gitignore(text)
    return (directory, spec) if spec is not None else None


def _gitignored(abs_path: str, is_dir: bool, ignores: Sequence[_IgnoreFile]) -> bool:
    """Git's rule: the last matching pattern decides, deeper .gitignore files come later."""
    ignored = False
    for base, spec in ignores:
        # Both sides are absolute and normalised: a prefix test is enough (and much cheaper
        # than os.path.relpath, which this runs for every entry of the tree).
        rel = _under(abs_path, base)
        if rel is None or rel == ".":
            continue
        # A trailing slash tells pathspec the entry is a directory (for "dir/" patterns).
        verdict = spec.check_file(rel + "/" if is_dir else rel).include
        if verdict is not None:  # None: no pattern of this file matched
            ignored = verdict
    return ignored


def _ancestor_ignores(directory: str, root: str) -> list[_IgnoreFile]:
    """The .gitignore files above ``directory`` that apply to it, outermost first.

    The walk up stops at the repository root (a directory holding ``.git``) or at the
    project root, whichever comes first, so a stray ~/.gitignore never hides project files.
    """
    found: list[_IgnoreFile] = []
    current = directory
    while True:
        if current != directory:  # the directory's own .gitignore is loaded by the walk
            loaded = _load_gitignore(current)
            if loaded:
                found.append(loaded)
        if current == root or os.path.exists(os.path.join(current, ".git")):
            break
        parent = os.path.dirname(current)
        if parent == current:
            break
        current = parent
    found.reverse()
    return found


# --------------------------------------------------------------------------- discovery


def _glob_excluded(rel_posix: str, name: str, globs: Sequence[str]) -> bool:
    # fnmatchcase: the same answer on every OS. Parents were already tested on the way down,
    # so testing the full relative path and the entry's own name covers every component.
    for pattern in globs:
        pattern = pattern.rstrip("/") or pattern
        if fnmatch.fnmatchcase(name, pattern) or fnmatch.fnmatchcase(rel_posix, pattern):
            return True
    return False


def _default_skipped_dir(name: str, abs_path: str) -> bool:
    if name in DEFAULT_SKIP_NAMES:
        return True
    if any(fnmatch.fnmatchcase(name, g) for g in DEFAULT_SKIP_GLOBS):
        return True
    # Any virtualenv, whatever its name, is marked by pyvenv.cfg (PEP 405).
    return os.path.exists(os.path.join(abs_path, "pyvenv.cfg"))


def _dir_key(path: str) -> Optional[tuple[int, int]]:
    try:
        st = os.stat(path)
    except OSError:
        return None
    return (st.st_dev, st.st_ino)


def discover(
    paths: Sequence[PathLike],
    *,
    root: Path,
    exclude: Sequence[str] = (),
    extend_exclude: Sequence[str] = (),
    respect_gitignore: bool = True,
) -> tuple[list[Path], list[FileError]]:
    """Expand ``paths`` into the Python files to lint.

    Returns ``(files, errors)``: files sorted and deduplicated (by real path, so a file reached
    twice through symlinks is linted once, under its own path when that is among the files
    found, else under the link's name), in the form the user gave them (a relative argument
    yields relative paths); errors for things found but not walkable (broken symlinks,
    unreadable directories, symlink loops). Raises ``UsageError`` for a path that does not exist.
    """
    root_abs = os.path.abspath(root)
    globs = tuple(exclude) + tuple(extend_exclude)
    by_real: dict[str, Path] = {}
    via_links: set[str] = set()  # keys of by_real whose path so far goes through a symlink

    def add(key: str, path: Path, via_link: bool) -> None:
        # One name per real file, whatever the order of the arguments: the file's own path when
        # it is among the files found, else the name of the (first) link that reaches it.
        if key not in by_real or (key in via_links and not via_link):
            by_real[key] = path
            (via_links.add if via_link else via_links.discard)(key)
    errors: list[FileError] = []

    def error(path: Path, message: str) -> None:
        errors.append(FileError(path=display_path(path, Path(root_abs)), message=message))

    for given in paths:
        arg = Path(given)
        if not os.path.lexists(arg):
            raise UsageError(f"path does not exist: {arg.as_posix()}")
        if not os.path.exists(arg):
            error(arg, "broken symlink")
            continue
        if not arg.is_dir():
            if not arg.is_file():
                # A FIFO, socket or device: opening it could block forever (a FIFO waits
                # for a writer), so it is reported and never opened.
                error(arg, NOT_REGULAR)
                continue
            # Named explicitly: linted whatever its name, excludes or .gitignore say.
            add(os.path.realpath(arg), arg, os.path.islink(arg))
            continue
        arg_abs = os.path.abspath(arg)
        arg_real = os.path.realpath(arg_abs)
        ignores = _ancestor_ignores(arg_abs, root_abs) if respect_gitignore else []
        if ignores and _gitignored(arg_abs, True, ignores):
            # The user named a directory that a .gitignore above it excludes (vendored code, a corpus
            # under an ignored folder): walk it. Only the .gitignore files inside it apply then, since
            # git's rules would exclude every file below an ignored directory.
            ignores = []
        for rel, via_link in _walk(arg_abs, root_abs, globs, respect_gitignore, ignores, errors):
            # realpath costs a syscall per path component; only symlinks make it necessary.
            if via_link:
                key = os.path.realpath(os.path.join(arg_abs, rel))
            else:
                key = os.path.join(arg_real, rel)
            # Give results back relative to the argument as the user wrote it.
            add(key, arg / rel, via_link)

    files = sorted(by_real.values(), key=lambda p: p.as_posix())
    errors.sort(key=lambda e: e.path)
    return files, errors


def _walk(
    top: str,
    root_abs: str,
    globs: Sequence[str],
    respect_gitignore: bool,
    inherited: list[_IgnoreFile],
    errors: list[FileError],
) -> list[tuple[str, bool]]:
    """Walk ``top`` iteratively (no recursion limit on deep trees).

    Returns ``(path relative to top, reached through a symlink?)`` for each Python file.
    Paths are kept as plain strings: building Path objects per entry dominated the run time.
    """
    found: list[tuple[str, bool]] = []
    # Root-relative POSIX prefix of `top` for the exclude globs (as-given path if outside root).
    top_from_root = _under(top, root_abs) or Path(top).as_posix()
    top_key = _dir_key(top)
    # Each entry: (absolute dir, dir relative to top, .gitignores in effect, device/inode keys
    # of the directories above it, reached via a symlink?). The ancestor keys tell a symlink
    # loop from a harmless second link to the same directory.
    stack: list[tuple[str, str, list[_IgnoreFile], frozenset, bool]] = [
        (top, "", inherited, frozenset({top_key}) if top_key else frozenset(), False)
    ]
    visited: set[tuple[int, int]] = {top_key} if top_key else set()

    def shown(rel: str) -> str:  # root-relative POSIX path of an entry, for globs and errors
        rel = rel.replace(os.sep, "/")
        return rel if top_from_root == "." else f"{top_from_root}/{rel}"

    while stack:
        directory, rel_dir, ignores, ancestors, via_link = stack.pop()
        if respect_gitignore:
            own = _load_gitignore(directory)
            if own:
                ignores = ignores + [own]
        try:
            with os.scandir(directory) as it:
                entries = sorted(it, key=lambda e: e.name)
        except OSError as exc:
            errors.append(
                FileError(
                    path=shown(rel_dir) if rel_dir else top_from_root,
                    message=f"cannot read directory: {exc.strerror or exc}",
                )
            )
            continue
        subdirs = []
        for entry in entries:
            path = entry.path
            rel = os.path.join(rel_dir, entry.name) if rel_dir else entry.name
            try:
                is_dir = entry.is_dir()  # follows symlinks
                is_link = entry.is_symlink()
            except OSError:
                continue
            if is_dir and _default_skipped_dir(entry.name, path):
                continue
            if globs and _glob_excluded(shown(rel), entry.name, globs):
                continue
            if respect_gitignore and ignores and _gitignored(path, is_dir, ignores):
                continue
            if is_dir:
                key = _dir_key(path)
                if key is None:
                    continue
                if key in ancestors:
                    errors.append(FileError(path=shown(rel), message="symlink loop"))
                    continue
                if key in visited:
                    continue  # a second link to a directory already walked: lint it once
                visited.add(key)
                subdirs.append((path, rel, ignores, ancestors | {key}, via_link or is_link))
            elif entry.name.endswith(PYTHON_SUFFIXES):
                if is_link and not os.path.exists(path):
                    # Only a would-be Python file is worth reporting; a dangling link to
                    # some asset is none of our business.
                    errors.append(FileError(path=shown(rel), message="broken symlink"))
                    continue
                try:
                    regular = entry.is_file()  # follows symlinks; from the dirent, no open()
                except OSError:
                    regular = False
                if not regular:
                    errors.append(FileError(path=shown(rel), message=NOT_REGULAR))
                    continue
                found.append((rel, via_link or is_link))
        # Reverse so the stack pops subdirectories in name order.
        stack.extend(reversed(subdirs))
    return found


# --------------------------------------------------------------------------- reading


def _size(n: int) -> str:
    if n < 1_000_000:
        return f"{n} bytes"
    return f"{n / 1e6:.1f}".removesuffix(".0") + " MB"


def _line_of(data: bytes, offset: int) -> int:
    return data.count(b"\n", 0, offset) + 1


def read_source(path: Path, *, max_bytes: int = DEFAULT_MAX_BYTES) -> str:
    """Decode a Python file as the interpreter would; newlines are left as in the file.

    Raises ``SourceError`` for an unreadable, oversized, NUL-containing or undecodable file.
    A UTF-8 BOM is removed; see ``read_source_encoded`` to write the file back faithfully.
    """
    return read_source_encoded(path, max_bytes=max_bytes)[0]


class CurrentText:
    """A file's text as it is on disk now, "" once it is gone or unreadable: what the name index reads
    again for its rare whole-project text searches instead of keeping every text (``reread``)."""

    def __init__(self, path: Path) -> None:
        self.path = path

    def __call__(self) -> str:
        try:
            return read_source(self.path)
        except (SourceError, OSError):  # gone or broken since: it has nothing to contribute
            return ""


def read_source_encoded(path: Path, *, max_bytes: int = DEFAULT_MAX_BYTES, writable: bool = False) -> tuple[str, str]:
    """``(text, encoding)``; ``encoding`` is what ``atomic_write`` needs to reproduce the bytes.

    It is the cookie's codec (a latin-1 file must not come back as UTF-8 under a latin-1
    cookie) or ``"utf-8-sig"`` when the file starts with a BOM (so the BOM is kept).
    ``writable`` (for ``--fix``): also refuse a file whose codec cannot encode its text back.
    """
    try:
        with open(path, "rb") as fh:
            # Check the size before reading: a 2 GB generated file must not be slurped.
            size = os.fstat(fh.fileno()).st_size
            if size > max_bytes:
                shown, limit = _size(size), _size(max_bytes)
                if shown == limit:  # rounding hid the difference: be exact
                    shown, limit = f"{size} bytes", f"{max_bytes} bytes"
                raise SourceError(f"file too large ({shown} > {limit} limit)")
            data = fh.read(max_bytes + 1)
    except SourceError:
        raise
    except OSError as exc:
        raise SourceError(f"cannot read file: {exc.strerror or exc}") from None
    if len(data) > max_bytes:  # grew between fstat and read, or a pseudo-file with size 0
        raise SourceError(f"file too large (> {_size(max_bytes)} limit)")
    return decode_source(data, writable=writable)


def decode_source(data: bytes, *, writable: bool = False) -> tuple[str, str]:
    """Decode Python source bytes (a file's, or stdin's) as the interpreter would: ``(text, encoding)``.

    Raises ``SourceError`` for NUL bytes, a bad coding cookie or bytes the encoding rejects;
    ``writable``: also for a codec that cannot encode the text back to the same bytes.
    """
    if not data:
        return "", "utf-8"
    nul = data.find(b"\x00")
    if nul != -1:
        # CPython refuses these too ("source code cannot contain null bytes").
        raise SourceError("file contains NUL bytes", line=_line_of(data, nul))
    try:
        encoding, _ = tokenize.detect_encoding(io.BytesIO(data).readline)
    except SyntaxError as exc:
        # detect_encoding also raises when a first line without any cookie is not UTF-8: that is
        # a decoding problem, not a bad declaration, and the decode below says where it is.
        if b"coding" in b"\n".join(data.splitlines()[:2]):
            raise SourceError(f"bad encoding declaration: {exc.msg}", line=exc.lineno) from None
        encoding = "utf-8"
    text = _decode(data, encoding)
    if writable and not _round_trips(text, data, encoding):
        raise SourceError(
            f"cannot fix a file declared as {encoding!r}: that codec does not give the file's bytes back",
            line=_cookie_line(data),
        )
    return text, encoding


def _decode(data: bytes, encoding: str) -> str:
    """``data`` decoded with the cookie's codec; every way that fails is a ``SourceError``.

    A cookie may name any registered codec, and some are no text encodings (``rot13``, ``hex``,
    ``base64``, ``zlib``...: CPython refuses them with "is not a text encoding") or raise other
    errors than UnicodeDecodeError (``punycode``, ``undefined``).
    """
    try:
        is_text = codecs.lookup(encoding)._is_text_encoding
    except LookupError:  # detect_encoding looked it up already; a codec that vanished since
        raise SourceError(f"bad encoding declaration: unknown encoding {encoding!r}", line=_cookie_line(data)) from None
    if not is_text:
        raise SourceError(
            f"unsupported encoding declaration: {encoding!r} is not a text encoding", line=_cookie_line(data)
        )
    try:
        text = data.decode(encoding)
    except UnicodeDecodeError as exc:
        line = _line_of(data, exc.start)
        bad = data[exc.start : exc.start + 1].hex()
        raise SourceError(
            f"cannot decode file as {encoding}: invalid byte 0x{bad} at byte offset "
            f"{exc.start} (line {line})",
            line=line,
        ) from None
    except (UnicodeError, LookupError, ValueError, TypeError) as exc:
        raise SourceError(f"cannot decode file as {encoding}: {exc}", line=_cookie_line(data)) from None
    if not isinstance(text, str):  # a third-party codec flagged as text that returns something else
        raise SourceError(f"unsupported encoding declaration: {encoding!r} does not decode to text", line=_cookie_line(data))
    return text


def _round_trips(text: str, data: bytes, encoding: str) -> bool:
    """Would writing ``text`` back with ``encoding`` give ``data`` again?

    Checked both in one piece and the way a text file writes (an incremental encoder that is
    never told the text is final): ``idna`` cannot encode a label over 63 characters, and its
    incremental encoder holds back the last label, so a fixed file lost its end.
    """
    if encoding in ("utf-8", "utf-8-sig"):
        return True  # the decode was strict, so encoding gives the same bytes
    try:
        whole = text.encode(encoding)
        streamed = codecs.getincrementalencoder(encoding)().encode(text)
    except (UnicodeError, LookupError, ValueError, TypeError):
        return False
    return whole == data and streamed == data


def _cookie_line(data: bytes) -> int:
    """The line (1 or 2) of the encoding declaration."""
    first = data.split(b"\n", 1)[0]
    return 1 if b"coding" in first else 2


# --------------------------------------------------------------------------- paths & writing


def _under(path: str, root: str) -> Optional[str]:
    if path == root:
        return "."
    prefix = root if root.endswith(os.sep) else root + os.sep
    if not path.startswith(prefix):
        return None
    return path[len(prefix) :].replace(os.sep, "/")


def display_path(path: Path, root: Path) -> str:
    """Root-relative POSIX path when ``path`` lies under ``root``; otherwise its absolute path.

    Absolute, not as given, outside the root: a path relative to the current directory could not
    be told from a root-relative one by the reporters, which show paths relative to the current
    directory (``fusionlint.report.paths``).
    """
    return DisplayPaths(root)(path)


class DisplayPaths:
    """``display_path`` for many paths under one root, in one pass over a tree: the real path of the
    root and of each directory is worked out once. Symlinks (e.g. /tmp -> /private/tmp) can hide
    that a path is under the root, so a path outside it is compared again by real paths, and
    ``os.path.realpath`` stats every component of its argument: per file, on the 2,912 files of
    transformers linted beside a timm root, it was most of a warm cached run's own work."""

    def __init__(self, root: Path) -> None:
        self._root = os.path.abspath(root)
        self._real_root: Optional[str] = None
        self._real_dirs: dict[str, str] = {}

    def __call__(self, path: Path) -> str:
        absolute = os.path.abspath(path)
        rel = _under(absolute, self._root)
        if rel is None:
            if self._real_root is None:
                self._real_root = os.path.realpath(self._root)
            rel = _under(self._real(absolute), self._real_root)
        return rel if rel is not None else Path(absolute).as_posix()

    def _real(self, absolute: str) -> str:
        if os.path.islink(absolute):
            return os.path.realpath(absolute)
        directory, name = os.path.split(absolute)
        real = self._real_dirs.get(directory)
        if real is None:
            real = self._real_dirs[directory] = os.path.realpath(directory)
        return os.path.join(real, name)


@dataclass(frozen=True)
class Snapshot:
    """What a file was when it was read; a fix is written only if the file is still exactly that."""

    size: int
    mtime_ns: int
    inode: int
    digest: str

    @classmethod
    def take(cls, path: PathLike) -> "Snapshot":
        """Raises OSError when the file cannot be read."""
        with open(path, "rb") as fh:
            st = os.fstat(fh.fileno())
            digest = hashlib.sha256(fh.read()).hexdigest()
        return cls(st.st_size, st.st_mtime_ns, st.st_ino, digest)


class WriteRefused(Exception):
    """A fixed file that must not be written (it changed, is read-only, lies outside the project)."""


def write_fixed(path: Path, text: str, *, encoding: str, expected: Snapshot) -> None:
    """Write a fixed file back, but only if it is still what was read, and keep what it was.

    Refuses (``WriteRefused``) a file that changed or vanished since it was read (a deleted file is
    never re-created) and a read-only one. Owner, group, mode and hard links are kept: the new text
    replaces the file atomically when that keeps all of them, and is written in place otherwise (a
    file with several hard links, or owned by someone this process cannot hand a new file to).
    """
    target = Path(os.path.realpath(path))
    data = text.encode(encoding)  # before anything is touched: an unencodable fix changes nothing
    if data.decode(encoding) != text:  # a codec that does not round-trip (idna) would corrupt the file
        raise WriteRefused(f"the fixed text does not survive encoding as {encoding}; not fixed")
    try:
        now = Snapshot.take(target)
        st = os.stat(target)
    except FileNotFoundError:
        raise WriteRefused("file was deleted after it was read; not re-created") from None
    except OSError as exc:
        raise WriteRefused(f"cannot re-read file before writing: {exc.strerror or exc}") from None
    if now != expected:
        raise WriteRefused("file changed on disk after it was read; not fixed (run again)")
    if not st.st_mode & (stat.S_IWUSR | stat.S_IWGRP | stat.S_IWOTH):
        raise WriteRefused("file is read-only; not fixed")
    if st.st_nlink > 1 or not _replace(target, data, stat.S_IMODE(st.st_mode), (st.st_uid, st.st_gid)):
        _write_in_place(target, data)


def _replace(target: Path, data: bytes, mode: int, owner: Optional[tuple[int, int]] = None) -> bool:
    """Replace ``target`` atomically with ``data`` (readers see the old or the new file, never half).

    The new file gets ``mode`` and, when given, ``owner`` (uid, gid); False (nothing changed) when
    the owner cannot be given to it.
    """
    fd, tmp = tempfile.mkstemp(dir=target.parent, prefix=f".{target.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "wb") as fh:
            fh.write(data)
            fh.flush()
            os.fsync(fh.fileno())
        os.chmod(tmp, mode)  # mkstemp creates 0600
        if owner is not None and owner != (os.geteuid(), os.getegid()):
            try:
                os.chown(tmp, *owner)
            except PermissionError:
                os.unlink(tmp)
                return False
        os.replace(tmp, target)
    except BaseException:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        raise
    _fsync_dir(target.parent)
    return True


def _write_in_place(target: Path, data: bytes) -> None:
    # Keeps the inode (and so every hard link, the owner and any ACL); not atomic, so it is only used
    # when an atomic replace would lose one of those.
    with open(target, "r+b") as fh:
        fh.write(data)
        fh.truncate()
        fh.flush()
        os.fsync(fh.fileno())


def _fsync_dir(directory: Path) -> None:
    """Make a rename durable; best effort, some filesystems refuse."""
    if not hasattr(os, "O_DIRECTORY"):
        return
    try:
        dir_fd = os.open(directory, os.O_RDONLY | os.O_DIRECTORY)
    except OSError:
        return
    try:
        os.fsync(dir_fd)
    except OSError:
        pass
    finally:
        os.close(dir_fd)


def atomic_write(path: Path, text: str, *, encoding: str = "utf-8") -> None:
    """Replace ``path`` with ``text`` so readers see the old or the new file, never half of one.

    ``text`` is written byte for byte: callers pass the file's own newline style and it is kept.
    The original permission bits are kept; a symlink is followed so the link stays a link and its
    target gets the new content.
    """
    target = Path(os.path.realpath(path))
    data = text.encode(encoding)
    try:
        mode = stat.S_IMODE(os.stat(target).st_mode)
    except FileNotFoundError:
        mode = 0o644
    _replace(target, data, mode)
