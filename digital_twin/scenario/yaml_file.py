"""Reading a scenario file with bounded time and memory: size cap, alias cap, then YAML.

A scenario file comes from a user, so reading it must not hang or exhaust memory whatever it
holds. In order:

1. ``stat``: the path must be a regular file (opening a FIFO blocks; ``/dev/zero`` never
   ends) of at most :attr:`Limits.max_scenario_bytes` bytes; at most that many bytes are read.
2. YAML is composed into a node graph linear in the text (an alias ``*name`` is a reference to
   its anchored node, not a copy), at most :data:`MAX_DEPTH` lists and mappings deep (PyYAML's
   scanner takes time quadratic in the nesting and its composer recurses: ``[[[[...]]]]`` 5,000
   deep would take seconds, then overflow the stack). Before any Python value is built, the
   number of nodes the document holds *once its aliases are expanded* is counted, once per
   distinct node. Above
   :attr:`Limits.max_yaml_nodes` the file is refused: that is what an alias bomb ("billion
   laughs", nine aliases of nine aliases of ...) is, while anchors for a little reuse stay far
   below. A recursive alias (a list that contains itself) is refused too.
3. Only then is the document constructed (PyYAML's safe constructor, plain data only).

Where PyYAML was built with libyaml (``yaml.__with_libyaml__``), the text is scanned and parsed
by libyaml's C parser (which keeps its own stack: it does not recurse) and composed by PyYAML's
composer with the same depth and alias checks as above; a 4 MB file of 40,000 inline jobs is read
in about 3 s instead of 13. The text is checked first as PyYAML's reader checks it (UTF-8, or
UTF-16 with a byte-order mark; no control characters), and any file the C parser refuses is read
again by the pure-Python loader, so every message is the same with or without libyaml.

Every failure is one line naming the file and, for YAML errors, the line and column: bytes that
are not UTF-8 (or UTF-16 with a byte-order mark) text, control characters (a binary file),
syntax errors, and scalars PyYAML cannot convert (``!!timestamp x``, ``2001-13-45``,
``!!int abc``, ``!!bool maybe``).

Both limits are checked before the file's own ``limits:`` mapping is read, so only the caller
can raise them.
"""

from __future__ import annotations

import codecs
import hashlib
import os
from pathlib import Path

import yaml

from digital_twin._files import not_a_file_reason, read_at_most
from digital_twin.errors import one_line, short_repr
from digital_twin.limits import Limits, count
from digital_twin.scenario.schema import ScenarioError

MAX_DEPTH = 100
"""Deepest nesting of lists and mappings a scenario file may have (the bundled ones nest 5 deep)."""


def read_scenario_file(path: Path, limits: Limits) -> tuple[object, str]:
    """The YAML document of a scenario file and the SHA-256 of its bytes.

    Args:
        path: The file.
        limits: ``max_scenario_bytes`` and ``max_yaml_nodes`` apply.

    Returns:
        ``(data, content_hash)``: the document (plain dicts, lists and scalars) and the hex digest.

    Raises:
        ScenarioError: Not a regular file, too large, not valid YAML, nested too deeply, too
            many nodes once aliases are expanded, or a recursive alias; the message names the
            file.
    """
    reason = not_a_file_reason(path)
    if reason is not None:
        raise ScenarioError(f"{path}: cannot read scenario file ({reason})")
    cap = limits.max_scenario_bytes
    try:
        with path.open("rb") as handle:
            raw = read_at_most(handle, cap, expected=os.fstat(handle.fileno()).st_size)
    except OSError as exc:
        raise ScenarioError(f"{path}: cannot read scenario file ({exc.strerror or exc})") from None
    if len(raw) > cap:
        raise ScenarioError(
            f"{path}: the scenario file is larger than limits.max_scenario_bytes = {cap:,} bytes; "
            f"{Limits.how_to_raise('max_scenario_bytes')}"
        )
    return _parse(raw, path, limits.max_yaml_nodes), hashlib.sha256(raw).hexdigest()


def _parse(raw: bytes, path: Path, max_nodes: int) -> object:
    text = _printable_text(raw) if _CParser is not None else None
    if text is not None:
        try:
            return _load(_CBoundedLoader(text), max_nodes)
        except (_TooLargeError, _RecursiveAliasError, _TooDeepError, RecursionError) as exc:
            raise _over_limit(exc, path, max_nodes) from None
        except Exception:  # every other refusal is read again by the Python loader, which words it
            pass
    try:
        loader = _BoundedLoader(raw)  # decodes the whole text: bad bytes raise here
    except yaml.reader.ReaderError as exc:
        raise ScenarioError(f"{path}: {_unreadable_text(raw, exc)}") from None
    try:
        return _load(loader, max_nodes)
    except (_TooLargeError, _RecursiveAliasError, _TooDeepError, RecursionError) as exc:
        raise _over_limit(exc, path, max_nodes) from None
    except yaml.YAMLError as exc:
        raise ScenarioError(f"{path}: not valid YAML: {_yaml_problem(exc)}") from None
    except (ValueError, TypeError) as exc:  # a list or mapping constructor's own (a scalar's is located above)
        raise ScenarioError(f"{path}: not valid YAML: {one_line(str(exc))}") from None


def _load(loader: _Bounds, max_nodes: int) -> object:
    loader.max_nodes = max_nodes
    try:
        return loader.get_single_data()
    finally:
        loader.dispose()


def _over_limit(exc: Exception, path: Path, max_nodes: int) -> ScenarioError:
    """The message for a document refused by a limit: too many nodes, a recursive alias, too deep."""
    if isinstance(exc, _TooLargeError):
        return ScenarioError(
            f"{path}: the YAML holds {exc} values once its aliases (*name) are expanded, above "
            f"limits.max_yaml_nodes = {max_nodes:,} (an alias bomb?); "
            f"{Limits.how_to_raise('max_yaml_nodes')}"
        )
    if isinstance(exc, _RecursiveAliasError):
        return ScenarioError(
            f"{path}: a YAML alias (*name) refers to a list or mapping that contains it; a scenario cannot be recursive"
        )
    return ScenarioError(
        f"{path}: the YAML is nested too deeply to read: lists and mappings more than {MAX_DEPTH} deep (a scenario "
        "needs fewer than 10)"
    )


def _unreadable_text(raw: bytes, exc: yaml.reader.ReaderError) -> str:
    """What PyYAML's reader refused, on one line: bytes that do not decode, or a control character."""
    if exc.encoding != "unicode":  # a decoding error; the position is a byte offset
        line = raw[: exc.position].count(b"\n") + 1
        return (
            f"not {exc.encoding.upper()} text: byte 0x{exc.character:02x} at line {line} (byte offset "
            f"{exc.position:,}) cannot be decoded ({exc.reason}); a scenario file is YAML text: save it as UTF-8"
        )
    utf16 = raw.startswith((codecs.BOM_UTF16_LE, codecs.BOM_UTF16_BE))
    text = raw.decode("utf-16" if utf16 else "utf-8", errors="replace")
    line = text[: exc.position].count("\n") + 1
    return (
        f"holds the control character U+{exc.character:04X} at line {line}, which YAML does not allow "
        "(a binary file, or text saved as UTF-16 or UTF-32 without a byte-order mark?); "
        "a scenario file is YAML text: save it as UTF-8"
    )


def _yaml_problem(exc: yaml.YAMLError) -> str:
    """A PyYAML error on one line: ``line L, column C: problem (context at line L, column C)``."""
    if not isinstance(exc, yaml.MarkedYAMLError):
        return one_line(str(exc))
    problem = exc.problem or exc.context or "invalid YAML"
    text = f"{_at(exc.problem_mark or exc.context_mark)}{problem}"
    if exc.problem and exc.context:
        context = exc.context + (f" at {_at(exc.context_mark)[:-2]}" if exc.context_mark else "")
        text += f" ({context})"
    return one_line(text)


def _at(mark: yaml.Mark | None) -> str:
    return "" if mark is None else f"line {mark.line + 1}, column {mark.column + 1}: "


class _TooDeepError(Exception):
    """A list or mapping is nested more than :data:`MAX_DEPTH` deep."""


class _TooLargeError(Exception):
    """The expanded document has more nodes than allowed (the message is the count)."""


class _RecursiveAliasError(Exception):
    """A node contains itself through an alias."""


class _Bounds(yaml.composer.Composer, yaml.constructor.SafeConstructor):
    """The checks both loaders make: depth, expanded size, scalars located (PyYAML's composer and safe constructor).

    A scalar its constructors cannot convert (``!!timestamp x`` raises ``AttributeError``,
    ``!!bool maybe`` ``KeyError``, ``2001-13-45`` ``ValueError``) becomes a
    ``ConstructorError`` at the scalar's line and column.
    """

    max_nodes: int = Limits().max_yaml_nodes
    _depth: int = 0
    _composed: int = 0  # nodes composed in this document (aliases count once)
    _anchored: bool = False  # the document defines anchors (&name), so aliases may expand it

    def compose_node(self, parent: yaml.Node | None, index: object) -> yaml.Node:
        """Compose as usual, refusing a list or mapping nested more than :data:`MAX_DEPTH` deep."""
        self._depth += 1
        self._composed += 1
        try:
            if self._depth > MAX_DEPTH:
                raise _TooDeepError
            node: yaml.Node = super().compose_node(parent, index)
            if self._depth == 1:  # the root: the anchors are cleared once the document is composed
                self._anchored = bool(self.anchors)
            return node
        finally:
            self._depth -= 1

    def construct_object(self, node: yaml.Node, deep: bool = False) -> object:
        """PyYAML's construction, with conversion failures of a scalar located at the scalar."""
        try:
            return super().construct_object(node, deep=deep)
        except (ValueError, TypeError, KeyError, IndexError, AttributeError, OverflowError) as exc:
            if not isinstance(node, yaml.ScalarNode):
                raise
            shown = short_repr(node.value, 60)
            problem = f"cannot read {shown} as {node.tag.rsplit(':', 1)[-1]} ({type(exc).__name__}: {exc})"
            raise yaml.constructor.ConstructorError(None, None, problem, node.start_mark) from None

    def compose_document(self) -> yaml.Node:
        """Compose as usual, then count the expanded nodes before anything is constructed.

        Without anchors no alias can expand the document: its size is the nodes composed.
        """
        self._composed = 0
        node: yaml.Node = super().compose_document()
        size = expanded_size(node, self.max_nodes) if self._anchored else self._composed
        if size > self.max_nodes:
            raise _TooLargeError(f"more than {count(self.max_nodes)}")
        return node


class _BoundedLoader(_Bounds, yaml.SafeLoader):
    """PyYAML's pure-Python safe loader with :class:`_Bounds`' checks (it reads every file; it words every error)."""


try:
    from yaml._yaml import CParser as _CParser  # libyaml, when PyYAML was built with it
except ImportError:  # pragma: no cover (PyYAML without libyaml)
    _CParser = None


if _CParser is not None:

    class _CBoundedLoader(_Bounds, yaml.resolver.Resolver, _CParser):
        """libyaml's parser (events) under PyYAML's composer and safe constructor, with :class:`_Bounds`' checks."""

        def __init__(self, stream: str) -> None:
            _CParser.__init__(self, stream)
            yaml.composer.Composer.__init__(self)
            yaml.constructor.SafeConstructor.__init__(self)
            yaml.resolver.Resolver.__init__(self)


def _printable_text(raw: bytes) -> str | None:
    """``raw`` decoded as PyYAML's reader decodes it, or ``None`` when the reader would refuse it."""
    encoding = "utf-16" if raw.startswith((codecs.BOM_UTF16_LE, codecs.BOM_UTF16_BE)) else "utf-8"
    try:
        text = raw.decode(encoding)
    except UnicodeDecodeError:
        return None
    text = text.removeprefix("\ufeff")
    return None if yaml.reader.Reader.NON_PRINTABLE.search(text) else text


def expanded_size(root: yaml.Node, cap: int) -> int:
    """Nodes under ``root`` (itself included) with every alias expanded, or ``cap + 1`` if more.

    Each distinct node is visited once (its expanded size is remembered), so the work is
    linear in the text even when the expansion is astronomically large.

    Raises:
        _RecursiveAliasError: A node reaches itself.
    """
    sizes: dict[int, int] = {}
    on_path: set[int] = set()  # the nodes whose subtree is being counted (cycle detection)
    stack: list[tuple[yaml.Node, bool]] = [(root, False)]
    while stack:
        node, children_done = stack.pop()
        key = id(node)
        if children_done:
            on_path.discard(key)
            sizes[key] = min(cap + 1, 1 + sum(sizes[id(child)] for child in _children(node)))
            continue
        if key in sizes:
            continue
        if key in on_path:
            raise _RecursiveAliasError
        on_path.add(key)
        stack.append((node, True))
        stack.extend((child, False) for child in _children(node) if id(child) not in sizes)
    return sizes[id(root)]


def _children(node: yaml.Node) -> list[yaml.Node]:
    if isinstance(node, yaml.MappingNode):
        return [part for pair in node.value for part in pair]
    if isinstance(node, yaml.SequenceNode):
        return list(node.value)
    return []
