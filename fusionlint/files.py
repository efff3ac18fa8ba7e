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

import fnmatch
import hashlib
import io
import os
import re
import stat
import tempfile
import tokenize
from dataclasses import dataclass
from pathlib import Path
from typing import Optional, Sequence, Union

from fusionlint.rule import FileError

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


@dataclass(frozen=True)
class _Pattern:
    regex: "re.Pattern[str]"
    negated: bool
    dir_only: bool


def _glob_to_regex(pattern: str) -> str:
    """Translate one gitignore glob (already stripped of ``!``, leading and trailing ``/``).

    Differences from fnmatch that matter: ``*`` and ``?`` never cross a ``/``, and ``**``
    as a whole path segment means "any number of directories, including none".
    """
    out: list[str] = []
    i, n = 0, len(pattern)
    while i < n:
        c = pattern[i]
        if c == "*":
            if pattern.startswith("**", i):
                at_seg_start = i == 0 or pattern[i - 1] == "/"
                after = i + 2
                if at_seg_start and after < n and pattern[after] == "/":
                    out.append("(?:.*/)?")  # "**/": zero or more leading directories
                    i = after + 1
                    continue
                if at_seg_start and after == n:
                    out.append(".*")  # trailing "/**": everything inside
                    i = after
                    continue
                # Any other "**" is, per git, just two ordinary stars.
                out.append("[^/]*")
                i = after
                continue
            out.append("[^/]*")
        elif c == "?":
            out.append("[^/]")
        elif c == "[":
            j = i + 1
            if j < n and pattern[j] in "!^":
                j += 1
            if j < n and pattern[j] == "]":
                j += 1
            while j < n and pattern[j] != "]":
                j += 1
            if j >= n:  # unterminated class: a literal "["
                out.append(re.escape(c))
            else:
                body = pattern[i + 1 : j]
                if body[:1] in ("!", "^"):
                    body = "^" + body[1:]
                out.append("[" + body.replace("\\", "\\\\") + "]")
                i = j
        elif c == "\\" and i + 1 < n:
            i += 1
            out.append(re.escape(pattern[i]))
        else:
            out.append(re.escape(c))
        i += 1
    return "".join(out)


def parse_gitignore(text: str) -> list[_Pattern]:
    """Parse the text of one ``.gitignore`` file into patterns, in file order."""
    patterns: list[_Pattern] = []
    for raw in text.splitlines():
        line = raw
        # Trailing spaces are ignored unless escaped with a backslash.
        stripped = line.rstrip(" \t")
        if stripped.endswith("\\") and len(stripped) < len(line):
            stripped += line[len(stripped)]
        line = stripped
        if not line or line.startswith("#"):
            continue
        negated = line.startswith("!")
        if negated:
            line = line[1:]
        elif line.startswith("\\!") or line.startswith("\\#"):
            line = line[1:]
        dir_only = line.endswith("/")
        line = line.rstrip("/")
        if not line:
            continue
        # A slash at the start or in the middle anchors the pattern to the .gitignore's
        # directory; otherwise it matches a name at any depth below it.
        anchored = "/" in line
        line = line.lstrip("/")
        body = _glob_to_regex(line)
        if not anchored:
            body = "(?:.*/)?" + body
        patterns.append(_Pattern(re.compile(body, re.DOTALL), negated, dir_only))
    return patterns


# One .gitignore in effect: its directory (absolute) and its patterns.
_IgnoreFile = tuple[str, list[_Pattern]]


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
    patterns = parse_gitignore(text)
    return (directory, patterns) if patterns else None


def _gitignored(abs_path: str, is_dir: bool, ignores: Sequence[_IgnoreFile]) -> bool:
    """Git's rule: the last matching pattern decides, deeper .gitignore files come later."""
    ignored = False
    for base, patterns in ignores:
        # Both sides are absolute and normalised: a prefix test is enough (and much cheaper
        # than os.path.relpath, which this runs for every entry of the tree).
        rel = _under(abs_path, base)
        if rel is None or rel == ".":
            continue
        for pat in patterns:
            if pat.dir_only and not is_dir:
                continue
            if pat.regex.fullmatch(rel):
                ignored = not pat.negated
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
    twice through symlinks is linted once), in the form the user gave them (a relative argument
    yields relative paths); errors for things found but not walkable (broken symlinks,
    unreadable directories, symlink loops). Raises ``UsageError`` for a path that does not exist.
    """
    root_abs = os.path.abspath(root)
    globs = tuple(exclude) + tuple(extend_exclude)
    by_real: dict[str, Path] = {}
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
            # Named explicitly: linted whatever its name, excludes or .gitignore say.
            by_real.setdefault(os.path.realpath(arg), arg)
            continue
        arg_abs = os.path.abspath(arg)
        arg_real = os.path.realpath(arg_abs)
        ignores = _ancestor_ignores(arg_abs, root_abs) if respect_gitignore else []
        for rel, via_link in _walk(arg_abs, root_abs, globs, respect_gitignore, ignores, errors):
            # realpath costs a syscall per path component; only symlinks make it necessary.
            if via_link:
                key = os.path.realpath(os.path.join(arg_abs, rel))
            else:
                key = os.path.join(arg_real, rel)
            # Give results back relative to the argument as the user wrote it.
            by_real.setdefault(key, arg / rel)

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


def read_source_encoded(path: Path, *, max_bytes: int = DEFAULT_MAX_BYTES) -> tuple[str, str]:
    """``(text, encoding)``; ``encoding`` is what ``atomic_write`` needs to reproduce the bytes.

    It is the cookie's codec (a latin-1 file must not come back as UTF-8 under a latin-1
    cookie) or ``"utf-8-sig"`` when the file starts with a BOM (so the BOM is kept).
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
    return decode_source(data)


def decode_source(data: bytes) -> tuple[str, str]:
    """Decode Python source bytes (a file's, or stdin's) as the interpreter would: ``(text, encoding)``.

    Raises ``SourceError`` for NUL bytes, a bad coding cookie or bytes the encoding rejects.
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
    try:
        return data.decode(encoding), encoding
    except UnicodeDecodeError as exc:
        line = _line_of(data, exc.start)
        bad = data[exc.start : exc.start + 1].hex()
        raise SourceError(
            f"cannot decode file as {encoding}: invalid byte 0x{bad} at byte offset "
            f"{exc.start} (line {line})",
            line=line,
        ) from None


# --------------------------------------------------------------------------- paths & writing


def _under(path: str, root: str) -> Optional[str]:
    if path == root:
        return "."
    prefix = root if root.endswith(os.sep) else root + os.sep
    if not path.startswith(prefix):
        return None
    return path[len(prefix) :].replace(os.sep, "/")


def display_path(path: Path, root: Path) -> str:
    """Root-relative POSIX path when ``path`` lies under ``root``; otherwise ``path`` as given."""
    rel = _under(os.path.abspath(path), os.path.abspath(root))
    if rel is None:
        # Symlinks (e.g. /tmp -> /private/tmp) can hide that a path is under the root.
        rel = _under(os.path.realpath(path), os.path.realpath(root))
    return rel if rel is not None else Path(path).as_posix()


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
    if st.st_nlink > 1 or not _replace_keeping_owner(target, data, st):
        _write_in_place(target, data)


def _replace_keeping_owner(target: Path, data: bytes, st: os.stat_result) -> bool:
    """Atomic replace with the old file's mode, owner and group; False when the owner cannot be kept."""
    fd, tmp = tempfile.mkstemp(dir=target.parent, prefix=f".{target.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "wb") as fh:
            fh.write(data)
            fh.flush()
            os.fsync(fh.fileno())
        os.chmod(tmp, stat.S_IMODE(st.st_mode))
        if (st.st_uid, st.st_gid) != (os.geteuid(), os.getegid()):
            try:
                os.chown(tmp, st.st_uid, st.st_gid)
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

    ``text`` is written byte for byte (``newline=""``): callers pass the file's own newline
    style and it is kept. The original permission bits are kept; a symlink is followed so the
    link stays a link and its target gets the new content.
    """
    target = Path(os.path.realpath(path))
    try:
        mode: Optional[int] = stat.S_IMODE(os.stat(target).st_mode)
    except FileNotFoundError:
        mode = None
    fd, tmp = tempfile.mkstemp(dir=target.parent, prefix=f".{target.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "w", encoding=encoding, newline="") as fh:
            fh.write(text)
            fh.flush()
            os.fsync(fh.fileno())
        # mkstemp creates 0600; a fixed file must keep its mode (e.g. an executable script).
        os.chmod(tmp, mode if mode is not None else 0o644)
        os.replace(tmp, target)
    except BaseException:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        raise
    _fsync_dir(target.parent)
